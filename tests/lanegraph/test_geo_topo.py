"""GEO / TOPO on small hand-made lane graphs (expected values worked out by hand)."""

import math

import networkx as nx
import numpy as np
import pytest

from drivemetrics.lanegraph.geo_topo import geo_topo, greedy_matching
from tests.lanegraph._graphs import lane, straight


@pytest.mark.parametrize("compat", ["default", "reference"])
def test_geo_topo_identical_line(compat):
    g = straight(0, 100)
    assert geo_topo(g, g, compat=compat) == {
        "geo_precision": 1.0,
        "geo_recall": 1.0,
        "topo_precision": 1.0,
        "topo_recall": 1.0,
    }


@pytest.mark.parametrize("compat", ["default", "reference"])
def test_geo_half_line(compat):
    # GT 0..100 px resampled every 2 px: 51 points; prediction 0..50: 26 points, all within 8 px of a GT point
    r = geo_topo(straight(0, 50), straight(0, 100), compat=compat)
    assert r["geo_precision"] == 1.0
    assert r["geo_recall"] == pytest.approx(26 / 51)


@pytest.mark.parametrize("compat", ["default", "reference"])
def test_geo_shift(compat):
    assert geo_topo(straight(0, 100, y=3.0), straight(0, 100), compat=compat)["geo_recall"] == 1.0
    far = geo_topo(straight(0, 100, y=10.0), straight(0, 100), compat=compat)
    assert far["geo_precision"] == 0.0
    assert far["geo_recall"] == 0.0
    # nothing matched: the evaluator's np.mean([]) makes TOPO NaN; the default says 0
    if compat == "reference":
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
        assert geo_topo(g, g, compat="reference")["geo_recall"] == 0.0
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

    from drivemetrics.lanegraph.geometry import TOPO_RADIUS

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
    from drivemetrics.lanegraph.geo_topo import _candidate_pairs, _resample_lanes, _topo_local
    from drivemetrics.lanegraph.geometry import MATCH_DIST, lane_arrays, length_graph

    gt = _lane_grid(8, 150.0, 3.0, seed=0)
    pred = _lane_grid(8, 150.0, 3.0, seed=1)
    pred_pts, pred_seg = _resample_lanes(lane_arrays(pred, "preds"))
    gt_pts, gt_seg = _resample_lanes(lane_arrays(gt, "target"))
    pa, pb, _ = _candidate_pairs(pred_pts, gt_pts, MATCH_DIST)
    chosen = np.flatnonzero(greedy_matching(pa, pb))
    seeds = chosen[np.random.default_rng(2).choice(len(chosen), 40, replace=False)]
    pred_graph, gt_graph = length_graph(pred_pts, pred_seg), length_graph(gt_pts, gt_seg)
    p, r = _topo_local(pred_pts, pred_graph, gt_pts, gt_graph, (pa, pb), pa[seeds], pb[seeds], chunk=chunk)
    expected = _topo_by_seed(pred_pts, pred_graph, gt_pts, gt_graph, pa, pb, pa[seeds], pb[seeds])
    got = sorted(zip(p.tolist(), r.tolist(), strict=True))
    np.testing.assert_allclose(np.array(got), np.array(expected), rtol=0, atol=1e-12)
    assert min(e[0] for e in expected) < 0.9  # the grids differ: local precision is not trivially 1
