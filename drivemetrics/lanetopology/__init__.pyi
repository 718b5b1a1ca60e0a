"""Type stub of the lazy exports of :mod:`drivemetrics.lanetopology` (kept equal to ``_EXPORTS``)."""

from drivemetrics.lanetopology.frames import LaneFrame as LaneFrame
from drivemetrics.lanetopology.matching_loss import LaneMatchingLoss as LaneMatchingLoss
from drivemetrics.lanetopology.openlanev2 import OpenLaneV2AreaAP as OpenLaneV2AreaAP
from drivemetrics.lanetopology.openlanev2 import OpenLaneV2F1Score as OpenLaneV2F1Score
from drivemetrics.lanetopology.openlanev2 import OpenLaneV2LaneAP as OpenLaneV2LaneAP
from drivemetrics.lanetopology.openlanev2 import OpenLaneV2LaneElementTopology as OpenLaneV2LaneElementTopology
from drivemetrics.lanetopology.openlanev2 import OpenLaneV2LaneTopology as OpenLaneV2LaneTopology
from drivemetrics.lanetopology.openlanev2 import OpenLaneV2Metrics as OpenLaneV2Metrics
from drivemetrics.lanetopology.openlanev2 import OpenLaneV2Score as OpenLaneV2Score
from drivemetrics.lanetopology.openlanev2 import OpenLaneV2TrafficElementAP as OpenLaneV2TrafficElementAP
from drivemetrics.lanetopology.openlanev2 import OpenLaneV2UniScore as OpenLaneV2UniScore
from drivemetrics.lanetopology.openlanev2 import OpenLaneV2UniScoreMetrics as OpenLaneV2UniScoreMetrics

__all__ = [
    "LaneFrame",
    "LaneMatchingLoss",
    "OpenLaneV2AreaAP",
    "OpenLaneV2F1Score",
    "OpenLaneV2LaneAP",
    "OpenLaneV2LaneElementTopology",
    "OpenLaneV2LaneTopology",
    "OpenLaneV2Metrics",
    "OpenLaneV2Score",
    "OpenLaneV2TrafficElementAP",
    "OpenLaneV2UniScore",
    "OpenLaneV2UniScoreMetrics",
]
