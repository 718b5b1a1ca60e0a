import itertools

import networkx as nx
import numpy as np
import pytest

from drivemetrics.graph.geometry import crop, validate_graph
from drivemetrics.roadnet import OptPMetrics
from drivemetrics.roadnet.io import read_graph
from drivemetrics.roadnet.opt_p import decompose_into_paths, opt_p


def _graph(points, edges):
    g = nx.Graph()
    for i, p in enumerate(points):
        g.add_node(i, pos=(float(p[0]), float(p[1])))
    g.add_edges_from(edges)
    return g


def _line(x0, x1, y=0.0):
    return _graph([(x0, y), (x1, y)], [(0, 1)])


def _grid(n=4, step=100.0):
    g = nx.grid_2d_graph(n, n)
    g = nx.convert_node_labels_to_integers(g, label_attribute="ij")
    for k in g:
        i, j = g.nodes[k]["ij"]
        g.nodes[k]["pos"] = (i * step, j * step)
    return g


# ---------------------------------------------------------------- decomposition


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_decomposition_covers_every_edge_once(seed):
    g = validate_graph(_grid(5), "g")
    g.add_edge(0, 24)  # a long chord closing extra loops
    paths = decompose_into_paths(g, seed)
    used = [frozenset(e) for p in paths for e in itertools.pairwise(p)]
    assert len(used) == len(set(used)) == g.number_of_edges()
    assert set(used) == {frozenset(e) for e in g.edges}
    for p in paths:
        assert len(p) >= 2
        assert len(set(p)) == len(p)  # simple paths
    assert paths == decompose_into_paths(g, seed)
    # a tree: the first path runs from a leaf to a leaf (later ones between dead ends of what is left)
    tree = nx.balanced_tree(2, 4)
    ends = {n for n, d in tree.degree if d == 1}
    first = decompose_into_paths(tree, seed)[0]
    assert first[0] in ends
    assert first[-1] in ends
    # a cycle has no dead end: the chain found before closing it, then the closing edge
    cycle = nx.cycle_graph(6)
    loop = decompose_into_paths(cycle, seed)
    assert sorted(len(p) for p in loop) == [2, 6]


# ---------------------------------------------------------------- hand-computed cases


def test_identical_graphs_score_one():
    g = _grid()
    res = opt_p(g, g, seed=3)
    assert res["precision"] == pytest.approx(1.0)
    assert res["recall"] == pytest.approx(1.0)
    assert res["n_connected_target"] == res["n_paths_target"]
    assert res["n_interruptions_target"] == 0


def test_gap_in_the_prediction_by_hand():
    gt = _line(0, 200)
    pred = _graph([(0, 0), (90, 0), (110, 0), (200, 0)], [(0, 1), (2, 3)])
    res = opt_p(pred, gt)
    # GT path resampled every 25 px; exactly one transition (across the 20 px gap) is broken, so the aligned pieces
    # are 100 and 75 px long: recall = (100^2 + 75^2) / 200^2. Both predicted pieces lie on the GT: precision 1.
    assert res["recall"] == pytest.approx((100**2 + 75**2) / 200**2)
    assert res["precision"] == pytest.approx(1.0)
    assert res["n_interruptions_target"] == 1
    assert res["n_connected_target"] == 0
    assert res["f1"] == pytest.approx(2 * res["recall"] / (1 + res["recall"]))


def test_doubled_road_is_penalised():
    gt = _line(0, 200)
    pred = _graph([(0, 0), (200, 0), (0, 5), (200, 5)], [(0, 1), (2, 3)])  # the road twice, 5 px apart
    res = opt_p(pred, gt)
    assert res["recall"] == pytest.approx(1.0)
    # the first predicted copy consumes the GT road; the second finds nothing left
    assert res["precision"] == pytest.approx(0.5)


