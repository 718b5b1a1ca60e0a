"""Road: KITTI-ROAD pixel metrics (perspective and BEV), the soft F-measure loss and the driving corridor."""

from drivemetrics.road.corridor import (
    CorridorConfig,
    CorridorFit,
    DrivingCorridorMetric,
    corridor_curves,
    corridor_row_statistics,
    corridor_table,
    driving_corridor_scores,
    fit_driving_corridor,
    format_corridor_table,
    kitti_corridor_table,
    load_corridor_config,
)
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
    "CorridorConfig",
    "CorridorFit",
    "DrivingCorridorMetric",
    "PixelCounts",
    "RoadAveragePrecision",
    "RoadMaxF",
    "RoadPixelMetrics",
    "SoftFMeasureLoss",
    "corridor_curves",
    "corridor_row_statistics",
    "corridor_table",
    "counts_at_threshold",
    "driving_corridor_scores",
    "fit_driving_corridor",
    "fixed_threshold_scores",
    "format_corridor_table",
    "kitti_corridor_table",
    "kitti_thresholds",
    "load_corridor_config",
    "pixel_counts",
    "pixel_inputs_to_bev",
    "road_pixel_scores",
    "scores_from_counts",
    "scores_with_fixed_threshold",
    "soft_f_measure",
    "with_fixed_threshold",
]
