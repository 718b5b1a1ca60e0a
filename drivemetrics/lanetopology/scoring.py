"""The OpenLane-V2 scoring steps: frames in (parsed :class:`~drivemetrics.lanetopology.frames.LaneFrame`), pooled
statistics and scores out. No Metric here; :mod:`drivemetrics.lanetopology.openlanev2` (the Metric classes and the
functional kernel) and :mod:`drivemetrics.lanetopology.evaluate` (the dataset command) call
:func:`batch_statistics` and :func:`scores_from_statistics`, nothing else. This module holds those two (the
statistics of a batch of frames and the scores of pooled statistics); each step has its module:
:mod:`~drivemetrics.lanetopology.distances`, :mod:`~drivemetrics.lanetopology.matching`,
:mod:`~drivemetrics.lanetopology.average_precision`, :mod:`~drivemetrics.lanetopology.topology` and
:mod:`~drivemetrics.lanetopology.fscore`.

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

from drivemetrics._internal.compat import Compat, check_compat
from drivemetrics.lanetopology.average_precision import detection_average_precision, relation_average_precision
from drivemetrics.lanetopology.distances import (
    Device,
    area_distance_matrix,
    iou_distance_matrices,
    lane_distance_matrices,
)
from drivemetrics.lanetopology.frames import (
    AREA_CATEGORIES,
    TRACKS,
    TRAFFIC_ELEMENT_ATTRIBUTES,
    LaneFrame,
    Track,
    check_frames_finite,
    parse_frame,
)
from drivemetrics.lanetopology.fscore import fscore_batch_counts
from drivemetrics.lanetopology.matching import match_frames
from drivemetrics.lanetopology.topology import UNMATCHED_RELATION, relation_rows, topology_vertex_ap_batch

__all__ = [
    "AREA_THRESHOLDS",
    "DEVKIT_NAMES",
    "LANE_THRESHOLDS",
    "NUM_AP_CHANNELS",
    "SCORE_KEYS",
    "TE_THRESHOLD",
    "batch_statistics",
    "check_track",
    "devkit_name",
    "frame_statistics",
    "scores_from_statistics",
]


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
        >>> from drivemetrics.lanetopology.scoring import devkit_name
        >>> devkit_name("ols"), devkit_name("det_a@road_boundary@1.0")
        ('OLS', 'DET_a@road_boundary@1.0')
    """
    head, sep, tail = key.partition("@")
    return DEVKIT_NAMES[head] + sep + tail


def check_track(track: object) -> Track:
    """Validate a track name (``"centerline"`` or ``"lanesegment"``).

    Examples:
        >>> from drivemetrics.lanetopology.scoring import check_track
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
        >>> from drivemetrics.lanetopology.scoring import frame_statistics
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
        >>> from drivemetrics.lanetopology.scoring import batch_statistics
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
        >>> import numpy as np
        >>> from drivemetrics.lanetopology.scoring import NUM_AP_CHANNELS, scores_from_statistics
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
