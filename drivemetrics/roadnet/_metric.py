"""Base class of the road-network Metric classes (sum-reduced float64 states, plotting) and their ratio helpers.

Kernels never import this module; the family modules (``opt_j``, ``opt_p``, ``opt_g``) subclass :class:`GraphMetric`.
"""

from __future__ import annotations

import torch
from torch import Tensor

from drivemetrics._internal.metric import MetricFamily

__all__ = ["GraphMetric", "tensor_f1", "tensor_ratios"]


def tensor_ratios(tp: Tensor, pred_total: Tensor, gt_total: Tensor) -> dict[str, Tensor]:
    """``{"precision", "recall", "f1"}`` from summed counts (0 where a total is 0)."""
    precision = torch.where(pred_total > 0, tp / pred_total.clamp(min=1), torch.zeros_like(tp))
    recall = torch.where(gt_total > 0, tp / gt_total.clamp(min=1), torch.zeros_like(tp))
    return {"precision": precision, "recall": recall, "f1": tensor_f1(precision, recall)}


def tensor_f1(precision: Tensor, recall: Tensor) -> Tensor:
    """Harmonic mean of precision and recall, 0 where both are 0."""
    total = precision + recall
    return torch.where(total > 0, 2 * precision * recall / total.clamp(min=1e-300), torch.zeros_like(total))


class GraphMetric(MetricFamily):
    is_differentiable = False
    higher_is_better = True
    full_state_update = False
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0

    def _add_sum(self, name: str) -> None:
        self.add_state(name, default=torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="sum")
