"""Lanes of a batch of frames packed lane after lane (no padding), the input of the Apollo and ONCE kernels.

Defines no Metric: :mod:`drivemetrics.lane3d.apollo` and :mod:`drivemetrics.lane3d.once` both read it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from drivemetrics._internal import arrays
from drivemetrics._internal.validation import check_coordinates_within_limit

__all__ = [
    "PackedLanes",
    "check_lane_list",
    "check_packed_values",
    "pack_lane_lists",
    "packed_from_padded",
]

#: The readers' limit on 3D lane coordinates (:mod:`drivemetrics.lane3d.io`), applied by ``validate_args``.
_LIMIT = "max_lane3d_abs_metres"


class PackedLanes(NamedTuple):
    """Lanes of ``B`` frames, lane after lane: numpy arrays or torch tensors (any device).

    ``points`` ``(T, 3)`` float points of all lanes, metres; ``lengths`` ``(M,)`` int points per lane (0 allowed);
    ``frame`` ``(M,)`` int frame of each lane (non-decreasing); ``scores`` ``(M,)`` float lane probabilities /
    scores (predictions) or ``None``; ``visibility`` ``(T,)`` per point (GT) or ``None``.

    Examples:
        >>> import numpy as np
        >>> from drivemetrics.lane3d.packed import pack_lane_lists
        >>> lanes = pack_lane_lists([[np.zeros((2, 3))], [np.ones((3, 3)), np.ones((1, 3))]], scores=[[0.5], [0.2, 1]])
        >>> lanes.lengths.tolist(), lanes.frame.tolist(), lanes.scores.tolist()
        ([2, 3, 1], [0, 1, 1], [0.5, 0.2, 1.0])
    """

    points: Any
    lengths: Any
    frame: Any
    scores: Any = None
    visibility: Any = None


def pack_lane_lists(
    frames: Sequence[Sequence[Any]],
    scores: Sequence[Sequence[float]] | None = None,
    visibility: Sequence[Sequence[Any]] | None = None,
) -> PackedLanes:
    """Pack per-frame lists of ``(n, 3)`` lanes (numpy float64): see :class:`PackedLanes`."""
    lanes = [np.asarray(lane, dtype=np.float64).reshape(-1, 3) for frame in frames for lane in frame]
    lengths = np.fromiter(map(len, lanes), np.int64, len(lanes))
    frame = np.repeat(np.arange(len(frames)), np.fromiter(map(len, frames), np.int64, len(frames)))
    points = np.concatenate(lanes) if lanes else np.zeros((0, 3))
    packed_scores = None
    if scores is not None:
        packed_scores = np.asarray([float(s) for frame_scores in scores for s in frame_scores], dtype=np.float64)
        if packed_scores.shape[0] != len(lanes):
            raise ValueError(f"`scores` has {packed_scores.shape[0]} values for {len(lanes)} lanes")
    packed_vis = None
    if visibility is not None:
        parts = [np.asarray(v, dtype=np.float64).reshape(-1) for frame_vis in visibility for v in frame_vis]
        packed_vis = np.concatenate(parts) if parts else np.zeros(0)
        if packed_vis.shape[0] != points.shape[0]:
            raise ValueError(f"`visibility` has {packed_vis.shape[0]} values for {points.shape[0]} points")
    return PackedLanes(points, lengths, frame, packed_scores, packed_vis)


def packed_from_padded(
    points: Any, lengths: Any = None, scores: Any = None, visibility: Any = None, *, name: str = "lanes"
) -> PackedLanes:
    """Padded ``(B, L, N, 3)`` lanes with ``(B, L)`` point counts (default: all ``N``; 0: no lane), ``(B, L)``
    scores and ``(B, L, N)`` visibility as :class:`PackedLanes` (host numpy arrays), lanes with 0 points left out."""
    pts = arrays.to_numpy(points)
    if pts.ndim != 4 or pts.shape[-1] != 3:
        raise ValueError(f"`{name}['points']` must be (B, L, N, 3), got {tuple(pts.shape)}")
    batch, count, num = pts.shape[:3]
    n = np.full((batch, count), num, dtype=np.int64) if lengths is None else arrays.to_numpy(lengths).astype(np.int64)
    if n.shape != (batch, count):
        raise ValueError(f"`{name}['lengths']` must be (B, L) = {(batch, count)}, got {tuple(n.shape)}")
    if (n < 0).any() or (n > num).any():
        raise ValueError(f"`{name}['lengths']` must lie in [0, {num}]")
    frame, index = np.nonzero(n > 0)
    mask = np.arange(num) < n[frame, index][:, None]
    packed_scores = None
    if scores is not None:
        s = arrays.to_numpy(scores).astype(np.float64)
        if s.shape != (batch, count):
            raise ValueError(f"`{name}['scores']` must be (B, L) = {(batch, count)}, got {tuple(s.shape)}")
        packed_scores = s[frame, index]
    packed_vis = None
    if visibility is not None:
        v = arrays.to_numpy(visibility).astype(np.float64)
        if v.shape != (batch, count, num):
            raise ValueError(f"`{name}['visibility']` must be (B, L, N) = {(batch, count, num)}, got {tuple(v.shape)}")
        packed_vis = v[frame, index][mask]
    return PackedLanes(pts[frame, index][mask].astype(np.float64), n[frame, index], frame, packed_scores, packed_vis)


def check_packed(lanes: PackedLanes, name: str, frames: int, scores: bool, visibility: bool) -> PackedLanes:
    """``lanes`` as host numpy arrays, checked: shapes agree, finite points, frames in ``[0, frames)`` in order,
    scores / visibility present when needed (a one-line ``ValueError`` naming ``name``)."""
    points = arrays.to_numpy(lanes.points).astype(np.float64, copy=False)
    lengths = arrays.to_numpy(lanes.lengths).astype(np.int64, copy=False)
    frame = arrays.to_numpy(lanes.frame).astype(np.int64, copy=False)
    if points.ndim != 2 or points.shape[1] != 3:
        raise ValueError(f"`{name}.points` must be (T, 3), got {tuple(points.shape)}")
    if lengths.ndim != 1 or frame.shape != lengths.shape:
        raise ValueError(f"`{name}.lengths` and `{name}.frame` must both be (M,)")
    if (lengths < 0).any() or int(lengths.sum()) != points.shape[0]:
        raise ValueError(f"`{name}.lengths` must be >= 0 and sum to the {points.shape[0]} points")
    if frame.size and ((frame < 0).any() or (frame >= frames).any() or (np.diff(frame) < 0).any()):
        raise ValueError(f"`{name}.frame` must be non-decreasing frame indices in [0, {frames})")
    if not np.isfinite(points).all():
        raise ValueError(f"`{name}.points` must be finite")
    out_scores = None
    if scores:
        if lanes.scores is None:
            raise ValueError(f"`{name}.scores` is required")
        out_scores = arrays.to_numpy(lanes.scores).astype(np.float64, copy=False)
        if out_scores.shape != lengths.shape or not np.isfinite(out_scores).all():
            raise ValueError(f"`{name}.scores` must be (M,) finite values")
    out_vis = None
    if visibility and lanes.visibility is not None:
        out_vis = arrays.to_numpy(lanes.visibility).astype(np.float64, copy=False)
        if out_vis.shape != (points.shape[0],):
            raise ValueError(f"`{name}.visibility` must be (T,) = ({points.shape[0]},)")
    return PackedLanes(points, lengths, frame, out_scores, out_vis)


def check_packed_values(lanes: PackedLanes, name: str) -> None:
    """The ``validate_args`` value check of checked packed lanes (:func:`check_packed`): every point within the
    readers' ``max_lane3d_abs_metres`` (one-line ``ValueError`` naming ``name.points``). Scores are not bounded:
    the readers take any finite score, as the official tools."""
    check_coordinates_within_limit(lanes.points, f"{name}.points", limit=_LIMIT)


def check_lane_list(lanes: Sequence[Any], name: str) -> None:
    """``validate_args`` of the per-frame kernels: every ``(n, 3)`` lane of ``lanes`` finite and within the
    readers' ``max_lane3d_abs_metres`` (one-line ``ValueError`` naming ``name``)."""
    parts = [np.asarray(lane, dtype=np.float64).reshape(-1) for lane in lanes]
    check_coordinates_within_limit(np.concatenate(parts) if parts else np.zeros(0), name, limit=_LIMIT)
