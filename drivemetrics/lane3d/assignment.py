"""OpenLane (v1) 3D lanes, step 3 of the evaluator: the one-to-one assignment of GT and predicted lanes (maximum
cardinality, minimal cost; scipy on the CPU), for one cost matrix or all frames of a flat pair list.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

__all__ = [
    "assign_frames",
]


def _assign(cost: np.ndarray, allowed: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Maximum-cardinality minimum-cost assignment of a ``(G, P)`` matrix (over the ``allowed`` pairs only)."""
    from scipy.optimize import linear_sum_assignment

    if cost.size == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    if allowed is None:
        rows, cols = linear_sum_assignment(cost)
        return rows, cols
    # a forbidden pair costs more than any set of allowed ones: the solver first maximises the allowed pairs
    big = float(np.abs(np.where(allowed, cost, 0.0)).sum()) * 2 + 1.0
    rows, cols = linear_sum_assignment(np.where(allowed, cost, big))
    keep = allowed[rows, cols]
    return rows[keep], cols[keep]


def assign_frames(cost: Tensor, allowed: Tensor | None, first: Tensor, n_gt: Tensor, n_pred: Tensor) -> Tensor:
    """The assignment of every frame (scipy on the CPU): indices into the pairs of :func:`pair_index`, frame after
    frame, each frame's in GT order."""
    from scipy.optimize import linear_sum_assignment

    cost_np = cost.detach().cpu().numpy()
    allowed_np = None if allowed is None else allowed.cpu().numpy()
    frames = (n_gt * n_pred).nonzero()[:, 0]
    starts, widths = first[frames].cpu().numpy(), n_pred[frames].cpu().numpy()
    rows_of, cols_of = [], []
    for start, rows, cols in zip(starts.tolist(), n_gt[frames].tolist(), widths.tolist(), strict=True):
        stop = start + rows * cols
        if allowed_np is None:
            r, c = linear_sum_assignment(cost_np[start:stop].reshape(rows, cols))
        else:
            r, c = _assign(cost_np[start:stop].reshape(rows, cols), allowed_np[start:stop].reshape(rows, cols))
        rows_of.append(r)
        cols_of.append(c)
    if not rows_of:
        return torch.zeros(0, dtype=torch.long, device=cost.device)
    per_frame = np.fromiter(map(len, rows_of), np.int64, len(rows_of))
    index = np.concatenate(rows_of) * np.repeat(widths, per_frame) + np.concatenate(cols_of)
    index += np.repeat(starts, per_frame)
    return torch.from_numpy(index.astype(np.int64)).to(cost.device)
