"""The ONCE-3DLanes kernels :func:`once3d_iou`, :func:`once3d_mean_distance`, :func:`once3d_matches`,
:func:`once3d_scores`; their rules, both modes and the Metric classes are in :mod:`drivemetrics.lane3d.once`, which
re-exports them (as :mod:`drivemetrics.functional`).

Kept apart from the Metric classes so that the ``once3d-eval`` command's CPU path (host code: numpy and the libraries
the rules need) never imports torch or torchmetrics.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from drivemetrics._internal import arrays
from drivemetrics._internal.compat import Compat, check_compat
from drivemetrics._internal.extras import require
from drivemetrics._internal.validation import check_values
from drivemetrics.lane3d.munkres import munkres_assignment
from drivemetrics.lane3d.packed import (
    PackedLanes,
    check_lane_list,
    check_packed,
    check_packed_values,
)

__all__ = [
    "COUNT_NAMES",
    "ONCE_LABELS",
    "ONCE_THRESHOLDS",
    "once3d_iou",
    "once3d_matches",
    "once3d_mean_distance",
    "once3d_scores",
]

#: The score thresholds of the table, as the tool computes them (``store * 0.01``: 0.35, 0.70 and 0.95 are a hair
#: above their decimals, so a score written as one of the 18 decimals is dropped at its own threshold).
ONCE_THRESHOLDS = tuple(store * 0.01 for store in range(10, 100, 5))
#: Labels of the table's rows.
ONCE_LABELS = tuple(f"{store / 100}" for store in range(10, 100, 5))
DISTANCE_THRESHOLD = 0.3
RESOLUTION = 0.05
SIDE_RANGE, FWD_RANGE = (-10.0, 10.0), (0.0, 50.0)
IMAGE_WIDTH = int((SIDE_RANGE[1] - SIDE_RANGE[0]) / RESOLUTION)  # 400
IMAGE_HEIGHT = int((FWD_RANGE[1] - FWD_RANGE[0]) / RESOLUTION)  # 1000
LINE_WIDTH = 30
RASTER_DEPTH = 10.0  # the tool draws the points with z < 10 m only
SAMPLES = np.arange(0.05, 1, 0.1)  # the fractions of the GT lane's length, the tool's np.arange values
COUNT_NAMES = ("gt", "pred", "tp")


def _sorted_lane(lane: np.ndarray) -> np.ndarray:
    """The tool's ``sort_lanes_z``: reversed when its first point is farther (z) than its second."""
    return lane[::-1] if lane.shape[0] >= 2 and lane[0, 2] > lane[1, 2] else lane


def _raster(lane: np.ndarray, reference: bool) -> tuple[np.ndarray, tuple[int, int, int, int]] | None:
    """The lane's BEV raster (bool ``(1000, 400)``) and the box ``(r0, r1, c0, c1)`` it may touch; ``None`` when
    nothing is drawn."""
    cv2: Any = require("culane", "cv2", "the ONCE-3DLanes BEV IoU")
    pts = lane[lane[:, 2] < RASTER_DEPTH] if reference else lane
    if pts.shape[0] == 0 or (reference and pts.shape[0] < 2):
        return None
    xi = (pts[:, 0] / RESOLUTION).astype(np.int32) + int(SIDE_RANGE[1] / RESOLUTION)
    yi = (-pts[:, 2] / RESOLUTION).astype(np.int32) + int(FWD_RANGE[1] / RESOLUTION)
    half = LINE_WIDTH // 2 + 2
    r0, r1 = max(int(yi.min()) - half, 0), min(int(yi.max()) + half + 1, IMAGE_HEIGHT)
    c0, c1 = max(int(xi.min()) - half, 0), min(int(xi.max()) + half + 1, IMAGE_WIDTH)
    if r0 >= r1 or c0 >= c1:
        return None
    image = np.zeros((IMAGE_HEIGHT, IMAGE_WIDTH), dtype=np.uint8)
    if pts.shape[0] == 1:  # default mode only: a dot
        cv2.line(image, (int(xi[0]), int(yi[0])), (int(xi[0]), int(yi[0])), 255, LINE_WIDTH)
    for i in range(pts.shape[0] - 1):
        cv2.line(image, (int(xi[i]), int(yi[i])), (int(xi[i + 1]), int(yi[i + 1])), 255, LINE_WIDTH)
    return image > 0, (r0, r1, c0, c1)


