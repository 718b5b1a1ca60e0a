"""OpenLane (v1) 3D lanes, step 1 of the evaluator: packed lanes (:class:`OpenLane3DLanes`: every lane's points back to
back), the lane filter (first point before y = 102 m, last after y = 3 m, 2 valid points) and the resampling of x and
z at y = 3, 4, ..., 102 m with the samples' visibility. No Metric here: :mod:`drivemetrics.lane3d.openlane` holds the
family's kernels and Metric classes.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import torch
from torch import Tensor

from drivemetrics._internal import arrays

__all__ = [
    "Y_SAMPLES",
    "OpenLane3DLanes",
    "lanes_from_padded",
    "resample_lanes",
]


#: The y samples of the evaluator, metres: 3, 4, ..., 102.
Y_SAMPLES = tuple(float(y) for y in range(3, 103))


X_RANGE = 10.0


Y_FIRST_MAX, Y_LAST_MIN = 102.0, 3.0  # a lane is kept when its first point is before 102 m and its last after 3 m


Y_POINT_RANGE = (0.0, 200.0)


class OpenLane3DLanes(NamedTuple):
    """The lanes of a batch of frames, lane after lane, without padding (what the file evaluation packs).

    ``points`` ``(T, 3)`` float64 ground-frame points of all lanes, lane after lane, metres; ``lengths`` ``(M,)``
    long points per lane (> 0); ``frame`` ``(M,)`` long, the frame of each lane (non-decreasing); ``index`` ``(M,)``
    long, its position among its frame's lanes; ``labels`` ``(M,)`` long categories; ``visibility`` ``(T,)`` per
    point (annotations) or ``None``.

    Examples:
        >>> import torch
        >>> from drivemetrics.functional import openlane3d_lane_matches
        >>> from drivemetrics.lane3d.resample import OpenLane3DLanes
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


def lanes_from_padded(
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


def resample_lanes(lanes: OpenLane3DLanes, use_visibility: bool, order_free: bool) -> dict[str, Tensor]:
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
