"""OpenLane-V2 topology: the relation candidates of the default mode (:func:`relation_rows`) and the devkit's per-vertex
topology AP with its ``0.5`` threshold and ``0.5 + eps`` fill (:func:`topology_vertex_ap`, the reference mode).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from drivemetrics.lanetopology.distances import frame_pairs

__all__ = [
    "RELATION_THRESHOLD",
    "UNMATCHED_RELATION",
    "relation_rows",
    "topology_vertex_ap",
    "topology_vertex_ap_batch",
]


#: Relation confidences strictly above this are predicted edges.
RELATION_THRESHOLD = 0.5


_EPS32 = float(np.finfo(np.float32).eps)


#: What the devkit's relation matrix holds where a GT pair is not predicted (times ``1 - gt``).
UNMATCHED_RELATION = 0.5 + _EPS32


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
        >>> import numpy as np
        >>> from drivemetrics.lanetopology.topology import relation_rows
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
        >>> import numpy as np
        >>> from drivemetrics.lanetopology.topology import topology_vertex_ap
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
