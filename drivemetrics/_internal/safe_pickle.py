"""A restricted, bounded unpickler for graph and array pickles (road graphs, lane graphs, Sat2Graph dicts).

A subclass of the pure-Python unpickler, so that every opcode that builds, calls or sets state is checked before
it runs:

* only an allow-list of globals resolves (networkx graphs and the plain views they cache, numpy arrays / dtypes /
  scalars, builtin containers and numbers), and only those globals are ever called; nothing lazy or calling back
  (no ``range``, no networkx filter views, no callable in an object's state);
* calls are checked by what is called: a builtin constructor against an allocation budget (``bytearray(3e9)``,
  ``list("x" * 10**9)`` fail at once), ``str`` only on text, networkx classes only without arguments (pickles
  create graphs with ``cls.__new__`` and set their state);
* numpy values are never built by numpy's own unpickling code: a dtype is made by this module from a vetted
  description (booleans, integers, floats, complex numbers, fixed-length strings) and its pickled state must be
  that description's own state (a byte order may differ); an array or a scalar is made by this module from a
  vetted dtype and exactly as many bytes as its shape needs. BUILD never reaches ``dtype.__setstate__`` or
  ``ndarray.__setstate__`` (a dtype whose flags a pickle sets could hide pointers in a non-object array);
* every container built (tuples, lists, dicts, sets, their appends / setitems / additems, call arguments and
  results) is charged with its *expanded* size, shared references counted once per reference, against the same
  budget: nested shared tuples ``(t, t)``, whose hash or repr costs double per level, fail before they are hashed;
  the nesting height is tracked the same way;
* BUILD (setting an object's state) is allowed only on a networkx object created by this load (never on a class,
  a function or a shared object), or on a pending numpy array / dtype of this load, which it turns into the value.

Speed (issue 40) without a second set of rules: the opcode loop reads the pickle's bytes directly and runs the
most frequent opcodes inline, with the same checks and accounting as their methods; the rest go to their methods.
An array that numpy pickled after the first one of its dtype (a fixed run of 23 opcodes: ``_reconstruct`` fetched
from the memo, ``(ndarray, (0,), b"b")``, REDUCE, the ``(1, shape, dtype, fortran, bytes)`` state, BUILD) is
recognised by its bytes and made in one step, but only when the memo holds exactly what numpy writes there (this
module's ``numpy.ndarray`` stand-in, ``b"b"``, a dtype this load made and set the state of) and the bytes are exactly
``prod(shape) x itemsize``; it leaves the same memo entries, side-table sizes and budget as the opcode-by-opcode
path (tested against it), charged before the array is made, and any other sequence runs opcode by opcode. No C
unpickler is involved: every object is still made by this module. The cyclic garbage collector is paused during a
load (it would walk the growing result again and again; nothing made there is garbage until the load returns).

The budget is ``64 MiB + 64 x the file size`` (a pickle's own data is bounded by its size; only calls and shared
references amplify). Any failure is an :class:`UnsafePickleError` (refused content) or a :class:`ValueError` naming
the file (truncated or corrupt pickle).
"""

from __future__ import annotations

import builtins
import gc
import io
import math
import pickle
import re
import struct
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from drivemetrics._internal import arrays as xp

__all__ = ["BASE_BUDGET_BYTES", "BYTES_PER_FILE_BYTE", "MAX_NESTING", "UnsafePickleError", "safe_pickle_load"]

#: Fixed part of the allocation budget, bytes; the rest is :data:`BYTES_PER_FILE_BYTE` x the file size.
BASE_BUDGET_BYTES = 64 * 2**20
BYTES_PER_FILE_BYTE = 64
#: Deepest nesting of containers accepted in a loaded pickle.
MAX_NESTING = 200
#: Bytes charged per element of a container (a reference).
_ELEMENT_BYTES = 8


class UnsafePickleError(pickle.UnpicklingError, ValueError):
    """A pickle asked for a global outside the allow-list, or for more memory or nesting than its size allows."""


_ALLOWED_BUILTINS = {
    "dict",
    "list",
    "tuple",
    "set",
    "frozenset",
    "int",
    "float",
    "complex",
    "str",
    "bytes",
    "bytearray",
    "bool",
    "object",  # only as the base argument of copyreg._reconstructor, never called
}
#: Classes an object's pickled state may hold: networkx 2.x stored its dict factories as attributes.
_FACTORY_TYPES = (dict,)
#: Builtin constructors whose calls allocate in proportion to their arguments, and the bytes per element.
_BOUNDED_CONSTRUCTORS = {dict: 8, list: 8, tuple: 8, set: 8, frozenset: 8, bytes: 1, bytearray: 1}
_NETWORKX_MODULES = {
    "networkx.classes.graph",
    "networkx.classes.digraph",
    "networkx.classes.multigraph",
    "networkx.classes.multidigraph",
    "networkx.classes.reportviews",
    "networkx.classes.coreviews",
}
#: networkx classes a pickle may create: the graphs and the plain views that graphs cache in their ``__dict__``
#: (never the filter views, which call a function of the pickle's choice on every key, nor the data views, whose
#: state holds functions).
_NETWORKX_CLASSES = {
    "Graph",
    "DiGraph",
    "MultiGraph",
    "MultiDiGraph",
    "AtlasView",
    "AdjacencyView",
    "MultiAdjacencyView",
    "NodeView",
    "NodeDataView",
    "DegreeView",
    "DiDegreeView",
    "InDegreeView",
    "OutDegreeView",
    "MultiDegreeView",
    "DiMultiDegreeView",
    "InMultiDegreeView",
    "OutMultiDegreeView",
    "EdgeView",
    "OutEdgeView",
    "InEdgeView",
    "MultiEdgeView",
    "OutMultiEdgeView",
    "InMultiEdgeView",
}
#: dtype descriptions a pickle may name (as numpy writes them: no byte order, which the state gives; "b" is the
#: int8 placeholder of `_reconstruct`).
#: The opcodes of a numpy array as pickled after the first (see :meth:`_RestrictedUnpickler._array_sequence`).
_ARRAY_SEQUENCE = re.compile(
    rb"h(.)K\x00\x85\x94h(.)\x87\x94R\x94\(K\x01((?:K.|M..){1,3})([\x85-\x87])\x94h(.)([\x88\x89])(C.|B....)",
    re.DOTALL,
)
_DTYPE_DESCRIPTION = re.compile(r"(b|b1|[iu][1248]|f[248]|c(8|16)|[SU][1-9][0-9]{0,5})")


