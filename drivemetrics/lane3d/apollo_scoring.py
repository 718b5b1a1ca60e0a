"""The Apollo 3D Lane Synthetic kernels :func:`apollo3d_resample`, :func:`apollo3d_matches`, :func:`apollo3d_scores`;
their rules, both modes and the Metric classes are in :mod:`drivemetrics.lane3d.apollo`, which re-exports them (as
:mod:`drivemetrics.functional`).

Kept apart from the Metric classes so that the ``apollo3d-eval`` command's CPU path (host code: numpy and the
libraries the rules need) never imports torch or torchmetrics.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from drivemetrics._internal import arrays
from drivemetrics._internal.compat import Compat, check_compat
from drivemetrics._internal.validation import check_values
from drivemetrics.lane3d.mincostflow import ortools_lane_assignment
from drivemetrics.lane3d.packed import PackedLanes, check_packed, check_packed_values

__all__ = [
    "APOLLO_THRESHOLDS",
    "COUNT_NAMES",
    "ERROR_NAMES",
    "apollo3d_matches",
    "apollo3d_resample",
    "apollo3d_scores",
]

#: The 19 probability thresholds, ``np.linspace(0.05, 0.95, 19)`` (0.40, 0.45, 0.50, 0.55 and 0.80 are a hair below
#: their decimals, so a probability written as one of those counts at its own threshold).
APOLLO_THRESHOLDS = tuple(np.linspace(0.05, 0.95, 19).tolist())
Y_SAMPLES = np.linspace(3, 103, num=100, endpoint=False)
CLOSE_SAMPLES = 38  # y <= 40 m
X_RANGE = 10.0
GT_X_RANGE = 30.0  # 3 x the window
DIST_THRESHOLD = 1.5
RATIO_THRESHOLD = 0.75
COST_GATE = DIST_THRESHOLD * Y_SAMPLES.shape[0]  # 150
ERROR_NAMES = ("x_error_close", "x_error_far", "z_error_close", "z_error_far")
COUNT_NAMES = ("r_lane", "p_lane", "cnt_gt", "cnt_pred")


def apollo3d_resample(
    lanes: PackedLanes, *, gt: bool, compat: Compat = "default", validate_args: bool = True
) -> dict[str, np.ndarray]:
    """Filter packed lanes as the evaluator does and resample them at y = 3, 4, ..., 102 m.

    Args:
        lanes: ground-frame lanes (GT: with ``visibility``, points with visibility <= 0 dropped first).
        gt: GT lanes (always filtered) or predictions (filtered in the default mode only).
        compat: ``"reference"`` or ``"default"`` (:mod:`drivemetrics.lane3d.apollo`).
        validate_args: refuse points beyond ``max_lane3d_abs_metres`` (the readers' limit); in reference mode a
            prediction of fewer than 2 points raises. Shapes and finite values are always checked.

    Returns:
        host numpy arrays ``x``, ``z`` ``(M, 100)`` float64 (unspecified for dropped lanes), ``visible``
        ``(M, 100)`` bool, ``kept`` ``(M,)`` bool (the lanes that are evaluated and counted).

    Examples:
        >>> import numpy as np
        >>> from drivemetrics.lane3d.packed import pack_lane_lists
        >>> from drivemetrics.functional import apollo3d_resample
        >>> lanes = pack_lane_lists([[np.array([[0.5, 2.0, 0.0], [1.5, 12.0, 1.0]])]], visibility=[[np.ones(2)]])
        >>> out = apollo3d_resample(lanes, gt=True)
        >>> out["kept"].tolist(), int(out["visible"].sum()), round(float(out["x"][0, 3]), 2)
        ([True], 10, 0.9)
    """
    reference = check_compat(compat)
    frames = int(arrays.to_numpy(lanes.frame).max(initial=-1)) + 1
    packed = check_packed(lanes, "target" if gt else "preds", frames, scores=False, visibility=gt)
    if validate_args:
        check_packed_values(packed, "target" if gt else "preds")
    points, lengths = packed.points, packed.lengths
    count = lengths.shape[0]
    x, y = points[:, 0], points[:, 1]
    lane_id = np.repeat(np.arange(count), lengths)
    keep = np.ones(points.shape[0], dtype=bool)
    if not gt and reference:
        if validate_args and (lengths < 2).any():
            m = int(np.flatnonzero(lengths < 2)[0])
            raise ValueError(
                f"`preds`: lane {m} (frame {int(packed.frame[m])}) has {int(lengths[m])} point(s); the official "
                "evaluator stops on a prediction of fewer than 2 points (AssertionError in resample_laneline_in_y)"
            )
        lane_ok = lengths >= 2
    else:
        if gt and packed.visibility is not None:
            keep &= packed.visibility > 0
        n_valid = np.bincount(lane_id[keep], minlength=count)
        idx = np.flatnonzero(keep)
        ids = lane_id[idx]
        if reference:  # first and last valid point in file order
            first = np.full(count, np.inf)
            last = np.full(count, -np.inf)
            starts = np.searchsorted(ids, np.arange(count))
            stops = np.searchsorted(ids, np.arange(count), side="right")
            has = stops > starts
            first[has] = y[idx[starts[has]]]
            last[has] = y[idx[stops[has] - 1]]
        else:  # the lowest and highest y
            first = np.full(count, np.inf)
            last = np.full(count, -np.inf)
            np.minimum.at(first, ids, y[idx])
            np.maximum.at(last, ids, y[idx])
        lane_ok = (n_valid >= 2) & (first < Y_SAMPLES[-1]) & (last > Y_SAMPLES[0])
        keep &= lane_ok[lane_id]
        keep &= (y > 0) & (y < 200) & (x > -GT_X_RANGE) & (x < GT_X_RANGE)
        lane_ok &= np.bincount(lane_id[keep], minlength=count) >= 2
    keep &= lane_ok[lane_id]
    idx = np.flatnonzero(keep)
    ids = lane_id[idx]
    order = np.lexsort((y[idx], ids))  # stable: by y within each lane, as interp1d's mergesort
    idx, ids = idx[order], ids[order]
    kx, ky, kz = x[idx], y[idx], points[idx, 2]
    n = np.bincount(ids, minlength=count)
    start = np.cumsum(n) - n
    samples = Y_SAMPLES.shape[0]
    # points with y < s per lane and sample s: floor(y) + 1 <= s for the integer samples
    bins = np.clip(np.floor(ky) + 1 - Y_SAMPLES[0], 0, samples).astype(np.int64) + ids * (samples + 1)
    below = np.bincount(bins, minlength=count * (samples + 1)).reshape(count, samples + 1)[:, :samples].cumsum(1)
    seg = np.clip(below, 1, np.maximum(n - 1, 1)[:, None]) - 1 + start[:, None]
    seg = np.clip(seg, 0, max(idx.shape[0] - 2, 0))
    out_x = np.zeros((count, samples))
    out_z = np.zeros((count, samples))
    visible = np.zeros((count, samples), dtype=bool)
    if idx.shape[0] >= 2:
        lo, hi = seg, seg + 1
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            dy = ky[hi] - ky[lo]
            offset = Y_SAMPLES[None, :] - ky[lo]
            out_x = (kx[hi] - kx[lo]) / dy * offset + kx[lo]  # interp1d's slope * (x_new - x_lo) + y_lo
            out_z = (kz[hi] - kz[lo]) / dy * offset + kz[lo]
        y_min = ky[np.minimum(start, idx.shape[0] - 1)][:, None]
        y_max = ky[np.clip(start + n - 1, 0, idx.shape[0] - 1)][:, None]
        visible = (out_x >= -X_RANGE) & (out_x <= X_RANGE) & (y_min <= Y_SAMPLES) & (y_max >= Y_SAMPLES)
        visible &= lane_ok[:, None]
    return {"x": out_x, "z": out_z, "visible": visible, "kept": lane_ok}


def _pair_terms(
    g: dict[str, np.ndarray], p: dict[str, np.ndarray], gi: np.ndarray, pj: np.ndarray, reference: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Cost ``(K,)``, matched samples ``(K,)`` and the four errors ``(K, 4)`` of the pairs ``(gi[k], pj[k])``."""
    gv, pv = g["visible"][gi], p["visible"][pj]
    both = gv & pv
    with np.errstate(invalid="ignore", over="ignore"):
        dx = np.abs(g["x"][gi] - p["x"][pj])
        dz = np.abs(g["z"][gi] - p["z"][pj])
        dist = np.sqrt(dx**2 + dz**2)
        dist[~both] = DIST_THRESHOLD  # 1.5 wherever either lane is invisible: every pair is costed over 100 samples
        cost = np.sum(dist, axis=1)
        num_match = np.sum(dist < DIST_THRESHOLD, axis=1)
        errors = np.empty((gi.shape[0], 4))
        k = 0
        for values in (dx, dz):
            for part in (slice(0, CLOSE_SAMPLES), slice(CLOSE_SAMPLES, None)):
                n = np.sum(both[:, part], axis=1)
                total = np.sum(values[:, part] * both[:, part], axis=1)
                errors[:, k] = np.where(n > 0, total / np.maximum(n, 1), DIST_THRESHOLD)
                k += 1
    if reference:
        cost = cost.astype(np.int64).astype(np.float64)  # the tool's int cost (the sum is >= 0: truncation)
    return cost, num_match, errors


def _assign(cost: np.ndarray, allowed: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Maximum-cardinality minimum-cost assignment of a ``(G, P)`` matrix (over the ``allowed`` pairs only; ``None``:
    the tool's, every pair allowed, integer costs, OR-Tools' choice among tied optima)."""
    if cost.size == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    if allowed is None:
        pairs = ortools_lane_assignment(cost.astype(np.int64))
        return np.array([i for i, _ in pairs], dtype=np.int64), np.array([j for _, j in pairs], dtype=np.int64)
    from scipy.optimize import linear_sum_assignment

    big = float(np.abs(np.where(allowed, cost, 0.0)).sum()) * 2 + 1.0
    rows, cols = linear_sum_assignment(np.where(allowed, cost, big))
    keep = allowed[rows, cols]
    return rows[keep], cols[keep]


def apollo3d_matches(
    preds: PackedLanes,
    target: PackedLanes,
    *,
    frames: int,
    thresholds: tuple[float, ...] = APOLLO_THRESHOLDS,
    compat: Compat = "default",
    validate_args: bool = True,
) -> dict[str, Any]:
    """Per frame and probability threshold: recall hits, precision hits, #GT, #pred, and the errors of the counted
    pairs.

    Args:
        preds: predicted lanes with ``scores`` (probabilities), ground frame, metres.
        target: GT lanes with ``visibility`` (``None``: all visible).
        frames: the number of frames ``B``.
        thresholds: probability thresholds (a lane counts when its probability is strictly above).
        compat: ``"reference"`` (the tool) or ``"default"`` (the fixes listed in :mod:`drivemetrics.lane3d.apollo`).
        validate_args: refuse points beyond ``max_lane3d_abs_metres``, the readers' limit (shapes, finite values,
            finite scores and frame indices are always checked).

    Returns:
        ``counts`` ``(B, T, 4)`` int64 (:data:`COUNT_NAMES`); ``pair_frame``, ``pair_threshold`` ``(K,)`` int64 and
        ``pair_errors`` ``(K, 4)`` float64 (:data:`ERROR_NAMES`) of every counted pair (cost < 150) at every
        threshold, frame after frame in assignment order; numpy arrays or tensors as ``preds.points``.

    Examples:
        >>> import numpy as np
        >>> from drivemetrics.lane3d.packed import pack_lane_lists
        >>> from drivemetrics.functional import apollo3d_matches
        >>> lane = np.array([[1.8, 3.0, 0.0], [1.8, 100.0, 0.0]])
        >>> gt = pack_lane_lists([[lane, lane - np.array([3.6, 0, 0])]], visibility=[[np.ones(2), np.ones(2)]])
        >>> pred = pack_lane_lists([[lane + np.array([0.2, 0, 0])]], scores=[[0.6]])
        >>> out = apollo3d_matches(pred, gt, frames=1, thresholds=(0.5, 0.9))
        >>> out["counts"].tolist(), out["pair_errors"].round(3).tolist()
        ([[[1, 1, 2, 1], [0, 0, 2, 0]]], [[0.2, 0.2, 0.0, 0.0]])
    """
    reference = check_compat(compat)
    like = preds.points
    p_lanes = check_packed(preds, "preds", frames, scores=True, visibility=False)
    g_lanes = check_packed(target, "target", frames, scores=False, visibility=True)
    g = apollo3d_resample(g_lanes, gt=True, compat=compat, validate_args=validate_args)
    p = apollo3d_resample(p_lanes, gt=False, compat=compat, validate_args=validate_args)
    thr = np.asarray(thresholds, dtype=np.float64)
    g_ids = np.flatnonzero(g["kept"])
    p_ids = np.flatnonzero(p["kept"])
    g_frame, p_frame = g_lanes.frame[g_ids], p_lanes.frame[p_ids]
    scores = p_lanes.scores[p_ids]
    g_n, p_n = np.bincount(g_frame, minlength=frames), np.bincount(p_frame, minlength=frames)
    g_start, p_start = np.cumsum(g_n) - g_n, np.cumsum(p_n) - p_n
    # every same-frame GT x prediction pair, frame after frame, GT-major
    pairs_per_frame = g_n * p_n
    pair_frame = np.repeat(np.arange(frames), pairs_per_frame)
    local = np.arange(pair_frame.shape[0]) - np.repeat(np.cumsum(pairs_per_frame) - pairs_per_frame, pairs_per_frame)
    width = np.maximum(p_n, 1)[pair_frame]
    gi = g_ids[g_start[pair_frame] + local // width]
    pj = p_ids[p_start[pair_frame] + local % width]
    cost, num_match, errors = _pair_terms(g, p, gi, pj, reference)
    g_vis, p_vis = g["visible"].sum(1), p["visible"].sum(1)
    kept_pred = scores[None, :] > thr[:, None]  # (T, P kept)
    counts = np.zeros((frames, thr.shape[0], 4), dtype=np.int64)
    counts[:, :, 2] = g_n[:, None]
    for t in range(thr.shape[0]):
        counts[:, t, 3] = np.bincount(p_frame[kept_pred[t]], minlength=frames)
    out_frame, out_thr, out_err = [], [], []
    pair_start = np.cumsum(pairs_per_frame) - pairs_per_frame
    for f in np.flatnonzero(pairs_per_frame > 0).tolist():
        ng, npr, s0 = int(g_n[f]), int(p_n[f]), int(pair_start[f])
        block = slice(s0, s0 + ng * npr)
        c = cost[block].reshape(ng, npr)
        m = num_match[block].reshape(ng, npr)
        e = errors[block].reshape(ng, npr, 4)
        gv = g_vis[gi[block].reshape(ng, npr)[:, 0]]
        pv = p_vis[pj[block].reshape(ng, npr)[0]]
        memo: dict[bytes, tuple[int, int, np.ndarray]] = {}
        local_kept = kept_pred[:, p_start[f] : p_start[f] + npr]
        for t in range(thr.shape[0]):
            cols = np.flatnonzero(local_kept[t])
            if cols.size == 0:
                continue
            key = local_kept[t].tobytes()
            if key not in memo:
                sub = c[:, cols]
                rows, picked = _assign(sub, None if reference else sub < COST_GATE)
                picked = cols[picked]
                ok = c[rows, picked] < COST_GATE
                rows, picked = rows[ok], picked[ok]
                mm = m[rows, picked].astype(np.float64)
                with np.errstate(invalid="ignore", divide="ignore"):
                    r_hit = int(np.sum(mm / gv[rows] >= RATIO_THRESHOLD))
                    p_hit = int(np.sum(mm / pv[picked] >= RATIO_THRESHOLD))
                memo[key] = (r_hit, p_hit, e[rows, picked])
            r_hit, p_hit, err = memo[key]
            counts[f, t, 0], counts[f, t, 1] = r_hit, p_hit
            if err.shape[0]:
                out_frame.append(np.full(err.shape[0], f))
                out_thr.append(np.full(err.shape[0], t))
                out_err.append(err)
    pf = np.concatenate(out_frame) if out_frame else np.zeros(0, dtype=np.int64)
    pt = np.concatenate(out_thr) if out_thr else np.zeros(0, dtype=np.int64)
    pe = np.concatenate(out_err) if out_err else np.zeros((0, 4))
    return {
        "counts": arrays.as_index(counts, like),
        "pair_frame": arrays.as_index(pf, like),
        "pair_threshold": arrays.as_index(pt, like),
        "pair_errors": arrays.float64_like(pe, like),
    }


def _interp_ap(recall: np.ndarray, precision: np.ndarray) -> float:
    """Mean of ``interp1d([1] + R + [0], [0] + P + [1])`` at recall 0.05, ..., 0.95, step by step as scipy 1.8
    computes it (stable mergesort of x, ``searchsorted`` side left, the segment's slope times the offset)."""
    x = np.concatenate([[1.0], recall, [0.0]])
    y = np.concatenate([[0.0], precision, [1.0]])
    order = np.argsort(x, kind="mergesort")
    x, y = x[order], y[order]
    queries = np.linspace(0.05, 0.95, 19)
    hi = np.clip(np.searchsorted(x, queries), 1, x.shape[0] - 1)
    lo = hi - 1
    with np.errstate(invalid="ignore", divide="ignore"):
        slope = (y[hi] - y[lo]) / (x[hi] - x[lo])
        values = slope * (queries - x[lo]) + y[lo]
    return float(np.mean(values))


def apollo3d_scores(
    counts: Any, error_sums: Any, pair_counts: Any, *, compat: Compat = "default", validate_args: bool = True
) -> dict[str, Any]:
    """AP, max F and its threshold, R / P there, and the four mean errors at it, from per-threshold sums.

    Args:
        counts: ``(T, 4)`` counts summed over frames (:data:`COUNT_NAMES`).
        error_sums: ``(T, 4)`` sums of the counted pairs' errors (:data:`ERROR_NAMES`).
        pair_counts: ``(T,)`` counted pairs.
        compat: accepted for symmetry (both modes score alike: R, P, F carry the tool's 1e-6).
        validate_args: refuse negative or non-finite counts and error sums (a one-line ``ValueError``).

    Returns:
        ``ap``, ``max_f``, ``max_f_index``, ``max_f_threshold``, ``recall``, ``precision`` (at max F), the four
        errors (NaN without a pair) and the per-threshold ``recall_curve``, ``precision_curve``, ``f_curve``
        (numpy float64).

    Examples:
        >>> import numpy as np
        >>> from drivemetrics.functional import apollo3d_scores
        >>> counts = np.array([[2, 2, 2, 2]] * 19)
        >>> out = apollo3d_scores(counts, np.full((19, 4), 0.4), np.full(19, 2))
        >>> round(out["ap"], 6), round(out["max_f"], 6), out["max_f_threshold"], out["x_error_close"]
        (1.0, 0.999999, 0.05, 0.2)
    """
    check_compat(compat)
    c = arrays.to_numpy(counts).astype(np.float64)
    sums = arrays.to_numpy(error_sums).astype(np.float64)
    n = arrays.to_numpy(pair_counts).astype(np.float64)
    if c.ndim != 2 or c.shape[1] != 4 or sums.shape != c.shape or n.shape != c.shape[:1]:
        raise ValueError("`counts` and `error_sums` must be (T, 4) and `pair_counts` (T,)")
    if validate_args:
        check_values(c, "counts", low=0, what="counts")
        check_values(sums, "error_sums", low=0.0, what="error sums")
        check_values(n, "pair_counts", low=0, what="counts")
    recall = c[:, 0] / (c[:, 2] + 1e-6)
    precision = c[:, 1] / (c[:, 3] + 1e-6)
    f = 2 * recall * precision / (recall + precision + 1e-6)
    i = int(np.argmax(f))
    with np.errstate(invalid="ignore", divide="ignore"):
        errors = sums[i] / n[i]
    out: dict[str, Any] = {
        "ap": _interp_ap(recall, precision),
        "max_f": float(f[i]),
        "max_f_index": i,
        "max_f_threshold": APOLLO_THRESHOLDS[i] if c.shape[0] == len(APOLLO_THRESHOLDS) else float("nan"),
        "recall": float(recall[i]),
        "precision": float(precision[i]),
    }
    for k, name in enumerate(ERROR_NAMES):
        out[name] = float(errors[k])
    out.update(recall_curve=recall, precision_curve=precision, f_curve=f)
    return out
