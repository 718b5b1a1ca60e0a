"""Resampling polylines along their arc length, batched over any number of leading dimensions.

Positions follow GEOS' ``LineString.interpolate`` exactly (segment lengths ``sqrt(dx*dx + dy*dy [+ dz*dz])``
accumulated in order, the segment found by ``cumulative end > position``, then ``p0 + t * (p1 - p0)``), so that
compat presets reproduce shapely-based evaluators bit for bit on the CPU. (On CUDA ``cumsum`` may round the
cumulative lengths differently in the last bit.)
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from drivemetrics._internal.validation import check_finite
from drivemetrics.polyline.ragged import check_polylines, point_mask

__all__ = ["arc_length", "interpolate_at", "resample_by_count", "resample_by_spacing"]


def _segment_lengths(points: Tensor, lengths: Tensor) -> Tensor:
    """``(..., N, P - 1)`` lengths of the valid segments (0 for padding), coordinates summed in order."""
    delta = points[..., 1:, :] - points[..., :-1, :]
    squared = delta[..., 0] * delta[..., 0]
    for d in range(1, points.shape[-1]):
        squared = squared + delta[..., d] * delta[..., d]
    valid = point_mask(lengths, points.shape[-2])[..., 1:]
    positive = squared > 0
    # sqrt with a zero gradient at zero length (duplicate points), exact values elsewhere
    seg = torch.where(positive, squared, torch.ones_like(squared)).sqrt() * positive
    return torch.where(valid, seg, torch.zeros_like(seg))


def arc_length(points: Tensor, lengths: Tensor, *, validate_args: bool = True) -> Tensor:
    """Total length of each polyline, ``(..., N)`` in the points' unit (metres); 0 for 0- and 1-point lines.

    Args:
        points: ``(..., N, P, D)`` polyline points.
        lengths: ``(..., N)`` valid point counts.
        validate_args: check the inputs' values (reads back from the device); ``False`` skips those checks.

    Examples:
        >>> from drivemetrics.polyline import arc_length
        >>> import torch
        >>> arc_length(torch.tensor([[[0.0, 0.0], [3.0, 4.0], [3.0, 5.0]]]), torch.tensor([3]))
        tensor([6.])
    """
    check_polylines(points, lengths, check_values=validate_args)
    if points.shape[-2] < 2:
        return points.new_zeros(lengths.shape)
    return _segment_lengths(points, lengths).cumsum(-1)[..., -1]


def interpolate_at(points: Tensor, lengths: Tensor, positions: Tensor, *, validate_args: bool = True) -> Tensor:
    """Points at arc-length ``positions`` along each polyline (GEOS ``interpolate`` semantics).

    Args:
        points: ``(..., N, P, D)`` polyline points.
        lengths: ``(..., N)`` valid point counts (a 1-point line gives its point at every position; a 0-point line
            gives zeros).
        positions: ``(..., N, K)`` arc-length positions (metres), clamped to ``[0, length]``.
        validate_args: check the inputs' values (reads back from the device); ``False`` skips those checks.

    Returns:
        ``(..., N, K, D)`` interpolated points, differentiable in ``points``.

    Examples:
        >>> import torch
        >>> from drivemetrics.polyline import interpolate_at
        >>> line = torch.tensor([[[0.0, 0.0], [2.0, 0.0], [2.0, 2.0]]])
        >>> interpolate_at(line, torch.tensor([3]), torch.tensor([[0.0, 1.0, 3.0, 4.0]]))
        tensor([[[0., 0.],
                 [1., 0.],
                 [2., 1.],
                 [2., 2.]]])
    """
    check_polylines(points, lengths, check_values=validate_args)
    num_points = points.shape[-2]
    if num_points < 2:
        return points[..., :1, :].expand(*positions.shape, points.shape[-1]).clone()
    seg = _segment_lengths(points, lengths)
    cum_end = seg.cumsum(-1)  # (..., N, P - 1): same in-order sums as GEOS' running total
    # exact running starts: GEOS adds segment lengths one by one, so cum_start[k] is cum_end[k - 1]
    cum_start = torch.cat([torch.zeros_like(cum_end[..., :1]), cum_end[..., :-1]], dim=-1)
    num_segments = (lengths - 1).clamp_min(0)
    positions = positions.clamp_min(0)
    # segment index = number of valid segments whose cumulative end is <= position (the first with end > position)
    ends = torch.where(point_mask(num_segments, num_points - 1), cum_end, torch.full_like(cum_end, math.inf))
    index = torch.searchsorted(ends.detach().contiguous(), positions.detach().to(ends.dtype).contiguous(), right=True)
    at_end = index >= num_segments.unsqueeze(-1)
    index = index.clamp(max=num_points - 2)
    start = cum_start.gather(-1, index)
    length_of = seg.gather(-1, index)
    safe_length = torch.where(length_of > 0, length_of, torch.ones_like(length_of))
    fraction = torch.where(at_end | (length_of <= 0), torch.zeros_like(start), (positions - start) / safe_length)
    dim = points.shape[-1]
    gather_index = index.unsqueeze(-1).expand(*index.shape, dim)
    p0 = points.gather(-2, gather_index)
    p1 = points.gather(-2, gather_index + 1)
    interpolated = p0 + fraction.unsqueeze(-1) * (p1 - p0)
    last_index = (lengths - 1).clamp_min(0)
    last = points.gather(-2, last_index[..., None, None].expand(*lengths.shape, 1, dim))
    result = torch.where(at_end.unsqueeze(-1), last.expand_as(interpolated), interpolated)
    return torch.where((lengths > 0)[..., None, None], result, torch.zeros_like(result))


def resample_by_count(points: Tensor, lengths: Tensor, *, num_samples: int, validate_args: bool = True) -> Tensor:
    """``num_samples`` points at evenly spaced arc length, from 0 to the full length inclusive.

    Positions are ``linspace(0, L, num_samples)`` as numpy computes them (``i * (L / (n - 1))``, last = ``L``),
    which is what MapTR's evaluator feeds to shapely. A closed ring gives first sample = last sample.

    Args:
        points: ``(..., N, P, D)`` polyline points (metres).
        lengths: ``(..., N)`` valid point counts.
        num_samples: output point count (>= 2).
        validate_args: refuse ``lengths`` outside ``[0, P]`` and NaN or infinite points (a read-back);
            ``False`` skips those checks (the shapes are always checked).

    Returns:
        ``(..., N, num_samples, D)``; every output line is full (lengths ``num_samples``), except 0-point inputs
        which give zeros.

    Examples:
        >>> from drivemetrics.polyline import resample_by_count
        >>> import torch
        >>> resample_by_count(torch.tensor([[[0.0, 0.0], [4.0, 0.0]]]), torch.tensor([2]), num_samples=5)[0, :, 0]
        tensor([0., 1., 2., 3., 4.])
    """
    check_polylines(points, lengths, "points", check_values=validate_args)
    if validate_args:
        check_finite(points, "points")
    if num_samples < 2:
        raise ValueError(f"`num_samples` must be >= 2, got {num_samples}")
    total = arc_length(points, lengths)
    step = total / (num_samples - 1)
    index = torch.arange(num_samples, device=points.device, dtype=points.dtype)
    positions = index * step.unsqueeze(-1)
    positions = torch.cat([positions[..., :-1], total.unsqueeze(-1)], dim=-1)
    return interpolate_at(points, lengths, positions)


def resample_by_spacing(
    points: Tensor, lengths: Tensor, *, spacing: float, max_samples: int = 100_000, validate_args: bool = True
) -> tuple[Tensor, Tensor]:
    """Points every ``spacing`` metres along each polyline, plus both end points, as numpy's ``arange`` gives them.

    Positions: ``0``, then ``arange(spacing, L, spacing)`` (values ``spacing + i * spacing`` for
    ``i < ceil((L - spacing) / spacing)``, computed in the points' dtype), then ``L``. So the count depends on the
    length, the last gap can be tiny, and where ``L`` is (nearly) a multiple of ``spacing`` rounding may add a
    position just below ``L`` (numpy's end effect, reproduced). Lines shorter than ``spacing`` get their two ends.
    This is the CVPR 2023 Argoverse 2 map challenge's resampling (``spacing = 0.3``).

    Args:
        points: ``(..., N, P, D)`` polyline points (metres).
        lengths: ``(..., N)`` valid point counts.
        spacing: sample distance in metres (> 0).
        max_samples: a line needing more samples than this raises ``ValueError`` (cost bounded by input size).
        validate_args: refuse ``lengths`` outside ``[0, P]`` and NaN or infinite points (a read-back);
            ``False`` skips those checks (the shapes are always checked).

    Returns:
        ``(samples (..., N, M, D), sample_lengths (..., N))`` with ``M`` the largest count; 0-point inputs give
        ``sample_lengths`` 0.

    Examples:
        >>> from drivemetrics.polyline import resample_by_spacing
        >>> import torch
        >>> samples, counts = resample_by_spacing(torch.tensor([[[0.0, 0.0], [1.0, 0.0]]], dtype=torch.float64),
        ...                                       torch.tensor([2]), spacing=0.3)
        >>> samples[0, : int(counts[0]), 0].tolist()
        [0.0, 0.3, 0.6, 0.8999999999999999, 1.0]
    """
    check_polylines(points, lengths, "points", check_values=validate_args)
    if validate_args:
        check_finite(points, "points")
    if not spacing > 0:
        raise ValueError(f"`spacing` must be > 0, got {spacing}")
    total = arc_length(points, lengths)
    # numpy arange: length ceil((stop - start) / step), values start + i * delta with delta = (start + step) - start
    delta = (spacing + spacing) - spacing
    inner = torch.ceil((total - spacing) / spacing).clamp_min(0)
    inner = torch.where(lengths > 0, inner, torch.zeros_like(inner)).to(torch.long)
    largest = int(inner.max()) + 2 if inner.numel() else 2
    if largest > max_samples:
        raise ValueError(
            f"a polyline of length {float(total.max()):.6g} needs {largest} samples at spacing {spacing}, "
            f"more than `max_samples` = {max_samples}"
        )
    counts = torch.where(lengths > 0, inner + 2, torch.zeros_like(inner))
    i = torch.arange(largest, device=points.device, dtype=total.dtype)
    # slot 0 -> 0; slot k in 1..inner -> spacing + (k - 1) * delta; slot inner + 1 -> L; beyond -> L (padding)
    positions = spacing + (i - 1) * delta
    positions = positions.expand(*total.shape, largest).clone()
    positions[..., 0] = 0.0
    slot = torch.arange(largest, device=points.device)
    beyond = slot > inner.unsqueeze(-1)
    positions = torch.where(beyond, total.unsqueeze(-1).expand_as(positions), positions)
    return interpolate_at(points, lengths, positions), counts