def once3d_iou(
    gt: list[np.ndarray], preds: list[np.ndarray], *, compat: Compat = "default", validate_args: bool = True
) -> np.ndarray:
    """BEV IoU of every GT x predicted lane of one frame, ``(G, P)`` float64 (0 where the union is empty).

    Lanes ``(n, 3)`` in the camera frame, already oriented (:func:`once3d_matches` reverses far-to-near lanes).
    ``"reference"``: only the points with z < 10 m are drawn, as the tool; ``"default"``: the whole lane. Drawn with
    OpenCV (``cv2``, the ``culane`` extra), as the tool. ``validate_args``: refuse NaN, infinite or huge (beyond
    ``max_lane3d_abs_metres``, the readers' limit) coordinates, which would raster without bound.

    Examples:
        >>> import numpy as np
        >>> from drivemetrics.functional import once3d_iou
        >>> z = np.arange(5.0, 41.0)
        >>> lane = np.stack([np.full_like(z, 1.0), np.full_like(z, 1.6), z], 1)
        >>> shifted = lane + np.array([0.5, 0.0, 0.0])
        >>> once3d_iou([lane], [lane, shifted], compat="reference").round(4).tolist()
        [[1.0, 0.4898]]
    """
    reference = check_compat(compat)
    if validate_args:
        check_lane_list(gt, "gt")
        check_lane_list(preds, "preds")
    g = [_raster(lane, reference) for lane in gt]
    p = [_raster(lane, reference) for lane in preds]
    iou = np.zeros((len(gt), len(preds)))
    drawn = [r for r in g + p if r is not None]
    if not drawn or not any(r is not None for r in g) or not any(r is not None for r in p):
        return iou
    r0, r1 = min(b[1][0] for b in drawn), max(b[1][1] for b in drawn)
    c0, c1 = min(b[1][2] for b in drawn), max(b[1][3] for b in drawn)

    def flat(rasters: list[Any]) -> tuple[np.ndarray, np.ndarray]:
        rows = np.zeros((len(rasters), (r1 - r0) * (c1 - c0)), dtype=np.float32)
        for k, r in enumerate(rasters):
            if r is not None:
                rows[k] = r[0][r0:r1, c0:c1].reshape(-1)
        return rows, rows.sum(1, dtype=np.float64)

    gm, ga = flat(g)
    pm, pa = flat(p)
    inter = (gm @ pm.T).astype(np.float64)  # exact: counts below 2**24
    union = ga[:, None] + pa[None, :] - inter
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(union > 0, inter / np.where(union > 0, union, 1.0), 0.0)


def _lane_samples(lane: np.ndarray, dims: int) -> np.ndarray:
    """The 10 points at :data:`SAMPLES` of the lane's length (in its first ``dims`` coordinates), as GEOS'
    ``interpolate(normalized=True)``: ``(10, 3)``."""
    seg = lane[1:, :dims] - lane[:-1, :dims]
    seg_len = np.sqrt((seg * seg).sum(1)) if dims == 3 else np.sqrt(seg[:, 0] * seg[:, 0] + seg[:, 1] * seg[:, 1])
    cum = np.cumsum(seg_len)  # sequential, as GEOS' running total
    total = cum[-1] if cum.size else 0.0
    out = np.empty((SAMPLES.shape[0], 3))
    for k, fraction in enumerate(SAMPLES):
        target = fraction * total
        if target <= 0.0 or cum.size == 0:
            out[k] = lane[0]
            continue
        after = np.flatnonzero(cum > target)
        if after.size == 0:
            out[k] = lane[-1]
            continue
        i = int(after[0])
        before = cum[i - 1] if i > 0 else 0.0
        frac = (target - before) / seg_len[i]
        p0, p1 = lane[i], lane[i + 1]
        out[k] = p0 if frac <= 0.0 else p1 if frac >= 1.0 else (p1 - p0) * frac + p0
    return out


