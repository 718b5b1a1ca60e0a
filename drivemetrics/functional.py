"""Every metric kernel and loss function of the library in one flat namespace (like ``torchmetrics.functional``).

A kernel is a pure function of tensors, batched over the leading ``B`` dimension, that returns one ``Tensor`` or a
``dict[str, Tensor]`` with snake_case keys; its arguments come in the order ``(preds, target, ...)``. Each one
lives in its family module ``drivemetrics/<domain>/<family>.py`` beside the Metric classes built on it, e.g.
:func:`culane_f1` in :mod:`drivemetrics.lane.culane` with :class:`~drivemetrics.lane.CULaneMetrics`.

Importing this module imports torch and every domain (use ``drivemetrics.<domain>`` for the classes alone).

Example:
    >>> import torch
    >>> import drivemetrics.functional as F
    >>> target = torch.zeros(1, 4, 4, dtype=torch.bool); target[:, 2:] = True
    >>> round(F.road_pixel_scores(torch.where(target, 200, 30).to(torch.uint8), target)["MaxF"].item(), 6)
    1.0
"""

from drivemetrics.detection.box_iou import bev_overlap, box2d_overlap, box3d_overlap
from drivemetrics.detection.kitti_object import evaluate_kitti_objects
from drivemetrics.lane.culane import culane_counts, culane_f1, culane_matches, lane_iou_matrix
from drivemetrics.lane.e2e import e2e_ld
from drivemetrics.lane.psld import psld, psld_deviations, smooth_psld
from drivemetrics.lane.road_center import (
    expected_center_from_anchors,
    expected_center_from_maps,
    expected_center_from_polynomials,
    road_center_attack_loss,
)
from drivemetrics.lane.tusimple import tusimple_f1, tusimple_image_scores, tusimple_metrics
from drivemetrics.road.corridor import (
    corridor_curves,
    corridor_row_statistics,
    driving_corridor_scores,
    fit_driving_corridor,
)
from drivemetrics.road.pixel import (
    counts_at_threshold,
    fixed_threshold_scores,
    pixel_counts,
    road_pixel_scores,
    scores_from_counts,
)
from drivemetrics.road.soft_f_measure import soft_f_measure

# ---- road-network and lane-graph kernels (drivemetrics.roadnet / drivemetrics.lanegraph) ----------------------
# GRAPH-KERNELS: the graph split (branch `housegraph`) adds its kernels here when it lands: apls, ccq, geo_topo,
# graph_iou, junct, opt_g, opt_j, opt_p, sda, subg, tlts and the lane-graph kernels.

__all__ = [
    "bev_overlap",
    "box2d_overlap",
    "box3d_overlap",
    "corridor_curves",
    "corridor_row_statistics",
    "counts_at_threshold",
    "culane_counts",
    "culane_f1",
    "culane_matches",
    "driving_corridor_scores",
    "e2e_ld",
    "evaluate_kitti_objects",
    "expected_center_from_anchors",
    "expected_center_from_maps",
    "expected_center_from_polynomials",
    "fit_driving_corridor",
    "fixed_threshold_scores",
    "lane_iou_matrix",
    "pixel_counts",
    "psld",
    "psld_deviations",
    "road_center_attack_loss",
    "road_pixel_scores",
    "scores_from_counts",
    "smooth_psld",
    "soft_f_measure",
    "tusimple_f1",
    "tusimple_image_scores",
    "tusimple_metrics",
]
