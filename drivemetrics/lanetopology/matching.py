"""OpenLane-V2 matching: per frame and threshold, predictions by decreasing confidence take a ground truth within the
threshold (``compat="reference"``: the devkit's nearest-only rule; default: the nearest *free* one).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from drivemetrics._internal.compat import Compat, check_compat
from drivemetrics.polyline.matching import greedy_match_index

__all__ = ["match_frames"]


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
        >>> import numpy as np
        >>> from drivemetrics.lanetopology.matching import match_frames
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
        validate_args=False,
    )
    return [match[f, : d.shape[1]] for f, d in enumerate(distances)]
