"""The official KITTI object evaluation (devkit ``evaluate_object.cpp``): 2D, AOS, BEV and 3D average precision.

For each class (Car, Pedestrian, Cyclist), metric (2D box, bird's-eye view, 3D box) and difficulty (easy, moderate,
hard) the C++ does, per frame:

1. ``cleanData``: a GT counts (``ignored_gt = 0``) if its type is the class and it is not too occluded, truncated
   or small (height ``<=`` 40 / 25 / 25 px); it is ignored (1) if it is the neighbour class (Van for Car,
   Person_sitting for Pedestrian) or a too-hard GT of the class; skipped (-1) otherwise. A detection shorter than
   40 / 25 / 25 px is ignored (1) whatever its class; otherwise it counts (0) if its type is the class, else it is
   skipped (-1). DontCare GT boxes are kept apart.
2. Pass 1: GT by GT in file order, the highest-scoring unassigned detection with overlap ``>`` the class's minimum
   overlap is assigned; the scores of the true positives give the 41 recall-sampling thresholds (``getThresholds``,
   recall steps of 1/40 accumulated in float64).
3. Pass 2, for each threshold ``t``: the detections scoring ``>= t``, GT by GT, the unassigned one of largest
   overlap (preferring counted detections over ignored ones) is assigned; TP, FP (unassigned counted detections,
   less those covering a DontCare region: overlap over the detection's own size ``>`` the minimum overlap) and the
   orientation similarity ``sum_TP (1 + cos(alpha_gt - alpha_det)) / 2`` are summed over all frames.
4. ``precision[k] = TP / (TP + FP)`` (and AOS likewise), then each value is replaced by the maximum at and after
   it (41 slots, unused ones 0). AP R11 = mean of slots 0, 4, ..., 40; AP R40 = mean of slots 1..40 (fractions in
   [0, 1]; the devkit prints them x 100, and so does the table of ``kitti-object-eval``).

This implementation runs pass 1 and pass 2 for every frame, threshold and difficulty at once. The candidate pairs
(overlap above the minimum) link detections and GTs into components whose matchings are independent; almost every
component is one lone pair, matched exactly when its detection is active, so those are counted per threshold in
closed form. The other components run the greedy matching, which is sequential only in the GT order *within* a
frame: it loops over "the k-th GT of every frame" and works on their candidate pairs of all frames together.

The evaluation runs on numpy and imports neither torch nor torchmetrics (``kitti-object-eval`` needs neither);
with a torch ``device`` the overlaps (:mod:`drivemetrics.detection.box_iou`, float64) and the greedy matching run on
tensors there, the same code. :class:`~drivemetrics.detection.kitti_object.KittiObjectMetrics` accumulates
per-frame boxes in a validation loop and runs :func:`evaluate_kitti_objects` over every frame seen (on all
processes) in ``compute()``.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from drivemetrics._internal import arrays as xp
from drivemetrics._internal.pool import one_torch_thread_per_worker, parallel_map
from drivemetrics._internal.progress import progress_bar
from drivemetrics._internal.validation import check_coordinates_within_limit, check_values
from drivemetrics.detection.box_iou import bev_intersection_area, box2d_overlap, box3d_from_bev_area
from drivemetrics.detection.io import KittiObjects, ObjectTable

if TYPE_CHECKING:  # torch is imported only when a device is given: ``kitti-object-eval`` runs without it
    import torch

__all__ = [
    "DIFFICULTIES",
    "KITTI_CLASSES",
    "LOOSE_OVERLAPS",
    "METRICS",
    "N_SAMPLE_PTS",
    "STRICT_OVERLAPS",
    "average_precision_r11",
    "average_precision_r40",
    "evaluate_kitti_objects",
    "kitti_recall_thresholds",
]

#: The evaluated classes (lower case, as in the C++ ``CLASS_NAMES`` and the stats file names).
KittiClass = Literal["car", "pedestrian", "cyclist"]
#: KITTI overlap presets: ``"strict"`` (official) or ``"loose"``.
Overlaps = Literal["strict", "loose"]
KITTI_CLASSES: tuple[KittiClass, ...] = ("car", "pedestrian", "cyclist")
#: Difficulty names, with the C++ limits below (index 0 easy, 1 moderate, 2 hard).
Difficulty = Literal["easy", "moderate", "hard"]
DIFFICULTIES: tuple[Difficulty, ...] = ("easy", "moderate", "hard")
MIN_HEIGHT = (40.0, 25.0, 25.0)
MAX_OCCLUSION = (0, 1, 2)
MAX_TRUNCATION = (0.15, 0.3, 0.5)
#: The overlap metrics; ``"aos"`` is computed together with ``"2d"``.
KittiMetric = Literal["2d", "aos", "bev", "3d"]
METRICS: tuple[KittiMetric, ...] = ("2d", "aos", "bev", "3d")
#: Number of recall sampling points of the C++.
N_SAMPLE_PTS = 41
#: The official minimum overlaps ``{metric: (car, pedestrian, cyclist)}`` (devkit ``MIN_OVERLAP``).
STRICT_OVERLAPS: dict[str, tuple[float, float, float]] = {
    "2d": (0.7, 0.5, 0.5),
    "bev": (0.7, 0.5, 0.5),
    "3d": (0.7, 0.5, 0.5),
}
#: The loose set the Python ports also print (2D unchanged; BEV and 3D 0.5 / 0.25 / 0.25).
LOOSE_OVERLAPS: dict[str, tuple[float, float, float]] = {
    "2d": (0.7, 0.5, 0.5),
    "bev": (0.5, 0.25, 0.25),
    "3d": (0.5, 0.25, 0.25),
}

# type codes of the flattened objects
_CODES = {"car": 0, "pedestrian": 1, "cyclist": 2, "van": 3, "person_sitting": 4, "dontcare": 5}
_OTHER, _DONTCARE = 6, 5
_NEIGHBOUR = {0: 3, 1: 4}  # Car <- Van, Pedestrian <- Person_sitting
_OVERLAP_KINDS = ("2d", "bev", "3d")


def kitti_recall_thresholds(scores: np.ndarray | Sequence[float], n_gt: int) -> list[float]:
    """The score thresholds of the recall sampling (C++ ``getThresholds``) from the true-positive scores of pass 1.

    The scores are sorted in decreasing order; score ``i`` (recall ``(i + 1) / n_gt``) is kept when it is closer to
    the next sampling point than the following score (always when ``i`` is the last); the sampling point then
    advances by ``1 / 40``, accumulated in float64 as the C++ does. At most 41 values.
    """
    v = np.sort(np.asarray(scores, dtype=np.float64).reshape(-1))[::-1]
    last = len(v) - 1
    thresholds: list[float] = []
    current = 0.0
    i = 0
    while i <= last:
        # score i is skipped while (i + 2) / n - cur < cur - (i + 1) / n, i.e. i < cur * n - 1.5; jump close to the
        # first index that may pass (2 below it, far beyond rounding; the last index is always kept), then apply the
        # C++ test exactly
        i = min(max(i, math.floor(current * n_gt - 1.5) - 2), last)  # the last score is always kept
        left = (i + 1) / n_gt
        right = (i + 2) / n_gt if i < last else left
        if (right - current) < (current - left) and i < last:
            i += 1
            continue
        thresholds.append(float(v[i]))
        current += 1.0 / (N_SAMPLE_PTS - 1.0)
        i += 1
    return thresholds


def _suffix_max_like_cpp(values: list[float]) -> list[float]:
    """``values[i] = *max_element(values[i:])`` with the C++ semantics (first largest by ``<``; NaN stays as is)."""
    out = []
    for i in range(len(values)):
        best = values[i]
        for v in values[i + 1 :]:
            if best < v:
                best = v
        out.append(best)
    return out


def average_precision_r11(curve: Sequence[float]) -> float:
    """AP over 11 recall points: the mean of slots 0, 4, ..., 40 of a 41-point curve, a fraction in [0, 1].

    The devkit's percentage ``sum / 11 * 100`` is this value ``* 100``, bit for bit (same operation order).

    Examples:
        >>> from drivemetrics.detection.kitti_ap import average_precision_r11
        >>> average_precision_r11([1.0] * 20 + [0.0] * 21)  # slots 0, 4, ..., 16 of the 11 sampled: 5 of 11
        0.45454545454545453
    """
    return sum(curve[0::4]) / 11


def average_precision_r40(curve: Sequence[float]) -> float:
    """AP over 40 recall points (official since 2019): the mean of slots 1..40 of a 41-point curve, a fraction in
    [0, 1].

    The devkit's percentage ``sum / 40 * 100`` is this value ``* 100``, bit for bit (same operation order).

    Examples:
        >>> from drivemetrics.detection.kitti_ap import average_precision_r40
        >>> average_precision_r40([1.0] * 40 + [0.0])  # slots 1..39 filled, slot 40 empty
        0.975
    """
    return sum(curve[1:]) / 40


@dataclass
class _Flat:
    """All objects of all frames, concatenated in frame order then file order."""

    frame: np.ndarray  # N int64
    code: np.ndarray  # N int64 type code
    truncated: np.ndarray
    occluded: np.ndarray
    alpha: np.ndarray
    bbox: np.ndarray  # N x 4
    box3d: np.ndarray  # N x 7: x, y, z, h, w, l, ry
    score: np.ndarray


def _type_codes(types: Sequence[str]) -> np.ndarray:
    codes = {name: _CODES.get(str(name).lower(), _OTHER) for name in set(types)}
    return np.fromiter(map(codes.__getitem__, types), dtype=np.int64, count=len(types))


def _flatten(frames: Sequence[KittiObjects] | ObjectTable) -> _Flat:
    if isinstance(frames, ObjectTable):
        if not isinstance(frames.parsed, tuple):  # files of different column counts: frame by frame
            return _flatten(list(frames.frames().values()))
        return _flatten_table(frames)
    counts = np.array([len(f) for f in frames], dtype=np.int64)
    frame = np.repeat(np.arange(len(frames), dtype=np.int64), counts)

    def cat(name: str, width: int) -> np.ndarray:
        parts = [getattr(f, name) for f in frames]
        out = np.concatenate(parts).astype(np.float64, copy=False) if parts else np.zeros(0)
        return out.reshape(-1, width)

    scores = [f.score if f.score is not None else np.zeros(len(f)) for f in frames]
    location, dims = cat("location", 3), cat("dimensions", 3)
    return _Flat(
        frame=frame,
        code=_type_codes([t for f in frames for t in f.type]),
        truncated=cat("truncated", 1)[:, 0],
        occluded=cat("occluded", 1)[:, 0],
        alpha=cat("alpha", 1)[:, 0],
        bbox=cat("bbox", 4),
        box3d=np.concatenate([location, dims, cat("rotation_y", 1)], axis=1),
        score=np.concatenate(scores) if scores else np.zeros(0),
    )


def _flatten_table(table: ObjectTable) -> _Flat:
    """:func:`_flatten` of a folder read as one table (the same arrays, without building the frames)."""
    assert isinstance(table.parsed, tuple)
    types, values, rows_per_file = table.parsed
    counts = np.zeros(len(table.names), dtype=np.int64)
    absent = set(table.absent)
    counts[[i for i, name in enumerate(table.names) if name not in absent]] = rows_per_file
    columns = values.T  # file column order: truncated, occluded, alpha, bbox 4, h w l, x y z, ry, [score]
    return _Flat(
        frame=np.repeat(np.arange(len(counts), dtype=np.int64), counts),
        code=_type_codes(types),
        truncated=columns[0].copy(),
        occluded=columns[1].copy(),
        alpha=columns[2].copy(),
        bbox=np.ascontiguousarray(values[:, 3:7]),
        box3d=np.ascontiguousarray(values[:, [10, 11, 12, 7, 8, 9, 13]]),
        score=columns[14].copy() if values.shape[1] == 15 else np.zeros(len(values)),
    )


def _frame_pairs(det_frame: np.ndarray, gt_frame: np.ndarray, n_frames: int) -> tuple[np.ndarray, np.ndarray]:
    """Every (detection, GT) index pair of the same frame, sorted by detection then GT."""
    n_gt = np.bincount(gt_frame, minlength=n_frames)
    gt_start = np.cumsum(n_gt) - n_gt
    per_det = n_gt[det_frame]
    det_index = np.repeat(np.arange(len(det_frame), dtype=np.int64), per_det)
    block_start = np.repeat(np.cumsum(per_det) - per_det, per_det)
    gt_index = gt_start[det_frame[det_index]] + (np.arange(len(det_index), dtype=np.int64) - block_start)
    return det_index, gt_index


@dataclass
class _PairOverlaps:
    """Overlaps of the same-frame (detection, GT) pairs that can matter, per kind: the IoU of the pairs with a GT of
    a class or neighbour class, the overlap over the detection of the DontCare pairs (0 elsewhere)."""

    det: np.ndarray
    gt: np.ndarray
    gt_code: np.ndarray
    iou: dict[str, np.ndarray]
    over_det: dict[str, np.ndarray]


#: The evaluated class a GT type code counts for (Van for Car, Person_sitting for Pedestrian); -1 none.
_CLASS_OF_GT = np.array([0, 1, 2, 0, 1, -1, -1], dtype=np.int64)


def _pair_overlaps(
    det: _Flat, gt: _Flat, n_frames: int, kinds: Sequence[str], device: torch.device | None
) -> _PairOverlaps:
    # only pairs that can matter: a detection takes part in a class's evaluation if it is of the class or too small
    # for every difficulty's minimum height (then it is ignored in every class); a GT if it is of the class or its
    # neighbour class; DontCare GT regions remove detections of an evaluated class from the false positives
    det_small = np.abs(det.bbox[:, 1] - det.bbox[:, 3]) < max(MIN_HEIGHT)
    det_keep = np.flatnonzero((det.code <= 2) | det_small)
    gt_keep = np.flatnonzero(gt.code <= _DONTCARE)
    local_d, local_g = _frame_pairs(det.frame[det_keep], gt.frame[gt_keep], n_frames)
    det_i, gt_i = det_keep[local_d], gt_keep[local_g]
    gt_code = gt.code[gt_i]
    dontcare = gt_code == _DONTCARE
    useful = dontcare | det_small[det_i] | (_CLASS_OF_GT[gt_code] == det.code[det_i])
    det_i, gt_i, gt_code, dontcare = det_i[useful], gt_i[useful], gt_code[useful], dontcare[useful]
    # per pair: the IoU if its GT is of a class, the overlap over the detection if it is DontCare
    criterion = np.where(dontcare, 0, -1)
    iou: dict[str, np.ndarray] = {}
    over_det: dict[str, np.ndarray] = {}

    def split(values: np.ndarray, kind: str) -> None:
        iou[kind] = np.where(dontcare, 0.0, values)
        over_det[kind] = np.where(dontcare, values, 0.0)

    if "2d" in kinds:
        split(_overlaps_by_criterion(box2d_overlap, det.bbox[det_i], gt.bbox[gt_i], criterion, device), "2d")
    if "bev" in kinds or "3d" in kinds:
        # only pairs whose bounding circles meet can intersect
        radius_d = 0.5 * np.hypot(det.box3d[:, 4], det.box3d[:, 5])
        radius_g = 0.5 * np.hypot(gt.box3d[:, 4], gt.box3d[:, 5])
        gap = np.hypot(det.box3d[det_i, 0] - gt.box3d[gt_i, 0], det.box3d[det_i, 2] - gt.box3d[gt_i, 2])
        near = np.flatnonzero(gap <= radius_d[det_i] + radius_g[gt_i] + 1e-9)
        da, ga = xp.on_device(det.box3d[det_i[near]], device), xp.on_device(gt.box3d[gt_i[near]], device)
        inter = bev_intersection_area(da[:, [0, 2, 5, 4, 6]], ga[:, [0, 2, 5, 4, 6]])
        over_near = criterion[near] == 0
        for kind in ("bev", "3d"):
            if kind not in kinds:
                continue
            values = np.zeros(len(det_i))
            if kind == "bev":
                area_d = xp.to_numpy(abs(da[:, 4] * da[:, 5]))
                area_g = xp.to_numpy(abs(ga[:, 4] * ga[:, 5]))
                inter_n = xp.to_numpy(inter)
                union = area_d + area_g - inter_n
                values[near] = np.where(over_near, _divide(inter_n, area_d), _divide(inter_n, union))
            else:
                iou_3d = xp.to_numpy(box3d_from_bev_area(da, ga, inter, -1))
                over_3d = xp.to_numpy(box3d_from_bev_area(da, ga, inter, 0))
                values[near] = np.where(over_near, over_3d, iou_3d)
            split(values, kind)
    return _PairOverlaps(det=det_i, gt=gt_i, gt_code=gt_code, iou=iou, over_det=over_det)


def _divide(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """``num / den`` where ``den > 0``, else 0."""
    positive = den > 0
    return np.where(positive, num / np.where(positive, den, 1.0), 0.0)


def _overlaps_by_criterion(
    overlap: Any, a: np.ndarray, b: np.ndarray, criterion: np.ndarray, device: torch.device | None
) -> np.ndarray:
    """``overlap(a[i], b[i], criterion=criterion[i])`` per pair, each criterion's pairs in one call."""
    out = np.zeros(len(a))
    for value in (-1, 0):
        rows = np.flatnonzero(criterion == value)
        if len(rows):
            out[rows] = xp.to_numpy(
                overlap(
                    xp.on_device(a[rows], device), xp.on_device(b[rows], device), criterion=value, validate_args=False
                )
            )
    return out


