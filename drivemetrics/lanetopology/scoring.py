"""The OpenLane-V2 scoring steps: frames in (parsed :class:`~drivemetrics.lanetopology.frames.LaneFrame`), pooled
statistics and scores out. No Metric here; :mod:`drivemetrics.lanetopology.openlanev2` (the Metric classes and the
functional kernel) and :mod:`drivemetrics.lanetopology.evaluate` (the dataset command) call
:func:`batch_statistics` and :func:`scores_from_statistics`, nothing else.

Steps, all frames of a batch at once: distance matrices (ground truth in rows, predictions in columns), greedy
matching by confidence, AP rows ``[channel, confidence, true positive]`` (detections, and in the default mode
relation candidates), the devkit's per-vertex topology sums, the F-score counts; across frames the APs and the
headline scores. ``compat="reference"`` reproduces the devkit 2.1.0 (rules in the fixture README), ``"default"``
applies the library's fixes:

* matching: a prediction takes the nearest *free* ground truth within the threshold (the devkit only looks at the
  nearest one and makes the prediction a false positive when that one is taken);
* tied confidences: tied rows form one operating point (the devkit's order among ties is its sort's, not defined);
* 11-point AP: recall compared with the grid exactly (``10 * TP >= k * GT``); the devkit compares a float32 recall
  with a float64 ``arange`` grid, which numpy 1.x casts to float32 (so 7/10 does reach 0.7 there, unlike what a
  float64 comparison would give); the exact rule differs from it only for very large GT counts;
* a class without ground truth has no AP (NaN, left out of means); the devkit gives 1 (nothing predicted) or 0;
* topology: one relation AP per relation type and lane threshold over every relation candidate of every frame
  (:func:`relation_rows`), which depends on the order of the relation confidences only and charges the relations
  of unmatched predictions; the devkit's per-vertex AP with its ``0.5`` threshold and ``0.5 + eps`` fill
  (:func:`topology_vertex_ap`) is the reference mode only. ``docs/pages/domains/lanetopology.md`` has the formula
  and the reasons.

Distances are computed for all frames of a batch at once: the discrete Frechet distance first (bounded, banded),
the Chamfer prefilter only where the Frechet distance does not already decide it. With ``device=None`` every step
runs on numpy arrays and torch is never imported (the ``openlanev2-eval`` command); with a device the lane distances
run on torch tensors there (the Metric classes). Both run the same kernels (written once for numpy and torch, see
:mod:`drivemetrics._internal.arrays`) and give the same numbers; matching, APs and F-score are numpy in both.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from drivemetrics._internal import arrays as xp
from drivemetrics._internal.compat import Compat, check_compat
from drivemetrics.lanetopology.frames import (
    AREA_CATEGORIES,
    TRACKS,
    TRAFFIC_ELEMENT_ATTRIBUTES,
    LaneFrame,
    Track,
    check_frames_finite,
    parse_frame,
)
from drivemetrics.polyline.average_precision import average_precision_11point, pooled_precision_recall
from drivemetrics.polyline.bounded_frechet import bounded_frechet_distance_pairs, norms
from drivemetrics.polyline.matching import greedy_match_index
from drivemetrics.polyline.pairs import drop_closing_point, paired_chamfer_means

Array = Any  # a numpy array, or a torch tensor when a device is given
Device = Any  # None (numpy, no torch), or a torch.device / its name

__all__ = [
    "AREA_THRESHOLDS",
    "DEVKIT_NAMES",
    "FSCORE_DIST_TH",
    "FSCORE_RATIO_TH",
    "LANE_THRESHOLDS",
    "NUM_AP_CHANNELS",
    "REJECTED_DISTANCE",
    "RELATION_THRESHOLD",
    "SCORE_KEYS",
    "TE_THRESHOLD",
    "UNMATCHED_RELATION",
    "area_distance_matrix",
    "batch_statistics",
    "check_track",
    "detection_average_precision",
    "devkit_name",
    "ego_relaxation",
    "frame_pairs",
    "frame_statistics",
    "fscore_batch_counts",
    "fscore_frame_counts",
    "iou_distance_matrices",
    "iou_distance_matrix",
    "kept_lane_samples",
    "lane_distance_matrices",
    "match_frames",
    "relation_average_precision",
    "relation_rows",
    "scores_from_statistics",
    "topology_vertex_ap",
    "topology_vertex_ap_batch",
]

#: Distance the devkit writes where the Chamfer prefilter rejects a pair (never matches).
REJECTED_DISTANCE = 1024.0
#: Relation confidences strictly above this are predicted edges.
RELATION_THRESHOLD = 0.5
_EPS32 = float(np.finfo(np.float32).eps)
#: What the devkit's relation matrix holds where a GT pair is not predicted (times ``1 - gt``).
UNMATCHED_RELATION = 0.5 + _EPS32


# ---------------------------------------------------------------------------------------------------------------
# distances
def _pad(lines: Sequence[np.ndarray], device: Device) -> tuple[Array, Array]:
    """Stack polylines of different lengths: ``(K, N_max, 3)`` float64 zero-padded, and their lengths ``(K,)``."""
    lengths = np.fromiter((len(x) for x in lines), dtype=np.int64, count=len(lines))
    n_max = int(lengths.max()) if len(lines) else 1
    out = np.zeros((len(lines), n_max, 3))
    if len(lines):
        out[
            np.repeat(np.arange(len(lines)), lengths),
            np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths),
        ] = np.concatenate(lines)
    return xp.on_device(out, device), xp.on_device(lengths, device)


def frame_pairs(rows: np.ndarray, cols: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every (row item, column item) pair of every frame as one flat list.

    Args:
        rows / cols: ``(F,)`` item counts per frame (items of all frames numbered consecutively).

    Returns:
        ``(row index (Q,), column index (Q,), pairs per frame (F,))``; frame ``f``'s pairs are row-major, GT rows.

    Examples:
        >>> [x.tolist() for x in frame_pairs(np.array([2, 1]), np.array([1, 2]))]
        [[0, 1, 2, 2], [0, 0, 1, 2], [2, 2]]
    """
    pairs = rows * cols
    frame = np.repeat(np.arange(len(rows)), pairs)
    local = np.arange(pairs.sum()) - np.repeat(np.cumsum(pairs) - pairs, pairs)
    row = np.repeat(np.cumsum(rows) - rows, pairs) + local // np.maximum(cols, 1)[frame]
    col = np.repeat(np.cumsum(cols) - cols, pairs) + local % np.maximum(cols, 1)[frame]
    return row, col, pairs


