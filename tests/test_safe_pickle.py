"""The bounded, restricted unpickler: hostile pickles fail fast and small; real graph pickles load."""

from __future__ import annotations

import io
import pickle
import subprocess
import sys
import textwrap

import networkx as nx
import numpy as np
import pytest

from drivemetrics._internal.safe_pickle import _ARRAY_SEQUENCE, MAX_NESTING, UnsafePickleError, safe_pickle_load

# builtins.bytearray(3_000_000_000) through REDUCE: 36 bytes that used to allocate 3 GB
BYTEARRAY_BOMB = b"cbuiltins\nbytearray\n(L3000000000\ntR."
# list(range(10**10))
RANGE_BOMB = b"cbuiltins\nlist\n(cbuiltins\nrange\n(L10000000000\ntRtR."
# an array of 10**10 uint8 through numpy's _reconstruct
ARRAY_BOMB = b"cnumpy.core.multiarray\n_reconstruct\n(cnumpy\nndarray\n(L10000000000\ntcnumpy\ndtype\n(Vu1\ntRtR."


@pytest.mark.parametrize("payload", [BYTEARRAY_BOMB, RANGE_BOMB, ARRAY_BOMB, b"cbuiltins\nbytes\n(L20000000000\ntR."])
def test_allocation_bombs_are_refused_before_they_allocate(payload):
    with pytest.raises(UnsafePickleError, match=r"budget|global 'builtins\.range'"):
        safe_pickle_load(io.BytesIO(payload))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the peak RSS from /proc")
