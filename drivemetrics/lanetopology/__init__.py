"""Lane topology as OpenLane-V2 scores it: OLS and OLUS with their sub-scores, readers of the devkit's pickles, the
``openlanev2-eval`` command and a differentiable lane matching loss.

Coordinates: BEV metres, ego at the origin, x forward, y left, z up; traffic-element boxes in image pixels.
"""

from drivemetrics._lazy import lazy_exports

_EXPORTS = {
    "LaneFrame": "drivemetrics.lanetopology.frames",
    "parse_frame": "drivemetrics.lanetopology.frames",
    "OpenLaneV2Metrics": "drivemetrics.lanetopology.openlanev2",
    "OpenLaneV2Score": "drivemetrics.lanetopology.openlanev2",
    "OpenLaneV2UniScore": "drivemetrics.lanetopology.openlanev2",
    "OpenLaneV2UniScoreMetrics": "drivemetrics.lanetopology.openlanev2",
    "LaneMatchingLoss": "drivemetrics.lanetopology.matching_loss",
    "lane_matching_loss": "drivemetrics.lanetopology.matching_loss",
    "evaluate_openlanev2": "drivemetrics.lanetopology.evaluate",
    "evaluate_openlanev2_files": "drivemetrics.lanetopology.evaluate",
    "read_ground_truth": "drivemetrics.lanetopology.io",
    "read_predictions": "drivemetrics.lanetopology.io",
    "OpenLaneV2LaneAP": "drivemetrics.lanetopology.openlanev2",
    "OpenLaneV2TrafficElementAP": "drivemetrics.lanetopology.openlanev2",
    "OpenLaneV2AreaAP": "drivemetrics.lanetopology.openlanev2",
    "OpenLaneV2LaneTopology": "drivemetrics.lanetopology.openlanev2",
    "OpenLaneV2LaneElementTopology": "drivemetrics.lanetopology.openlanev2",
    "OpenLaneV2F1Score": "drivemetrics.lanetopology.openlanev2",
    "openlanev2_scores": "drivemetrics.lanetopology.openlanev2",
}

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = sorted(_EXPORTS)
