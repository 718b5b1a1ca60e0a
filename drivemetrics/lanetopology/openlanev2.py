"""OpenLane-V2 scores: OLS (centerline track) and OLUS (lane-segment track) with every sub-score, as the devkit
2.1.0 computes them (``compat="reference"``, equal to the devkit to 1e-6) or with the library's fixes (default).

Centerline track: ``DET_l`` (lane AP, Frechet thresholds 1, 2, 3 m), ``DET_t`` (traffic-element AP, IoU > 0.25,
mean over 13 attributes), ``TOP_ll`` / ``TOP_lt`` (per-vertex AP of lane-lane and lane-element relations of
matched items), ``OLS = mean(DET_l, DET_t, sqrt(TOP_ll), sqrt(TOP_lt))`` and the 3D-lane ``F_score``.
Lane-segment track: ``DET_ls``, ``DET_a`` (area AP, Chamfer 0.5, 1, 1.5 m, two categories), ``DET_t``,
``TOP_lsls``, ``TOP_lste`` and ``OLUS = mean(DET_ls, DET_a, DET_t, sqrt(TOP_lsls), sqrt(TOP_lste))``.

Default mode fixes (see :mod:`drivemetrics.lanetopology.scoring`; measured effects on the fixture are in the
domain page): matching falls back to the next free ground truth, tied confidences form one operating point,
11-point AP uses exact recall levels, classes without ground truth are left out of the means (NaN), and the
topology scores charge every predicted edge (edges ranked below a vertex's last correct edge count as misses;
relations of unmatched predictions are false-positive edges), which closes the topology loophole left after the
devkit's 2.1 fix.

State: everything the scores need is summed per batch, except the detection AP, which needs each detection's
confidence and true-positive flag pooled over all frames: ``(N, 3)`` rows ``[channel, confidence, tp]``
(:data:`_AP_ROWS`), kept as ragged state (:mod:`drivemetrics._internal.ragged`, one chunk per ``update``), so that
processes with no update or different numbers of frames sync in one gather.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor
from torchmetrics import Metric

from drivemetrics._internal.compat import Compat, check_compat
from drivemetrics._internal.metric import DictFamilyLogCheck, add_config_state, plot_metric
from drivemetrics._internal.ragged import RaggedRows, RaggedStateMixin
from drivemetrics.lanetopology.frames import (
    AREA_CATEGORIES,
    TRACKS,
    TRAFFIC_ELEMENT_ATTRIBUTES,
    LaneFrame,
    Track,
    check_frames_finite,
    parse_frame,
)
from drivemetrics.lanetopology.scoring import (
    UNMATCHED_RELATION,
    area_distance_matrix,
    average_precision_11,
    fscore_frame_counts,
    iou_distance_matrices,
    kept_lane_samples,
    lane_distance_matrices,
    match_frames,
    topology_vertex_ap_batch,
)

__all__ = [
    "AREA_THRESHOLDS",
    "LANE_THRESHOLDS",
    "TE_THRESHOLD",
    "OpenLaneV2AreaAP",
    "OpenLaneV2F1Score",
    "OpenLaneV2LaneAP",
    "OpenLaneV2LaneElementTopology",
    "OpenLaneV2LaneTopology",
    "OpenLaneV2Metrics",
    "OpenLaneV2Score",
    "OpenLaneV2TrafficElementAP",
    "OpenLaneV2UniScore",
    "OpenLaneV2UniScoreMetrics",
    "frame_statistics",
    "openlanev2_scores",
    "scores_from_statistics",
]

#: Lane matching thresholds (Frechet / combined distance), metres.
LANE_THRESHOLDS = (1.0, 2.0, 3.0)
#: Area matching thresholds (Chamfer), metres.
AREA_THRESHOLDS = (0.5, 1.0, 1.5)
#: Traffic-element matching threshold on ``1 - IoU``.
TE_THRESHOLD = 0.75

# AP channels: lanes per threshold, traffic elements per attribute, pooled elements, areas per category x threshold
_TE0 = len(LANE_THRESHOLDS)
_TE_POOLED = _TE0 + len(TRAFFIC_ELEMENT_ATTRIBUTES)
_AREA0 = _TE_POOLED + 1
_NUM_CHANNELS = _AREA0 + len(AREA_CATEGORIES) * len(AREA_THRESHOLDS)

_NAMES = {
    "centerline": {"lane": "DET_l", "top_ll": "TOP_ll", "top_lt": "TOP_lt", "score": "OLS"},
    "lanesegment": {"lane": "DET_ls", "top_ll": "TOP_lsls", "top_lt": "TOP_lste", "score": "OLUS"},
}


def _check_track(track: object) -> Track:
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
    device: torch.device | str = "cpu",
) -> dict[str, np.ndarray]:
    """Everything the scores need from a batch of frames (distances for the whole batch at once).

    Args:
        preds: per frame the devkit's prediction dict (or a :class:`LaneFrame`).
        target: per frame the devkit's annotation dict (or a :class:`LaneFrame`), same order.
        track: ``"centerline"`` or ``"lanesegment"``.
        compat: ``"reference"`` for the devkit 2.1.0 rules, ``"default"`` for the fixed ones.
        device: where the lane distance matrices are computed.

    Returns:
        ``ap_rows`` ``(N, 3)`` float64 ``[channel, confidence, tp]``; ``ap_num_gt`` ``(C,)``; ``topology``
        ``(2, 2, 3)`` float64 ``[lane-lane | lane-element][sum | count][lane threshold]``; ``fscore`` ``(5,)``
        ``[r_lane, p_lane, cnt_gt, cnt_pred, match_num]`` (zeros on the lane-segment track).

    Examples:
        >>> gt = {"lane_centerline": [{"points": [[0, 0, 0], [10, 0, 0]]}], "traffic_element": [],
        ...       "topology_lclc": [[0]], "topology_lcte": []}
        >>> pred = {"lane_centerline": [{"points": [[0, 0.5, 0], [10, 0.5, 0]], "confidence": 0.9}],
        ...         "traffic_element": [], "topology_lclc": [[0.0]], "topology_lcte": []}
        >>> frame_statistics([pred], [gt])["ap_rows"][:3].tolist()
        [[0.0, 0.9, 1.0], [1.0, 0.9, 1.0], [2.0, 0.9, 1.0]]
    """
    track = _check_track(track)
    reference = check_compat(compat)
    gts = _frames(target, track, False, "target")
    prs = _frames(preds, track, True, "preds")
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
    num_gt = np.zeros(_NUM_CHANNELS)
    topology = np.zeros((2, 2, len(LANE_THRESHOLDS)))
    fscore = np.zeros(5)
    empty = np.zeros(0)
    lane_conf = [p.lane_confidence if p.lane_confidence is not None else empty for p in prs]
    te_conf = [p.te_confidence if p.te_confidence is not None else empty for p in prs]
    # greedy matching of all frames at once: lanes at every threshold, traffic elements within their attribute
    # (as if each attribute were matched on its own) and pooled
    lane_match = match_frames(lane_d, lane_conf, LANE_THRESHOLDS, reference)
    te_d = iou_distance_matrices([g.te_boxes for g in gts], [p.te_boxes for p in prs])
    te_attr_match = match_frames(
        te_d, te_conf, [TE_THRESHOLD], reference, [g.te_attribute for g in gts], [p.te_attribute for p in prs]
    )
    te_match = match_frames(te_d, te_conf, [TE_THRESHOLD], reference)
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
        rows += _area_rows(gts, prs, reference, num_gt)
    topology[0] = _topology_sums(
        [g.topology_lanes for g in gts], [p.topology_lanes for p in prs], lane_match, lane_match, reference
    )
    te_cols = [np.repeat(m, len(LANE_THRESHOLDS), axis=1) for m in te_match]
    topology[1] = _topology_sums(
        [g.topology_elements for g in gts], [p.topology_elements for p in prs], lane_match, te_cols, reference
    )
    if not sides:
        fscore = _fscore_batch(gts, prs)
    ap_rows = np.concatenate(rows) if rows else np.zeros((0, 3))
    return {"ap_rows": ap_rows, "ap_num_gt": num_gt, "topology": topology, "fscore": fscore}


def _area_rows(
    gts: Sequence[LaneFrame], prs: Sequence[LaneFrame], reference: bool, num_gt: np.ndarray
) -> list[np.ndarray]:
    """AP rows of the area channels (category x threshold) of all frames; adds their GT counts to ``num_gt``."""
    empty = np.zeros(0)
    rows: list[np.ndarray] = []
    area_conf = [p.area_confidence if p.area_confidence is not None else empty for p in prs]
    area_d = [area_distance_matrix(g.areas, p.areas) for g, p in zip(gts, prs, strict=True)]
    area_match = match_frames(
        area_d, area_conf, AREA_THRESHOLDS, reference, [g.area_category for g in gts], [p.area_category for p in prs]
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


def _topology_sums(
    gt: Sequence[np.ndarray],
    pred: Sequence[np.ndarray],
    row_match: Sequence[np.ndarray],
    col_match: Sequence[np.ndarray],
    reference: bool,
) -> np.ndarray:
    """``(2, T)`` [sum | count] of per-vertex APs per lane threshold, all frames and thresholds as one batch.

    The devkit's relation matrix of a frame (GT-sized): matched GT pairs take the prediction's confidence between
    their predictions, all other entries ``(1 - gt) * (0.5 + float32 eps)``; frames whose GT matrix is empty are
    left out. Built for every frame and threshold at once from the match index arrays ``(P_f, T)``. Default mode
    (``reference`` False): the relations of unmatched predictions are added as extra rows / columns
    (:func:`_with_unmatched_predictions`) and the vertex AP charges edges ranked below the last correct one.
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
    charged = None
    if not reference:
        gt_all, scores, charged = _with_unmatched_predictions(gt_all, scores, pred_pad, rmatch, cmatch)
        row_ok = np.pad(row_ok, ((0, 0), (0, p_rows)))
        col_ok = np.pad(col_ok, ((0, 0), (0, p_cols)))
    shape = (num * num_t, *scores.shape[2:])
    by_row, by_col = topology_vertex_ap_batch(
        gt_all.reshape(shape), scores.reshape(shape), reference, None if charged is None else charged.reshape(shape)
    )
    row_mask = np.repeat(row_ok[:, None], num_t, axis=1).reshape(num * num_t, -1)
    col_mask = np.repeat(col_ok[:, None], num_t, axis=1).reshape(num * num_t, -1)
    per_item = (np.where(row_mask, by_row, 0.0).sum(1) + np.where(col_mask, by_col, 0.0).sum(1)).reshape(num, num_t)
    count = (row_mask.sum(1) + col_mask.sum(1)).reshape(num, num_t)
    out[0] = per_item.sum(0)
    out[1] = count.sum(0)
    return out


