import networkx as nx
import numpy as np
import pytest

from drivemetrics.graph.geometry import crop
from drivemetrics.roadnet import OptGMetrics
from drivemetrics.roadnet.io import read_graph
from drivemetrics.roadnet.opt_g import _greedy_pairs, opt_g


def _graph(points, edges):
    g = nx.Graph()
    for i, p in enumerate(points):
        g.add_node(i, pos=(float(p[0]), float(p[1])))
    g.add_edges_from(edges)
    return g


def _line(x0, x1, y=0.0, pieces=1):
    xs = np.linspace(x0, x1, pieces + 1)
    return _graph([(x, y) for x in xs], [(i, i + 1) for i in range(pieces)])


@pytest.mark.parametrize("matching", ["optimal", "greedy"])
def test_identical_graphs_score_one(matching):
    g = _graph([(0, 0), (200, 0), (200, 150), (400, 0)], [(0, 1), (1, 2), (1, 3)])
    res = opt_g(g, g, n_samples=50, matching=matching)
    assert res["n_spurious"] == res["n_missing"] == 0
    assert res["n_pred"] == res["n_gt"] > 0
    assert res["precision"] == res["recall"] == res["f1"] == 1.0


def test_shifted_copy_matches_and_far_copy_does_not():
    gt = _line(0, 200)
    near = _line(0, 200, 5.0, pieces=7)  # drawn with other nodes; resampled to the same 10 px spacing
    assert opt_g(near, gt, n_samples=40)["f1"] == 1.0
    far = _line(0, 200, 100.0)
    res = opt_g(far, gt, n_samples=40)
    assert res["precision"] == res["recall"] == 0.0
    assert res["n_pred"] > 0  # draws rooted in the prediction still count its points as spurious


def test_half_prediction_by_hand():
    # GT 0..200 (21 points at 10 px), prediction 0..100 (11 points). With a radius covering everything, a draw
    # rooted in the prediction, or in the GT at x <= 125 (13 of 21 GT points), sees both whole graphs (11 pairs);
    # a GT root at x > 125 finds no predicted node within 25 px and sees the GT alone. Precision is exactly 1 and
    # the expected recall is (1/2 + 1/2 * 13/21) * 11/21.
    gt, pred = _line(0, 200), _line(0, 100)
    res = opt_g(pred, gt, n_samples=2000, radius=1000.0, seed=5)
    assert res["n_spurious"] == 0
    assert res["precision"] == 1.0
    assert res["recall"] == pytest.approx((0.5 + 0.5 * 13 / 21) * 11 / 21, abs=0.02)
    full_draws = res["n_pred"] // 11
    assert res["n_gt"] == 2000 * 21
    assert res["n_missing"] == 2000 * 21 - 11 * full_draws


def test_empty_prediction_gives_zero():
    gt = _line(0, 200)
    res = opt_g(nx.Graph(), gt, n_samples=20)
    assert (res["n_pred"], res["n_spurious"]) == (0, 0)
    assert res["n_missing"] == res["n_gt"] > 0
    assert res["precision"] == res["recall"] == res["f1"] == 0.0
    with pytest.raises(ValueError, match="`target` graph is empty"):
        opt_g(gt, nx.Graph())


def test_seed_determinism():
    gt = nx.random_geometric_graph(40, 0.15, seed=1)
    pred = nx.random_geometric_graph(40, 0.15, seed=2)
    for g in (gt, pred):
        for n in g:
            g.nodes[n]["pos"] = tuple(float(v) * 500 for v in g.nodes[n]["pos"])
    a = opt_g(pred, gt, n_samples=100, seed=4)
    assert a == opt_g(pred, gt, n_samples=100, seed=4)
    assert 0 < a["precision"] < 1
    assert a != opt_g(pred, gt, n_samples=100, seed=5)


def test_optimal_matching_beats_greedy_on_a_chain():
    a = np.array([[0.0, 0.0], [20.0, 0.0]])
    b = np.array([[11.0, 0.0], [34.0, 0.0]])
    assert _greedy_pairs(a, b, 25.0) == 1  # greedy takes (20, 11) first and strands both others
    gt = _graph([(0, 0), (20, 0)], [(0, 1)])
    pred = _graph([(11, 0), (34, 0)], [(0, 1)])
    optimal = opt_g(pred, gt, n_samples=10, spacing=100.0)
    greedy = opt_g(pred, gt, n_samples=10, spacing=100.0, matching="greedy")
    assert optimal["n_missing"] == 0
    assert greedy["n_missing"] > 0


