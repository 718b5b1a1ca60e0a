"""UrbanLaneGraph metrics on small hand-made lane graphs (expected values worked out by hand)."""

import math
import pickle

import networkx as nx
import numpy as np
import pytest
import torch
from torchmetrics import MetricCollection

from drivemetrics.lanegraph import (
    LaneGraphAPLS,
    LaneGraphIoU,
    LaneGraphMetrics,
    LaneGraphPlanningMetrics,
    LaneGraphPlanningMMD,
    LaneGraphPlanningSuccessRate,
    LaneGraphSDA20,
)
from drivemetrics.lanegraph.geo_topo import geo_topo
from drivemetrics.lanegraph.iou import graph_iou
from drivemetrics.lanegraph.lanegraph import evaluate_lanegraph_pair
from drivemetrics.lanegraph.sda import sda
from tests.lanegraph._graphs import fork, straight


def test_pair_reference_reports_topo_precision_as_geo_precision():
    gt = straight(0, 200, y=50.0)
    pred = straight(0, 200, y=50.0)
    pred.add_node("spur", pos=np.array([100.0, 100.0]))  # unmatched points inside the local balls
    pred.add_edge(10, "spur")
    ref = evaluate_lanegraph_pair(pred, gt, compat="reference")
    assert ref["geo_precision"] == ref["topo_precision"]
    assert geo_topo(pred, gt, compat="reference")["geo_precision"] > ref["topo_precision"]


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


def test_reference_full_task_reports_no_sda():
    """The evaluator's full-LGP evaluation does not report SDA: NaN in the reference mode, scored by default."""
    g = fork()
    assert math.isnan(evaluate_lanegraph_pair(g, g, task="full", compat="reference")["sda20"])
    assert math.isnan(evaluate_lanegraph_pair(g, g, task="full", compat="reference")["sda50"])
    assert evaluate_lanegraph_pair(g, g, task="full")["sda20"] == 1.0
    assert evaluate_lanegraph_pair(g, g, task="successor", compat="reference")["sda20"] == 1.0


# Metric classes (LaneGraphMetrics and its scalars; LaneGraphPlanningMetrics)


def _line(x0, x1, y=0.0, step=10.0):
    g = nx.DiGraph()
    xs = np.arange(x0, x1 + 1e-9, step)
    for i, x in enumerate(xs):
        g.add_node(i, pos=np.array([x, y]))
    g.add_edges_from((i, i + 1) for i in range(len(xs) - 1))
    return g


def _fork(x=100.0, y=100.0):
    g = nx.DiGraph()
    for i, p in enumerate([(x - 50, y), (x, y), (x + 50, y + 30), (x + 50, y - 30)]):
        g.add_node(i, pos=np.array(p))
    g.add_edges_from([(0, 1), (1, 2), (1, 3)])
    return g


def test_mean_over_samples_ignores_nan():
    metric = LaneGraphMetrics()
    metric.update([_line(0, 200), _fork()], [_line(0, 200), _fork(130.0)])  # SDA@20: NaN (no GT split), then 0
    metric.update(_fork(), _fork())  # SDA@20 = 1
    out = metric.compute()
    assert set(out) == {"topo_precision", "topo_recall", "geo_precision", "geo_recall", "apls", "sda20", "sda50", "iou"}
    assert float(out["sda20"]) == pytest.approx(0.5)  # mean of 0 and 1, the NaN ignored
    assert float(out["sda50"]) == pytest.approx(1.0)
    metric.reset()
    with pytest.warns(UserWarning, match="before the ``update``"):
        assert math.isnan(float(metric.compute()["iou"]))


