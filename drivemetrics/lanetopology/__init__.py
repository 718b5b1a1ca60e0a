"""Lane topology as OpenLane-V2 scores it: OLS and OLUS with their sub-scores, readers of the devkit's pickles, the
``openlanev2-eval`` command and a differentiable lane matching loss.

This package exports the classes (Metric, loss, frame); the kernels ``openlanev2_scores`` and
``lane_matching_loss`` are in :mod:`drivemetrics.functional`, the readers in :mod:`drivemetrics.lanetopology.io`,
the dataset evaluation in :mod:`drivemetrics.lanetopology.evaluate`.

Coordinates: BEV metres, ego at the origin, x forward, y left, z up; traffic-element boxes in image pixels.
"""

from drivemetrics._internal.lazy import lazy_exports

#: Metric and loss classes, exported by ``drivemetrics`` too (its stub: python -m drivemetrics._internal.stubs).
_METRICS = {
    "LaneMatchingLoss": "drivemetrics.lanetopology.matching_loss",
    "OpenLaneV2AreaAP": "drivemetrics.lanetopology.openlanev2",
    "OpenLaneV2F1Score": "drivemetrics.lanetopology.openlanev2",
    "OpenLaneV2LaneAP": "drivemetrics.lanetopology.openlanev2",
    "OpenLaneV2LaneElementTopology": "drivemetrics.lanetopology.openlanev2",
    "OpenLaneV2LaneTopology": "drivemetrics.lanetopology.openlanev2",
    "OpenLaneV2Metrics": "drivemetrics.lanetopology.openlanev2",
    "OpenLaneV2Score": "drivemetrics.lanetopology.openlanev2",
    "OpenLaneV2TrafficElementAP": "drivemetrics.lanetopology.openlanev2",
    "OpenLaneV2UniScore": "drivemetrics.lanetopology.openlanev2",
    "OpenLaneV2UniScoreMetrics": "drivemetrics.lanetopology.openlanev2",
}
_EXPORTS = {
    **_METRICS,
    "LaneFrame": "drivemetrics.lanetopology.frames",
    "openlanev2_example_inputs": "drivemetrics.lanetopology.examples",
}

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = sorted(_EXPORTS)
