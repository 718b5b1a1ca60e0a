"""Base of the lane-graph Metric classes: sum and count of the defined (non-NaN) per-sample values.

Kernels never import this module.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import networkx as nx
import torch
from torch import Tensor

from drivemetrics._internal.metric import MetricFamily
from drivemetrics._internal.validation import check_graph
from drivemetrics.graph.geometry import graph_pairs

__all__ = ["PerSampleMean"]


class PerSampleMean(MetricFamily):
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
            if getattr(self, "validate_args", True):
                check_graph(pred, "preds")
                check_graph(gt, "target")
            values = self._sample(pred, gt)
            v = torch.tensor([values[k] for k in self._keys], dtype=torch.float64, device=self.value_sum.device)
            defined = ~torch.isnan(v)
            self.value_sum = self.value_sum + torch.where(defined, v, torch.zeros_like(v))
            self.value_count = self.value_count + defined.to(torch.float64)

    def _means(self) -> dict[str, Tensor]:
        mean = self.value_sum / self.value_count  # 0 / 0 = NaN: no sample defines the metric
        return {k: mean[i] for i, k in enumerate(self._keys)}

    def compute(self) -> dict[str, Tensor]:
        """Mean of every metric over the samples (NaN ignored)."""
        return self._means()
