"""A restricted, bounded unpickler for graph and array pickles (road graphs, lane graphs, Sat2Graph dicts).

Only an allow-list of globals resolves (networkx graph classes, numpy arrays / dtypes / scalars, builtin
containers and numbers). Every callable that can allocate is wrapped so that its arguments are checked against
an allocation budget *before* it runs: ``bytearray(3_000_000_000)`` or ``list(range(10**10))`` fail at once.
The budget is proportional to the file size (a pickle's own data is bounded by its size; only calls amplify).
Arrays are rebuilt through :class:`_CheckedArray`, whose ``__setstate__`` checks the shape against the data and
refuses object arrays (numpy can crash on inconsistent object-array states). After loading, a nesting limit is
checked. Any failure is an :class:`UnsafePickleError` (refused content) or a :class:`ValueError` naming the file
(truncated or corrupt pickle).
"""

from __future__ import annotations

import builtins
import io
import math
import pickle
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

#: Fixed part of the allocation budget, bytes; the rest is :data:`BYTES_PER_FILE_BYTE` x the file size.
BASE_BUDGET_BYTES = 64 * 2**20
BYTES_PER_FILE_BYTE = 64
#: Deepest nesting of containers accepted in a loaded pickle.
MAX_NESTING = 200


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
    "slice",
    "range",
    "object",
}
_NETWORKX_MODULES = {
    "networkx.classes.graph",
    "networkx.classes.digraph",
    "networkx.classes.multigraph",
    "networkx.classes.multidigraph",
    "networkx.classes.reportviews",
    "networkx.classes.coreviews",
}


class _CheckedArray(np.ndarray):
    """An ndarray rebuilt from a pickle: its state is checked before numpy sees it."""

    def __setstate__(self, state: Any) -> None:
        if not isinstance(state, tuple) or len(state) not in (4, 5):
            raise UnsafePickleError("array state is not a (version, shape, dtype, fortran, data) tuple")
        shape, dtype, data = state[-4], state[-3], state[-1]
        if not isinstance(dtype, np.dtype) or dtype.hasobject:
            raise UnsafePickleError("refusing an object (or non-dtype) array in a pickle")
        if not isinstance(shape, tuple) or not all(isinstance(n, int) and n >= 0 for n in shape):
            raise UnsafePickleError(f"array shape {shape!r} is not a tuple of non-negative integers")
        if not isinstance(data, (bytes, bytearray)) or len(data) != math.prod(shape) * dtype.itemsize:
            raise UnsafePickleError("array data does not match its shape and dtype")
        super().__setstate__(state)


class _Budget:
    """Bytes that calls made by one pickle may still allocate."""

    def __init__(self, total: int) -> None:
        self.left = total

    def spend(self, nbytes: int, what: str) -> None:
        if nbytes > self.left:
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


class _Bounded:
    """A builtin constructor whose calls are checked against the budget; replaced by the builtin after loading."""

    def __init__(self, constructor: type, budget: _Budget) -> None:
        self.constructor = constructor
        self.budget = budget
        self.bytes_per_element = 1 if constructor in (bytes, bytearray) else 8

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        elements = sum(_size_of_argument(a) for a in (*args, *kwargs.values()))
        self.budget.spend(self.bytes_per_element * elements, f"builtins.{self.constructor.__name__}(...)")
        return self.constructor(*args, **kwargs)


def _reconstructor(cls: type, base: Any, state: Any) -> Any:
    """``copyreg._reconstructor`` with a bounded builtin base given back as the builtin itself."""
    import copyreg

    return copyreg._reconstructor(cls, base.constructor if isinstance(base, _Bounded) else base, state)


def _bounded_array(budget: _Budget) -> Any:
    def reconstruct(cls: Any, shape: Any, dtype: Any) -> np.ndarray:
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        if not all(isinstance(n, int) and n >= 0 for n in shape):
            raise UnsafePickleError(f"array shape {shape!r} is not a tuple of non-negative integers")
        itemsize = np.dtype(dtype).itemsize
        budget.spend(math.prod(shape) * max(itemsize, 1), "numpy array")
        return _CheckedArray.__new__(_CheckedArray, shape, dtype)

    return reconstruct


def _latin1_encode(text: Any, encoding: Any = "latin1") -> bytes:
    if not isinstance(text, str) or encoding not in ("latin1", "latin-1"):
        raise UnsafePickleError("only _codecs.encode(str, 'latin1') is allowed in a pickle")
    return text.encode("latin1")


def _ndarray_refused(*args: Any, **kwargs: Any) -> None:
    raise UnsafePickleError("refusing to call numpy.ndarray directly from a pickle")


