"""Type stub of :mod:`drivemetrics.detection` (its names are exported lazily at run time)."""

from drivemetrics.detection.io import KittiObjects
from drivemetrics.detection.kitti_object import KittiObjectAveragePrecision, KittiObjectMetrics

__all__ = [
    "KittiObjectAveragePrecision",
    "KittiObjectMetrics",
    "KittiObjects",
]
