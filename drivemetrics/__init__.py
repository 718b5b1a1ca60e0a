"""drivemetrics: driving-oriented metrics and losses for road, lane and lane-graph perception.

Domains live in sub-packages, reachable as attributes after ``import drivemetrics`` (imported on first use):
``geometry`` (calibration, homographies, BEV grids and warps), ``vehicle`` (single-track / bicycle models), ``road``
(KITTI-ROAD pixel metrics, soft F-measure loss, driving corridor), ``lane`` (TuSimple, CULane, PSLD, E2E-LD),
``lane3d`` (OpenLane 3D lanes), ``attack`` (DRP patches), ``roadnet`` (road-network metrics), ``lanegraph``
(UrbanLaneGraph), ``detection`` (KITTI objects), ``lanetopology`` (OpenLane-V2), ``polyline`` (polyline geometry
shared by the map metrics), ``vectormap`` (vectorised HD-map AP) and ``synthetic`` (seeded scene generators used by
tests and the demo). Every metric kernel and loss function is in :mod:`drivemetrics.functional`; every Metric and
loss class is importable from its domain and from here.

``import drivemetrics`` itself imports nothing heavy (no torch): the ``drivemetrics`` command starts fast.
"""

from drivemetrics._internal.lazy import lazy_exports

__version__ = "0.1.0"

#: Sub-packages, imported on first attribute access.
_SUBPACKAGES = {
    "attack": "drivemetrics.attack",
    "detection": "drivemetrics.detection",
    "functional": "drivemetrics.functional",
    "geometry": "drivemetrics.geometry",
    "lane": "drivemetrics.lane",
    "lane3d": "drivemetrics.lane3d",
    "lanegraph": "drivemetrics.lanegraph",
    "lanetopology": "drivemetrics.lanetopology",
    "polyline": "drivemetrics.polyline",
    "road": "drivemetrics.road",
    "roadnet": "drivemetrics.roadnet",
    "vectormap": "drivemetrics.vectormap",
    "vehicle": "drivemetrics.vehicle",
}

