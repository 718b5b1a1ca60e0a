"""drivemetrics: driving-oriented metrics and losses for road, lane and lane-graph perception.

Domains live in sub-packages, reachable as attributes after ``import drivemetrics`` (imported on first use):
``geometry`` (calibration, homographies, BEV grids and warps), ``vehicle`` (single-track / bicycle models), ``road``
(KITTI-ROAD pixel metrics, soft F-measure loss, driving corridor), ``lane`` (TuSimple, CULane, PSLD, E2E-LD),
``attack`` (DRP patches), ``graph`` (road-network and lane-graph metrics), ``detection`` (KITTI objects) and
``synthetic`` (seeded scene generators used by tests and the demo). Every metric kernel and loss function is in
:mod:`drivemetrics.functional`; every Metric and loss class is importable from its domain and from here.

``import drivemetrics`` itself imports nothing heavy (no torch): the ``drivemetrics`` command starts fast.
"""

from drivemetrics._lazy import lazy_exports

__version__ = "0.1.0"

#: Sub-packages, imported on first attribute access.
_SUBPACKAGES = {
    "attack": "drivemetrics.attack",
    "detection": "drivemetrics.detection",
    "functional": "drivemetrics.functional",
    "geometry": "drivemetrics.geometry",
    "graph": "drivemetrics.graph",
    "lane": "drivemetrics.lane",
    "polyline": "drivemetrics.polyline",
    "road": "drivemetrics.road",
    "vehicle": "drivemetrics.vehicle",
}

#: Metric and loss classes of every domain (the graph split adds its classes here).
_CLASSES = {
    "CULaneF1Score": "drivemetrics.lane.culane",
    "CULaneMetrics": "drivemetrics.lane.culane",
    "CULanePrecision": "drivemetrics.lane.culane",
    "CULaneRecall": "drivemetrics.lane.culane",
    "DrivingCorridorHitRate": "drivemetrics.road.corridor",
    "DrivingCorridorLateralPrecision": "drivemetrics.road.corridor",
    "DrivingCorridorLongitudinalF1Score": "drivemetrics.road.corridor",
    "DrivingCorridorMetrics": "drivemetrics.road.corridor",
    "KittiObjectAveragePrecision": "drivemetrics.detection.kitti_object",
    "KittiObjectMetrics": "drivemetrics.detection.kitti_object",
    "PSLD": "drivemetrics.lane.psld",
    "PSLDLoss": "drivemetrics.lane.psld",
    "RoadPixelAveragePrecision": "drivemetrics.road.pixel",
    "RoadPixelMaxFScore": "drivemetrics.road.pixel",
    "RoadPixelMetrics": "drivemetrics.road.pixel",
    "SoftFMeasureLoss": "drivemetrics.road.soft_f_measure",
    "TuSimpleAccuracy": "drivemetrics.lane.tusimple",
    "TuSimpleF1Score": "drivemetrics.lane.tusimple",
    "TuSimpleFalseNegatives": "drivemetrics.lane.tusimple",
    "TuSimpleFalsePositives": "drivemetrics.lane.tusimple",
    "TuSimpleMetrics": "drivemetrics.lane.tusimple",
}
_EXPORTS = {**_SUBPACKAGES, **_CLASSES}

__all__ = sorted(_CLASSES)
__getattr__, __dir__ = lazy_exports(__name__, _CLASSES, submodules=_SUBPACKAGES)
