"""Lane metrics and losses: TuSimple and CULane scores, the expected road center (attack objective), and the
closed-loop driving metrics PSLD and E2E-LD with their geometry, controllers and statistics.

Image frame: x right, y down, pixels; lanes sampled at fixed rows are ``B x L x N`` tensors with NaN for a missing
point. Road frame: X right, Z forward, metres.
"""

from drivemetrics._lazy import lazy_exports

_EXPORTS = {
    "centre_from_image_lanes": "drivemetrics.lane.geometry",
    "centre_from_polynomials": "drivemetrics.lane.geometry",
    "Correlation": "drivemetrics.lane.stats",
    "correlation_matrix": "drivemetrics.lane.stats",
    "culane_counts": "drivemetrics.lane.culane",
    "culane_f1": "drivemetrics.lane.culane",
    "CULaneCounts": "drivemetrics.lane.culane",
    "CULaneF1": "drivemetrics.lane.culane",
    "CULaneF1Score": "drivemetrics.lane.culane",
    "CULanePrecision": "drivemetrics.lane.culane",
    "CULaneRecall": "drivemetrics.lane.culane",
    "DEFAULT_LANE_WIDTH": "drivemetrics.lane.geometry",
    "DEFAULT_Z_SAMPLES": "drivemetrics.lane.psld",
    "default_z_samples": "drivemetrics.lane.psld",
    "draw_lanes": "drivemetrics.lane.culane",
    "e2e_ld": "drivemetrics.lane.e2e",
    "E2EResult": "drivemetrics.lane.e2e",
    "evaluate_culane_dirs": "drivemetrics.lane.culane",
    "evaluate_tusimple_files": "drivemetrics.lane.tusimple",
    "expected_center_from_anchors": "drivemetrics.lane.road_center",
    "expected_center_from_maps": "drivemetrics.lane.road_center",
    "expected_center_from_polynomials": "drivemetrics.lane.road_center",
    "image_lanes_to_road": "drivemetrics.lane.geometry",
    "lane_centre": "drivemetrics.lane.geometry",
    "lane_iou_matrix": "drivemetrics.lane.culane",
    "lanes_from_rows": "drivemetrics.lane.culane",
    "LateralController": "drivemetrics.lane.control",
    "LinearMPC": "drivemetrics.lane.control",
    "pearson_r": "drivemetrics.lane.stats",
    "PosedPath": "drivemetrics.lane.control",
    "PSLD": "drivemetrics.lane.psld",
    "psld": "drivemetrics.lane.psld",
    "psld_deviations": "drivemetrics.lane.psld",
    "PSLDLoss": "drivemetrics.lane.psld",
    "PurePursuit": "drivemetrics.lane.control",
    "read_culane_lines": "drivemetrics.lane.culane",
    "read_tusimple_json": "drivemetrics.lane.tusimple",
    "resample_lane": "drivemetrics.lane.geometry",
    "road_center_attack_loss": "drivemetrics.lane.road_center",
    "sample_profile": "drivemetrics.lane.control",
    "select_ego_lanes": "drivemetrics.lane.tusimple",
    "smooth_psld": "drivemetrics.lane.psld",
    "soft_argmax_rows": "drivemetrics.lane.geometry",
    "tusimple_f1": "drivemetrics.lane.tusimple",
    "tusimple_image_scores": "drivemetrics.lane.tusimple",
    "tusimple_metrics": "drivemetrics.lane.tusimple",
    "TuSimpleAccuracy": "drivemetrics.lane.tusimple",
    "TuSimpleF1Score": "drivemetrics.lane.tusimple",
    "TuSimpleFalseNegatives": "drivemetrics.lane.tusimple",
    "TuSimpleFalsePositives": "drivemetrics.lane.tusimple",
    "TuSimpleImageScores": "drivemetrics.lane.tusimple",
    "TuSimpleMetrics": "drivemetrics.lane.tusimple",
    "TuSimpleRecords": "drivemetrics.lane.tusimple",
    "VehiclePath": "drivemetrics.lane.control",
    "write_tusimple_json": "drivemetrics.lane.tusimple",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
