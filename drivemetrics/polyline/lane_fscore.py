"""The lane F-score of OpenLane (v1)'s evaluator ``eval_3D_lane.py``, the rule shared by the 3D-lane metric
(:mod:`drivemetrics.lane3d.openlane`, lanes sampled at y = 3 .. 102 m) and the OpenLane-V2 centerline F-score
(:mod:`drivemetrics.lanetopology.fscore`, lanes sampled at x = -50 .. 49.5 m), written once:

1. every GT x prediction pair of a frame gets a cost: the distance summed over the samples both lanes show, 1.5 m
   per sample only one shows (each domain sums its samples in its tool's order, see their ``pair costs``);
2. the tool truncates the cost to an integer (:func:`tool_integer_cost`: ``(0, 1)`` becomes 1);
3. one minimum-cost one-to-one assignment per frame (:func:`min_cost_assignments`, optionally over the allowed
   pairs only), and a pair costing :data:`COST_GATE` or more is no match;
4. a matched GT lane is a recall hit, a matched prediction a precision hit, when :data:`RATIO_THRESHOLD` of its
   visible samples are matched samples (closer than :data:`DIST_THRESHOLD`) (:func:`ratio_hits`).

Written for numpy arrays and torch tensors alike (:mod:`drivemetrics._internal.arrays`; the assignment runs on the
host, with scipy), so the OpenLane-V2 command stays torch-free.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from drivemetrics._internal import arrays as xp

__all__ = [
    "COST_GATE",
    "DIST_THRESHOLD",
    "RATIO_THRESHOLD",
    "SAMPLES",
    "min_cost_assignments",
    "ratio_hits",
    "tool_integer_cost",
]

Array = Any  # a numpy array or a torch tensor

#: Samples per lane in both evaluators.
SAMPLES = 100
#: A sample pair matches closer than this (metres); a sample only one lane shows costs this much.
DIST_THRESHOLD = 1.5
#: A matched lane is a hit when this share of its visible samples match.
RATIO_THRESHOLD = 0.75
#: A pair costing this much or more (1.5 m at every sample) is never a match.
COST_GATE = DIST_THRESHOLD * SAMPLES


def tool_integer_cost(cost: Array) -> Array:
    """The evaluators' integer pair cost: a cost in ``(0, 1)`` becomes 1, any other is rounded down (costs are
    non-negative), in ``cost``'s dtype.

    Examples:
        >>> import numpy as np
        >>> from drivemetrics.polyline.lane_fscore import tool_integer_cost
        >>> tool_integer_cost(np.array([0.0, 0.25, 1.0, 7.9])).tolist()
        [0.0, 1.0, 1.0, 7.0]
    """
    return xp.where((cost > 0) & (cost < 1), 1.0, xp.floor(cost))


def ratio_hits(matched: Array, visible: Array) -> Array:
    """Whether ``matched`` samples are at least :data:`RATIO_THRESHOLD` of ``visible`` samples (both integer counts;
    ``matched / visible >= 0.75`` exactly, without a division).

    Examples:
        >>> import numpy as np
        >>> from drivemetrics.polyline.lane_fscore import ratio_hits
        >>> ratio_hits(np.array([3, 2, 0]), np.array([4, 4, 0])).tolist()
        [True, False, True]
    """
    return matched >= RATIO_THRESHOLD * visible


def min_cost_assignments(
    cost: np.ndarray, rows: np.ndarray, cols: np.ndarray, allowed: np.ndarray | None = None
) -> np.ndarray:
    """A minimum-cost one-to-one assignment of every frame of a flat pair list, as sorted flat indices.

    Args:
        cost: ``(Q,)`` the costs of the frames' row-major ``(rows[f], cols[f])`` blocks, back to back (numeric).
        rows / cols: ``(F,)`` GT and predicted lanes per frame.
        allowed: ``(Q,)`` bool, or ``None`` (all): the assignment first maximises the number of allowed pairs, then
            minimises their cost, and only allowed pairs are returned.

    Returns:
        ``(K,)`` int64 indices into ``cost``, increasing (frame by frame, each frame's in row order):
        ``min(rows, cols)`` pairs per frame (fewer with ``allowed``).

    Where every row of a frame (every column, if it has more rows than columns) has a strict finite minimum and
    these minima lie in distinct columns (rows), taking them is the one optimal assignment, so it is what any
    solver returns; the other frames go to :func:`scipy.optimize.linear_sum_assignment` one by one (scipy is
    imported only for them: its import costs more than the whole F-score of a small split).

    Examples:
        >>> import numpy as np
        >>> from drivemetrics.polyline.lane_fscore import min_cost_assignments
        >>> cost = np.array([1.0, 5.0, 4.0, 2.0,  3.0, 3.0])  # a 2 x 2 frame, then a 1 x 2 frame with a tie
        >>> min_cost_assignments(cost, np.array([2, 1]), np.array([2, 2])).tolist()
        [0, 3, 4]
    """
    rows = np.asarray(rows, dtype=np.int64)
    cols = np.asarray(cols, dtype=np.int64)
    pairs = rows * cols
    starts = np.cumsum(pairs) - pairs
    frames = np.flatnonzero(pairs)
    if not frames.size:
        return np.zeros(0, dtype=np.int64)
    cost = np.asarray(cost)
    floating = cost.dtype.kind == "f"
    big = np.inf if floating else np.iinfo(np.int64).max
    work = cost.astype(np.float64 if floating else np.int64, copy=allowed is not None)
    if allowed is not None:
        work[~allowed] = big  # a forbidden pair never is a strict minimum: such frames go to the solver
    wide = np.zeros(len(rows), dtype=bool)
    wide[frames] = rows[frames] <= cols[frames]  # rows pick their minimum; else columns do
    padded = np.full((len(rows), int(rows.max()), int(cols.max())), big, dtype=work.dtype)
    frame = np.repeat(np.arange(len(rows)), pairs)
    local = np.arange(pairs.sum()) - starts[frame]
    padded[frame, local // cols[frame], local % cols[frame]] = work
    chosen = []
    for transpose, sel in ((False, frames[wide[frames]]), (True, frames[~wide[frames]])):
        if not sel.size:
            continue
        block = padded[sel].transpose(0, 2, 1) if transpose else padded[sel]
        lines = (cols if transpose else rows)[sel]
        valid = np.arange(block.shape[1])[None] < lines[:, None]
        best = block.argmin(2)
        two = (
            np.partition(block, 1, axis=2)[..., :2]
            if block.shape[2] > 1
            else np.concatenate([block, np.full_like(block, big)], axis=2)
        )
        strict = ((two[..., 0] < two[..., 1]) & (two[..., 0] < big)) | ~valid
        if floating:
            strict &= ~np.isnan(block).any(2) | ~valid  # NaN: the solver decides (and refuses it), as before
        taken = np.sort(np.where(valid, best, -1 - np.arange(block.shape[1])[None]), axis=1)
        distinct = (taken[:, 1:] != taken[:, :-1]).all(1)
        easy = strict.all(1) & distinct
        f_easy = sel[easy]
        r, line = np.nonzero(valid[easy])
        other = best[easy][r, line]
        row, col = (other, line) if transpose else (line, other)
        chosen.append(starts[f_easy[r]] + row * cols[f_easy[r]] + col)
        for f in sel[~easy]:
            block_f = cost[starts[f] : starts[f] + pairs[f]].reshape(rows[f], cols[f])
            ok_f = None if allowed is None else allowed[starts[f] : starts[f] + pairs[f]].reshape(rows[f], cols[f])
            r_idx, c_idx = _solve(block_f, ok_f)
            chosen.append(starts[f] + r_idx * cols[f] + c_idx)
    return np.sort(np.concatenate(chosen)) if chosen else np.zeros(0, dtype=np.int64)


def _solve(cost: np.ndarray, allowed: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """:func:`scipy.optimize.linear_sum_assignment` of one ``(G, P)`` block (over the ``allowed`` pairs only)."""
    from scipy.optimize import linear_sum_assignment

    if allowed is None:
        return linear_sum_assignment(cost)
    # a forbidden pair costs more than any set of allowed ones: the solver first maximises the allowed pairs
    big = float(np.abs(np.where(allowed, cost, 0.0)).sum()) * 2 + 1.0
    rows, cols = linear_sum_assignment(np.where(allowed, cost, big))
    keep = allowed[rows, cols]
    return rows[keep], cols[keep]
