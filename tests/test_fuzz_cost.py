"""A fuzz campaign that targets cost (issue 24): extreme but small inputs for every reader, in a memory-capped child.

Hypothesis builds files of a few bytes to a few hundred kilobytes with huge and tiny coordinates (``1e300``,
``-1e7``, ``5e-324``), long single records (one lane of thousands of points, thousands of lanes or lines), deep
nesting and huge integers, and feeds them to each reader and to the kernel that rasterises or samples what it read
(CULane IoU drawing, CCQ rendering, lane-graph IoU, PNG decoding,
OpenLane-V2 scoring, map AP in each protocol). Every example must either give a finite result
or raise one ``ValueError`` naming the file, within 5 s; the whole campaign runs in one child process under a
3 GB address-space cap, and its peak RSS must stay within 300 MB of the child's footprint after importing the
readers. ``DRIVEMETRICS_FUZZ_COST_EXAMPLES`` sets the examples per reader (default 12; the ``slow`` test runs 100).
"""

from __future__ import annotations

import json
import math
import os
import resource
import tempfile
import time
import zlib
from pathlib import Path

import pytest

from tests.cost_harness import run_child

pytestmark = pytest.mark.fuzz

PER_EXAMPLE_SECONDS = 5.0
EXTRA_MB = 300.0

# ---------------------------------------------------------------------------------------------------------------
# the campaign (runs in the child; imported there as tests.test_fuzz_cost)


def _strategies():
    from hypothesis import strategies as st

    extreme = st.sampled_from([0.0, 5e-324, 1e-300, -1e7, 1e7, 3e9, -1e12, 1e300, -1.7e308, 1.7e308, 590.0, 1640.0])
    coordinate = st.one_of(extreme, st.floats(-1e4, 1e4, allow_nan=False))
    point = st.tuples(coordinate, coordinate)
    lane = st.one_of(
        st.lists(point, min_size=0, max_size=6),
        st.builds(lambda p, n: [p] * n, point, st.integers(1, 20_000)),  # one long record
    )
    lanes = st.one_of(
        st.lists(lane, max_size=4),
        st.builds(lambda one, n: [one] * n, st.lists(point, min_size=2, max_size=3), st.integers(1, 3_000)),
    )
    depth = st.integers(1, 120_000)
    digits = st.integers(1, 2_000)
    return st, coordinate, point, lanes, depth, digits


def _fmt(v: float) -> str:
    return repr(float(v))


def _expect(fn, path: Path) -> None:
    """``fn()`` returns, or raises a ValueError naming ``path``; within the time budget."""
    start = time.perf_counter()
    message = None
    try:
        fn()
    except ValueError as err:
        message = str(err)
    if message is not None:
        assert path.name in message, f"the error does not name {path.name}: {message[:300]}"
        assert "\n" not in message.strip(), f"not one line: {message[:300]}"
    elapsed = time.perf_counter() - start
    assert elapsed < PER_EXAMPLE_SECONDS, f"{path.name}: {elapsed:.1f} s"


