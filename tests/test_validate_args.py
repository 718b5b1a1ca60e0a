"""``validate_args`` is honest (issue 46): every public kernel, Metric class and loss refuses one invalid input of
its own kind with a one-line ``ValueError`` when ``validate_args=True`` (the default).

The names are enumerated from the public API (``drivemetrics.functional.__all__`` and each domain's ``_METRICS``),
so a new public name without an entry in the tables below fails :func:`test_every_public_name_has_an_invalid_case`.
The invalid inputs are built from the domains' ``*_example_inputs()`` helpers (one corrupted value each). The other
half of the promise, no device read-back with ``validate_args=False``, is ``tests/test_device_sync.py``.
"""

from __future__ import annotations

import ast
import copy
import importlib
import inspect
import math
import re
from collections.abc import Callable
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
import torch
from torch import nn
from torchmetrics import Metric

import drivemetrics
import drivemetrics.functional as F
from drivemetrics.detection import kitti_object_example_inputs
from drivemetrics.lane import (
    culane_example_inputs,
    curvelanes_example_inputs,
    llamas_example_inputs,
    tusimple_example_inputs,
)
from drivemetrics.lane.geometry import default_z_samples
from drivemetrics.lane3d import apollo3d_example_inputs, once3d_example_inputs, openlane3d_example_inputs
from drivemetrics.lane3d.openlane import OpenLane3DLanes
from drivemetrics.lane3d.packed import pack_lane_lists, packed_from_padded
from drivemetrics.lanegraph import lanegraph_example_inputs, planning_example_inputs
from drivemetrics.lanetopology import openlanev2_example_inputs
from drivemetrics.road import corridor_example_inputs, road_pixel_example_inputs
from drivemetrics.roadnet import roadnet_example_inputs
from drivemetrics.vectormap import consistent_map_example_inputs, vector_map_example_inputs

DOMAINS = ("detection", "lane", "lane3d", "lanegraph", "lanetopology", "road", "roadnet", "vectormap")
NAN = math.nan


# -- invalid inputs, one kind per family ------------------------------------------------------------------------


def _bad_graph(graph: nx.Graph) -> nx.Graph:
    """A copy of ``graph`` whose first node sits at a NaN position."""
    bad = graph.copy()
    bad.nodes[next(iter(bad.nodes))]["pos"] = np.array([NAN, 0.0])
    return bad


def _graphs(inputs: dict) -> dict:
    return {"preds": _bad_graph(inputs["preds"]), "target": inputs["target"]}


def _lane3d(**changes: torch.Tensor) -> dict:
    inputs = openlane3d_example_inputs()
    inputs["preds"].update(changes)
    return inputs


def _lane3d_long_lengths() -> dict:
    points = openlane3d_example_inputs()["preds"]["points"]
    return _lane3d(lengths=torch.full(points.shape[:2], points.shape[2] + 5))


def _map_nan_score() -> dict:
    inputs = vector_map_example_inputs()
    inputs["preds"]["scores"] = torch.full_like(inputs["preds"]["scores"], NAN)
    return inputs


def _culane_huge() -> dict:
    inputs = culane_example_inputs()
    inputs["preds"] = inputs["preds"].clone()
    inputs["preds"][0, 0, 0, 0] = 1e30  # squares overflow: beyond max_abs_coordinate
    return inputs


def _image_lanes_huge(inputs: dict) -> dict:
    """``inputs`` with one predicted coordinate beyond ``max_abs_coordinate`` (LLAMAS, CurveLanes)."""
    inputs["preds"] = inputs["preds"].clone()
    inputs["preds"][0, 0, 0, 0] = 1e30
    return inputs


def _lane3d_packed(example: Callable[[], dict], **changes: torch.Tensor) -> dict:
    """Packed ``preds`` / ``target`` of an Apollo / ONCE example, ``changes`` applied to the padded ``preds``."""
    inputs = example()
    preds = {**inputs["preds"], **changes}
    return {
        "preds": packed_from_padded(preds["points"], scores=preds["scores"], name="preds"),
        "target": packed_from_padded(inputs["target"]["points"], name="target"),
        "frames": 1,
    }


def _lane3d_family_huge(example: Callable[[], dict]) -> dict:
    inputs = example()
    points = inputs["preds"]["points"].clone()
    points[0, 0, 0, 0] = 1e30  # beyond max_lane3d_abs_metres
    inputs["preds"] = {**inputs["preds"], "points": points}
    return inputs