def _point_polyline_distance(points: np.ndarray, lane: np.ndarray, dims: int) -> np.ndarray:
    """Distance of each of ``points`` ``(S, 3)`` to the polyline ``lane`` ``(n >= 1, 3)``: GEOS'
    ``pointToSegment`` in the x-y plane (``dims`` 2) or the 3D point-segment distance (``dims`` 3); ``(S,)``."""
    if lane.shape[0] == 1:
        d = points[:, :dims] - lane[0, :dims]
        return np.sqrt((d * d).sum(1))
    a, b = lane[:-1, :dims][None], lane[1:, :dims][None]
    p = points[:, :dims][:, None]
    ab = b - a
    len2 = (ab * ab).sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        if dims == 2:
            ax, ay, bx, by = a[..., 0], a[..., 1], b[..., 0], b[..., 1]
            px, py = p[..., 0], p[..., 1]
            len2 = (bx - ax) * (bx - ax) + (by - ay) * (by - ay)
            r = ((px - ax) * (bx - ax) + (py - ay) * (by - ay)) / len2
            s = ((ay - py) * (bx - ax) - (ax - px) * (by - ay)) / len2
            to_a = np.sqrt((px - ax) * (px - ax) + (py - ay) * (py - ay))
            to_b = np.sqrt((px - bx) * (px - bx) + (py - by) * (py - by))
            dist = np.where(len2 == 0, to_a, np.where(r <= 0, to_a, np.where(r >= 1, to_b, np.abs(s) * np.sqrt(len2))))
        else:
            t = np.clip(((p - a) * ab).sum(-1) / np.where(len2 > 0, len2, 1.0), 0.0, 1.0)
            t = np.where(len2 > 0, t, 0.0)
            d = p - (a + t[..., None] * ab)
            dist = np.sqrt((d * d).sum(-1))
    return dist.min(1)


def once3d_mean_distance(
    gt: np.ndarray, pred: np.ndarray, *, compat: Compat = "default", validate_args: bool = True
) -> float:
    """Mean distance (metres) from 10 points along the GT lane (5 %, 15 %, ..., 95 % of its length) to the
    predicted polyline, the tool's ``cal_mean_dist``.

    ``"reference"``: shapely's, in the x-y plane (lateral x, height y; the forward depth z is ignored, so a lane at
    the same x / y over another depth range is at distance 0); ``"default"``: in 3D. ``validate_args``: refuse NaN,
    infinite or huge (beyond ``max_lane3d_abs_metres``) coordinates.

    Examples:
        >>> import numpy as np
        >>> from drivemetrics.functional import once3d_mean_distance
        >>> near = np.array([[1.0, 1.6, 5.0], [1.0, 1.6, 20.0]])
        >>> far = np.array([[1.0, 1.6, 30.0], [1.0, 1.6, 50.0]])
        >>> once3d_mean_distance(near, far, compat="reference"), once3d_mean_distance(near, far)
        (0.0, 17.5)
    """
    dims = 2 if check_compat(compat) else 3
    gt, pred = np.asarray(gt, dtype=np.float64), np.asarray(pred, dtype=np.float64)
    if gt.ndim != 2 or gt.shape[1] != 3 or gt.shape[0] < 2:
        raise ValueError(f"`gt` must be (n >= 2, 3), got {tuple(gt.shape)}")
    if pred.ndim != 2 or pred.shape[1] != 3 or pred.shape[0] < 1:
        raise ValueError(f"`pred` must be (n >= 1, 3), got {tuple(pred.shape)}")
    if validate_args:
        check_lane_list([gt], "gt")
        check_lane_list([pred], "pred")
    dist = _point_polyline_distance(_lane_samples(gt, dims), pred, dims)
    total = 0.0
    for value in dist.tolist():  # the tool's running sum
        total += value
    return total / SAMPLES.shape[0]