def _ignored_gt(gt: _Flat, class_code: int) -> np.ndarray:
    """``(3, N_gt)`` int8: 0 counted, 1 ignored, -1 skipped (C++ ``cleanData``), per difficulty."""
    height = gt.bbox[:, 3] - gt.bbox[:, 1]
    valid = gt.code == class_code
    neighbour = gt.code == _NEIGHBOUR.get(class_code, -100)
    out = np.full((3, len(gt.code)), -1, dtype=np.int8)
    for d in range(3):
        hard = (gt.occluded > MAX_OCCLUSION[d]) | (gt.truncated > MAX_TRUNCATION[d]) | (height <= MIN_HEIGHT[d])
        out[d][neighbour | (valid & hard)] = 1
        out[d][valid & ~hard] = 0
    return out


def _ignored_det(det: _Flat, class_code: int) -> np.ndarray:
    """``(3, N_det)`` int8: 1 too small (any class), else 0 the class, -1 another class."""
    height = np.abs(det.bbox[:, 1] - det.bbox[:, 3])
    out = np.where(det.code == class_code, 0, -1).astype(np.int8)[None].repeat(3, 0)
    for d in range(3):
        out[d][height < MIN_HEIGHT[d]] = 1
    return out


@dataclass
class _Candidates:
    """Candidate pairs (overlap above the minimum), sorted by GT then detection, with the order in which the greedy
    matching visits them: ``steps[k]`` holds the pairs of the k-th GT of every frame. Arrays of the matching's
    library (numpy, or torch on the evaluation's device)."""

    det: Any  # P, index into the paired detections (0..D-1)
    gt: np.ndarray  # P, GT index
    overlap: Any  # P float64
    det_ids: np.ndarray  # D, global detection index of each paired detection
    steps: list[tuple[Any, Any, int]]  # (pair indices, group of each pair, number of groups)


