"""Road: KITTI-ROAD pixel metrics (perspective and BEV), the soft F-measure loss and the driving corridor."""

from drivemetrics.road.metrics import RoadAveragePrecision, RoadMaxF, RoadPixelMetrics
from drivemetrics.road.pixel import (
    PixelCounts,
    counts_at_threshold,
    kitti_thresholds,
    pixel_counts,
    road_pixel_scores,
    scores_from_counts,
)

__all__ = [
    "PixelCounts",
    "RoadAveragePrecision",
    "RoadMaxF",
    "RoadPixelMetrics",
    "counts_at_threshold",
    "kitti_thresholds",
    "pixel_counts",
    "road_pixel_scores",
    "scores_from_counts",
]
