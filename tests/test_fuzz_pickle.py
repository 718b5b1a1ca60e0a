"""Fuzzing the restricted unpickler over opcode sequences (issue 36), in a memory-capped child process.

Hypothesis writes pickles from the opcodes that build, call, set state and share (GLOBAL of allowed and refused
names, REDUCE, BUILD, NEWOBJ, NEWOBJ_EX, the tuple / list / dict / set builders, APPENDS, SETITEMS, ADDITEMS, memo
PUT / GET / MEMOIZE, DUP, POP, POP_MARK) and splices them into real pickles (a lane graph with arrays, numpy scalars,
the dtype attacks). Every example must load or raise one ``ValueError`` (``UnsafePickleError`` included) of one
line naming the stream; a loaded value holds no object array and no corrupt dtype; nothing ends in a signal; the
child's peak RSS stays within the loader's budget (64 MiB for these small pickles) of its footprint after imports.

``DRIVEMETRICS_FUZZ_PICKLE_EXAMPLES`` sets the number of examples (default 300, a few seconds; the ``slow`` test
runs 3,000).
"""

from __future__ import annotations

import io
import os
import pickle
import resource
import struct
from pathlib import Path

import pytest

from tests.cost_harness import run_child

pytestmark = pytest.mark.fuzz

#: peak RSS the whole campaign may add to the child's footprint after imports (the budget of a small pickle, 64 MiB,
#: plus the room Hypothesis itself takes)
EXTRA_MB = 120.0

_GLOBALS = [
    ("numpy", "dtype"),
    ("numpy.core.multiarray", "scalar"),
    ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.numeric", "_frombuffer"),
    ("numpy", "ndarray"),
    ("builtins", "list"),
    ("builtins", "dict"),
    ("builtins", "set"),
    ("builtins", "bytes"),
    ("builtins", "bytearray"),
    ("builtins", "str"),
    ("builtins", "object"),
    ("builtins", "range"),
    ("builtins", "getattr"),
    ("copyreg", "_reconstructor"),
    ("_codecs", "encode"),
    ("networkx.classes.digraph", "DiGraph"),
    ("networkx.classes.graph", "Graph"),
    ("networkx.classes.reportviews", "NodeView"),
    ("networkx.classes.coreviews", "FilterAtlas"),
    ("networkx.classes.coreviews", "AtlasView"),
    ("os", "system"),
]
_TEXT = ["O8", "f8", "i4", "U3", "b", "|", "<", ">", "NODE_OK", "_atlas", "_adj", "_node", "_succ", "_pred", "pos"]
_SIMPLE = [
    b"(", b")", b"]", b"}", b"\x8f", b"N", b"\x88", b"\x89", b"R", b"b", b"\x81", b"\x92", b"\x85", b"\x86", b"\x87",
    b"t", b"l", b"d", b"a", b"e", b"s", b"u", b"\x90", b"\x91", b"\x94", b"2", b"0", b"1",
]  # fmt: skip


def _seeds() -> list[bytes]:
    """Real pickles (a lane graph with float arrays and scalars) and the dtype attacks, as splicing material."""
    import networkx as nx
    import numpy as np

    graph = nx.DiGraph()
    graph.add_node(0, pos=np.array([1.0, 2.0]), score=np.float32(0.5))
    graph.add_node(1, pos=np.array([3.0, 4.0], dtype=">f8"))
    graph.add_edge(0, 1, weight=np.int16(3))
    _ = graph.nodes, graph.adj  # cached views, as real submissions hold them
    attack_dtype = b"cnumpy\ndtype\n(VO8\nI00\nI01\ntR(I3\nV|\nNNNI-1\nI-1\nI0\ntb"
    attack = b"cnumpy.core.multiarray\nscalar\n(" + attack_dtype + b"C\x08AAAAAAAAtR."
    return [pickle.dumps({"austin": {"eval": {"s": graph}}}, protocol=p) for p in (2, 4, 5)] + [
        attack,
        pickle.dumps(np.arange(4.0), protocol=2),
        pickle.dumps({"a": [1, (2, 3)], "b": {4}}, protocol=4),
    ]