class _RestrictedUnpickler(pickle.Unpickler):
    """Resolves only an allow-list of globals and bounds what their calls may allocate."""

    def __init__(self, file: BinaryIO, *, encoding: str, budget: _Budget) -> None:
        super().__init__(file, encoding=encoding)
        self._budget = budget

    def find_class(self, module: str, name: str) -> Any:
        if module in ("builtins", "__builtin__") and name in _ALLOWED_BUILTINS:
            value = getattr(builtins, name)
            if name in ("object", "bool", "slice", "range", "float", "complex", "int", "str"):
                return value  # allocate nothing beyond their (file-bounded) arguments; int/str cap digits
            return _Bounded(value, self._budget)
        if module == "_codecs" and name == "encode":  # protocol 0-2 pickles spell bytes as encode(str, 'latin1')
            return _latin1_encode
        if module in ("copy_reg", "copyreg") and name == "_reconstructor":  # object pickles (Python 2 and 3)
            return _reconstructor
        if module.startswith("numpy.core."):  # numpy < 2 module paths
            module = "numpy._core." + module[len("numpy.core.") :]
        if (module, name) == ("numpy", "ndarray"):
            return _ndarray_refused
        if (module, name) == ("numpy._core.multiarray", "_reconstruct"):
            return _bounded_array(self._budget)
        if (module, name) in {
            ("numpy", "dtype"),
            ("numpy._core.multiarray", "scalar"),
            ("numpy._core.numeric", "_frombuffer"),
        }:
            return super().find_class(module, name)
        if module in _NETWORKX_MODULES and name[:1].isupper():
            return super().find_class(module, name)
        raise UnsafePickleError(
            f"refusing to unpickle global '{module}.{name}': only networkx graphs, numpy arrays and builtin "
            "types are allowed in graph pickles"
        )


def _plain(value: Any) -> Any:
    """A loaded value as a normal object: bounded constructors back to the builtins, checked arrays to ndarrays."""
    if isinstance(value, _Bounded):
        return value.constructor
    if type(value) is _CheckedArray:
        return value.view(np.ndarray)
    return value


def _finish(obj: Any, limit: int) -> Any:
    """Check the nesting (iteratively: a hostile depth cannot overflow the stack) and give back plain objects.

    Old networkx pickles store ``dict`` as instance attributes (the dict factories): those must be the builtin again,
    not the bounded wrapper, so the graphs can be pickled on (process pools) and used as before. Values inside
    tuples and sets cannot be replaced; a checked array there stays an ndarray subclass.
    """
    obj = _plain(obj)
    stack = [(obj, 0)]
    seen: set[int] = set()
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            raise UnsafePickleError(f"containers nest deeper than {limit} levels")
        if id(item) in seen:
            continue
        if isinstance(item, dict):
            seen.add(id(item))
            for key, value in item.items():
                plain = _plain(value)
                if plain is not value:
                    item[key] = plain
                stack.append((plain, depth + 1))
            stack.extend((k, depth + 1) for k in item if isinstance(k, tuple))
        elif isinstance(item, list):
            seen.add(id(item))
            for i, value in enumerate(item):
                plain = _plain(value)
                if plain is not value:
                    item[i] = plain
                stack.append((plain, depth + 1))
        elif isinstance(item, (tuple, set, frozenset)):
            seen.add(id(item))
            stack.extend((v, depth + 1) for v in item)
        elif hasattr(item, "__dict__") and not isinstance(item, (type, np.ndarray)) and not callable(item):
            seen.add(id(item))
            stack.append((vars(item), depth + 1))
    return obj


def safe_pickle_load(file: str | Path | BinaryIO, *, encoding: str = "latin1") -> Any:
    """Unpickle ``file`` (a path or binary file object) with the restricted, bounded unpickler.

    ``encoding='latin1'`` also reads Python-2 pickles holding numpy data (Sat2Graph). Raises
    :class:`UnsafePickleError` for a global outside the allow-list (before it is called), an allocation beyond
    the budget (``64 MiB + 64 x file size``, before it is made) or nesting deeper than :data:`MAX_NESTING`;
    raises :class:`ValueError` naming the file for a truncated or corrupt pickle.
    """
    if isinstance(file, (str, Path)):
        name = str(file)
        data = Path(file).read_bytes()
    else:
        name = getattr(file, "name", "<pickle stream>")
        data = file.read()
    budget = _Budget(BASE_BUDGET_BYTES + BYTES_PER_FILE_BYTE * len(data))
    try:
        obj = _RestrictedUnpickler(io.BytesIO(data), encoding=encoding, budget=budget).load()
    except UnsafePickleError as err:
        raise UnsafePickleError(f"{name}: {err}") from None
    except (MemoryError, RecursionError) as err:
        raise UnsafePickleError(f"{name}: refused, the pickle needs too much memory or nesting ({err!r})") from None
    except Exception as err:  # the unpickler raises many types for corrupt data: one documented error
        raise ValueError(f"{name}: truncated or corrupt pickle ({type(err).__name__}: {err})") from None
    try:
        return _finish(obj, MAX_NESTING)
    except UnsafePickleError as err:
        raise UnsafePickleError(f"{name}: {err}") from None