class _Budget:
    """Bytes that one pickle may still make the loader allocate (calls, and containers at their expanded size)."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.left = total

    def spend(self, nbytes: int, what: str, *details: Any) -> None:
        """Charge ``nbytes``; ``what`` names the allocation (a ``str.format`` template of ``details``, formatted
        only for the error)."""
        if nbytes > self.left:
            what = what.format(*details) if details else what
            raise UnsafePickleError(
                f"{what} would allocate about {nbytes:,} bytes, more than this pickle's budget "
                f"({self.left:,} bytes left; the budget grows with the file size)"
            )
        self.left -= nbytes


def _size_of_argument(arg: Any) -> int:
    """Elements an argument asks a builtin constructor to create (an int is a count, a sized object its length)."""
    if isinstance(arg, bool):
        return 1
    if isinstance(arg, int):
        return abs(arg)
    try:
        return len(arg)
    except TypeError:
        return 1
    except OverflowError:  # len(range(10**30))
        return 2**63


def _is_graph_class(cls: Any) -> bool:
    return isinstance(cls, type) and cls.__module__ in _NETWORKX_MODULES and cls.__name__ in _NETWORKX_CLASSES


class _PendingDtype:
    """A dtype this load made from a vetted description, until a BUILD gives its byte order (then replaced)."""

    __slots__ = ("value",)

    def __init__(self, value: np.dtype) -> None:
        self.value: np.dtype | None = value


class _PendingArray:
    """An array announced by numpy's ``_reconstruct``: replaced by the array BUILD makes from its state."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value: np.ndarray | None = None


def _vetted_dtype(desc: Any, align: Any = False, copy: Any = True) -> _PendingDtype:
    """``numpy.dtype(desc)`` for a description in :data:`_DTYPE_DESCRIPTION`, as a pending dtype."""
    if isinstance(desc, bytes):
        desc = desc.decode("latin1")
    if not isinstance(desc, str) or not _DTYPE_DESCRIPTION.fullmatch(desc) or align not in (0, 1):
        raise UnsafePickleError(
            f"refusing numpy dtype {str(desc)[:40]!r} in a pickle: only booleans, integers, floats, complex numbers "
            "and fixed-length strings (no object, structured or other dtypes)"
        )
    return _PendingDtype(np.dtype(desc))


def _dtype_of(value: Any) -> np.dtype:
    """The dtype a pickle refers to: one this load made (pending or resolved), or a vetted description."""
    if isinstance(value, _PendingDtype) and value.value is not None:
        return value.value
    if isinstance(value, np.dtype) and not value.hasobject:
        return value  # only made by this load: nothing else in a pickle can produce a dtype object
    if isinstance(value, (str, bytes)):
        result = _vetted_dtype(value).value
        assert result is not None
        return result
    raise UnsafePickleError(f"expected a numpy dtype in a pickle, got a {type(value).__name__}")


def _dtype_from_state(base: np.dtype, state: Any) -> np.dtype:
    """The dtype that ``base`` (made from a vetted description) is with pickled ``state``: the state must be numpy's
    own state of ``base``, except for the byte order of a multi-byte type."""
    expected = base.__reduce__()[2]
    if not isinstance(state, tuple) or len(state) != len(expected):
        raise UnsafePickleError(f"dtype state {str(state)[:80]} is not numpy's state of {base}")
    order = state[1]
    allowed = ("|",) if expected[1] == "|" else ("<", ">", "=")
    if order not in allowed or any(
        type(a) is not type(b) or a != b for k, (a, b) in enumerate(zip(state, expected, strict=True)) if k != 1
    ):
        raise UnsafePickleError(f"dtype state {str(state)[:80]} is not numpy's state of {base}")
    return base if order in ("|", "=") else base.newbyteorder(order)


def _array_from_state(state: Any, budget: _Budget) -> np.ndarray:
    """The array of a pickled ``(version, shape, dtype, fortran, data)`` state, made here: a vetted dtype and
    exactly the bytes its shape needs (never numpy's ``__setstate__``)."""
    if not isinstance(state, tuple) or len(state) not in (4, 5):
        raise UnsafePickleError("array state is not a (version, shape, dtype, fortran, data) tuple")
    shape, raw_dtype, fortran, data = state[-4:]
    if isinstance(raw_dtype, np.dtype) and raw_dtype.hasobject:
        raise UnsafePickleError("refusing an object (or non-dtype) array in a pickle")
    try:
        dtype = _dtype_of(raw_dtype)
    except UnsafePickleError:
        raise UnsafePickleError("refusing an object (or non-dtype) array in a pickle") from None
    if not isinstance(shape, tuple) or not all(type(n) is int and n >= 0 for n in shape):
        raise UnsafePickleError(f"array shape {str(shape)[:80]} is not a tuple of non-negative integers")
    if isinstance(data, str):  # Python 2 pickles read with encoding='latin1'
        data = data.encode("latin1")
    if not isinstance(data, (bytes, bytearray)) or len(data) != math.prod(shape) * dtype.itemsize:
        raise UnsafePickleError("array data does not match its shape and dtype")
    budget.spend(len(data), "numpy array")
    return _array_from_bytes(data, dtype, shape, bool(fortran))