#: Metric and loss classes of every domain.
_CLASSES = {
    "APLSMetrics": "drivemetrics.roadnet.apls",
    "APLSScore": "drivemetrics.roadnet.apls",
    "CCQCompleteness": "drivemetrics.roadnet.ccq",
    "CCQCorrectness": "drivemetrics.roadnet.ccq",
    "CCQMetrics": "drivemetrics.roadnet.ccq",
    "CCQQuality": "drivemetrics.roadnet.ccq",
    "CULaneF1Score": "drivemetrics.lane.culane",
    "CULaneMetrics": "drivemetrics.lane.culane",
    "CULanePrecision": "drivemetrics.lane.culane",
    "CULaneRecall": "drivemetrics.lane.culane",
    "DrivingCorridorHitRate": "drivemetrics.road.corridor",
    "DrivingCorridorLateralPrecision": "drivemetrics.road.corridor",
    "DrivingCorridorLongitudinalF1Score": "drivemetrics.road.corridor",
    "DrivingCorridorMetrics": "drivemetrics.road.corridor",
    "JunctionFCorrect": "drivemetrics.roadnet.junct",
    "JunctionFError": "drivemetrics.roadnet.junct",
    "JunctionMetrics": "drivemetrics.roadnet.junct",
    "KittiObjectAveragePrecision": "drivemetrics.detection.kitti_object",
    "KittiObjectMetrics": "drivemetrics.detection.kitti_object",
    "LaneGraphAPLS": "drivemetrics.lanegraph.lanegraph",
    "LaneGraphGeoPrecision": "drivemetrics.lanegraph.lanegraph",
    "LaneGraphGeoRecall": "drivemetrics.lanegraph.lanegraph",
    "LaneGraphIoU": "drivemetrics.lanegraph.lanegraph",
    "LaneGraphMetrics": "drivemetrics.lanegraph.lanegraph",
    "LaneGraphPlanningMED": "drivemetrics.lanegraph.planning",
    "LaneGraphPlanningMMD": "drivemetrics.lanegraph.planning",
    "LaneGraphPlanningMetrics": "drivemetrics.lanegraph.planning",
    "LaneGraphPlanningSuccessRate": "drivemetrics.lanegraph.planning",
    "LaneGraphSDA20": "drivemetrics.lanegraph.lanegraph",
    "LaneGraphSDA50": "drivemetrics.lanegraph.lanegraph",
    "LaneGraphTopoPrecision": "drivemetrics.lanegraph.lanegraph",
    "LaneGraphTopoRecall": "drivemetrics.lanegraph.lanegraph",
    "LaneMatchingLoss": "drivemetrics.lanetopology.matching_loss",
    "OpenLane3DCategoryAccuracy": "drivemetrics.lane3d.openlane",
    "OpenLane3DFScore": "drivemetrics.lane3d.openlane",
    "OpenLane3DMetrics": "drivemetrics.lane3d.openlane",
    "OpenLane3DPrecision": "drivemetrics.lane3d.openlane",
    "OpenLane3DRecall": "drivemetrics.lane3d.openlane",
    "OpenLane3DXErrorClose": "drivemetrics.lane3d.openlane",
    "OpenLane3DXErrorFar": "drivemetrics.lane3d.openlane",
    "OpenLane3DZErrorClose": "drivemetrics.lane3d.openlane",
    "OpenLane3DZErrorFar": "drivemetrics.lane3d.openlane",
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
    "OptGF1Score": "drivemetrics.roadnet.opt_g",
    "OptGMetrics": "drivemetrics.roadnet.opt_g",
    "OptGPrecision": "drivemetrics.roadnet.opt_g",
    "OptGRecall": "drivemetrics.roadnet.opt_g",
    "OptJF1Score": "drivemetrics.roadnet.opt_j",
    "OptJMetrics": "drivemetrics.roadnet.opt_j",
    "OptJPrecision": "drivemetrics.roadnet.opt_j",
    "OptJRecall": "drivemetrics.roadnet.opt_j",
    "OptPF1Score": "drivemetrics.roadnet.opt_p",
    "OptPMetrics": "drivemetrics.roadnet.opt_p",
    "OptPPrecision": "drivemetrics.roadnet.opt_p",
    "OptPRecall": "drivemetrics.roadnet.opt_p",
    "PSLD": "drivemetrics.lane.psld",
    "PSLDLoss": "drivemetrics.lane.psld",
    "RoadPixelAveragePrecision": "drivemetrics.road.pixel",
    "RoadPixelMaxFScore": "drivemetrics.road.pixel",
    "RoadPixelMetrics": "drivemetrics.road.pixel",
    "SoftFMeasureLoss": "drivemetrics.road.soft_f_measure",
    "SubgraphF1Score": "drivemetrics.roadnet.subg",
    "SubgraphMetrics": "drivemetrics.roadnet.subg",
    "TLTSAccuracy": "drivemetrics.roadnet.tlts",
    "TLTSMetrics": "drivemetrics.roadnet.tlts",
    "TuSimpleAccuracy": "drivemetrics.lane.tusimple",
    "TuSimpleF1Score": "drivemetrics.lane.tusimple",
    "TuSimpleFalseNegatives": "drivemetrics.lane.tusimple",
    "TuSimpleFalsePositives": "drivemetrics.lane.tusimple",
    "TuSimpleMetrics": "drivemetrics.lane.tusimple",
    "MapChamferLoss": "drivemetrics.vectormap.chamfer_loss",
    "VectorMapAPMetrics": "drivemetrics.vectormap.map_ap",
    "VectorMapAveragePrecision": "drivemetrics.vectormap.map_ap",
    "VectorMapMeanAveragePrecision": "drivemetrics.vectormap.map_ap",
}
_EXPORTS = {**_SUBPACKAGES, **_CLASSES}

__all__ = sorted(_CLASSES)
__getattr__, __dir__ = lazy_exports(__name__, _CLASSES, submodules=_SUBPACKAGES)