def _with_unmatched_predictions(
    gt: np.ndarray, scores: np.ndarray, pred: np.ndarray, rmatch: np.ndarray, cmatch: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Default mode: the relation matrices ``(N, T, R, C)`` grown to ``(N, T, R + P_r, C + P_c)`` by one row per
    predicted row item and one column per predicted column item, holding the relations of *unmatched*
    predictions with matched ones (GT 0: false positive edges of the matched vertex); ``charged`` marks the
    entries the submission predicted (not the ``0.5 + eps`` fill). The extra rows / columns are no vertices of
    the mean (the caller masks them). Returns ``(gt, scores, charged)``.
    """
    num, num_t, rows, cols = scores.shape
    p_rows, p_cols = pred.shape[1:]
    out = np.zeros((num, num_t, rows + p_rows, cols + p_cols))
    out[:, :, :rows, :cols] = scores
    charged = np.zeros(out.shape, dtype=bool)
    # matched prediction pairs (as in the devkit's matrix)
    f, i, j, t = np.nonzero((rmatch >= 0)[:, :, None, :] & (cmatch >= 0)[:, None, :, :])
    charged[f, t, rmatch[f, i, t], cmatch[f, j, t]] = True
    # matched row item -> unmatched column item: an extra column of the matched row vertex
    f, i, j, t = np.nonzero((rmatch >= 0)[:, :, None, :] & (cmatch < 0)[:, None, :, :])
    out[f, t, rmatch[f, i, t], cols + j] = pred[f, i, j]
    charged[f, t, rmatch[f, i, t], cols + j] = True
    # unmatched row item -> matched column item: an extra row of the matched column vertex
    f, i, j, t = np.nonzero((rmatch < 0)[:, :, None, :] & (cmatch >= 0)[:, None, :, :])
    out[f, t, rows + i, cmatch[f, j, t]] = pred[f, i, j]
    charged[f, t, rows + i, cmatch[f, j, t]] = True
    gt_out = np.zeros(out.shape)
    gt_out[:, :, :rows, :cols] = gt
    return gt_out, out, charged


def _fscore_batch(gts: Sequence[LaneFrame], prs: Sequence[LaneFrame]) -> np.ndarray:
    """Summed F-score counts of many frames (:func:`~drivemetrics.lanetopology.scoring.fscore_frame_counts`):
    the lanes of all frames sampled at once."""
    gy, gz, gv, gk = kept_lane_samples([x for f in gts for x in f.lanes])
    py, pz, pv, pk = kept_lane_samples([x for f in prs for x in f.lanes])
    g_count = np.bincount(np.repeat(np.arange(len(gts)), [len(f.lanes) for f in gts])[gk], minlength=len(gts))
    p_count = np.bincount(np.repeat(np.arange(len(prs)), [len(f.lanes) for f in prs])[pk], minlength=len(prs))
    return fscore_frame_counts((gy, gz, gv), (py, pz, pv), g_count, p_count)


def _mean(values: Sequence[float], reference: bool) -> float:
    if reference:  # the devkit averages float32 APs in float32
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
    compat: Compat = "default",
) -> dict[str, float]:
    """The headline and per-threshold scores from pooled :func:`frame_statistics` (arrays summed / concatenated).

    Returns:
        Headline keys as the devkit names them (``DET_l``, ``DET_t``, ``TOP_ll``, ``TOP_lt``, ``OLS``, ``F_score``;
        ``DET_ls``, ``DET_a``, ``DET_t``, ``TOP_lsls``, ``TOP_lste``, ``OLUS``) and per-threshold keys
        ``"<name>@<threshold>"`` (``DET_t@<attribute>``, ``DET_a@<category>@<threshold>``, ``TE_AP_pooled@0.75``).
    """
    track = _check_track(track)
    reference = check_compat(compat)
    names = _NAMES[track]
    channel = ap_rows[:, 0].astype(np.int64) if len(ap_rows) else np.zeros(0, dtype=np.int64)

    def ap(c: int) -> float:
        sel = channel == c
        return average_precision_11(ap_rows[sel, 1], ap_rows[sel, 2], round(float(ap_num_gt[c])), reference)

    out: dict[str, float] = {}
    lane_aps = [ap(t) for t, _ in enumerate(LANE_THRESHOLDS)]
    for value, threshold in zip(lane_aps, LANE_THRESHOLDS, strict=True):
        out[f"{names['lane']}@{threshold}"] = value
    out[names["lane"]] = _mean(lane_aps, reference)
    te_aps = [ap(_TE0 + a) for a in range(len(TRAFFIC_ELEMENT_ATTRIBUTES))]
    for value, attribute in zip(te_aps, TRAFFIC_ELEMENT_ATTRIBUTES, strict=True):
        out[f"DET_t@{attribute}"] = value
    out["DET_t"] = _mean(te_aps, reference)
    out[f"TE_AP_pooled@{TE_THRESHOLD}"] = ap(_TE_POOLED)
    if track == "lanesegment":
        area_aps = []
        for c, category in enumerate(AREA_CATEGORIES.values()):
            for t, threshold in enumerate(AREA_THRESHOLDS):
                value = ap(_AREA0 + c * len(AREA_THRESHOLDS) + t)
                out[f"DET_a@{category}@{threshold}"] = value
                area_aps.append(value)
        out["DET_a"] = _mean(area_aps, reference)
    for k, key in enumerate(("top_ll", "top_lt")):
        sums, counts = topology[k]
        for t, threshold in enumerate(LANE_THRESHOLDS):
            out[f"{names[key]}@{threshold}"] = float(sums[t] / counts[t]) if counts[t] else float("nan")
        total = counts.sum()
        out[names[key]] = float(sums.sum() / total) if total else (0.0 if reference else float("nan"))
    parts = [out[names["lane"]]]
    if track == "lanesegment":
        parts.append(out["DET_a"])
    parts += [out["DET_t"], math.sqrt(out[names["top_ll"]]), math.sqrt(out[names["top_lt"]])]
    out[names["score"]] = float(np.mean(parts))
    if track == "centerline":
        r_lane, p_lane, cnt_gt, cnt_pred, _ = fscore
        recall = r_lane / cnt_gt if cnt_gt else r_lane / (cnt_gt + 1e-6)
        precision = p_lane / cnt_pred if cnt_pred else p_lane / (cnt_pred + 1e-6)
        total = recall + precision
        out["F_score"] = 2 * recall * precision / (total if total else total + 1e-6)
    return out


def openlanev2_scores(
    preds: Sequence[Any],
    target: Sequence[Any],
    track: Track = "centerline",
    compat: Compat = "default",
    device: torch.device | str = "cpu",
) -> dict[str, Tensor]:
    """OLS or OLUS with every sub-score and per-threshold value, for a list of frames.

    Args:
        preds: per frame the devkit's prediction dict (``lane_centerline`` / ``lane_segment`` ... with
            ``confidence``), or a :class:`LaneFrame`.
        target: per frame the devkit's annotation dict, same order.
        track: ``"centerline"`` or ``"lanesegment"``.
        compat: ``"reference"`` reproduces the devkit 2.1.0; ``"default"`` applies the documented fixes.
        device: where the lane distances are computed.

    Returns:
        float64 scalar tensors under the keys of :func:`scores_from_statistics`.

    Examples:
        >>> gt = {"lane_centerline": [{"points": [[0, 0, 0], [10, 0, 0]]}], "traffic_element": [],
        ...       "topology_lclc": [[0]], "topology_lcte": []}
        >>> pred = {"lane_centerline": [{"points": [[0, 0.5, 0], [10, 0.5, 0]], "confidence": 0.9}],
        ...         "traffic_element": [], "topology_lclc": [[0.0]], "topology_lcte": []}
        >>> scores = openlanev2_scores([pred], [gt], compat="reference")
        >>> float(scores["DET_l"]), float(scores["TOP_ll"]), float(scores["F_score"])
        (1.0, 1.0, 1.0)
    """
    stats = frame_statistics(preds, target, track, compat, device)
    values = scores_from_statistics(**stats, track=track, compat=compat)
    return {k: torch.tensor(v, dtype=torch.float64) for k, v in values.items()}


class _OpenLaneV2Family(DictFamilyLogCheck, RaggedStateMixin, Metric):
    """The states, update and compute shared by :class:`OpenLaneV2Metrics` and :class:`OpenLaneV2UniScoreMetrics`."""

    is_differentiable = False
    higher_is_better = True
    full_state_update = False
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0
    ap_num_gt: Tensor
    topology: Tensor
    fscore: Tensor
    track: Track  # set by the subclass before this __init__ runs

    def __init__(
        self, compat: Compat = "default", distance_device: torch.device | str | None = None, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        check_compat(compat)
        self.compat = compat
        self.distance_device = distance_device
        # the one per-detection state (see the module docstring)
        self.add_ragged_state(ap=((3,), torch.float64))
        self.add_state("ap_num_gt", torch.zeros(_NUM_CHANNELS, dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("topology", torch.zeros(2, 2, len(LANE_THRESHOLDS), dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("fscore", torch.zeros(5, dtype=torch.float64), dist_reduce_fx="sum")
        add_config_state(self, ("OpenLaneV2", self.track, self.compat))

    def update(self, preds: Sequence[Any], target: Sequence[Any]) -> None:
        """Add frames: ``preds`` and ``target`` are lists of per-frame devkit dicts (or :class:`LaneFrame`)."""
        device = self.distance_device if self.distance_device is not None else "cpu"
        stats = frame_statistics(preds, target, self.track, self.compat, device)  # type: ignore[arg-type]
        rows = torch.from_numpy(stats["ap_rows"]).to(torch.float64).reshape(-1, 3)
        self.append_frames(ap=RaggedRows(rows, torch.tensor([rows.shape[0]])))  # the batch as one chunk
        self.ap_num_gt = self.ap_num_gt + torch.from_numpy(stats["ap_num_gt"]).to(self.device)
        self.topology = self.topology + torch.from_numpy(stats["topology"]).to(self.device)
        self.fscore = self.fscore + torch.from_numpy(stats["fscore"]).to(self.device)

    def compute(self) -> dict[str, Tensor]:
        """The scores, float64 scalars (keys of :func:`scores_from_statistics`)."""
        rows_np = self.ragged_frames().fields["ap"].rows.detach().cpu().numpy()
        values = scores_from_statistics(
            rows_np.reshape(-1, 3),
            self.ap_num_gt.cpu().numpy(),
            self.topology.cpu().numpy(),
            self.fscore.cpu().numpy(),
            track=self.track,  # type: ignore[arg-type]
            compat=self.compat,  # type: ignore[arg-type]
        )
        return {k: torch.tensor(v, dtype=torch.float64, device=self.device) for k, v in values.items()}

    def plot(self, val: Any = None, ax: Any = None) -> tuple[Any, Any]:
        """Plot a value, or a sequence of values over epochs (default: the current value); ``(fig, ax)``."""
        return plot_metric(self, val, ax)


class OpenLaneV2Metrics(_OpenLaneV2Family):
    """OpenLane-V2 scores over all frames seen: a dict of OLS / OLUS, sub-scores and per-threshold values.

    Args:
        track: ``"centerline"`` (OLS) or ``"lanesegment"`` (OLUS).
        compat: ``"reference"`` reproduces the devkit 2.1.0 (to 1e-6 on its fixture); ``"default"`` applies the
            documented fixes.
        distance_device: where the lane distances are computed (default: CPU; ``"cuda"`` for the GPU).
        kwargs: passed to :class:`torchmetrics.Metric`.

    ``update(preds, target)`` takes lists of per-frame devkit dicts (numpy arrays, tensors or lists inside).

    Examples:
        >>> gt = {"lane_centerline": [{"points": [[0, 0, 0], [10, 0, 0]]}], "traffic_element": [],
        ...       "topology_lclc": [[0]], "topology_lcte": []}
        >>> pred = {"lane_centerline": [{"points": [[0, 0.5, 0], [10, 0.5, 0]], "confidence": 0.9}],
        ...         "traffic_element": [], "topology_lclc": [[0.0]], "topology_lcte": []}
        >>> metric = OpenLaneV2Metrics(compat="reference")
        >>> metric.update([pred], [gt])
        >>> scores = metric.compute()
        >>> float(scores["DET_l"]), float(scores["TOP_ll"])
        (1.0, 1.0)

    Without any lane-element relation in the ground truth, the devkit's TOP_lt is 0, so OLS is
    ``(1 + 1 + 1 + 0) / 4``:

    Examples:
        >>> float(scores["OLS"])
        0.75
    """

    def __init__(
        self,
        track: Track = "centerline",
        compat: Compat = "default",
        distance_device: torch.device | str | None = None,
        **kwargs: Any,
    ) -> None:
        self.track = _check_track(track)
        super().__init__(compat=compat, distance_device=distance_device, **kwargs)


class OpenLaneV2UniScoreMetrics(_OpenLaneV2Family):
    """The lane-segment track's scores (OLUS, DET_ls, DET_a, DET_t, TOP_lsls, TOP_lste and per-threshold values):
    :class:`OpenLaneV2Metrics` with ``track="lanesegment"``, the family of :class:`OpenLaneV2UniScore` and
    :class:`OpenLaneV2AreaAP`.

    Examples:
        >>> OpenLaneV2UniScoreMetrics(compat="reference").track
        'lanesegment'
    """

    def __init__(
        self, compat: Compat = "default", distance_device: torch.device | str | None = None, **kwargs: Any
    ) -> None:
        self.track = "lanesegment"
        super().__init__(compat=compat, distance_device=distance_device, **kwargs)


class _Scalar(OpenLaneV2Metrics):
    """One value of :class:`OpenLaneV2Metrics`' dict (``key``) as a 0-d float64 tensor, for ``self.log``."""

    key: str

    def compute(self) -> Tensor:  # type: ignore[override]
        """The ``key`` value of the family's scores (0-d float64)."""
        return super().compute()[self.key]