def _candidates(
    det_i: np.ndarray, gt_i: np.ndarray, overlap: np.ndarray, gt_frame: np.ndarray, device: torch.device | None
) -> _Candidates:
    order = np.lexsort((det_i, gt_i))
    det_i, gt_i, overlap = det_i[order], gt_i[order], overlap[order]
    det_ids, det_local = np.unique(det_i, return_inverse=True)
    # groups = GTs with candidates (consecutive runs of gt_i); rank of each GT among those of its frame
    new_group = np.ones(len(gt_i), dtype=bool)
    new_group[1:] = gt_i[1:] != gt_i[:-1]
    group_of_pair = np.cumsum(new_group) - 1
    group_gt = gt_i[new_group]
    group_frame = gt_frame[group_gt]
    first_in_frame = np.ones(len(group_gt), dtype=bool)
    first_in_frame[1:] = group_frame[1:] != group_frame[:-1]
    frame_start = np.maximum.accumulate(np.where(first_in_frame, np.arange(len(group_gt)), 0))
    rank = np.arange(len(group_gt)) - frame_start
    pair_rank = rank[group_of_pair]
    steps = []
    for k in range(int(rank.max()) + 1 if len(rank) else 0):
        pairs = np.flatnonzero(pair_rank == k)
        groups_k = np.flatnonzero(rank == k)
        local = np.searchsorted(groups_k, group_of_pair[pairs])
        steps.append((xp.on_device(pairs, device), xp.on_device(local, device), len(groups_k)))
    return _Candidates(
        det=xp.on_device(det_local.reshape(-1).astype(np.int64), device),
        gt=gt_i,
        overlap=xp.on_device(overlap, device),
        det_ids=det_ids,
        steps=steps,
    )


