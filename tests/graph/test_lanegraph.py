"""UrbanLaneGraph metrics on small hand-made lane graphs (expected values worked out by hand)."""

import math

import networkx as nx
import numpy as np
import pytest

from drivemetrics.graph.lanegraph import (
    evaluate_lanegraph_pair,
    geo_topo,
    graph_iou,
    greedy_matching,
    lanegraph_apls,
    planning,
    sda,
)


def lane(points, offset=0, directed_pairs=None):
    """Directed chain through ``points`` (node ids from ``offset``)."""
    g = nx.DiGraph()
    for i, p in enumerate(points):
        g.add_node(offset + i, pos=np.array(p, dtype=float))
    for i in range(len(points) - 1):
        g.add_edge(offset + i, offset + i + 1)
    for u, v in directed_pairs or []:
        g.add_edge(u, v)
    return g


def straight(x0, x1, y=0.0, step=10.0):
    xs = np.arange(x0, x1 + 1e-9, step)
    return lane([(x, y) for x in xs])


def fork(at=(0.0, 0.0)):
    """A split node at ``at`` with two successors."""
    x, y = at
    g = nx.DiGraph()
    g.add_node(0, pos=np.array([x - 50.0, y]))
    g.add_node(1, pos=np.array([x, y]))
    g.add_node(2, pos=np.array([x + 50.0, y + 30.0]))
    g.add_node(3, pos=np.array([x + 50.0, y - 30.0]))
    g.add_edges_from([(0, 1), (1, 2), (1, 3)])
    return g


@pytest.mark.parametrize("compat", [None, "reference"])
def test_geo_topo_identical_line(compat):
    g = straight(0, 100)
    assert geo_topo(g, g, compat) == {
        "geo_precision": 1.0,
        "geo_recall": 1.0,
        "topo_precision": 1.0,
        "topo_recall": 1.0,
    }


@pytest.mark.parametrize("compat", [None, "reference"])
def test_geo_half_line(compat):
    # GT 0..100 px resampled every 2 px: 51 points; prediction 0..50: 26 points, all within 8 px of a GT point
    r = geo_topo(straight(0, 50), straight(0, 100), compat)
    assert r["geo_precision"] == 1.0
    assert r["geo_recall"] == pytest.approx(26 / 51)


@pytest.mark.parametrize("compat", [None, "reference"])
def test_geo_shift(compat):
    assert geo_topo(straight(0, 100, y=3.0), straight(0, 100), compat)["geo_recall"] == 1.0
    far = geo_topo(straight(0, 100, y=10.0), straight(0, 100), compat)
    assert far["geo_precision"] == 0.0
    assert far["geo_recall"] == 0.0
    # nothing matched: the evaluator's np.mean([]) makes TOPO NaN; the default says 0
    if compat:
        assert math.isnan(far["topo_precision"])
    else:
        assert far["topo_precision"] == 0.0


def test_topo_sees_a_gap_geo_does_not():
    gt = straight(0, 400)
    broken = nx.union(straight(0, 190), lane([(x, 0.0) for x in np.arange(210, 401, 10.0)], offset=100))
    r = geo_topo(broken, gt)
    assert r["geo_precision"] == 1.0
    assert r["geo_recall"] > 0.95
    assert r["topo_recall"] < 0.8 * r["geo_recall"]


def test_reference_clips_at_4096_default_does_not():
    far = straight(5000, 5200)
    negative = straight(-300, -100)
    for g in (far, negative):
        assert geo_topo(g, g, "reference")["geo_recall"] == 0.0
        assert geo_topo(g, g)["geo_recall"] == 1.0
        assert geo_topo(g, g)["topo_precision"] == 1.0


def test_greedy_matching_matches_sequential_scan():
    rng = np.random.default_rng(0)
    for _ in range(5):
        a = rng.integers(0, 300, 5000)
        b = rng.integers(0, 300, 5000)
        used_a, used_b, expect = set(), set(), []
        for x, y in zip(a.tolist(), b.tolist(), strict=True):
            ok = x not in used_a and y not in used_b
            expect.append(ok)
            if ok:
                used_a.add(x)
                used_b.add(y)
        assert greedy_matching(a, b).tolist() == expect


def test_sda_by_hand():
    gt = fork((100.0, 100.0))
    assert sda(fork((110.0, 100.0)), gt, 20.0) == 1.0
    assert sda(fork((130.0, 100.0)), gt, 20.0) == 0.0  # tp 0, fp 1, fn 1
    assert sda(fork((130.0, 100.0)), gt, 50.0) == 1.0
    assert math.isnan(sda(fork(), straight(0, 100)))  # the GT has no split
    assert sda(straight(0, 100), gt) == 0.0  # the prediction has none
    two = nx.union(fork((100.0, 100.0)), fork((400.0, 100.0)), rename=("a", "b"))
    assert sda(fork((100.0, 100.0)), two, 20.0) == 0.5  # tp 1, fp 0, fn 1


