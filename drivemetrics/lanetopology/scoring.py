"""The OpenLane-V2 scoring steps, shared by the metric classes, the evaluator and the benchmark (no Metric here).

Per frame: distance matrices (ground truth in rows, predictions in columns), greedy matching by confidence, the
topology matrices of matched items and their per-vertex AP, the F-score counts. Across frames: 11-point AP of
pooled (confidence, true positive) rows. Every rule of the devkit 2.1.0 is described in the fixture README and in
``docs`` of :mod:`drivemetrics.lanetopology.openlanev2`; ``reference=True`` reproduces it, ``False`` applies the
library's fixes:

* matching: a prediction takes the nearest *free* ground truth within the threshold (the devkit only looks at the
  nearest one and makes the prediction a false positive when that one is taken);
* tied confidences: tied rows form one operating point (the devkit's order among ties is its sort's, not defined);
* 11-point AP: recall compared with the grid exactly (``10 * TP >= k * GT``); the devkit compares a float32 recall
  with a float64 ``arange`` grid, which numpy 1.x casts to float32 (so 7/10 does reach 0.7 there, unlike what a
  float64 comparison would give); the exact rule differs from it only for very large GT counts;
* a class without ground truth has no AP (NaN, left out of means); the devkit gives 1 (nothing predicted) or 0;
* topology: every predicted edge is charged. The devkit's per-vertex AP (sum of precision at each correct edge /
  number of GT edges) only looks at the ranking up to the vertex's last correct edge, so an edge predicted below
  it costs nothing (only a vertex without GT edge notices it), and the relations of a prediction that matches no
  ground truth are never looked at. Mapping every relation confidence above 0.5 (order kept) or adding
  low-confidence copies of predicted lanes with their relations therefore raised TOP without better topology
  (``benchmarks/openlanev2_topology_loophole.py``; reported as the devkit's issue #128 after its 2.1 fill fix). Default
  mode: (1) every edge the submission predicts (> 0.5) ranked below the vertex's last correct edge and its tie
  group counts as one more miss: AP = sum of precision at each correct edge / (GT edges + such edges);
  (2) the relations of an unmatched prediction with a matched one are edges of the matched vertex (GT 0), ranked
  with the others; the unmatched prediction is no vertex of the mean. The devkit's ``0.5 + eps`` fill for
  unmatched GT items is kept and not charged by (1). The score stays per vertex, in [0, 1], and equals the
  devkit's for a vertex without such edges (no predicted edge below its last correct one, no relation with an
  unmatched prediction above 0.5).

Distances are computed for all frames of a batch at once with :mod:`torch`: the discrete Frechet distance first
(bounded, banded), the Chamfer prefilter only where the Frechet distance does not already decide it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor

from drivemetrics.polyline.average_precision import average_precision_11point, pooled_precision_recall
from drivemetrics.polyline.chamfer import chamfer_distance
from drivemetrics.polyline.frechet import bounded_frechet_distance_pairs
from drivemetrics.polyline.matching import greedy_match_index
from drivemetrics.polyline.ragged import drop_closing_point

__all__ = [
    "REJECTED_DISTANCE",
    "RELATION_THRESHOLD",
    "UNMATCHED_RELATION",
    "average_precision_11",
    "ego_relaxation",
    "frame_pairs",
    "fscore_counts",
    "fscore_frame_counts",
    "greedy_match",
    "iou_distance_matrices",
    "iou_distance_matrix",
    "lane_distance_matrices",
    "match_frames",
    "topology_vertex_ap",
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
def _pad(lines: Sequence[np.ndarray], dtype: torch.dtype, device: torch.device) -> tuple[Tensor, Tensor]:
    """Stack polylines of different lengths: ``(K, N_max, 3)`` zero-padded, and their lengths ``(K,)``."""
    lengths = np.fromiter((len(x) for x in lines), dtype=np.int64, count=len(lines))
    n_max = int(lengths.max()) if len(lines) else 1
    out = np.zeros((len(lines), n_max, 3))
    if len(lines):
        out[
            np.repeat(np.arange(len(lines)), lengths),
            np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths),
        ] = np.concatenate(lines)
    return torch.from_numpy(out).to(device=device, dtype=dtype), torch.from_numpy(lengths).to(device)


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


def _gt_chamfer(gt: Tensor, gt_len: Tensor, pred: Tensor, pred_len: Tensor) -> Tensor:
    """Paired symmetric Chamfer distances ``(K,)`` (the shared core's ``"mean"``), GT ``(K, N, D)`` first, with
    the closing point of any closed GT line dropped (as the devkit does, also for 2-point lines)."""
    if gt.shape[0] == 0:
        return gt.new_zeros(0)
    gt_len = drop_closing_point(gt, gt_len, min_points=2)
    return chamfer_distance(gt, gt_len, pred, pred_len)


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
    device: torch.device | str = "cpu",
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
        device: where the distances are computed.
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
    device = torch.device(device)
    dtype = torch.float64
    gt_all = [x for lanes in gt_frames for x in lanes]
    pred_all = [x for lanes in pred_frames for x in lanes]
    if len(gt_frames) != len(pred_frames):
        raise ValueError(f"{len(gt_frames)} GT frames and {len(pred_frames)} prediction frames: they must pair up")
    num_g = np.fromiter((len(x) for x in gt_frames), dtype=np.int64, count=len(gt_frames))
    num_p = np.fromiter((len(x) for x in pred_frames), dtype=np.int64, count=len(pred_frames))
    gi_np, pj_np, _ = frame_pairs(num_g, num_p)
    gi, pj = torch.from_numpy(gi_np).to(device), torch.from_numpy(pj_np).to(device)
    relax = torch.from_numpy(ego_relaxation(gt_all)).to(device=device, dtype=dtype)
    values = torch.full((gi.shape[0],), REJECTED_DISTANCE, dtype=dtype, device=device)
    if gi.numel():
        g_pts, g_len = _pad(gt_all, dtype, device)
        p_pts, p_len = _pad(pred_all, dtype, device)
        if gt_sides is not None and pred_sides is not None:
            sides_g = [_pad([x for f in gt_sides for x in f[s]], dtype, device) for s in (0, 1)]
            sides_p = [_pad([x for f in pred_sides for x in f[s]], dtype, device) for s in (0, 1)]
        # A pair whose bounding boxes are already ``prefilter / relaxation`` apart cannot pass the Chamfer
        # prefilter (Chamfer >= the box gap): it is rejected without computing its point distances.
        g_lo, g_hi = _boxes(g_pts, g_len)
        p_lo, p_hi = _boxes(p_pts, p_len)
        gap = torch.linalg.vector_norm(
            torch.clamp(torch.maximum(p_lo[pj] - g_hi[gi], g_lo[gi] - p_hi[pj]), min=0), dim=-1
        )
        near = torch.nonzero(gap * relax[gi] < prefilter)[:, 0]
        # Frechet first: the Chamfer distance never exceeds it (every point's nearest distance is at most the
        # distance to the point a coupling pairs it with), so a pair whose relaxed Frechet is below the prefilter
        # passes it; the Chamfer prefilter is computed only for the other pairs that the bound keeps.
        chunk = max(1, max_elements // max(g_pts.shape[1], p_pts.shape[1]))
        for part in near.split(chunk):
            gk, pk = gi[part], pj[part]
            bound = None
            if max_distance is not None:  # raw Frechet bound of a relaxed distance that can still match
                bound = max_distance * (1 + 1e-9) / relax[gk] * (2.0 if gt_sides is not None else 1.0)
            frechet = bounded_frechet_distance_pairs(g_pts[gk], p_pts[pk], g_len[gk], p_len[pk], bound)
            unsure = torch.nonzero(torch.isfinite(frechet) & (frechet * relax[gk] >= prefilter))[:, 0]
            if unsure.numel():
                cham = _gt_chamfer(g_pts[gk[unsure]], g_len[gk[unsure]], p_pts[pk[unsure]], p_len[pk[unsure]])
                failed = unsure[cham * relax[gk[unsure]] >= prefilter]
                frechet[failed] = torch.inf
            kept = torch.nonzero(torch.isfinite(frechet))[:, 0]
            gk, pk, dist = gk[kept], pk[kept], frechet[kept]
            if gt_sides is not None and pred_sides is not None:
                for (sg, sg_len), (sp, sp_len) in zip(sides_g, sides_p, strict=True):
                    dist = dist + _gt_chamfer(sg[gk], sg_len[gk], sp[pk], sp_len[pk])
                dist = 0.5 * dist
            values[part[kept]] = dist * relax[gk]
    return _per_frame(values.cpu().numpy(), num_g, num_p)


def _boxes(points: Tensor, lengths: Tensor) -> tuple[Tensor, Tensor]:
    """Axis-aligned bounding boxes ``(lo (K, D), hi (K, D))`` of padded polylines."""
    valid = (torch.arange(points.shape[1], device=points.device) < lengths[:, None])[:, :, None]
    lo = torch.where(valid, points, torch.inf).amin(1)
    hi = torch.where(valid, points, -torch.inf).amax(1)
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
    g_pts, g_len = _pad(gt, torch.float64, torch.device("cpu"))
    p_pts, p_len = _pad(pred, torch.float64, torch.device("cpu"))
    g, p = torch.from_numpy(gi.reshape(-1)), torch.from_numpy(pj.reshape(-1))
    return _gt_chamfer(g_pts[g], g_len[g], p_pts[p], p_len[p]).numpy().reshape(len(gt), len(pred))


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
def greedy_match(distance: np.ndarray, confidence: np.ndarray, threshold: float, reference: bool) -> np.ndarray:
    """Match predictions to ground truth in decreasing confidence; returns the GT index per prediction (-1: none).

    Args:
        distance: ``(G, P)`` distances, GT rows.
        confidence: ``(P,)``.
        threshold: a pair matches when its distance is strictly below it.
        reference: devkit rule (only the nearest GT, first on ties; a taken nearest GT makes a false positive);
            otherwise the nearest GT still free within the threshold.

    Examples:
        >>> d = np.array([[0.5, 0.6], [2.0, 0.9]])
        >>> greedy_match(d, np.array([0.9, 0.8]), 1.0, reference=True).tolist()
        [0, -1]
        >>> greedy_match(d, np.array([0.9, 0.8]), 1.0, reference=False).tolist()
        [0, 1]
    """
    return match_frames([distance], [confidence], [threshold], reference)[0][:, 0]


def match_frames(
    distances: Sequence[np.ndarray],
    confidences: Sequence[np.ndarray],
    thresholds: Sequence[float],
    reference: bool,
    gt_groups: Sequence[np.ndarray] | None = None,
    pred_groups: Sequence[np.ndarray] | None = None,
) -> list[np.ndarray]:
    """:func:`greedy_match` of many frames and thresholds at once (one padded call of the shared core).

    Args:
        distances: per frame ``(G_f, P_f)`` distances, GT rows (their dtype is kept: float32 IoU distances are
            compared with the thresholds in float32, as the devkit does).
        confidences: per frame ``(P_f,)``.
        thresholds: ``(T,)``; a pair matches when its distance is strictly below.
        reference: see :func:`greedy_match`.
        gt_groups / pred_groups: per frame ``(G_f,)`` / ``(P_f,)`` group ids (attribute, category): items only
            match within their group, as if each group were matched on its own.

    Returns:
        Per frame ``(P_f, T)`` int64 GT index per prediction and threshold (-1: none).
    """
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
    dist_t = torch.from_numpy(padded)
    match = greedy_match_index(
        dist_t,
        torch.from_numpy(scores),
        torch.tensor(list(thresholds), dtype=dist_t.dtype),
        preds_valid=torch.from_numpy(preds_valid),
        inclusive=False,
        fallback=not reference,
    ).numpy()
    return [match[f, : d.shape[1]] for f, d in enumerate(distances)]


def average_precision_11(confidence: np.ndarray, tp: np.ndarray, num_gt: int, reference: bool) -> float:
    """11-point interpolated AP of pooled detections.

    Args:
        confidence: ``(N,)`` confidences of all detections of all frames.
        tp: ``(N,)`` 1 for a true positive, 0 for a false positive.
        num_gt: number of ground-truth objects.
        reference: the devkit's arithmetic (float32 recall and precision; the float64 grid ``arange(0, 1, 0.1)``
            compared in float32, as numpy 1.x value-based casting does; float32 sum;
            1.0 when there is neither ground truth nor detection, 0.0 when only detections); otherwise exact
            recall levels, tied confidences as one operating point, NaN without ground truth.

    Examples:
        >>> average_precision_11(np.array([0.9, 0.8]), np.array([1, 0]), 2, reference=True)
        0.5454545...
    """
    if num_gt == 0:
        if reference:
            return 1.0 if len(tp) == 0 else 0.0
        return float("nan")
    if len(tp) == 0:
        return 0.0
    order = np.argsort(-confidence, kind="stable")
    tp_sorted = tp[order]
    if reference:
        precision_t, recall_t = pooled_precision_recall(
            torch.from_numpy(np.ascontiguousarray(confidence, dtype=np.float64)),
            torch.from_numpy(np.asarray(tp, dtype=bool)),
            num_gt,
            precision_dtype=torch.float32,
            recall_dtype=torch.float32,
        )
        # numpy 1.x compares a float32 array with a float64 scalar in float32 (value-based casting): so does the
        # devkit, and a recall of exactly 7/10 reaches the 0.7 point (a float64 comparison says it does not, which
        # changes DET_t on the lane-segment fixture by 4.5e-3); float32 sum in level order
        ap = average_precision_11point(precision_t, recall_t, dtype=torch.float32, compare_dtype=torch.float32)
        return float(ap)
    conf_sorted = confidence[order]
    last_of_tie = np.r_[conf_sorted[1:] != conf_sorted[:-1], True]
    cum_tp = np.cumsum(tp_sorted)[last_of_tie]
    seen = (np.arange(len(tp_sorted)) + 1)[last_of_tie]
    precision = cum_tp / seen
    exact_sum = 0.0
    for k in range(11):
        reached = precision[10 * cum_tp >= k * num_gt]
        exact_sum += float(reached.max()) if reached.size else 0.0
    return exact_sum / 11


# ---------------------------------------------------------------------------------------------------------------
# topology
def topology_matrix(gt: np.ndarray, pred: np.ndarray, row_match: np.ndarray, col_match: np.ndarray) -> np.ndarray:
    """The GT-sized relation matrix the devkit scores: matched GT pairs take the prediction's confidence between
    their predictions; all other entries ``(1 - gt) * (0.5 + float32 eps)``.

    Args:
        gt: ``(R, C)`` 0/1 ground-truth relations.
        pred: ``(P_r, P_c)`` predicted relation confidences.
        row_match / col_match: GT index per predicted row / column item (-1: unmatched).

    Examples:
        >>> topology_matrix(np.array([[0, 1], [0, 0]]), np.array([[0.0, 0.9], [0.2, 0.0]]),
        ...                 np.array([0, -1]), np.array([0, -1]))
        array([[0.        , 0.        ],
               [0.50000012, 0.50000012]])
    """
    out = (1.0 - gt) * UNMATCHED_RELATION
    pr = np.flatnonzero(row_match >= 0)
    pc = np.flatnonzero(col_match >= 0)
    if len(pr) and len(pc):
        out[np.ix_(row_match[pr], col_match[pc])] = pred[np.ix_(pr, pc)]
    return out


def topology_vertex_ap(
    gt: np.ndarray, scores: np.ndarray, reference: bool, charged: np.ndarray | None = None
) -> np.ndarray:
    """Per-vertex AP of relation matrices: one value per row then one per column, ``(R + C,)``.

    For a vertex, the predicted edges are entries ``> 0.5`` ranked by value; AP = sum of precision at each correct
    edge / number of GT edges; 1 with neither GT nor predicted edges, 0 with only one of them.

    ``reference``: the devkit's AP, tied values ranked in index order (its small-array sort). Otherwise (the
    default mode) a tie is one operating point, and every *charged* predicted edge ranked below the vertex's last
    correct edge (after its tie group) counts as one more missed edge: AP = sum of precision at each correct edge
    / (number of GT edges + number of such edges). The devkit leaves them free, so that mapping every relation
    confidence above 0.5 (keeping their order) can only gain. The value equals the devkit's wherever no charged
    edge is ranked below the last correct one, and stays in [0, 1].

    Args:
        gt: ``(R, C)`` 0/1 ground-truth relations.
        scores: ``(R, C)`` relation confidences.
        reference: devkit rules (see above).
        charged: ``(R, C)`` bool, the entries that the submission predicted (default: all); entries that only
            stand in for an unmatched ground-truth item (the devkit's ``0.5 + eps`` fill) are not charged.

    Examples:
        >>> topology_vertex_ap(np.array([[0, 1], [0, 0]]), np.array([[0.9, 0.8], [0.1, 0.2]]), True)
        array([0.5, 1. , 0. , 1. ])
        >>> gt, scores = np.array([[1, 0, 0]]), np.array([[0.9, 0.7, 0.6]])
        >>> topology_vertex_ap(gt, scores, True)[0], topology_vertex_ap(gt, scores, False)[0].round(4)
        (np.float64(1.0), np.float64(0.3333))

    (default mode: one correct edge at rank 1, then two more predicted edges: ``1 / (1 + 2)``).
    """
    charged_t = None if charged is None else charged.T
    values = [_vertex_ap_rows(gt, scores, reference, charged), _vertex_ap_rows(gt.T, scores.T, reference, charged_t)]
    return np.concatenate(values)


def topology_vertex_ap_batch(
    gt: np.ndarray, scores: np.ndarray, reference: bool, charged: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`topology_vertex_ap` of a batch of zero-padded matrices ``(N, R, C)``: ``(rows (N, R), cols (N, C))``.

    Padding rows / columns (GT 0, score 0) add nothing to the other vertices; their own values are meaningless
    and must be masked by the caller. ``charged``: ``(N, R, C)`` or None, as in :func:`topology_vertex_ap`.
    """
    num, rows, cols = gt.shape
    by_row_charged = by_col_charged = None
    if charged is not None:
        by_row_charged = charged.reshape(num * rows, cols)
        by_col_charged = charged.transpose(0, 2, 1).reshape(num * cols, rows)
    by_row = _vertex_ap_rows(gt.reshape(num * rows, cols), scores.reshape(num * rows, cols), reference, by_row_charged)
    gt_t, scores_t = gt.transpose(0, 2, 1), scores.transpose(0, 2, 1)
    by_col = _vertex_ap_rows(
        gt_t.reshape(num * cols, rows), scores_t.reshape(num * cols, rows), reference, by_col_charged
    )
    return by_row.reshape(num, rows), by_col.reshape(num, cols)


def _vertex_ap_rows(
    gt: np.ndarray, scores: np.ndarray, reference: bool, charged: np.ndarray | None = None
) -> np.ndarray:
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
    cum_tp = np.cumsum(hit, axis=1)
    rank = np.arange(1, cols + 1)
    group_end = np.zeros(0, dtype=np.int64)
    if not reference:  # the precision of a tie group is the one at its end
        group_end = _last_index_of_runs(np.take_along_axis(key, order, 1))
        cum_tp_at = np.take_along_axis(cum_tp, group_end, 1)
        precision = cum_tp_at / (group_end + 1)
    else:
        precision = cum_tp / rank
    num_gt = gt.astype(bool).sum(1)
    num_pred = predicted.sum(1)
    misses = num_gt
    if not reference:  # every charged edge ranked below the last correct one counts as one more miss
        charged_sorted = np.take_along_axis(predicted & (True if charged is None else charged), order, 1)
        misses = num_gt + _charged_after_last_hit(hit, charged_sorted, group_end)
    with np.errstate(divide="ignore", invalid="ignore"):
        ap = (precision * hit).sum(1) / misses
    ap = np.where((num_gt == 0) | (num_pred == 0), 0.0, ap)
    return np.where((num_gt == 0) & (num_pred == 0), 1.0, ap)


def _charged_after_last_hit(hit: np.ndarray, charged: np.ndarray, group_end: np.ndarray) -> np.ndarray:
    """Per row (entries in rank order): how many charged entries are ranked below the tie group of the last hit,
    ``(R,)`` int; 0 where the row has no hit."""
    cols = hit.shape[1]
    last_hit = cols - 1 - np.argmax(hit[:, ::-1], axis=1)  # index of the last hit (meaningless without a hit)
    upto = np.take_along_axis(group_end, last_hit[:, None], 1)[:, 0]  # ... extended to the end of its tie group
    charged_upto = np.take_along_axis(np.cumsum(charged, axis=1), upto[:, None], 1)[:, 0]
    return np.where(hit.any(1), charged.sum(1) - charged_upto, 0)


def _last_index_of_runs(sorted_rows: np.ndarray) -> np.ndarray:
    """For each entry of each row, the index of the last entry equal to it (rows sorted)."""
    rows, cols = sorted_rows.shape
    boundary = np.ones((rows, cols), dtype=bool)
    boundary[:, :-1] = sorted_rows[:, 1:] != sorted_rows[:, :-1]
    idx = np.where(boundary, np.arange(cols), cols)
    return np.minimum.accumulate(idx[:, ::-1], axis=1)[:, ::-1]


# ---------------------------------------------------------------------------------------------------------------
# F-score (OpenLane v1's 3D-lane evaluator)
_X_SAMPLES = np.linspace(-50, 50, num=100, endpoint=False)
#: F-score: a sample pair matches below this distance (metres); a lane pair matches if its cost is below 100 x it.
FSCORE_DIST_TH = 1.5
#: F-score: a matched lane counts if this share of its visible samples match.
FSCORE_RATIO_TH = 0.75
_DIST_TH = FSCORE_DIST_TH
_RATIO_TH = FSCORE_RATIO_TH


def fscore_samples(lanes: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_fscore_lanes` for the lanes of many frames at once, before dropping lanes: ``(samples (K, 100, 2),
    visible (K, 100), kept (K,))`` for the ``K`` input lanes (``kept`` False for a lane the devkit drops)."""
    samples = np.zeros((len(lanes), 100, 2))
    visible = np.zeros((len(lanes), 100), dtype=bool)
    kept = np.zeros(len(lanes), dtype=bool)
    y, z, part_visible, index = kept_lane_samples(lanes)
    samples[index, :, 0], samples[index, :, 1], visible[index], kept[index] = y, z, part_visible, True
    return samples, visible, kept


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


def _fscore_lanes(lanes: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Kept lanes' ``(y, z)`` at the 100 x samples ``(K, 100, 2)`` and their visibility ``(K, 100)``.

    Linear interpolation over x with extrapolation, as ``scipy.interpolate.interp1d`` does it (points sorted by x
    with a stable sort; each sample uses the segment ``searchsorted(x, sample) - 1 .. + 0`` clipped to the ends),
    for all lanes at once. Lanes are kept if they have 2+ points, start before x = 49 and end after x = -50 (the
    first / last point, in driving order), and see more than one sample.
    """
    samples, visible, kept = fscore_samples(lanes)
    return samples[kept], visible[kept]


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
    idx = torch.searchsorted(torch.from_numpy(x), torch.from_numpy(samples_x.copy())).numpy()
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


def fscore_counts(gt_lanes: Sequence[np.ndarray], pred_lanes: Sequence[np.ndarray]) -> np.ndarray:
    """The F-score's per-frame counts ``[r_lane, p_lane, cnt_gt, cnt_pred, match_num]`` (OpenLane v1 rules).

    Min-cost one-to-one assignment of the integer costs with :func:`scipy.optimize.linear_sum_assignment`; where
    several assignments are optimal, OR-Tools (the devkit) may pick another one.

    Examples:
        >>> lane = np.stack([np.linspace(0, 40, 11), np.zeros(11), np.zeros(11)], 1)
        >>> fscore_counts([lane], [lane + [0, 0.5, 0]]).tolist()
        [1, 1, 1, 1, 1]
    """
    gs, gv = _fscore_lanes(gt_lanes)
    ps, pv = _fscore_lanes(pred_lanes)
    return fscore_counts_from_samples(gs, gv, ps, pv)


def fscore_counts_from_samples(gs: np.ndarray, gv: np.ndarray, ps: np.ndarray, pv: np.ndarray) -> np.ndarray:
    """:func:`fscore_counts` from the kept lanes' samples ``(K, 100, 2)`` and visibility ``(K, 100)``."""
    planes = [(np.ascontiguousarray(s[..., 0]), np.ascontiguousarray(s[..., 1]), v) for s, v in ((gs, gv), (ps, pv))]
    counts = fscore_frame_counts(planes[0], planes[1], np.array([len(gs)]), np.array([len(ps)]))
    return counts.astype(np.int64)


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
    pick = pick[cost_int[pick] < _DIST_TH * 100]
    out[4] = len(pick)
    out[0] = (matched[pick] / gt[2].sum(1)[gi[pick]] >= _RATIO_TH).sum()
    out[1] = (matched[pick] / pred[2].sum(1)[pj[pick]] >= _RATIO_TH).sum()
    return out


def _min_cost_assignments(cost: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """Flat indices (into ``cost``, the frames' row-major ``(rows[f], cols[f])`` blocks) of a min-cost one-to-one
    assignment of every frame, ``min(rows, cols)`` pairs each.

    Where every row of a frame (every column, if it has more rows than columns) has a strict minimum and these
    minima lie in distinct columns (rows), taking them is the one optimal assignment, so it is what any solver
    returns; the other frames go to :func:`scipy.optimize.linear_sum_assignment` one by one.
    """
    from scipy.optimize import linear_sum_assignment

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
    cost = _DIST_TH * (gv.sum(1)[gi] + pv.sum(1)[pj]).astype(np.float64)
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
        dist = np.where(both, dist, np.where(neither, 0.0, _DIST_TH))
        cost[part] = dist.sum(1)
        matched[part] = (dist < _DIST_TH).sum(1) - neither.sum(1)
    return cost, matched
