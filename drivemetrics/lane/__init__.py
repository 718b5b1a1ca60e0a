"""Lane metrics: TuSimple and CULane scores, and the expected road center used as an attack objective.

Image frame: x right, y down, pixels; lanes sampled at fixed rows are ``B x L x N`` tensors with NaN for a missing
point.
"""

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
    "TuSimpleImageScores",
    "TuSimpleMetrics",
    "TuSimpleRecords",
    "evaluate_tusimple_files",
    "read_tusimple_json",
    "select_ego_lanes",
    "tusimple_f1",
    "tusimple_image_scores",
    "tusimple_metrics",
    "write_tusimple_json",
]
