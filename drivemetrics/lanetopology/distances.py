"""OpenLane-V2 distance matrices, ground truth in rows and predictions in columns, all frames of a batch at once:
the lane distances (discrete Frechet first, bounded and banded, the Chamfer prefilter only where the Frechet distance
does not already decide), the traffic-element IoU distances and the area (pedestrian crossing, road boundary)
distances. With ``device=None`` they run on numpy and torch is never imported (``openlanev2-eval``); with a device
the lane distances run on torch tensors there, the same code (:mod:`drivemetrics._internal.arrays`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from drivemetrics._internal import arrays as xp
from drivemetrics.polyline.bounded_frechet import bounded_frechet_distance_pairs, norms
from drivemetrics.polyline.pairs import drop_closing_point, paired_chamfer_means

__all__ = [
    "REJECTED_DISTANCE",
    "area_distance_matrix",
    "ego_relaxation",
    "frame_pairs",
    "iou_distance_matrices",
    "iou_distance_matrix",
    "lane_distance_matrices",
]


Array = Any  # a numpy array, or a torch tensor when a device is given


Device = Any  # None (numpy, no torch), or a torch.device / its name


#: Distance the devkit writes where the Chamfer prefilter rejects a pair (never matches).
REJECTED_DISTANCE = 1024.0


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
        >>> import numpy as np
        >>> from drivemetrics.lanetopology.distances import frame_pairs
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
        >>> import numpy as np
        >>> from drivemetrics.lanetopology.distances import ego_relaxation
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
        >>> import numpy as np
        >>> from drivemetrics.lanetopology.distances import lane_distance_matrices
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
        >>> import numpy as np
        >>> from drivemetrics.lanetopology.distances import area_distance_matrix
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
        >>> import numpy as np
        >>> from drivemetrics.lanetopology.distances import iou_distance_matrix
        >>> iou_distance_matrix(np.array([[[0, 0], [2, 2]]]), np.array([[[1, 0], [3, 2]]]))
        array([[0.6666666]], dtype=float32)
    """
    g = np.asarray(gt_boxes, dtype=np.float32).reshape(-1, 2, 2)[:, None]
    p = np.asarray(pred_boxes, dtype=np.float32).reshape(-1, 2, 2)[None, :]
    return _iou_distance(g, p)


def iou_distance_matrices(gt_frames: Sequence[np.ndarray], pred_frames: Sequence[np.ndarray]) -> list[np.ndarray]:
    """:func:`iou_distance_matrix` of many frames at once (boxes ``(G_f, 2, 2)`` / ``(P_f, 2, 2)`` per frame).

    Examples:
        >>> import numpy as np
        >>> from drivemetrics.lanetopology.distances import iou_distance_matrices
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
