import math

import networkx as nx
import pytest

from drivemetrics.graph.geometry import crop
from drivemetrics.roadnet.apls import APLSMetrics
from drivemetrics.roadnet.ccq import CCQMetrics
from drivemetrics.roadnet.evaluate import METRICS, aggregate, evaluate_dataset, evaluate_pair, find_pairs
from drivemetrics.roadnet.io import read_graph, write_roadtracer_graph
from drivemetrics.roadnet.junct import JunctionMetrics
from drivemetrics.roadnet.subg import SubgraphMetrics
from drivemetrics.roadnet.tlts import TLTSMetrics

FAST = {
    "opt_g": {"n_samples": 50},
    "subg": {"n_subgraphs": 50},
    "tlts": {"n_paths": 50},
}


def _graph(points, edges):
    g = nx.Graph()
    for i, p in enumerate(points):
        g.add_node(i, pos=(float(p[0]), float(p[1])))
    g.add_edges_from(edges)
    return g


def town():
    return _graph(
        [(0, 0), (300, 0), (600, 0), (300, 300), (0, 300), (600, 300), (300, 600)],
        [(0, 1), (1, 2), (1, 3), (3, 4), (3, 5), (3, 6)],
    )


PERFECT = {
    "opt_p": {"f1": 1.0},
    "opt_j": {"f1": 1.0},
    "opt_g": {"f1": 1.0},
    "apls": {"apls": 1.0},
    "tlts": {"correct": 1.0, "infeasible": 0.0},
    "subg": {"f1": 1.0, "spurious": 0.0, "missing": 0.0},
    "junct": {"f_correct": 1.0, "f_error": 0.0},
    "ccq": {"quality": 1.0},
}


def test_identical_graphs_score_perfectly():
    res = evaluate_pair(town(), town(), options=FAST)
    assert set(res) == set(METRICS)
    for name, expected in PERFECT.items():
        for key, value in expected.items():
            assert res[name][key] == pytest.approx(value), (name, key)


def test_empty_prediction_scores_zero():
    res = evaluate_pair(nx.Graph(), town(), options=FAST)
    for name, key in [
        ("opt_p", "f1"),
        ("opt_j", "f1"),
        ("opt_g", "f1"),
        ("apls", "apls"),
        ("tlts", "correct"),
        ("subg", "f1"),
        ("junct", "f_correct"),
        ("ccq", "quality"),
    ]:
        assert res[name][key] == 0.0, name


def test_aggregation_rules_by_hand():
    tiles = [
        {
            "opt_p": {"precision": 1.0, "recall": 0.5},
            "opt_j": {"tp": 2, "pp": 4, "ap": 2},
            "tlts": {"correct": 0.5, "too_long": 0.5, "too_short": 0.0, "infeasible": 0.0},
            "junct": {"correct_score": 1.0, "n_gt": 2, "error_score": 0.0, "n_pred": 1},
        },
        {
            "opt_p": {"precision": 0.5, "recall": 0.5},
            "opt_j": {"tp": 0, "pp": 0, "ap": 6},
            "tlts": {"correct": 1.0, "too_long": 0.0, "too_short": 0.0, "infeasible": 0.0},
            "junct": {"correct_score": 2.0, "n_gt": 2, "error_score": 1.0, "n_pred": 3},
        },
    ]
    out = aggregate(tiles)
    # OPT-P: F1 of the mean precision 0.75 and the mean recall 0.5
    assert out["opt_p"]["f1"] == pytest.approx(2 * 0.75 * 0.5 / 1.25)
    # OPT-J: summed counts, tp 2 / pp 4, tp 2 / ap 8
    assert out["opt_j"]["precision"] == pytest.approx(0.5)
    assert out["opt_j"]["recall"] == pytest.approx(0.25)
    assert out["tlts"]["too_long"] == pytest.approx(0.25)
    assert out["tlts"]["too_short"] == 0.0
    assert out["junct"] == {"f_correct": 0.75, "f_error": 0.25}
    with pytest.raises(ValueError, match="empty"):
        aggregate([])


