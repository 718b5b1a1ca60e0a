"""Every metric kernel and loss function of the library in one flat namespace (like ``torchmetrics.functional``).

A kernel is a pure function of tensors, batched over the leading ``B`` dimension, that returns one ``Tensor`` or a
``dict[str, Tensor]`` with snake_case keys; its arguments come in the order ``(preds, target, ...)``. Each one
lives in its family module ``drivemetrics/<domain>/<family>.py`` beside the Metric classes built on it, e.g.
:func:`culane_f1` in :mod:`drivemetrics.lane.culane` with :class:`~drivemetrics.lane.CULaneMetrics`.

Importing this module imports torch and every domain (use ``drivemetrics.<domain>`` for the classes alone).

Examples:
    >>> import torch
    >>> import drivemetrics.functional as F
    >>> target = torch.zeros(1, 4, 4, dtype=torch.bool); target[:, 2:] = True
    >>> round(F.road_pixel_scores(torch.where(target, 200, 30).to(torch.uint8), target)["max_f"].item(), 6)
    1.0
"""

from drivemetrics.detection.box_iou import bev_overlap, box2d_overlap, box3d_overlap
from drivemetrics.detection.kitti_object import evaluate_kitti_objects
from drivemetrics.lane.control_weighted_loss import control_sensitivity_weights, control_weighted_loss
from drivemetrics.lane.culane import culane_counts, culane_f1, culane_matches, lane_iou_matrix
from drivemetrics.lane.curvelanes import curvelanes_counts, curvelanes_f1, curvelanes_matches
from drivemetrics.lane.e2e import e2e_ld
from drivemetrics.lane.expected_psld_loss import expected_psld_loss
from drivemetrics.lane.line_iou_loss import bev_line_iou_loss
from drivemetrics.lane.llamas import llamas_counts, llamas_f1, llamas_matches
from drivemetrics.lane.lookahead_loss import lookahead_lane_loss
from drivemetrics.lane.psld import psld, psld_deviations, smooth_psld
from drivemetrics.lane.road_center import (
    expected_center_from_anchors,
    expected_center_from_maps,
    expected_center_from_polynomials,
    road_center_attack_loss,
)
from drivemetrics.lane.tusimple import tusimple_f1, tusimple_image_scores, tusimple_metrics
from drivemetrics.lane3d.apollo import apollo3d_matches, apollo3d_resample, apollo3d_scores
from drivemetrics.lane3d.once import once3d_iou, once3d_matches, once3d_mean_distance, once3d_scores
from drivemetrics.lane3d.openlane import (
    openlane3d_gt_to_ground,
    openlane3d_lane_matches,
    openlane3d_matches,
    openlane3d_pair_matrices,
    openlane3d_resample,
    openlane3d_scores,
)
from drivemetrics.lanegraph.apls import lanegraph_apls
from drivemetrics.lanegraph.geo_topo import geo_topo
from drivemetrics.lanegraph.iou import graph_iou
from drivemetrics.lanegraph.lanegraph import evaluate_lanegraph_pair
from drivemetrics.lanegraph.planning import planning
from drivemetrics.lanegraph.sda import sda
from drivemetrics.lanetopology.matching_loss import lane_matching_loss
from drivemetrics.lanetopology.openlanev2 import openlanev2_scores
from drivemetrics.polyline.average_precision import (
    average_precision_11point,
    average_precision_area,
    interpolated_precision_11point,
    pooled_precision_recall,
)
from drivemetrics.polyline.chamfer import (
    chamfer_distance,
    chamfer_distance_matrix,
    chamfer_distance_pairs,
    point_distance_matrix,
)
from drivemetrics.polyline.frechet import (
    bounded_frechet_distance_pairs,
    frechet_distance_matrix,
    frechet_distance_pairs,
    soft_frechet_distance_pairs,
)
from drivemetrics.polyline.matching import greedy_match, greedy_match_index, nearest_target, score_rank
from drivemetrics.polyline.resample import arc_length, interpolate_at, resample_by_count, resample_by_spacing
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
from drivemetrics.roadnet.apls import apls
from drivemetrics.roadnet.ccq import ccq, ccq_graph
from drivemetrics.roadnet.junct import junct
from drivemetrics.roadnet.opt_g import opt_g
from drivemetrics.roadnet.opt_j import opt_j
from drivemetrics.roadnet.opt_p import opt_p
from drivemetrics.roadnet.subg import subg
from drivemetrics.roadnet.tlts import tlts
from drivemetrics.vectormap.buffer import buffers_intersect
from drivemetrics.vectormap.chamfer_loss import map_chamfer_loss
from drivemetrics.vectormap.cmap import consistent_true_positive
from drivemetrics.vectormap.map_ap import vector_map_ap, vector_map_ap_from_matches, vector_map_matches

__all__ = [
    "apls",
    "apollo3d_matches",
    "apollo3d_resample",
    "apollo3d_scores",
    "arc_length",
    "average_precision_11point",
    "average_precision_area",
    "bev_line_iou_loss",
    "bev_overlap",
    "bounded_frechet_distance_pairs",
    "box2d_overlap",
    "box3d_overlap",
    "buffers_intersect",
    "ccq",
    "ccq_graph",
    "chamfer_distance",
    "chamfer_distance_matrix",
    "chamfer_distance_pairs",
    "consistent_true_positive",
    "control_sensitivity_weights",
    "control_weighted_loss",
    "corridor_curves",
    "corridor_row_statistics",
    "counts_at_threshold",
    "culane_counts",
    "culane_f1",
    "culane_matches",
    "curvelanes_counts",
    "curvelanes_f1",
    "curvelanes_matches",
    "driving_corridor_scores",
    "e2e_ld",
    "evaluate_kitti_objects",
    "evaluate_lanegraph_pair",
    "expected_center_from_anchors",
    "expected_center_from_maps",
    "expected_center_from_polynomials",
    "expected_psld_loss",
    "fit_driving_corridor",
    "fixed_threshold_scores",
    "frechet_distance_matrix",
    "frechet_distance_pairs",
    "geo_topo",
    "graph_iou",
    "greedy_match",
    "greedy_match_index",
    "interpolate_at",
    "interpolated_precision_11point",
    "junct",
    "lane_iou_matrix",
    "lane_matching_loss",
    "lanegraph_apls",
    "llamas_counts",
    "llamas_f1",
    "llamas_matches",
    "lookahead_lane_loss",
    "map_chamfer_loss",
    "nearest_target",
    "once3d_iou",
    "once3d_matches",
    "once3d_mean_distance",
    "once3d_scores",
    "openlane3d_gt_to_ground",
    "openlane3d_lane_matches",
    "openlane3d_matches",
    "openlane3d_pair_matrices",
    "openlane3d_resample",
    "openlane3d_scores",
    "openlanev2_scores",
    "opt_g",
    "opt_j",
    "opt_p",
    "pixel_counts",
    "planning",
    "point_distance_matrix",
    "pooled_precision_recall",
    "psld",
    "psld_deviations",
    "resample_by_count",
    "resample_by_spacing",
    "road_center_attack_loss",
    "road_pixel_scores",
    "score_rank",
    "scores_from_counts",
    "sda",
    "smooth_psld",
    "soft_f_measure",
    "soft_frechet_distance_pairs",
    "subg",
    "tlts",
    "tusimple_f1",
    "tusimple_image_scores",
    "tusimple_metrics",
    "vector_map_ap",
    "vector_map_ap_from_matches",
    "vector_map_matches",
]
