"""Small numeric helpers shared by the kernels (written once): safe division and the F-score.

Examples:
    >>> import torch
    >>> from drivemetrics._internal.compute import safe_divide
    >>> from drivemetrics._internal.compute import precision_recall_f1
    >>> safe_divide(torch.tensor([1.0, 1.0]), torch.tensor([2.0, 0.0])).tolist()
    [0.5, 0.0]
    >>> scores = precision_recall_f1(torch.tensor(3), torch.tensor(1), torch.tensor(2))
    >>> {k: round(v.item(), 3) for k, v in scores.items()}
    {'precision': 0.75, 'recall': 0.6, 'f1': 0.667}
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["f1_score", "precision_recall_f1", "safe_divide"]


def safe_divide(num: Tensor, den: Tensor) -> Tensor:
    """``num / den`` where ``den > 0``, else 0 (no NaN, and no NaN gradient through the masked branch)."""
    positive = den > 0
    return torch.where(positive, num / torch.where(positive, den, torch.ones_like(den)), torch.zeros_like(num))


def f1_score(precision: Tensor, recall: Tensor) -> Tensor:
    """Harmonic mean ``2 P R / (P + R)``; 0 where ``P + R <= 0``."""
    return safe_divide(2 * precision * recall, precision + recall)


def precision_recall_f1(tp: Tensor, fp: Tensor, fn: Tensor) -> dict[str, Tensor]:
    """``{"precision", "recall", "f1"}`` (float64) from true-positive, false-positive and false-negative counts."""
    tp, fp, fn = (v.to(torch.float64) for v in (tp, fp, fn))
    precision = safe_divide(tp, tp + fp)
    recall = safe_divide(tp, tp + fn)
    return {"precision": precision, "recall": recall, "f1": f1_score(precision, recall)}
