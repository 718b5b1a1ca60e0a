"""Lane drawing on the image grid: capsule rasterisation of polylines, natural cubic splines through lane points,
and the per-row extent of a thick sampled curve (the pieces CULane's lane IoU is built from).

Image frame: x = column, y = row, pixels, pixel centers at integer coordinates. Lanes are ``(B, L, P, 2)`` points
``(x, y)`` with NaN padding; an optional ``(B, L)`` lane mask marks the real lane slots.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from drivemetrics._internal.validation import check_coordinates_within_limit, check_shape, check_tensor

__all__ = [
    "check_lane_points",
    "draw_lanes",
    "draw_lanes_in_chunks",
    "row_intervals",
    "solve_tridiagonal",
    "spline_lanes",
    "spline_samples",
]

_BIG = 1e9


def check_lane_points(
    points: Tensor, lane_mask: Tensor | None, name: str, *, check_values: bool = True
) -> tuple[Tensor, Tensor]:
    """(valid points ``(B, L, P)``, lane slots ``(B, L)``) after shape and value checks."""
    check_tensor(points, name)
    check_shape(points, name, ("B", "L", "P", 2))
    if check_values:  # NaN marks padding; the commands' coordinate limit (`max_abs_coordinate`) applies
        check_coordinates_within_limit(points, name, nan_ok=True)
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
    valid, lane_mask = check_lane_points(points, lane_mask, "points")
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


def solve_tridiagonal(lower: Tensor, diag: Tensor, upper: Tensor, rhs: Tensor) -> Tensor:
    """Solve batched tridiagonal systems with the Thomas algorithm (no pivoting: for diagonally dominant systems).

    Row ``k`` reads ``lower[k] x[k-1] + diag[k] x[k] + upper[k] x[k+1] = rhs[k]`` (``lower[0]`` and ``upper[-1]``
    are ignored). The loop runs over the ``K`` unknowns, never over the batch.

    Args:
        lower, diag, upper: ``(..., K)`` coefficients.
        rhs: ``(..., K, C)`` right-hand sides (``C`` columns solved together).

    Returns:
        ``(..., K, C)`` solutions.

    Examples:
        >>> import torch
        >>> from drivemetrics.lane.raster import solve_tridiagonal
        >>> diag = torch.tensor([[4.0, 4.0, 4.0]])
        >>> off = torch.tensor([[1.0, 1.0, 1.0]])
        >>> rhs = torch.tensor([[[5.0], [6.0], [5.0]]])  # the solution is all ones
        >>> solve_tridiagonal(off, diag, off, rhs)[..., 0]
        tensor([[1., 1., 1.]])
    """
    n = diag.shape[-1]
    c_prime = [upper[..., 0] / diag[..., 0]]
    d_prime = [rhs[..., 0, :] / diag[..., 0, None]]
    for k in range(1, n):
        denom = diag[..., k] - lower[..., k] * c_prime[k - 1]
        c_prime.append(upper[..., k] / denom)
        d_prime.append((rhs[..., k, :] - lower[..., k, None] * d_prime[k - 1]) / denom[..., None])
    solution = [d_prime[-1]]
    for k in range(n - 2, -1, -1):
        solution.append(d_prime[k] - c_prime[k][..., None] * solution[-1])
    return torch.stack(solution[::-1], dim=-2)


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
    curve, _, drawn = spline_samples(points, lane_mask, spacing, max_samples)
    return curve, drawn


def spline_samples(
    points: Tensor, lane_mask: Tensor | None, spacing: float, max_samples: int
) -> tuple[Tensor, Tensor, Tensor]:
    """:func:`spline_lanes` plus the ``(B, L, N, 2)`` unit tangents at the samples."""
    if not spacing > 0 or max_samples < 2:
        raise ValueError(f"need spacing > 0 and max_samples >= 2, got {spacing}, {max_samples}")
    valid, lane_mask = check_lane_points(points, lane_mask, "points")
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
    # second derivatives M at the interior knots 1..P-2: one tridiagonal system per lane
    m = torch.zeros(b, n_lanes, p, 2, dtype=torch.float64, device=pts.device)
    if p > 2:
        eq_ok = (j[: p - 2] + 1 < (n - 1)[..., None])[..., None]  # interior knot i = k + 1 is real
        lower = torch.where(eq_ok[..., 0], h[..., :-1], 0.0)
        diag = torch.where(eq_ok[..., 0], 2 * (h[..., :-1] + h[..., 1:]), 1.0)
        upper = torch.where(eq_ok[..., 0], h[..., 1:], 0.0)
        rhs = torch.where(eq_ok, 6 * (slope[..., 1:, :] - slope[..., :-1, :]), 0.0)
        m[..., 1 : p - 1, :] = solve_tridiagonal(lower, diag, upper, rhs)
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


def row_intervals(
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


def draw_lanes_in_chunks(curve: Tensor, drawn: Tensor, height: int, width: int, line_width: float) -> Tensor:
    """:func:`draw_lanes` of one image's ``(L, N, 2)`` curves (``(L, H, W)`` bools), a few lanes per call so that
    its ``(lanes, segments, rows)`` temporaries stay below ~2**20 elements whatever the number of lanes."""
    per_call = max(1, 2**20 // max(1, curve.shape[1] * height))
    parts = [
        draw_lanes(curve[None, k : k + per_call], height, width, line_width, drawn[None, k : k + per_call])[0]
        for k in range(0, curve.shape[0], per_call)
    ]
    return torch.cat(parts) if parts else torch.zeros(0, height, width, dtype=torch.bool, device=curve.device)
