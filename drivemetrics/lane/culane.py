"""CULane lane F1: lanes drawn as wide curves, IoU, one-to-one matching, TP / FP / FN counts.

As in the CULane evaluator (Pan et al., SCNN, ``tools/lane_evaluation``): every lane is interpolated with a natural
cubic spline, drawn ``line_width`` px wide (default 30) on an ``(H, W)`` image (default 590 x 1640); the IoU of every
(GT, prediction) pair is the pixel intersection over union of the drawings; GT and predicted lanes are paired
one-to-one maximising the total IoU; a pair with IoU ``> iou_threshold`` (strict, default 0.5) is a true positive,
``FP = n_pred - TP``, ``FN = n_gt - TP``; precision, recall and F1 come from the totals over the dataset.

Two modes:

* default: batched torch on any device. A lane is the natural cubic spline through its points (chord-length
  parameter, as the official tool), sampled every ``spacing`` px of chord (default 8); a pixel (center at integer
  coordinates) is inside when its distance to the sampled curve is ``<= line_width / 2``, computed in closed form
  per image row (no per-pixel loop); matching is ``scipy.optimize.linear_sum_assignment`` on ``1 - IoU``. Lanes
  with fewer than 2 points are dropped with a warning that counts them (the official tool scores them as lanes of
  IoU 0); consecutive repeated points are merged. IoUs differ from the official ones by the official tool's integer
  rounding of every point and OpenCV's polygonal pen (measured in the README).
* ``compat="reference"``: the official C++ evaluator step by step (:mod:`drivemetrics.lane.culane_official`,
  needs ``opencv-python-headless``, the ``culane`` extra): 0- and 1-point lanes count with IoU 0, float32 points,
  the tool's spline with 50 steps per interval, ``cvRound``, ``cv::line`` of thickness 30, its Kuhn-Munkres.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import torch
from torch import Tensor

from drivemetrics._internal.compat import Compat, check_compat
from drivemetrics._internal.compute import precision_recall_f1
from drivemetrics._internal.metric import MetricFamily, ScalarMetric, add_config_state
from drivemetrics._internal.validation import check_shape, check_tensor

__all__ = [
    "IOU_RANGE",
    "CULaneF1Score",
    "CULaneMetrics",
    "CULanePrecision",
    "CULaneRecall",
    "counts_from_matches",
    "culane_counts",
    "culane_f1",
    "culane_matches",
    "draw_lanes",
    "lane_iou_matrix",
    "lanes_from_rows",
    "spline_lanes",
]

_BIG = 1e9
IOU_RANGE = tuple(round(0.5 + 0.05 * k, 2) for k in range(10))  # mF1: mean F1 over IoU 0.50:0.05:0.95


def counts_from_matches(matches: dict[str, Tensor], iou_threshold: float = 0.5) -> dict[str, Tensor]:
    """Per-image ``tp``, ``fp``, ``fn`` (``(B,)`` long) at ``iou_threshold`` (strict) from :func:`culane_matches`."""
    tp = (matches["matched_iou"] > iou_threshold).sum(-1)
    return {"tp": tp, "fp": matches["num_pred"] - tp, "fn": matches["num_gt"] - tp}


def lanes_from_rows(xs: Tensor, ys: Tensor) -> Tensor:
    """Turn row-sampled lanes (``(B, L, N)`` x at rows ``ys``: ``N`` or ``(B, N)``) into ``(B, L, N, 2)`` points."""
    check_shape(xs, "xs", ("B", "L", "N"))
    if ys.ndim == 1:
        ys = ys.expand(xs.shape[0], -1)
    check_shape(ys, "ys", (xs.shape[0], xs.shape[2]))
    ys = ys.to(device=xs.device, dtype=xs.dtype)[:, None, :].expand_as(xs)
    return torch.stack([xs, torch.where(torch.isnan(xs), torch.nan, ys)], dim=-1)


def _check_points(points: Tensor, lane_mask: Tensor | None, name: str) -> tuple[Tensor, Tensor]:
    """(valid points ``(B, L, P)``, lane slots ``(B, L)``) after shape and value checks."""
    check_tensor(points, name)
    check_shape(points, name, ("B", "L", "P", 2))
    if bool(torch.isinf(points).any()):
        raise ValueError(f"`{name}` must not contain infinite values (NaN marks padding)")
    valid = ~torch.isnan(points).any(dim=-1)
    if lane_mask is None:
        lane_mask = valid.any(dim=-1)
    else:
        check_shape(lane_mask, f"{name}_mask", points.shape[:2])
        lane_mask = lane_mask.to(device=points.device, dtype=torch.bool)
    return valid, lane_mask


def _capsule_row_extent(
    ax: Tensor, ay: Tensor, cx: Tensor, cy: Tensor, rows: Tensor, r: float
) -> tuple[Tensor, Tensor]:
    """Columns ``[lo, hi]`` where row ``rows`` cuts the capsule (points within ``r`` of segment A-C); lo > hi: none.

    All arguments broadcast together (float64).
    """
    dx, dy = cx - ax, cy - ay
    length2 = dx * dx + dy * dy
    length = length2.sqrt()
    v = rows - ay  # row offset from A

    def disk(px: Tensor, py: Tensor) -> tuple[Tensor, Tensor]:
        h2 = r * r - (rows - py) ** 2
        half = h2.clamp(min=0).sqrt()
        return torch.where(h2 >= 0, px - half, _BIG), torch.where(h2 >= 0, px + half, -_BIG)

    lo_a, hi_a = disk(ax, ay)
    lo_c, hi_c = disk(cx, cy)
    # body: 0 <= projection <= 1 and |perpendicular distance| <= r, each an interval of x on the row
    safe_dx = torch.where(dx == 0, 1.0, dx)
    t0 = ax - v * dy / safe_dx
    t1 = ax + (length2 - v * dy) / safe_dx
    t_inside = (v * dy >= 0) & (v * dy <= length2)
    lo_t = torch.where(dx == 0, torch.where(t_inside, -_BIG, _BIG), torch.minimum(t0, t1))
    hi_t = torch.where(dx == 0, torch.where(t_inside, _BIG, -_BIG), torch.maximum(t0, t1))
    safe_dy = torch.where(dy == 0, 1.0, dy)
    p0 = ax + (v * dx - r * length) / safe_dy
    p1 = ax + (v * dx + r * length) / safe_dy
    p_inside = (v * dx).abs() <= r * length
    lo_p = torch.where(dy == 0, torch.where(p_inside, -_BIG, _BIG), torch.minimum(p0, p1))
    hi_p = torch.where(dy == 0, torch.where(p_inside, _BIG, -_BIG), torch.maximum(p0, p1))
    lo_body, hi_body = torch.maximum(lo_t, lo_p), torch.minimum(hi_t, hi_p)
    body_ok = (lo_body <= hi_body) & (length2 > 0)
    lo_body = torch.where(body_ok, lo_body, _BIG)
    hi_body = torch.where(body_ok, hi_body, -_BIG)
    lo = torch.minimum(torch.minimum(lo_a, lo_c), lo_body)
    hi = torch.maximum(torch.maximum(hi_a, hi_c), hi_body)
    return lo, hi


def draw_lanes(
    points: Tensor,
    height: int = 590,
    width: int = 1640,
    line_width: float = 30.0,
    lane_mask: Tensor | None = None,
) -> Tensor:
    """Rasterise lanes as straight polylines ``line_width`` px wide (no interpolation; see :func:`spline_lanes`).

    Args:
        points: ``(B, L, P, 2)`` lane points ``(x, y)`` in pixels (x = column, y = row, pixel centers at integer
            coordinates), NaN = padding. Consecutive valid points are joined; a NaN point breaks the polyline.
        height, width: image size in pixels.
        line_width: pen width in pixels (a pixel is inside when its distance to the polyline is <= half of it).
        lane_mask: optional ``(B, L)`` bools of real lanes (default: slots with a valid point).

    Returns:
        ``(B, L, height, width)`` bool masks (False for padding slots). Points may lie outside the image.
    """
    if not (line_width > 0 and height > 0 and width > 0):
        raise ValueError(f"need line_width, height, width > 0, got {line_width}, {height}, {width}")
    valid, lane_mask = _check_points(points, lane_mask, "points")
    short = lane_mask & (valid.sum(dim=-1) < 2)
    if bool(short.any()):
        b, lane = (int(v) for v in short.nonzero()[0])
        raise ValueError(f"`points`: lane {lane} of image {b} has fewer than 2 valid points; a lane needs 2 to draw")
    b, n_lanes, _, _ = points.shape
    pts = points.to(torch.float64)
    a, c = pts[:, :, :-1], pts[:, :, 1:]  # segment ends, B x L x S x 2
    seg_ok = valid[:, :, :-1] & valid[:, :, 1:] & lane_mask[..., None]
    a = torch.where(seg_ok[..., None], a, 0.0)
    c = torch.where(seg_ok[..., None], c, 0.0)
    rows = torch.arange(height, device=points.device, dtype=torch.float64)
    lo, hi = _capsule_row_extent(
        a[..., 0, None], a[..., 1, None], c[..., 0, None], c[..., 1, None], rows, line_width / 2
    )
    # integer columns inside [lo, hi], clipped to the image; empty when first > last
    first = torch.ceil(lo).clamp(0, width)
    last = torch.floor(hi).clamp(-1, width - 1)
    nonempty = (first <= last) & seg_ok[..., None]
    first = torch.where(nonempty, first, 0).long()
    end = torch.where(nonempty, last + 1, 0).long()
    step = nonempty.to(torch.int32)
    # difference array over columns, per (image, lane, row); segments of a lane add up
    diff = torch.zeros(b, n_lanes, height, width + 1, dtype=torch.int32, device=points.device)
    diff.scatter_add_(3, first.permute(0, 1, 3, 2), step.permute(0, 1, 3, 2))
    diff.scatter_add_(3, end.permute(0, 1, 3, 2), -step.permute(0, 1, 3, 2))
    return diff[..., :width].cumsum(dim=3) > 0


def _compact(points: Tensor, keep: Tensor) -> tuple[Tensor, Tensor]:
    """Move the kept points of every lane to the front (order kept), NaN after; returns (points, counts)."""
    order = torch.sort((~keep).to(torch.int8), dim=-1, stable=True).indices
    pts = torch.gather(points, 2, order[..., None].expand(*order.shape, 2))
    n = keep.sum(-1)
    tail = torch.arange(points.shape[2], device=points.device) >= n[..., None]
    return pts.masked_fill(tail[..., None], torch.nan), n


def spline_lanes(
    points: Tensor, lane_mask: Tensor | None = None, spacing: float = 8.0, max_samples: int = 1024
) -> tuple[Tensor, Tensor]:
    """Sample every lane's natural cubic spline (the official tool's curve) at even steps of its parameter.

    The spline runs through the lane's valid points in order with the chord length as parameter and zero second
    derivative at both ends (2-point lanes stay straight); NaN points are skipped and consecutive repeated points
    merged. Every lane gets ``N`` samples, ``N`` = ``ceil(longest chord length / spacing) + 1`` capped at
    ``max_samples``, the first and last sample being its end points.

    Args:
        points: ``(B, L, P, 2)`` points ``(x, y)``, NaN = padding.
        lane_mask: optional ``(B, L)`` bools of real lanes (default: slots with a valid point).
        spacing: largest parameter step between samples, pixels.
        max_samples: cap on ``N``.

    Returns:
        (``(B, L, N, 2)`` float64 samples, NaN for lanes of fewer than 2 distinct points; ``(B, L)`` bools of the
        lanes drawn).
    """
    curve, _, drawn = _spline_samples(points, lane_mask, spacing, max_samples)
    return curve, drawn


def _spline_samples(
    points: Tensor, lane_mask: Tensor | None, spacing: float, max_samples: int
) -> tuple[Tensor, Tensor, Tensor]:
    """:func:`spline_lanes` plus the ``(B, L, N, 2)`` unit tangents at the samples."""
    if not spacing > 0 or max_samples < 2:
        raise ValueError(f"need spacing > 0 and max_samples >= 2, got {spacing}, {max_samples}")
    valid, lane_mask = _check_points(points, lane_mask, "points")
    pts = points.to(torch.float64)
    pts, n = _compact(pts, valid & lane_mask[..., None])
    repeat = torch.zeros_like(valid)
    # consecutive points closer than 1e-6 px are one point (also makes the spline's chord steps never subnormal)
    repeat[..., 1:] = ((pts[..., 1:, :] - pts[..., :-1, :]).abs() <= 1e-6).all(-1)
    pts, n = _compact(pts, (torch.arange(pts.shape[2], device=pts.device) < n[..., None]) & ~repeat)
    n_max = max(int(n.max()) if n.numel() else 0, 2)
    pts = pts[..., :n_max, :]
    drawn = lane_mask & (n >= 2)
    b, n_lanes, p = pts.shape[:3]
    j = torch.arange(p - 1, device=pts.device)
    interval_ok = j < (n - 1)[..., None]  # B x L x (P-1)
    d = torch.nan_to_num(pts[..., 1:, :] - pts[..., :-1, :])
    h = torch.where(interval_ok, d.norm(dim=-1), 1.0)
    slope = torch.where(interval_ok[..., None], d / h[..., None], 0.0)
    # second derivatives M at the interior knots 1..P-2: tridiagonal, Thomas algorithm over the knot index
    m = torch.zeros(b, n_lanes, p, 2, dtype=torch.float64, device=pts.device)
    if p > 2:
        eq_ok = (j[: p - 2] + 1 < (n - 1)[..., None])[..., None]  # interior knot i = k + 1 is real
        lower = torch.where(eq_ok[..., 0], h[..., :-1], 0.0)
        diag = torch.where(eq_ok[..., 0], 2 * (h[..., :-1] + h[..., 1:]), 1.0)
        upper = torch.where(eq_ok[..., 0], h[..., 1:], 0.0)
        rhs = torch.where(eq_ok, 6 * (slope[..., 1:, :] - slope[..., :-1, :]), 0.0)
        c_prime, d_prime = [], []
        for k in range(p - 2):
            if k == 0:
                denom = diag[..., 0]
                c_prime.append(upper[..., 0] / denom)
                d_prime.append(rhs[..., 0, :] / denom[..., None])
            else:
                denom = diag[..., k] - lower[..., k] * c_prime[k - 1]
                c_prime.append(upper[..., k] / denom)
                d_prime.append((rhs[..., k, :] - lower[..., k, None] * d_prime[k - 1]) / denom[..., None])
        interior = [d_prime[-1]]
        for k in range(p - 4, -1, -1):
            interior.append(d_prime[k] - c_prime[k][..., None] * interior[-1])
        m[..., 1 : p - 1, :] = torch.stack(interior[::-1], dim=2)
    coef_b = slope - h[..., None] * (2 * m[..., :-1, :] + m[..., 1:, :]) / 6
    coef_c = m[..., :-1, :] / 2
    coef_d = (m[..., 1:, :] - m[..., :-1, :]) / (6 * h[..., None])
    start = torch.cumsum(torch.where(interval_ok, h, 0.0), dim=-1) - torch.where(interval_ok, h, 0.0)
    total = torch.where(interval_ok, h, 0.0).sum(-1)  # B x L
    longest = float(total.max()) if total.numel() else 0.0
    n_samples = int(min(max(math.ceil(longest / spacing) + 1, 2), max_samples))
    s = total[..., None] * torch.linspace(0, 1, n_samples, dtype=torch.float64, device=pts.device)
    bounds = torch.where(interval_ok, start, math.inf).contiguous()
    idx = (torch.searchsorted(bounds, s.contiguous(), right=True) - 1).clamp(min=0)
    idx = torch.minimum(idx, (n - 2).clamp(min=0)[..., None])
    t = (s - torch.gather(start, 2, idx))[..., None]
    idx2 = idx[..., None].expand(*idx.shape, 2)
    cb, cc, cd = (torch.gather(coef, 2, idx2) for coef in (coef_b, coef_c, coef_d))
    curve = torch.gather(torch.nan_to_num(pts[..., :-1, :]), 2, idx2) + t * (cb + t * (cc + t * cd))
    tangent = cb + t * (2 * cc + 3 * t * cd)
    tangent = tangent / tangent.norm(dim=-1, keepdim=True).clamp(min=1e-12)
    hide = ~drawn[..., None, None]
    return curve.masked_fill(hide, torch.nan), tangent.masked_fill(hide, torch.nan), drawn


def _scatter_rows(lo_row: Tensor, hi_row: Tensor, rows: Tensor, lo: Tensor, hi: Tensor, ok: Tensor) -> None:
    """Merge column intervals ``[lo, hi]`` at integer ``rows`` (``(B, L, ...)``) into ``(B, L, (H + 1))`` rows."""
    height = lo_row.shape[-1] - 1
    ok = ok & (rows >= 0) & (rows < height)
    index = torch.where(ok, rows, height).long().flatten(2)
    lo_row.scatter_reduce_(2, index, lo.flatten(2).to(lo_row.dtype), "amin")
    hi_row.scatter_reduce_(2, index, hi.flatten(2).to(hi_row.dtype), "amax")


def _row_intervals(
    curve: Tensor, tangent: Tensor, drawn: Tensor, height: int, width: int, r: float
) -> tuple[Tensor, Tensor, Tensor]:
    """Per-row drawn columns ``[first, last]`` (``(B, L, H)`` long, empty when first > last) of the pixels within
    ``r`` of sampled curves, and ``(B, L)`` bools of the curves monotone in y (the only ones this is exact for:
    they cut every row in one interval; the others are drawn with :func:`draw_lanes`).

    The set within ``r`` of a curve is bounded by its two offset curves (``point +- r * normal``) and the disks at
    its ends; on every row its extent is the range of the offset curves' crossings and the disks' chords. The
    offset polylines' crossings are found in a window of rows around each of their edges, the ranges merged with
    a scatter-min / scatter-max.
    """
    b, n_lanes = curve.shape[:2]
    pts = torch.where(drawn[..., None, None], curve, 0.0)
    normal = torch.where(drawn[..., None, None], torch.stack([-tangent[..., 1], tangent[..., 0]], dim=-1), 0.0)
    dy_curve = pts[..., 1:, 1] - pts[..., :-1, 1]
    monotone = (dy_curve >= 0).all(-1) | (dy_curve <= 0).all(-1)
    lo_row = torch.full((b, n_lanes, height + 1), _BIG, dtype=torch.float64, device=curve.device)
    hi_row = torch.full((b, n_lanes, height + 1), -_BIG, dtype=torch.float64, device=curve.device)
    offsets = torch.cat([pts + r * normal, pts - r * normal], dim=2)  # B x L x 2N x 2; edge N-1 -> N is dropped
    p0, p1 = offsets[..., :-1, :], offsets[..., 1:, :]
    edge_ok = torch.ones(p0.shape[2], dtype=torch.bool, device=curve.device)
    edge_ok[pts.shape[2] - 1] = False
    x0, y0, dx, dy = p0[..., 0], p0[..., 1], p1[..., 0] - p0[..., 0], p1[..., 1] - p0[..., 1]
    dy = dy.masked_fill(~edge_ok, 0.0)
    y_lo = torch.minimum(y0, p1[..., 1])
    # every edge visits the rows it crosses inside [0, height), found with one flat index (each edge has its own
    # number of rows): the cost is bounded by the canvas and the samples, never by the coordinates
    usable = edge_ok & drawn[..., None]
    first_row = torch.ceil(y_lo).clamp(min=0)
    last_row = torch.floor(y_lo + dy.abs()).clamp(max=height - 1)
    count = torch.where(usable & (last_row >= first_row), last_row - first_row + 1, 0.0).long().flatten()
    edge = torch.repeat_interleave(torch.arange(count.numel(), device=curve.device), count)
    start = torch.cumsum(count, 0) - count
    rows = first_row.flatten()[edge] + (torch.arange(edge.numel(), device=curve.device) - start[edge])
    e_dy = dy.flatten()[edge]
    t = ((rows - y0.flatten()[edge]) / torch.where(e_dy == 0, 1.0, e_dy)).clamp(0, 1)
    x = torch.addcmul(x0.flatten()[edge], t, dx.flatten()[edge])
    index = (edge // dy.shape[-1]) * (height + 1) + rows.long()
    lo_row.view(-1).scatter_reduce_(0, index, x, "amin")
    hi_row.view(-1).scatter_reduce_(0, index, x, "amax")
    # disks at both ends
    ends = torch.stack([pts[..., 0, :], pts[..., -1, :]], dim=2)  # B x L x 2 x 2
    k = torch.arange(math.ceil(2 * r) + 2, device=curve.device, dtype=torch.float64)
    rows = torch.floor(ends[..., 1] - r)[..., None] + k
    h2 = r * r - (rows - ends[..., 1, None]) ** 2
    half = h2.clamp(min=0).sqrt()
    _scatter_rows(
        lo_row, hi_row, rows, ends[..., 0, None] - half, ends[..., 0, None] + half, (h2 >= 0) & drawn[..., None, None]
    )
    first = torch.ceil(lo_row[..., :height]).clamp(0, width).long()
    last = torch.floor(hi_row[..., :height]).clamp(-1, width - 1).long()
    return first, last, monotone


def _draw_in_chunks(curve: Tensor, drawn: Tensor, height: int, width: int, line_width: float) -> Tensor:
    """:func:`draw_lanes` of one image's ``(L, N, 2)`` curves (``(L, H, W)`` bools), a few lanes per call so that
    its ``(lanes, segments, rows)`` temporaries stay below ~2**20 elements whatever the number of lanes."""
    per_call = max(1, 2**20 // max(1, curve.shape[1] * height))
    parts = [
        draw_lanes(curve[None, k : k + per_call], height, width, line_width, drawn[None, k : k + per_call])[0]
        for k in range(0, curve.shape[0], per_call)
    ]
    return torch.cat(parts) if parts else torch.zeros(0, height, width, dtype=torch.bool, device=curve.device)


def lane_iou_matrix(
    preds: Tensor,
    target: Tensor,
    *,
    height: int = 590,
    width: int = 1640,
    line_width: float = 30.0,
    preds_mask: Tensor | None = None,
    target_mask: Tensor | None = None,
    spacing: float = 8.0,
) -> Tensor:
    """IoU of every (prediction, GT) lane pair, default mode: ``(B, L_pred, L_gt)`` float64 (0 for padding slots
    and for lanes of fewer than 2 points). Lanes are drawn as their spline (:func:`spline_lanes`, ``spacing`` px).

    Examples:
        >>> import torch
        >>> lane = torch.tensor([[[[800.0, 580.0], [820.0, 300.0]]]])  # (B, L_gt, P, 2) = (1, 1, 2, 2), pixels
        >>> preds = torch.cat([lane, lane + torch.tensor([300.0, 0.0])], 1)  # the lane and a false one 300 px right
        >>> lane_iou_matrix(preds, lane)  # (B, L_pred, L_gt)
        tensor([[[1.],
                 [0.]]], dtype=torch.float64)
    """
    if not (line_width > 0 and height > 0 and width > 0):
        raise ValueError(f"need line_width, height, width > 0, got {line_width}, {height}, {width}")
    check_tensor(preds, "preds")
    check_tensor(target, "target")
    if preds.shape[0] != target.shape[0]:
        raise ValueError(
            f"`preds` and `target` must have the same batch size, got {preds.shape[0]} and {target.shape[0]}"
        )
    r = (line_width + 1) / 2  # OpenCV's pen of width w covers w + 1 px across, whatever the direction
    pred_curve, pred_tangent, pred_drawn = _spline_samples(preds, preds_mask, spacing, 1024)
    gt_curve, gt_tangent, gt_drawn = _spline_samples(target, target_mask, spacing, 1024)
    pf, pl, p_mono = _row_intervals(pred_curve, pred_tangent, pred_drawn, height, width, r)
    gf, gl, g_mono = _row_intervals(gt_curve, gt_tangent, gt_drawn, height, width, r)
    inter = (torch.minimum(pl[:, :, None], gl[:, None]) - torch.maximum(pf[:, :, None], gf[:, None]) + 1).clamp(min=0)
    inter = inter.sum(-1).to(torch.float64)
    area_p = (pl - pf + 1).clamp(min=0).sum(-1).to(torch.float64)
    area_g = (gl - gf + 1).clamp(min=0).sum(-1).to(torch.float64)
    union = area_p[:, :, None] + area_g[:, None, :] - inter
    iou = torch.where(union > 0, inter / union.clamp(min=1), 0.0)
    # lanes that turn back in y can cut a row twice: those images are drawn pixel by pixel
    redo = ~((p_mono | ~pred_drawn).all(-1) & (g_mono | ~gt_drawn).all(-1))
    for i in redo.nonzero().flatten().tolist():
        pm = _draw_in_chunks(pred_curve[i], pred_drawn[i], height, width, 2 * r).flatten(1)
        gm = _draw_in_chunks(gt_curve[i], gt_drawn[i], height, width, 2 * r).flatten(1)
        # a few lanes at a time: float or int copies of every mask would cost L x H x W x 4 (or 8) bytes
        gm_float = [gm[k : k + 8].to(torch.float32) for k in range(0, len(gm), 8)]
        gm_area = torch.cat([g.sum(-1) for g in gm_float] or [torch.zeros(0)]).to(torch.float64)
        rows_i, pm_area = [], []
        for k in range(0, len(pm), 8):
            chunk = pm[k : k + 8].to(torch.float32)
            rows_i.append(torch.cat([chunk @ g.T for g in gm_float] or [torch.zeros(len(chunk), 0)], dim=1))
            pm_area.append(chunk.sum(-1))
        inter_i = torch.cat(rows_i or [torch.zeros(0, len(gm))]).to(torch.float64)
        pm_area_t = torch.cat(pm_area or [torch.zeros(0)]).to(torch.float64)
        union_i = pm_area_t[:, None] + gm_area[None] - inter_i
        iou[i] = torch.where(union_i > 0, inter_i / union_i.clamp(min=1), 0.0)
    return iou


def _warn_short(valid: Tensor, lane_mask: Tensor, name: str) -> Tensor:
    """Drop lane slots with fewer than 2 valid points, warning with their number; returns the new lane mask."""
    short = lane_mask & (valid.sum(-1) < 2)
    n_short = int(short.sum())
    if n_short:
        warnings.warn(
            f"{n_short} {name} lane(s) with fewer than 2 points dropped (compat='reference' scores them as lanes "
            "with IoU 0, as the official tool)",
            stacklevel=3,
        )
    return lane_mask & ~short


def _hungarian(iou: np.ndarray) -> np.ndarray:
    """GT -> prediction match (``-1`` = none) maximising the total IoU; ``iou`` is ``(n_gt, n_pred)``."""
    from scipy.optimize import linear_sum_assignment

    match = np.full(iou.shape[0], -1, dtype=np.int64)
    if iou.size:
        rows, cols = linear_sum_assignment(1.0 - iou)
        match[rows] = cols
    return match


def culane_matches(
    preds: Tensor,
    target: Tensor,
    *,
    height: int = 590,
    width: int = 1640,
    line_width: float = 30.0,
    preds_mask: Tensor | None = None,
    target_mask: Tensor | None = None,
    compat: Compat = "default",
) -> dict[str, Tensor]:
    """Match predictions to GT lanes per image; :func:`counts_from_matches` gives TP / FP / FN at any threshold.

    Args:
        preds: ``(B, L_pred, P, 2)`` predicted lane points ``(x, y)`` in pixels, NaN = padding
            (:func:`lanes_from_rows` converts row-sampled lanes).
        target: ``(B, L_gt, Q, 2)`` GT lane points.
        height, width: image size (CULane 590 x 1640).
        line_width: drawn lane width in pixels (30).
        preds_mask, target_mask: optional ``(B, L)`` bools of real lanes (default: slots with a valid point; give
            them to count lanes of 0 points in compat mode).
        compat: ``"default"`` or ``"reference"`` (the official C++ tool, CPU, needs OpenCV).

    Returns:
        ``"matched_iou"``: ``(B, L_gt)`` float64 IoU of every GT lane with its matched prediction (NaN: no match or
        padding); ``"num_pred"``, ``"num_gt"``: ``(B,)`` long numbers of scored lanes. TP at threshold ``t`` is
        ``(matched_iou > t)`` summed over the lanes.

    Examples:
        >>> import torch
        >>> lane = torch.tensor([[[[800.0, 580.0], [820.0, 300.0]]]])  # (B, L_gt, P, 2) = (1, 1, 2, 2), pixels
        >>> preds = torch.cat([lane, lane + torch.tensor([300.0, 0.0])], 1)  # the lane and a false one 300 px right
        >>> culane_matches(preds, lane)
        {'matched_iou': tensor([[1.]], dtype=torch.float64), 'num_pred': tensor([2]), 'num_gt': tensor([1])}
    """
    check_compat(compat)
    check_tensor(preds, "preds")
    check_tensor(target, "target")
    if preds.shape[0] != target.shape[0]:
        raise ValueError(
            f"`preds` and `target` must have the same batch size, got {preds.shape[0]} and {target.shape[0]}"
        )
    p_valid, pred_lane = _check_points(preds, preds_mask, "preds")
    g_valid, gt_lane = _check_points(target, target_mask, "target")
    if compat == "reference":
        from drivemetrics.lane.culane_official import matched_ious, official_iou_matrix, official_match

        preds_np, target_np = preds.detach().cpu().double().numpy(), target.detach().cpu().double().numpy()
        p_valid_np, g_valid_np = p_valid.cpu().numpy(), g_valid.cpu().numpy()
        pred_lane_np, gt_lane_np = pred_lane.cpu().numpy(), gt_lane.cpu().numpy()
        matched = np.full(target.shape[:2], np.nan)
        for i in range(preds.shape[0]):
            gt_rows = np.flatnonzero(gt_lane_np[i])
            gts = [target_np[i, k][g_valid_np[i, k]] for k in gt_rows]
            prs = [preds_np[i, k][p_valid_np[i, k]] for k in np.flatnonzero(pred_lane_np[i])]
            iou = official_iou_matrix(gts, prs, int(height), int(width), round(line_width))
            matched[i, gt_rows] = matched_ious(iou, official_match(iou))
    else:
        pred_lane = _warn_short(p_valid, pred_lane, "predicted")
        gt_lane = _warn_short(g_valid, gt_lane, "GT")
        iou_all = (
            lane_iou_matrix(
                preds,
                target,
                height=height,
                width=width,
                line_width=line_width,
                preds_mask=pred_lane,
                target_mask=gt_lane,
            )
            .cpu()
            .numpy()
        )
        pred_lane_np, gt_lane_np = pred_lane.cpu().numpy(), gt_lane.cpu().numpy()
        matched = np.full(target.shape[:2], np.nan)
        for i in range(preds.shape[0]):  # scipy's assignment runs per image on the CPU
            gt_rows, pred_cols = np.flatnonzero(gt_lane_np[i]), np.flatnonzero(pred_lane_np[i])
            iou = iou_all[i][np.ix_(pred_cols, gt_rows)].T
            match = _hungarian(iou)
            has = match >= 0
            matched[i, gt_rows[has]] = iou[np.flatnonzero(has), match[has]]
    device = preds.device
    return {
        "matched_iou": torch.from_numpy(matched).to(device),
        "num_pred": pred_lane.sum(-1).to(device),
        "num_gt": gt_lane.sum(-1).to(device),
    }


def culane_counts(
    preds: Tensor,
    target: Tensor,
    *,
    height: int = 590,
    width: int = 1640,
    line_width: float = 30.0,
    iou_threshold: float = 0.5,
    preds_mask: Tensor | None = None,
    target_mask: Tensor | None = None,
    compat: Compat = "default",
) -> dict[str, Tensor]:
    """Per-image CULane TP, FP, FN at ``iou_threshold`` (strict; 0.5, also 0.3 and 0.75 are used).

    Other arguments as :func:`culane_matches`. Returns ``{"tp", "fp", "fn"}``, ``(B,)`` long tensors.

    Examples:
        >>> import torch
        >>> lane = torch.tensor([[[[800.0, 580.0], [820.0, 300.0]]]])  # (B, L_gt, P, 2) = (1, 1, 2, 2), pixels
        >>> preds = torch.cat([lane, lane + torch.tensor([300.0, 0.0])], 1)  # the lane and a false one 300 px right
        >>> culane_counts(preds, lane)
        {'tp': tensor([1]), 'fp': tensor([1]), 'fn': tensor([0])}
    """
    if not 0 <= iou_threshold < 1:
        raise ValueError(f"`iou_threshold` must be in [0, 1), got {iou_threshold}")
    matches = culane_matches(
        preds,
        target,
        height=height,
        width=width,
        line_width=line_width,
        preds_mask=preds_mask,
        target_mask=target_mask,
        compat=compat,
    )
    return counts_from_matches(matches, iou_threshold)


def culane_f1(
    preds: Tensor,
    target: Tensor,
    *,
    height: int = 590,
    width: int = 1640,
    line_width: float = 30.0,
    iou_threshold: float = 0.5,
    preds_mask: Tensor | None = None,
    target_mask: Tensor | None = None,
    compat: Compat = "default",
) -> dict[str, Tensor]:
    """CULane ``precision``, ``recall``, ``f1`` from the batch's total TP / FP / FN (0 when undefined).

    Arguments as in :func:`culane_counts`.

    Examples:
        >>> import torch
        >>> lane = torch.tensor([[[[800.0, 580.0], [820.0, 300.0]]]])  # (B, L_gt, P, 2) = (1, 1, 2, 2), pixels
        >>> preds = torch.cat([lane, lane + torch.tensor([300.0, 0.0])], 1)  # the lane and a false one 300 px right
        >>> {key: round(value.item(), 4) for key, value in culane_f1(preds, lane).items()}
        {'precision': 0.5, 'recall': 1.0, 'f1': 0.6667}
    """
    counts = culane_counts(
        preds,
        target,
        height=height,
        width=width,
        line_width=line_width,
        iou_threshold=iou_threshold,
        preds_mask=preds_mask,
        target_mask=target_mask,
        compat=compat,
    )
    return precision_recall_f1(counts["tp"].sum(), counts["fp"].sum(), counts["fn"].sum())


class CULaneMetrics(MetricFamily):
    """CULane F1 accumulated over batches: sum-reduced TP / FP / FN counters.

    ``update(preds, target, preds_mask=None, target_mask=None)`` as :func:`culane_counts`; ``compute()`` returns
    ``{"precision", "recall", "f1"}`` (0-d float64).

    Args:
        height, width: image size in pixels (CULane 590 x 1640).
        line_width: drawn lane width in pixels (30).
        iou_threshold: IoU above which a matched pair counts (0.5).
        compat: ``"default"`` or ``"reference"`` (official C++ tool, CPU, needs OpenCV).
        kwargs: torchmetrics ``Metric`` keyword arguments.

    Examples:
        >>> import torch
        >>> lane = torch.tensor([[[[800.0, 580.0], [820.0, 300.0]]]])  # (B, L_gt, P, 2) = (1, 1, 2, 2), pixels
        >>> preds = torch.cat([lane, lane + torch.tensor([300.0, 0.0])], 1)  # the lane and a false one 300 px right
        >>> metric = CULaneMetrics()
        >>> metric.update(preds, lane)
        >>> {key: round(value.item(), 4) for key, value in metric.compute().items()}
        {'precision': 0.5, 'recall': 1.0, 'f1': 0.6667}
    """

    is_differentiable = False
    higher_is_better = True
    full_state_update = False
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0

    tp: Tensor
    fp: Tensor
    fn: Tensor

    def __init__(
        self,
        height: int = 590,
        width: int = 1640,
        line_width: float = 30.0,
        iou_threshold: float = 0.5,
        compat: Compat = "default",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if not (height > 0 and width > 0 and line_width > 0):
            raise ValueError(f"need height, width, line_width > 0, got {height}, {width}, {line_width}")
        if not 0 <= iou_threshold < 1:
            raise ValueError(f"`iou_threshold` must be in [0, 1), got {iou_threshold}")
        check_compat(compat)
        if compat == "reference":  # OpenCV draws the lanes: checked here, not at the first update
            from drivemetrics.lane.culane_official import _cv2

            _cv2()
        self.height, self.width = int(height), int(width)
        self.line_width = float(line_width)
        self.iou_threshold = float(iou_threshold)
        self.compat = compat
        for name in ("tp", "fp", "fn"):
            self.add_state(name, torch.zeros((), dtype=torch.long), dist_reduce_fx="sum")
        # what the counters mean, as a constant state: keeps differently configured metrics out of one compute group
        add_config_state(self, ("CULane", self.height, self.width, self.line_width, self.iou_threshold, compat))

    def update(
        self, preds: Tensor, target: Tensor, preds_mask: Tensor | None = None, target_mask: Tensor | None = None
    ) -> None:
        """Add a batch (shapes as in :func:`culane_counts`)."""
        counts = culane_counts(
            preds,
            target,
            height=self.height,
            width=self.width,
            line_width=self.line_width,
            iou_threshold=self.iou_threshold,
            preds_mask=preds_mask,
            target_mask=target_mask,
            compat=self.compat,
        )
        self.tp = self.tp + counts["tp"].sum()
        self.fp = self.fp + counts["fp"].sum()
        self.fn = self.fn + counts["fn"].sum()

    def compute(self) -> dict[str, Tensor]:
        """``{"precision", "recall", "f1"}`` from the accumulated totals."""
        return precision_recall_f1(self.tp, self.fp, self.fn)


# Scalar classes for ``self.log``: they share CULaneMetrics' counters, so a MetricCollection of them counts once.


class CULanePrecision(ScalarMetric, CULaneMetrics):
    """CULane precision ``TP / (TP + FP)`` over all images seen (arguments as :class:`CULaneMetrics`).

    Examples:
        >>> import torch
        >>> lane = torch.tensor([[[[800.0, 580.0], [820.0, 300.0]]]])
        >>> metric = CULanePrecision()
        >>> metric.update(lane, lane)
        >>> metric.compute().item()
        1.0
    """

    key = "precision"


class CULaneRecall(ScalarMetric, CULaneMetrics):
    """CULane recall ``TP / (TP + FN)`` over all images seen (arguments as :class:`CULaneMetrics`).

    Examples:
        >>> import torch
        >>> lane = torch.tensor([[[[800.0, 580.0], [820.0, 300.0]]]])
        >>> metric = CULaneRecall()
        >>> metric.update(lane, lane)
        >>> metric.compute().item()
        1.0
    """

    key = "recall"


class CULaneF1Score(ScalarMetric, CULaneMetrics):
    """CULane F1 over all images seen, a scalar for ``self.log`` (arguments as :class:`CULaneMetrics`).

    Examples:
        >>> import torch
        >>> lane = torch.tensor([[[[800.0, 580.0], [820.0, 300.0]]]])
        >>> metric = CULaneF1Score()
        >>> metric.update(lane, lane)
        >>> metric.compute().item()
        1.0
    """

    key = "f1"
