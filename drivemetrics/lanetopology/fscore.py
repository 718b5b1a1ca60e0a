"""The OpenLane-V2 lane F-score (OpenLane v1's 3D-lane evaluator applied to the centerlines): samples at x = -50 .. 49.5
m and the pair costs in the devkit's summation order here; the F-score rule itself (integer cost, one min-cost
assignment per frame, the gate, hits at 0.75 of the visible samples) is the one of the 3D-lane metric,
:mod:`drivemetrics.polyline.lane_fscore`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from drivemetrics._internal import arrays as xp
from drivemetrics.lanetopology.distances import frame_pairs
from drivemetrics.lanetopology.frames import (
    LaneFrame,
)
from drivemetrics.polyline.lane_fscore import (
    COST_GATE,
    DIST_THRESHOLD,
    RATIO_THRESHOLD,
    min_cost_assignments,
    ratio_hits,
    tool_integer_cost,
)

__all__ = ["FSCORE_DIST_TH", "FSCORE_RATIO_TH", "fscore_batch_counts", "fscore_frame_counts", "kept_lane_samples"]


# F-score (OpenLane v1's 3D-lane evaluator)
_X_SAMPLES = np.linspace(-50, 50, num=100, endpoint=False)


#: F-score: a sample pair matches below this distance (metres); a lane pair matches if its cost is below 100 x it.
FSCORE_DIST_TH = DIST_THRESHOLD


#: F-score: a matched lane counts if this share of its visible samples match.
FSCORE_RATIO_TH = RATIO_THRESHOLD


def kept_lane_samples(lanes: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The F-score samples of the lanes the devkit keeps only: ``(y (Q, 100), z (Q, 100), visible (Q, 100),
    index (Q,))``, ``index`` the kept lanes' positions in ``lanes`` (increasing)."""
    empty = np.zeros((0, 100))
    if not len(lanes):
        return empty, empty, empty.astype(bool), np.zeros(0, dtype=np.int64)
    lengths = np.fromiter((len(x) for x in lanes), dtype=np.int64, count=len(lanes))
    flat = np.concatenate(lanes)
    starts = np.cumsum(lengths) - lengths
    first_ok = (lengths > 1) & (flat[starts, 0] < _X_SAMPLES[-1]) & (flat[starts + lengths - 1, 0] > _X_SAMPLES[0])
    index = np.flatnonzero(first_ok)
    columns = tuple(np.ascontiguousarray(flat[:, c]) for c in range(3))
    parts = [
        _sample_lanes(columns, starts[part], lengths[part])  # chunks that stay in the cache
        for part in np.array_split(index, max(1, len(index) // 2048))
        if part.size
    ]
    if not parts:
        return empty, empty, empty.astype(bool), np.zeros(0, dtype=np.int64)
    y, z, visible = (np.concatenate([p[k] for p in parts]) if len(parts) > 1 else parts[0][k] for k in range(3))
    seen = visible.sum(1) > 1
    if seen.all():
        return y, z, visible, index
    return y[seen], z[seen], visible[seen], index[seen]


def _sample_lanes(
    columns: tuple[np.ndarray, ...], starts: np.ndarray, lengths: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Samples ``y (K, 100)``, ``z (K, 100)`` and visibility ``(K, 100)`` of the lanes whose points are rows
    ``starts[k] .. starts[k] + lengths[k] - 1`` of ``columns`` (x, y, z of the points of all lanes, each ``(N,)``,
    contiguous); no filtering."""
    num, n_max = len(lengths), int(lengths.max())
    # edge padding (the last point repeated): a lane whose x never decreases stays sorted, and a stable sort of it
    # is the identity, so only the other lanes are sorted
    index = np.minimum(np.arange(n_max)[None], lengths[:, None] - 1) + starts[:, None]
    x = columns[0].take(index)
    unsorted = np.flatnonzero((np.diff(x, axis=1) < 0).any(1))
    if unsorted.size:
        inside = np.arange(n_max)[None] < lengths[unsorted, None]
        order = np.argsort(np.where(inside, x[unsorted], np.inf), axis=1, kind="stable")  # padding sorts last
        last_sorted = np.take_along_axis(order, lengths[unsorted, None] - 1, 1)  # padding: the largest x again
        index[unsorted] = np.take_along_axis(index[unsorted], np.where(inside, order, last_sorted), 1)
        x[unsorted] = columns[0].take(index[unsorted])
    # searchsorted(x, sample, "left") per lane, all lanes at once
    samples_x = np.broadcast_to(_X_SAMPLES, (num, len(_X_SAMPLES)))
    idx = xp.searchsorted_rows(x, samples_x)
    idx = np.clip(idx, 1, lengths[:, None] - 1)
    point_hi = np.take_along_axis(index, idx, 1)  # rows of ``flat`` of each sample's segment ends
    point_lo = point_hi - 1 if not unsorted.size else np.take_along_axis(index, idx - 1, 1)
    x_lo = columns[0].take(point_lo)
    run = columns[0].take(point_hi) - x_lo
    offset = _X_SAMPLES[None] - x_lo
    planes = []
    with np.errstate(divide="ignore", invalid="ignore"):
        for c in (1, 2):  # contiguous planes, one pass per operation
            lo = columns[c].take(point_lo)
            plane = columns[c].take(point_hi)
            plane -= lo
            plane /= run
            plane *= offset
            plane += lo
            planes.append(plane)
    y, z = planes
    x_min = x[:, 0]
    x_max = x[np.arange(num), lengths - 1]
    visible = (_X_SAMPLES[None] >= x_min[:, None]) & (_X_SAMPLES[None] <= x_max[:, None])
    return y, z, visible


def fscore_frame_counts(
    gt: tuple[np.ndarray, np.ndarray, np.ndarray],
    pred: tuple[np.ndarray, np.ndarray, np.ndarray],
    gt_count: np.ndarray,
    pred_count: np.ndarray,
) -> np.ndarray:
    """The F-score counts ``[r_lane, p_lane, cnt_gt, cnt_pred, match_num]`` summed over many frames.

    Args:
        gt / pred: the kept lanes' samples ``(y (K, 100), z (K, 100), visible (K, 100))``, metres, frame by frame.
        gt_count / pred_count: ``(F,)`` kept lanes per frame.

    Every GT x prediction pair of every frame is costed as one flat list (:func:`_fscore_pair_costs`), then one
    min-cost assignment per frame (:func:`~drivemetrics.polyline.lane_fscore.min_cost_assignments`); a matched pair
    counts if its cost is below ``100 x 1.5``, for recall / precision if ``0.75`` of the GT's / prediction's visible
    samples match (:mod:`drivemetrics.polyline.lane_fscore`, the rule shared with the 3D-lane metric).

    Examples:
        >>> import numpy as np
        >>> from drivemetrics.lanetopology.fscore import fscore_frame_counts
        >>> y = np.zeros((1, 100)); visible = np.arange(100)[None] < 40
        >>> fscore_frame_counts((y, y, visible), (y + 0.5, y, visible), np.array([1]), np.array([1])).tolist()
        [1.0, 1.0, 1.0, 1.0, 1.0]
    """
    out = np.zeros(5)
    out[2], out[3] = gt_count.sum(), pred_count.sum()
    if not (gt_count * pred_count).sum():
        return out
    gi, pj, _ = frame_pairs(gt_count, pred_count)
    cost, matched = _fscore_pair_costs(gt, pred, gi, pj)
    cost_int = tool_integer_cost(cost).astype(np.int64)
    pick = min_cost_assignments(cost_int, gt_count, pred_count)
    pick = pick[cost_int[pick] < COST_GATE]
    out[4] = len(pick)
    out[0] = ratio_hits(matched[pick], gt[2].sum(1)[gi[pick]]).sum()
    out[1] = ratio_hits(matched[pick], pred[2].sum(1)[pj[pick]]).sum()
    return out


def _fscore_pair_costs(
    gt: tuple[np.ndarray, np.ndarray, np.ndarray],
    pred: tuple[np.ndarray, np.ndarray, np.ndarray],
    gi: np.ndarray,
    pj: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """``(cost (Q,), matched points (Q,))`` of the lane pairs ``(gi[q], pj[q])`` (``(y, z, visible)`` samples of the
    GT and predicted lanes, each ``(K, 100)``).

    Visibility is one run of samples per lane, so a pair whose runs do not overlap has the cost
    ``1.5 x (visible samples of both)`` (a sum of halves: exact in any order) and no matched point; the others get
    the per-sample distances summed over the 100 samples as the devkit sums them.
    """
    gy, gz, gv = gt
    py, pz, pv = pred
    last = gv.shape[1] - 1  # first and last visible sample of each lane (kept lanes see at least two)
    g_lo, g_hi = gv.argmax(1), last - gv[:, ::-1].argmax(1)
    p_lo, p_hi = pv.argmax(1), last - pv[:, ::-1].argmax(1)
    cost = FSCORE_DIST_TH * (gv.sum(1)[gi] + pv.sum(1)[pj]).astype(np.float64)
    matched = np.zeros(len(gi), dtype=np.int64)
    overlap = np.flatnonzero(np.maximum(g_lo[gi], p_lo[pj]) <= np.minimum(g_hi[gi], p_hi[pj]))
    for part in np.array_split(overlap, max(1, len(overlap) // 2048)):  # small chunks: reused memory
        g, p = gi[part], pj[part]
        both = gv[g] & pv[p]
        neither = ~(gv[g] | pv[p])
        dist = gy[g]  # sqrt(dy ** 2 + dz ** 2) in place
        dist -= py[p]
        dist *= dist
        dz = gz[g]
        dz -= pz[p]
        dz *= dz
        dist += dz
        np.sqrt(dist, out=dist)
        dist = np.where(both, dist, np.where(neither, 0.0, FSCORE_DIST_TH))
        cost[part] = dist.sum(1)
        matched[part] = (dist < FSCORE_DIST_TH).sum(1) - neither.sum(1)
    return cost, matched


def fscore_batch_counts(gts: Sequence[LaneFrame], prs: Sequence[LaneFrame]) -> np.ndarray:
    """The F-score counts ``[r_lane, p_lane, cnt_gt, cnt_pred, match_num]`` summed over many frames
    (:func:`fscore_frame_counts`), the lanes of all frames sampled at once.

    Min-cost one-to-one assignment of the integer costs with :func:`scipy.optimize.linear_sum_assignment`; where
    several assignments are optimal, OR-Tools (the devkit) may pick another one.

    Examples:
        >>> import numpy as np
        >>> from drivemetrics.lanetopology.frames import parse_frame
        >>> from drivemetrics.lanetopology.fscore import fscore_batch_counts
        >>> lane = np.stack([np.linspace(0, 40, 11), np.zeros(11), np.zeros(11)], 1).tolist()
        >>> gt = parse_frame({"lane_centerline": [{"points": lane}], "traffic_element": [],
        ...                   "topology_lclc": [[0]], "topology_lcte": [[]]}, track="centerline", is_pred=False)
        >>> fscore_batch_counts([gt], [gt]).tolist()
        [1.0, 1.0, 1.0, 1.0, 1.0]
    """
    gy, gz, gv, gk = kept_lane_samples([x for f in gts for x in f.lanes])
    py, pz, pv, pk = kept_lane_samples([x for f in prs for x in f.lanes])
    g_count = np.bincount(np.repeat(np.arange(len(gts)), [len(f.lanes) for f in gts])[gk], minlength=len(gts))
    p_count = np.bincount(np.repeat(np.arange(len(prs)), [len(f.lanes) for f in prs])[pk], minlength=len(prs))
    return fscore_frame_counts((gy, gz, gv), (py, pz, pv), g_count, p_count)