def _frame_lanes(lanes: PackedLanes, starts: np.ndarray, frame: int, first: np.ndarray, stop: np.ndarray) -> list:
    return [lanes.points[starts[m] : starts[m] + lanes.lengths[m]] for m in range(first[frame], stop[frame])]


def once3d_matches(
    preds: PackedLanes,
    target: PackedLanes,
    *,
    frames: int,
    thresholds: tuple[float, ...] = ONCE_THRESHOLDS,
    compat: Compat = "default",
    validate_args: bool = True,
) -> dict[str, Any]:
    """Per frame and score threshold: GT lanes, predicted lanes, true positives and the summed TP distance.

    Args:
        preds: predicted lanes with ``scores`` (camera frame, metres).
        target: GT lanes (``scores`` unused).
        frames: the number of frames ``B`` (frames without lanes count too).
        thresholds: score thresholds (a lane counts when its score is strictly above).
        compat: ``"reference"``: the tool (x-y distance, 10 m raster, a prediction of < 2 points raises);
            ``"default"``: the fixes of :mod:`drivemetrics.lane3d.once`.
        validate_args: refuse points beyond ``max_lane3d_abs_metres`` (the readers' limit) and scores outside
            [0, 1] (a one-line ``ValueError``); shapes, finite values and frame indices are always checked.

    Returns:
        ``counts`` ``(B, T, 3)`` int64 (#GT, #pred, TP) and ``distance_sum`` ``(B, T)`` float64, numpy arrays or
        tensors as ``preds.points``.

    Examples:
        >>> import numpy as np
        >>> from drivemetrics.lane3d.packed import pack_lane_lists
        >>> from drivemetrics.functional import once3d_matches
        >>> z = np.arange(3.0, 41.0)
        >>> lane = np.stack([np.full_like(z, 1.8), np.full_like(z, 1.6), z], 1)
        >>> gt = pack_lane_lists([[lane, lane - np.array([3.6, 0, 0])]])
        >>> pred = pack_lane_lists([[lane + np.array([0.1, 0, 0])]], scores=[[0.9]])
        >>> out = once3d_matches(pred, gt, frames=1, thresholds=(0.5, 0.95))
        >>> out["counts"].tolist(), out["distance_sum"].round(6).tolist()
        ([[[2, 1, 1], [2, 0, 0]]], [[0.1, 0.0]])
    """
    reference = check_compat(compat)
    like = preds.points
    p = check_packed(preds, "preds", frames, scores=True, visibility=False)
    g = check_packed(target, "target", frames, scores=False, visibility=False)
    if validate_args:
        check_packed_values(p, "preds")
        check_packed_values(g, "target")
    if validate_args and reference and (p.lengths < 2).any():
        m = int(np.flatnonzero(p.lengths < 2)[0])
        raise ValueError(
            f"`preds`: lane {m} (frame {int(p.frame[m])}) has {int(p.lengths[m])} point(s); the official evaluator "
            "stops on a prediction of fewer than 2 points (IndexError in sort_lanes_z)"
        )
    thr = np.asarray(thresholds, dtype=np.float64)
    counts = np.zeros((frames, thr.shape[0], 3), dtype=np.int64)
    dsum = np.zeros((frames, thr.shape[0]))
    g_starts, p_starts = np.cumsum(g.lengths) - g.lengths, np.cumsum(p.lengths) - p.lengths
    g_first = np.searchsorted(g.frame, np.arange(frames))
    g_stop = np.searchsorted(g.frame, np.arange(frames), side="right")
    p_first = np.searchsorted(p.frame, np.arange(frames))
    p_stop = np.searchsorted(p.frame, np.arange(frames), side="right")
    for f in range(frames):
        gt = [_sorted_lane(lane) for lane in _frame_lanes(g, g_starts, f, g_first, g_stop) if lane.shape[0] >= 2]
        pr = [_sorted_lane(lane) for lane in _frame_lanes(p, p_starts, f, p_first, p_stop)]
        scores = p.scores[p_first[f] : p_stop[f]]
        kept = scores[None, :] > thr[:, None]  # (T, P)
        counts[f, :, 0] = len(gt)
        counts[f, :, 1] = kept.sum(1)
        if not gt or not pr or not kept.any():
            continue
        iou = once3d_iou(gt, pr, compat=compat, validate_args=False)
        dist: dict[int, float] = {}
        memo: dict[bytes, tuple[int, float]] = {}
        for t in range(thr.shape[0]):
            cols = np.flatnonzero(kept[t])
            if cols.size == 0:
                continue
            key = kept[t].tobytes()
            if key not in memo:
                cost = [[1.0 - float(iou[i, j]) for j in cols] for i in range(len(gt))]
                tp, total = 0, 0.0
                for row, col in munkres_assignment(cost):
                    j = int(cols[col])
                    k = row * len(pr) + j
                    if k not in dist:
                        dist[k] = (
                            once3d_mean_distance(gt[row], pr[j], compat=compat, validate_args=False)
                            if pr[j].shape[0]
                            else float("inf")
                        )
                    if dist[k] < DISTANCE_THRESHOLD:
                        total += dist[k]
                        tp += 1
                memo[key] = (tp, total)
            counts[f, t, 2], dsum[f, t] = memo[key]
    return {"counts": arrays.as_index(counts, like), "distance_sum": arrays.float64_like(dsum, like)}