def _per_frame(flat: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> list[np.ndarray]:
    """Cut the flat pair values of :func:`frame_pairs` into one ``(rows[f], cols[f])`` matrix per frame."""
    parts = np.split(flat, np.cumsum(rows * cols)[:-1]) if len(rows) else []
    return [part.reshape(r, c) for part, r, c in zip(parts, rows, cols, strict=True)]


def _gt_chamfer(gt: Array, gt_len: Array, pred: Array, pred_len: Array) -> Array:
    """Paired symmetric Chamfer distances ``(K,)`` (the mean of both directions), GT ``(K, N, D)`` first, with
    the closing point of any closed GT line dropped (as the devkit does, also for 2-point lines)."""
    if gt.shape[0] == 0:
        return xp.full(0, 0.0, like=gt)
    gt_len = drop_closing_point(gt, gt_len, min_points=2)
    forward, backward = paired_chamfer_means(gt, gt_len, pred, pred_len)
    return (forward + backward) / 2


def ego_relaxation(lines: Sequence[np.ndarray]) -> np.ndarray:
    """The devkit's distance relaxation of each ground-truth lane: ``max(0.5, 1 - 0.005 * nearest point norm)``.

    Examples:
        >>> ego_relaxation([np.array([[30.0, 40.0, 0.0], [60.0, 80.0, 0.0]])])
        array([0.75])
    """
    if not len(lines):
        return np.ones(0)
    norms = np.linalg.norm(np.concatenate(lines), axis=1)  # every point of every lane at once
    starts = np.r_[0, np.cumsum([len(x) for x in lines])[:-1]]
    nearest = np.minimum.reduceat(norms, starts)
    return np.maximum(0.5, 1.0 - 5e-3 * nearest)


def lane_distance_matrices(
    gt_frames: Sequence[Sequence[np.ndarray]],
    pred_frames: Sequence[Sequence[np.ndarray]],
    gt_sides: Sequence[tuple[Sequence[np.ndarray], Sequence[np.ndarray]]] | None = None,
    pred_sides: Sequence[tuple[Sequence[np.ndarray], Sequence[np.ndarray]]] | None = None,
    prefilter: float = 3.0,
    device: Device = None,
    max_elements: int = 1 << 22,
    max_distance: float | None = None,
) -> list[np.ndarray]:
    """Relaxed lane distance matrices (GT rows x prediction columns) of many frames at once.

    Centerline track (``*_sides`` None): discrete Frechet distance; lane-segment track: ``0.5 * (Frechet of the
    centerlines + Chamfer of the left lanelines + Chamfer of the right lanelines)``. Both are multiplied by the GT
    lane's :func:`ego_relaxation`; pairs whose relaxed centerline Chamfer is not below ``prefilter`` get
    :data:`REJECTED_DISTANCE`.

    Args:
        gt_frames / pred_frames: per frame, the centerlines ``(N_i, 3)`` in metres.
        gt_sides / pred_sides: per frame, ``(left lanelines, right lanelines)`` (lane-segment track).
        prefilter: Chamfer prefilter bound, metres (the largest matching threshold).
        device: where the distances are computed: ``None`` with numpy (no torch), else with torch on that device.
        max_elements: point-pair distances held at once (pairs are processed in chunks of this size).
        max_distance: if given, pairs whose relaxed distance provably exceeds it get :data:`REJECTED_DISTANCE`
            (:func:`~drivemetrics.polyline.frechet.bounded_frechet_distance_pairs` drops them early). Matching
            with thresholds ``<= max_distance`` is unchanged (such a pair can never match, and it is never the
            nearest GT of a prediction that matches).

    Returns:
        One float64 array ``(G_f, P_f)`` per frame.

    Examples:
        >>> gt = [[np.array([[0.0, 0.0, 0.0], [10.0, 0.0, 0.0]])]]
        >>> pred = [[np.array([[0.0, 1.0, 0.0], [10.0, 1.0, 0.0]]), np.array([[10.0, 0.0, 0.0], [0.0, 0.0, 0.0]])]]
        >>> lane_distance_matrices(gt, pred)[0]
        array([[ 1., 10.]])
    """
    gt_all = [x for lanes in gt_frames for x in lanes]
    pred_all = [x for lanes in pred_frames for x in lanes]
    if len(gt_frames) != len(pred_frames):
        raise ValueError(f"{len(gt_frames)} GT frames and {len(pred_frames)} prediction frames: they must pair up")
    num_g = np.fromiter((len(x) for x in gt_frames), dtype=np.int64, count=len(gt_frames))
    num_p = np.fromiter((len(x) for x in pred_frames), dtype=np.int64, count=len(pred_frames))
    gi_np, pj_np, _ = frame_pairs(num_g, num_p)
    gi, pj = xp.on_device(gi_np, device), xp.on_device(pj_np, device)
    relax = xp.on_device(ego_relaxation(gt_all), device)
    values = xp.full(len(gi_np), REJECTED_DISTANCE, like=relax)
    if len(gi_np):
        g_pts, g_len = _pad(gt_all, device)
        p_pts, p_len = _pad(pred_all, device)
        if gt_sides is not None and pred_sides is not None:
            sides_g = [_pad([x for f in gt_sides for x in f[s]], device) for s in (0, 1)]
            sides_p = [_pad([x for f in pred_sides for x in f[s]], device) for s in (0, 1)]
        # A pair whose bounding boxes are already ``prefilter / relaxation`` apart cannot pass the Chamfer
        # prefilter (Chamfer >= the box gap): it is rejected without computing its point distances.
        g_lo, g_hi = _boxes(g_pts, g_len)
        p_lo, p_hi = _boxes(p_pts, p_len)
        gap = norms(xp.maximum(p_lo[pj] - g_hi[gi], g_lo[gi] - p_hi[pj]).clip(min=0))
        near = xp.flatnonzero(gap * relax[gi] < prefilter)
        # Frechet first: the Chamfer distance never exceeds it (every point's nearest distance is at most the
        # distance to the point a coupling pairs it with), so a pair whose relaxed Frechet is below the prefilter
        # passes it; the Chamfer prefilter is computed only for the other pairs that the bound keeps.
        chunk = max(1, max_elements // max(g_pts.shape[1], p_pts.shape[1]))
        for start in range(0, len(near), chunk):
            part = near[start : start + chunk]
            gk, pk = gi[part], pj[part]
            bound = None
            if max_distance is not None:  # raw Frechet bound of a relaxed distance that can still match
                bound = max_distance * (1 + 1e-9) / relax[gk] * (2.0 if gt_sides is not None else 1.0)
            frechet = bounded_frechet_distance_pairs(g_pts[gk], p_pts[pk], g_len[gk], p_len[pk], max_distance=bound)
            unsure = xp.flatnonzero((frechet < math.inf) & (frechet * relax[gk] >= prefilter))
            if len(unsure):
                cham = _gt_chamfer(g_pts[gk[unsure]], g_len[gk[unsure]], p_pts[pk[unsure]], p_len[pk[unsure]])
                failed = unsure[cham * relax[gk[unsure]] >= prefilter]
                frechet[failed] = math.inf
            kept = xp.flatnonzero(frechet < math.inf)
            gk, pk, dist = gk[kept], pk[kept], frechet[kept]
            if gt_sides is not None and pred_sides is not None:
                for (sg, sg_len), (sp, sp_len) in zip(sides_g, sides_p, strict=True):
                    dist = dist + _gt_chamfer(sg[gk], sg_len[gk], sp[pk], sp_len[pk])
                dist = 0.5 * dist
            values[part[kept]] = dist * relax[gk]
    return _per_frame(values if device is None else values.cpu().numpy(), num_g, num_p)


def _boxes(points: Array, lengths: Array) -> tuple[Array, Array]:
    """Axis-aligned bounding boxes ``(lo (K, D), hi (K, D))`` of padded polylines."""
    valid = (xp.arange(points.shape[1], like=lengths) < lengths[:, None])[:, :, None]
    lo = xp.amin(xp.where(valid, points, math.inf), 1)
    hi = xp.amax(xp.where(valid, points, -math.inf), 1)
    return lo, hi


def area_distance_matrix(gt: Sequence[np.ndarray], pred: Sequence[np.ndarray]) -> np.ndarray:
    """Chamfer distances (GT rows x prediction columns) between areas, metres, closed GT polygons opened.

    Examples:
        >>> area_distance_matrix([np.zeros((2, 3))], [np.ones((2, 3))]).round(4)
        array([[1.7321]])
    """
    if not len(gt) or not len(pred):
        return np.zeros((len(gt), len(pred)))
    gi, pj = np.meshgrid(np.arange(len(gt)), np.arange(len(pred)), indexing="ij")
    g_pts, g_len = _pad(gt, None)
    p_pts, p_len = _pad(pred, None)
    g, p = gi.reshape(-1), pj.reshape(-1)
    return _gt_chamfer(g_pts[g], g_len[g], p_pts[p], p_len[p]).reshape(len(gt), len(pred))


def iou_distance_matrix(gt_boxes: np.ndarray, pred_boxes: np.ndarray) -> np.ndarray:
    """``1 - IoU`` of axis-aligned boxes ``(G, 2, 2)`` x ``(P, 2, 2)`` (pixels, no +1), computed in float32.

    Examples:
        >>> iou_distance_matrix(np.array([[[0, 0], [2, 2]]]), np.array([[[1, 0], [3, 2]]]))
        array([[0.6666666]], dtype=float32)
    """
    g = np.asarray(gt_boxes, dtype=np.float32).reshape(-1, 2, 2)[:, None]
    p = np.asarray(pred_boxes, dtype=np.float32).reshape(-1, 2, 2)[None, :]
    return _iou_distance(g, p)


def iou_distance_matrices(gt_frames: Sequence[np.ndarray], pred_frames: Sequence[np.ndarray]) -> list[np.ndarray]:
    """:func:`iou_distance_matrix` of many frames at once (boxes ``(G_f, 2, 2)`` / ``(P_f, 2, 2)`` per frame).

    Examples:
        >>> gt = [np.zeros((2, 2, 2)), np.zeros((0, 2, 2))]
        >>> [m.shape for m in iou_distance_matrices(gt, [np.ones((3, 2, 2))] * 2)]
        [(2, 3), (0, 3)]
    """
    num_g = np.fromiter((len(x) for x in gt_frames), dtype=np.int64, count=len(gt_frames))
    num_p = np.fromiter((len(x) for x in pred_frames), dtype=np.int64, count=len(pred_frames))
    gi, pj, _ = frame_pairs(num_g, num_p)
    g_all = np.concatenate([np.zeros((0, 2, 2), dtype=np.float32), *[np.asarray(x, np.float32) for x in gt_frames]])
    p_all = np.concatenate([np.zeros((0, 2, 2), dtype=np.float32), *[np.asarray(x, np.float32) for x in pred_frames]])
    return _per_frame(_iou_distance(g_all[gi], p_all[pj]), num_g, num_p)


def _iou_distance(g: np.ndarray, p: np.ndarray) -> np.ndarray:
    """``1 - IoU`` of paired float32 boxes ``(..., 2, 2)`` (the float32 arithmetic of the devkit)."""
    width = np.maximum(np.minimum(p[..., 1, 0], g[..., 1, 0]) - np.maximum(p[..., 0, 0], g[..., 0, 0]), 0)
    height = np.maximum(np.minimum(p[..., 1, 1], g[..., 1, 1]) - np.maximum(p[..., 0, 1], g[..., 0, 1]), 0)
    inter = width * height
    area_p = (p[..., 1, 0] - p[..., 0, 0]) * (p[..., 1, 1] - p[..., 0, 1])
    area_g = (g[..., 1, 0] - g[..., 0, 0]) * (g[..., 1, 1] - g[..., 0, 1])
    union = area_p + area_g - inter
    with np.errstate(divide="ignore", invalid="ignore"):
        return (np.float32(1) - inter / union).astype(np.float32)


# ---------------------------------------------------------------------------------------------------------------
# matching and AP
def match_frames(
    distances: Sequence[np.ndarray],
    confidences: Sequence[np.ndarray],
    thresholds: Sequence[float],
    *,
    compat: Compat,
    gt_groups: Sequence[np.ndarray] | None = None,
    pred_groups: Sequence[np.ndarray] | None = None,
) -> list[np.ndarray]:
    """Greedy matching of the predictions of many frames and thresholds in decreasing confidence (one padded call
    of :func:`~drivemetrics.polyline.matching.greedy_match_index`).

    Args:
        distances: per frame ``(G_f, P_f)`` distances, GT rows (their dtype is kept: float32 IoU distances are
            compared with the thresholds in float32, as the devkit does).
        confidences: per frame ``(P_f,)``.
        thresholds: ``(T,)``; a pair matches when its distance is strictly below.
        compat: ``"reference"``: the devkit's rule (only the nearest GT, first on ties; a taken nearest GT makes a
            false positive); ``"default"``: the nearest GT still free within the threshold.
        gt_groups / pred_groups: per frame ``(G_f,)`` / ``(P_f,)`` group ids (attribute, category): items only
            match within their group, as if each group were matched on its own.

    Returns:
        Per frame ``(P_f, T)`` int64 GT index per prediction and threshold (-1: none).

    Examples:
        >>> d = np.array([[0.5, 0.6], [2.0, 0.9]])
        >>> match_frames([d], [np.array([0.9, 0.8])], [1.0], compat="reference")[0][:, 0].tolist()
        [0, -1]
        >>> match_frames([d], [np.array([0.9, 0.8])], [1.0], compat="default")[0][:, 0].tolist()
        [0, 1]
    """
    reference = check_compat(compat)
    num_frames = len(distances)
    g_max = max((d.shape[0] for d in distances), default=0)
    p_max = max((d.shape[1] for d in distances), default=0)
    dtype = np.result_type(*distances) if num_frames else np.float64
    padded = np.full((num_frames, p_max, g_max), np.inf, dtype=dtype)
    scores = np.zeros((num_frames, p_max))
    preds_valid = np.zeros((num_frames, p_max), dtype=bool)
    for f, d in enumerate(distances):
        g, p = d.shape
        padded[f, :p, :g] = d.T
        if gt_groups is not None and pred_groups is not None:
            same = pred_groups[f][:, None] == gt_groups[f][None, :]
            padded[f, :p, :g] = np.where(same, padded[f, :p, :g], np.inf)
        scores[f, :p] = confidences[f]
        preds_valid[f, :p] = True
    match = greedy_match_index(
        padded,
        scores,
        thresholds=np.asarray(list(thresholds), dtype=padded.dtype),
        preds_valid=preds_valid,
        inclusive=False,
        fallback=not reference,
    )
    return [match[f, : d.shape[1]] for f, d in enumerate(distances)]


def detection_average_precision(confidence: np.ndarray, tp: np.ndarray, num_gt: int, *, compat: Compat) -> float:
    """11-point interpolated AP of pooled detections.

    Args:
        confidence: ``(N,)`` confidences of all detections of all frames.
        tp: ``(N,)`` 1 for a true positive, 0 for a false positive.
        num_gt: number of ground-truth objects.
        compat: ``"reference"``: the devkit's arithmetic (float32 recall and precision; the float64 grid
            ``arange(0, 1, 0.1)`` compared in float32, as numpy 1.x value-based casting does; float32 sum;
            1.0 when there is neither ground truth nor detection, 0.0 when only detections); ``"default"``: exact
            recall levels, tied confidences as one operating point, NaN without ground truth.

    Examples:
        >>> detection_average_precision(np.array([0.9, 0.8]), np.array([1, 0]), 2, compat="reference")
        0.5454545...
    """
    reference = check_compat(compat)
    if num_gt == 0:
        if reference:
            return 1.0 if len(tp) == 0 else 0.0
        return float("nan")
    if len(tp) == 0:
        return 0.0
    if reference:
        precision_t, recall_t = pooled_precision_recall(
            np.ascontiguousarray(confidence, dtype=np.float64),
            np.asarray(tp, dtype=bool),
            num_gt,
            precision_dtype="float32",
            recall_dtype="float32",
        )
        # numpy 1.x compares a float32 array with a float64 scalar in float32 (value-based casting): so does the
        # devkit, and a recall of exactly 7/10 reaches the 0.7 point (a float64 comparison says it does not, which
        # changes DET_t on the lane-segment fixture by 4.5e-3); float32 sum in level order
        ap = average_precision_11point(precision_t, recall_t, dtype="float32", compare_dtype="float32")
        return float(ap)
    cum_tp, seen = _tie_group_counts(confidence, tp)
    precision = cum_tp / seen
    exact_sum = 0.0
    for k in range(11):
        reached = precision[10 * cum_tp >= k * num_gt]
        exact_sum += float(reached.max()) if reached.size else 0.0
    return exact_sum / 11


def _tie_group_counts(confidence: np.ndarray, tp: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Operating points of pooled rows, one per group of tied confidences in decreasing order: ``(true positives
    (K,), rows (K,))`` counted down to the end of each group (so the order among tied rows does not matter)."""
    order = np.argsort(-confidence, kind="stable")
    conf_sorted = confidence[order]
    last_of_tie = np.r_[conf_sorted[1:] != conf_sorted[:-1], True]
    cum_tp = np.cumsum(np.asarray(tp, dtype=np.float64)[order])[last_of_tie]
    seen = (np.arange(len(order)) + 1)[last_of_tie]
    return cum_tp, seen


def relation_average_precision(confidence: np.ndarray, tp: np.ndarray, num_gt: int) -> float:
    """The default mode's topology score: non-interpolated AP of pooled relation candidates.

    ``sum over operating points k of (TP_k - TP_{k-1}) * TP_k / N_k`` divided by ``num_gt``, an operating point
    being the end of a group of tied confidences (``TP_k`` / ``N_k`` true positives / candidates ranked at or
    above it). Only the order of ``confidence`` matters; a candidate added anywhere below the last true positive
    changes nothing, one added above a true positive lowers the value.

    Args:
        confidence: ``(N,)`` relation confidences of every candidate of every frame.
        tp: ``(N,)`` true-positive flags (see :func:`relation_rows`).
        num_gt: ground-truth relations of every frame (missed ones included).

    Returns:
        The AP in [0, 1]; NaN without any ground-truth relation.

    Examples:
        >>> relation_average_precision(np.array([0.9, 0.8, 0.7]), np.array([1, 0, 1]), 3)  # (1 + 2/3) / 3
        0.5555...
        >>> relation_average_precision(np.array([0.6, 0.6]), np.array([1, 0]), 1)  # a tie: one operating point
        0.5
    """
    if num_gt == 0:
        return float("nan")
    if len(tp) == 0:
        return 0.0
    cum_tp, seen = _tie_group_counts(confidence, tp)
    found = np.diff(cum_tp, prepend=0.0)
    return float((found * cum_tp / seen).sum() / num_gt)


# ---------------------------------------------------------------------------------------------------------------
# topology
def relation_rows(
    gt: Sequence[np.ndarray],
    pred: Sequence[np.ndarray],
    row_match: Sequence[np.ndarray],
    col_match: Sequence[np.ndarray],
) -> tuple[np.ndarray, np.ndarray, int]:
    """Every predicted relation of many frames as a candidate of the default topology AP.

    A candidate is an entry ``(i, j)`` of a frame's predicted relation matrix, with its confidence. At a lane
    threshold it is a true positive when prediction ``i`` and prediction ``j`` are both matched and their matched
    ground-truth items are related (matching is one-to-one, so a GT relation is claimed by at most one candidate);
    it is a false positive otherwise, in particular whenever ``i`` or ``j`` matches nothing. GT relations of an
    unmatched GT item are never found: they stay in ``num_gt`` as misses. No threshold on the confidences and no
    fill: every entry of every frame is ranked.

    Args:
        gt: per frame ``(R_f, C_f)`` 0/1 ground-truth relations.
        pred: per frame ``(P_f, Q_f)`` predicted relation confidences.
        row_match / col_match: per frame ``(P_f, T)`` / ``(Q_f, T)`` matched GT index per threshold (-1: none).

    Returns:
        ``(confidence (M,), tp (M, T) bool, num_gt)`` for the ``M`` entries of all frames (frame by frame,
        row-major) and the number of GT relations of all frames.

    Examples:
        >>> gt = [np.array([[0, 1], [0, 0]])]
        >>> pred = [np.array([[0.1, 0.8, 0.9], [0.2, 0.1, 0.0], [0.3, 0.2, 0.1]])]  # lane 2 matches nothing
        >>> conf, tp, num_gt = relation_rows(gt, pred, [np.array([[0], [1], [-1]])], [np.array([[0], [1], [-1]])])
        >>> conf[tp[:, 0]].tolist(), int(tp.sum()), num_gt
        ([0.8], 1, 1)
    """
    num_t = row_match[0].shape[1] if len(row_match) else 0
    p_rows = np.fromiter((p.shape[0] for p in pred), dtype=np.int64, count=len(pred))
    p_cols = np.fromiter((p.shape[1] for p in pred), dtype=np.int64, count=len(pred))
    g_rows = np.fromiter((g.shape[0] for g in gt), dtype=np.int64, count=len(gt))
    g_cols = np.fromiter((g.shape[1] for g in gt), dtype=np.int64, count=len(gt))
    row, col, pairs = frame_pairs(p_rows, p_cols)
    frame = np.repeat(np.arange(len(pred)), pairs)
    confidence = np.concatenate([np.zeros(0), *[p.reshape(-1).astype(np.float64) for p in pred]])
    gt_flat = np.concatenate([np.zeros(0, dtype=bool), *[g.reshape(-1).astype(bool) for g in gt]])
    gt_start = np.cumsum(g_rows * g_cols) - g_rows * g_cols
    r_all = np.concatenate([np.zeros((0, num_t), dtype=np.int64), *row_match])[row]  # (M, T) local GT index
    c_all = np.concatenate([np.zeros((0, num_t), dtype=np.int64), *col_match])[col]
    both = (r_all >= 0) & (c_all >= 0)
    index = gt_start[frame][:, None] + np.maximum(r_all, 0) * g_cols[frame][:, None] + np.maximum(c_all, 0)
    tp = both & gt_flat[np.where(both, index, 0)] if gt_flat.size else np.zeros(both.shape, dtype=bool)
    return confidence, tp, int(gt_flat.sum())


def topology_vertex_ap(gt: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """The devkit's per-vertex AP of a relation matrix: one value per row then one per column, ``(R + C,)``.

    For a vertex, the predicted edges are entries ``> 0.5`` ranked by value (tied values in index order, the
    devkit's small-array sort); AP = sum of precision at each correct edge / number of GT edges; 1 with neither GT
    nor predicted edges, 0 with only one of them. An edge ranked below the vertex's last correct edge costs
    nothing, which is why the reference mode can be raised by re-scaling confidences (see the domain page).

    Args:
        gt: ``(R, C)`` 0/1 ground-truth relations.
        scores: ``(R, C)`` relation confidences.

    Examples:
        >>> topology_vertex_ap(np.array([[0, 1], [0, 0]]), np.array([[0.9, 0.8], [0.1, 0.2]]))
        array([0.5, 1. , 0. , 1. ])
    """
    by_row, by_col = topology_vertex_ap_batch(gt[None], scores[None])
    return np.concatenate([by_row[0], by_col[0]])


def topology_vertex_ap_batch(gt: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`topology_vertex_ap` of a batch of zero-padded matrices ``(N, R, C)``: ``(rows (N, R), cols (N, C))``.

    Padding rows / columns (GT 0, score 0) add nothing to the other vertices; their own values are meaningless
    and must be masked by the caller.
    """
    num, rows, cols = gt.shape
    by_row = _vertex_ap_rows(gt.reshape(num * rows, cols), scores.reshape(num * rows, cols))
    gt_t, scores_t = gt.transpose(0, 2, 1), scores.transpose(0, 2, 1)
    by_col = _vertex_ap_rows(gt_t.reshape(num * cols, rows), scores_t.reshape(num * cols, rows))
    return by_row.reshape(num, rows), by_col.reshape(num, cols)


def _vertex_ap_rows(gt: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """Per-row vertex AP of ``(R, C)`` matrices (see :func:`topology_vertex_ap`)."""
    rows, cols = gt.shape
    if rows == 0:
        return np.zeros(0)
    if cols == 0:
        return np.ones(rows)
    predicted = scores > RELATION_THRESHOLD
    key = np.where(predicted, -scores, np.inf)
    order = np.argsort(key, axis=1, kind="stable")
    hit = np.take_along_axis(gt.astype(bool) & predicted, order, 1)
    precision = np.cumsum(hit, axis=1) / np.arange(1, cols + 1)
    num_gt = gt.astype(bool).sum(1)
    num_pred = predicted.sum(1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ap = (precision * hit).sum(1) / num_gt
    ap = np.where((num_gt == 0) | (num_pred == 0), 0.0, ap)
    return np.where((num_gt == 0) & (num_pred == 0), 1.0, ap)


# ---------------------------------------------------------------------------------------------------------------
# F-score (OpenLane v1's 3D-lane evaluator)
_X_SAMPLES = np.linspace(-50, 50, num=100, endpoint=False)
#: F-score: a sample pair matches below this distance (metres); a lane pair matches if its cost is below 100 x it.
FSCORE_DIST_TH = 1.5
#: F-score: a matched lane counts if this share of its visible samples match.
FSCORE_RATIO_TH = 0.75


def kept_lane_samples(lanes: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The F-score samples of the lanes the devkit keeps only: ``(y (Q, 100), z (Q, 100), visible (Q, 100),
    index (Q,))``, ``index`` the kept lanes' positions in ``lanes`` (increasing)."""
    empty = np.zeros((0, 100))
    if not len(lanes):
        return empty, empty, empty.astype(bool), np.zeros(0, dtype=np.int64)
    lengths = np.fromiter((len(x) for x in lanes), dtype=np.int64, count=len(lanes))
    flat = np.concatenate(lanes)
    starts = np.cumsum(lengths) - lengths
    first_ok = (lengths > 1) & (flat[starts, 0] < _X_SAMPLES[-1]) & (flat[starts + lengths - 1, 0] > _X_SAMPLES[0])
    index = np.flatnonzero(first_ok)
    columns = tuple(np.ascontiguousarray(flat[:, c]) for c in range(3))
    parts = [
        _sample_lanes(columns, starts[part], lengths[part])  # chunks that stay in the cache
        for part in np.array_split(index, max(1, len(index) // 2048))
        if part.size
    ]
    if not parts:
        return empty, empty, empty.astype(bool), np.zeros(0, dtype=np.int64)
    y, z, visible = (np.concatenate([p[k] for p in parts]) if len(parts) > 1 else parts[0][k] for k in range(3))
    seen = visible.sum(1) > 1
    if seen.all():
        return y, z, visible, index
    return y[seen], z[seen], visible[seen], index[seen]


def _sample_lanes(
    columns: tuple[np.ndarray, ...], starts: np.ndarray, lengths: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Samples ``y (K, 100)``, ``z (K, 100)`` and visibility ``(K, 100)`` of the lanes whose points are rows
    ``starts[k] .. starts[k] + lengths[k] - 1`` of ``columns`` (x, y, z of the points of all lanes, each ``(N,)``,
    contiguous); no filtering."""
    num, n_max = len(lengths), int(lengths.max())
    # edge padding (the last point repeated): a lane whose x never decreases stays sorted, and a stable sort of it
    # is the identity, so only the other lanes are sorted
    index = np.minimum(np.arange(n_max)[None], lengths[:, None] - 1) + starts[:, None]
    x = columns[0].take(index)
    unsorted = np.flatnonzero((np.diff(x, axis=1) < 0).any(1))
    if unsorted.size:
        inside = np.arange(n_max)[None] < lengths[unsorted, None]
        order = np.argsort(np.where(inside, x[unsorted], np.inf), axis=1, kind="stable")  # padding sorts last
        last_sorted = np.take_along_axis(order, lengths[unsorted, None] - 1, 1)  # padding: the largest x again
        index[unsorted] = np.take_along_axis(index[unsorted], np.where(inside, order, last_sorted), 1)
        x[unsorted] = columns[0].take(index[unsorted])
    # searchsorted(x, sample, "left") per lane, all lanes at once
    samples_x = np.broadcast_to(_X_SAMPLES, (num, len(_X_SAMPLES)))
    idx = xp.searchsorted_rows(x, samples_x)
    idx = np.clip(idx, 1, lengths[:, None] - 1)
    point_hi = np.take_along_axis(index, idx, 1)  # rows of ``flat`` of each sample's segment ends
    point_lo = point_hi - 1 if not unsorted.size else np.take_along_axis(index, idx - 1, 1)
    x_lo = columns[0].take(point_lo)
    run = columns[0].take(point_hi) - x_lo
    offset = _X_SAMPLES[None] - x_lo
    planes = []
    with np.errstate(divide="ignore", invalid="ignore"):
        for c in (1, 2):  # contiguous planes, one pass per operation
            lo = columns[c].take(point_lo)
            plane = columns[c].take(point_hi)
            plane -= lo
            plane /= run
            plane *= offset
            plane += lo
            planes.append(plane)
    y, z = planes
    x_min = x[:, 0]
    x_max = x[np.arange(num), lengths - 1]
    visible = (_X_SAMPLES[None] >= x_min[:, None]) & (_X_SAMPLES[None] <= x_max[:, None])
    return y, z, visible


def fscore_frame_counts(
    gt: tuple[np.ndarray, np.ndarray, np.ndarray],
    pred: tuple[np.ndarray, np.ndarray, np.ndarray],
    gt_count: np.ndarray,
    pred_count: np.ndarray,
) -> np.ndarray:
    """The F-score counts ``[r_lane, p_lane, cnt_gt, cnt_pred, match_num]`` summed over many frames.

    Args:
        gt / pred: the kept lanes' samples ``(y (K, 100), z (K, 100), visible (K, 100))``, metres, frame by frame.
        gt_count / pred_count: ``(F,)`` kept lanes per frame.

    Every GT x prediction pair of every frame is costed as one flat list (:func:`_fscore_pair_costs`), then one
    min-cost assignment per frame (:func:`_min_cost_assignments`); a matched pair counts if its cost is below
    ``100 x 1.5``, for recall / precision if ``0.75`` of the GT's / prediction's visible samples match.

    Examples:
        >>> y = np.zeros((1, 100)); visible = np.arange(100)[None] < 40
        >>> fscore_frame_counts((y, y, visible), (y + 0.5, y, visible), np.array([1]), np.array([1])).tolist()
        [1.0, 1.0, 1.0, 1.0, 1.0]
    """
    out = np.zeros(5)
    out[2], out[3] = gt_count.sum(), pred_count.sum()
    if not (gt_count * pred_count).sum():
        return out
    gi, pj, _ = frame_pairs(gt_count, pred_count)
    cost, matched = _fscore_pair_costs(gt, pred, gi, pj)
    cost_int = np.where((cost > 0) & (cost < 1), 1, np.trunc(cost)).astype(np.int64)
    pick = _min_cost_assignments(cost_int, gt_count, pred_count)
    pick = pick[cost_int[pick] < FSCORE_DIST_TH * 100]
    out[4] = len(pick)
    out[0] = (matched[pick] / gt[2].sum(1)[gi[pick]] >= FSCORE_RATIO_TH).sum()
    out[1] = (matched[pick] / pred[2].sum(1)[pj[pick]] >= FSCORE_RATIO_TH).sum()
    return out


def _min_cost_assignments(cost: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """Flat indices (into ``cost``, the frames' row-major ``(rows[f], cols[f])`` blocks) of a min-cost one-to-one
    assignment of every frame, ``min(rows, cols)`` pairs each.

    Where every row of a frame (every column, if it has more rows than columns) has a strict minimum and these
    minima lie in distinct columns (rows), taking them is the one optimal assignment, so it is what any solver
    returns; the other frames go to :func:`scipy.optimize.linear_sum_assignment` one by one (scipy is imported only
    for them: its import costs more than the whole F-score of a small split).
    """
    pairs = rows * cols
    starts = np.cumsum(pairs) - pairs
    frames = np.flatnonzero(pairs)
    wide = np.zeros(len(rows), dtype=bool)
    wide[frames] = rows[frames] <= cols[frames]  # rows pick their minimum; else columns do
    big = np.iinfo(np.int64).max
    if not frames.size:
        return np.zeros(0, dtype=np.int64)
    padded = np.full((len(rows), int(rows.max()), int(cols.max())), big, dtype=np.int64)
    frame = np.repeat(np.arange(len(rows)), pairs)
    local = np.arange(pairs.sum()) - starts[frame]
    padded[frame, local // cols[frame], local % cols[frame]] = cost
    chosen = []
    for transpose, sel in ((False, frames[wide[frames]]), (True, frames[~wide[frames]])):
        if not sel.size:
            continue
        block = padded[sel].transpose(0, 2, 1) if transpose else padded[sel]
        lines = (cols if transpose else rows)[sel]
        valid = np.arange(block.shape[1])[None] < lines[:, None]
        best = block.argmin(2)
        two = (
            np.partition(block, 1, axis=2)[..., :2]
            if block.shape[2] > 1
            else np.concatenate([block, np.full_like(block, big)], axis=2)
        )
        strict = (two[..., 0] < two[..., 1]) | ~valid
        taken = np.sort(np.where(valid, best, -1 - np.arange(block.shape[1])[None]), axis=1)
        distinct = (taken[:, 1:] != taken[:, :-1]).all(1)
        easy = strict.all(1) & distinct
        f_easy = sel[easy]
        r, line = np.nonzero(valid[easy])
        other = best[easy][r, line]
        row, col = (other, line) if transpose else (line, other)
        chosen.append(starts[f_easy[r]] + row * cols[f_easy[r]] + col)
        for f in sel[~easy]:
            from scipy.optimize import linear_sum_assignment

            r_idx, c_idx = linear_sum_assignment(cost[starts[f] : starts[f] + pairs[f]].reshape(rows[f], cols[f]))
            chosen.append(starts[f] + r_idx * cols[f] + c_idx)
    return np.concatenate(chosen) if chosen else np.zeros(0, dtype=np.int64)


def _fscore_pair_costs(
    gt: tuple[np.ndarray, np.ndarray, np.ndarray],
    pred: tuple[np.ndarray, np.ndarray, np.ndarray],
    gi: np.ndarray,
    pj: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """``(cost (Q,), matched points (Q,))`` of the lane pairs ``(gi[q], pj[q])`` (``(y, z, visible)`` samples of the
    GT and predicted lanes, each ``(K, 100)``).

    Visibility is one run of samples per lane, so a pair whose runs do not overlap has the cost
    ``1.5 x (visible samples of both)`` (a sum of halves: exact in any order) and no matched point; the others get
    the per-sample distances summed over the 100 samples as the devkit sums them.
    """
    gy, gz, gv = gt
    py, pz, pv = pred
    last = gv.shape[1] - 1  # first and last visible sample of each lane (kept lanes see at least two)
    g_lo, g_hi = gv.argmax(1), last - gv[:, ::-1].argmax(1)
    p_lo, p_hi = pv.argmax(1), last - pv[:, ::-1].argmax(1)
    cost = FSCORE_DIST_TH * (gv.sum(1)[gi] + pv.sum(1)[pj]).astype(np.float64)
    matched = np.zeros(len(gi), dtype=np.int64)
    overlap = np.flatnonzero(np.maximum(g_lo[gi], p_lo[pj]) <= np.minimum(g_hi[gi], p_hi[pj]))
    for part in np.array_split(overlap, max(1, len(overlap) // 2048)):  # small chunks: reused memory
        g, p = gi[part], pj[part]
        both = gv[g] & pv[p]
        neither = ~(gv[g] | pv[p])
        dist = gy[g]  # sqrt(dy ** 2 + dz ** 2) in place
        dist -= py[p]
        dist *= dist
        dz = gz[g]
        dz -= pz[p]
        dz *= dz
        dist += dz
        np.sqrt(dist, out=dist)
        dist = np.where(both, dist, np.where(neither, 0.0, FSCORE_DIST_TH))
        cost[part] = dist.sum(1)
        matched[part] = (dist < FSCORE_DIST_TH).sum(1) - neither.sum(1)
    return cost, matched


def fscore_batch_counts(gts: Sequence[LaneFrame], prs: Sequence[LaneFrame]) -> np.ndarray:
    """The F-score counts ``[r_lane, p_lane, cnt_gt, cnt_pred, match_num]`` summed over many frames
    (:func:`fscore_frame_counts`), the lanes of all frames sampled at once.

    Min-cost one-to-one assignment of the integer costs with :func:`scipy.optimize.linear_sum_assignment`; where
    several assignments are optimal, OR-Tools (the devkit) may pick another one.

    Examples:
        >>> from drivemetrics.lanetopology.frames import parse_frame
        >>> lane = np.stack([np.linspace(0, 40, 11), np.zeros(11), np.zeros(11)], 1).tolist()
        >>> gt = parse_frame({"lane_centerline": [{"points": lane}], "traffic_element": [],
        ...                   "topology_lclc": [[0]], "topology_lcte": [[]]}, track="centerline", is_pred=False)
        >>> fscore_batch_counts([gt], [gt]).tolist()
        [1.0, 1.0, 1.0, 1.0, 1.0]
    """
    gy, gz, gv, gk = kept_lane_samples([x for f in gts for x in f.lanes])
    py, pz, pv, pk = kept_lane_samples([x for f in prs for x in f.lanes])
    g_count = np.bincount(np.repeat(np.arange(len(gts)), [len(f.lanes) for f in gts])[gk], minlength=len(gts))
    p_count = np.bincount(np.repeat(np.arange(len(prs)), [len(f.lanes) for f in prs])[pk], minlength=len(prs))
    return fscore_frame_counts((gy, gz, gv), (py, pz, pv), g_count, p_count)


# ---------------------------------------------------------------------------------------------------------------
# statistics of a batch of frames, scores of pooled statistics
#: Lane matching thresholds (Frechet / combined distance), metres.
LANE_THRESHOLDS = (1.0, 2.0, 3.0)
#: Area matching thresholds (Chamfer), metres.
AREA_THRESHOLDS = (0.5, 1.0, 1.5)
#: Traffic-element matching threshold on ``1 - IoU``.
TE_THRESHOLD = 0.75

# AP channels: lanes per threshold, traffic elements per attribute, pooled elements, areas per category x
# threshold, then (default mode) relation candidates: lane-lane, lane-element; a relation row's ``tp`` holds the
# flags of the lane thresholds as bits (bit t: true positive at LANE_THRESHOLDS[t]), one row per candidate
_TE0 = len(LANE_THRESHOLDS)
_TE_POOLED = _TE0 + len(TRAFFIC_ELEMENT_ATTRIBUTES)
_AREA0 = _TE_POOLED + 1
_RELATION0 = _AREA0 + len(AREA_CATEGORIES) * len(AREA_THRESHOLDS)
#: Number of AP channels of :func:`batch_statistics` (``ap_num_gt`` has one count per channel).
NUM_AP_CHANNELS = _RELATION0 + 2

#: The result keys of each track (snake_case) by role.
SCORE_KEYS: dict[str, dict[str, str]] = {
    "centerline": {"lane": "det_l", "top_ll": "top_ll", "top_lt": "top_lt", "score": "ols"},
    "lanesegment": {"lane": "det_ls", "top_ll": "top_lsls", "top_lt": "top_lste", "score": "olus"},
}
#: The devkit's names of the result keys (the command's output and JSON); per-threshold keys keep their tail.
DEVKIT_NAMES = {
    "det_l": "DET_l",
    "det_ls": "DET_ls",
    "det_t": "DET_t",
    "det_a": "DET_a",
    "te_ap_pooled": "TE_AP_pooled",
    "top_ll": "TOP_ll",
    "top_lt": "TOP_lt",
    "top_lsls": "TOP_lsls",
    "top_lste": "TOP_lste",
    "ols": "OLS",
    "olus": "OLUS",
    "f_score": "F_score",
}


def devkit_name(key: str) -> str:
    """The devkit's name of a result key (``"top_ll@1.0"`` -> ``"TOP_ll@1.0"``), through :data:`DEVKIT_NAMES`.

    Examples:
        >>> devkit_name("ols"), devkit_name("det_a@road_boundary@1.0")
        ('OLS', 'DET_a@road_boundary@1.0')
    """
    head, sep, tail = key.partition("@")
    return DEVKIT_NAMES[head] + sep + tail


def check_track(track: object) -> Track:
    """Validate a track name (``"centerline"`` or ``"lanesegment"``).

    Examples:
        >>> check_track("lanesegment")
        'lanesegment'
    """
    if track not in TRACKS:
        raise ValueError(f"`track` must be one of {TRACKS}, got {track!r}")
    return track  # type: ignore[return-value]


def _frames(items: Sequence[Any], track: Track, is_pred: bool, name: str) -> list[LaneFrame]:
    if isinstance(items, (Mapping, LaneFrame)):
        items = [items]
    out = []
    for k, item in enumerate(items):
        if isinstance(item, LaneFrame):
            out.append(item)
        else:
            token = item.get("token", f"{name}[{k}]") if isinstance(item, Mapping) else f"{name}[{k}]"
            token = "/".join(map(str, token)) if isinstance(token, (tuple, list)) else str(token)
            out.append(parse_frame(item, track=track, is_pred=is_pred, token=token, check_finite=False))
    check_frames_finite(out, track)  # one check for all frames' points
    return out


def frame_statistics(
    preds: Sequence[Any],
    target: Sequence[Any],
    track: Track = "centerline",
    compat: Compat = "default",
    device: Device = None,
) -> dict[str, np.ndarray]:
    """Read a batch of frames and compute everything the scores need
    (:func:`~drivemetrics.lanetopology.scoring.batch_statistics`, whose keys it returns).

    Args:
        preds: per frame the devkit's prediction dict (or a :class:`LaneFrame`).
        target: per frame the devkit's annotation dict (or a :class:`LaneFrame`), same order.
        track: ``"centerline"`` or ``"lanesegment"``.
        compat: ``"reference"`` for the devkit 2.1.0 rules, ``"default"`` for the fixed ones.
        device: where the lane distance matrices are computed (``None``: numpy, no torch; else torch there).

    Examples:
        >>> gt = {"lane_centerline": [{"points": [[0, 0, 0], [10, 0, 0]]}], "traffic_element": [],
        ...       "topology_lclc": [[0]], "topology_lcte": []}
        >>> pred = {"lane_centerline": [{"points": [[0, 0.5, 0], [10, 0.5, 0]], "confidence": 0.9}],
        ...         "traffic_element": [], "topology_lclc": [[0.0]], "topology_lcte": []}
        >>> frame_statistics([pred], [gt])["ap_rows"][:3].tolist()
        [[0.0, 0.9, 1.0], [1.0, 0.9, 1.0], [2.0, 0.9, 1.0]]
    """
    track = check_track(track)
    check_compat(compat)
    gts = _frames(target, track, False, "target")
    prs = _frames(preds, track, True, "preds")
    return batch_statistics(gts, prs, track, compat=compat, device=device)


def batch_statistics(
    gts: Sequence[LaneFrame],
    prs: Sequence[LaneFrame],
    track: Track = "centerline",
    *,
    compat: Compat = "default",
    device: Device = None,
) -> dict[str, np.ndarray]:
    """Everything the scores need from a batch of parsed frames (distances for the whole batch at once).

    Args:
        gts / prs: per frame the ground truth and the prediction, same order.
        track: ``"centerline"`` or ``"lanesegment"``.
        compat: ``"reference"`` for the devkit 2.1.0 rules, ``"default"`` for the fixed ones.
        device: where the lane distance matrices are computed (``None``: numpy, no torch; else torch there).

    Returns:
        ``ap_rows`` ``(N, 3)`` float64 ``[channel, confidence, tp]`` (default mode: one row per relation
        candidate too, in the last 2 channels, ``tp`` the lane thresholds' flags as bits); ``ap_num_gt``
        ``(NUM_AP_CHANNELS,)``; ``topology`` ``(2, 2, 3)`` float64
        ``[lane-lane | lane-element][sum | count][lane threshold]`` of the devkit's per-vertex AP (reference mode;
        zeros in the default mode); ``fscore`` ``(5,)`` ``[r_lane, p_lane, cnt_gt, cnt_pred, match_num]`` (zeros
        on the lane-segment track).

    Examples:
        >>> from drivemetrics.lanetopology.frames import parse_frame
        >>> gt = parse_frame({"lane_centerline": [{"points": [[0, 0, 0], [10, 0, 0]]}], "traffic_element": [],
        ...                   "topology_lclc": [[0]], "topology_lcte": [[]]}, track="centerline", is_pred=False)
        >>> pred = parse_frame({"lane_centerline": [{"points": [[0, 0.5, 0], [10, 0.5, 0]], "confidence": 0.9}],
        ...                     "traffic_element": [], "topology_lclc": [[0.0]], "topology_lcte": [[]]},
        ...                     track="centerline", is_pred=True)
        >>> batch_statistics([gt], [pred], compat="reference")["ap_rows"][:3].tolist()
        [[0.0, 0.9, 1.0], [1.0, 0.9, 1.0], [2.0, 0.9, 1.0]]
    """
    track = check_track(track)
    reference = check_compat(compat)
    if len(gts) != len(prs):
        raise ValueError(f"`preds` has {len(prs)} frames and `target` {len(gts)}; they must pair up")
    sides = track == "lanesegment"
    lane_d = lane_distance_matrices(
        [g.lanes for g in gts],
        [p.lanes for p in prs],
        [(g.lefts, g.rights) for g in gts] if sides else None,
        [(p.lefts, p.rights) for p in prs] if sides else None,
        prefilter=LANE_THRESHOLDS[-1],
        device=device,
        max_distance=LANE_THRESHOLDS[-1],
    )
    num_gt = np.zeros(NUM_AP_CHANNELS)
    empty = np.zeros(0)
    lane_conf = [p.lane_confidence if p.lane_confidence is not None else empty for p in prs]
    te_conf = [p.te_confidence if p.te_confidence is not None else empty for p in prs]
    # greedy matching of all frames at once: lanes at every threshold, traffic elements within their attribute
    # (as if each attribute were matched on its own) and pooled
    lane_match = match_frames(lane_d, lane_conf, LANE_THRESHOLDS, compat=compat)
    te_d = iou_distance_matrices([g.te_boxes for g in gts], [p.te_boxes for p in prs])
    te_attr_match = match_frames(
        te_d,
        te_conf,
        [TE_THRESHOLD],
        compat=compat,
        gt_groups=[g.te_attribute for g in gts],
        pred_groups=[p.te_attribute for p in prs],
    )
    te_match = match_frames(te_d, te_conf, [TE_THRESHOLD], compat=compat)
    # AP rows, channel by channel, frames in order (the order of tied confidences matters in reference mode)
    rows: list[np.ndarray] = []

    def add(channel: np.ndarray | int, confidence: np.ndarray, tp: np.ndarray) -> None:
        channel_col = np.broadcast_to(np.asarray(channel, dtype=np.float64), confidence.shape)
        rows.append(np.stack([channel_col, confidence, tp], 1))

    all_lane_conf = np.concatenate([empty, *lane_conf])
    all_lane_match = np.concatenate([np.zeros((0, len(LANE_THRESHOLDS)), dtype=np.int64), *lane_match])
    num_gt[:_TE0] = sum(len(g.lanes) for g in gts)
    for t in range(len(LANE_THRESHOLDS)):
        add(t, all_lane_conf, all_lane_match[:, t] >= 0)
    all_te_conf = np.concatenate([empty, *te_conf])
    pred_attr = np.concatenate([np.zeros(0, dtype=np.int64), *[p.te_attribute for p in prs]])
    gt_attr = np.concatenate([np.zeros(0, dtype=np.int64), *[g.te_attribute for g in gts]])
    num_gt[_TE0:_TE_POOLED] += np.bincount(gt_attr, minlength=len(TRAFFIC_ELEMENT_ATTRIBUTES))
    attr_tp = np.concatenate([np.zeros(0, dtype=bool), *[m[:, 0] >= 0 for m in te_attr_match]])
    order = np.argsort(pred_attr, kind="stable")  # channel by channel, frames and predictions in order
    add(_TE0 + pred_attr[order], all_te_conf[order], attr_tp[order])
    add(_TE_POOLED, all_te_conf, np.concatenate([np.zeros(0, dtype=bool), *[m[:, 0] >= 0 for m in te_match]]))
    num_gt[_TE_POOLED] = len(gt_attr)
    if sides:
        rows += _area_rows(gts, prs, compat, num_gt)
    te_cols = [np.repeat(m, len(LANE_THRESHOLDS), axis=1) for m in te_match]
    relations = (
        ([g.topology_lanes for g in gts], [p.topology_lanes for p in prs], lane_match),
        ([g.topology_elements for g in gts], [p.topology_elements for p in prs], te_cols),
    )
    topology = np.zeros((2, 2, len(LANE_THRESHOLDS)))
    for k, (gt_rel, pred_rel, col_match) in enumerate(relations):
        if reference:
            topology[k] = _devkit_topology_sums(gt_rel, pred_rel, lane_match, col_match)
            continue
        confidence, tp, count = relation_rows(gt_rel, pred_rel, lane_match, col_match)
        add(_RELATION0 + k, confidence, tp @ (1 << np.arange(tp.shape[1])))  # (0, 0) without frames
        num_gt[_RELATION0 + k] = count
    fscore = fscore_batch_counts(gts, prs) if not sides else np.zeros(5)
    ap_rows = np.concatenate(rows) if rows else np.zeros((0, 3))
    return {"ap_rows": ap_rows, "ap_num_gt": num_gt, "topology": topology, "fscore": fscore}


def _area_rows(
    gts: Sequence[LaneFrame], prs: Sequence[LaneFrame], compat: Compat, num_gt: np.ndarray
) -> list[np.ndarray]:
    """AP rows of the area channels (category x threshold) of all frames; adds their GT counts to ``num_gt``."""
    empty = np.zeros(0)
    rows: list[np.ndarray] = []
    area_conf = [p.area_confidence if p.area_confidence is not None else empty for p in prs]
    area_d = [area_distance_matrix(g.areas, p.areas) for g, p in zip(gts, prs, strict=True)]
    area_match = match_frames(
        area_d,
        area_conf,
        AREA_THRESHOLDS,
        compat=compat,
        gt_groups=[g.area_category for g in gts],
        pred_groups=[p.area_category for p in prs],
    )
    all_area_conf = np.concatenate([empty, *area_conf])
    all_area_match = np.concatenate([np.zeros((0, len(AREA_THRESHOLDS)), dtype=np.int64), *area_match])
    pred_cat = np.concatenate([np.zeros(0, dtype=np.int64), *[p.area_category for p in prs]])
    gt_cat = np.concatenate([np.zeros(0, dtype=np.int64), *[g.area_category for g in gts]])
    for c, category in enumerate(AREA_CATEGORIES):
        sel = pred_cat == category
        for t in range(len(AREA_THRESHOLDS)):
            channel = _AREA0 + c * len(AREA_THRESHOLDS) + t
            tp = all_area_match[sel, t] >= 0
            rows.append(np.stack([np.full(len(tp), channel, dtype=np.float64), all_area_conf[sel], tp], 1))
            num_gt[channel] = int((gt_cat == category).sum())
    return rows


def _pad_stack(arrays: Sequence[np.ndarray], shape: tuple[int, ...], fill: float = 0.0) -> np.ndarray:
    """Stack arrays of different sizes into ``(N, *shape)``, padded with ``fill``."""
    out = np.full((len(arrays), *shape), fill, dtype=np.result_type(*arrays) if arrays else np.float64)
    for k, a in enumerate(arrays):
        out[(k, *[slice(0, n) for n in a.shape])] = a
    return out


def _devkit_topology_sums(
    gt: Sequence[np.ndarray],
    pred: Sequence[np.ndarray],
    row_match: Sequence[np.ndarray],
    col_match: Sequence[np.ndarray],
) -> np.ndarray:
    """The reference mode's ``(2, T)`` [sum | count] of per-vertex APs per lane threshold, all frames and thresholds
    as one batch.

    The devkit's relation matrix of a frame (GT-sized): matched GT pairs take the prediction's confidence between
    their predictions, all other entries ``(1 - gt) * (0.5 + float32 eps)``; frames whose GT matrix is empty are
    left out. Built for every frame and threshold at once from the match index arrays ``(P_f, T)``.
    """
    num_t = len(LANE_THRESHOLDS)
    out = np.zeros((2, num_t))
    keep = [k for k, g in enumerate(gt) if 0 not in g.shape]
    if not keep:
        return out
    gts = [gt[k].astype(np.float64) for k in keep]
    rows = max(g.shape[0] for g in gts)
    cols = max(g.shape[1] for g in gts)
    p_rows = max(1, max(pred[k].shape[0] for k in keep))
    p_cols = max(1, max(pred[k].shape[1] for k in keep))
    num = len(keep)
    gt_pad = _pad_stack(gts, (rows, cols))
    pred_pad = _pad_stack([pred[k].astype(np.float64) for k in keep], (p_rows, p_cols))
    rmatch = _pad_stack([row_match[k] for k in keep], (p_rows, num_t), fill=-1).astype(np.int64)
    cmatch = _pad_stack([col_match[k] for k in keep], (p_cols, num_t), fill=-1).astype(np.int64)
    row_ok = np.zeros((num, rows), dtype=bool)
    col_ok = np.zeros((num, cols), dtype=bool)
    for k, g in enumerate(gts):
        row_ok[k, : g.shape[0]] = True
        col_ok[k, : g.shape[1]] = True
    base = (1.0 - gt_pad) * UNMATCHED_RELATION * (row_ok[:, :, None] & col_ok[:, None, :])
    scores = np.repeat(base[:, None], num_t, axis=1)  # (N, T, R, C)
    f, i, j, t = np.nonzero((rmatch >= 0)[:, :, None, :] & (cmatch >= 0)[:, None, :, :])
    scores[f, t, rmatch[f, i, t], cmatch[f, j, t]] = pred_pad[f, i, j]
    gt_all = np.repeat(gt_pad[:, None], num_t, axis=1)
    shape = (num * num_t, rows, cols)
    by_row, by_col = topology_vertex_ap_batch(gt_all.reshape(shape), scores.reshape(shape))
    row_mask = np.repeat(row_ok[:, None], num_t, axis=1).reshape(num * num_t, -1)
    col_mask = np.repeat(col_ok[:, None], num_t, axis=1).reshape(num * num_t, -1)
    per_item = (np.where(row_mask, by_row, 0.0).sum(1) + np.where(col_mask, by_col, 0.0).sum(1)).reshape(num, num_t)
    count = (row_mask.sum(1) + col_mask.sum(1)).reshape(num, num_t)
    out[0] = per_item.sum(0)
    out[1] = count.sum(0)
    return out


def _mean(values: Sequence[float], compat: Compat) -> float:
    if compat == "reference":  # the devkit averages float32 APs in float32
        return float(np.asarray(values, dtype=np.float32).mean())
    arr = np.asarray(values, dtype=np.float64)
    arr = arr[~np.isnan(arr)]
    return float(arr.mean()) if arr.size else float("nan")


def scores_from_statistics(
    ap_rows: np.ndarray,
    ap_num_gt: np.ndarray,
    topology: np.ndarray,
    fscore: np.ndarray,
    track: Track = "centerline",
    *,
    compat: Compat = "default",
) -> dict[str, float]:
    """The headline and per-threshold scores from pooled :func:`batch_statistics` (arrays summed / concatenated).

    Topology: the devkit's mean per-vertex AP in the reference mode; in the default mode the
    :func:`relation_average_precision` of each lane threshold's pooled relation candidates, and their mean.

    Returns:
        snake_case headline keys (``det_l``, ``det_t``, ``top_ll``, ``top_lt``, ``ols``, ``f_score``; ``det_ls``,
        ``det_a``, ``det_t``, ``top_lsls``, ``top_lste``, ``olus``) and per-threshold keys ``"<key>@<threshold>"``
        (``det_t@<attribute>``, ``det_a@<category>@<threshold>``, ``te_ap_pooled@0.75``); :func:`devkit_name`
        gives the devkit's names.

    Examples:
        >>> stats = {"ap_rows": np.zeros((0, 3)), "ap_num_gt": np.zeros(NUM_AP_CHANNELS),
        ...          "topology": np.zeros((2, 2, 3)), "fscore": np.zeros(5)}
        >>> scores_from_statistics(**stats, compat="reference")["det_l"]
        1.0
    """
    track = check_track(track)
    reference = check_compat(compat)
    names = SCORE_KEYS[track]
    channel = ap_rows[:, 0].astype(np.int64) if len(ap_rows) else np.zeros(0, dtype=np.int64)

    def ap(c: int) -> float:
        sel = channel == c
        return detection_average_precision(ap_rows[sel, 1], ap_rows[sel, 2], round(float(ap_num_gt[c])), compat=compat)

    out: dict[str, float] = {}
    lane_aps = [ap(t) for t, _ in enumerate(LANE_THRESHOLDS)]
    for value, threshold in zip(lane_aps, LANE_THRESHOLDS, strict=True):
        out[f"{names['lane']}@{threshold}"] = value
    out[names["lane"]] = _mean(lane_aps, compat)
    te_aps = [ap(_TE0 + a) for a in range(len(TRAFFIC_ELEMENT_ATTRIBUTES))]
    for value, attribute in zip(te_aps, TRAFFIC_ELEMENT_ATTRIBUTES, strict=True):
        out[f"det_t@{attribute}"] = value
    out["det_t"] = _mean(te_aps, compat)
    out[f"te_ap_pooled@{TE_THRESHOLD}"] = ap(_TE_POOLED)
    if track == "lanesegment":
        area_aps = []
        for c, category in enumerate(AREA_CATEGORIES.values()):
            for t, threshold in enumerate(AREA_THRESHOLDS):
                value = ap(_AREA0 + c * len(AREA_THRESHOLDS) + t)
                out[f"det_a@{category}@{threshold}"] = value
                area_aps.append(value)
        out["det_a"] = _mean(area_aps, compat)
    for k, key in enumerate(("top_ll", "top_lt")):
        if reference:
            sums, counts = topology[k]
            for t, threshold in enumerate(LANE_THRESHOLDS):
                out[f"{names[key]}@{threshold}"] = float(sums[t] / counts[t]) if counts[t] else float("nan")
            total = counts.sum()
            out[names[key]] = float(sums.sum() / total) if total else 0.0
            continue
        sel = channel == _RELATION0 + k
        confidence, bits = ap_rows[sel, 1], ap_rows[sel, 2].astype(np.int64)
        values = []
        for t, threshold in enumerate(LANE_THRESHOLDS):
            tp = (bits >> t) & 1
            values.append(relation_average_precision(confidence, tp, round(float(ap_num_gt[_RELATION0 + k]))))
            out[f"{names[key]}@{threshold}"] = values[-1]
        out[names[key]] = float(np.mean(values))
    parts = [out[names["lane"]]]
    if track == "lanesegment":
        parts.append(out["det_a"])
    parts += [out["det_t"], math.sqrt(out[names["top_ll"]]), math.sqrt(out[names["top_lt"]])]
    out[names["score"]] = float(np.mean(parts))
    if track == "centerline":
        r_lane, p_lane, cnt_gt, cnt_pred, _ = fscore
        recall = r_lane / cnt_gt if cnt_gt else r_lane / (cnt_gt + 1e-6)
        precision = p_lane / cnt_pred if cnt_pred else p_lane / (cnt_pred + 1e-6)
        total = recall + precision
        out["f_score"] = 2 * recall * precision / (total if total else total + 1e-6)
    return out
