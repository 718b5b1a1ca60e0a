"""Road: KITTI-ROAD pixel metrics (perspective and BEV), the soft F-measure loss and the driving corridor."""

from drivemetrics._lazy import lazy_exports

_EXPORTS = {
    "corridor_curves": "drivemetrics.road.corridor",
    "corridor_row_statistics": "drivemetrics.road.corridor",
    "corridor_table": "drivemetrics.road.corridor",
    "CorridorConfig": "drivemetrics.road.corridor",
    "CorridorFit": "drivemetrics.road.corridor",
    "counts_at_threshold": "drivemetrics.road.pixel",
    "driving_corridor_scores": "drivemetrics.road.corridor",
    "DrivingCorridorHitRate": "drivemetrics.road.corridor",
    "DrivingCorridorLateralPrecision": "drivemetrics.road.corridor",
    "DrivingCorridorLongitudinalF1Score": "drivemetrics.road.corridor",
    "DrivingCorridorMetric": "drivemetrics.road.corridor",
    "fit_driving_corridor": "drivemetrics.road.corridor",
    "fixed_threshold_scores": "drivemetrics.road.pixel",
    "format_corridor_table": "drivemetrics.road.corridor",
    "kitti_corridor_table": "drivemetrics.road.corridor",
    "kitti_thresholds": "drivemetrics.road.pixel",
    "load_corridor_config": "drivemetrics.road.corridor",
    "pixel_counts": "drivemetrics.road.pixel",
    "pixel_inputs_to_bev": "drivemetrics.road.pixel",
    "PixelCounts": "drivemetrics.road.pixel",
    "road_pixel_scores": "drivemetrics.road.pixel",
    "RoadAveragePrecision": "drivemetrics.road.metrics",
    "RoadMaxF": "drivemetrics.road.metrics",
    "RoadPixelMetrics": "drivemetrics.road.metrics",
    "scores_from_counts": "drivemetrics.road.pixel",
    "scores_with_fixed_threshold": "drivemetrics.road.pixel",
    "soft_f_measure": "drivemetrics.road.loss",
    "SoftFMeasureLoss": "drivemetrics.road.loss",
    "with_fixed_threshold": "drivemetrics.road.pixel",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
