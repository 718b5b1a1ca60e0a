"""``torchmetrics.Metric`` classes of the UrbanLaneGraph metrics, for validation loops.

:class:`LaneGraphMetrics` scores every ``(pred, gt)`` lane-graph pair given to ``update`` with
:func:`~drivemetrics.lanegraph.lanegraph.evaluate_lanegraph_pair` and keeps, per metric, the sum of the defined
(non-NaN) per-sample values and their count; both are sum-reduced, so the metric syncs across processes.
``compute`` returns the mean per metric over the samples (NaN ignored, as the evaluator's per-city pooling; NaN
when no sample defines it). :class:`LaneGraphPlanning` does the same for MMD / MED / SR.

Scalar classes share these states (so a ``MetricCollection`` computes them once) and return one value each:
:class:`LaneGraphTopoPrecision`, :class:`LaneGraphTopoRecall`, :class:`LaneGraphGeoPrecision`,
:class:`LaneGraphGeoRecall`, :class:`LaneGraphAPLS`, :class:`LaneGraphSDA20`, :class:`LaneGraphSDA50`,
:class:`LaneGraphIoU`, :class:`LaneGraphMMD`, :class:`LaneGraphMED`, :class:`LaneGraphSuccessRate`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import networkx as nx
import torch
from torch import Tensor
from torchmetrics import Metric

from drivemetrics._metric import add_config_state
from drivemetrics.lanegraph.lanegraph import (
    LANE_METRICS,
    PLANNING_METRICS,
    check_compat,
    evaluate_lanegraph_pair,
    planning,
)
from drivemetrics.roadnet.metrics import graph_pairs

__all__ = [
    "LaneGraphAPLS",
    "LaneGraphGeoPrecision",
    "LaneGraphGeoRecall",
    "LaneGraphIoU",
    "LaneGraphMED",
    "LaneGraphMMD",
    "LaneGraphMetrics",
    "LaneGraphPlanning",
    "LaneGraphSDA20",
    "LaneGraphSDA50",
    "LaneGraphSuccessRate",
    "LaneGraphTopoPrecision",
    "LaneGraphTopoRecall",
]


class _PerSampleMean(Metric):
    """Sum and count of the defined per-sample values of ``_keys`` (sum-reduced states)."""

    is_differentiable = False
    full_state_update = False
    _keys: tuple[str, ...] = ()

    value_sum: Tensor
    value_count: Tensor

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        n = len(self._keys)
        self.add_state("value_sum", default=torch.zeros(n, dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("value_count", default=torch.zeros(n, dtype=torch.float64), dist_reduce_fx="sum")

    def _sample(self, pred: nx.DiGraph, gt: nx.DiGraph) -> dict[str, float]:
        raise NotImplementedError

    def update(self, preds: nx.DiGraph | Sequence[nx.DiGraph], target: nx.DiGraph | Sequence[nx.DiGraph]) -> None:
        """Add one ``(pred, gt)`` lane-graph pair or two equal-length sequences of them."""
        for pred, gt in graph_pairs(preds, target):
            values = self._sample(pred, gt)
            v = torch.tensor([values[k] for k in self._keys], dtype=torch.float64, device=self.value_sum.device)
            defined = ~torch.isnan(v)
            self.value_sum += torch.where(defined, v, torch.zeros_like(v))
            self.value_count += defined.to(torch.float64)

    def _means(self) -> dict[str, Tensor]:
        mean = self.value_sum / self.value_count  # 0 / 0 = NaN: no sample defines the metric
        return {k: mean[i] for i, k in enumerate(self._keys)}

    def compute(self) -> dict[str, Tensor]:
        """Mean of every metric over the samples (NaN ignored)."""
        return self._means()

    def plot(self, val: Any = None, ax: Any = None) -> Any:
        """Plot a value (or a sequence of values) of the metric, torchmetrics style; returns ``(fig, ax)``."""
        return self._plot(val, ax)


class LaneGraphMetrics(_PerSampleMean):
    """TOPO / GEO precision and recall, APLS, SDA@20, SDA@50 and graph IoU averaged over lane-graph samples.

    Args:
        task: ``"successor"`` (256 px crops) or ``"full"`` (tiles).
        compat: ``None`` (bugs fixed) or ``"reference"`` (the released evaluator's numbers).

    Example:
        >>> import networkx as nx, numpy as np
        >>> g = nx.DiGraph([(0, 1), (1, 2)])
        >>> nx.set_node_attributes(g, {0: np.array([10.0, 10.0]), 1: np.array([60.0, 10.0]),
        ...                            2: np.array([120.0, 10.0])}, "pos")
        >>> metric = LaneGraphMetrics()
        >>> metric.update(g, g)
        >>> float(metric.compute()["geo_recall"])
        1.0
    """

    higher_is_better = True
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0
    _keys = LANE_METRICS

    def __init__(self, task: str = "successor", compat: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if task not in ("successor", "full"):
            raise ValueError(f"`task` must be 'successor' or 'full', got {task!r}")
        self.task = task
        self.compat = check_compat(compat)
        # the options change the per-sample values summed in update: differently configured metrics must not share
        # a MetricCollection compute group (which they would after a first batch scoring the same)
        add_config_state(self, ("LaneGraphMetrics", task, self.compat))

    def _sample(self, pred: nx.DiGraph, gt: nx.DiGraph) -> dict[str, float]:
        return evaluate_lanegraph_pair(pred, gt, self.task, self.compat)


class LaneGraphPlanning(_PerSampleMean):
    """Planning MMD, MED (pixels, lower is better) and SR (success rate) averaged over lane-graph samples.

    Args:
        compat: ``None`` (seeded per sample with ``seed``) or ``"reference"``.
        seed: seed of the start / goal draws (default mode).
    """

    # the headline values MMD and MED are distances (lower is better); log SR through LaneGraphSuccessRate
    higher_is_better = False
    plot_lower_bound = 0.0
    plot_upper_bound = None  # distances in pixels: unbounded
    _keys = PLANNING_METRICS

    def __init__(self, compat: str | None = None, seed: int = 0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.compat = check_compat(compat)
        self.seed = seed
        add_config_state(self, ("LaneGraphPlanning", self.compat, seed))

    def _sample(self, pred: nx.DiGraph, gt: nx.DiGraph) -> dict[str, float]:
        return planning(pred, gt, self.compat, seed=self.seed)


def _scalar(base: type, key: str, name: str, higher: bool, upper: float | None, doc: str) -> type:
    def compute(self: Metric) -> Tensor:
        return self._means()[key]

    attrs = {
        "compute": compute,
        "higher_is_better": higher,
        "plot_lower_bound": 0.0,
        "plot_upper_bound": upper,
        "__doc__": f"{doc} (the ``{key!r}`` value of :class:`{base.__name__}`; same states).",
        "__module__": __name__,
        "__qualname__": name,
    }
    return type(name, (base,), attrs)


LaneGraphTopoPrecision = _scalar(LaneGraphMetrics, "topo_precision", "LaneGraphTopoPrecision", True, 1.0, "TOPO P")
LaneGraphTopoRecall = _scalar(LaneGraphMetrics, "topo_recall", "LaneGraphTopoRecall", True, 1.0, "TOPO recall")
LaneGraphGeoPrecision = _scalar(LaneGraphMetrics, "geo_precision", "LaneGraphGeoPrecision", True, 1.0, "GEO P")
LaneGraphGeoRecall = _scalar(LaneGraphMetrics, "geo_recall", "LaneGraphGeoRecall", True, 1.0, "GEO recall")
LaneGraphAPLS = _scalar(LaneGraphMetrics, "apls", "LaneGraphAPLS", True, 1.0, "APLS")
LaneGraphSDA20 = _scalar(LaneGraphMetrics, "sda20", "LaneGraphSDA20", True, 1.0, "SDA@20")
LaneGraphSDA50 = _scalar(LaneGraphMetrics, "sda50", "LaneGraphSDA50", True, 1.0, "SDA@50")
LaneGraphIoU = _scalar(LaneGraphMetrics, "iou", "LaneGraphIoU", True, 1.0, "Graph IoU")
LaneGraphMMD = _scalar(LaneGraphPlanning, "mmd", "LaneGraphMMD", False, None, "Planning MMD, pixels")
LaneGraphMED = _scalar(LaneGraphPlanning, "med", "LaneGraphMED", False, None, "Planning MED, pixels")
LaneGraphSuccessRate = _scalar(LaneGraphPlanning, "sr", "LaneGraphSuccessRate", True, 1.0, "Planning success rate")
