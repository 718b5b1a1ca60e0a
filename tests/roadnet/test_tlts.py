import networkx as nx
import numpy as np
import pytest

from drivemetrics.graph.geometry import crop, length_csgraph
from drivemetrics.roadnet.io import read_graph
from drivemetrics.roadnet.tlts import TLTSMetrics, path_lengths, tlts


def _graph(points, edges):
    g = nx.Graph()
    for i, p in enumerate(points):
        g.add_node(i, pos=(float(p[0]), float(p[1])))
    g.add_edges_from(edges)
    return g


def _polyline(points):
    return _graph(points, [(i, i + 1) for i in range(len(points) - 1)])


def test_path_lengths_against_networkx():
    g = _graph([(0, 0), (3, 4), (6, 0), (6, 8), (20, 20)], [(0, 1), (1, 2), (0, 2), (1, 3)])
    pos = np.array([g.nodes[i]["pos"] for i in range(5)])
    cs = length_csgraph(pos, np.array(list(g.edges)))
    out = path_lengths(cs, np.array([0, 0, 3, 4]), np.array([2, 3, 2, 0]))
    for w, (s, t) in zip(out[:3], [(0, 2), (0, 3), (3, 2)], strict=True):
        expected = nx.shortest_path_length(
            g, s, t, weight=lambda u, v, _: float(np.hypot(*np.subtract(g.nodes[u]["pos"], g.nodes[v]["pos"])))
        )
        assert w == pytest.approx(expected)
    assert np.isinf(out[3])


def test_identical_all_correct_and_empty_all_infeasible():
    g = _graph([(0, 0), (300, 0), (300, 300), (0, 300), (150, 150)], [(0, 1), (1, 2), (2, 3), (3, 0), (0, 4)])
    r = tlts(g, g, n_paths=200)
    assert (r["correct"], r["too_long"], r["too_short"], r["infeasible"]) == (1.0, 0.0, 0.0, 0.0)
    assert r["n_correct"] == 200
    e = tlts(nx.Graph(), g, n_paths=50)
    assert (e["correct"], e["infeasible"], e["n_infeasible"]) == (0.0, 1.0, 50)


def test_zigzag_prediction_is_too_long():
    gt = _polyline([(0, 0), (600, 0)])
    # a zigzag 10 px either side of the road: every stretch is sqrt(2) times longer
    xs = np.arange(0, 601, 20)
    zig = _polyline([(x, 10.0 * (-1) ** i) for i, x in enumerate(xs)])
    r = tlts(zig, gt, n_paths=300)
    assert r["infeasible"] == 0.0
    assert r["too_short"] < 0.05  # very short paths: snapping to the nearest zigzag node can shorten them
    assert r["too_long"] > 0.9


def test_gap_makes_crossing_paths_infeasible():
    gt = _polyline([(0, 0), (1000, 0)])
    pred = _graph([(0, 0), (450, 0), (550, 0), (1000, 0)], [(0, 1), (2, 3)])
    r = tlts(pred, gt, n_paths=400)
    # ends drawn uniformly along the road: about half of the paths cross the gap
    assert 0.35 < r["infeasible"] < 0.65
    assert r["correct"] + r["infeasible"] > 0.9  # ends snapped across the gap edge change a few lengths


def test_shortcut_makes_paths_too_short():
    gt = _polyline([(0, 0), (0, 300), (300, 300), (300, 0)])
    pred = _graph([(0, 0), (0, 300), (300, 300), (300, 0)], [(0, 1), (1, 2), (2, 3), (0, 3)])
    r = tlts(pred, gt, n_paths=300)
    assert r["too_short"] > 0.1
    assert r["too_long"] == 0.0
    assert r["infeasible"] == 0.0


def test_seeded_and_errors():
    gt = _polyline([(0, 0), (200, 0), (200, 200)])
    pred = _polyline([(0, 5), (120, 5)])
    assert tlts(pred, gt, seed=3, n_paths=100) == tlts(pred, gt, seed=3, n_paths=100)
    with pytest.raises(ValueError, match="target"):
        tlts(gt, nx.Graph())
    with pytest.raises(ValueError, match="n_paths"):
        tlts(gt, gt, n_paths=0)
    bad = _polyline([(0, 0), (np.nan, 1)])
    with pytest.raises(ValueError, match="preds"):
        tlts(bad, gt)


def test_metric_pools_counts():
    gt = _polyline([(0, 0), (1000, 0)])
    pred = _graph([(0, 0), (450, 0), (550, 0), (1000, 0)], [(0, 1), (2, 3)])
    metric = TLTSMetrics(n_paths=100)
    metric.update([gt, pred], [gt, gt])
    a, b = tlts(gt, gt, n_paths=100), tlts(pred, gt, n_paths=100)
    out = metric.compute()
    assert out["correct"].item() == pytest.approx((a["n_correct"] + b["n_correct"]) / 200)
    assert out["infeasible"].item() == pytest.approx(b["n_infeasible"] / 200)


def test_vancouver_crop(fixtures_dir):
    folder = fixtures_dir / "graphs" / "roadtracer_vancouver"
    gt = crop(read_graph(folder / "gt.graph"), -512, -512, 512, 512)
    pred = crop(read_graph(folder / "pred_roadtracer.graph"), -512, -512, 512, 512)
    assert tlts(gt, gt, n_paths=100)["correct"] == 1.0
    r = tlts(pred, gt, n_paths=100)
    assert 0.0 < r["correct"] < 1.0
    assert r["correct"] + r["too_long"] + r["too_short"] + r["infeasible"] == pytest.approx(1.0)


def test_reference_keeps_isolated_nodes():
    """The released toolong_tooshort keeps isolated nodes: a path end snapped to one is infeasible."""
    gt = _polyline([(0, 0), (480, 0), (480, 480)])
    shifted = _polyline([(0, 3), (477, 3), (477, 480)])  # 3 px off the GT: every path correct
    assert tlts(shifted, gt, n_paths=100, compat="reference")["correct"] == 1.0
    # isolated predicted nodes exactly on the oversampled GT nodes (every 8 px): nearer than the road
    pred = shifted.copy()
    pts = [(x, 0.0) for x in range(0, 481, 8)] + [(480.0, y) for y in range(8, 481, 8)]
    pred.add_nodes_from((10 + i, {"pos": (float(x), float(y))}) for i, (x, y) in enumerate(pts))
    res = tlts(pred, gt, n_paths=100, compat="reference")
    assert res["infeasible"] == 1.0
    assert tlts(pred, gt, n_paths=100)["correct"] == 1.0  # the default mode drops isolated nodes


@pytest.mark.parametrize("bad", [0, 10.0])
def test_metric_refuses_a_bad_path_budget_at_construction(bad):
    with pytest.raises(ValueError, match="n_paths"):
        TLTSMetrics(n_paths=bad)
