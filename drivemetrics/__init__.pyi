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
    graph as graph,
)
from drivemetrics import (
    lane as lane,
)
from drivemetrics import (
    polyline as polyline,
)
from drivemetrics import (
    road as road,
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
from drivemetrics.road.corridor import (
    DrivingCorridorHitRate,
    DrivingCorridorLateralPrecision,
    DrivingCorridorLongitudinalF1Score,
    DrivingCorridorMetrics,
)
from drivemetrics.road.pixel import RoadPixelAveragePrecision, RoadPixelMaxFScore, RoadPixelMetrics
from drivemetrics.road.soft_f_measure import SoftFMeasureLoss

__version__: str

__all__ = [
    "PSLD",
    "CULaneF1Score",
    "CULaneMetrics",
    "CULanePrecision",
    "CULaneRecall",
    "DrivingCorridorHitRate",
    "DrivingCorridorLateralPrecision",
    "DrivingCorridorLongitudinalF1Score",
    "DrivingCorridorMetrics",
    "KittiObjectAveragePrecision",
    "KittiObjectMetrics",
    "PSLDLoss",
    "RoadPixelAveragePrecision",
    "RoadPixelMaxFScore",
    "RoadPixelMetrics",
    "SoftFMeasureLoss",
    "TuSimpleAccuracy",
    "TuSimpleF1Score",
    "TuSimpleFalseNegatives",
    "TuSimpleFalsePositives",
    "TuSimpleMetrics",
]
