"""The OpenLane lane F-score rule shared by lane3d and lanetopology (drivemetrics/polyline/lane_fscore.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.optimize import linear_sum_assignment

from drivemetrics.polyline.lane_fscore import COST_GATE, min_cost_assignments, ratio_hits, tool_integer_cost


def _solver(blocks, allowed_blocks=None):
    """Flat indices of scipy's assignment of each block (over the allowed pairs only, maximum cardinality first)."""
    want, start = [], 0
    for k, b in enumerate(blocks):
        if b.size:
            if allowed_blocks is None:
                r, c = linear_sum_assignment(b)
            else:
                ok = allowed_blocks[k]
                big = float(np.abs(np.where(ok, b, 0.0)).sum()) * 2 + 1.0
                r, c = linear_sum_assignment(np.where(ok, b, big))
                r, c = r[ok[r, c]], c[ok[r, c]]
            want += (start + r * b.shape[1] + c).tolist()
        start += b.size
    return want


@pytest.mark.parametrize("dtype", ["int64", "float64"])
def test_min_cost_assignments_equal_the_solver(dtype) -> None:
    """The shortcut (strict, distinct minima) picks what the solver picks; ties and conflicts go to the solver."""
    rng = np.random.default_rng(5)
    for trial in range(200):
        frames = int(rng.integers(1, 10))
        rows, cols = rng.integers(0, 6, frames), rng.integers(0, 6, frames)
        high = (2, 30, 1000)[trial % 3]  # many ties, some, almost none
        blocks = [rng.integers(0, high, (r, c)).astype(dtype) for r, c in zip(rows, cols, strict=True)]
        cost = np.concatenate([b.reshape(-1) for b in blocks]).astype(dtype)
        got = min_cost_assignments(cost, rows, cols)
        assert got.tolist() == sorted(_solver(blocks))
        allowed_blocks = [b < high * 0.6 for b in blocks]
        allowed = np.concatenate([a.reshape(-1) for a in allowed_blocks])
        assert min_cost_assignments(cost, rows, cols, allowed).tolist() == sorted(_solver(blocks, allowed_blocks))
    # a frame with a clear diagonal takes the shortcut; one with a conflict needs the solver: both as scipy
    cost = np.array([1, 9, 9, 1, 1, 2, 2, 9], dtype=np.int64)  # frame 0: [[1, 9], [9, 1]]; frame 1: [[1, 2], [2, 9]]
    assert min_cost_assignments(cost, np.array([2, 2]), np.array([2, 2])).tolist() == [0, 3, 5, 6]


def test_a_frame_without_an_allowed_pair_assigns_nothing() -> None:
    cost = np.array([5.0, 7.0, 1.0])  # a 1 x 2 frame, then a 1 x 1 frame
    allowed = np.array([False, False, True])
    assert min_cost_assignments(cost, np.array([1, 1]), np.array([2, 1]), allowed).tolist() == [2]
    assert min_cost_assignments(np.zeros(0), np.array([0, 3]), np.array([4, 0])).tolist() == []


def test_integer_cost_and_ratio_on_numpy_and_torch() -> None:
    cost = np.array([0.0, 1e-9, 0.5, 1.0, 149.99, 150.0])
    want = [0.0, 1.0, 1.0, 1.0, 149.0, 150.0]  # the tools: int(cost), but (0, 1) -> 1
    assert tool_integer_cost(cost).tolist() == want
    assert tool_integer_cost(torch.from_numpy(cost)).tolist() == want
    assert (tool_integer_cost(cost) < COST_GATE).tolist() == [True] * 5 + [False]
    matched, visible = np.array([75, 74, 3, 2]), np.array([100, 100, 4, 3])
    assert ratio_hits(matched, visible).tolist() == [True, False, True, False]
    assert ratio_hits(torch.from_numpy(matched), torch.from_numpy(visible)).tolist() == [True, False, True, False]