def test_far_away_and_empty_predictions_score_zero():
    gt = _grid(3)
    far = _line(1000, 1300, 1000)
    res = opt_p(far, gt)
    assert res["precision"] == res["recall"] == res["f1"] == 0.0
    res = opt_p(nx.Graph(), gt)
    assert res["precision"] == res["recall"] == res["f1"] == 0.0
    assert res["n_paths_target"] > 0
    with pytest.raises(ValueError, match="`target` graph is empty"):
        opt_p(gt, nx.Graph())


def test_parallel_offset_within_snap_distance_still_matches():
    gt = _line(0, 300)
    pred = _line(0, 300, 20.0)  # 20 px < d_snap = 25
    assert opt_p(pred, gt)["f1"] == pytest.approx(1.0)
    assert opt_p(pred, gt, d_snap=15.0)["f1"] == 0.0


def test_seed_determinism_and_no_mutation():
    gt = _grid(4)
    pred = _grid(4)
    pred.remove_edge(5, 6)
    pred.add_edge(0, 15)
    before = (nx.to_dict_of_lists(gt), nx.to_dict_of_lists(pred))
    a = opt_p(pred, gt, seed=11)
    b = opt_p(pred, gt, seed=11)
    assert a == b
    assert 0.0 < a["recall"] < 1.0
    assert before == (nx.to_dict_of_lists(gt), nx.to_dict_of_lists(pred))


def test_several_decompositions_average():
    gt = _grid(4)
    pred = _grid(4)
    pred.remove_edge(5, 6)
    pred.remove_edge(9, 13)
    avg = opt_p(pred, gt, seed=2, n_decompositions=3)
    rng = np.random.default_rng(2)
    seeds = rng.integers(2**63 - 1, size=(3, 2)).tolist()
    from drivemetrics.roadnet.opt_p import path_alignment

    g, p = validate_graph(gt, "g"), validate_graph(pred, "p")
    recalls = [path_alignment(g, p, seed=s)[0] for s, _ in seeds]
    precisions = [path_alignment(p, g, seed=s)[0] for _, s in seeds]
    assert avg["recall"] == pytest.approx(np.mean(recalls))
    assert avg["precision"] == pytest.approx(np.mean(precisions))


def test_bad_arguments():
    g = _grid(2)
    with pytest.raises(ValueError, match="n_decompositions"):
        opt_p(g, g, n_decompositions=0)
    with pytest.raises(ValueError, match="d_snap"):
        opt_p(g, g, d_snap=0)
    with pytest.raises(ValueError, match="max_candidates"):
        opt_p(g, g, max_candidates=0)
    with pytest.raises(TypeError, match="`preds` must be a networkx graph"):
        opt_p(np.zeros((2, 2)), g)


# ---------------------------------------------------------------- real data


def test_vancouver_crop(fixtures_dir):
    folder = fixtures_dir / "graphs" / "roadtracer_vancouver"
    gt = crop(read_graph(folder / "gt.graph"), -1024, -1024, 1024, 1024)
    pred = crop(read_graph(folder / "pred_roadtracer.graph"), -1024, -1024, 1024, 1024)
    same = opt_p(gt, gt)
    assert same["precision"] == pytest.approx(1.0)
    assert same["recall"] == pytest.approx(1.0)
    res = opt_p(pred, gt, seed=0)
    assert 0.4 < res["precision"] < 0.95
    assert 0.4 < res["recall"] < 0.95


# ---------------------------------------------------------------- torchmetrics wrapper


def test_metric_averages_tiles():
    gt = _line(0, 200)
    gap = _graph([(0, 0), (90, 0), (110, 0), (200, 0)], [(0, 1), (2, 3)])
    metric = OptPMetrics()
    metric.update([gt, gap], [gt, gt])
    out = metric.compute()
    recall = (1.0 + (100**2 + 75**2) / 200**2) / 2
    assert out["recall"].item() == pytest.approx(recall)
    assert out["precision"].item() == pytest.approx(1.0)
    assert out["f1"].item() == pytest.approx(2 * recall / (1 + recall))
    assert metric.n_tiles.item() == 2
