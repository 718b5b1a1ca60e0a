"""Road: KITTI-ROAD pixel metrics (perspective and BEV), the soft F-measure loss and the driving corridor."""

from drivemetrics.road.loss import SoftFMeasureLoss, soft_f_measure
from drivemetrics.road.metrics import RoadAveragePrecision, RoadMaxF, RoadPixelMetrics
from drivemetrics.road.pixel import (
    PixelCounts,
    counts_at_threshold,
    fixed_threshold_scores,
    kitti_thresholds,
    pixel_counts,
    pixel_inputs_to_bev,
    road_pixel_scores,
    scores_from_counts,
    scores_with_fixed_threshold,
    with_fixed_threshold,
)

__all__ = [
    "PixelCounts",
    "RoadAveragePrecision",
    "RoadMaxF",
    "RoadPixelMetrics",
    "SoftFMeasureLoss",
    "counts_at_threshold",
    "fixed_threshold_scores",
    "kitti_thresholds",
    "pixel_counts",
    "pixel_inputs_to_bev",
    "road_pixel_scores",
    "scores_from_counts",
    "scores_with_fixed_threshold",
    "soft_f_measure",
    "with_fixed_threshold",
]