class _CenterlineScalar(_Scalar):
    """A value defined on the centerline track only (OLS, F-score)."""

    def __init__(
        self, compat: Compat = "default", distance_device: torch.device | str | None = None, **kwargs: Any
    ) -> None:
        super().__init__(track="centerline", compat=compat, distance_device=distance_device, **kwargs)


class _SegmentScalar(OpenLaneV2UniScoreMetrics):
    """One value of :class:`OpenLaneV2UniScoreMetrics`' dict (``key``) as a 0-d float64 tensor."""

    key: str

    def compute(self) -> Tensor:  # type: ignore[override]
        """The ``key`` value of the family's scores (0-d float64)."""
        return super().compute()[self.key]


class OpenLaneV2Score(_CenterlineScalar):
    """OLS, the OpenLane-V2 score of the centerline track (arguments as :class:`OpenLaneV2Metrics`).

    Examples:
        >>> OpenLaneV2Score(compat="reference").key
        'OLS'
    """

    key = "OLS"

    def __init__(
        self, compat: Compat = "default", distance_device: torch.device | str | None = None, **kwargs: Any
    ) -> None:
        super().__init__(compat=compat, distance_device=distance_device, **kwargs)


class OpenLaneV2UniScore(_SegmentScalar):
    """OLUS, the OpenLane-V2 UniScore of the lane-segment track (arguments as :class:`OpenLaneV2Metrics`).

    Examples:
        >>> OpenLaneV2UniScore().key
        'OLUS'
    """

    key = "OLUS"

    def __init__(
        self, compat: Compat = "default", distance_device: torch.device | str | None = None, **kwargs: Any
    ) -> None:
        super().__init__(compat=compat, distance_device=distance_device, **kwargs)