def _strategy():
    from hypothesis import strategies as st

    small_int = st.integers(-3, 300)
    tokens = st.one_of(
        st.sampled_from(_SIMPLE),
        st.builds(lambda g: f"c{g[0]}\n{g[1]}\n".encode(), st.sampled_from(_GLOBALS)),
        st.builds(lambda n: b"J" + struct.pack("<i", n), small_int),
        st.builds(lambda n: b"\x8a\x08" + struct.pack("<q", n), st.sampled_from([10**8, 2**40, -1, 8])),
        st.builds(lambda t: b"\x8c" + bytes([len(t)]) + t.encode(), st.sampled_from(_TEXT)),
        st.builds(lambda b: b"C" + bytes([len(b)]) + b, st.binary(max_size=24)),
        st.builds(lambda n: b"q" + bytes([n]), st.integers(0, 7)),  # BINPUT
        st.builds(lambda n: b"h" + bytes([n]), st.integers(0, 7)),  # BINGET
        st.builds(lambda n: b"\x96" + struct.pack("<Q", n) + bytes(min(n, 16)), st.sampled_from([0, 8, 16, 2**40])),
    )
    sequence = st.lists(tokens, max_size=40).map(b"".join)
    fresh = sequence.map(lambda body: b"\x80\x04" + body + b".")

    def splice(seed: bytes, at: int, cut: int, body: bytes) -> bytes:
        at %= len(seed)
        return seed[:at] + body + seed[at + cut % 8 :]

    spliced = st.builds(splice, st.sampled_from(_seeds()), st.integers(0, 10**6), st.integers(0, 7), sequence)
    return st.one_of(fresh, spliced)


def _check_value(value) -> None:
    """What a reader does with a loaded value: no object arrays, no corrupt dtypes; arrays and scalars readable."""
    import networkx as nx
    import numpy as np

    stack, seen, steps = [value], set(), 0
    while stack and steps < 100_000:
        steps += 1
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, np.ndarray):
            assert not item.dtype.hasobject, item.dtype
            assert item.dtype.kind in "biufcSU?", item.dtype
            item.tobytes()
        elif isinstance(item, np.generic):
            assert item.dtype.kind in "biufcSU?", item.dtype
            item.tobytes()
        elif isinstance(item, np.dtype):
            assert not item.hasobject, item
            assert item.kind in "biufcSU?", item
        elif isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
        elif isinstance(item, (list, tuple, set, frozenset)):
            stack.extend(item)
        elif isinstance(item, nx.Graph):
            try:
                stack.append(dict(item.nodes(data=True)))
                stack.append(list(item.edges(data=True)))
            except Exception:  # a graph missing its inner dicts: a Python error in the reader, never a signal
                pass


def campaign(examples: int, last_example: str) -> None:
    """Runs in the child: every example loads cleanly or raises one line; the peak RSS stays within the budget."""
    from hypothesis import HealthCheck, given, settings

    from drivemetrics._internal.safe_pickle import safe_pickle_load

    baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    counts = {"loaded": 0, "refused": 0}

    @settings(
        max_examples=examples, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck), database=None
    )
    @given(_strategy())
    def one(payload: bytes) -> None:
        Path(last_example).write_bytes(payload)  # named by the parent if this example ends the child
        try:
            value = safe_pickle_load(io.BytesIO(payload))
        except ValueError as err:
            message = str(err)
            assert message.startswith("<pickle stream>: "), message[:300]
            assert "\n" not in message, message[:300]
            counts["refused"] += 1
            return
        counts["loaded"] += 1
        _check_value(value)

    one()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{examples} examples: {counts['loaded']} loaded, {counts['refused']} refused, peak RSS {peak:.0f} MB "
          f"({baseline:.0f} MB after imports)")  # fmt: skip
    assert peak <= baseline + EXTRA_MB, f"peak RSS {peak:.0f} MB, {baseline:.0f} MB after imports"


def _run(examples: int, tmp_path: Path, timeout: float) -> None:
    last = tmp_path / "last_example.pickle"
    code = f"from tests.test_fuzz_pickle import campaign; campaign({examples}, {str(last)!r})"
    result = run_child(["-c", code], tmp_path, timeout=timeout)
    example = last.read_bytes() if last.exists() else b""
    assert result.returncode == 0, (
        f"exit {result.returncode} (a negative code is a signal); last example {example!r}\n"
        f"{result.stdout[-2000:]}\n{result.stderr[-4000:]}"
    )
    print(result.stdout.strip())


def test_the_unpickler_survives_opcode_fuzzing(tmp_path):
    _run(int(os.environ.get("DRIVEMETRICS_FUZZ_PICKLE_EXAMPLES", "300")), tmp_path, timeout=300)


@pytest.mark.slow
def test_the_unpickler_survives_a_longer_opcode_campaign(tmp_path):
    _run(3000, tmp_path, timeout=900)
