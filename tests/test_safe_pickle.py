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

from drivemetrics._safe_pickle import MAX_NESTING, UnsafePickleError, safe_pickle_load

# builtins.bytearray(3_000_000_000) through REDUCE: 36 bytes that used to allocate 3 GB
BYTEARRAY_BOMB = b"cbuiltins\nbytearray\n(L3000000000\ntR."
# list(range(10**10))
RANGE_BOMB = b"cbuiltins\nlist\n(cbuiltins\nrange\n(L10000000000\ntRtR."
# an array of 10**10 uint8 through numpy's _reconstruct
ARRAY_BOMB = b"cnumpy.core.multiarray\n_reconstruct\n(cnumpy\nndarray\n(L10000000000\ntcnumpy\ndtype\n(Vu1\ntRtR."


@pytest.mark.parametrize("payload", [BYTEARRAY_BOMB, RANGE_BOMB, ARRAY_BOMB, b"cbuiltins\nbytes\n(L20000000000\ntR."])
def test_allocation_bombs_are_refused_before_they_allocate(payload):
    with pytest.raises(UnsafePickleError, match="budget"):
        safe_pickle_load(io.BytesIO(payload))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the peak RSS from /proc")
def test_bomb_fails_within_a_second_and_200_mb():
    code = textwrap.dedent(
        f"""
        import io, time
        from drivemetrics._safe_pickle import safe_pickle_load, UnsafePickleError
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
