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

from collections.abc import Collection, Mapping
from typing import Any, NamedTuple

import numpy as np
import torch
from torch import Tensor

from drivemetrics._internal import arrays
from drivemetrics._internal.compat import Compat, check_compat
from drivemetrics._internal.metric import MetricFamily, ScalarMetric, add_config_state

__all__ = [
    "CLOSE_SAMPLES",
    "DEFAULT_FIXES",
    "Y_SAMPLES",
    "OpenLane3DCategoryAccuracy",
    "OpenLane3DFScore",
    "OpenLane3DLanes",
    "OpenLane3DMetrics",
    "OpenLane3DPrecision",
    "OpenLane3DRecall",
    "OpenLane3DXErrorClose",
    "OpenLane3DXErrorFar",
    "OpenLane3DZErrorClose",
    "OpenLane3DZErrorFar",
    "openlane3d_gt_to_ground",
    "openlane3d_lane_matches",
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


def openlane3d_resample(
    points: Tensor,
    lengths: Tensor | None = None,
    visibility: Tensor | None = None,
    *,
    order_free: bool = False,
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
        ``x``, ``z``: ``(B, L, 100)`` float64 resampled values (0 for dropped lanes); ``visible``: ``(B, L, 100)``
        bool (False for dropped lanes); ``kept``: ``(B, L)`` bool, the lanes that are evaluated.

    Examples:
        >>> import torch
        >>> lane = torch.tensor([[[[0.5, 2.0, 0.0], [1.5, 12.0, 1.0]]]])  # (B, L, N, 3) = (1, 1, 2, 3)
        >>> out = openlane3d_resample(lane)
        >>> out["kept"].tolist(), int(out["visible"].sum()), round(out["x"][0, 0, 3].item(), 2)
        ([[True]], 10, 0.9)
    """
    if points.ndim != 4 or points.shape[-1] != 3:
        raise ValueError(f"`points` must be (B, L, N, 3), got {tuple(points.shape)}")
    batch, lanes = points.shape[:2]
    packed = _lanes_from_padded(points, lengths, torch.zeros(batch, lanes, dtype=torch.long), visibility)
    flat = _resample_lanes(packed, True, order_free)
    samples = len(Y_SAMPLES)
    out = {
        "x": points.new_zeros(batch, lanes, samples, dtype=torch.float64),
        "z": points.new_zeros(batch, lanes, samples, dtype=torch.float64),
        "visible": points.new_zeros(batch, lanes, samples, dtype=torch.bool),
        "kept": points.new_zeros(batch, lanes, dtype=torch.bool),
    }
    kept = flat["kept"]
    for key in ("x", "z"):
        out[key][packed.frame, packed.index] = torch.where(kept[:, None], flat[key], 0.0)
    out["visible"][packed.frame, packed.index] = flat["visible"]
    out["kept"][packed.frame, packed.index] = kept
    return out


def openlane3d_pair_matrices(
    preds: dict[str, Tensor],
    target: dict[str, Tensor],
    *,
    compat: Compat = "default",
    preds_care: Tensor | None = None,
    validate_args: bool = True,
) -> dict[str, Tensor]:
    """Cost, matched samples and errors of every GT x prediction pair of a batch.

    Args:
        preds, target: outputs of :func:`openlane3d_resample`, ``(B, P, 100)`` and ``(B, G, 100)``.
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
        >>> out = openlane3d_pair_matrices(pred, gt)
        >>> errors = [round(e, 2) for e in out["errors"][0, 0, 0].tolist()]
        >>> round(out["cost"].item(), 2), out["num_match"].item(), errors
        (15.0, 50, [0.3, 0.3, 0.0, 0.0])
    """
    reference = check_compat(compat)
    terms = _pair_terms(target, preds, preds_care)
    cost = _pair_cost(terms, reference)
    num_match, errors = _pair_details(terms, reference)
    return {"cost": cost, "num_match": num_match, "errors": errors}


class _PairTerms(NamedTuple):
    """Per-sample terms of GT x prediction pairs: visibility of each side, both, signed x / z differences and the
    point distance, ``(..., 100)``."""

    gt_visible: Tensor
    pred_visible: Tensor
    both: Tensor
    dx: Tensor
    dz: Tensor
    dist: Tensor


def _pair_terms(target: dict[str, Tensor], preds: dict[str, Tensor], preds_care: Tensor | None) -> _PairTerms:
    gv = target["visible"][:, :, None]
    pv = preds["visible"][:, None] if preds_care is None else preds_care
    pv = pv[:, None] if pv.ndim == 3 else pv
    dx = target["x"][:, :, None] - preds["x"][:, None]
    dz = target["z"][:, :, None] - preds["z"][:, None]
    return _PairTerms(gv, pv, gv & pv, dx, dz, torch.sqrt(dx * dx + dz * dz))


def _pair_cost(terms: _PairTerms, reference: bool) -> Tensor:
    """The pair cost: the distance summed over the samples both lanes show, 1.5 m per sample only one shows."""
    both = terms.both
    one_sided = terms.gt_visible.sum(-1) + terms.pred_visible.sum(-1) - 2 * both.sum(-1)
    cost = torch.where(both, terms.dist, 0.0).sum(-1) + DIST_THRESHOLD * one_sided  # 0 where neither is visible
    if reference:
        cost = torch.where((cost > 0) & (cost < 1), torch.ones_like(cost), torch.floor(cost))
    return cost


#: Pairs costed together by :func:`_flat_pair_cost`: their ``(K, 100)`` float64 terms stay in the CPU's cache.
PAIR_CHUNK = 1024


def _flat_pair_cost(
    target: dict[str, Tensor], preds: dict[str, Tensor], gt: Tensor, pred: Tensor, care: Tensor | None, reference: bool
) -> Tensor:
    """:func:`_pair_cost` of the pairs ``(gt[k], pred[k])`` of resampled lanes ``(M, 100)``, ``(K,)`` float64.

    The same operations value for value (so the same bits), in chunks of :data:`PAIR_CHUNK` pairs, in place, with
    each lane's visible samples counted once instead of once per pair. ``care``: ``(K, 100)`` predicted samples that
    count (default: the visible ones)."""
    gt_count = target["visible"].sum(-1, dtype=torch.int32)  # (a sum of bools as int64 is several times slower)
    pred_count = preds["visible"].sum(-1, dtype=torch.int32) if care is None else None
    cost = torch.empty(gt.shape[0], dtype=torch.float64, device=gt.device)
    for start in range(0, gt.shape[0], PAIR_CHUNK):
        gi, pj = gt[start : start + PAIR_CHUNK], pred[start : start + PAIR_CHUNK]
        pv = preds["visible"].index_select(0, pj) if care is None else care[start : start + PAIR_CHUNK]
        both = target["visible"].index_select(0, gi).logical_and_(pv)
        dx = target["x"].index_select(0, gi).sub_(preds["x"].index_select(0, pj))
        dz = target["z"].index_select(0, gi).sub_(preds["z"].index_select(0, pj))
        dist = _sqrt_(dx.mul_(dx).add_(dz.mul_(dz))).masked_fill_(~both, 0.0)
        n_both = both.sum(-1, dtype=torch.int32)
        n_pred = pred_count.index_select(0, pj) if care is None else pv.sum(-1, dtype=torch.int32)
        one_sided = gt_count.index_select(0, gi) + n_pred - 2 * n_both
        cost[start : start + PAIR_CHUNK] = dist.sum(-1) + DIST_THRESHOLD * one_sided
    if reference:
        cost = torch.where((cost > 0) & (cost < 1), torch.ones_like(cost), torch.floor(cost))
    return cost


def _sqrt_(values: Tensor) -> Tensor:
    """In-place correctly rounded square root (numpy's on the CPU, as the tool: torch's vectorised one can be 1 ulp
    off, see :func:`drivemetrics._internal.arrays.sqrt`, and is slower)."""
    if values.device.type == "cpu" and not values.requires_grad:
        np.sqrt(values.numpy(), out=values.numpy())
        return values
    return values.sqrt_()


def _pair_details(terms: _PairTerms, reference: bool) -> tuple[Tensor, Tensor]:
    """Matched samples (both visible, closer than 1.5 m) and the four mean errors of pairs, ``-1`` without samples."""
    both = terms.both
    num_match = (both & (terms.dist < DIST_THRESHOLD)).sum(-1)
    errors = []
    close = both[..., :CLOSE_SAMPLES].sum(-1)
    counts = [close, both.sum(-1) - close]
    for values in (terms.dx.abs(), terms.dz.abs()):
        # the tool multiplies by the mask: a non-finite value at a sample either lane does not show (a lane with
        # repeated y resamples to NaN / inf beyond its ends) makes the error NaN, and the pooled means skip it
        values = values * both if reference else torch.where(both, values, 0.0)
        for n, part in zip(counts, (values[..., :CLOSE_SAMPLES], values[..., CLOSE_SAMPLES:]), strict=True):
            errors.append(torch.where(n > 0, part.sum(-1) / n.clamp(min=1), -1.0))
    return num_match, torch.stack(errors, -1)


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


class OpenLane3DLanes(NamedTuple):
    """The lanes of a batch of frames, lane after lane, without padding (what the file evaluation packs).

    ``points`` ``(T, 3)`` float64 ground-frame points of all lanes, lane after lane, metres; ``lengths`` ``(M,)``
    long points per lane (> 0); ``frame`` ``(M,)`` long, the frame of each lane (non-decreasing); ``index`` ``(M,)``
    long, its position among its frame's lanes; ``labels`` ``(M,)`` long categories; ``visibility`` ``(T,)`` per
    point (annotations) or ``None``.

    Examples:
        >>> import torch
        >>> lanes = OpenLane3DLanes(
        ...     torch.tensor([[0.0, 3.0, 0.0], [0.0, 52.0, 0.0]], dtype=torch.float64), torch.tensor([2]),
        ...     torch.tensor([0]), torch.tensor([0]), torch.tensor([1]), None)
        >>> openlane3d_lane_matches(lanes, lanes, frames=1)["counts"].tolist()
        [[1, 1, 1, 1, 1, 1]]
    """

    points: Tensor
    lengths: Tensor
    frame: Tensor
    index: Tensor
    labels: Tensor
    visibility: Tensor | None


def _lanes_from_padded(
    points: Tensor, lengths: Tensor | None, labels: Tensor, visibility: Tensor | None = None
) -> OpenLane3DLanes:
    """The present lanes (``lengths`` > 0) of padded ``(B, L, N, 3)`` inputs as :class:`OpenLane3DLanes`."""
    if points.ndim != 4 or points.shape[-1] != 3:
        raise ValueError(f"lane points must be (B, L, N, 3), got {tuple(points.shape)}")
    batch, lanes, num, _ = points.shape
    device = points.device
    if lengths is None:
        lengths = torch.full((batch, lanes), num, dtype=torch.long, device=device)
    lengths = lengths.to(device=device, dtype=torch.long).clamp(max=num)
    frame, index = (lengths > 0).nonzero(as_tuple=True)
    mask = torch.arange(num, device=device) < lengths[frame, index][:, None]
    return OpenLane3DLanes(
        points[frame, index][mask].to(torch.float64),
        lengths[frame, index],
        frame,
        index,
        labels.to(device)[frame, index].long(),
        None if visibility is None else visibility.to(device)[frame, index][mask],
    )


def _resample_lanes(lanes: OpenLane3DLanes, use_visibility: bool, order_free: bool) -> dict[str, Tensor]:
    """:func:`openlane3d_resample` of packed lanes: ``x``, ``z``, ``visible`` ``(M, 100)``, ``kept`` ``(M,)``.

    One pass over the points of all lanes, no padding: the valid points (GT: visible, ``use_visibility``) decide
    which lanes are kept, the kept points of the kept lanes in the range are compacted lane after lane (sorted by y
    within a lane only where a lane is not in y order), and each sample reads the segment it falls in. The values
    of a dropped lane (``kept`` False) are unspecified.
    """
    points, lengths = lanes.points, lanes.lengths
    device, count_lanes, samples = points.device, lengths.shape[0], len(Y_SAMPLES)
    if count_lanes == 0:
        empty = points.new_zeros(0, samples, dtype=torch.float64)
        return {"x": empty, "z": empty, "visible": empty.bool(), "kept": empty[:, 0].bool()}
    # (3, T): free where the points are a view of planes; no gradient (the scores are not differentiable)
    planes = points.detach().to(torch.float64).T.contiguous()
    # the point masks on host arrays (numpy on the CPU: its comparisons, repeats and cumulative sums are several
    # times faster than torch's)
    x, y, lengths_host = arrays.host(planes[0]), arrays.host(planes[1]), arrays.host(lengths)
    ends = lengths_host.cumsum(0)
    starts = ends - lengths_host
    valid = arrays.host(lanes.visibility) > 0 if use_visibility and lanes.visibility is not None else None
    lane_ok = _lane_in_range(y, starts, ends, valid, order_free)
    keep = arrays.repeat(lane_ok, lengths_host)
    if valid is not None:
        keep &= valid
    keep &= y > Y_POINT_RANGE[0]
    keep &= y < Y_POINT_RANGE[1]
    keep &= x > -X_RANGE
    keep &= x < X_RANGE
    count_host = arrays.segment_count(keep, starts, ends)
    lane_ok &= count_host >= 2
    kept_points = arrays.from_host(arrays.flatnonzero(keep), device)
    lane_of_kept = arrays.from_host(arrays.repeat(arrays.arange(count_lanes, like=lengths_host), count_host), device)
    count, lane_ok = arrays.from_host(count_host, device), arrays.from_host(lane_ok, device)
    total = max(kept_points.shape[0], 2)  # two rows at least, so that every index below is in range
    kept = torch.zeros(3, total, dtype=torch.float64, device=device)
    for row in range(3):  # one 1-D gather per coordinate (a 2-D gather along dim 1 is several times slower)
        torch.index_select(planes[row], 0, kept_points, out=kept[row, : kept_points.shape[0]])
    if kept_points.shape[0] > 1:
        kept = _sort_by_y_within_lanes(kept, lane_of_kept)
    kx, ky, kz = kept.unbind(0)
    # per segment (point i to i + 1): y, x, z at its start and the slopes dx / dy, dz / dy as interp1d computes them
    table = torch.empty(5, total, dtype=torch.float64, device=device)
    table[0], table[1], table[2] = ky, kx, kz
    dy = ky[1:] - ky[:-1]
    torch.div(kx[1:] - kx[:-1], dy, out=table[3, :-1])
    torch.div(kz[1:] - kz[:-1], dy, out=table[4, :-1])
    table[3:, -1] = 0.0
    start = torch.cumsum(count, 0) - count
    # the segment of sample s: after the kept points with y < s (searchsorted, side "left", clipped to the lane's
    # segments); for the integer samples, y < s <=> floor(y) + 1 <= s, so a histogram over the floors counts them
    bins = torch.floor(ky[: kept_points.shape[0]]).add_(1 - Y_SAMPLES[0]).clamp_(0, samples).to(torch.long)
    bins += lane_of_kept * (samples + 1)
    below = torch.bincount(bins, minlength=count_lanes * (samples + 1)).view(count_lanes, samples + 1)
    below = below[:, :samples].cumsum(1)
    segment = torch.minimum(below.clamp_(min=1), (count - 1).clamp(min=1)[:, None]).sub_(1).add_(start[:, None])
    segment = segment.clamp_(max=total - 2).view(-1)
    picked = torch.empty(5, segment.shape[0], dtype=torch.float64, device=device)
    for row in range(5):
        torch.index_select(table[row], 0, segment, out=picked[row])
    y_lo, x_lo, z_lo, x_slope, z_slope = picked.view(5, count_lanes, samples).unbind(0)
    queries = torch.tensor(Y_SAMPLES, dtype=torch.float64, device=device)
    offset = queries - y_lo
    x_s = x_slope.mul_(offset).add_(x_lo)  # the slope times the offset, plus the start value (interp1d's order)
    z_s = z_slope.mul_(offset).add_(z_lo)
    y_min = ky.index_select(0, start.clamp(max=total - 1))[:, None]
    y_max = ky.index_select(0, (start + count - 1).clamp_(min=0, max=total - 1))[:, None]
    # |x| <= 10 is False for NaN too
    visible = abs(arrays.host(x_s)) <= X_RANGE
    visible &= arrays.host(queries) >= arrays.host(y_min)
    visible &= arrays.host(queries) <= arrays.host(y_max)
    visible = arrays.from_host(visible, device)
    lane_kept = lane_ok & (visible.sum(-1, dtype=torch.int32) >= 2)
    visible &= lane_kept[:, None]
    return {"x": x_s, "z": z_s, "visible": visible, "kept": lane_kept}


def _flat_pair_details(
    target: dict[str, Tensor], preds: dict[str, Tensor], gt: Tensor, pred: Tensor, care: Tensor | None, reference: bool
) -> tuple[Tensor, Tensor]:
    """:func:`_pair_details` of the pairs ``(gt[k], pred[k])`` of resampled lanes ``(M, 100)``: matched samples
    ``(K,)`` long and the four mean errors ``(K, 4)`` float64 (``-1`` without samples). ``care``: ``(K, 100)``
    predicted samples that count (default: the visible ones). On the CPU in numpy, whose sums are the tool's (bit
    for bit its errors)."""
    g = {key: arrays.host(target[key]) for key in ("x", "z", "visible")}
    p = {key: arrays.host(preds[key]) for key in ("x", "z", "visible")}
    gi, pj = arrays.host(gt), arrays.host(pred)
    both = g["visible"][gi] & (p["visible"][pj] if care is None else arrays.host(care))
    with arrays.overflow_allowed():  # lanes with a repeated y: NaN / inf beyond their ends, as in the tool
        dx = abs(g["x"][gi] - p["x"][pj])
        dz = abs(g["z"][gi] - p["z"][pj])
        num_match = (both & (arrays.sqrt(dx * dx + dz * dz) < DIST_THRESHOLD)).sum(-1)
        counts = [both[:, :CLOSE_SAMPLES].sum(-1), both[:, CLOSE_SAMPLES:].sum(-1)]
        errors = []
        for values in (dx, dz):
            # the tool multiplies by the mask: a non-finite value at a sample either lane does not show makes the
            # error NaN, and the pooled means skip it
            values = values * both if reference else arrays.where(both, values, 0.0)
            for n, part in zip(counts, (values[:, :CLOSE_SAMPLES], values[:, CLOSE_SAMPLES:]), strict=True):
                mean = part.sum(-1) / arrays.where(n > 0, n, 1)
                errors.append(arrays.where(n > 0, mean, -1.0)[:, None])
    return arrays.from_host(num_match, gt.device).long(), arrays.from_host(arrays.cat(errors, 1), gt.device)


def _lane_in_range(y: Any, starts: Any, ends: Any, valid: Any, order_free: bool) -> Any:
    """``(M,)`` bool, host arrays (``arrays.host``): lanes (points ``starts[m]`` to ``ends[m]``, each lane one
    point at least) with 2 valid points at least whose first valid point lies before y = 102 m and last after
    y = 3 m (in file order; ``order_free``: their lowest and highest y). ``valid``: ``(T,)`` or ``None`` (all)."""
    if valid is None:
        n_valid, first, last = ends - starts, starts, ends - 1
    else:
        seen = valid.cumsum(0)  # valid points up to each point
        before = seen[starts] - arrays.astype(valid[starts], "int64")  # valid points before each lane
        n_valid = seen[ends - 1] - before
        top = y.shape[0] - 1  # a lane without a valid point reads any point (it is dropped)
        first = arrays.searchsorted(seen, before + 1).clip(max=top)
        last = arrays.searchsorted(seen, before + n_valid).clip(max=top)
    if order_free:
        y_first = arrays.segment_min(y if valid is None else arrays.where(valid, y, np.inf), starts, ends)
        y_last = -arrays.segment_min(-y if valid is None else arrays.where(valid, -y, np.inf), starts, ends)
    else:
        y_first, y_last = y[first], y[last]
    return (n_valid >= 2) & (y_first < Y_FIRST_MAX) & (y_last > Y_LAST_MIN)


def _sort_by_y_within_lanes(kept: Tensor, lane: Tensor) -> Tensor:
    """``(3, T')`` points, lane after lane, stably sorted by y within each lane (interp1d's mergesort) where some
    lane is not in y order; unchanged (the same tensor) where every lane is."""
    y = kept[1, : lane.shape[0]]
    if not bool(((y[1:] < y[:-1]) & (lane[1:] == lane[:-1])).any()):
        return kept
    order = torch.sort(y, stable=True).indices
    order = order.index_select(0, torch.sort(lane.index_select(0, order), stable=True).indices)
    sorted_points = kept.clone()
    for row in range(3):
        sorted_points[row, : lane.shape[0]] = kept[row].index_select(0, order)
    return sorted_points


def _pair_index(
    gt_frame: Tensor, gt_mask: Tensor, pred_frame: Tensor, pred_mask: Tensor, batch: int
) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor, Tensor]:
    """Every (GT lane, predicted lane) pair of the same frame among the masked lanes, frame-major, then GT-major.

    Returns ``gt`` ``(K,)`` and ``pred`` ``(K,)`` lane indices, ``frame`` ``(K,)``, and per frame ``(B,)`` the
    first pair, the GT lanes and the predicted lanes that take part."""
    device = gt_frame.device
    gt_sel = gt_mask.nonzero()[:, 0]
    pred_sel = pred_mask.nonzero()[:, 0]
    n_gt = torch.bincount(gt_frame[gt_sel], minlength=batch)
    n_pred = torch.bincount(pred_frame[pred_sel], minlength=batch)
    n_pairs = n_gt * n_pred
    first = torch.cumsum(n_pairs, 0) - n_pairs
    frame = torch.repeat_interleave(torch.arange(batch, device=device), n_pairs)
    local = torch.arange(frame.shape[0], device=device) - first[frame]
    cols = n_pred[frame]
    gt = gt_sel[(torch.cumsum(n_gt, 0) - n_gt)[frame] + torch.div(local, cols.clamp(min=1), rounding_mode="floor")]
    pred = pred_sel[(torch.cumsum(n_pred, 0) - n_pred)[frame] + local % cols.clamp(min=1)]
    return gt, pred, frame, first, n_gt, n_pred


def _near_pairs(target: dict[str, Tensor], preds: dict[str, Tensor], gt: Tensor, pred: Tensor) -> Tensor:
    """``(K, 100)``: whether the samples of GT lane ``gt[k]`` and predicted lane ``pred[k]`` lie within 1.5 m."""
    dx = target["x"][gt] - preds["x"][pred]
    dz = target["z"][gt] - preds["z"][pred]
    return torch.sqrt(dx**2 + dz**2) < DIST_THRESHOLD


def _category_correct(pred: Tensor, gt: Tensor, reference: bool) -> Tensor:
    curbs = ((pred == LEFT_CURB) & (gt == RIGHT_CURB)) if reference else ((pred == LEFT_CURB) | (pred == RIGHT_CURB))
    curbs = curbs & ((gt == LEFT_CURB) | (gt == RIGHT_CURB))
    return (pred == gt) | curbs


def openlane3d_matches(
    preds: Mapping[str, Tensor],
    target: Mapping[str, Tensor],
    *,
    compat: Compat = "default",
    validate_args: bool = True,
) -> dict[str, Tensor]:
    """Per-frame OpenLane counts and error sums of a batch, and the counted pairs.

    Args:
        preds: ``points`` ``(B, P, N, 3)`` predicted lanes in the ground frame, metres (x right, y forward, z up);
            ``labels`` ``(B, P)`` int categories (OpenLane 0-12, 20 left curb, 21 right curb); optional
            ``lengths`` ``(B, P)`` valid points per lane (default: all ``N``; 0 marks an absent lane).
        target: ``points`` ``(B, G, M, 3)`` GT lanes in the ground frame (:func:`openlane3d_gt_to_ground`),
            ``labels`` ``(B, G)``, optional ``lengths`` ``(B, G)`` and ``visibility`` ``(B, G, M)`` (point
            visibility; default: all visible).
        compat: ``"default"`` (the library's fixes, module doc) or ``"reference"`` (``eval_3D_lane.py``).
        validate_args: check the inputs' keys and shapes; ``False`` skips those checks.

    Returns:
        ``counts``: ``(B, 6)`` long, per frame: recall hits, precision hits, correct categories, GT lanes,
        predicted lanes, counted pairs (:data:`COUNT_NAMES`); ``error_sums`` ``(B, 4)`` float64 and
        ``error_counts`` ``(B, 4)`` long over the counted pairs that have samples in the range
        (:data:`ERROR_NAMES`); ``pairs``: ``(K, 3)`` long rows ``(frame, gt lane, pred lane)`` of the counted
        pairs, lane indices in the input; ``pair_errors``: ``(K, 4)`` float64, ``-1`` where a pair has no sample.

    Examples:
        >>> import torch
        >>> lane = torch.tensor([[[[0.0, 3.0, 0.0], [0.0, 52.0, 0.0]]]])  # (B, L, N, 3) = (1, 1, 2, 3)
        >>> target = {"points": lane, "labels": torch.tensor([[1]])}
        >>> out = openlane3d_matches({"points": lane + 0.2, "labels": torch.tensor([[1]])}, target)
        >>> out["counts"].tolist()
        [[1, 1, 1, 1, 1, 1]]
    """
    fixes = frozenset() if check_compat(compat) else DEFAULT_FIXES
    if validate_args:
        _check_lane_dict(preds, "preds", ("points", "labels"), ("lengths",))
        _check_lane_dict(target, "target", ("points", "labels"), ("lengths", "visibility"))
    return _matches(preds, target, fixes)


def _check_lane_dict(
    data: Mapping[str, Tensor], name: str, required: tuple[str, ...], optional: tuple[str, ...]
) -> None:
    """One clear ``ValueError`` for a missing or unknown key or a shape that does not fit ``points``."""
    if not isinstance(data, Mapping):
        raise ValueError(f"`{name}` must be a dict of tensors with keys {required} (optional {optional})")
    missing = [key for key in required if key not in data]
    unknown = sorted(set(data) - set(required) - set(optional))
    if missing or unknown:
        raise ValueError(f"`{name}`: missing keys {missing}, unknown keys {unknown}; expected {required} + {optional}")
    points = data["points"]
    if points.ndim != 4 or points.shape[-1] != 3:
        raise ValueError(f"`{name}['points']` must be (B, L, N, 3), got {tuple(points.shape)}")
    for key, shape in (("labels", points.shape[:2]), ("lengths", points.shape[:2]), ("visibility", points.shape[:3])):
        if key in data and data[key] is not None and tuple(data[key].shape) != tuple(shape):
            raise ValueError(f"`{name}['{key}']` must have shape {tuple(shape)}, got {tuple(data[key].shape)}")


def _matches(preds: Mapping[str, Tensor], target: Mapping[str, Tensor], fixes: frozenset[str]) -> dict[str, Tensor]:
    """:func:`openlane3d_matches` with a chosen set of the default mode's fixes (:data:`DEFAULT_FIXES`)."""
    gt = _lanes_from_padded(target["points"], target.get("lengths"), target["labels"], target.get("visibility"))
    pr = _lanes_from_padded(preds["points"], preds.get("lengths"), preds["labels"])
    return _match_lanes(gt, pr, target["points"].shape[0], fixes)


def openlane3d_lane_matches(
    preds: OpenLane3DLanes,
    target: OpenLane3DLanes,
    *,
    frames: int,
    compat: Compat = "default",
    fixes: Collection[str] | None = None,
    validate_args: bool = True,
) -> dict[str, Tensor]:
    """:func:`openlane3d_matches` on lanes packed lane after lane (:class:`OpenLane3DLanes`), no padding over lanes.

    Args:
        preds: predicted lanes, ground frame.
        target: GT lanes, ground frame (:func:`openlane3d_gt_to_ground`), with their point visibility.
        frames: frames of the batch (their indices in ``frame`` lie below it).
        compat: ``"default"`` or ``"reference"``.
        fixes: instead of ``compat``, a subset of the default mode's fixes (:data:`DEFAULT_FIXES`) to apply, e.g. to
            measure the effect of one of them.
        validate_args: check that the packed fields fit each other (shapes, ``lengths`` summing to the points,
            frames in ``[0, frames)`` and in order); ``False`` skips those checks (they read values back).

    Returns:
        The dict of :func:`openlane3d_matches`; lane indices in ``pairs`` are the lanes' ``index``.

    Examples:
        >>> import torch
        >>> points = torch.tensor([[0.0, 3.0, 0.0], [0.0, 52.0, 0.0]], dtype=torch.float64)
        >>> one = torch.tensor([1])
        >>> gt = OpenLane3DLanes(points, torch.tensor([2]), torch.tensor([0]), torch.tensor([0]), one, None)
        >>> pred = gt._replace(points=points + 0.2, frame=torch.tensor([1]))  # the prediction is in frame 1
        >>> openlane3d_lane_matches(pred, gt, frames=2)["counts"].tolist()
        [[0, 0, 0, 1, 0, 0], [0, 0, 0, 0, 1, 0]]
    """
    chosen = (frozenset() if check_compat(compat) else DEFAULT_FIXES) if fixes is None else frozenset(fixes)
    if validate_args:
        _check_packed_lanes(preds, "preds", frames)
        _check_packed_lanes(target, "target", frames)
    return _match_lanes(target, preds, frames, chosen)


def _check_packed_lanes(lanes: OpenLane3DLanes, name: str, frames: int) -> None:
    """One clear ``ValueError`` where the fields of packed lanes (:class:`OpenLane3DLanes`) do not fit each other."""
    points, lengths = lanes.points, lanes.lengths
    if points.ndim != 2 or points.shape[-1] != 3:
        raise ValueError(f"`{name}.points` must be (T, 3), got {tuple(points.shape)}")
    for field in ("lengths", "frame", "index", "labels"):
        if getattr(lanes, field).shape != lengths.shape or lengths.ndim != 1:
            raise ValueError(
                f"`{name}.{field}` must be (M,) like `{name}.lengths`, got {tuple(getattr(lanes, field).shape)}"
            )
    if lanes.visibility is not None and lanes.visibility.shape != points.shape[:1]:
        raise ValueError(f"`{name}.visibility` must be (T,) like the points, got {tuple(lanes.visibility.shape)}")
    if bool((lengths <= 0).any()) or int(lengths.sum()) != points.shape[0]:
        raise ValueError(f"`{name}.lengths` must be > 0 and sum to the {points.shape[0]} points")
    frame = lanes.frame
    if frame.numel() and (bool((frame < 0).any()) or bool((frame >= frames).any()) or bool((frame.diff() < 0).any())):
        raise ValueError(f"`{name}.frame` must be non-decreasing and in [0, {frames})")


def _match_lanes(gt: OpenLane3DLanes, pr: OpenLane3DLanes, batch: int, fixes: frozenset[str]) -> dict[str, Tensor]:
    """The matching of :func:`openlane3d_matches` on the lanes of ``batch`` frames (lane indices of the output
    as ``gt.index`` / ``pr.index``)."""
    unknown = fixes - DEFAULT_FIXES
    if unknown:
        raise ValueError(f"unknown fixes {sorted(unknown)}; known: {sorted(DEFAULT_FIXES)}")
    device = gt.points.device
    order_free = "order_free" in fixes
    g = _resample_lanes(gt, True, order_free)
    p = _resample_lanes(pr, False, order_free)
    near_ignored = None
    if "dont_care" in fixes and gt.visibility is not None:
        # a predicted sample within 1.5 m of an annotated but invisible GT stretch counts neither as a hit nor as a
        # miss, unless it lies within 1.5 m of a visible sample of the GT lane it is paired with; a predicted lane
        # with fewer than 2 samples away from invisible stretches is not counted
        full = _resample_lanes(gt, False, order_free)
        ignored = full["visible"] & ~g["visible"]
        gi, pj, *_ = _pair_index(gt.frame, ignored.any(-1), pr.frame, p["kept"], batch)
        hits = (ignored[gi] & _near_pairs(full, p, gi, pj)).to(torch.int32)
        near_ignored = torch.zeros_like(p["visible"], dtype=torch.int32).index_add_(0, pj, hits) > 0
        kept = p["kept"] & ((p["visible"] & ~near_ignored).sum(-1) >= 2)
        p = {**p, "kept": kept, "visible": p["visible"] & kept[:, None]}
    gi, pj, pair_frame, first, n_gt, n_pred = _pair_index(gt.frame, g["kept"], pr.frame, p["kept"], batch)
    care = None
    if near_ignored is not None:
        near_own = g["visible"][gi] & _near_pairs(g, p, gi, pj)
        care = p["visible"][pj] & ~(near_ignored[pj] & ~near_own)
    reference_cost = "float_cost" not in fixes
    # the cost of every pair (for the assignment); matched samples and errors of the counted pairs only
    cost = _flat_pair_cost(g, p, gi, pj, care, reference_cost)
    gate_ok = cost < COST_GATE
    chosen = _assign_frames(cost, gate_ok if "gate_first" in fixes else None, first, n_gt, n_pred)
    chosen = chosen[gate_ok[chosen]]
    matched, pair_errors = _flat_pair_details(
        g, p, gi[chosen], pj[chosen], None if care is None else care[chosen], reference_cost
    )
    fb, gl, pl = pair_frame[chosen], gi[chosen], pj[chosen]
    pred_visible = p["visible"].index_select(0, pl) if care is None else care[chosen]
    pred_samples = pred_visible.sum(-1, dtype=torch.int32)
    recall_hit = matched >= RATIO_THRESHOLD * g["visible"].index_select(0, gl).sum(-1, dtype=torch.int32)
    precision_hit = matched >= RATIO_THRESHOLD * pred_samples
    category_ok = _category_correct(pr.labels[pl], gt.labels[gl], "curb" not in fixes)
    counts = torch.zeros(batch, 6, dtype=torch.long, device=device)
    counts[:, 0].index_add_(0, fb, recall_hit.long())
    counts[:, 1].index_add_(0, fb, precision_hit.long())
    counts[:, 2].index_add_(0, fb, category_ok.long())
    counts[:, 3] = torch.bincount(gt.frame[g["kept"]], minlength=batch)
    counts[:, 4] = torch.bincount(pr.frame[p["kept"]], minlength=batch)
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
        "pairs": torch.stack([fb, gt.index[gl], pr.index[pl]], -1),
        "pair_errors": pair_errors,
    }


def _assign_frames(cost: Tensor, allowed: Tensor | None, first: Tensor, n_gt: Tensor, n_pred: Tensor) -> Tensor:
    """The assignment of every frame (scipy on the CPU): indices into the pairs of :func:`_pair_index`, frame after
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

    ``update(preds, target)`` with the dicts of tensors of :func:`openlane3d_matches` (``points``, ``labels``,
    optional ``lengths``, and the GT's optional ``visibility``; ground-frame lanes, metres); ``compute()`` returns
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
        >>> target = {"points": lane, "labels": torch.tensor([[1]])}
        >>> metric.update({"points": preds, "labels": torch.tensor([[1, 1]])}, target)
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

    def update(self, preds: Mapping[str, Tensor], target: Mapping[str, Tensor]) -> None:
        """Add a batch: ``preds`` / ``target`` dicts of tensors as in :func:`openlane3d_matches`."""
        out = openlane3d_matches(preds, target, compat=self.compat, validate_args=self.validate_args)
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
        >>> metric = OpenLane3DFScore()
        >>> metric(**drivemetrics.lane3d.openlane3d_example_inputs())  # recall 1, precision 2 / 3
        tensor(0.8000, dtype=torch.float64)
    """

    key = "f_score"


class OpenLane3DRecall(ScalarMetric, OpenLane3DMetrics):
    """OpenLane recall: GT lanes with 75 % of their samples matched / GT lanes.

    Arguments as :class:`OpenLane3DMetrics`.

    Examples:
        >>> metric = OpenLane3DRecall()
        >>> metric(**drivemetrics.lane3d.openlane3d_example_inputs())
        tensor(1., dtype=torch.float64)
    """

    key = "recall"


class OpenLane3DPrecision(ScalarMetric, OpenLane3DMetrics):
    """OpenLane precision: predicted lanes with 75 % of their samples matched / predicted lanes.

    Arguments as :class:`OpenLane3DMetrics`.

    Examples:
        >>> metric = OpenLane3DPrecision()
        >>> metric(**drivemetrics.lane3d.openlane3d_example_inputs())  # the lane at x = 7 m is false
        tensor(0.6667, dtype=torch.float64)
    """

    key = "precision"


class OpenLane3DCategoryAccuracy(ScalarMetric, OpenLane3DMetrics):
    """OpenLane category accuracy over the counted pairs (arguments as :class:`OpenLane3DMetrics`).

    Examples:
        >>> metric = OpenLane3DCategoryAccuracy()
        >>> metric(**drivemetrics.lane3d.openlane3d_example_inputs())
        tensor(0.5000, dtype=torch.float64)
    """

    key = "category_accuracy"


class _OpenLane3DMeanMetres(ScalarMetric, OpenLane3DMetrics):
    """A mean error of the counted pairs, metres: lower is better, no upper bound on its plot."""

    higher_is_better = False
    plot_upper_bound = None


class OpenLane3DXErrorClose(_OpenLane3DMeanMetres):
    """Mean lateral error of the counted pairs, y <= 40 m, metres (arguments as :class:`OpenLane3DMetrics`).

    Examples:
        >>> metric = OpenLane3DXErrorClose()
        >>> metric(**drivemetrics.lane3d.openlane3d_example_inputs())  # 0.2 and 0.5 m
        tensor(0.3500, dtype=torch.float64)
    """

    key = "x_error_close"


class OpenLane3DXErrorFar(_OpenLane3DMeanMetres):
    """Mean lateral error of the counted pairs, y > 40 m, metres (arguments as :class:`OpenLane3DMetrics`).

    Examples:
        >>> metric = OpenLane3DXErrorFar()
        >>> metric(**drivemetrics.lane3d.openlane3d_example_inputs())
        tensor(0.3500, dtype=torch.float64)
    """

    key = "x_error_far"


class OpenLane3DZErrorClose(_OpenLane3DMeanMetres):
    """Mean height error of the counted pairs, y <= 40 m, metres (arguments as :class:`OpenLane3DMetrics`).

    Examples:
        >>> metric = OpenLane3DZErrorClose()
        >>> metric(**drivemetrics.lane3d.openlane3d_example_inputs())  # 0.1 and 0.3 m
        tensor(0.2000, dtype=torch.float64)
    """

    key = "z_error_close"


class OpenLane3DZErrorFar(_OpenLane3DMeanMetres):
    """Mean height error of the counted pairs, y > 40 m, metres (arguments as :class:`OpenLane3DMetrics`).

    Examples:
        >>> metric = OpenLane3DZErrorFar()
        >>> metric(**drivemetrics.lane3d.openlane3d_example_inputs())
        tensor(0.2000, dtype=torch.float64)
    """

    key = "z_error_far"
