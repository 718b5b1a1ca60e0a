"""torchmetrics classes of the lane-graph metrics: accumulation, NaN handling, state merging, scalar subclasses."""

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


def line(x0, x1, y=0.0, step=10.0):
    g = nx.DiGraph()
    xs = np.arange(x0, x1 + 1e-9, step)
    for i, x in enumerate(xs):
        g.add_node(i, pos=np.array([x, y]))
    g.add_edges_from((i, i + 1) for i in range(len(xs) - 1))
    return g


def fork(x=100.0, y=100.0):
    g = nx.DiGraph()
    for i, p in enumerate([(x - 50, y), (x, y), (x + 50, y + 30), (x + 50, y - 30)]):
        g.add_node(i, pos=np.array(p))
    g.add_edges_from([(0, 1), (1, 2), (1, 3)])
    return g


def test_mean_over_samples_ignores_nan():
    metric = LaneGraphMetrics()
    metric.update([line(0, 200), fork()], [line(0, 200), fork(130.0)])  # SDA@20: NaN (no GT split), then 0
    metric.update(fork(), fork())  # SDA@20 = 1
    out = metric.compute()
    assert set(out) == {"topo_precision", "topo_recall", "geo_precision", "geo_recall", "apls", "sda20", "sda50", "iou"}
    assert float(out["sda20"]) == pytest.approx(0.5)  # mean of 0 and 1, the NaN ignored
    assert float(out["sda50"]) == pytest.approx(1.0)
    metric.reset()
    with pytest.warns(UserWarning, match="before the ``update``"):
        assert math.isnan(float(metric.compute()["iou"]))


def test_merge_state_equals_one_metric():
    pairs = [(line(0, 200), line(0, 200, y=3.0)), (fork(), fork(110.0)), (line(0, 100), line(0, 200))]
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
    collection.update(line(0, 400), line(0, 400))
    out = collection.compute()
    assert float(out["iou"]) == 1.0
    assert float(out["apls"]) == pytest.approx(1.0)
    assert math.isnan(float(out["sda20"]))
    assert LaneGraphIoU.higher_is_better is True
    assert LaneGraphPlanningMMD.higher_is_better is False
    assert LaneGraphIoU.plot_upper_bound == 1.0


def test_planning_metric_and_pickling():
    gt = line(0, 1000, step=5.0)
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
        LaneGraphMetrics().update(line(0, 10), [line(0, 10)])
    pytest.importorskip("matplotlib")
    metric = LaneGraphIoU()
    metric.update(line(0, 100), line(0, 100))
    fig, ax = metric.plot()
    assert fig is not None
    assert ax is not None


def test_differently_configured_metrics_never_share_a_compute_group():
    """Both configurations score the first batch alike (1), the second differently (negative coordinates vanish in
    the reference mode): without the config state a MetricCollection would merge them after the first batch and
    report one metric's values for both."""
    from drivemetrics.lanegraph import LaneGraphGeoPrecision

    negative = line(-300.0, -100.0, y=-20.0)
    collection = MetricCollection(
        {"default": LaneGraphGeoPrecision(), "reference": LaneGraphGeoPrecision(compat="reference")},
        compute_groups=True,
    )
    collection.update(line(0.0, 200.0), line(0.0, 200.0))
    collection.update(negative, negative)
    values = collection.compute()
    assert len(collection.compute_groups) == 2
    assert float(values["default"]) == pytest.approx(1.0)
    assert float(values["reference"]) == pytest.approx(0.5)  # (1 + 0) / 2
    planning = MetricCollection(
        {"a": LaneGraphPlanningSuccessRate(seed=0), "b": LaneGraphPlanningSuccessRate(seed=1)}, compute_groups=True
    )
    planning.update(line(0.0, 1000.0), line(0.0, 1000.0))
    assert len(planning.compute_groups) == 2


def test_battery_planning_inputs_give_finite_values():
    """The metric battery's planning case must exercise real numbers (NaN == NaN would hide any mismatch)."""
    from tests.metric_inputs import make_case

    case = make_case(LaneGraphPlanningMetrics)
    metric = LaneGraphPlanningMetrics()
    for args, kwargs in case.batches:
        values = metric(*args, **kwargs)
        assert all(math.isfinite(float(v)) for v in values.values()), values
