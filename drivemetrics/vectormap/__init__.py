"""Vectorised HD-map metrics: per-class Chamfer AP of predicted map polylines (lane dividers, pedestrian crossings,
road boundaries) as MapTR (nuScenes) and the CVPR 2023 Argoverse 2 online-map challenge score it, and a
permutation-invariant Chamfer loss for training map heads.

Polylines are padded tensors ``(B, N, P, D)`` in metres (ego frame) with ``lengths (B, N)``; see
:mod:`drivemetrics.polyline`. The package exports classes, readers and the dataset evaluation; the kernels
(``vector_map_ap``, ``vector_map_matches``, ``vector_map_ap_from_matches``, ``map_chamfer_loss``) are in
:mod:`drivemetrics.functional`.
"""

from drivemetrics._internal.lazy import lazy_exports

#: Metric and loss classes, exported by ``drivemetrics`` too (its stub: python -m drivemetrics._internal.stubs).
_METRICS = {
    "ConsistentMapAPMetrics": "drivemetrics.vectormap.cmap",
    "ConsistentMapAveragePrecision": "drivemetrics.vectormap.cmap",
    "ConsistentMapMeanAveragePrecision": "drivemetrics.vectormap.cmap",
    "MapChamferLoss": "drivemetrics.vectormap.chamfer_loss",
    "VectorMapAPMetrics": "drivemetrics.vectormap.map_ap",
    "VectorMapAveragePrecision": "drivemetrics.vectormap.map_ap",
    "VectorMapMeanAveragePrecision": "drivemetrics.vectormap.map_ap",
}
_EXPORTS = {
    **_METRICS,
    "MapEvaluation": "drivemetrics.vectormap.evaluate",
    "MapFrame": "drivemetrics.vectormap.io",
    "STREAM_RANGES": "drivemetrics.vectormap.protocol",
    "TrackSettings": "drivemetrics.vectormap.consistency",
    "consistent_map_example_inputs": "drivemetrics.vectormap.examples",
    "evaluate_cmap": "drivemetrics.vectormap.consistency",
    "MapProtocol": "drivemetrics.vectormap.protocol",
    "MapSample": "drivemetrics.vectormap.io",
    "PROTOCOLS": "drivemetrics.vectormap.protocol",
    "evaluate_map_files": "drivemetrics.vectormap.evaluate",
    "evaluate_map_samples": "drivemetrics.vectormap.evaluate",
    "pack_samples": "drivemetrics.vectormap.io",
    "read_map_gt": "drivemetrics.vectormap.io",
    "read_map_preds": "drivemetrics.vectormap.io",
    "read_maptracker_samples": "drivemetrics.vectormap.io",
    "read_streammapnet_gt": "drivemetrics.vectormap.io",
    "vector_map_example_inputs": "drivemetrics.vectormap.examples",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