def _array_from_bytes(data: bytes | bytearray, dtype: np.dtype, shape: tuple[int, ...], fortran: bool) -> np.ndarray:
    """A new, writable array owning a copy of ``data`` (exactly ``prod(shape) * dtype.itemsize`` bytes, checked by
    the caller), in C or Fortran order."""
    if data and not fortran:  # the common case: one allocation, one copy of the bytes
        value = np.empty(shape, dtype=dtype)
        try:
            value.data.cast("B")[:] = data
            return value
        except (TypeError, ValueError, NotImplementedError):  # a buffer format memoryview cannot cast
            pass
    flat = np.frombuffer(data, dtype=dtype) if len(data) else np.zeros(0, dtype=dtype)
    return flat.reshape(shape, order="F" if fortran else "C").copy(order="K")


def _reconstructor(cls: Any, base: Any, state: Any) -> Any:
    """``copyreg._reconstructor`` as protocol 0/1 pickles of graphs use it: ``(graph class, object, None)`` only."""
    if not _is_graph_class(cls) or base is not object or state is not None:
        raise UnsafePickleError("copyreg._reconstructor is only allowed as (networkx class, object, None)")
    return object.__new__(cls)


def _latin1_encode(text: Any, encoding: Any = "latin1") -> bytes:
    if not isinstance(text, str) or encoding not in ("latin1", "latin-1"):
        raise UnsafePickleError("only _codecs.encode(str, 'latin1') is allowed in a pickle")
    return text.encode("latin1")


def _ndarray_refused(*args: Any, **kwargs: Any) -> None:
    raise UnsafePickleError("refusing to call numpy.ndarray directly from a pickle")


def _leaf_size(obj: Any) -> int:
    """Elements a value not built as a container counts for: text and bytes by their length."""
    kind = type(obj)
    return 1 + len(obj) // _ELEMENT_BYTES if kind is str or kind is bytes or kind is bytearray else 1


_dispatch = dict(pickle._Unpickler.dispatch)  # type: ignore[attr-defined]


def _opcode(code: bytes) -> Any:
    def register(method: Any) -> Any:
        _dispatch[code[0]] = method
        return method

    return register