def test_find_pairs(tmp_path):
    (tmp_path / "gt").mkdir()
    (tmp_path / "pred").mkdir()
    for name in ("a", "b"):
        write_roadtracer_graph(town(), tmp_path / "gt" / f"{name}.graph")
    write_roadtracer_graph(town(), tmp_path / "pred" / "a.graph")
    write_roadtracer_graph(town(), tmp_path / "pred" / "z.graph")
    (tmp_path / "pred" / "notes.md").write_text("not a graph")
    pairs, orphans = find_pairs(tmp_path / "gt", tmp_path / "pred")
    assert [(n, g.name, p.name if p else None) for n, g, p in pairs] == [
        ("a", "a.graph", "a.graph"),
        ("b", "b.graph", None),
    ]
    assert orphans == ["z"]
    with pytest.raises(FileNotFoundError, match="gt"):
        find_pairs(tmp_path / "nope", tmp_path / "pred")
    with pytest.raises(ValueError, match="both"):
        find_pairs(tmp_path / "gt" / "a.graph", tmp_path / "pred")
    with pytest.raises(ValueError, match="unknown metric"):
        evaluate_pair(town(), town(), metrics=["apls", "iou"])


def test_dataset_workers_agree(tmp_path):
    (tmp_path / "gt").mkdir()
    (tmp_path / "pred").mkdir()
    shifted = town()
    nx.set_node_attributes(
        shifted, {n: (x + 4, y) for n, (x, y) in nx.get_node_attributes(shifted, "pos").items()}, "pos"
    )
    for name, pred in (("a", town()), ("b", shifted)):
        write_roadtracer_graph(town(), tmp_path / "gt" / f"{name}.graph")
        write_roadtracer_graph(pred, tmp_path / "pred" / f"{name}.graph")
    pairs, _ = find_pairs(tmp_path / "gt", tmp_path / "pred")
    metrics = ["apls", "opt_j", "ccq"]
    tiles1, agg1 = evaluate_dataset(pairs, metrics, progress=False)
    tiles2, agg2 = evaluate_dataset(pairs, metrics, workers=2, progress=False)
    assert tiles1 == tiles2
    assert agg1 == agg2
    _, cropped = evaluate_dataset(pairs, ["ccq"], progress=False, window=(0, 0, 600, 600), border=100)
    # both graphs lose the same outer 100 px: the shifted tile stays perfect at 4 px < 8 px slack
    assert cropped["ccq"]["quality"] == 1.0
    with pytest.raises(ValueError, match="border"):
        evaluate_dataset(pairs, ["ccq"], progress=False, border=-1)
    assert agg1["apls"]["apls"] == pytest.approx((tiles1["a"]["apls"]["apls"] + tiles1["b"]["apls"]["apls"]) / 2)


def test_vancouver_identical_crop_all_metrics(fixtures_dir):
    gt = crop(read_graph(fixtures_dir / "graphs" / "roadtracer_vancouver" / "gt.graph"), -512, -512, 512, 512)
    res = evaluate_pair(gt, gt, options=FAST)
    for name, expected in PERFECT.items():
        for key, value in expected.items():
            assert res[name][key] == pytest.approx(value), (name, key)
    empty = evaluate_pair(nx.Graph(), gt, metrics=["apls", "tlts", "subg", "junct", "ccq"], options=FAST)
    assert empty["apls"]["apls"] == 0.0
    assert empty["tlts"]["infeasible"] == 1.0
    assert empty["subg"]["f1"] == 0.0
    assert empty["junct"]["f_correct"] == 0.0
    assert not math.isnan(empty["ccq"]["quality"])


@pytest.mark.parametrize(
    "make",
    [
        APLSMetrics,
        CCQMetrics,
        JunctionMetrics,
        lambda: SubgraphMetrics(n_subgraphs=30),
        lambda: TLTSMetrics(n_paths=30),
    ],
)
def test_metric_states_merge_like_one_process(make):
    """Two 'ranks' updated separately and merged (sum reduction) equal one metric that saw both tiles."""
    shifted = town()
    nx.set_node_attributes(
        shifted, {n: (x + 6, y - 3) for n, (x, y) in nx.get_node_attributes(shifted, "pos").items()}, "pos"
    )
    half = _graph([(0, 0), (300, 0), (300, 300), (0, 300)], [(0, 1), (1, 2), (1, 3)])
    single, rank0, rank1 = make(), make(), make()
    single.update([shifted, half], [town(), town()])
    rank0.update(shifted, town())
    rank1.update(half, town())
    rank0.merge_state(rank1)
    a, b = single.compute(), rank0.compute()
    assert a.keys() == b.keys()
    for key in a:
        assert float(a[key]) == pytest.approx(float(b[key]), nan_ok=True), key


def test_aggregate_compat_reference_keeps_the_released_tlts_key_bug():
    from drivemetrics.roadnet.evaluate import aggregate

    tiles = [{"tlts": {"correct": 0.5, "too_long": 0.1, "too_short": 0.3, "infeasible": 0.1}}]
    assert aggregate(tiles)["tlts"]["too_short"] == 0.3
    assert aggregate(tiles, compat="reference")["tlts"]["too_short"] == 0.1