class OpenLaneV2F1Score(_CenterlineScalar):
    """The 3D-lane F-score of the centerline track (arguments as :class:`OpenLaneV2Metrics`).

    Examples:
        >>> OpenLaneV2F1Score().key
        'F_score'
    """

    key = "F_score"

    def __init__(
        self, compat: Compat = "default", distance_device: torch.device | str | None = None, **kwargs: Any
    ) -> None:
        super().__init__(compat=compat, distance_device=distance_device, **kwargs)


class OpenLaneV2AreaAP(_SegmentScalar):
    """DET_a, area AP of the lane-segment track (arguments as :class:`OpenLaneV2Metrics`).

    Examples:
        >>> OpenLaneV2AreaAP().key
        'DET_a'
    """

    key = "DET_a"

    def __init__(
        self, compat: Compat = "default", distance_device: torch.device | str | None = None, **kwargs: Any
    ) -> None:
        super().__init__(compat=compat, distance_device=distance_device, **kwargs)


class _TrackScalar(_Scalar):
    _role: str

    def __init__(
        self,
        track: Track = "centerline",
        compat: Compat = "default",
        distance_device: torch.device | str | None = None,
        **kwargs: Any,
    ) -> None:
        self.key = _NAMES[_check_track(track)][self._role] if self._role in _NAMES[track] else self._role
        super().__init__(track=track, compat=compat, distance_device=distance_device, **kwargs)


