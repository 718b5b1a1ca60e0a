"""Lane metrics and losses: TuSimple and CULane scores, the expected road center (attack objective), and the
closed-loop driving metrics PSLD and E2E-LD with their geometry, controllers and statistics.

Image frame: x right, y down, pixels; lanes sampled at fixed rows are ``B x L x N`` tensors with NaN for a missing
point. Road frame: X right, Z forward, metres.
"""

from __future__ import annotations

from drivemetrics.lane.control import (
    LateralController,
    LinearMPC,
    PosedPath,
    PurePursuit,
    VehiclePath,
    sample_profile,
)
from drivemetrics.lane.culane import (
    CULaneCounts,
    CULaneF1,
    culane_counts,
    culane_f1,
    draw_lanes,
    evaluate_culane_dirs,
    lane_iou_matrix,
    lanes_from_rows,
    read_culane_lines,
)
from drivemetrics.lane.e2e import (
    E2EResult,
    e2e_ld,
)
from drivemetrics.lane.geometry import (
    DEFAULT_LANE_WIDTH,
    centre_from_image_lanes,
    centre_from_polynomials,
    image_lanes_to_road,
    lane_centre,
    resample_lane,
    soft_argmax_rows,
)
from drivemetrics.lane.psld import (
    DEFAULT_Z_SAMPLES,
    PSLD,
    PSLDLoss,
    default_z_samples,
    psld,
    psld_deviations,
    smooth_psld,
)
from drivemetrics.lane.road_center import (
    expected_center_from_anchors,
    expected_center_from_maps,
    expected_center_from_polynomials,
    road_center_attack_loss,
)
from drivemetrics.lane.stats import (
    Correlation,
    correlation_matrix,
    pearson_r,
)
from drivemetrics.lane.tusimple import (
    TuSimpleImageScores,
    TuSimpleMetrics,
    TuSimpleRecords,
    evaluate_tusimple_files,
    read_tusimple_json,
    select_ego_lanes,
    tusimple_f1,
    tusimple_image_scores,
    tusimple_metrics,
    write_tusimple_json,
)

__all__ = [
    "DEFAULT_LANE_WIDTH",
    "DEFAULT_Z_SAMPLES",
    "PSLD",
    "CULaneCounts",
    "CULaneF1",
    "Correlation",
    "E2EResult",
    "LateralController",
    "LinearMPC",
    "PSLDLoss",
    "PosedPath",
    "PurePursuit",
    "TuSimpleImageScores",
    "TuSimpleMetrics",
    "TuSimpleRecords",
    "VehiclePath",
    "centre_from_image_lanes",
    "centre_from_polynomials",
    "correlation_matrix",
    "culane_counts",
    "culane_f1",
    "default_z_samples",
    "draw_lanes",
    "e2e_ld",
    "evaluate_culane_dirs",
    "evaluate_tusimple_files",
    "expected_center_from_anchors",
    "expected_center_from_maps",
    "expected_center_from_polynomials",
    "image_lanes_to_road",
    "lane_centre",
    "lane_iou_matrix",
    "lanes_from_rows",
    "pearson_r",
    "psld",
    "psld_deviations",
    "read_culane_lines",
    "read_tusimple_json",
    "resample_lane",
    "road_center_attack_loss",
    "sample_profile",
    "select_ego_lanes",
    "smooth_psld",
    "soft_argmax_rows",
    "tusimple_f1",
    "tusimple_image_scores",
    "tusimple_metrics",
    "write_tusimple_json",
]