def once3d_scores(
    counts: Any, distance_sum: Any, *, compat: Compat = "default", validate_args: bool = True
) -> dict[str, Any]:
    """F1, precision, recall and distance error per threshold from the summed ``(T, 3)`` counts and ``(T,)``
    distances of :func:`once3d_matches` (summed over frames).

    ``"reference"``: the tool's float32 arithmetic, NaN at 0 / 0, distance error = sum / (TP + 1e-5);
    ``"default"``: float64, 0 at 0 / 0, distance error = sum / TP (0 without TP). ``validate_args``: refuse
    negative or non-finite counts and distance sums (a one-line ``ValueError``).

    Examples:
        >>> import numpy as np
        >>> from drivemetrics.functional import once3d_scores
        >>> out = once3d_scores(np.array([[4, 2, 2], [4, 0, 0]]), np.array([0.2, 0.0]), compat="reference")
        >>> out["F1"].tolist()[0], bool(np.isnan(out["precision"][1]))
        (0.6666666865348816, True)
    """
    reference = check_compat(compat)
    c = arrays.to_numpy(counts).astype(np.float64)
    d = arrays.to_numpy(distance_sum).astype(np.float64)
    if c.ndim != 2 or c.shape[1] != 3 or d.shape != c.shape[:1]:
        raise ValueError(f"`counts` must be (T, 3) and `distance_sum` (T,), got {c.shape} and {d.shape}")
    if validate_args:
        check_values(c, "counts", low=0, what="counts")
        check_values(d, "distance_sum", low=0.0, what="distances")
    gt, pred, tp = c.T
    with np.errstate(invalid="ignore", divide="ignore"):
        if reference:
            gt32, pred32, tp32, d32 = (v.astype(np.float32) for v in (gt, pred, tp, d))
            precision = tp32 / pred32
            recall = tp32 / gt32
            f1 = 2 * precision * recall / (precision + recall)
            derr = d32 / (tp32 + np.float32(1e-5))
            out = {"F1": f1, "precision": precision, "recall": recall, "distance_error": derr}
            return {k: v.astype(np.float64) for k, v in out.items()}
        precision = np.where(pred > 0, tp / np.maximum(pred, 1), 0.0)
        recall = np.where(gt > 0, tp / np.maximum(gt, 1), 0.0)
        denominator = precision + recall
        f1 = np.where(denominator > 0, 2 * precision * recall / np.where(denominator > 0, denominator, 1), 0.0)
        derr = np.where(tp > 0, d / np.maximum(tp, 1), 0.0)
    return {"F1": f1, "precision": precision, "recall": recall, "distance_error": derr}
