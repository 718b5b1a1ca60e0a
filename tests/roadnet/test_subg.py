import networkx as nx
import numpy as np
import pytest
from scipy.spatial.distance import cdist

from drivemetrics.graph.geometry import crop, dense_arrays, validate_graph
from drivemetrics.roadnet.io import read_graph
from drivemetrics.roadnet.subg import SubgraphMetrics, subg, subg_scores


def _graph(points, edges):
    g = nx.Graph()
    for i, p in enumerate(points):
        g.add_node(i, pos=(float(p[0]), float(p[1])))
    g.add_edges_from(edges)
    return g


def _polyline(points):
    return _graph(points, [(i, i + 1) for i in range(len(points) - 1)])


def _reference_counts(pred, gt, spacing, radius, match, n, seed):
    """Independent loop version: networkx balls and a dense nearest-marble search per root."""

    def nx_graph(pos, edges):
        g = nx.Graph()
        g.add_nodes_from(range(len(pos)))
        for a, b in edges:
            g.add_edge(int(a), int(b), w=float(np.linalg.norm(pos[a] - pos[b])))
        return g

    gp, ge = dense_arrays(validate_graph(gt, "t"), spacing)
    pp, pe = dense_arrays(validate_graph(pred, "p"), spacing)
    g_nx, p_nx = nx_graph(gp, ge), nx_graph(pp, pe)
    roots = np.sort(np.random.default_rng(seed).integers(len(gp), size=n))
    holes = marbles = spurious = empty = 0
    for root in roots:
        ball_g = list(nx.single_source_dijkstra_path_length(g_nx, int(root), cutoff=radius, weight="w"))
        d = np.linalg.norm(pp - gp[root], axis=1)
        ball_p = []
        if d.min() < match:
            ball_p = list(nx.single_source_dijkstra_path_length(p_nx, int(d.argmin()), cutoff=radius, weight="w"))
        holes += len(ball_g)
        marbles += len(ball_p)
        matched_marbles = set()
        matched_holes = 0
        if ball_p:
            dist = cdist(gp[ball_g], pp[ball_p])
            for row in dist:
                j = int(row.argmin())
                if row[j] < match:
                    matched_holes += 1
                    matched_marbles.add(ball_p[j])
        empty += len(ball_g) - matched_holes
        spurious += len(ball_p) - len(matched_marbles)
    return marbles, holes, spurious, empty


def test_counts_match_loop_reference():
    gt = _graph(
        [(0, 0), (300, 0), (300, 250), (0, 250), (150, 0), (150, -200)], [(0, 4), (4, 1), (1, 2), (2, 3), (4, 5)]
    )
    pred = _graph(
        [(5, 8), (290, 3), (290, 240), (420, 240), (150, 3), (130, 120)], [(0, 4), (4, 1), (1, 2), (2, 3), (4, 5)]
    )
    r = subg(pred, gt, spacing=10, radius=150, match_distance=25, n_subgraphs=40, seed=7)
    assert (r["n_marbles"], r["n_holes"], r["n_spurious"], r["n_empty"]) == _reference_counts(
        pred, gt, 10, 150, 25, 40, 7
    )
    assert 0 < r["f1"] < 1


def test_identical_and_empty():
    g = _graph([(0, 0), (500, 0), (500, 400), (100, 300)], [(0, 1), (1, 2), (1, 3)])
    r = subg(g, g, n_subgraphs=50)
    assert (r["f1"], r["spurious"], r["missing"]) == (1.0, 0.0, 0.0)
    e = subg(nx.Graph(), g, n_subgraphs=50)
    assert (e["f1"], e["spurious"], e["missing"]) == (0.0, 0.0, 1.0)
    assert e["n_marbles"] == 0
    assert e["n_holes"] > 0


def test_shift_beyond_matching_distance_misses_everything():
    gt = _polyline([(0, 0), (1000, 0)])
    far = _polyline([(0, 30), (1000, 30)])
    r = subg(far, gt, n_subgraphs=30)
    assert r["missing"] == 1.0
    assert r["n_marbles"] == 0


def test_far_false_positive_is_invisible_half_road_is_missing():
    gt = _polyline([(0, 0), (1000, 0)])
    with_fp = _graph([(0, 0), (1000, 0), (0, 2000), (300, 2000)], [(0, 1), (2, 3)])
    assert subg(with_fp, gt, n_subgraphs=50)["f1"] == 1.0  # GT-rooted subgraphs never reach it
    half = _polyline([(0, 0), (500, 0)])
    r = subg(half, gt, n_subgraphs=100)
    assert r["spurious"] < 0.01  # only marbles at the ball rim that are no hole's nearest marble
    assert 0.2 < r["missing"] < 0.8


def test_scores_and_errors():
    assert subg_scores(10, 20, 5, 10) == pytest.approx((2 * 0.5 * 0.5 / 1.0, 0.5, 0.5))
    assert subg_scores(0, 0, 0, 0) == (1.0, 0.0, 0.0)
    g = _polyline([(0, 0), (100, 0)])
    with pytest.raises(ValueError, match="target"):
        subg(g, nx.Graph())
    with pytest.raises(ValueError, match="radius"):
        subg(g, g, radius=0)
    with pytest.raises(TypeError, match="preds"):
        subg("not a graph", g)


def test_seeded_and_metric():
    gt = _polyline([(0, 0), (400, 0), (400, 400)])
    pred = _polyline([(0, 3), (300, 3)])
    assert subg(pred, gt, seed=1, n_subgraphs=20) == subg(pred, gt, seed=1, n_subgraphs=20)
    metric = SubgraphMetrics(n_subgraphs=20)
    metric.update(pred, gt)
    metric.update(gt, gt)
    a, b = subg(pred, gt, n_subgraphs=20), subg(gt, gt, n_subgraphs=20)
    f1, _spurious, missing = subg_scores(
        a["n_marbles"] + b["n_marbles"],
        a["n_holes"] + b["n_holes"],
        a["n_spurious"] + b["n_spurious"],
        a["n_empty"] + b["n_empty"],
    )
    out = metric.compute()
    assert out["f1"].item() == pytest.approx(f1)
    assert out["missing"].item() == pytest.approx(missing)


def test_vancouver_crop(fixtures_dir):
    folder = fixtures_dir / "graphs" / "roadtracer_vancouver"
    gt = crop(read_graph(folder / "gt.graph"), -512, -512, 512, 512)
    pred = crop(read_graph(folder / "pred_roadtracer.graph"), -512, -512, 512, 512)
    assert subg(gt, gt, n_subgraphs=100)["f1"] == 1.0
    assert 0.3 < subg(pred, gt, n_subgraphs=100)["f1"] < 1.0
