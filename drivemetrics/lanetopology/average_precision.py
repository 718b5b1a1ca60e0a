"""OpenLane-V2 average precision of pooled rows ``(confidence, true positive)``: the detections' 11-point AP (the
devkit's float32 recall grid in the reference mode, the exact grid by default; tied confidences one operating point)
and the relation AP of the default mode's topology.
"""

from __future__ import annotations

import numpy as np

from drivemetrics._internal.compat import Compat, check_compat
from drivemetrics.polyline.average_precision import average_precision_11point, pooled_precision_recall

__all__ = ["detection_average_precision", "relation_average_precision"]


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
        >>> import numpy as np
        >>> from drivemetrics.lanetopology.average_precision import detection_average_precision
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
            validate_args=False,
        )
        # numpy 1.x compares a float32 array with a float64 scalar in float32 (value-based casting): so does the
        # devkit, and a recall of exactly 7/10 reaches the 0.7 point (a float64 comparison says it does not, which
        # changes DET_t on the lane-segment fixture by 4.5e-3); float32 sum in level order
        ap = average_precision_11point(
            precision_t, recall_t, dtype="float32", compare_dtype="float32", validate_args=False
        )
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
        >>> import numpy as np
        >>> from drivemetrics.lanetopology.average_precision import relation_average_precision
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