def test_bomb_fails_within_a_second_and_200_mb():
    code = textwrap.dedent(
        f"""
        import io, time
        from drivemetrics._internal.safe_pickle import safe_pickle_load, UnsafePickleError
        start = time.perf_counter()
        for payload in ({BYTEARRAY_BOMB!r}, {RANGE_BOMB!r}, {ARRAY_BOMB!r}):
            try:
                safe_pickle_load(io.BytesIO(payload))
            except UnsafePickleError:
                pass
            else:
                raise SystemExit("a bomb loaded")
        peak = [line for line in open("/proc/self/status") if line.startswith("VmHWM")][0].split()[1]
        print(time.perf_counter() - start, peak)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    seconds, max_rss_kib = float(out[0]), int(out[1])
    assert seconds < 1.0
    assert max_rss_kib < 200 * 1024


def test_globals_outside_the_allow_list_never_run(tmp_path):
    marker = tmp_path / "ran"
    payload = pickle.dumps(eval)[:-1]
    with pytest.raises(UnsafePickleError, match="refusing to unpickle global"):
        safe_pickle_load(io.BytesIO(payload + b"."))
    evil = f"cos\nsystem\n(Vtouch {marker}\ntR.".encode()
    with pytest.raises(UnsafePickleError):
        safe_pickle_load(io.BytesIO(evil))
    assert not marker.exists()


def test_deep_nesting_is_refused():
    depth = MAX_NESTING + 50
    payload = b"\x80\x02" + b"]" * depth + b"a" * (depth - 1) + b"."
    with pytest.raises(UnsafePickleError, match="nest deeper"):
        safe_pickle_load(io.BytesIO(payload))
    shallow = b"\x80\x02" + b"]" * 20 + b"a" * 19 + b"."
    assert isinstance(safe_pickle_load(io.BytesIO(shallow)), list)


def test_object_arrays_and_inconsistent_array_states_are_refused():
    with pytest.raises(UnsafePickleError, match="object"):
        safe_pickle_load(io.BytesIO(pickle.dumps(np.array([1, "a"], dtype=object))))
    good = pickle.dumps(np.arange(12, dtype=np.float32).reshape(3, 4), protocol=2)
    # claim a larger shape than the data holds: numpy would read past the buffer or fail late
    bad = good.replace(b"K\x03K\x04\x86", b"K\x09K\x04\x86")
    assert bad != good
    with pytest.raises(UnsafePickleError, match="does not match"):
        safe_pickle_load(io.BytesIO(bad))


@pytest.mark.parametrize("protocol", [0, 2, 4, 5])
def test_graphs_and_arrays_round_trip(protocol):
    graph = nx.DiGraph()
    graph.add_node(0, pos=np.array([1.5, 2.5]))
    graph.add_node("b", pos=(3.0, 4.0))
    graph.add_edge(0, "b", length=2.0)
    data = {"austin": {"eval": {"s0": graph}}, "set": {1, 2}, "arr": np.arange(6).reshape(2, 3)}
    loaded = safe_pickle_load(io.BytesIO(pickle.dumps(data, protocol=protocol)))
    g = loaded["austin"]["eval"]["s0"]
    assert isinstance(g, nx.DiGraph)
    assert list(g.edges(data=True)) == [(0, "b", {"length": 2.0})]
    np.testing.assert_array_equal(np.asarray(g.nodes[0]["pos"]), [1.5, 2.5])
    assert loaded["set"] == {1, 2}
    np.testing.assert_array_equal(loaded["arr"], np.arange(6).reshape(2, 3))


def test_corrupt_pickles_name_the_file(tmp_path):
    path = tmp_path / "sub.pickle"
    path.write_bytes(pickle.dumps({"a": list(range(100))})[:-7])
    with pytest.raises(ValueError, match=r"sub\.pickle: truncated or corrupt pickle"):
        safe_pickle_load(path)


def test_loaded_graphs_are_plain_objects_that_pickle_on():
    """Old networkx pickles store ``dict`` as instance attributes: they come back as ``dict``, not the bounded
    wrapper, arrays as plain ndarrays, so the loaded graphs can be sent to worker processes."""
    graph = nx.DiGraph()
    graph.node_dict_factory = dict  # as networkx 2.x pickled its factories
    graph.add_node(0, pos=np.array([1.0, 2.0]))
    graph.add_node(1, pos=np.array([3.0, 2.0]))
    graph.add_edge(0, 1)
    loaded = safe_pickle_load(io.BytesIO(pickle.dumps({"a": [graph]}, protocol=2)))
    g = loaded["a"][0]
    assert g.node_dict_factory is dict
    assert type(g.nodes[0]["pos"]) is np.ndarray
    again = pickle.loads(pickle.dumps(loaded))
    assert list(again["a"][0].edges) == [(0, 1)]


# --- attacks of audit 16: each one loaded (or ran for hours) with the previous unpickler -----------------------------


def _build_then_bytearray(n: int) -> bytes:
    """BUILD sets bytes_per_element=0 on the old bounded-bytearray wrapper object, then bytearray(n) is free."""
    return (
        b"\x80\x04cbuiltins\nbytearray\n}X\x11\x00\x00\x00bytes_per_elementK\x00sb\x8a\x05"
        + n.to_bytes(5, "little")
        + b"\x85R."
    )


BUILD_ON_BYTEARRAY = _build_then_bytearray(300_000_000)
# BUILD with slot state on the networkx Graph class: setattr(nx.Graph, 'add_edge', int) for the whole process
POISON_GRAPH_CLASS = b"\x80\x04cnetworkx.classes.graph\nGraph\nN}X\x08\x00\x00\x00add_edgecbuiltins\nint\ns\x86b."


def _shared_tuples(depth: int) -> bytes:
    """t0 = (); t(i+1) = (ti, ti): a few bytes per level, 2**depth elements when walked (hash, repr, str)."""
    payload = b"\x80\x04)\x94"
    for i in range(depth):
        payload += b"h" + bytes([i]) + b"h" + bytes([i]) + b"\x86\x94"
    return payload


def _str_of_shared_tuples(depth: int) -> bytes:
    return b"\x80\x04cbuiltins\nstr\n" + _shared_tuples(depth)[2:] + b"\x85R."


def _dict_keyed_by_shared_tuples(depth: int) -> bytes:
    return _shared_tuples(depth) + b"}h" + bytes([depth]) + b"Ns."


def _digraph_of_one_shared_list(n: int) -> bytes:
    """nx.DiGraph({i: L for i in range(n)}) with one list L of n nodes: n**2 edges from O(n) bytes."""
    shared = list(range(n))

    class Call:
        def __reduce__(self):
            return nx.DiGraph, (dict.fromkeys(range(n), shared),)

    return pickle.dumps(Call(), protocol=4)


def _late_filled_lists(depth: int) -> bytes:
    """L(i) = [L(i-1), L(i-1)], each list filled after the lists holding it: 2**depth elements when walked."""
    payload = b"\x80\x04" + b"]\x940" * (depth + 1)
    for i in range(depth, 0, -1):
        payload += b"h" + bytes([i]) + b"(h" + bytes([i - 1]) + b"h" + bytes([i - 1]) + b"e0"
    return payload + b"h" + bytes([depth]) + b"."


def test_build_cannot_change_a_bounded_constructor():
    with pytest.raises(UnsafePickleError, match="refusing to set the state of a type"):
        safe_pickle_load(io.BytesIO(BUILD_ON_BYTEARRAY))
    assert len(bytearray(3)) == 3


def test_build_cannot_rewrite_a_networkx_class():
    """Run in a child process: on failure the class would stay poisoned for the rest of the test session."""
    code = textwrap.dedent(
        f"""
        import io
        import networkx as nx
        from drivemetrics._internal.safe_pickle import safe_pickle_load, UnsafePickleError
        try:
            safe_pickle_load(io.BytesIO({POISON_GRAPH_CLASS!r}))
        except UnsafePickleError as err:
            assert "refusing to set the state of a type" in str(err), err
        else:
            raise SystemExit("the class-poisoning pickle loaded")
        graph = nx.Graph()
        graph.add_edge(0, 1)
        assert list(graph.edges) == [(0, 1)]
        """
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_build_is_refused_on_globals_and_shared_objects():
    for payload in (
        b"\x80\x04c_codecs\nencode\n}X\x01\x00\x00\x00aK\x00sb.",  # a function
        b"\x80\x04cnetworkx.classes.digraph\nDiGraph\n}X\x01\x00\x00\x00aK\x00sb.",  # a class, dict state
        b"\x80\x04]}b.",  # a list
    ):
        with pytest.raises(UnsafePickleError, match="refusing to set the state"):
            safe_pickle_load(io.BytesIO(payload))
    # a pickled dtype is made by the loader from its description: numpy's shared float64 is never changed
    loaded = safe_pickle_load(io.BytesIO(pickle.dumps(np.dtype(">f8"), protocol=2)))
    assert loaded == np.dtype(">f8")
    assert np.dtype("f8").byteorder == "="


def test_str_only_converts_text():
    with pytest.raises(UnsafePickleError, match="str"):
        safe_pickle_load(io.BytesIO(_str_of_shared_tuples(20)))
    # creating a str with NEWOBJ is refused too
    with pytest.raises(UnsafePickleError, match="refusing to create"):
        safe_pickle_load(io.BytesIO(b"\x80\x04cbuiltins\nstr\n" + _shared_tuples(20)[2:] + b"\x85\x81."))


def test_networkx_classes_are_not_called_with_arguments():
    with pytest.raises(UnsafePickleError, match="DiGraph with arguments"):
        safe_pickle_load(io.BytesIO(_digraph_of_one_shared_list(300)))


def test_shared_references_are_charged_at_their_expanded_size():
    # depth 27: about 2 s of hashing with the previous unpickler, depth 40 hours
    with pytest.raises(UnsafePickleError, match="tuple expanding to"):
        safe_pickle_load(io.BytesIO(_dict_keyed_by_shared_tuples(27)))
    with pytest.raises(UnsafePickleError, match="expands to more than"):
        safe_pickle_load(io.BytesIO(_late_filled_lists(40)))
    # sharing within the budget is fine
    small = safe_pickle_load(io.BytesIO(_late_filled_lists(10)))
    assert small[0] is small[1]


def test_bytearray8_never_allocates_more_than_the_file_holds():
    with pytest.raises(ValueError, match="truncated or corrupt"):
        safe_pickle_load(io.BytesIO(b"\x80\x05\x96" + (3_000_000_000).to_bytes(8, "little") + b"."))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the peak RSS from /proc")
def test_audit_attacks_fail_fast_naming_the_file(tmp_path):
    attacks = {
        "build_bypass.pkl": BUILD_ON_BYTEARRAY,
        "build_bypass_3g.pkl": _build_then_bytearray(3_000_000_000),
        "poison.pkl": POISON_GRAPH_CLASS,
        "str.pkl": _str_of_shared_tuples(60),
        "hash.pkl": _dict_keyed_by_shared_tuples(40),
        "digraph.pkl": _digraph_of_one_shared_list(1000),
        "late_lists.pkl": _late_filled_lists(60),
    }
    for name, payload in attacks.items():
        (tmp_path / name).write_bytes(payload)
    code = textwrap.dedent(
        f"""
        import time
        from pathlib import Path
        from drivemetrics._internal.safe_pickle import safe_pickle_load, UnsafePickleError
        worst = 0.0
        for name in {sorted(attacks)!r}:
            path = Path({str(tmp_path)!r}) / name
            start = time.perf_counter()
            try:
                safe_pickle_load(path)
            except UnsafePickleError as err:
                assert str(err).startswith(str(path)), err
            else:
                raise SystemExit(name + " loaded")
            worst = max(worst, time.perf_counter() - start)
        peak = [line for line in open("/proc/self/status") if line.startswith("VmHWM")][0].split()[1]
        print(worst, peak)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    seconds, max_rss_kib = float(out.stdout.split()[0]), int(out.stdout.split()[1])
    assert seconds < 1.0
    assert max_rss_kib < 200 * 1024


# --- attacks of issue 36: memory corruption through a dtype's state, lazy and calling-back globals -----------------


class _FlaglessObjectDtype:
    """``numpy.dtype("O8")`` whose pickled state sets its flags to 0: ``hasobject`` would read False."""

    def __reduce__(self):
        return np.dtype, ("O8", False, True), (3, "|", None, None, None, -1, -1, 0)


class _ScalarOf:
    def __reduce__(self):
        return np._core.multiarray.scalar, (_FlaglessObjectDtype(), b"A" * 8)


class _ArrayOf:
    def __reduce__(self):
        state = (1, (1,), _FlaglessObjectDtype(), False, b"A" * 8)
        return np._core.multiarray._reconstruct, (np.ndarray, (0,), b"b"), state


class _Float64WithFlags:
    """A float64 whose state claims the flags of an object dtype (and, second form, another element size)."""

    def __init__(self, state):
        self.state = state

    def __reduce__(self):
        return np.dtype, ("f8", False, True), self.state


def _filter_atlas() -> bytes:
    """networkx FilterAtlas whose NODE_OK is ``bytes``: every key lookup would call it on a key of the pickle."""
    return pickle.dumps(nx.classes.coreviews.FilterAtlas({10**6: 1}, bytes), protocol=4)


DTYPE_ATTACKS = {
    "scalar_of_flagless_object_dtype": pickle.dumps(_ScalarOf(), protocol=2),
    "array_of_flagless_object_dtype": pickle.dumps(_ArrayOf(), protocol=2),
    "float64_claiming_object_flags": pickle.dumps(
        _Float64WithFlags((3, "<", None, None, None, -1, -1, 63)), protocol=2
    ),
    "float64_claiming_elsize": pickle.dumps(_Float64WithFlags((3, "<", None, None, None, 1 << 30, 8, 0)), protocol=2),
}


def test_dtype_attacks_are_refused_without_a_signal(tmp_path):
    """The 117-byte pickle of issue 36 (and its variants) segfaulted inside the loader: run them in a child."""
    for name, payload in DTYPE_ATTACKS.items():
        (tmp_path / f"{name}.pkl").write_bytes(payload)
    assert len(DTYPE_ATTACKS["scalar_of_flagless_object_dtype"]) < 200
    code = textwrap.dedent(
        f"""
        from pathlib import Path
        from drivemetrics._internal.safe_pickle import safe_pickle_load, UnsafePickleError
        for name in {sorted(DTYPE_ATTACKS)!r}:
            path = Path({str(tmp_path)!r}) / (name + ".pkl")
            try:
                value = safe_pickle_load(path)
            except UnsafePickleError as err:
                assert str(err).startswith(str(path)) and "dtype" in str(err), err
                assert "\\n" not in str(err)
            else:
                raise SystemExit(name + " loaded: " + repr(type(value)))
        print("ok")
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"exit {done.returncode}: {done.stderr[-2000:]}"
    assert done.stdout.strip() == "ok"


def test_a_pickled_dtype_must_carry_numpy_s_own_state():
    for order in ("<", ">"):
        loaded = safe_pickle_load(io.BytesIO(pickle.dumps(np.arange(3, dtype=f"{order}i4"), protocol=2)))
        assert loaded.dtype == np.dtype(f"{order}i4")
        np.testing.assert_array_equal(loaded, [0, 1, 2])
    for protocol in (2, 5):
        loaded = safe_pickle_load(io.BytesIO(pickle.dumps(np.asfortranarray(np.arange(6.0).reshape(2, 3)), protocol)))
        assert loaded.flags.f_contiguous
        assert loaded.flags.writeable
        np.testing.assert_array_equal(loaded, np.arange(6.0).reshape(2, 3))
    for dtype in ("U5", "S3", "?", "c16", "f2"):
        value = np.zeros(2, dtype=dtype)
        np.testing.assert_array_equal(safe_pickle_load(io.BytesIO(pickle.dumps(value, protocol=2))), value)
    for refused in (np.zeros(2, dtype=[("a", "f8")]), np.zeros(2, dtype="M8[s]")):
        with pytest.raises(UnsafePickleError, match="dtype"):
            safe_pickle_load(io.BytesIO(pickle.dumps(refused, protocol=2)))


def test_lazy_and_calling_back_globals_are_refused():
    with pytest.raises(UnsafePickleError, match=r"builtins\.range"):  # range(10**8) as a lane's points
        safe_pickle_load(io.BytesIO(pickle.dumps({"points": range(10**8)}, protocol=4)))
    with pytest.raises(UnsafePickleError, match="FilterAtlas"):
        safe_pickle_load(io.BytesIO(_filter_atlas()))
    for name in ("FilterAdjacency", "FilterMultiInner", "FilterMultiAdjacency", "EdgeDataView"):
        module = "coreviews" if name.startswith("Filter") else "reportviews"
        with pytest.raises(UnsafePickleError, match=name):
            safe_pickle_load(io.BytesIO(f"cnetworkx.classes.{module}\n{name}\n.".encode()))
    # a function in a graph's state (a view calling it back) is refused even on an allowed class
    graph_with_callable = b"\x80\x04cnetworkx.classes.graph\nGraph\n)\x81}X\x01\x00\x00\x00fc_codecs\nencode\nsb."
    with pytest.raises(UnsafePickleError, match="function or class in an object's state"):
        safe_pickle_load(io.BytesIO(graph_with_callable))
    with pytest.raises(UnsafePickleError, match=r"builtins\.object"):
        safe_pickle_load(io.BytesIO(b"cbuiltins\nobject\n)R."))


def _same(a, b, seen=None) -> bool:
    """Deep equality of loaded structures: graphs by nodes / edges with data, arrays by dtype, shape and values."""
    if isinstance(a, nx.Graph):
        return (
            type(a) is type(b)
            and _same(dict(a.graph), dict(b.graph))
            and _same(dict(a.nodes(data=True)), dict(b.nodes(data=True)))
            and _same(list(a.edges(data=True)), list(b.edges(data=True)))
        )
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)
    if isinstance(a, np.generic):
        return type(a) is type(b) and a.tobytes() == b.tobytes()
    if isinstance(a, dict):
        return type(a) is type(b) and list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


@pytest.mark.parametrize(
    "name",
    [
        "lanegraph/annotations_successor_lgp_eval.pickle",
        "lanegraph/submission_succ_lgp_eval.pickle",
        "lanegraph/submission_full_lgp_eval.pickle",
        "graphs/sat2graph_tile/gt.p",
        "graphs/sat2graph_tile/prop.p",
    ],
)
def test_real_fixture_pickles_load_identically(fixtures_dir, name):
    path = fixtures_dir / name
    trusted = pickle.loads(path.read_bytes(), encoding="latin1")  # the fixtures are ours: plain pickle is safe
    assert _same(safe_pickle_load(path), trusted)


# --- the one-step path for arrays as numpy pickles them (issue 40): same values, memo, side table and budget ---------


def _many_arrays() -> dict:
    rng = np.random.default_rng(0)
    return {
        "lanes": [{"id": k, "points": rng.random((11, 3)).astype(np.float32)} for k in range(30)],
        "big": [rng.random((300,)) for _ in range(3)],  # BININT2 dims, BINBYTES data
        "kinds": [np.arange(6).astype(d).reshape(2, 3) for d in ("<i4", ">i4", "u1", "?", "c8", "f2") for _ in "ab"],
        "fortran": [np.asfortranarray(np.arange(6.0).reshape(2, 3)) for _ in "ab"]
        + [np.asfortranarray(np.ones((3, 2)))],
        "empty": [np.zeros((0, 3), np.float32), np.zeros((0, 3), np.float32)],
        "cube": [np.ones((2, 2, 2)), np.ones((2, 2, 2))],
    }


def _load_with(payload: bytes, one_step: bool):
    from drivemetrics._internal import safe_pickle

    budget = safe_pickle._Budget(10**9)
    unpickler = safe_pickle._RestrictedUnpickler(io.BytesIO(payload), encoding="latin1", budget=budget)
    unpickler.one_step_arrays = one_step
    calls = []
    original = unpickler._array_sequence

    def counted(data, match):
        after = original(data, match)
        calls.append(after > 0)
        return after

    unpickler._array_sequence = counted
    value = unpickler.load()
    table = sorted(unpickler._table.values())
    memo_types = [type(v).__name__ for v in unpickler.memo.values()]
    return value, budget.left, table, memo_types, len(unpickler._referenced), unpickler.stale, sum(calls)


def test_the_one_step_array_path_matches_the_opcode_path():
    data = _many_arrays()
    payload = pickle.dumps(data, protocol=4)
    fast = _load_with(payload, one_step=True)
    slow = _load_with(payload, one_step=False)
    assert fast[-1] >= 30
    assert slow[-1] == 0
    assert _same(fast[0], data)
    assert _same(slow[0], data)
    assert fast[1:-1] == slow[1:-1]  # budget left, side table, memo, referenced set, staleness
    assert fast[0]["fortran"][2].flags.f_contiguous
    assert fast[0]["lanes"][5]["points"].flags.writeable


def test_the_one_step_array_path_keeps_every_check():
    array = np.arange(12, dtype=np.float32).reshape(3, 4)
    payload = pickle.dumps([array, array.copy()], protocol=4)
    second = payload.rindex(b"K\x03K\x04\x86")
    # the second array claims more elements than its bytes hold: refused, as on the opcode path
    with pytest.raises(UnsafePickleError, match="does not match"):
        safe_pickle_load(io.BytesIO(payload[:second] + b"K\x09K\x04\x86" + payload[second + 5 :]))

    # its dtype (or ndarray, or b"b") fetched from the memo slot of another object: the same outcome on both paths
    def outcome(payload: bytes, one_step: bool) -> str:
        try:
            value = _load_with(payload, one_step)
        except Exception as err:
            return type(err).__name__
        return repr(value[0]) + repr(value[1:-1])

    gets = [k for k in range(second - 20, second + 8) if payload[k] == ord("h")]  # the four BINGETs
    assert len(gets) == 4
    refused = 0
    for get in gets:
        for slot in range(payload[get + 1] + 3):
            hostile = payload[: get + 1] + bytes([slot]) + payload[get + 2 :]
            fast, slow = outcome(hostile, True), outcome(hostile, False)
            assert fast == slow, (get, slot)
            refused += fast.endswith("Error")
    assert refused > 10
    # a memo slot taken by PUT just before an array: MEMOIZE then overwrites it, the same on both paths
    three = pickle.dumps([np.ones(3), np.zeros(3), np.ones(3)], protocol=4)
    cut = _ARRAY_SEQUENCE.search(three).start() - 2  # at the BINGET of _reconstruct for the second array
    for slot in range(60):
        hostile = three[:cut] + b"Nr" + slot.to_bytes(4, "little") + b"0" + three[cut:]
        assert outcome(hostile, True) == outcome(hostile, False), slot
    # truncated inside the second array's bytes
    with pytest.raises(ValueError, match="truncated or corrupt"):
        safe_pickle_load(io.BytesIO(payload[: second + 20]))
