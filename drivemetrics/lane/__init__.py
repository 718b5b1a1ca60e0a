"""Lane metrics: TuSimple and CULane scores, and the expected road center used as an attack objective.

Image frame: x right, y down, pixels; lanes sampled at fixed rows are ``B x L x N`` tensors with NaN for a missing
point.
"""

from drivemetrics.lane.culane import (
    CULaneCounts,
    CULaneF1,
    culane_counts,
    culane_f1,
    draw_lanes,
    lane_iou_matrix,
    lanes_from_rows,
)
from drivemetrics.lane.road_center import (
    expected_center_from_anchors,
    expected_center_from_maps,
    expected_center_from_polynomials,
    road_center_attack_loss,
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
    "CULaneCounts",
    "CULaneF1",
    "TuSimpleImageScores",
    "TuSimpleMetrics",
    "TuSimpleRecords",
    "culane_counts",
    "culane_f1",
    "draw_lanes",
    "evaluate_tusimple_files",
    "expected_center_from_anchors",
    "expected_center_from_maps",
    "expected_center_from_polynomials",
    "lane_iou_matrix",
    "lanes_from_rows",
    "read_tusimple_json",
    "road_center_attack_loss",
    "select_ego_lanes",
    "tusimple_f1",
    "tusimple_image_scores",
    "tusimple_metrics",
    "write_tusimple_json",
]