def test_bad_arguments():
    g = _line(0, 100)
    with pytest.raises(ValueError, match="matching"):
        opt_g(g, g, matching="hungarian")
    with pytest.raises(ValueError, match="n_samples"):
        opt_g(g, g, n_samples=0)
    with pytest.raises(ValueError, match="radius"):
        opt_g(g, g, radius=-1)


def test_vancouver_crop(fixtures_dir):
    folder = fixtures_dir / "graphs" / "roadtracer_vancouver"
    gt = crop(read_graph(folder / "gt.graph"), -1024, -1024, 1024, 1024)
    pred = crop(read_graph(folder / "pred_roadtracer.graph"), -1024, -1024, 1024, 1024)
    assert opt_g(gt, gt, n_samples=50)["f1"] == 1.0
    res = opt_g(pred, gt, n_samples=100)
    assert 0.5 < res["precision"] < 1.0
    assert 0.5 < res["recall"] < 1.0
    greedy = opt_g(pred, gt, n_samples=100, matching="greedy")
    assert greedy["n_pred"] == res["n_pred"]  # same draws
    assert greedy["n_missing"] >= res["n_missing"]  # a maximum matching never leaves more points unmatched


def test_metric_sums_counts():
    gt, pred = _line(0, 200), _line(0, 100)
    metric = OptGMetrics(n_samples=30, radius=1000.0)
    metric.update([gt, pred], [gt, gt])
    a = opt_g(gt, gt, n_samples=30, radius=1000.0)
    b = opt_g(pred, gt, n_samples=30, radius=1000.0)
    out = metric.compute()
    n_pred, n_gt = a["n_pred"] + b["n_pred"], a["n_gt"] + b["n_gt"]
    assert out["precision"].item() == pytest.approx((n_pred - a["n_spurious"] - b["n_spurious"]) / n_pred)
    assert out["recall"].item() == pytest.approx((n_gt - a["n_missing"] - b["n_missing"]) / n_gt)


@pytest.mark.parametrize("metric", ["opt_j", "opt_p", "opt_g"])
def test_messy_but_valid_graphs(metric):
    from drivemetrics.functional import opt_j, opt_p

    fn = {"opt_j": opt_j, "opt_p": opt_p, "opt_g": lambda p, g: opt_g(p, g, n_samples=50)}[metric]
    g = _graph([(0, 0), (100, 0), (0, 300), (150, 300), (150, 300)], [(0, 1), (2, 3), (3, 4), (1, 1)])
    g.add_node("lonely", pos=(500.0, 500.0))  # isolated node, mixed id types
    # two components, a self-loop, a duplicate node (3 and 4 coincide): cleaned, then scored
    assert fn(g, g)["f1"] == pytest.approx(1.0)
    moved = g.copy()
    moved.nodes[0]["pos"] = (0.0, float("nan"))
    with pytest.raises(ValueError, match="NaN"):
        fn(moved, g)
    no_pos = g.copy()
    del no_pos.nodes[2]["pos"]
    with pytest.raises(ValueError, match="no 'pos'"):
        fn(g, no_pos)


def test_reference_keeps_isolated_nodes():
    """The released opt_g never drops isolated nodes: an isolated predicted node can be a root (a spurious marble)."""
    # ids from 1: the released count ignores a matched predicted node whose id is 0
    road = nx.relabel_nodes(_graph([(0, 0), (400, 0), (400, 400)], [(0, 1), (1, 2)]), lambda n: n + 1)
    pred = road.copy()
    pred.add_node(4, pos=(100.0, 300.0))  # far from the road, next to empty space
    clean = opt_g(road, road, n_samples=200, compat="reference")
    assert (clean["n_spurious"], clean["n_missing"]) == (0, 0)
    res = opt_g(pred, road, n_samples=200, compat="reference")
    assert res["n_spurious"] > 0
    assert res["n_missing"] == 0
    assert opt_g(pred, road, n_samples=200)["n_spurious"] == 0  # the default mode drops isolated nodes


def test_metric_takes_a_smaller_sample_budget_and_refuses_a_bad_one():
    g = nx.Graph()
    g.add_node(0, pos=(0.0, 0.0))
    g.add_node(1, pos=(200.0, 0.0))
    g.add_edge(0, 1)
    metric = OptGMetrics(n_samples=20)
    metric.update(g, g)
    assert float(metric.compute()["f1"]) == 1.0
    for bad in (0, 2.5):
        with pytest.raises(ValueError, match="n_samples"):
            OptGMetrics(n_samples=bad)
