"""OpenLane (v1) 3D lanes, step 3 of the evaluator: the one-to-one assignment of GT and predicted lanes (maximum
cardinality, minimal cost; scipy on the CPU), for one cost matrix or all frames of a flat pair list: the F-score
rule shared with OpenLane-V2, :func:`drivemetrics.polyline.lane_fscore.min_cost_assignments`.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from drivemetrics._internal import arrays
from drivemetrics.polyline.lane_fscore import min_cost_assignments

__all__ = [
    "assign_frames",
]


def _assign(cost: np.ndarray, allowed: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Maximum-cardinality minimum-cost assignment of a ``(G, P)`` matrix (over the ``allowed`` pairs only): rows
    (increasing) and columns (:func:`~drivemetrics.polyline.lane_fscore.min_cost_assignments` of one frame)."""
    if cost.size == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    rows, cols = cost.shape
    flat_allowed = None if allowed is None else allowed.reshape(-1)
    index = min_cost_assignments(cost.reshape(-1), np.array([rows]), np.array([cols]), flat_allowed)
    return index // cols, index % cols


def assign_frames(cost: Tensor, allowed: Tensor | None, first: Tensor, n_gt: Tensor, n_pred: Tensor) -> Tensor:
    """The assignment of every frame (on the host: :func:`~drivemetrics.polyline.lane_fscore.min_cost_assignments`,
    the F-score rule shared with OpenLane-V2): indices into the pairs of :func:`~drivemetrics.lane3d.pairs.pair_index`,
    frame after frame, each frame's in GT order. ``first``: each frame's first pair (the frames' blocks lie back to
    back, so it is implied by ``n_gt`` and ``n_pred``; checked)."""
    rows, cols = arrays.to_numpy(n_gt).astype(np.int64), arrays.to_numpy(n_pred).astype(np.int64)
    pairs = rows * cols
    if not np.array_equal(arrays.to_numpy(first)[pairs > 0], (np.cumsum(pairs) - pairs)[pairs > 0]):
        raise ValueError("`first` must be the frames' first pairs, the frames' (n_gt, n_pred) blocks back to back")
    index = min_cost_assignments(
        arrays.to_numpy(cost), rows, cols, None if allowed is None else arrays.to_numpy(allowed)
    )
    return torch.from_numpy(index).to(cost.device)
