"""OpenLane (v1) 3D lane scores: F-score, recall, precision, category accuracy and the x / z errors near
(y <= 40 m) and far, as batched kernels and a ``torchmetrics`` family.

Lanes are padded point sets ``(B, L, N, 3)`` in the evaluator's ground frame (metres; x right, y forward, z up,
origin on the ground below the camera) with per-lane point counts ``(B, L)``. The pipeline, one frame or a batch:

1. :func:`openlane3d_resample`: keep the valid points (GT: the visible ones), keep a lane whose first point lies
   before y = 102 m and last point after y = 3 m, keep points with 0 < y < 200 and -10 < x < 10, resample x and
   z at y = 3, 4, ..., 102 m by linear interpolation over y (``scipy.interpolate.interp1d`` with extrapolation); a
   sample is visible when -10 <= x <= 10 and y lies in the lane's range; lanes need 2 visible samples.
2. :func:`openlane3d_pair_matrices`: for every GT x prediction pair, the cost (sum over samples of the point
   distance where both are visible, 1.5 m where only one is), the matched samples (both visible, closer than
   1.5 m) and the mean |dx| / |dz| near and far.
3. :func:`openlane3d_matches`: the assignment (maximum cardinality, minimal cost; scipy on the CPU), the hits at
   0.75 of the visible samples, the category and error sums per frame.

``compat="reference"`` reproduces ``eval_3D_lane.py`` of OpenDriveLab/OpenLane (commit 8a0ce6b). The default
mode fixes five of its rules (see the docs page "3D lanes (OpenLane)"):

- categories: left and right curb (20, 21) are interchangeable both ways (the tool accepts a predicted 20 for a
  GT 21, but not a 21 for a 20);
- the pair cost is the float sum (the tool truncates it to an int, which reorders close pairs);
- pairs costing 150 or more are gated *before* the assignment (the tool assigns first, then drops them, so an
  impossible pair can take a GT lane away from a valid match);
- annotated but invisible GT points are "don't care": predicted samples within 1.5 m of them count neither as a
  hit nor as a miss (the tool drops them from the GT only, so a copy of the GT scores a precision below 1);
- a lane listed far to near is evaluated (the tool checks its first and last point as if it were sorted by y,
  and drops it).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import Tensor

from drivemetrics._internal.compat import Compat, check_compat
from drivemetrics._internal.metric import MetricFamily, ScalarMetric, add_config_state

__all__ = [
    "CLOSE_SAMPLES",
    "Y_SAMPLES",
    "OpenLane3DCategoryAccuracy",
    "OpenLane3DFScore",
    "OpenLane3DMetrics",
    "OpenLane3DPrecision",
    "OpenLane3DRecall",
    "OpenLane3DXErrorClose",
    "OpenLane3DXErrorFar",
    "OpenLane3DZErrorClose",
    "OpenLane3DZErrorFar",
    "openlane3d_gt_to_ground",
    "openlane3d_matches",
    "openlane3d_pair_matrices",
    "openlane3d_resample",
    "openlane3d_scores",
]

#: The y samples of the evaluator, metres: 3, 4, ..., 102.
Y_SAMPLES = tuple(float(y) for y in range(3, 103))
#: Samples with y <= 40 m count as close (the first 38), the others as far.
CLOSE_SAMPLES = 38
X_RANGE = 10.0
Y_FIRST_MAX, Y_LAST_MIN = 102.0, 3.0  # a lane is kept when its first point is before 102 m and its last after 3 m
Y_POINT_RANGE = (0.0, 200.0)
DIST_THRESHOLD = 1.5
RATIO_THRESHOLD = 0.75
COST_GATE = DIST_THRESHOLD * len(Y_SAMPLES)  # 150
LEFT_CURB, RIGHT_CURB = 20, 21
#: Names of the four errors, in the order of the ``errors`` arrays.
ERROR_NAMES = ("x_error_close", "x_error_far", "z_error_close", "z_error_far")
#: The default mode's fixes of ``eval_3D_lane.py`` (the module doc); ``compat="reference"`` applies none.
DEFAULT_FIXES = frozenset({"curb", "float_cost", "gate_first", "dont_care", "order_free"})
COUNT_NAMES = ("n_recall_hits", "n_precision_hits", "n_category_correct", "n_gt", "n_pred", "n_matched")


def openlane3d_gt_to_ground(points: Tensor, extrinsic: Tensor, *, validate_args: bool = True) -> Tensor:
    """OpenLane annotations (Waymo camera frame: x front, y left, z up) in the evaluator's ground frame.

    As ``eval_3D_lane.py`` (lines 306-346): ``w = R @ p`` with ``R = extrinsic[:3, :3]``, then
    ``(-w_y, w_x, w_z + extrinsic[2, 3])``: the camera's x / y offset is dropped, its height kept.

    Args:
        points: ``(B, L, N, 3)`` points in the camera frame, metres.
        extrinsic: ``(B, 4, 4)`` camera-to-vehicle transforms.
        validate_args: check the inputs' values (reads back from the device); ``False`` skips those checks.

    Returns:
        ``(B, L, N, 3)`` ground-frame points (x right, y forward, z up), dtype of ``points``.

    Examples:
        >>> import torch
        >>> extrinsic = torch.eye(4, dtype=torch.float64)
        >>> extrinsic[:3, 3] = torch.tensor([1.5, 0.2, 2.0])  # 1.5 m ahead, 0.2 m left, 2 m high
        >>> points = torch.tensor([[[[10.0, 1.0, -2.0]]]], dtype=torch.float64)  # 10 m ahead, 1 m left
        >>> openlane3d_gt_to_ground(points, extrinsic[None]).tolist()
        [[[[-1.0, 10.0, 0.0]]]]
    """
    rotation = extrinsic[:, None, :3, :3].to(points.dtype)
    world = torch.einsum("blij,blnj->blni", rotation, points)
    height = extrinsic[:, 2, 3].to(points.dtype)[:, None, None]
    return torch.stack([-world[..., 1], world[..., 0], world[..., 2] + height], -1)


def _point_mask(points: Tensor, lengths: Tensor | None, visibility: Tensor | None) -> Tensor:
    n = points.shape[-2]
    mask = torch.ones(points.shape[:-1], dtype=torch.bool, device=points.device)
    if lengths is not None:
        mask = torch.arange(n, device=points.device) < lengths.to(points.device)[..., None]
    if visibility is not None:
        mask = mask & (visibility.to(points.device) > 0)
    return mask


def openlane3d_resample(
    points: Tensor,
    lengths: Tensor | None = None,
    visibility: Tensor | None = None,
    order_free: bool = False,
    *,
    validate_args: bool = True,
) -> dict[str, Tensor]:
    """Filter lanes as the evaluator does and resample them at :data:`Y_SAMPLES`.

    Args:
        points: ``(B, L, N, 3)`` ground-frame lanes, metres, points in file order.
        lengths: ``(B, L)`` valid points per lane (default: all ``N``); 0 marks an absent lane.
        visibility: ``(B, L, N)`` point visibility (GT); points with visibility <= 0 are dropped first.
        order_free: the range check reads the lane's lowest and highest y (the default mode) instead of its first
            and last point in file order (the tool, which drops a lane listed far to near).
        validate_args: check the inputs' values (reads back from the device); ``False`` skips those checks.

    Returns:
        ``x``, ``z``: ``(B, L, 100)`` float64 resampled values; ``visible``: ``(B, L, 100)`` bool (False for
        dropped lanes); ``kept``: ``(B, L)`` bool, the lanes that are evaluated.

    Examples:
        >>> import torch
        >>> lane = torch.tensor([[[[0.5, 2.0, 0.0], [1.5, 12.0, 1.0]]]])  # (B, L, N, 3) = (1, 1, 2, 3)
        >>> out = openlane3d_resample(lane)
        >>> out["kept"].tolist(), int(out["visible"].sum()), round(out["x"][0, 0, 3].item(), 2)
        ([[True]], 10, 0.9)
    """
    if points.ndim != 4 or points.shape[-1] != 3:
        raise ValueError(f"`points` must be (B, L, N, 3), got {tuple(points.shape)}")
    device = points.device
    pts = points.to(torch.float64)
    mask = _point_mask(pts, lengths, visibility)
    x, y, z = pts.unbind(-1)
    num = pts.shape[-2]
    # first / last point check on the points left after the visibility pruning, in file order
    has = mask.any(-1)
    first = mask.to(torch.int8).argmax(-1)
    last = num - 1 - mask.flip(-1).to(torch.int8).argmax(-1)
    y_first = y.gather(-1, first[..., None])[..., 0]
    y_last = y.gather(-1, last[..., None])[..., 0]
    if order_free:
        y_first = torch.where(mask, y, torch.inf).amin(-1)
        y_last = torch.where(mask, y, -torch.inf).amax(-1)
    lane_ok = has & (mask.sum(-1) >= 2) & (y_first < Y_FIRST_MAX) & (y_last > Y_LAST_MIN)
    mask = mask & lane_ok[..., None] & (y > Y_POINT_RANGE[0]) & (y < Y_POINT_RANGE[1]) & (x > -X_RANGE) & (x < X_RANGE)
    count = mask.sum(-1)
    lane_ok = lane_ok & (count >= 2)
    # points sorted by y (stable, as interp1d's mergesort), padding last
    y_key = torch.where(mask, y, torch.inf)
    y_sorted, order = torch.sort(y_key, dim=-1, stable=True)
    x_sorted, z_sorted = x.gather(-1, order), z.gather(-1, order)
    samples = torch.tensor(Y_SAMPLES, dtype=torch.float64, device=device)
    queries = samples.expand(*y_sorted.shape[:-1], len(Y_SAMPLES)).contiguous()
    hi = torch.searchsorted(y_sorted.contiguous(), queries, side="left")
    top = (count - 1).clamp(min=1)[..., None]
    hi = torch.minimum(hi.clamp(min=1), top)
    lo = hi - 1
    y_lo, y_hi = y_sorted.gather(-1, lo), y_sorted.gather(-1, hi)
    finite = torch.isfinite(y_hi)
    y_hi = torch.where(finite, y_hi, y_lo + 1.0)  # dropped lanes only

    def interp(values: Tensor) -> Tensor:
        v_lo, v_hi = values.gather(-1, lo), values.gather(-1, hi)
        slope = (v_hi - v_lo) / (y_hi - y_lo)
        return slope * (queries - y_lo) + v_lo

    x_s, z_s = interp(x_sorted), interp(z_sorted)
    y_min = y_sorted[..., :1]
    y_max = y_sorted.gather(-1, (count - 1).clamp(min=0)[..., None])
    visible = (x_s >= -X_RANGE) & (x_s <= X_RANGE) & (queries >= y_min) & (queries <= y_max) & lane_ok[..., None]
    kept = lane_ok & (visible.sum(-1) >= 2)
    visible = visible & kept[..., None]
    return {"x": x_s, "z": z_s, "visible": visible, "kept": kept}


def openlane3d_pair_matrices(
    target: dict[str, Tensor],
    preds: dict[str, Tensor],
    compat: Compat = "default",
    preds_care: Tensor | None = None,
    *,
    validate_args: bool = True,
) -> dict[str, Tensor]:
    """Cost, matched samples and errors of every GT x prediction pair of a batch.

    Args:
        target, preds: outputs of :func:`openlane3d_resample`, ``(B, G, 100)`` and ``(B, P, 100)``.
        compat: ``"reference"``: the cost is an int (``1`` when in (0, 1), else truncated), as the tool's
            min-cost flow needs; ``"default"``: the float sum.
        preds_care: ``(B, P, 100)`` or ``(B, G, P, 100)`` bool, the predicted samples that count in each pair
            (default: the visible ones); the default mode's "don't care" rule, see :func:`openlane3d_matches`.
        validate_args: check the inputs' values (reads back from the device); ``False`` skips those checks.

    Returns:
        ``cost`` ``(B, G, P)`` float64; ``num_match`` ``(B, G, P)`` long (both visible and closer than 1.5 m);
        ``errors`` ``(B, G, P, 4)`` float64: mean |dx| close, far, mean |dz| close, far over the samples where
        both are visible, ``-1`` where there are none (``"reference"``: NaN when a lane has a non-finite resampled
        value at a sample it does not show, as the tool).

    Examples:
        >>> import torch
        >>> gt = openlane3d_resample(torch.tensor([[[[0.0, 3.0, 0.0], [0.0, 52.0, 0.0]]]]))
        >>> pred = openlane3d_resample(torch.tensor([[[[0.3, 3.0, 0.0], [0.3, 52.0, 0.0]]]]))
        >>> out = openlane3d_pair_matrices(gt, pred)
        >>> errors = [round(e, 2) for e in out["errors"][0, 0, 0].tolist()]
        >>> round(out["cost"].item(), 2), out["num_match"].item(), errors
        (15.0, 50, [0.3, 0.3, 0.0, 0.0])
    """
    reference = check_compat(compat)
    gv = target["visible"][:, :, None]
    pv = preds["visible"][:, None] if preds_care is None else preds_care
    pv = pv[:, None] if pv.ndim == 3 else pv
    dx = (target["x"][:, :, None] - preds["x"][:, None]).abs()
    dz = (target["z"][:, :, None] - preds["z"][:, None]).abs()
    both = gv & pv
    one_sided = (gv ^ pv).sum(-1)
    dist = torch.sqrt(dx * dx + dz * dz)
    cost = torch.where(both, dist, 0.0).sum(-1) + DIST_THRESHOLD * one_sided  # 0 where neither is visible
    if reference:
        cost = torch.where((cost > 0) & (cost < 1), torch.ones_like(cost), torch.floor(cost))
    num_match = (both & (dist < DIST_THRESHOLD)).sum(-1)
    errors = []
    counts = [both[..., :CLOSE_SAMPLES].sum(-1), both[..., CLOSE_SAMPLES:].sum(-1)]
    for values in (dx, dz):
        # the tool multiplies by the mask: a non-finite value at a sample either lane does not show (a lane with
        # repeated y resamples to NaN / inf beyond its ends) makes the error NaN, and the pooled means skip it
        values = values * both if reference else torch.where(both, values, 0.0)
        for n, part in zip(counts, (values[..., :CLOSE_SAMPLES], values[..., CLOSE_SAMPLES:]), strict=True):
            errors.append(torch.where(n > 0, part.sum(-1) / n.clamp(min=1), -1.0))
    x_close, x_far, z_close, z_far = errors
    return {"cost": cost, "num_match": num_match, "errors": torch.stack([x_close, x_far, z_close, z_far], -1)}


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


def _near(target: dict[str, Tensor], preds: dict[str, Tensor]) -> Tensor:
    """``(B, G, P, 100)``: whether predicted and GT samples lie within 1.5 m of each other (x / z)."""
    dx = target["x"][:, :, None] - preds["x"][:, None]
    dz = target["z"][:, :, None] - preds["z"][:, None]
    return torch.sqrt(dx**2 + dz**2) < DIST_THRESHOLD


def _category_correct(pred: Tensor, gt: Tensor, reference: bool) -> Tensor:
    curbs = ((pred == LEFT_CURB) & (gt == RIGHT_CURB)) if reference else ((pred == LEFT_CURB) | (pred == RIGHT_CURB))
    curbs = curbs & ((gt == LEFT_CURB) | (gt == RIGHT_CURB))
    return (pred == gt) | curbs


def openlane3d_matches(
    preds: Tensor,
    preds_category: Tensor,
    target: Tensor,
    target_category: Tensor,
    preds_lengths: Tensor | None = None,
    target_lengths: Tensor | None = None,
    target_visibility: Tensor | None = None,
    compat: Compat = "default",
    *,
    validate_args: bool = True,
) -> dict[str, Tensor]:
    """Per-frame OpenLane counts and error sums of a batch, and the counted pairs.

    Args:
        preds: ``(B, P, N, 3)`` predicted lanes in the ground frame, metres (x right, y forward, z up).
        preds_category: ``(B, P)`` int categories (OpenLane 0-12, 20 left curb, 21 right curb).
        target: ``(B, G, M, 3)`` GT lanes in the ground frame (:func:`openlane3d_gt_to_ground`).
        target_category: ``(B, G)`` int categories.
        preds_lengths, target_lengths: ``(B, P)`` / ``(B, G)`` valid points per lane (default: all).
        target_visibility: ``(B, G, M)`` GT point visibility (default: all visible).
        compat: ``"default"`` (the library's fixes, module doc) or ``"reference"`` (``eval_3D_lane.py``).
        validate_args: check the inputs' values (reads back from the device); ``False`` skips those checks.

    Returns:
        ``counts``: ``(B, 6)`` long, per frame: recall hits, precision hits, correct categories, GT lanes,
        predicted lanes, counted pairs (:data:`COUNT_NAMES`); ``error_sums`` ``(B, 4)`` float64 and
        ``error_counts`` ``(B, 4)`` long over the counted pairs that have samples in the range
        (:data:`ERROR_NAMES`); ``pairs``: ``(K, 3)`` long rows ``(frame, gt lane, pred lane)`` of the counted
        pairs, lane indices in the input; ``pair_errors``: ``(K, 4)`` float64, ``-1`` where a pair has no sample.

    Examples:
        >>> import torch
        >>> lane = torch.tensor([[[[0.0, 3.0, 0.0], [0.0, 52.0, 0.0]]]])  # (B, L, N, 3) = (1, 1, 2, 3)
        >>> out = openlane3d_matches(lane + 0.2, torch.tensor([[1]]), lane, torch.tensor([[1]]))
        >>> out["counts"].tolist()
        [[1, 1, 1, 1, 1, 1]]
    """
    return _matches(
        preds,
        preds_category,
        target,
        target_category,
        preds_lengths,
        target_lengths,
        target_visibility,
        frozenset() if check_compat(compat) else DEFAULT_FIXES,
    )


def _matches(
    preds: Tensor,
    preds_category: Tensor,
    target: Tensor,
    target_category: Tensor,
    preds_lengths: Tensor | None,
    target_lengths: Tensor | None,
    target_visibility: Tensor | None,
    fixes: frozenset[str],
) -> dict[str, Tensor]:
    """:func:`openlane3d_matches` with a chosen set of the default mode's fixes (:data:`DEFAULT_FIXES`)."""
    unknown = fixes - DEFAULT_FIXES
    if unknown:
        raise ValueError(f"unknown fixes {sorted(unknown)}; known: {sorted(DEFAULT_FIXES)}")

    device = target.device
    order_free = "order_free" in fixes
    gt = openlane3d_resample(target, target_lengths, target_visibility, order_free)
    pr = openlane3d_resample(preds, preds_lengths, order_free=order_free)
    care = None
    if "dont_care" in fixes and target_visibility is not None:
        # a predicted sample within 1.5 m of an annotated but invisible GT stretch counts neither as a hit nor as a
        # miss, unless it lies within 1.5 m of a visible sample of the GT lane it is paired with; a predicted lane
        # with fewer than 2 samples away from invisible stretches is not counted
        full = openlane3d_resample(target, target_lengths, order_free=order_free)
        ignored = full["visible"] & ~gt["visible"]
        near_ignored = (ignored[:, :, None] & _near(full, pr)).any(1)
        near_own = gt["visible"][:, :, None] & _near(gt, pr)
        kept = pr["kept"] & ((pr["visible"] & ~near_ignored).sum(-1) >= 2)
        pr = {**pr, "kept": kept, "visible": pr["visible"] & kept[..., None]}
        care = pr["visible"][:, None] & ~(near_ignored[:, None] & ~near_own)
    pair = openlane3d_pair_matrices(gt, pr, "default" if "float_cost" in fixes else "reference", care)
    gt_n = gt["visible"].sum(-1)
    pr_n = (pr["visible"][:, None] if care is None else care).sum(-1)  # (B, 1 or G, P)
    batch = target.shape[0]
    gate_ok = pair["cost"] < COST_GATE
    valid = gt["kept"][:, :, None] & pr["kept"][:, None]
    cost_np = pair["cost"].cpu().numpy()
    valid_np = valid.cpu().numpy()
    gate_np = gate_ok.cpu().numpy()
    rows: list[list[int]] = []
    for b in range(batch):
        g_idx = np.flatnonzero(valid_np[b].any(1) if valid_np[b].size else np.zeros(0, bool))
        p_idx = np.flatnonzero(valid_np[b].any(0) if valid_np[b].size else np.zeros(0, bool))
        if g_idx.size == 0 or p_idx.size == 0:
            continue
        sub = cost_np[b][np.ix_(g_idx, p_idx)]
        allowed = gate_np[b][np.ix_(g_idx, p_idx)] if "gate_first" in fixes else None
        r, c = _assign(sub, allowed)
        rows.extend([b, int(g_idx[i]), int(p_idx[j])] for i, j in zip(r, c, strict=True))
    pairs = torch.tensor(rows, dtype=torch.long, device=device).reshape(-1, 3)
    fb, gi, pj = pairs.unbind(-1)
    counted = gate_ok[fb, gi, pj]
    pairs = pairs[counted]
    fb, gi, pj = pairs.unbind(-1)
    matched = pair["num_match"][fb, gi, pj]
    recall_hit = matched >= RATIO_THRESHOLD * gt_n[fb, gi]
    precision_hit = matched >= RATIO_THRESHOLD * pr_n[fb, gi if care is not None else 0, pj]
    category_ok = _category_correct(
        preds_category.to(device)[fb, pj].long(), target_category.to(device)[fb, gi].long(), "curb" not in fixes
    )
    pair_errors = pair["errors"][fb, gi, pj]
    counts = torch.zeros(batch, 6, dtype=torch.long, device=device)
    counts[:, 0].index_add_(0, fb, recall_hit.long())
    counts[:, 1].index_add_(0, fb, precision_hit.long())
    counts[:, 2].index_add_(0, fb, category_ok.long())
    counts[:, 3] = gt["kept"].sum(-1)
    counts[:, 4] = pr["kept"].sum(-1)
    counts[:, 5].index_add_(0, fb, torch.ones_like(fb))
    has_error = pair_errors > -1 + 1e-6
    error_sums = torch.zeros(batch, 4, dtype=torch.float64, device=device)
    error_sums.index_add_(0, fb, torch.where(has_error, pair_errors, 0.0))
    error_counts = torch.zeros(batch, 4, dtype=torch.long, device=device)
    error_counts.index_add_(0, fb, has_error.long())
    return {
        "counts": counts,
        "error_sums": error_sums,
        "error_counts": error_counts,
        "pairs": pairs,
        "pair_errors": pair_errors,
    }


def _ratio(num: Tensor, den: Tensor) -> Tensor:
    num, den = num.to(torch.float64), den.to(torch.float64)
    return torch.where(den != 0, num / torch.where(den != 0, den, 1.0), 0.0)


def openlane3d_scores(
    counts: Tensor, error_sums: Tensor, error_counts: Tensor, *, validate_args: bool = True
) -> dict[str, Tensor]:
    """Pooled scores from summed counts, as ``bench_one_submit``: 0 for a ratio without denominator, NaN for an
    error without any value.

    Args:
        counts: ``(..., 6)`` counts of :func:`openlane3d_matches` (summed over frames when 2-D).
        error_sums, error_counts: ``(..., 4)``.
        validate_args: check the inputs' values (reads back from the device); ``False`` skips those checks.

    Returns:
        ``f_score``, ``recall``, ``precision``, ``category_accuracy``, the four errors (0-d float64) and the six
        counts (0-d long).

    Examples:
        >>> import torch
        >>> counts = torch.tensor([3, 2, 2, 4, 2, 3])  # recall hits, precision hits, correct, GT, pred, pairs
        >>> out = openlane3d_scores(counts, torch.tensor([0.3, 0.6, 0.1, 0.2]), torch.tensor([3, 2, 3, 2]))
        >>> round(out["f_score"].item(), 4), round(out["x_error_close"].item(), 4)
        (0.8571, 0.1)
    """
    counts = counts.reshape(-1, 6).sum(0)
    error_sums = error_sums.reshape(-1, 4).to(torch.float64).sum(0)
    error_counts = error_counts.reshape(-1, 4).sum(0)
    recall = _ratio(counts[0], counts[3])
    precision = _ratio(counts[1], counts[4])
    out = {
        "f_score": _ratio(2 * recall * precision, recall + precision),
        "recall": recall,
        "precision": precision,
        "category_accuracy": _ratio(counts[2], counts[5]),
    }
    means = error_sums / error_counts.to(torch.float64)  # 0 / 0 = NaN: no value, as np.average of nothing
    for i, name in enumerate(ERROR_NAMES):
        out[name] = means[i]
    for i, name in enumerate(COUNT_NAMES):
        out[name] = counts[i]
    return out


# ---------------------------------------------------------------------------------------------------------------
# Metric family


class OpenLane3DMetrics(MetricFamily):
    """OpenLane 3D lane scores accumulated over batches: sum-reduced counts and error sums.

    ``update(preds, preds_category, target, target_category, preds_lengths=None, target_lengths=None,
    target_visibility=None)`` as :func:`openlane3d_matches` (ground-frame lanes, metres); ``compute()`` returns
    the dict of :func:`openlane3d_scores` (F-score, recall, precision, category accuracy, four errors, six counts).

    Args:
        compat: ``"default"`` (documented fixes) or ``"reference"`` (``eval_3D_lane.py``).
        kwargs: torchmetrics ``Metric`` keyword arguments.
        validate_args: check the inputs' values (reads back from the device); ``False`` skips those checks.

    Examples:
        >>> import torch
        >>> lane = torch.tensor([[[[0.0, 3.0, 0.0], [0.0, 52.0, 0.0]]]])  # (B, L, N, 3), metres
        >>> preds = torch.cat([lane + 0.2, lane + torch.tensor([5.0, 0.0, 0.0])], 1)  # the lane and a false one
        >>> metric = OpenLane3DMetrics()
        >>> metric.update(preds, torch.tensor([[1, 1]]), lane, torch.tensor([[1]]))
        >>> out = metric.compute()
        >>> round(out["f_score"].item(), 4), out["n_pred"].item()
        (0.6667, 2)
    """

    is_differentiable = False
    higher_is_better = True
    full_state_update = False
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0

    counts: Tensor
    error_sums: Tensor
    error_counts: Tensor

    def __init__(self, compat: Compat = "default", validate_args: bool = True, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.validate_args = bool(validate_args)
        check_compat(compat)
        self.compat = compat
        self.add_state("counts", torch.zeros(6, dtype=torch.long), dist_reduce_fx="sum")
        self.add_state("error_sums", torch.zeros(4, dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("error_counts", torch.zeros(4, dtype=torch.long), dist_reduce_fx="sum")
        add_config_state(self, ("OpenLane3D", compat))

    def update(
        self,
        preds: Tensor,
        preds_category: Tensor,
        target: Tensor,
        target_category: Tensor,
        preds_lengths: Tensor | None = None,
        target_lengths: Tensor | None = None,
        target_visibility: Tensor | None = None,
    ) -> None:
        """Add a batch (shapes as in :func:`openlane3d_matches`)."""
        out = openlane3d_matches(
            preds,
            preds_category,
            target,
            target_category,
            preds_lengths,
            target_lengths,
            target_visibility,
            self.compat,
            validate_args=self.validate_args,
        )
        # out of place: under ddp_spawn the states may share memory with other processes
        self.counts = self.counts + out["counts"].sum(0).to(self.counts.device)
        self.error_sums = self.error_sums + out["error_sums"].sum(0).to(self.error_sums.device)
        self.error_counts = self.error_counts + out["error_counts"].sum(0).to(self.error_counts.device)

    def compute(self) -> dict[str, Tensor]:
        """The scores and counts of :func:`openlane3d_scores` from the accumulated totals."""
        return openlane3d_scores(self.counts, self.error_sums, self.error_counts)


# Scalar classes for ``self.log``: they share OpenLane3DMetrics' states, so a MetricCollection of them counts once.


class OpenLane3DFScore(ScalarMetric, OpenLane3DMetrics):
    """OpenLane F-score ``2PR / (P + R)`` over all frames seen (arguments as :class:`OpenLane3DMetrics`).

    Examples:
        >>> import torch
        >>> lane = torch.tensor([[[[0.0, 3.0, 0.0], [0.0, 52.0, 0.0]]]])
        >>> metric = OpenLane3DFScore()
        >>> metric.update(lane, torch.tensor([[1]]), lane, torch.tensor([[1]]))
        >>> metric.compute().item()
        1.0
    """

    key = "f_score"


class OpenLane3DRecall(ScalarMetric, OpenLane3DMetrics):
    """OpenLane recall: GT lanes with 75 % of their samples matched / GT lanes.

    Arguments as :class:`OpenLane3DMetrics`.

    Examples:
        >>> import torch
        >>> lane = torch.tensor([[[[0.0, 3.0, 0.0], [0.0, 52.0, 0.0]]]])
        >>> metric = OpenLane3DRecall()
        >>> metric.update(lane[:, :0], torch.zeros(1, 0), lane, torch.tensor([[1]]))  # no prediction
        >>> metric.compute().item()
        0.0
    """

    key = "recall"


class OpenLane3DPrecision(ScalarMetric, OpenLane3DMetrics):
    """OpenLane precision: predicted lanes with 75 % of their samples matched / predicted lanes.

    Arguments as :class:`OpenLane3DMetrics`.

    Examples:
        >>> import torch
        >>> lane = torch.tensor([[[[0.0, 3.0, 0.0], [0.0, 52.0, 0.0]]]])
        >>> metric = OpenLane3DPrecision()
        >>> metric.update(lane + 0.2, torch.tensor([[1]]), lane, torch.tensor([[1]]))
        >>> metric.compute().item()
        1.0
    """

    key = "precision"


class OpenLane3DCategoryAccuracy(ScalarMetric, OpenLane3DMetrics):
    """OpenLane category accuracy over the counted pairs (arguments as :class:`OpenLane3DMetrics`).

    Examples:
        >>> import torch
        >>> lane = torch.tensor([[[[0.0, 3.0, 0.0], [0.0, 52.0, 0.0]]]])
        >>> metric = OpenLane3DCategoryAccuracy()
        >>> metric.update(lane, torch.tensor([[2]]), lane, torch.tensor([[1]]))
        >>> metric.compute().item()
        0.0
    """

    key = "category_accuracy"


class _OpenLane3DMeanMetres(ScalarMetric, OpenLane3DMetrics):
    """A mean error of the counted pairs, metres: lower is better, no upper bound on its plot."""

    higher_is_better = False
    plot_upper_bound = None


class OpenLane3DXErrorClose(_OpenLane3DMeanMetres):
    """Mean lateral error of the counted pairs, y <= 40 m, metres (arguments as :class:`OpenLane3DMetrics`).

    Examples:
        >>> import torch
        >>> lane = torch.tensor([[[[0.0, 3.0, 0.0], [0.0, 52.0, 0.0]]]])
        >>> metric = OpenLane3DXErrorClose()
        >>> metric.update(lane + torch.tensor([0.25, 0.0, 0.0]), torch.tensor([[1]]), lane, torch.tensor([[1]]))
        >>> metric.compute().item()
        0.25
    """

    key = "x_error_close"


class OpenLane3DXErrorFar(_OpenLane3DMeanMetres):
    """Mean lateral error of the counted pairs, y > 40 m, metres (arguments as :class:`OpenLane3DMetrics`).

    Examples:
        >>> import torch
        >>> lane = torch.tensor([[[[0.0, 3.0, 0.0], [0.0, 52.0, 0.0]]]])
        >>> metric = OpenLane3DXErrorFar()
        >>> metric.update(lane + torch.tensor([0.5, 0.0, 0.0]), torch.tensor([[1]]), lane, torch.tensor([[1]]))
        >>> metric.compute().item()
        0.5
    """

    key = "x_error_far"


class OpenLane3DZErrorClose(_OpenLane3DMeanMetres):
    """Mean height error of the counted pairs, y <= 40 m, metres (arguments as :class:`OpenLane3DMetrics`).

    Examples:
        >>> import torch
        >>> lane = torch.tensor([[[[0.0, 3.0, 0.0], [0.0, 52.0, 0.0]]]])
        >>> metric = OpenLane3DZErrorClose()
        >>> metric.update(lane + torch.tensor([0.0, 0.0, 0.25]), torch.tensor([[1]]), lane, torch.tensor([[1]]))
        >>> metric.compute().item()
        0.25
    """

    key = "z_error_close"


class OpenLane3DZErrorFar(_OpenLane3DMeanMetres):
    """Mean height error of the counted pairs, y > 40 m, metres (arguments as :class:`OpenLane3DMetrics`).

    Examples:
        >>> import torch
        >>> lane = torch.tensor([[[[0.0, 3.0, 0.0], [0.0, 52.0, 0.0]]]])
        >>> metric = OpenLane3DZErrorFar()
        >>> metric.update(lane + torch.tensor([0.0, 0.0, 0.5]), torch.tensor([[1]]), lane, torch.tensor([[1]]))
        >>> metric.compute().item()
        0.5
    """

    key = "z_error_far"