def _greedy_match(
    cand: _Candidates,
    active: Any,
    ignored_det: Any,
    ignored_gt_pair: Any,
    score: Any,
    by_score: bool,
) -> tuple[Any, Any]:
    """Greedy GT-order matching of every scenario (difficulty x threshold) at once (numpy arrays or tensors).

    Args:
        cand: the candidate pairs.
        active: ``(D, S)`` bool, the paired detections that take part (not skipped, score above the threshold).
        ignored_det: ``(D, S)`` int8 (0 / 1 for the active ones).
        ignored_gt_pair: ``(P, S)`` int8, the ``ignored_gt`` flag of each pair's GT.
        score: ``D`` detection scores.
        by_score: pass 1 (highest score wins) or pass 2 (largest overlap among counted detections wins, else the
            first ignored one).

    Returns:
        ``(assigned D x S, tp_pair P x S)``: the detections assigned, and the pairs matched as true positives.
    """
    n_det, n_scen = active.shape
    n_pairs = cand.det.shape[0]
    assigned = xp.full((n_det + 1, n_scen), False, like=active, dtype="bool")  # last row: a sink for no-ops
    tp_pair = xp.full((n_pairs + 1, n_scen), False, like=active, dtype="bool")
    big = np.iinfo(np.int64).max
    for pairs, group, n_groups in cand.steps:
        det = cand.det[pairs]
        eligible = active[det] & ~assigned[det]  # P_k x S
        position = xp.arange(pairs.shape[0], like=pairs)[:, None]

        def first_best(mask: Any, key: Any, group: Any = group, position: Any = position, n_groups: int = n_groups):
            """Per group and scenario, the first position with the largest key among ``mask``; ``big`` if none."""
            keyed = xp.where(mask, key[:, None], -math.inf)
            best = xp.scatter_reduce_rows(xp.full((n_groups, n_scen), -math.inf, like=keyed), group, keyed, "amax")
            pos = xp.where(mask & (keyed == best[group]), position, big)
            first = xp.full((n_groups, n_scen), big, like=pos)
            return xp.scatter_reduce_rows(first, group, xp.contiguous(pos), "amin")

        if by_score:
            winner = first_best(eligible, score[det])
        else:
            ig = ignored_det[det]
            winner = first_best(eligible & (ig == 0), cand.overlap[pairs])
            fallback = first_best(eligible & (ig == 1), 0.0 * cand.overlap[pairs])
            winner = xp.where(winner == big, fallback, winner)
        found = winner != big
        win_pair = pairs[xp.where(found, winner, 0)]  # G x S
        win_det = cand.det[win_pair]
        is_tp = found & (xp.gather(ignored_gt_pair, 0, win_pair) == 0) & (xp.gather(ignored_det, 0, win_det) == 0)
        xp.set_true_rows(assigned, xp.where(found, win_det, n_det))
        xp.set_true_rows(tp_pair, xp.where(is_tp, win_pair, n_pairs))
    return assigned[:n_det], tp_pair[:n_pairs]