def campaign(examples: int) -> None:
    """Every reader (and the kernel behind it) on extreme inputs; raises AssertionError on a violation."""
    import networkx as nx
    import numpy as np
    import torch
    from hypothesis import HealthCheck, given, settings

    from drivemetrics._internal.limits import set_limits
    from drivemetrics.lane.culane import culane_matches
    from drivemetrics.lane.evaluate import evaluate_tusimple_files
    from drivemetrics.lane.io import _stack_lanes, read_culane_lines
    from drivemetrics.lanegraph.evaluate import _evaluate_job
    from drivemetrics.lanetopology.evaluate import evaluate_openlanev2_files
    from drivemetrics.road.io import read_confidence_png
    from drivemetrics.roadnet.evaluate import _evaluate_files
    from drivemetrics.roadnet.io import read_geojson, read_graph
    from drivemetrics.vectormap.evaluate import evaluate_map_files

    st, _, point, lanes, depth, digits = _strategies()
    run = settings(
        max_examples=examples, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck), database=None
    )
    folder = Path(tempfile.mkdtemp(prefix="fuzz_cost_"))
    baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    # CULane: read, then draw and match against one GT lane on the 590 x 1640 canvas
    gt = _stack_lanes([[np.array([[800.0, 580.0], [810.0, 450.0], [820.0, 300.0]])]])

    @run
    @given(lanes)
    def culane(pred_lanes):
        path = folder / "a.lines.txt"
        path.write_text("".join(" ".join(f"{_fmt(x)} {_fmt(y)}" for x, y in one) + "\n" for one in pred_lanes))

        def score():
            pred = read_culane_lines(path)
            if pred.shape[0]:
                iou = culane_matches(pred[None], gt)["matched_iou"]
                assert bool(torch.isfinite(iou).all() | torch.isnan(iou).all())

        _expect(score, path)

    # TuSimple: a prediction with extreme lanes, deep nesting or a huge integer, scored against one label
    (folder / "gt.json").write_text(
        json.dumps(
            {"raw_file": "a.jpg", "lanes": [[600 + k for k in range(56)]], "h_samples": list(range(160, 720, 10))}
        )
        + "\n"
    )

    @run
    @given(st.one_of(lanes, depth, digits))
    def tusimple(value):
        path = folder / "pred.json"
        if isinstance(value, list):
            record = json.dumps({"raw_file": "a.jpg", "lanes": [[x for x, _ in one] for one in value], "run_time": 1})
        elif value > 2_000 or value % 2:
            record = "[" * value + "]" * value
        else:
            record = '{"raw_file": "a.jpg", "lanes": [], "run_time": 1' + "0" * value + "}"
        path.write_text(record + "\n")
        _expect(lambda: evaluate_tusimple_files(path, folder / "gt.json"), path)

    # road graphs: RoadTracer text and GeoJSON with extreme nodes, scored by graph-eval's reader and CCQ
    (folder / "gt.graph").write_text("0 0\n400 0\n400 400\n\n0 1\n1 2\n")

    @run
    @given(st.lists(point, min_size=1, max_size=5), st.integers(0, 9), depth)
    def road_graph(nodes, bad_index, nesting):
        path = folder / "pred.graph"
        edges = [(k, k + 1) for k in range(len(nodes) - 1)] + ([(0, bad_index)] if bad_index > 5 else [])
        text = "".join(f"{_fmt(x)} {_fmt(y)}\n" for x, y in nodes) + "\n" + "".join(f"{a} {b}\n" for a, b in edges)
        path.write_text(text)
        job = ("t", folder / "gt.graph", path, ["ccq", "opt_j"], {}, None, 0.0, "default")
        _expect(lambda: _evaluate_files(job), path)
        geo = folder / "pred.geojson"
        line = {"type": "Feature", "geometry": {"type": "LineString", "coordinates": [list(p) for p in nodes]}}
        geo.write_text(json.dumps({"type": "FeatureCollection", "features": [line]}))
        _expect(lambda: read_geojson(geo, coordinates="raw"), geo)
        geo.write_text("[" * nesting + "]" * nesting)
        _expect(lambda: read_graph(geo), geo)

    # lane graphs: a successor sample with extreme nodes (the IoU canvas, APLS sampling, GEO / TOPO)
    @run
    @given(st.lists(point, min_size=2, max_size=5))
    def lane_graph(nodes):
        path = folder / "austin_1_0_0"  # the error names the sample
        graph, pred = nx.DiGraph(), nx.DiGraph()
        for k in range(6):
            graph.add_node(k, pos=np.array([20.0 + 40 * k, 128.0]))
        graph.add_edges_from((k, k + 1) for k in range(5))
        for k, (x, y) in enumerate(nodes):
            pred.add_node(k, pos=np.array([x, y]))
        pred.add_edges_from((k, k + 1) for k in range(len(nodes) - 1))
        _expect(lambda: _evaluate_job(("austin", path.name, graph, pred, "successor", "default", 0)), path)

    # PNG: a header declaring any size over a few bytes of data
    @run
    @given(st.integers(1, 200_000), st.integers(1, 200_000))
    def png(width, height):
        path = folder / "um_road_000000.png"

        def chunk(kind: bytes, body: bytes) -> bytes:
            return len(body).to_bytes(4, "big") + kind + body + zlib.crc32(kind + body).to_bytes(4, "big")

        packer = zlib.compressobj(9)
        rows = min(height, max(1, 4_000_000 // (width + 1)))  # at most ~4 MB of raw rows, a few KB compressed
        data = b"".join(packer.compress(bytes(width + 1)) for _ in range(rows)) + packer.flush()
        header = width.to_bytes(4, "big") + height.to_bytes(4, "big") + bytes([8, 0, 0, 0, 0])
        png_bytes = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", data) + chunk(b"IEND", b"")
        path.write_bytes(png_bytes)
        _expect(lambda: read_confidence_png(path), path)

    # openlanev2-eval: a prediction JSON with extreme lanes (3-D: the second coordinate repeated as height)
    token = ["val", "1", "2"]
    gt_lane = [[0.0, 2.0 * j, 0.0] for j in range(11)]
    gt_frame = {"lane_centerline": [{"points": gt_lane}], "traffic_element": [], "topology_lclc": [[0]],
                "topology_lcte": [[]]}  # fmt: skip
    (folder / "olv2_gt.json").write_text(json.dumps({"frames": [{"token": token, "gt": gt_frame}]}))

    @run
    @given(lanes, st.sampled_from([0.5, 1.0, 0.0]))
    def openlanev2(pred_lanes, confidence):
        path = folder / "olv2_pred.json"
        items = [{"points": [[x, y, y] for x, y in one], "confidence": confidence} for one in pred_lanes]
        # empty topology lists stand for all-zero matrices (an L x L matrix would make the file quadratic in L)
        frame = {"lane_centerline": items, "traffic_element": [], "topology_lclc": [], "topology_lcte": []}
        path.write_text(json.dumps({"frames": [{"token": token, "pred": frame}]}))
        _expect(lambda: evaluate_openlanev2_files(folder / "olv2_gt.json", path), path)

    # map-eval: MapTR results with extreme lines, in every protocol
    map_gt = {"GTs": [{"sample_token": "a", "vectors": [{"pts": [[0.0, 0.0], [0.0, 10.0]], "type": 0}]}]}
    (folder / "map_gt.json").write_text(json.dumps(map_gt))

    @run
    @given(lanes, st.sampled_from(["default", "nuscenes-maptr"]))
    def map_eval(pred_lines, protocol):
        path = folder / "map_pred.json"
        vectors = [{"pts": [list(p) for p in one], "type": 0, "confidence_level": 0.5} for one in pred_lines]
        path.write_text(json.dumps({"results": [{"sample_token": "a", "vectors": vectors}]}))
        _expect(lambda: evaluate_map_files(folder / "map_gt.json", path, protocol), path)

    # map-eval, Argoverse 2: the same lines as a challenge submission (resampled every 0.3 m)
    av2_gt = {"s": [{"timestamp": "1", "annotation": {"divider": [[[0, 0, 0, 1], [0, 10, 0, 1]]]}}]}
    (folder / "av2_gt.json").write_text(json.dumps(av2_gt))

    @run
    @given(lanes)
    def map_av2(pred_lines):
        path = folder / "av2_pred.json"
        entry = {"vectors": [[list(p) for p in one] for one in pred_lines], "scores": [0.5] * len(pred_lines),
                 "labels": [1] * len(pred_lines)}  # fmt: skip
        path.write_text(json.dumps({"results": {"1": entry}}))
        _expect(lambda: evaluate_map_files(folder / "av2_gt.json", path, "av2-cvpr23"), path)

    with set_limits(max_graph_extent=8192, max_png_pixels=20_000_000):
        for name, test in [
            ("culane", culane),
            ("tusimple", tusimple),
            ("road_graph", road_graph),
            ("lane_graph", lane_graph),
            ("png", png),
            ("openlanev2", openlanev2),
            ("map_eval", map_eval),
            ("map_av2", map_av2),
        ]:
            start = time.perf_counter()
            test()
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            print(f"{name}: {examples} examples, {time.perf_counter() - start:.1f} s, peak RSS {peak:.0f} MB")
            assert peak <= baseline + EXTRA_MB, f"{name}: peak RSS {peak:.0f} MB, {baseline:.0f} MB after imports"
    assert not math.isnan(baseline)


# ---------------------------------------------------------------------------------------------------------------
# the tests (run the campaign in a memory-capped child)


def _run_campaign(examples: int, tmp_path: Path, timeout: float) -> None:
    code = f"from tests.test_fuzz_cost import campaign; campaign({examples})"
    result = run_child(["-c", code], tmp_path, timeout=timeout)
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout[-2000:]}\n{result.stderr[-4000:]}"


def test_every_reader_costs_what_its_bytes_cost(tmp_path):
    _run_campaign(int(os.environ.get("DRIVEMETRICS_FUZZ_COST_EXAMPLES", "12")), tmp_path, timeout=300)


@pytest.mark.slow
def test_every_reader_costs_what_its_bytes_cost_longer_campaign(tmp_path):
    _run_campaign(100, tmp_path, timeout=900)