class OpenLaneV2LaneAP(_TrackScalar):
    """DET_l (centerline track) or DET_ls (lane-segment track) (arguments as :class:`OpenLaneV2Metrics`).

    Examples:
        >>> OpenLaneV2LaneAP(track="lanesegment").key
        'DET_ls'
    """

    _role = "lane"


class OpenLaneV2TrafficElementAP(_TrackScalar):
    """DET_t, traffic-element AP averaged over the 13 attributes (arguments as :class:`OpenLaneV2Metrics`).

    Examples:
        >>> OpenLaneV2TrafficElementAP().key
        'DET_t'
    """

    _role = "DET_t"


class OpenLaneV2LaneTopology(_TrackScalar):
    """TOP_ll (centerline track) or TOP_lsls (lane-segment track) (arguments as :class:`OpenLaneV2Metrics`).

    Examples:
        >>> OpenLaneV2LaneTopology().key
        'TOP_ll'
    """

    _role = "top_ll"


class OpenLaneV2LaneElementTopology(_TrackScalar):
    """TOP_lt (centerline track) or TOP_lste (lane-segment track) (arguments as :class:`OpenLaneV2Metrics`).

    Examples:
        >>> OpenLaneV2LaneElementTopology(track="lanesegment").key
        'TOP_lste'
    """

    _role = "top_lt"
