"""Type stub of the lazy exports of :mod:`drivemetrics.lanetopology` (kept equal to ``_EXPORTS``)."""

from drivemetrics.lanetopology.evaluate import evaluate_openlanev2 as evaluate_openlanev2
from drivemetrics.lanetopology.evaluate import evaluate_openlanev2_files as evaluate_openlanev2_files
from drivemetrics.lanetopology.frames import LaneFrame as LaneFrame
from drivemetrics.lanetopology.frames import parse_frame as parse_frame
from drivemetrics.lanetopology.io import read_ground_truth as read_ground_truth
from drivemetrics.lanetopology.io import read_predictions as read_predictions
from drivemetrics.lanetopology.matching_loss import LaneMatchingLoss as LaneMatchingLoss
from drivemetrics.lanetopology.matching_loss import lane_matching_loss as lane_matching_loss
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
from drivemetrics.lanetopology.openlanev2 import openlanev2_scores as openlanev2_scores