class _RestrictedUnpickler(pickle._Unpickler):  # type: ignore[name-defined,misc]
    """Resolves only an allow-list of globals; checks every call, container and BUILD before it runs.

    A side table gives, for what this load built, its expanded size and nesting height (items not in it count as
    leaves). If a container is filled, or an object's state set, after another container took a reference to it
    (only cycles do that in real pickles), the table is stale and :func:`_check_structure` walks the result.
    """

    dispatch = _dispatch
    #: Whether arrays pickled as numpy does run in one step (:meth:`_array_sequence`); off, opcode by opcode.
    one_step_arrays = True

    def __init__(self, file: io.BytesIO, *, encoding: str, budget: _Budget) -> None:
        super().__init__(file, encoding=encoding)
        self._data_file = file
        self._data_size = len(file.getvalue())
        self._budget = budget
        self._table: dict[int, tuple[int, int]] = {}  # id -> (expanded size, nesting height) of what this load built
        self._keep: list[Any] = []  # ... and those objects, so that their ids stay unique during the load
        self._referenced: set[int] = set()  # ids in the table already counted into another container
        self._created: dict[int, Any] = {}  # objects made by this load: the only BUILD targets
        self._built: set[int] = set()  # pending dtypes whose state was set
        self._pending_arrays: list[_PendingArray] = []  # every array announced: each needs its state
        self._globals: dict[tuple[str, str], Any] = {}
        self._callable: set[int] = set()  # ids of the resolved globals: the only things called
        self.stale = False
        self._reconstruct = self._reconstruct_array  # one bound method: the global, and what the fast path looks for

    # -- globals ------------------------------------------------------------------------------------------------
    def find_class(self, module: str, name: str) -> Any:
        key = (module, name)
        if key not in self._globals:
            value = self._resolve(module, name)
            self._globals[key] = value
            self._callable.add(id(value))
        return self._globals[key]

    def _resolve(self, module: str, name: str) -> Any:
        if module in ("builtins", "__builtin__") and name in _ALLOWED_BUILTINS:
            return getattr(builtins, name)  # calls are checked in _call
        if module == "_codecs" and name == "encode":  # protocol 0-2 pickles spell bytes as encode(str, 'latin1')
            return _latin1_encode
        if module in ("copy_reg", "copyreg") and name == "_reconstructor":  # object pickles (Python 2 and 3)
            return _reconstructor
        if module.startswith("numpy.core."):  # numpy < 2 module paths
            module = "numpy._core." + module[len("numpy.core.") :]
        if (module, name) == ("numpy", "ndarray"):
            return _ndarray_refused
        if (module, name) == ("numpy._core.multiarray", "_reconstruct"):
            return self._reconstruct
        if (module, name) == ("numpy", "dtype"):
            return _vetted_dtype
        if (module, name) == ("numpy._core.multiarray", "scalar"):
            return self._scalar
        if (module, name) == ("numpy._core.numeric", "_frombuffer"):
            return self._frombuffer
        if module in _NETWORKX_MODULES and name in _NETWORKX_CLASSES:
            value = super().find_class(module, name)
            if _is_graph_class(value):
                return value
        raise UnsafePickleError(
            f"refusing to unpickle global '{module}.{name}': only networkx graphs, numpy arrays and builtin "
            "types are allowed in graph pickles"
        )

    def _reconstruct_array(self, cls: Any, shape: Any, dtype: Any) -> _PendingArray:
        """numpy's ``_reconstruct(ndarray, shape, dtype)``: a pending array, which the BUILD after it makes."""
        if cls is not _ndarray_refused:
            raise UnsafePickleError("numpy _reconstruct is only allowed for numpy.ndarray")
        shape = (shape,) if isinstance(shape, int) else shape
        if not isinstance(shape, tuple) or not all(type(n) is int and n >= 0 for n in shape):
            raise UnsafePickleError(f"array shape {str(shape)[:80]} is not a tuple of non-negative integers")
        self._budget.spend(math.prod(shape) * max(_dtype_of(dtype).itemsize, 1), "numpy array")
        pending = _PendingArray()
        self._pending_arrays.append(pending)
        return pending

    def _scalar(self, dtype: Any, data: Any = None) -> Any:
        """numpy's ``scalar(dtype, data)``: a scalar of a vetted dtype from exactly ``itemsize`` bytes."""
        value = _dtype_of(dtype)
        if isinstance(data, str):  # Python 2 pickles read with encoding='latin1'
            data = data.encode("latin1")
        if not isinstance(data, (bytes, bytearray)) or len(data) != value.itemsize:
            raise UnsafePickleError(f"a numpy {value} scalar needs {value.itemsize} bytes of data in a pickle")
        return np.frombuffer(bytes(data), dtype=value)[0]

    def _frombuffer(self, buffer: Any, dtype: Any, shape: Any, order: Any) -> np.ndarray:
        """numpy's ``_frombuffer(buffer, dtype, shape, order)`` (protocol 5 arrays), made here."""
        return _array_from_state((shape, dtype, order == "F", buffer), self._budget)

    # -- reading ------------------------------------------------------------------------------------------------
    def load(self) -> Any:
        """The opcode loop, reading straight from the pickle's bytes (a frame is only a length prefix here).

        The most frequent opcodes of real pickles (memo, small numbers, short text and bytes, marks, small tuples,
        dict and list filling) run inline with the same checks and accounting as their methods; every other opcode
        goes to its method in :attr:`dispatch`, with the file position kept in step.
        """
        file = self._data_file
        data = file.getbuffer().tobytes()
        self.read, self.readline, self.readinto = file.read, file.readline, file.readinto
        metastack: list = []
        self.metastack = metastack
        stack: list = []
        self.stack = stack
        self.append = stack.append
        self.proto = 0
        memo = self.memo
        dispatch = self.dispatch
        table = self._table
        keep = self._keep
        budget = self._budget
        new, grow = self._new, self._grow
        unpack_float = struct.Struct(">d").unpack_from
        unpack_int = struct.Struct("<i").unpack_from
        pending_types = (_PendingArray, _PendingDtype)
        reconstruct = self._reconstruct if self.one_step_arrays else object()
        pos = 0
        end = len(data)
        try:
            while True:
                op = data[pos]
                pos += 1
                if op == 0x94:  # MEMOIZE
                    memo[len(memo)] = stack[-1]
                elif op == 0x68:  # BINGET
                    value = memo[data[pos]]
                    pos += 1
                    if type(value) in pending_types and value.value is not None:
                        value = value.value
                    elif value is reconstruct:
                        match = _ARRAY_SEQUENCE.match(data, pos)
                        if match is not None:
                            after = self._array_sequence(data, match)
                            if after:
                                pos = after
                                continue
                    stack.append(value)
                elif op == 0x4B:  # BININT1
                    stack.append(data[pos])
                    pos += 1
                elif op == 0x28:  # MARK
                    metastack.append(stack)
                    stack = self.stack = []
                    self.append = stack.append
                elif op == 0x85:  # TUPLE1
                    stack[-1] = new((stack[-1],), stack[-1:], "tuple")
                elif op == 0x86:  # TUPLE2
                    stack[-2:] = [new((stack[-2], stack[-1]), stack[-2:], "tuple")]
                elif op == 0x87:  # TUPLE3
                    stack[-3:] = [new((stack[-3], stack[-2], stack[-1]), stack[-3:], "tuple")]
                elif op == 0x74:  # TUPLE
                    items = stack
                    stack = self.stack = metastack.pop()
                    self.append = stack.append
                    stack.append(new(tuple(items), items, "tuple"))
                elif op == 0x89:  # NEWFALSE
                    stack.append(False)
                elif op == 0x88:  # NEWTRUE
                    stack.append(True)
                elif op == 0x4E:  # NONE
                    stack.append(None)
                elif op == 0x43 or op == 0x8C:  # SHORT_BINBYTES, SHORT_BINUNICODE
                    size = data[pos]
                    start = pos + 1
                    pos = start + size
                    if pos > end:
                        raise EOFError
                    value = data[start:pos]
                    stack.append(value if op == 0x43 else str(value, "utf-8", "surrogatepass"))
                elif op == 0x7D or op == 0x5D:  # EMPTY_DICT, EMPTY_LIST
                    budget.spend(_ELEMENT_BYTES, "an empty container")
                    value = {} if op == 0x7D else []
                    keep.append(value)
                    table[id(value)] = (1, 1)
                    stack.append(value)
                elif op == 0x75:  # SETITEMS
                    items = stack
                    stack = self.stack = metastack.pop()
                    self.append = stack.append
                    target = stack[-1]
                    grow(target, dict, items)
                    target.update(zip(items[::2], items[1::2], strict=True))
                elif op == 0x65:  # APPENDS
                    items = stack
                    stack = self.stack = metastack.pop()
                    self.append = stack.append
                    grow(stack[-1], list, items)
                    stack[-1].extend(items)
                elif op == 0x47:  # BINFLOAT
                    if pos + 8 > end:
                        raise EOFError
                    stack.append(unpack_float(data, pos)[0])
                    pos += 8
                elif op == 0x4D:  # BININT2
                    if pos + 2 > end:
                        raise EOFError
                    stack.append(data[pos] | data[pos + 1] << 8)
                    pos += 2
                elif op == 0x4A:  # BININT
                    if pos + 4 > end:
                        raise EOFError
                    stack.append(unpack_int(data, pos)[0])
                    pos += 4
                elif op == 0x95:  # FRAME: only a length
                    pos += 8
                    if pos > end:
                        raise EOFError
                else:
                    file.seek(pos)
                    dispatch[op](self)
                    pos = file.tell()
                    stack = self.stack
        except pickle._Stop as stop:  # type: ignore[attr-defined]
            return stop.value
        except IndexError:
            if pos >= end:
                raise EOFError from None
            raise

    def _array_sequence(self, data: bytes, match: re.Match) -> int:
        """Run the opcodes of one array as numpy pickles it after its first (``_reconstruct`` already fetched).

        ``match`` (:data:`_ARRAY_SEQUENCE`) starts after ``BINGET <_reconstruct>``; the sequence is
        ``BINGET <ndarray> BININT1 0 TUPLE1 MEMOIZE BINGET <b"b"> TUPLE3 MEMOIZE REDUCE MEMOIZE MARK BININT1 1
        <1-3 dims> TUPLE<n> MEMOIZE BINGET <dtype> NEWFALSE|NEWTRUE (SHORT_)BINBYTES <data> MEMOIZE TUPLE MEMOIZE
        BUILD``. Only when the fetched values are exactly those numpy writes (``numpy.ndarray``, ``b"b"``, and a
        dtype this load made and set the state of) does it run here, with the same values, memo entries, side
        table and budget as the opcode by opcode path (charged all at once before anything is made); otherwise it
        returns 0 and the opcodes run one by one.
        """
        memo = self.memo
        base = len(memo)  # MEMOIZE writes memo[len(memo)]: six new entries only if none of these is taken (PUT)
        if base in memo or base + 1 in memo or base + 2 in memo or base + 3 in memo or base + 4 in memo:
            return 0
        placeholder = memo.get(data[match.start(2)])
        if (
            memo.get(data[match.start(1)]) is not _ndarray_refused
            or type(placeholder) is not bytes
            or placeholder != b"b"
        ):
            return 0
        dtype_entry = memo.get(data[match.start(5)])
        if type(dtype_entry) is not _PendingDtype or id(dtype_entry) not in self._built:
            return 0
        dtype = dtype_entry.value
        dtype_size, dtype_height = self._table[id(dtype)]
        dims_code = match[3]
        if len(dims_code) == 4 and dims_code[0] == 0x4B and dims_code[2] == 0x4B:  # two BININT1 (most arrays)
            shape = (dims_code[1], dims_code[3])
        elif b"M" in dims_code[::2] or len(dims_code) % 2:  # a BININT2 among the dims: read them one by one
            dims = []
            k = 0
            while k < len(dims_code):
                if dims_code[k] == 0x4B:  # BININT1
                    dims.append(dims_code[k + 1])
                    k += 2
                else:  # BININT2
                    dims.append(dims_code[k + 1] | dims_code[k + 2] << 8)
                    k += 3
            shape = tuple(dims)
        else:
            shape = tuple(dims_code[1::2])
        if len(shape) != data[match.start(4)] - 0x84:  # TUPLE1..TUPLE3 builds exactly the dims
            return 0
        start = match.end()
        size = data[start - 1] if data[match.start(7)] == 0x43 else int.from_bytes(data[start - 4 : start], "little")
        stop = start + size
        if data[stop : stop + 4] != b"\x94t\x94b" or size != math.prod(shape) * dtype.itemsize:
            return 0
        state_size = 1 + (len(shape) + 1) + dtype_size + 1 + (1 + size // _ELEMENT_BYTES)
        state_height = max(1, dtype_height)
        if state_height + 3 > MAX_NESTING:
            return 0
        # TUPLE1, TUPLE3, the call's arguments, the shape, the state, and the array's bytes
        self._budget.spend(_ELEMENT_BYTES * (2 + 5 + 4 + len(shape) + 1 + state_size + 1) + size, "a numpy array")
        first = (len(memo) * 0,)  # a new tuple, as TUPLE1 makes (a constant (0,) would be one shared object)
        arguments = (_ndarray_refused, first, placeholder)
        pending = _PendingArray()
        self._pending_arrays.append(pending)
        raw = data[start:stop]
        fortran = data[match.start(6)] == 0x88
        state = (1, shape, dtype, fortran, raw)
        value = _array_from_bytes(raw, dtype, shape, fortran)
        pending.value = value
        memo[base] = first
        memo[base + 1] = arguments
        memo[base + 2] = pending
        memo[base + 3] = shape
        memo[base + 4] = raw
        memo[base + 5] = state
        table, keep, referenced, created = self._table, self._keep, self._referenced, self._created
        table[id(first)] = (2, 1)
        table[id(arguments)] = (5, 2)
        table[id(pending)] = (5, 2)
        table[id(shape)] = (len(shape) + 1, 1)
        table[id(state)] = (state_size + 1, state_height + 1)
        table[id(value)] = (state_size + 2, state_height + 2)
        keep += (first, arguments, pending, shape, state, value)
        referenced.update((id(first), id(shape), id(dtype), id(state)))
        created[id(pending)] = pending
        created[id(value)] = value
        self.stack.append(value)
        return stop + 4

    @_opcode(pickle.FRAME)
    def load_frame(self) -> None:
        if len(self.read(8)) != 8:
            raise EOFError

    @_opcode(pickle.BYTEARRAY8)
    def load_bytearray8(self) -> None:
        (size,) = struct.unpack("<Q", self.read(8))
        left = self._data_size - self._data_file.tell()
        if size > left:  # the pure-Python unpickler would allocate the claimed size before reading
            raise EOFError(f"BYTEARRAY8 claims {size:,} bytes, {left:,} are left")
        self.append(bytearray(self.read(size)))

    # -- expanded sizes -----------------------------------------------------------------------------------------
    def _measure(self, items: Any) -> tuple[int, int]:
        """Expanded size and nesting height of ``items``; marks the built ones as referenced."""
        get = self._table.get
        referenced = self._referenced
        total, height = 0, 0
        for item in items:
            entry = get(id(item))
            if entry is None:
                kind = type(item)
                total += 1 + len(item) // _ELEMENT_BYTES if kind is str or kind is bytes or kind is bytearray else 1
            else:
                total += entry[0]
                if entry[1] > height:
                    height = entry[1]
                referenced.add(id(item))
        return total, height

    def _record(self, obj: Any, size: int, height: int, what: str) -> Any:
        if height > MAX_NESTING:
            raise UnsafePickleError(f"containers nest deeper than {MAX_NESTING} levels")
        key = id(obj)
        if key not in self._table:
            self._keep.append(obj)
        elif key in self._referenced:  # those holding it were counted with its old size
            self.stale = True
        self._table[key] = (size, height)
        return obj

    def _new(self, obj: Any, items: Any, what: str) -> Any:
        """Charge and record ``obj`` built from ``items`` (call this before building, for dicts and sets)."""
        size, height = self._measure(items)
        self._budget.spend(_ELEMENT_BYTES * (size + 1), "a {} expanding to {:,} elements", what, size + 1)
        return self._record(obj, size + 1, height + 1, what)

    def _new_empty(self, obj: Any) -> Any:
        self._budget.spend(_ELEMENT_BYTES, "an empty container")
        self._keep.append(obj)
        self._table[id(obj)] = (1, 1)
        return obj

    def _grow(self, target: Any, kind: type, items: Any) -> None:
        """Charge adding ``items`` (keys and values for a dict) to ``target``, which must be a ``kind``."""
        if type(target) is not kind:
            raise UnsafePickleError(f"refusing to add items to a {type(target).__name__} in a pickle")
        size, height = self._measure(items)
        table = self._table
        key = id(target)
        entry = table.get(key)
        old_size, old_height = entry or (1, 1)
        self._budget.spend(_ELEMENT_BYTES * size, "a {} expanding to {:,} elements", kind.__name__, old_size + size)
        height = height + 1 if height >= old_height else old_height  # as _record, inline
        if height > MAX_NESTING:
            raise UnsafePickleError(f"containers nest deeper than {MAX_NESTING} levels")
        if entry is None:
            self._keep.append(target)
        elif key in self._referenced:  # those holding it were counted with its old size
            self.stale = True
        table[key] = (old_size + size, height)

    # -- containers ---------------------------------------------------------------------------------------------
    @_opcode(pickle.TUPLE)
    def load_tuple(self) -> None:
        items = self.pop_mark()  # first: it switches self.append to the outer stack
        self.append(self._new(tuple(items), items, "tuple"))

    @_opcode(pickle.TUPLE1)
    def load_tuple1(self) -> None:
        self.stack[-1] = self._new((self.stack[-1],), self.stack[-1:], "tuple")

    @_opcode(pickle.TUPLE2)
    def load_tuple2(self) -> None:
        self.stack[-2:] = [self._new((self.stack[-2], self.stack[-1]), self.stack[-2:], "tuple")]

    @_opcode(pickle.TUPLE3)
    def load_tuple3(self) -> None:
        self.stack[-3:] = [self._new((self.stack[-3], self.stack[-2], self.stack[-1]), self.stack[-3:], "tuple")]

    @_opcode(pickle.EMPTY_LIST)
    def load_empty_list(self) -> None:
        self.append(self._new_empty([]))

    @_opcode(pickle.LIST)
    def load_list(self) -> None:
        items = self.pop_mark()
        self.append(self._new(items, items, "list"))

    @_opcode(pickle.APPEND)
    def load_append(self) -> None:
        value = self.stack.pop()
        self._grow(self.stack[-1], list, (value,))
        self.stack[-1].append(value)

    @_opcode(pickle.APPENDS)
    def load_appends(self) -> None:
        items = self.pop_mark()
        self._grow(self.stack[-1], list, items)
        self.stack[-1].extend(items)

    @_opcode(pickle.EMPTY_DICT)
    def load_empty_dictionary(self) -> None:
        self.append(self._new_empty({}))

    @_opcode(pickle.DICT)
    def load_dict(self) -> None:
        items = self.pop_mark()
        size, height = self._measure(items)
        self._budget.spend(_ELEMENT_BYTES * (size + 1), f"a dict expanding to {size + 1:,} elements")  # then hash
        self.append(self._record({items[i]: items[i + 1] for i in range(0, len(items), 2)}, size + 1, height + 1, ""))

    @_opcode(pickle.SETITEM)
    def load_setitem(self) -> None:
        value = self.stack.pop()
        key = self.stack.pop()
        self._grow(self.stack[-1], dict, (key, value))
        self.stack[-1][key] = value

    @_opcode(pickle.SETITEMS)
    def load_setitems(self) -> None:
        items = self.pop_mark()
        target = self.stack[-1]
        self._grow(target, dict, items)
        for i in range(0, len(items), 2):
            target[items[i]] = items[i + 1]

    @_opcode(pickle.EMPTY_SET)
    def load_empty_set(self) -> None:
        self.append(self._new_empty(set()))

    @_opcode(pickle.ADDITEMS)
    def load_additems(self) -> None:
        items = self.pop_mark()
        self._grow(self.stack[-1], set, items)
        self.stack[-1].update(items)

    @_opcode(pickle.FROZENSET)
    def load_frozenset(self) -> None:
        items = self.pop_mark()
        size, height = self._measure(items)
        self._budget.spend(_ELEMENT_BYTES * (size + 1), f"a frozenset expanding to {size + 1:,} elements")
        self.append(self._record(frozenset(items), size + 1, height + 1, ""))

    # -- calls and state ----------------------------------------------------------------------------------------
    def _call(self, func: Any, args: Any) -> Any:
        if id(func) not in self._callable:
            raise UnsafePickleError(f"refusing to call a {type(func).__name__}: only resolved globals are called")
        if not isinstance(args, tuple):
            raise UnsafePickleError("call arguments in a pickle must be a tuple")
        size, height = self._measure(args)
        self._budget.spend(_ELEMENT_BYTES * size, "call arguments")
        if func in _BOUNDED_CONSTRUCTORS:
            elements = sum(_size_of_argument(a) for a in args)
            self._budget.spend(_BOUNDED_CONSTRUCTORS[func] * elements, f"builtins.{func.__name__}(...)")
        elif func is str:
            if not all(isinstance(a, (str, bytes, bytearray)) for a in args):
                raise UnsafePickleError("builtins.str(...) is only allowed on str or bytes in a pickle")
            self._budget.spend(4 * sum(len(a) for a in args), "builtins.str(...)")
        elif func is object:
            raise UnsafePickleError("refusing to call builtins.object in a pickle")
        elif args and _is_graph_class(func):
            raise UnsafePickleError(f"refusing to call networkx class {func.__name__} with arguments in a pickle")
        result = func(*args)
        self._created[id(result)] = result
        kind = type(result)
        if kind in (list, tuple, set, frozenset):
            self._new(result, result, kind.__name__)
        elif kind is dict:
            self._new(result, (*result, *result.values()), "dict")
        elif (isinstance(result, (_PendingDtype, _PendingArray)) or xp.is_ndarray(result)) or _is_graph_class(kind):
            self._record(result, 1 + size, 1 + height, "")  # objects whose state BUILD may set
        return result

    @_opcode(pickle.REDUCE)
    def load_reduce(self) -> None:
        args = self.stack.pop()
        self.stack[-1] = self._call(self.stack[-1], args)

    def _instantiate(self, klass: Any, args: list) -> None:  # INST, OBJ (protocols 0 and 1)
        self.append(self._call(klass, tuple(args)))

    def _newobj(self, cls: Any, args: Any, kwargs: Any) -> None:
        if not _is_graph_class(cls) or id(cls) not in self._callable:
            raise UnsafePickleError(f"refusing to create a {getattr(cls, '__name__', type(cls).__name__)} object")
        if args or kwargs:
            raise UnsafePickleError(f"refusing to create networkx {cls.__name__} with arguments in a pickle")
        obj = cls.__new__(cls)
        self._created[id(obj)] = obj
        self.append(self._record(obj, 1, 1, ""))

    @_opcode(pickle.NEWOBJ)
    def load_newobj(self) -> None:
        args = self.stack.pop()
        self._newobj(self.stack.pop(), args, None)

    @_opcode(pickle.NEWOBJ_EX)
    def load_newobj_ex(self) -> None:
        kwargs = self.stack.pop()
        args = self.stack.pop()
        self._newobj(self.stack.pop(), args, kwargs)

    @_opcode(pickle.BUILD)
    def load_build(self) -> None:
        state, inst = self.stack[-1], self.stack[-2]
        if self._created.get(id(inst)) is not inst or not (
            isinstance(inst, (_PendingDtype, _PendingArray)) or type(inst).__module__ in _NETWORKX_MODULES
        ):
            raise UnsafePickleError(
                f"refusing to set the state of a {type(inst).__name__} object: only arrays, dtypes and networkx "
                "objects created by this pickle take a state"
            )
        size, height = self._measure((state,))
        if isinstance(inst, (_PendingDtype, _PendingArray)):  # made here from the state, never by numpy's setstate
            if isinstance(inst, _PendingArray):
                if inst.value is not None:
                    raise UnsafePickleError("refusing a second state for one numpy array in a pickle")
                value: Any = _array_from_state(state, self._budget)
            else:
                if inst.value is None or id(inst) in self._built:
                    raise UnsafePickleError("refusing a second state for one numpy dtype in a pickle")
                value = _dtype_from_state(inst.value, state)
                self._built.add(id(inst))
            inst.value = value
            self.stack.pop()
            self.stack[-1] = value
            self._created[id(value)] = value
            self._record(value, 1 + size, 1 + height, "")
            return
        slots = state[1] if isinstance(state, tuple) and len(state) == 2 and isinstance(state[1], dict) else {}
        if any(not isinstance(k, str) or k.startswith("__") for k in slots):
            raise UnsafePickleError("refusing to set special attributes from a pickle")
        attributes = state[0] if isinstance(state, tuple) and len(state) == 2 else state
        for part in (attributes, slots):  # a global of the pickle (a function, a class) that a view would call back
            if isinstance(part, dict) and any(
                id(v) in self._callable and v not in _FACTORY_TYPES for v in part.values()
            ):
                raise UnsafePickleError("refusing a function or class in an object's state in a pickle")
        pickle._Unpickler.load_build(self)  # type: ignore[attr-defined]
        self._record(inst, 1 + size, 1 + height, "")

    # -- memo: a pending numpy value read back after its BUILD is the value ---------------------------------------
    def _resolved_top(self) -> None:
        top = self.stack[-1]
        if (type(top) is _PendingArray or type(top) is _PendingDtype) and top.value is not None:
            self.stack[-1] = top.value

    @_opcode(pickle.GET)
    def load_get(self) -> None:
        pickle._Unpickler.load_get(self)  # type: ignore[attr-defined]
        self._resolved_top()

    @_opcode(pickle.BINGET)
    def load_binget(self) -> None:
        pickle._Unpickler.load_binget(self)  # type: ignore[attr-defined]
        self._resolved_top()

    @_opcode(pickle.LONG_BINGET)
    def load_long_binget(self) -> None:
        pickle._Unpickler.load_long_binget(self)  # type: ignore[attr-defined]
        self._resolved_top()


def _check_structure(obj: Any, limit: int, max_elements: int) -> None:
    """Walk a loaded structure whose side table went stale: nesting height at most ``limit``, expanded size (shared
    references counted once per reference, as a recursive walk, a repr or ``json.dumps`` sees them) at most
    ``max_elements``. Iterative (a hostile depth cannot overflow the stack), bottom-up, shared objects visited once,
    a reference back into a cycle counted once."""

    def children(item: Any) -> list | None:
        if isinstance(item, dict):
            return [*item, *item.values()]
        if isinstance(item, (list, tuple, set, frozenset)):
            return list(item)
        if hasattr(item, "__dict__") and not isinstance(item, type) and not xp.is_ndarray(item) and not callable(item):
            return [vars(item)]
        return None

    done: dict[int, tuple[int, int]] = {}  # id -> (expanded size, nesting height)
    on_path: set[int] = set()
    stack: list[tuple[Any, list | None]] = [(obj, None)]
    while stack:
        item, kids = stack.pop()
        key = id(item)
        if kids is not None:  # all children are done, or on the path (a cycle)
            size, height = 1, 0
            for kid in kids:
                kid_size, kid_height = done.get(id(kid)) or (_leaf_size(kid), 0)
                size += kid_size
                height = max(height, kid_height)
            if height + 1 > limit:
                raise UnsafePickleError(f"containers nest deeper than {limit} levels")
            if size > max_elements:
                raise UnsafePickleError(
                    f"the loaded structure expands to more than {max_elements:,} elements through shared references, "
                    "more than this pickle's budget"
                )
            on_path.discard(key)
            done[key] = (size, height + 1)
            continue
        if key in done or key in on_path:
            continue
        found = children(item)
        if found is not None:
            on_path.add(key)
            stack.append((item, found))
            stack.extend((kid, None) for kid in found)


def _check_graph_state(graph: Any) -> None:
    """Refuse a networkx graph whose state is not networkx's: ``graph`` and ``_node`` dicts, adjacency dicts
    (``_adj``, and ``_succ`` / ``_pred`` of a directed graph) of dicts of edge-attribute dicts (one more level of
    dicts, keyed by edge key, in a multigraph), every end a node. A pickle with ``_adj = [1, 2]`` would otherwise
    fail later, deep inside networkx, as an internal ``AttributeError``. Linear in the edges."""
    kind = type(graph).__name__
    state = vars(graph)
    multi = bool(getattr(graph, "is_multigraph", lambda: False)())
    for name in ("graph", "_node"):
        if not isinstance(state.get(name), dict):
            raise UnsafePickleError(f"a networkx {kind} whose {name} is a {type(state.get(name)).__name__}, not a dict")
    nodes = state["_node"]
    if not all(type(attrs) is dict for attrs in nodes.values()):
        raise UnsafePickleError(f"a networkx {kind} whose node attributes are not dicts")
    for name in ("_adj", "_succ", "_pred"):
        if name not in state:
            continue
        adjacency = state[name]
        if not isinstance(adjacency, dict):
            raise UnsafePickleError(f"a networkx {kind} whose {name} is a {type(adjacency).__name__}, not a dict")
        for u, neighbours in adjacency.items():
            if u not in nodes or not isinstance(neighbours, dict):
                raise UnsafePickleError(f"a networkx {kind} whose {name} holds a broken entry (node {str(u)[:40]})")
            for v, data in neighbours.items():
                edges = data.values() if multi and isinstance(data, dict) else (data,)
                if v not in nodes or not all(isinstance(e, dict) for e in edges):
                    raise UnsafePickleError(
                        f"a networkx {kind} whose {name} holds a broken edge ({str(u)[:40]}, {str(v)[:40]})"
                    )


def safe_pickle_load(file: str | Path | BinaryIO, *, encoding: str = "latin1") -> Any:
    """Unpickle ``file`` (a path or binary file object) with the restricted, bounded unpickler.

    ``encoding='latin1'`` also reads Python-2 pickles holding numpy data (Sat2Graph). Raises
    :class:`UnsafePickleError` for a global outside the allow-list (before it is called), a call graph / array
    pickles never make, a BUILD on anything but an object this pickle created, an allocation or expanded size beyond
    the budget (``64 MiB + 64 x file size``, before it is made) or nesting deeper than :data:`MAX_NESTING`; raises
    :class:`ValueError` naming the file for a truncated or corrupt pickle.
    """
    if isinstance(file, (str, Path)):
        name = str(file)
        data = Path(file).read_bytes()
    else:
        name = getattr(file, "name", "<pickle stream>")
        data = file.read()
    budget = _Budget(BASE_BUDGET_BYTES + BYTES_PER_FILE_BYTE * len(data))
    unpickler = _RestrictedUnpickler(io.BytesIO(data), encoding=encoding, budget=budget)
    collecting = gc.isenabled()
    gc.disable()  # the load makes many containers the cyclic collector would walk again and again; none is garbage
    try:
        obj = unpickler.load()
        if any(pending.value is None for pending in unpickler._pending_arrays):
            raise UnsafePickleError("a numpy array without its state (data) in a pickle")
        if unpickler.stale:
            _check_structure(obj, MAX_NESTING, budget.total // _ELEMENT_BYTES)
        for made in unpickler._created.values():
            if type(made).__module__ in _NETWORKX_MODULES and hasattr(made, "_adj"):
                _check_graph_state(made)
    except UnsafePickleError as err:
        raise UnsafePickleError(f"{name}: {err}") from None
    except (MemoryError, RecursionError) as err:
        raise UnsafePickleError(f"{name}: refused, the pickle needs too much memory or nesting ({err!r})") from None
    except Exception as err:  # the unpickler raises many types for corrupt data: one documented error
        raise ValueError(f"{name}: truncated or corrupt pickle ({type(err).__name__}: {err})") from None
    finally:
        if collecting:
            gc.enable()
    return obj
