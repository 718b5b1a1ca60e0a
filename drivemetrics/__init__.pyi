"""Type stub of :mod:`drivemetrics` (sub-packages and classes are imported lazily at run time)."""

from drivemetrics import (
    attack as attack,
)
from drivemetrics import (
    detection as detection,
)
from drivemetrics import (
    functional as functional,
)
from drivemetrics import (
    geometry as geometry,
)
from drivemetrics import (
    lane as lane,
)
from drivemetrics import (
    lane3d as lane3d,
)
from drivemetrics import (
    lanegraph as lanegraph,
)
from drivemetrics import (
    lanetopology as lanetopology,
)
from drivemetrics import (
    polyline as polyline,
)
from drivemetrics import (
    road as road,
)
from drivemetrics import (
    roadnet as roadnet,
)
from drivemetrics import (
    vectormap as vectormap,
)
from drivemetrics import (
    vehicle as vehicle,
)
from drivemetrics.detection.kitti_object import KittiObjectAveragePrecision, KittiObjectMetrics
from drivemetrics.lane.culane import CULaneF1Score, CULaneMetrics, CULanePrecision, CULaneRecall
from drivemetrics.lane.psld import PSLD, PSLDLoss
from drivemetrics.lane.tusimple import (
    TuSimpleAccuracy,
    TuSimpleF1Score,
    TuSimpleFalseNegatives,
    TuSimpleFalsePositives,
    TuSimpleMetrics,
)
from drivemetrics.lane3d.openlane import (
    OpenLane3DCategoryAccuracy,
    OpenLane3DFScore,
    OpenLane3DMetrics,
    OpenLane3DPrecision,
    OpenLane3DRecall,
    OpenLane3DXErrorClose,
    OpenLane3DXErrorFar,
    OpenLane3DZErrorClose,
    OpenLane3DZErrorFar,
)
from drivemetrics.lanegraph.lanegraph import (
    LaneGraphAPLS,
    LaneGraphGeoPrecision,
    LaneGraphGeoRecall,
    LaneGraphIoU,
    LaneGraphMetrics,
    LaneGraphSDA20,
    LaneGraphSDA50,
    LaneGraphTopoPrecision,
    LaneGraphTopoRecall,
)
from drivemetrics.lanegraph.planning import (
    LaneGraphPlanningMED,
    LaneGraphPlanningMetrics,
    LaneGraphPlanningMMD,
    LaneGraphPlanningSuccessRate,
)
from drivemetrics.lanetopology.matching_loss import LaneMatchingLoss
from drivemetrics.lanetopology.openlanev2 import (
    OpenLaneV2AreaAP,
    OpenLaneV2F1Score,
    OpenLaneV2LaneAP,
    OpenLaneV2LaneElementTopology,
    OpenLaneV2LaneTopology,
    OpenLaneV2Metrics,
    OpenLaneV2Score,
    OpenLaneV2TrafficElementAP,
    OpenLaneV2UniScore,
    OpenLaneV2UniScoreMetrics,
)
from drivemetrics.road.corridor import (
    DrivingCorridorHitRate,
    DrivingCorridorLateralPrecision,
    DrivingCorridorLongitudinalF1Score,
    DrivingCorridorMetrics,
)
from drivemetrics.road.pixel import RoadPixelAveragePrecision, RoadPixelMaxFScore, RoadPixelMetrics
from drivemetrics.road.soft_f_measure import SoftFMeasureLoss
from drivemetrics.roadnet.apls import APLSMetrics, APLSScore
from drivemetrics.roadnet.ccq import CCQCompleteness, CCQCorrectness, CCQMetrics, CCQQuality
from drivemetrics.roadnet.junct import JunctionFCorrect, JunctionFError, JunctionMetrics
from drivemetrics.roadnet.opt_g import OptGF1Score, OptGMetrics, OptGPrecision, OptGRecall
from drivemetrics.roadnet.opt_j import OptJF1Score, OptJMetrics, OptJPrecision, OptJRecall
from drivemetrics.roadnet.opt_p import OptPF1Score, OptPMetrics, OptPPrecision, OptPRecall
from drivemetrics.roadnet.subg import SubgraphF1Score, SubgraphMetrics
from drivemetrics.roadnet.tlts import TLTSAccuracy, TLTSMetrics
from drivemetrics.vectormap.chamfer_loss import MapChamferLoss
from drivemetrics.vectormap.map_ap import (
    VectorMapAPMetrics,
    VectorMapAveragePrecision,
    VectorMapMeanAveragePrecision,
)

__version__: str

__all__ = [
    "PSLD",
    "APLSMetrics",
    "APLSScore",
    "CCQCompleteness",
    "CCQCorrectness",
    "CCQMetrics",
    "CCQQuality",
    "CULaneF1Score",
    "CULaneMetrics",
    "CULanePrecision",
    "CULaneRecall",
    "DrivingCorridorHitRate",
    "DrivingCorridorLateralPrecision",
    "DrivingCorridorLongitudinalF1Score",
    "DrivingCorridorMetrics",
    "JunctionFCorrect",
    "JunctionFError",
    "JunctionMetrics",
    "KittiObjectAveragePrecision",
    "KittiObjectMetrics",
    "LaneGraphAPLS",
    "LaneGraphGeoPrecision",
    "LaneGraphGeoRecall",
    "LaneGraphIoU",
    "LaneGraphMetrics",
    "LaneGraphPlanningMED",
    "LaneGraphPlanningMMD",
    "LaneGraphPlanningMetrics",
    "LaneGraphPlanningSuccessRate",
    "LaneGraphSDA20",
    "LaneGraphSDA50",
    "LaneGraphTopoPrecision",
    "LaneGraphTopoRecall",
    "LaneMatchingLoss",
    "MapChamferLoss",
    "OpenLane3DCategoryAccuracy",
    "OpenLane3DFScore",
    "OpenLane3DMetrics",
    "OpenLane3DPrecision",
    "OpenLane3DRecall",
    "OpenLane3DXErrorClose",
    "OpenLane3DXErrorFar",
    "OpenLane3DZErrorClose",
    "OpenLane3DZErrorFar",
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
    "OptGF1Score",
    "OptGMetrics",
    "OptGPrecision",
    "OptGRecall",
    "OptJF1Score",
    "OptJMetrics",
    "OptJPrecision",
    "OptJRecall",
    "OptPF1Score",
    "OptPMetrics",
    "OptPPrecision",
    "OptPRecall",
    "PSLDLoss",
    "RoadPixelAveragePrecision",
    "RoadPixelMaxFScore",
    "RoadPixelMetrics",
    "SoftFMeasureLoss",
    "SubgraphF1Score",
    "SubgraphMetrics",
    "TLTSAccuracy",
    "TLTSMetrics",
    "TuSimpleAccuracy",
    "TuSimpleF1Score",
    "TuSimpleFalseNegatives",
    "TuSimpleFalsePositives",
    "TuSimpleMetrics",
    "VectorMapAPMetrics",
    "VectorMapAveragePrecision",
    "VectorMapMeanAveragePrecision",
]