def test_iou_by_hand():
    # radius-5 capsule around a horizontal segment of integer end points: 11 pixel rows x (L + 1) columns, plus two
    # half discs of (81 - 11) / 2 = 35 pixels (81 pixels within 5 px of a point)
    gt = straight(0, 100, step=100.0)
    half = straight(0, 50, step=50.0)
    assert graph_iou(gt, gt) == 1.0
    assert graph_iou(half, gt) == pytest.approx((51 * 11 + 70) / (101 * 11 + 70))
    assert graph_iou(straight(0, 100, y=20.0, step=100.0), gt) == 0.0
    assert graph_iou(half, gt, compat="reference") == pytest.approx(
        graph_iou(half, gt, compat="reference", area_size=(256, 256)), abs=0
    )
    # default mode works anywhere; the reference canvas (256 x 256 from the origin) misses graphs elsewhere
    far = straight(-1000, -900, step=100.0)
    assert graph_iou(far, far) == 1.0
    assert graph_iou(far, far, compat="reference") == 0.0


def test_iou_reference_equals_opencv_lines():
    cv2 = pytest.importorskip("cv2")
    rng = np.random.default_rng(1)
    for _ in range(5):
        pts = rng.uniform(20, 236, size=(8, 2))
        g = lane(pts)
        h = lane(pts + rng.normal(0, 4, size=pts.shape))
        masks = []
        for graph in (g, h):
            im = np.zeros((256, 256), np.uint8)
            for u, v in graph.edges():
                a, b = graph.nodes[u]["pos"], graph.nodes[v]["pos"]
                cv2.line(im, (int(a[0]), int(a[1])), (int(b[0]), int(b[1])), 255, 10)
            masks.append(im > 0)
        expect = (masks[0] & masks[1]).sum() / (masks[0] | masks[1]).sum()
        assert graph_iou(h, g, compat="reference") == pytest.approx(expect, abs=1e-12)


@pytest.mark.parametrize("compat", [None, "reference"])
def test_apls_identical_and_empty(compat):
    g = straight(0, 400)  # 60 m
    assert lanegraph_apls(g, g, compat) == pytest.approx(1.0)
    assert lanegraph_apls(nx.DiGraph(), g, compat) == 0.0
    lonely = nx.DiGraph()
    lonely.add_node(0, pos=np.array([5.0, 5.0]))
    assert lanegraph_apls(lonely, g, compat) == 0.0


def test_apls_reference_large_gt_is_zero_default_is_not():
    g = straight(0, 2000 * 2.0, step=2.0)  # 2001 nodes
    assert lanegraph_apls(g, g, "reference") == 0.0
    assert lanegraph_apls(g, g) == pytest.approx(1.0)


def test_apls_shorter_prediction():
    gt = straight(0, 400)
    pred = straight(0, 200)
    for compat in (None, "reference"):
        value = lanegraph_apls(pred, gt, compat)
        assert 0.0 < value < 1.0


def test_planning_by_hand():
    gt = straight(0, 1000, step=5.0)  # 201 nodes in one chain: every walk from the first 150 nodes is kept
    same = planning(gt, gt)
    assert same == {"mmd": 0.0, "med": 0.0, "sr": 1.0}
    shifted = planning(straight(0, 1000, y=3.0, step=5.0), gt)
    assert shifted["mmd"] == pytest.approx(3.0)
    assert shifted["med"] == pytest.approx(3.0)
    empty = planning(nx.DiGraph(), gt)
    assert empty == {"mmd": 5000.0, "med": 5000.0, "sr": 0.0}
    assert all(math.isnan(v) for v in planning(gt, straight(0, 100)).values())  # walks shorter than 50 steps
    ref = planning(gt, gt, compat="reference")
    assert ref["mmd"] == 0.0
    assert ref["sr"] == 1.0


def test_pair_reference_reports_topo_precision_as_geo_precision():
    gt = straight(0, 200, y=50.0)
    pred = straight(0, 200, y=50.0)
    pred.add_node("spur", pos=np.array([100.0, 100.0]))  # unmatched points inside the local balls
    pred.add_edge(10, "spur")
    ref = evaluate_lanegraph_pair(pred, gt, compat="reference")
    assert ref["geo_precision"] == ref["topo_precision"]
    assert geo_topo(pred, gt, "reference")["geo_precision"] > ref["topo_precision"]