def _cmap_nan_score() -> dict:
    inputs = consistent_map_example_inputs()
    inputs["preds"] = {**inputs["preds"], "scores": torch.full_like(inputs["preds"]["scores"], NAN)}
    return inputs


HUGE_LANE3D = [np.array([[1e30, 1.6, 5.0], [1.0, 1.6, 20.0]])]  # beyond max_lane3d_abs_metres
HUGE_POINTS = apollo3d_example_inputs()["preds"]["points"].clone()
HUGE_POINTS[0, 0, 0, 0] = 1e30
LANE3D = np.array([[1.0, 1.6, 5.0], [1.0, 1.6, 20.0]])


def _tusimple_inf() -> dict:
    inputs = tusimple_example_inputs()
    inputs["preds"] = inputs["preds"].clone()
    inputs["preds"][0, 0, 3] = math.inf
    return inputs


def _road_out_of_range() -> dict:
    inputs = road_pixel_example_inputs()
    return {**inputs, "preds": torch.full(inputs["target"].shape, 1.5)}


def _corridor_out_of_range() -> dict:
    inputs = corridor_example_inputs()
    return {**inputs, "preds": inputs["preds"].float() * 0 + 1.5}


def _kitti_nan_box() -> dict:
    inputs = kitti_object_example_inputs()
    preds = copy.deepcopy(inputs["preds"])
    preds[0].bbox[0, 0] = NAN
    return {"preds": preds, "target": inputs["target"]}


def _openlanev2_bad_confidence(track: str = "centerline") -> dict:
    inputs = openlanev2_example_inputs(track)
    preds = copy.deepcopy(inputs["preds"])
    preds[0]["lane_centerline" if track == "centerline" else "lane_segment"][0]["confidence"] = 1.5
    return {"preds": preds, "target": inputs["target"]}


