"""Type stub of :mod:`drivemetrics.road` (its names are exported lazily at run time)."""

from drivemetrics.road.corridor import (
    CorridorFit,
    DrivingCorridorHitRate,
    DrivingCorridorLateralPrecision,
    DrivingCorridorLongitudinalF1Score,
    DrivingCorridorMetrics,
)
from drivemetrics.road.corridor_config import CorridorConfig
from drivemetrics.road.io import KittiRoadLayout
from drivemetrics.road.pixel import PixelCounts, RoadPixelAveragePrecision, RoadPixelMaxFScore, RoadPixelMetrics
from drivemetrics.road.soft_f_measure import SoftFMeasureLoss

__all__ = [
    "CorridorConfig",
    "CorridorFit",
    "DrivingCorridorHitRate",
    "DrivingCorridorLateralPrecision",
    "DrivingCorridorLongitudinalF1Score",
    "DrivingCorridorMetrics",
    "KittiRoadLayout",
    "PixelCounts",
    "RoadPixelAveragePrecision",
    "RoadPixelMaxFScore",
    "RoadPixelMetrics",
    "SoftFMeasureLoss",
]