def test_bad_input():
    g = straight(0, 100)
    with pytest.raises(TypeError, match="preds"):
        geo_topo(nx.Graph(g), g)
    bad = g.copy()
    bad.nodes[0]["pos"] = np.array([np.nan, 1.0])
    with pytest.raises(ValueError, match="target"):
        sda(g, bad)
    del bad.nodes[0]["pos"]
    with pytest.raises(ValueError, match="no 'pos'"):
        graph_iou(g, bad)
    with pytest.raises(ValueError, match="compat"):
        geo_topo(g, g, compat="ulg")
    with pytest.raises(ValueError, match="task"):
        evaluate_lanegraph_pair(g, g, task="planning")


def _lane_grid(n: int, spacing: float, jitter: float, seed: int) -> nx.DiGraph:
    """An ``n x n`` grid of lanes (both directions), node positions jittered, a few edges dropped."""
    rng = np.random.default_rng(seed)
    g = nx.DiGraph()
    for i in range(n):
        for j in range(n):
            g.add_node((i, j), pos=np.array([i * spacing, j * spacing]) + rng.normal(0.0, jitter, 2))
    for i in range(n):
        for j in range(n):
            for di, dj in ((1, 0), (0, 1)):
                if i + di < n and j + dj < n and rng.random() > 0.15:
                    g.add_edge((i, j), (i + di, j + dj))
    return g


def _topo_by_seed(pred_pts, pred_graph, gt_pts, gt_graph, pa, pb, seeds_pred, seeds_gt):
    """Per seed, the plain definition: graph-distance balls on the whole graphs (plus one step), the candidate pairs
    inside both balls in priority order, a sequential greedy matching."""
    from scipy.sparse.csgraph import dijkstra

    from drivemetrics.graph.lanegraph import TOPO_RADIUS

    def ball(graph, seed):
        inside = np.flatnonzero(dijkstra(graph, directed=False, indices=seed) < TOPO_RADIUS)
        ring = graph[inside].indices
        return np.union1d(inside, ring)

    out = []
    for sp, sg in zip(seeds_pred, seeds_gt, strict=True):
        bp, bg = ball(pred_graph, sp), ball(gt_graph, sg)
        keep = np.isin(pa, bp) & np.isin(pb, bg)
        used_a, used_b, matched = set(), set(), 0
        for a, b in zip(pa[keep].tolist(), pb[keep].tolist(), strict=True):
            if a not in used_a and b not in used_b:
                used_a.add(a)
                used_b.add(b)
                matched += 1
        out.append((matched / len(bp), matched / len(bg)))
    return sorted(out)


@pytest.mark.parametrize("chunk", [1, 5, 64])
def test_topo_local_equals_the_per_seed_definition(chunk):
    """The grouped, box-restricted TOPO kernel gives every seed the values of the plain per-seed definition on
    graphs much larger than a ball (balls cut by the group's box would change them)."""
    from drivemetrics.graph.lanegraph import (
        MATCH_DIST,
        _candidate_pairs,
        _length_graph,
        _resample_lanes,
        _topo_local,
        lane_arrays,
    )

    gt = _lane_grid(8, 150.0, 3.0, seed=0)
    pred = _lane_grid(8, 150.0, 3.0, seed=1)
    pred_pts, pred_seg = _resample_lanes(lane_arrays(pred, "preds"))
    gt_pts, gt_seg = _resample_lanes(lane_arrays(gt, "target"))
    pa, pb, _ = _candidate_pairs(pred_pts, gt_pts, MATCH_DIST)
    chosen = np.flatnonzero(greedy_matching(pa, pb))
    seeds = chosen[np.random.default_rng(2).choice(len(chosen), 40, replace=False)]
    pred_graph, gt_graph = _length_graph(pred_pts, pred_seg), _length_graph(gt_pts, gt_seg)
    p, r = _topo_local(pred_pts, pred_graph, gt_pts, gt_graph, (pa, pb), pa[seeds], pb[seeds], chunk=chunk)
    expected = _topo_by_seed(pred_pts, pred_graph, gt_pts, gt_graph, pa, pb, pa[seeds], pb[seeds])
    got = sorted(zip(p.tolist(), r.tolist(), strict=True))
    np.testing.assert_allclose(np.array(got), np.array(expected), rtol=0, atol=1e-12)
    assert min(e[0] for e in expected) < 0.9  # the grids differ: local precision is not trivially 1


def test_reference_full_task_reports_no_sda():
    """The evaluator's full-LGP evaluation does not report SDA: NaN in the reference mode, scored by default."""
    g = fork()
    assert math.isnan(evaluate_lanegraph_pair(g, g, "full", "reference")["sda20"])
    assert math.isnan(evaluate_lanegraph_pair(g, g, "full", "reference")["sda50"])
    assert evaluate_lanegraph_pair(g, g, "full")["sda20"] == 1.0
    assert evaluate_lanegraph_pair(g, g, "successor", "reference")["sda20"] == 1.0
