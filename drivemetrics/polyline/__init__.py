"""Polyline geometry shared by the lane-topology (OpenLane-V2) and vectorised-map (MapTR / Argoverse 2) metrics.

Layer 1 (imports torch only, defines no Metric). Sets of polylines are padded tensors ``points (..., N, P, D)``
(``D`` = 2 or 3, metres) with ``lengths (..., N)`` valid point counts (0 = absent polyline); see
:mod:`drivemetrics.polyline.ragged`. Every kernel is batched over the leading dims and runs on the inputs' device.

- :mod:`~drivemetrics.polyline.resample`: ``arc_length``, ``interpolate_at``, ``resample_by_count`` (even arc
  length, ends included), ``resample_by_spacing`` (fixed spacing, numpy ``arange`` end effects).
- :mod:`~drivemetrics.polyline.chamfer`: ``chamfer_distance`` (paired), ``chamfer_distance_matrix`` (all pairs
  of each frame) and ``chamfer_distance_pairs`` (pairs listed by index into two sets of lines), reduction
  ``"mean"`` / ``"sum"`` / ``"max"`` / one direction; differentiable.
- :mod:`~drivemetrics.polyline.frechet`: ``frechet_distance_matrix`` (same call signature as
  ``chamfer_distance_matrix``), ``frechet_distance_pairs`` and ``soft_frechet_distance_pairs`` (log-sum-exp, for
  losses), ``bounded_frechet_distance_pairs`` (banded, exact up to a bound, pruned above it); anti-diagonal
  dynamic programme.
- :mod:`~drivemetrics.polyline.matching`: ``greedy_match`` (nearest target only, or with fall-back; inclusive or
  strict threshold), ``greedy_match_index`` (the same, with the matched target's index), ``nearest_target``,
  ``score_rank``.
- :mod:`~drivemetrics.polyline.average_precision`: ``pooled_precision_recall``, ``average_precision_area`` (VOC),
  ``average_precision_11point`` / ``interpolated_precision_11point`` (float64 grid).
"""

from drivemetrics.polyline.average_precision import (
    average_precision_11point,
    average_precision_area,
    interpolated_precision_11point,
    pooled_precision_recall,
)
from drivemetrics.polyline.chamfer import (
    ChamferReduction,
    chamfer_distance,
    chamfer_distance_matrix,
    chamfer_distance_pairs,
    point_distance_matrix,
)
from drivemetrics.polyline.frechet import (
    bounded_frechet_distance_pairs,
    frechet_distance_matrix,
    frechet_distance_pairs,
    soft_frechet_distance_pairs,
)
from drivemetrics.polyline.matching import greedy_match, greedy_match_index, nearest_target, score_rank
from drivemetrics.polyline.ragged import (
    check_polylines,
    drop_closing_point,
    pad_polylines,
    point_mask,
    unpad_polylines,
)
from drivemetrics.polyline.resample import arc_length, interpolate_at, resample_by_count, resample_by_spacing

__all__ = [
    "ChamferReduction",
    "arc_length",
    "average_precision_11point",
    "average_precision_area",
    "bounded_frechet_distance_pairs",
    "chamfer_distance",
    "chamfer_distance_matrix",
    "chamfer_distance_pairs",
    "check_polylines",
    "drop_closing_point",
    "frechet_distance_matrix",
    "frechet_distance_pairs",
    "greedy_match",
    "greedy_match_index",
    "interpolate_at",
    "interpolated_precision_11point",
    "nearest_target",
    "pad_polylines",
    "point_distance_matrix",
    "point_mask",
    "pooled_precision_recall",
    "resample_by_count",
    "resample_by_spacing",
    "score_rank",
    "soft_frechet_distance_pairs",
    "unpad_polylines",
]