def _polylines(lengths: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.rand(len(lengths), 3, 2), torch.tensor(lengths)


LINE = torch.tensor([[[0.0, 0.0], [1.0, 0.0], [2.0, 0.0]]])  # (1, 3, 2)
TOO_LONG = torch.tensor([7])  # lengths beyond the 3 padded points
Z = default_z_samples()
COUNTS = (torch.tensor([3]), torch.tensor([-1]), torch.tensor([1]), torch.tensor([5]))  # a negative fp count


def _map_stats_negative() -> dict:
    from drivemetrics.road.corridor import corridor_row_statistics

    inputs = corridor_example_inputs()
    stats = corridor_row_statistics(inputs["preds"] > 0.5, inputs["target"])
    stats["tp_cells"] = stats["tp_cells"] - 10**6
    return stats


def _detector(view: torch.Tensor) -> torch.Tensor:  # pragma: no cover - never reached: the check comes first
    raise AssertionError("the invalid target must be refused before the detector runs")


def _ego_lines() -> tuple[torch.Tensor, torch.Tensor]:
    """Two ego lines ``(1, 2, N, 2)`` in pixels of the synthetic camera and its image-from-road homography."""
    from drivemetrics.synthetic.lane_clips import LaneCamera

    rows = torch.linspace(60.0, 120.0, 12, dtype=torch.float64)
    lines = torch.stack([torch.stack([128 + s * 1.6 * (rows - 52), rows], -1) for s in (-1, 1)])[None]
    return lines, LaneCamera().image_from_road()


def _inf_lines() -> torch.Tensor:
    lines, _ = _ego_lines()
    return lines.clone().index_fill_(2, torch.tensor([0]), math.inf)


#: ``name -> (call, the argument the message must name)``: every public kernel and loss function.
KERNEL_CASES: dict[str, tuple[Callable[[], object], str]] = {
    # detection
    "box2d_overlap": (lambda: F.box2d_overlap(torch.tensor([0.0, 0.0, NAN, 2.0]), torch.zeros(4)), "boxes_a"),
    "bev_overlap": (lambda: F.bev_overlap(torch.zeros(5), torch.tensor([0.0, 1e30, 1.0, 1.0, 0.0])), "boxes_b"),
    "box3d_overlap": (lambda: F.box3d_overlap(torch.full((7,), math.inf), torch.zeros(7)), "boxes_a"),
    "evaluate_kitti_objects": (lambda: F.evaluate_kitti_objects(**_kitti_nan_box()), "preds"),
    # lane
    "culane_matches": (lambda: F.culane_matches(**_culane_huge()), "preds"),
    "culane_counts": (lambda: F.culane_counts(**_culane_huge()), "preds"),
    "culane_f1": (lambda: F.culane_f1(**_culane_huge()), "preds"),
    "lane_iou_matrix": (lambda: F.lane_iou_matrix(**_culane_huge()), "preds"),
    "llamas_matches": (lambda: F.llamas_matches(**_image_lanes_huge(llamas_example_inputs())), "preds"),
    "llamas_counts": (lambda: F.llamas_counts(**_image_lanes_huge(llamas_example_inputs())), "preds"),
    "llamas_f1": (lambda: F.llamas_f1(**_image_lanes_huge(llamas_example_inputs())), "preds"),
    "curvelanes_matches": (
        lambda: F.curvelanes_matches(**_image_lanes_huge(curvelanes_example_inputs())),
        "preds",
    ),
    "curvelanes_counts": (lambda: F.curvelanes_counts(**_image_lanes_huge(curvelanes_example_inputs())), "preds"),
    "curvelanes_f1": (lambda: F.curvelanes_f1(**_image_lanes_huge(curvelanes_example_inputs())), "preds"),
    "tusimple_image_scores": (lambda: F.tusimple_image_scores(**_tusimple_inf()), "preds"),
    "tusimple_metrics": (lambda: F.tusimple_metrics(**_tusimple_inf()), "preds"),
    "tusimple_f1": (lambda: F.tusimple_f1(torch.tensor(1.5), torch.tensor(0.1)), "fp"),
    "psld": (lambda: F.psld(torch.full((2, Z.numel()), NAN), torch.zeros(2, Z.numel()), speed=20.0), "preds"),
    "psld_deviations": (
        lambda: F.psld_deviations(torch.zeros(2, Z.numel()), torch.zeros(2, Z.numel()), speed=-5.0),
        "speed",
    ),
    "smooth_psld": (lambda: F.smooth_psld(torch.tensor([[0.1, NAN]])), "deviations"),
    "e2e_ld": (
        lambda: F.e2e_ld(
            torch.zeros(1, 6, 1, 8, 8),
            torch.full((1, 6, 101), NAN),
            speed=25.0,
            detector=_detector,
            image_from_road=torch.eye(3),
        ),
        "target",
    ),
    "expected_center_from_anchors": (
        lambda: F.expected_center_from_anchors(torch.tensor([[[0.4, 0.4], [0.6, 0.6]]]), torch.tensor([[0.5, -0.5]])),
        "confidence",
    ),
    "expected_center_from_maps": (lambda: F.expected_center_from_maps(torch.full((1, 2, 3, 4), NAN)), "maps"),
    "expected_center_from_polynomials": (
        lambda: F.expected_center_from_polynomials(torch.tensor([[[0.0, NAN], [0.0, 0.65]]])),
        "coefficients",
    ),
    "road_center_attack_loss": (lambda: F.road_center_attack_loss(torch.tensor([0.5, NAN])), "center"),
    # lane3d
    "openlane3d_matches": (lambda: F.openlane3d_matches(**_lane3d_long_lengths()), "lengths"),
    "openlane3d_resample": (
        lambda: F.openlane3d_resample(torch.zeros(1, 1, 2, 3), torch.tensor([[-1]])),
        "lengths",
    ),
    "openlane3d_gt_to_ground": (
        lambda: F.openlane3d_gt_to_ground(torch.zeros(1, 1, 2, 3), torch.full((1, 4, 4), NAN)),
        "extrinsic",
    ),
    "openlane3d_pair_matrices": (
        lambda: F.openlane3d_pair_matrices(
            {"x": torch.zeros(1, 1, 7), "z": torch.zeros(1, 1, 7), "visible": torch.ones(1, 1, 7, dtype=torch.bool)},
            F.openlane3d_resample(torch.zeros(1, 1, 2, 3)),
        ),
        "preds",
    ),
    "openlane3d_scores": (
        lambda: F.openlane3d_scores(
            torch.tensor([1, 1, 1, -1, 1, 1]), torch.zeros(4), torch.zeros(4, dtype=torch.long)
        ),
        "counts",
    ),
    "openlane3d_lane_matches": (
        lambda: F.openlane3d_lane_matches(
            *(
                OpenLane3DLanes(
                    torch.zeros(2, 3, dtype=torch.float64),
                    torch.tensor([3]),  # 3 points claimed, 2 given
                    torch.tensor([0]),
                    torch.tensor([0]),
                    torch.tensor([1]),
                    None,
                ),
            )
            * 2,
            frames=1,
        ),
        "lengths",
    ),
    "apollo3d_matches": (
        lambda: F.apollo3d_matches(**_lane3d_packed(apollo3d_example_inputs, points=HUGE_POINTS)),
        "preds.points",
    ),
    "apollo3d_resample": (lambda: F.apollo3d_resample(pack_lane_lists([HUGE_LANE3D]), gt=False), "preds.points"),
    "apollo3d_scores": (
        lambda: F.apollo3d_scores(np.array([[2, -1, 2, 2]] * 19), np.zeros((19, 4)), np.full(19, 2)),
        "counts",
    ),
    "once3d_matches": (
        lambda: F.once3d_matches(**_lane3d_packed(once3d_example_inputs, points=HUGE_POINTS[:, :1])),
        "preds.points",
    ),
    "once3d_iou": (lambda: F.once3d_iou([LANE3D], HUGE_LANE3D), "preds"),
    "once3d_mean_distance": (lambda: F.once3d_mean_distance(HUGE_LANE3D[0], LANE3D), "gt"),
    "once3d_scores": (lambda: F.once3d_scores(np.array([[4, 2, 2]]), np.array([-0.5])), "distance_sum"),
    # lanegraph
    "geo_topo": (lambda: F.geo_topo(**_graphs(lanegraph_example_inputs())), "preds"),
    "graph_iou": (lambda: F.graph_iou(**_graphs(lanegraph_example_inputs())), "preds"),
    "sda": (lambda: F.sda(**_graphs(lanegraph_example_inputs())), "preds"),
    "lanegraph_apls": (lambda: F.lanegraph_apls(**_graphs(lanegraph_example_inputs())), "preds"),
    "evaluate_lanegraph_pair": (lambda: F.evaluate_lanegraph_pair(**_graphs(lanegraph_example_inputs())), "preds"),
    "planning": (lambda: F.planning(**_graphs(planning_example_inputs())), "preds"),
    # lanetopology
    "openlanev2_scores": (lambda: F.openlanev2_scores(**_openlanev2_bad_confidence()), "confidence"),
    "lane_matching_loss": (lambda: F.lane_matching_loss(torch.full((1, 1, 3, 2), NAN), LINE[None]), "preds"),
    # polyline
    "arc_length": (lambda: F.arc_length(LINE, TOO_LONG), "lengths"),
    "interpolate_at": (lambda: F.interpolate_at(LINE, TOO_LONG, torch.zeros(1, 2)), "lengths"),
    "resample_by_count": (lambda: F.resample_by_count(LINE, TOO_LONG, num_samples=4), "lengths"),
    "resample_by_spacing": (lambda: F.resample_by_spacing(LINE, TOO_LONG, spacing=0.5), "lengths"),
    "chamfer_distance": (
        lambda: F.chamfer_distance(LINE[None], TOO_LONG[None], LINE[None], torch.tensor([[3]])),
        "preds_lengths",
    ),
    "chamfer_distance_matrix": (
        lambda: F.chamfer_distance_matrix(LINE[None], TOO_LONG[None], LINE[None], torch.tensor([[3]])),
        "preds_lengths",
    ),
    "chamfer_distance_pairs": (
        lambda: F.chamfer_distance_pairs(LINE, TOO_LONG, LINE, torch.tensor([3]), torch.tensor([0]), torch.tensor([0])),
        "preds_lengths",
    ),
    "frechet_distance_matrix": (
        lambda: F.frechet_distance_matrix(LINE[None], TOO_LONG[None], LINE[None], torch.tensor([[3]])),
        "preds_lengths",
    ),
    "frechet_distance_pairs": (lambda: F.frechet_distance_pairs(LINE, LINE, a_lengths=torch.tensor([0])), "a_lengths"),
    "bounded_frechet_distance_pairs": (
        lambda: F.bounded_frechet_distance_pairs(LINE, LINE, a_lengths=TOO_LONG, max_distance=1.0),
        "a_lengths",
    ),
    "soft_frechet_distance_pairs": (
        lambda: F.soft_frechet_distance_pairs(LINE, LINE, a_lengths=TOO_LONG, gamma=0.01),
        "a_lengths",
    ),
    "point_distance_matrix": (lambda: F.point_distance_matrix(torch.tensor([[NAN, 0.0]]), torch.zeros(1, 2)), "a"),
    "score_rank": (lambda: F.score_rank(torch.tensor([0.2, NAN])), "scores"),
    "nearest_target": (lambda: F.nearest_target(torch.tensor([[1.0, -2.0]])), "distances"),
    "greedy_match": (
        lambda: F.greedy_match(torch.tensor([[NAN]]), torch.tensor([0.9]), thresholds=[0.5]),
        "distances",
    ),
    "greedy_match_index": (
        lambda: F.greedy_match_index(torch.tensor([[0.1]]), torch.tensor([0.9]), thresholds=[-0.5]),
        "thresholds",
    ),
    "pooled_precision_recall": (
        lambda: F.pooled_precision_recall(torch.tensor([0.9, 0.8]), torch.tensor([True, False]), -3),
        "num_targets",
    ),
    "average_precision_area": (
        lambda: F.average_precision_area(torch.tensor([1.0, 1.5]), torch.tensor([0.2, 0.4])),
        "precision",
    ),
    "interpolated_precision_11point": (
        lambda: F.interpolated_precision_11point(torch.tensor([1.0, 0.5]), torch.tensor([NAN, 0.7])),
        "recall",
    ),
    "average_precision_11point": (
        lambda: F.average_precision_11point(torch.tensor([-1.0, 0.5]), torch.tensor([0.3, 0.7])),
        "precision",
    ),
    # road
    "road_pixel_scores": (lambda: F.road_pixel_scores(**_road_out_of_range()), "preds"),
    "pixel_counts": (lambda: F.pixel_counts(**_road_out_of_range()), "preds"),
    "counts_at_threshold": (lambda: F.counts_at_threshold(**_road_out_of_range(), threshold=0.5), "preds"),
    "scores_from_counts": (
        lambda: F.scores_from_counts(tuple(c[None] for c in COUNTS), thresholds=[0.5]),
        "counts.fp",
    ),
    "fixed_threshold_scores": (lambda: F.fixed_threshold_scores(COUNTS), "counts.fp"),
    "soft_f_measure": (lambda: F.soft_f_measure(**_road_out_of_range()), "preds"),
    "fit_driving_corridor": (lambda: F.fit_driving_corridor(_corridor_out_of_range()["preds"], threshold=0.5), "preds"),
    "corridor_row_statistics": (
        lambda: F.corridor_row_statistics(
            corridor_example_inputs()["preds"] > 0.5, corridor_example_inputs()["target"].float() * 2
        ),
        "target",
    ),
    "corridor_curves": (lambda: F.corridor_curves(_map_stats_negative()), "tp_cells"),
    "driving_corridor_scores": (lambda: F.driving_corridor_scores(**_corridor_out_of_range(), threshold=0.5), "preds"),
    # roadnet
    "apls": (lambda: F.apls(**_graphs(roadnet_example_inputs())), "preds"),
    "ccq": (lambda: F.ccq(**_graphs(roadnet_example_inputs())), "preds"),
    "ccq_graph": (lambda: F.ccq_graph(**_graphs(roadnet_example_inputs())), "preds"),
    "junct": (lambda: F.junct(**_graphs(roadnet_example_inputs())), "preds"),
    "opt_g": (lambda: F.opt_g(**_graphs(roadnet_example_inputs())), "preds"),
    "opt_j": (lambda: F.opt_j(**_graphs(roadnet_example_inputs())), "preds"),
    "opt_p": (lambda: F.opt_p(**_graphs(roadnet_example_inputs())), "preds"),
    "subg": (lambda: F.subg(**_graphs(roadnet_example_inputs())), "preds"),
    "tlts": (lambda: F.tlts(**_graphs(roadnet_example_inputs())), "preds"),
    # vectormap
    "vector_map_matches": (lambda: F.vector_map_matches(**_map_nan_score()), "scores"),
    "vector_map_ap": (lambda: F.vector_map_ap(**_map_nan_score()), "scores"),
    "vector_map_ap_from_matches": (
        lambda: F.vector_map_ap_from_matches(
            torch.tensor([0.9]), torch.tensor([7]), torch.tensor([[True]]), torch.tensor([1, 0, 0])
        ),
        "labels",
    ),
    "consistent_true_positive": (
        lambda: F.consistent_true_positive(
            torch.tensor([[True], [True]]),
            torch.zeros(2, dtype=torch.long),
            torch.zeros(2, dtype=torch.long),  # both in frame 0
            torch.zeros(2, dtype=torch.long),
            torch.tensor([5, 6]),
            torch.zeros(2, dtype=torch.long),  # one GT track matched twice in one frame
        ),
        "gt_track",
    ),
    "buffers_intersect": (lambda: F.buffers_intersect(LINE, TOO_LONG, LINE, torch.tensor([3])), "a_lengths"),
    "map_chamfer_loss": (
        lambda: F.map_chamfer_loss(LINE[None], LINE[None], target_lengths=torch.tensor([[9]])),
        "target_lengths",
    ),
    "lookahead_lane_loss": (
        lambda: F.lookahead_lane_loss(*[_ego_lines()[0]] * 2, image_from_road=_ego_lines()[1], speed=-5.0),
        "speed",
    ),
    "bev_line_iou_loss": (
        lambda: F.bev_line_iou_loss(_inf_lines(), _ego_lines()[0], image_from_road=_ego_lines()[1]),
        "preds",
    ),
    "control_weighted_loss": (
        lambda: F.control_weighted_loss(*[_ego_lines()[0]] * 2, weights=-torch.ones(1, 2, 12, dtype=torch.float64)),
        "weights",
    ),
    "control_sensitivity_weights": (
        lambda: F.control_sensitivity_weights(
            _ego_lines()[0],
            torch.full((1, Z.numel()), NAN),
            speed=20.0,
            image_from_road=_ego_lines()[1],
            z_samples=Z,
        ),
        "center",
    ),
    "expected_psld_loss": (
        lambda: F.expected_psld_loss(torch.full((2, Z.numel()), NAN), torch.zeros(2, Z.numel()), speed=20.0),
        "preds",
    ),
}


#: ``family (or loss) class name -> (keyword arguments of update / forward that are invalid, named argument)``.
#: A scalar class is checked with its family's entry.
FAMILY_CASES: dict[str, tuple[Callable[[], dict], str]] = {
    "KittiObjectMetrics": (_kitti_nan_box, "preds"),
    "CULaneMetrics": (_culane_huge, "preds"),
    "TuSimpleMetrics": (_tusimple_inf, "preds"),
    "LlamasMetrics": (lambda: _image_lanes_huge(llamas_example_inputs()), "preds"),
    "CurveLanesMetrics": (lambda: _image_lanes_huge(curvelanes_example_inputs()), "preds"),
    "Apollo3DMetrics": (lambda: _lane3d_family_huge(apollo3d_example_inputs), "preds.points"),
    "ONCE3DMetrics": (lambda: _lane3d_family_huge(once3d_example_inputs), "preds.points"),
    "PSLD": (
        lambda: {"preds": torch.full((2, Z.numel()), NAN), "target": torch.zeros(2, Z.numel()), "speed": 20.0},
        "preds",
    ),
    "PSLDLoss": (
        lambda: {"preds": torch.full((2, Z.numel()), NAN), "target": torch.zeros(2, Z.numel()), "speed": 20.0},
        "preds",
    ),
    "OpenLane3DMetrics": (_lane3d_long_lengths, "lengths"),
    "LaneGraphMetrics": (lambda: _graphs(lanegraph_example_inputs()), "preds"),
    "LaneGraphPlanningMetrics": (lambda: _graphs(planning_example_inputs()), "preds"),
    "OpenLaneV2Metrics": (_openlanev2_bad_confidence, "confidence"),
    "OpenLaneV2UniScoreMetrics": (lambda: _openlanev2_bad_confidence("lanesegment"), "confidence"),
    "LaneMatchingLoss": (lambda: {"preds": torch.full((1, 1, 3, 2), NAN), "target": LINE[None]}, "preds"),
    "RoadPixelMetrics": (_road_out_of_range, "preds"),
    "SoftFMeasureLoss": (_road_out_of_range, "preds"),
    "DrivingCorridorMetrics": (_corridor_out_of_range, "preds"),
    "APLSMetrics": (lambda: _graphs(roadnet_example_inputs()), "preds"),
    "CCQMetrics": (lambda: _graphs(roadnet_example_inputs()), "preds"),
    "JunctionMetrics": (lambda: _graphs(roadnet_example_inputs()), "preds"),
    "OptGMetrics": (lambda: _graphs(roadnet_example_inputs()), "preds"),
    "OptJMetrics": (lambda: _graphs(roadnet_example_inputs()), "preds"),
    "OptPMetrics": (lambda: _graphs(roadnet_example_inputs()), "preds"),
    "SubgraphMetrics": (lambda: _graphs(roadnet_example_inputs()), "preds"),
    "TLTSMetrics": (lambda: _graphs(roadnet_example_inputs()), "preds"),
    "VectorMapAPMetrics": (_map_nan_score, "scores"),
    "ConsistentMapAPMetrics": (_cmap_nan_score, "scores"),
    "MapChamferLoss": (
        lambda: {"preds": LINE[None], "target": LINE[None], "target_lengths": torch.tensor([[9]])},
        "target_lengths",
    ),
    "LookaheadLaneLoss": (
        lambda: {
            "preds": _ego_lines()[0],
            "target": _ego_lines()[0],
            "image_from_road": _ego_lines()[1],
            "speed": -5.0,
        },
        "speed",
    ),
    "BEVLineIoULoss": (
        lambda: {"preds": _inf_lines(), "target": _ego_lines()[0], "image_from_road": _ego_lines()[1]},
        "preds",
    ),
    "ControlWeightedLoss": (
        lambda: {
            "preds": _ego_lines()[0],
            "target": _ego_lines()[0],
            "weights": -torch.ones(1, 2, 12, dtype=torch.float64),
        },
        "weights",
    ),
    "ExpectedPSLDLoss": (
        lambda: {"preds": torch.full((2, Z.numel()), NAN), "target": torch.zeros(2, Z.numel()), "speed": 20.0},
        "preds",
    ),
}

#: Constructor arguments of the scalar classes that pick their value by a required argument.
CONSTRUCT: dict[str, dict] = {
    "KittiObjectAveragePrecision": {"cls": "car", "metric": "2d", "difficulty": "easy"},
    "DrivingCorridorMetrics": {"threshold": 0.5},
    "DrivingCorridorHitRate": {"threshold": 0.5, "distance": 20.0},
    "DrivingCorridorLateralPrecision": {"threshold": 0.5, "distance": 20.0},
    "DrivingCorridorLongitudinalF1Score": {"threshold": 0.5, "distance": 20.0},
    "VectorMapAveragePrecision": {"class_name": "divider"},
    "ConsistentMapAveragePrecision": {"class_name": "divider"},
}


def _classes() -> list[tuple[str, type]]:
    return [
        (f"{domain}.{name}", getattr(importlib.import_module(f"drivemetrics.{domain}"), name))
        for domain in DOMAINS
        for name in importlib.import_module(f"drivemetrics.{domain}")._METRICS
    ]


def _family_case(cls: type) -> tuple[Callable[[], dict], str] | None:
    """The entry of ``cls`` or of its nearest listed base (a scalar class shares its family's inputs)."""
    return next((FAMILY_CASES[c.__name__] for c in cls.__mro__ if c.__name__ in FAMILY_CASES), None)


KERNELS = sorted(F.__all__)
CLASSES = _classes()


def _assert_one_line(error: pytest.ExceptionInfo[ValueError], argument: str) -> None:
    message = str(error.value)
    assert "\n" not in message, f"not one line: {message!r}"
    assert argument in message, f"the message does not name `{argument}`: {message!r}"


def test_every_public_name_has_an_invalid_case():
    assert len(KERNELS) >= 70
    assert len(CLASSES) >= 75
    missing = [name for name in KERNELS if name not in KERNEL_CASES]
    missing += [name for name, cls in CLASSES if _family_case(cls) is None]
    assert not missing, f"public names without an invalid input in tests/test_validate_args.py: {missing}"
    stale = sorted(set(KERNEL_CASES) - set(KERNELS))
    assert not stale, f"entries for names that are no longer public: {stale}"


@pytest.mark.parametrize("name", KERNELS)
def test_every_kernel_takes_validate_args_keyword_only(name):
    param = inspect.signature(getattr(F, name)).parameters.get("validate_args")
    assert param is not None, f"{name} has no `validate_args`"
    assert param.kind is inspect.Parameter.KEYWORD_ONLY
    assert param.default is True


@pytest.mark.parametrize("name", KERNELS)
def test_every_kernel_refuses_its_invalid_input_in_one_line(name):
    call, argument = KERNEL_CASES[name]
    with pytest.raises(ValueError, match=re.escape(argument)) as error:
        call()
    _assert_one_line(error, argument)


@pytest.mark.parametrize(("name", "cls"), CLASSES, ids=[n for n, _ in CLASSES])
def test_every_metric_and_loss_refuses_its_invalid_input_in_one_line(name, cls):
    make, argument = _family_case(cls)
    instance = cls(**CONSTRUCT.get(cls.__name__, {}))
    assert instance.validate_args is True
    step = instance.update if isinstance(instance, Metric) else instance.forward
    assert isinstance(instance, (Metric, nn.Module))
    with pytest.raises(ValueError, match=re.escape(argument)) as error:
        step(**make())
    _assert_one_line(error, argument)


# -- the flag is read: every function that takes it uses it (an AST scan of the package) ------------------------


def _functions_ignoring_the_flag(root: Path) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            params = [a.arg for a in node.args.args + node.args.kwonlyargs + node.args.posonlyargs]
            if "validate_args" not in params:
                continue
            reads = [
                n
                for n in ast.walk(node)
                if isinstance(n, ast.Name) and n.id == "validate_args" and isinstance(n.ctx, ast.Load)
            ]
            if not reads:
                found.append(f"{path.relative_to(root.parent)}:{node.lineno} {node.name}")
    return found


def test_no_function_takes_validate_args_without_reading_it():
    assert _functions_ignoring_the_flag(Path(drivemetrics.__file__).parent) == []


def test_the_scan_finds_an_ignored_flag(tmp_path):
    package = tmp_path / "fake"
    package.mkdir()
    (package / "kernel.py").write_text(
        "def honest(x, *, validate_args=True):\n    return check(x) if validate_args else x\n\n"
        "def idle(x, *, validate_args=True):\n    return x\n"
    )
    assert _functions_ignoring_the_flag(package) == ["fake/kernel.py:4 idle"]


# -- behaviour: a bad value raises with True and is not read with False ----------------------------------------


def test_polyline_lengths_range_is_checked_only_with_validate_args():
    points = torch.zeros(1, 2, 3, 2)
    bad = torch.tensor([[3, 7]])  # 7 > 3 padded points
    good = torch.tensor([[3, 3]])
    with pytest.raises(ValueError, match="preds_lengths"):
        F.chamfer_distance(points, bad, points, good)
    F.chamfer_distance(points, bad, points, good, validate_args=False)  # no read back, no error
    with pytest.raises(ValueError, match="lengths"):
        F.arc_length(points, bad)
    torch.testing.assert_close(F.arc_length(points, bad, validate_args=False), torch.zeros(1, 2))


def test_value_checks_are_skipped_with_validate_args_false():
    """The checks added for issue 46 read values only when asked: the same inputs pass with ``False``."""
    F.smooth_psld(torch.tensor([[0.1, NAN]]), validate_args=False)
    F.tusimple_f1(torch.tensor(1.5), torch.tensor(0.1), validate_args=False)
    F.score_rank(torch.tensor([0.2, NAN]), validate_args=False)
    F.average_precision_area(torch.tensor([1.0, 1.5]), torch.tensor([0.2, 0.4]), validate_args=False)
    F.road_center_attack_loss(torch.tensor([0.5, NAN]), validate_args=False)
    F.fixed_threshold_scores(COUNTS, validate_args=False)
    F.box2d_overlap(torch.tensor([0.0, 0.0, NAN, 2.0]), torch.zeros(4), validate_args=False)


def test_frechet_zero_length_is_checked_only_with_validate_args():
    a = torch.rand(2, 4, 2)
    with pytest.raises(ValueError, match="a_lengths"):
        F.frechet_distance_pairs(a, a, a_lengths=torch.tensor([0, 4]))
    F.frechet_distance_pairs(a, a, a_lengths=torch.tensor([0, 4]), validate_args=False)


def test_map_loss_lengths_are_checked_only_with_validate_args():
    from drivemetrics.vectormap import MapChamferLoss

    preds = torch.zeros(1, 1, 3, 2)
    lengths = torch.tensor([[9]])
    with pytest.raises(ValueError, match="target_lengths"):
        MapChamferLoss()(preds, preds, target_lengths=lengths)
    MapChamferLoss(validate_args=False)(preds, preds, target_lengths=lengths)


def test_lane_benchmark_checks_are_skipped_with_validate_args_false():
    """The value checks of the LLAMAS / CurveLanes / Apollo / ONCE kernels run only when asked."""
    F.apollo3d_scores(np.array([[2, -1, 2, 2]] * 19), np.zeros((19, 4)), np.full(19, 2), validate_args=False)
    F.once3d_scores(np.array([[4, 2, 2]]), np.array([-0.5]), validate_args=False)
    assert F.once3d_mean_distance(LANE3D, LANE3D + np.array([0.5, 0.0, 0.0]), validate_args=False) == 0.5
    with pytest.raises(ValueError, match=r"`scores` contains infinite scores"):
        F.curvelanes_matches(**curvelanes_example_inputs(), scores=torch.tensor([[0.9, math.inf]]))
    F.curvelanes_matches(**curvelanes_example_inputs(), scores=torch.tensor([[0.9, math.inf]]), validate_args=False)