def test_merge_state_equals_one_metric():
    pairs = [(_line(0, 200), _line(0, 200, y=3.0)), (_fork(), _fork(110.0)), (_line(0, 100), _line(0, 200))]
    whole = LaneGraphMetrics()
    for p, g in pairs:
        whole.update(p, g)
    a, b = LaneGraphMetrics(), LaneGraphMetrics()
    a.update(*pairs[0])
    b.update([pairs[1][0], pairs[2][0]], [pairs[1][1], pairs[2][1]])
    a.merge_state(b)
    for key, value in whole.compute().items():
        assert torch.allclose(a.compute()[key], value, equal_nan=True), key


def test_scalar_classes_share_states_in_a_collection():
    collection = MetricCollection({"iou": LaneGraphIoU(), "apls": LaneGraphAPLS(), "sda20": LaneGraphSDA20()})
    collection.update(_line(0, 400), _line(0, 400))
    out = collection.compute()
    assert float(out["iou"]) == 1.0
    assert float(out["apls"]) == pytest.approx(1.0)
    assert math.isnan(float(out["sda20"]))
    assert LaneGraphIoU.higher_is_better is True
    assert LaneGraphPlanningMMD.higher_is_better is False
    assert LaneGraphIoU.plot_upper_bound == 1.0


def test_planning_metric_and_pickling():
    gt = _line(0, 1000, step=5.0)
    metric = LaneGraphPlanningMetrics()
    metric.update(gt, gt)
    metric.update(nx.DiGraph(), gt)
    out = metric.compute()
    assert float(out["mmd"]) == pytest.approx(2500.0)
    assert float(out["sr"]) == pytest.approx(0.5)
    sr = LaneGraphPlanningSuccessRate()
    sr.update(gt, gt)
    clone = pickle.loads(pickle.dumps(sr))
    assert float(clone.compute()) == 1.0
    assert sr.state_dict() == {}


def test_bad_arguments_and_plot():
    with pytest.raises(ValueError, match="task"):
        LaneGraphMetrics(task="planning")
    with pytest.raises(ValueError, match="compat"):
        LaneGraphMetrics(compat="official")
    with pytest.raises(TypeError, match="both"):
        LaneGraphMetrics().update(_line(0, 10), [_line(0, 10)])
    pytest.importorskip("matplotlib")
    metric = LaneGraphIoU()
    metric.update(_line(0, 100), _line(0, 100))
    fig, ax = metric.plot()
    assert fig is not None
    assert ax is not None


def test_differently_configured_metrics_never_share_a_compute_group():
    """Both configurations score the first batch alike (1), the second differently (negative coordinates vanish in
    the reference mode): without the config state a MetricCollection would merge them after the first batch and
    report one metric's values for both."""
    from drivemetrics.lanegraph import LaneGraphGeoPrecision

    negative = _line(-300.0, -100.0, y=-20.0)
    collection = MetricCollection(
        {"default": LaneGraphGeoPrecision(), "reference": LaneGraphGeoPrecision(compat="reference")},
        compute_groups=True,
    )
    collection.update(_line(0.0, 200.0), _line(0.0, 200.0))
    collection.update(negative, negative)
    values = collection.compute()
    assert len(collection.compute_groups) == 2
    assert float(values["default"]) == pytest.approx(1.0)
    assert float(values["reference"]) == pytest.approx(0.5)  # (1 + 0) / 2
    planning = MetricCollection(
        {"a": LaneGraphPlanningSuccessRate(seed=0), "b": LaneGraphPlanningSuccessRate(seed=1)}, compute_groups=True
    )
    planning.update(_line(0.0, 1000.0), _line(0.0, 1000.0))
    assert len(planning.compute_groups) == 2


def test_battery_planning_inputs_give_finite_values():
    """The metric battery's planning case must exercise real numbers (NaN == NaN would hide any mismatch)."""
    from tests.metric_inputs import make_case

    case = make_case(LaneGraphPlanningMetrics)
    metric = LaneGraphPlanningMetrics()
    for args, kwargs in case.batches:
        values = metric(*args, **kwargs)
        assert all(math.isfinite(float(v)) for v in values.values()), values
