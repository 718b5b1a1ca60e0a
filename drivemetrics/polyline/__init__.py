"""Polyline geometry shared by the lane-topology (OpenLane-V2) and vectorised-map (MapTR / Argoverse 2) metrics.

Layer 1 (imports torch only, defines no Metric; the names are imported on first use, so the torch-free kernels
below can be imported without torch). Sets of polylines are padded tensors ``points (..., N, P, D)``
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

Written once for numpy arrays and torch tensors (:mod:`drivemetrics._internal.arrays`; with numpy they never import
torch, as the ``openlanev2-eval`` command needs): :mod:`~drivemetrics.polyline.bounded_frechet`,
:mod:`~drivemetrics.polyline.pairs` (paired Chamfer without gradient, ``drop_closing_point``),
:mod:`~drivemetrics.polyline.matching` and :mod:`~drivemetrics.polyline.average_precision`.
"""

from drivemetrics._internal.lazy import lazy_exports

_EXPORTS = {
    "ChamferReduction": "drivemetrics.polyline.chamfer",
    "arc_length": "drivemetrics.polyline.resample",
    "average_precision_11point": "drivemetrics.polyline.average_precision",
    "average_precision_area": "drivemetrics.polyline.average_precision",
    "bounded_frechet_distance_pairs": "drivemetrics.polyline.bounded_frechet",
    "chamfer_distance": "drivemetrics.polyline.chamfer",
    "chamfer_distance_matrix": "drivemetrics.polyline.chamfer",
    "chamfer_distance_pairs": "drivemetrics.polyline.chamfer",
    "check_polylines": "drivemetrics.polyline.ragged",
    "drop_closing_point": "drivemetrics.polyline.pairs",
    "frechet_distance_matrix": "drivemetrics.polyline.frechet",
    "frechet_distance_pairs": "drivemetrics.polyline.frechet",
    "greedy_match": "drivemetrics.polyline.matching",
    "greedy_match_index": "drivemetrics.polyline.matching",
    "interpolate_at": "drivemetrics.polyline.resample",
    "interpolated_precision_11point": "drivemetrics.polyline.average_precision",
    "nearest_target": "drivemetrics.polyline.matching",
    "pad_polylines": "drivemetrics.polyline.ragged",
    "point_distance_matrix": "drivemetrics.polyline.chamfer",
    "point_mask": "drivemetrics.polyline.ragged",
    "pooled_precision_recall": "drivemetrics.polyline.average_precision",
    "resample_by_count": "drivemetrics.polyline.resample",
    "resample_by_spacing": "drivemetrics.polyline.resample",
    "score_rank": "drivemetrics.polyline.matching",
    "soft_frechet_distance_pairs": "drivemetrics.polyline.frechet",
    "unpad_polylines": "drivemetrics.polyline.ragged",
}

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = sorted(_EXPORTS)