@dataclass
class _Totals:
    """Per scenario (difficulty, threshold) sums of one class and kind: true positives, assigned counted detections
    (taken off the false positives) and the orientation similarity of the true positives."""

    tp: np.ndarray
    assigned_counted: np.ndarray
    similarity: np.ndarray


def _lone_pair_totals(
    score: np.ndarray, tp_flag: np.ndarray, counted: np.ndarray, similarity: np.ndarray | None, thresholds: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The sums of :class:`_Totals` over the pairs that are alone in their component (their detection has no other
    candidate GT, their GT no other candidate detection), for one difficulty: such a pair is matched exactly when
    its detection is active (score ``>=`` the threshold), so each sum counts the flagged pairs above a threshold.

    Args:
        score: ``L`` the pairs' detection scores.
        tp_flag: ``L`` bool, GT and detection both counted (a match is a true positive).
        counted: ``L`` bool, the detection counts as a false positive when unassigned.
        similarity: ``L`` orientation similarities, or ``None``.
        thresholds: ``T`` score thresholds.
    """
    order = np.argsort(-score, kind="stable")
    sorted_score = score[order]  # decreasing
    tp_scores = sorted_score[tp_flag[order]]
    counted_scores = sorted_score[counted[order]]
    # number of values >= t in a decreasing array: searchsorted on the negated (increasing) values, side right
    n_tp = np.searchsorted(-tp_scores, -thresholds, "right")
    n_counted = np.searchsorted(-counted_scores, -thresholds, "right")
    sims: np.ndarray = np.zeros(len(thresholds))
    if similarity is not None:
        running = np.concatenate([[0.0], np.cumsum(similarity[order][tp_flag[order]])])
        sims = running[n_tp]
    return n_tp.astype(np.float64), n_counted.astype(np.float64), sims


def _evaluate_class_metric(
    class_code: int,
    kind: str,
    det: _Flat,
    gt: _Flat,
    overlaps: _PairOverlaps,
    min_overlap: float,
    compute_aos: bool,
    device: torch.device | None,
) -> dict[str, list[list[float]]]:
    """Precision (and AOS) curves of one class and overlap kind, for the 3 difficulties: ``{"precision": [[41]*3]}``.

    The candidate pairs (overlap above the minimum) form components (detections and GTs linked by candidates); the
    matching of one component never touches another. Almost every component is one lone pair, matched exactly when
    its detection is active: those are counted per threshold in closed form (:func:`_lone_pair_totals`); the other
    components run the greedy matching of every scenario at once (:func:`_greedy_match`).
    """
    ig_gt = _ignored_gt(gt, class_code)
    ig_det = _ignored_det(det, class_code)
    n_gt = (ig_gt == 0).sum(1)
    # DontCare regions covered by a detection (overlap over the detection's own size)
    dc_pair = (overlaps.gt_code == _DONTCARE) & (overlaps.over_det[kind] > min_overlap)
    dc_hit = np.zeros(len(det.code), dtype=bool)
    dc_hit[overlaps.det[dc_pair]] = True
    counted = (ig_det == 0) & ~dc_hit[None]  # 3 x N_det: a false positive unless assigned
    # candidate pairs: GT of the class or its neighbour, detection taking part in some difficulty, overlap > min
    det_takes_part = (ig_det != -1).any(0)
    gt_code = overlaps.gt_code
    keep = (gt_code == class_code) | (gt_code == _NEIGHBOUR.get(class_code, -100))
    keep &= overlaps.iou[kind] > min_overlap
    keep &= det_takes_part[overlaps.det]
    pair_det, pair_gt, pair_iou = overlaps.det[keep], overlaps.gt[keep], overlaps.iou[kind][keep]
    lone = (np.bincount(pair_det, minlength=len(det.code))[pair_det] == 1) & (
        np.bincount(pair_gt, minlength=len(gt.code))[pair_gt] == 1
    )
    lone_det, lone_gt = pair_det[lone], pair_gt[lone]
    lone_score = det.score[lone_det]
    lone_tp = (ig_gt[:, lone_gt] == 0) & (ig_det[:, lone_det] == 0)  # 3 x L
    cand = _candidates(pair_det[~lone], pair_gt[~lone], pair_iou[~lone], gt.frame, device)
    ids = cand.det_ids
    score = det.score[ids]
    score_on = xp.on_device(score, device)
    ig_det_on = xp.on_device(np.ascontiguousarray(ig_det[:, ids].T), device)  # D x 3
    ig_gt_pair = xp.on_device(np.ascontiguousarray(ig_gt[:, cand.gt].T), device)  # P x 3
    cand_det = xp.to_numpy(cand.det)

    # pass 1: the true positives' scores give the thresholds of each difficulty
    _, tp_pair = _greedy_match(cand, ig_det_on != -1, ig_det_on, ig_gt_pair, score_on, by_score=True)
    tp_pair = xp.to_numpy(tp_pair)
    thresholds = []
    for d in range(3):
        tp_scores = np.concatenate([lone_score[lone_tp[d]], score[cand_det[tp_pair[:, d]]]])
        thresholds.append(kitti_recall_thresholds(tp_scores, int(n_gt[d])) if n_gt[d] > 0 else [])
    if any(len(t) > N_SAMPLE_PTS for t in thresholds):  # cannot happen: recall <= 1
        raise RuntimeError("more than 41 recall thresholds")

    # pass 2: every distinct (difficulty, threshold) at once
    scenarios = sorted({(d, t) for d in range(3) for t in thresholds[d]})
    slot_of = {sc: i for i, sc in enumerate(scenarios)}
    diff_of = np.array([d for d, _ in scenarios], dtype=np.int64)
    thr = np.array([t for _, t in scenarios], dtype=np.float64)
    ig_det_s = ig_det[:, ids].T[:, diff_of]
    active = (ig_det_s != -1) & (score[:, None] >= thr[None, :])
    assigned, tp_pair = _greedy_match(
        cand,
        xp.on_device(active, device),
        xp.on_device(np.ascontiguousarray(ig_det_s), device),
        xp.on_device(np.ascontiguousarray(ig_gt[:, cand.gt].T[:, diff_of]), device),
        score_on,
        by_score=False,
    )
    assigned, tp_pair = xp.to_numpy(assigned), xp.to_numpy(tp_pair)
    similarity = None
    if compute_aos:
        similarity = (1.0 + np.cos(gt.alpha[cand.gt] - det.alpha[ids][cand_det])) / 2.0
    totals = _Totals(
        tp=tp_pair.sum(0).astype(np.float64),
        assigned_counted=(assigned & counted[:, ids].T[:, diff_of] & active).sum(0).astype(np.float64),
        similarity=(tp_pair * similarity[:, None]).sum(0) if similarity is not None else np.zeros(len(scenarios)),
    )
    lone_similarity = None
    if compute_aos:
        lone_similarity = (1.0 + np.cos(gt.alpha[lone_gt] - det.alpha[lone_det])) / 2.0
    _add_lone_pair_totals(totals, diff_of, thr, lone_score, lone_tp, counted[:, lone_det], lone_similarity)
    # FP: counted, active, unassigned detections (not covering a DontCare region)
    fp_all = _counted_at_or_above(det.score, counted, scenarios)
    slots = [[slot_of[(d, t)] for t in thresholds[d]] for d in range(3)]
    tp, fp = _to_slots(totals.tp, slots), _to_slots(fp_all - totals.assigned_counted, slots)
    result = {"precision": _curves(tp, tp, fp, thresholds)}
    if compute_aos:
        result["aos"] = _curves(_to_slots(totals.similarity, slots), tp, fp, thresholds)
    return result


def _counted_at_or_above(score: np.ndarray, counted: np.ndarray, scenarios: list[tuple[int, float]]) -> np.ndarray:
    """Per scenario ``(d, t)``, how many detections counted at difficulty ``d`` (``counted``: ``3 x N_det`` bool)
    score at least ``t`` (``score``: ``N_det``); returns ``S`` float64 counts."""
    sorted_counted = [np.sort(score[counted[d]]) for d in range(3)]
    return np.array(
        [len(sorted_counted[d]) - np.searchsorted(sorted_counted[d], t, "left") for d, t in scenarios],
        dtype=np.float64,
    )


def _add_lone_pair_totals(
    totals: _Totals,
    diff_of: np.ndarray,
    thr: np.ndarray,
    lone_score: np.ndarray,
    lone_tp: np.ndarray,
    lone_counted: np.ndarray,
    lone_similarity: np.ndarray | None,
) -> None:
    """Add the lone pairs' counts to ``totals`` (in place), scenario by scenario.

    Args:
        totals: per-scenario sums of the matched components, ``S`` values each.
        diff_of: ``S`` difficulty of each scenario; thr: ``S`` its score threshold.
        lone_score: ``L`` scores of the lone pairs' detections.
        lone_tp: ``3 x L`` bool, the pair is a true positive at that difficulty when its detection is active.
        lone_counted: ``3 x L`` bool, the detection counts as a false positive when unassigned.
        lone_similarity: ``L`` orientation similarities, or ``None``.
    """
    for d in range(3):
        columns = np.flatnonzero(diff_of == d)
        if not len(columns):
            continue
        tp_l, counted_l, sim_l = _lone_pair_totals(
            lone_score, lone_tp[d], lone_counted[d], lone_similarity, thr[columns]
        )
        totals.tp[columns] += tp_l
        totals.assigned_counted[columns] += counted_l
        totals.similarity[columns] += sim_l


def _to_slots(per_scenario: np.ndarray, slots: list[list[int]]) -> list[list[float]]:
    """Per difficulty, the values of the scenarios of its thresholds, in threshold order."""
    values = per_scenario.tolist()
    return [[values[i] for i in row] for row in slots]


def _curves(
    num_l: list[list[float]], tp_l: list[list[float]], fp_l: list[list[float]], thresholds: list[list[float]]
) -> list[list[float]]:
    """The 41-slot max-interpolated curves ``num / (tp + fp)`` per difficulty, filled as the C++ fills them."""
    curves = []
    for d in range(3):
        values = [0.0] * N_SAMPLE_PTS
        for k in range(len(thresholds[d])):
            den = tp_l[d][k] + fp_l[d][k]
            values[k] = num_l[d][k] / den if den > 0 else math.nan
        curves.append(_suffix_max_like_cpp(values))
    return curves


def _classes_to_evaluate(det: _Flat, classes: Sequence[str]) -> dict[str, dict[str, bool]]:
    """Which class / overlap kind the C++ evaluates: those detected at least once with a usable box
    (2D: ``x1 >= 0``; BEV: ``x, z != -1000`` and ``w, l > 0``; 3D: also ``y != -1000`` and ``h > 0``)."""
    x, y, z, h, w, l = (det.box3d[:, i] for i in range(6))
    ground = (x != -1000) & (z != -1000) & (w > 0) & (l > 0)
    out = {}
    for name in classes:
        mine = det.code == _CODES[name]
        out[name] = {
            "2d": bool((mine & (det.bbox[:, 0] >= 0)).any()),
            "bev": bool((mine & ground).any()),
            "3d": bool((mine & ground & (y != -1000) & (h > 0)).any()),
        }
    return out


def _overlap_table(overlaps: Overlaps | Mapping[str, Sequence[float]]) -> dict[str, tuple[float, float, float]]:
    if isinstance(overlaps, str):
        if overlaps == "strict":
            return dict(STRICT_OVERLAPS)
        if overlaps == "loose":
            return dict(LOOSE_OVERLAPS)
        raise ValueError(f"`overlaps` must be 'strict', 'loose' or a mapping, got {overlaps!r}")
    table = {}
    for kind in _OVERLAP_KINDS:
        values = tuple(float(v) for v in overlaps[kind])
        if len(values) != 3 or not all(0 <= v < 1 for v in values):
            raise ValueError(f"`overlaps[{kind!r}]` must be 3 values in [0, 1) (car, pedestrian, cyclist)")
        table[kind] = values  # type: ignore[assignment]
    return table


def evaluate_kitti_objects(
    preds: Sequence[KittiObjects] | ObjectTable,
    target: Sequence[KittiObjects] | ObjectTable,
    *,
    classes: Sequence[str] = KITTI_CLASSES,
    overlaps: Overlaps | Mapping[str, Sequence[float]] = "strict",
    only_detected: bool = True,
    threads: int = 1,
    device: torch.device | str | None = None,
    progress: bool | None = False,
    validate_args: bool = True,
) -> dict[str, dict[str, dict[str, dict[str, object]]]]:
    """The official KITTI object evaluation of the detections ``preds`` against the labels ``target``, frame by frame.

    Args:
        preds: the result objects (detections, with scores) of each frame, or a result folder read by
            :func:`~drivemetrics.detection.io.read_object_table` (``with_score=True``; the same values, read faster).
        target: the label objects of each frame, same length and order (or a label folder's ``ObjectTable``).
        classes: among ``car``, ``pedestrian``, ``cyclist`` (case-insensitive).
        overlaps: ``"strict"`` (official: 0.7 / 0.5 / 0.5), ``"loose"`` (BEV / 3D at 0.5 / 0.25 / 0.25) or
            ``{"2d" | "bev" | "3d": (car, pedestrian, cyclist)}``.
        only_detected: as the C++, evaluate a class and overlap kind only if some detection of the class carries
            that box (``False``: evaluate every class and kind; a class never detected gets AP 0).
        threads: threads evaluating the (class, kind) combinations in parallel (at most one per usable core).
            With a torch ``device`` on the
            CPU the evaluation runs with ``torch.set_num_threads(1)`` (restored afterwards): the tensors are small,
            so torch's intra-op parallelism only adds overhead.
        device: ``None`` (default): numpy on the CPU, without importing torch; a torch device (``"cpu"``,
            ``"cuda"``): the overlaps and the greedy matching run on tensors there (the same code, the same
            values).
        progress: a tqdm bar over the (class, kind) curves on stderr (``None``: only when stdout and stderr are
            terminals).
        validate_args: refuse NaN, infinite or huge (beyond ``max_abs_coordinate``) boxes and NaN or infinite
            scores, naming the argument; ``False`` skips those checks.

    Returns:
        ``{class: {"2d" | "aos" | "bev" | "3d": {difficulty: {"curve": 41 floats, "ap_r11": float,
        "ap_r40": float}}}}``, every value a fraction in [0, 1] (the devkit prints AP ``* 100``); AOS is absent if
        any detection has ``alpha == -10`` (as the C++ does), and so are the classes / kinds not evaluated.

    Examples:
        >>> from drivemetrics.detection.io import parse_kitti_objects
        >>> from drivemetrics.functional import evaluate_kitti_objects
        >>> line = "Car 0.00 0 -1.57 100.00 150.00 300.00 250.00 1.50 1.60 4.00 1.00 1.70 15.00 -1.57"
        >>> target = [parse_kitti_objects(line)] * 40  # 40 frames, one car each
        >>> preds = [parse_kitti_objects(line + " 0.9")] * 40  # each detected exactly (score 0.9)
        >>> result = evaluate_kitti_objects(preds, target)
        >>> result["car"]["3d"]["moderate"]["ap_r40"]  # a fraction; 40 objects fill 40 of the 41 official recall points
        0.975
    """
    n_preds = len(preds.names) if isinstance(preds, ObjectTable) else len(preds)
    n_target = len(target.names) if isinstance(target, ObjectTable) else len(target)
    if n_preds != n_target:
        raise ValueError(f"got {n_preds} prediction frames but {n_target} target frames")
    if isinstance(preds, ObjectTable):
        if preds.with_score is not True:
            raise ValueError("`preds` must be read with `with_score=True` (a result line has 16 columns)")
    else:
        for i, frame in enumerate(preds):
            if len(frame) and frame.score is None:
                raise ValueError(f"`preds` of frame {i} carry no score (a result line has 16 columns)")
    names = [c.lower() for c in classes]
    for name in names:
        if name not in KITTI_CLASSES:
            raise ValueError(f"unknown class {name!r}: expected one of {KITTI_CLASSES}")
    table = _overlap_table(overlaps)
    if validate_args:
        _check_object_values(preds, "preds")
        _check_object_values(target, "target")
    if device is None:  # numpy: torch is not needed (nor imported)
        return _evaluate(target, preds, names, table, only_detected, threads, None, progress)
    import torch

    device = torch.device(device)
    with one_torch_thread_per_worker() if device.type == "cpu" else contextlib.nullcontext():
        return _evaluate(target, preds, names, table, only_detected, threads, device, progress)


def _check_object_values(frames: Sequence[KittiObjects] | ObjectTable, name: str) -> None:
    """``validate_args``: finite boxes within ``max_abs_coordinate`` and finite scores, one line naming the argument.

    A folder's table is checked on its parsed columns as they are (flattening it, as the evaluation does next, would
    cost that work twice: 5 % of ``kitti-object-eval``'s evaluation on 7,481 frames)."""
    if isinstance(frames, ObjectTable) and isinstance(frames.parsed, tuple):
        values = frames.parsed[1]  # file column order: truncated, occluded, alpha, bbox 4, h w l, x y z, ry, [score]
        bbox, box3d = values[:, 3:7], values[:, 7:14]
        score = values[:, 14] if values.shape[1] == 15 else np.zeros(0)
    else:
        flat = _flatten(frames)
        bbox, box3d, score = flat.bbox, flat.box3d, flat.score
    check_coordinates_within_limit(bbox, f"{name}.bbox")
    check_coordinates_within_limit(box3d, f"{name}.location/dimensions/rotation_y")
    check_values(score, f"{name}.score", what="scores")


def _evaluate(
    groundtruth: Sequence[KittiObjects] | ObjectTable,
    detections: Sequence[KittiObjects] | ObjectTable,
    names: Sequence[str],
    table: Mapping[str, tuple[float, float, float]],
    only_detected: bool,
    workers: int,
    device: torch.device | None,
    progress: bool | None = False,
) -> dict[str, dict[str, dict[str, dict[str, object]]]]:
    gt, det = _flatten(groundtruth), _flatten(detections)
    compute_aos = not bool((det.alpha == -10).any())
    todo = _classes_to_evaluate(det, names)
    jobs = [(n, k) for n in names for k in _OVERLAP_KINDS if todo[n][k] or not only_detected]
    kinds = sorted({k for _, k in jobs})
    n_frames = len(groundtruth.names) if isinstance(groundtruth, ObjectTable) else len(groundtruth)
    pair_ov = _pair_overlaps(det, gt, n_frames, kinds, device)

    def run(job: tuple[str, str]) -> dict[str, list[list[float]]]:
        name, kind = job
        code = _CODES[name]
        return _evaluate_class_metric(
            code, kind, det, gt, pair_ov, table[kind][code], compute_aos and kind == "2d", device
        )

    outputs = []
    with progress_bar(len(jobs), "kitti-object-eval", "curve", progress) as bar:
        for output in parallel_map(run, jobs, workers if len(jobs) > 1 else 1):
            outputs.append(output)
            bar.update()
    result: dict[str, dict[str, dict[str, dict[str, object]]]] = {}
    for (name, kind), curves in zip(jobs, outputs, strict=True):
        per_class = result.setdefault(name, {})
        for key, metric in (("precision", kind), ("aos", "aos")):
            if key not in curves:
                continue
            per_class[metric] = {
                diff: {
                    "curve": curve,
                    "ap_r11": average_precision_r11(curve),
                    "ap_r40": average_precision_r40(curve),
                }
                for diff, curve in zip(DIFFICULTIES, curves[key], strict=True)
            }
    for name in result:
        result[name] = {m: result[name][m] for m in METRICS if m in result[name]}
    return result
