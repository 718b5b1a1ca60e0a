"""The CurveLanes scoring steps on numpy arrays, without torch: vega's spline, the 224 x 224 drawing, the mask
IoUs and the per-frame hits at every score threshold (:mod:`drivemetrics.lane.curvelanes` has the rules, the tensor
kernels and the Metric classes built on these; ``curvelanes-eval`` runs on this module alone on the CPU).

With ``device`` (a torch device) the intersections of a frame's drawn lanes are one matrix product of their masks
there; the drawing stays OpenCV's (the official rasteriser).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from drivemetrics._internal.compat import Compat

__all__ = [
    "EVAL_SIZE",
    "LINE_WIDTH",
    "SCORE_THRESHOLDS",
    "UFLDV2_FRAME",
    "UFLDV2_LINE_WIDTH",
    "curvelanes_spline",
    "draw_lanes",
    "frame_hits",
    "mask_ious",
    "merge_repeats",
    "score_lane_frames",
    "ufldv2_counts",
]

#: vega's score thresholds (CondLaneNet's test_curvelanes.py); 0.5 is the papers' number.
SCORE_THRESHOLDS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
EVAL_SIZE = 224
LINE_WIDTH = 5


def curvelanes_spline(lanes: Sequence[np.ndarray]) -> list[np.ndarray]:
    """vega's ``spline_interp(step_t=1)`` of many lanes: ``(n, 2)`` float64 points -> ``(k, 2)`` float64 samples.

    Natural cubic spline in chord length (the official arithmetic, operation by operation, so the same bits);
    samples at ``t = 0, 1, ... < h`` on every interval, then the last point; 2-point lanes are straight, lanes of
    fewer than 2 points are returned as they are. A zero chord makes NaN samples, as in the official code. The
    lanes of one point count are computed together.

    Examples:
        >>> import numpy as np
        >>> from drivemetrics.lane.curvelanes import curvelanes_spline
        >>> curvelanes_spline([np.array([[0.0, 0.0], [3.0, 4.0]])])[0].tolist()
        [[0.0, 0.0], [0.6, 0.8], [1.2, 1.6], [1.7999999999999998, 2.4000000000000004], [2.4, 3.2], [3.0, 4.0]]
    """
    out: list[np.ndarray] = [np.asarray(lane, dtype=np.float64).reshape(-1, 2) for lane in lanes]
    by_count: dict[int, list[int]] = {}
    for k, lane in enumerate(out):
        if len(lane) >= 2:
            by_count.setdefault(len(lane), []).append(k)
    for n, members in by_count.items():
        p = np.stack([out[k] for k in members])  # G x n x 2
        x, y = p[..., 0], p[..., 1]
        with np.errstate(divide="ignore", invalid="ignore"):
            if n == 2:
                dx, dy = x[:, 0] - x[:, 1], y[:, 0] - y[:, 1]
                h = np.sqrt(dx * dx + dy * dy)[:, None]
                bx, by = ((x[:, 1] - x[:, 0]) / h[:, 0])[:, None], ((y[:, 1] - y[:, 0]) / h[:, 0])[:, None]
                cx = cy = dxc = dyc = np.zeros_like(bx)
            else:
                dx, dy = x[:, :-1] - x[:, 1:], y[:, :-1] - y[:, 1:]
                h = np.sqrt(dx * dx + dy * dy)  # G x (n - 1)
                a_, b_, c_ = h[:, :-1], 2 * (h[:, :-1] + h[:, 1:]), h[:, 1:].copy()
                sx = (x[:, 1:] - x[:, :-1]) / h
                sy = (y[:, 1:] - y[:, :-1]) / h
                tx, ty = 6 * (sx[:, 1:] - sx[:, :-1]), 6 * (sy[:, 1:] - sy[:, :-1])
                d_x, d_y = np.empty_like(tx), np.empty_like(ty)
                c_[:, 0] = c_[:, 0] / b_[:, 0]
                d_x[:, 0], d_y[:, 0] = tx[:, 0] / b_[:, 0], ty[:, 0] / b_[:, 0]
                for i in range(1, n - 2):  # the Thomas sweep runs over the knots, every lane at once
                    base = b_[:, i] - a_[:, i] * c_[:, i - 1]
                    c_[:, i] = c_[:, i] / base
                    d_x[:, i] = (tx[:, i] - a_[:, i] * d_x[:, i - 1]) / base
                    d_y[:, i] = (ty[:, i] - a_[:, i] * d_y[:, i - 1]) / base
                mx, my = np.zeros((len(members), n)), np.zeros((len(members), n))
                mx[:, n - 2], my[:, n - 2] = d_x[:, n - 3], d_y[:, n - 3]
                for i in range(n - 4, -1, -1):
                    mx[:, i + 1] = d_x[:, i] - c_[:, i] * mx[:, i + 2]
                    my[:, i + 1] = d_y[:, i] - c_[:, i] * my[:, i + 2]
                mx[:, 0] = mx[:, -1] = my[:, 0] = my[:, -1] = 0.0
                bx = (x[:, 1:] - x[:, :-1]) / h - (2 * h * mx[:, :-1] + h * mx[:, 1:]) / 6
                by = (y[:, 1:] - y[:, :-1]) / h - (2 * h * my[:, :-1] + h * my[:, 1:]) / 6
                cx, cy = mx[:, :-1] / 2, my[:, :-1] / 2
                dxc, dyc = (mx[:, 1:] - mx[:, :-1]) / (6 * h), (my[:, 1:] - my[:, :-1]) / (6 * h)
            # samples t = 0, 1, ... < h of every interval: one flat index over all intervals of the group
            steps = np.where(h > 0, np.ceil(np.nan_to_num(h, nan=0.0, posinf=0.0)), 0).astype(np.int64)
            flat = steps.ravel()
            seg = np.repeat(np.arange(flat.size), flat)
            t = (np.arange(seg.size) - np.repeat(np.cumsum(flat) - flat, flat)).astype(np.float64)
            ax_, ay_ = x[:, :-1].ravel()[seg], y[:, :-1].ravel()[seg]
            sx_ = ax_ + bx.ravel()[seg] * t + cx.ravel()[seg] * t * t + dxc.ravel()[seg] * t * t * t
            sy_ = ay_ + by.ravel()[seg] * t + cy.ravel()[seg] * t * t + dyc.ravel()[seg] * t * t * t
        per_lane = steps.sum(axis=1)
        cuts = np.cumsum(per_lane)[:-1]
        for g, (k, xs, ys) in enumerate(zip(members, np.split(sx_, cuts), np.split(sy_, cuts), strict=True)):
            out[k] = np.concatenate([np.stack([xs, ys], axis=1), p[g, -1:]], axis=0)
    return out


def merge_repeats(points: np.ndarray) -> np.ndarray:
    """``points`` without the points equal to their predecessor."""
    keep = np.ones(len(points), dtype=bool)
    keep[1:] = (points[1:] != points[:-1]).any(axis=1)
    return points[keep]


def draw_lanes(
    samples: list[np.ndarray], where: str, size: tuple[int, int] = (EVAL_SIZE, EVAL_SIZE), width: int = LINE_WIDTH
) -> np.ndarray:
    """``(n, h * w)`` uint8 0 / 1 drawings (``size = (w, h)``): consecutive samples truncated to int joined by
    ``width`` px OpenCV lines (a lane of < 2 samples draws nothing); NaN samples raise ``ValueError`` naming
    ``where``."""
    from drivemetrics.lane.culane_official import load_cv2

    cv2: Any = load_cv2("the CurveLanes lane metric")
    w, h = size
    out = np.zeros((len(samples), h * w), dtype=np.uint8)
    for k, s in enumerate(samples):
        if len(s) < 2:
            continue  # one point draws nothing
        if not np.isfinite(s).all():
            raise ValueError(
                f"{where}: a lane with a repeated consecutive point (chord length 0) makes NaN spline points (the "
                "official calc_iou raises `cannot convert float NaN to integer`)"
            )
        px = np.trunc(s).astype(np.int64)
        if np.abs(px).max() >= 2**31:
            px = np.clip(px, -(2**31) + 1, 2**31 - 1)
        cv2.polylines(out[k].reshape(h, w), [px.astype(np.int32).reshape(-1, 1, 2)], False, 1, thickness=width)
    return out


def mask_ious(a: np.ndarray, c: np.ndarray, device: Any = None) -> np.ndarray:
    """``(n_a, n_c)`` float64 IoU of 0 / 1 masks ``(n, pixels)`` (0 for an empty union): the intersections are a
    float32 matrix product (exact integers below 2**24 pixels), on ``device`` when one is given.

    Examples:
        >>> import numpy as np
        >>> from drivemetrics.lane.curvelanes_scoring import mask_ious
        >>> mask_ious(np.array([[1, 1, 0, 0]], np.uint8), np.array([[0, 1, 1, 0], [0, 0, 0, 0]], np.uint8))
        array([[0.33333333, 0.        ]])
    """
    if device is None:
        af, cf = a.astype(np.float32), c.astype(np.float32)
        inter = (af @ cf.T).astype(np.int64)
    else:
        import torch

        at = torch.from_numpy(a).to(device, torch.float32)
        ct = torch.from_numpy(c).to(device, torch.float32)
        inter = (at @ ct.T).round().to(torch.int64).cpu().numpy()
    sa = np.count_nonzero(a, axis=1).astype(np.int64)
    sc = np.count_nonzero(c, axis=1).astype(np.int64)
    union = sa[:, None] + sc[None, :] - inter
    return np.where(union > 0, inter / np.maximum(union, 1), 0.0)


def frame_hits(iou: np.ndarray, kept: np.ndarray, iou_threshold: float) -> np.ndarray:
    """Hits (matched pairs with IoU ``> iou_threshold``) of ``linear_sum_assignment(1 - IoU)`` on the GT x kept
    predictions of one frame, for each row of ``kept`` (``(T, n_pred)`` bools); equal rows are matched once."""
    from scipy.optimize import linear_sum_assignment

    hits = np.zeros(len(kept), dtype=np.int64)
    done: dict[bytes, int] = {}
    for j, row in enumerate(kept):
        key = row.tobytes()
        if key not in done:
            cols = np.flatnonzero(row)
            if cols.size == 0 or iou.shape[0] == 0:
                done[key] = 0
            else:
                sub = iou[:, cols]
                r, c = linear_sum_assignment(1 - sub)
                done[key] = int((sub[r, c] > iou_threshold).sum())
        hits[j] = done[key]
    return hits


def score_lane_frames(
    gts: list[list[np.ndarray]],
    gt_sizes: np.ndarray,
    preds: list[list[np.ndarray]],
    scores: list[np.ndarray],
    pred_sizes: np.ndarray,
    thresholds: Sequence[float],
    iou_threshold: float = 0.5,
    compat: Compat = "default",
    device: Any = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(hits (F, T), predictions kept (F, T), GT lanes (F,))`` of frames given as lists of non-empty ``(n, 2)``
    lanes, each frame's lanes scaled by ``x / (W / 224)``, ``y / (H / 224)`` of its own size (``(F, 2)`` width,
    height), splined (all lanes of one point count at once) and drawn once; a prediction with score NaN is always
    kept, else when ``score > t``. ``compat="default"`` merges repeated consecutive points first.

    Examples:
        >>> import numpy as np
        >>> from drivemetrics.lane.curvelanes_scoring import score_lane_frames
        >>> gt = np.array([[1000.0, 1439.0], [1200.0, 700.0]])
        >>> size = np.array([[2560.0, 1440.0]])
        >>> hits, kept, n_gt = score_lane_frames(
        ...     [[gt]], size, [[gt, gt + [600.0, 0.0]]], [np.array([0.9, 0.3])], size, (0.1, 0.5)
        ... )
        >>> hits.tolist(), kept.tolist(), n_gt.tolist()
        ([[1, 1]], [[2, 1]], [1])
    """
    t = np.asarray(thresholds, dtype=np.float64)
    f_count = len(gts)
    hits = np.zeros((f_count, len(t)), dtype=np.int64)
    n_pred = np.zeros((f_count, len(t)), dtype=np.int64)
    n_gt = np.array([len(g) for g in gts], dtype=np.int64)

    def scaled(frames: list[list[np.ndarray]], sizes: np.ndarray) -> list[np.ndarray]:
        ratios = np.stack([np.true_divide(sizes[:, 0], EVAL_SIZE), np.true_divide(sizes[:, 1], EVAL_SIZE)], axis=1)
        lanes = [lane / ratios[i] for i, frame in enumerate(frames) for lane in frame]
        return [merge_repeats(lane) for lane in lanes] if compat == "default" else lanes

    gt_samples = _drawable(curvelanes_spline(scaled(gts, gt_sizes)), "target")
    pr_samples = _drawable(curvelanes_spline(scaled(preds, pred_sizes)), "preds")
    g_start = np.concatenate([[0], np.cumsum(n_gt)])
    p_start = np.concatenate([[0], np.cumsum([len(p) for p in preds])]).astype(np.int64)
    canvas = np.zeros((0, EVAL_SIZE * EVAL_SIZE), dtype=np.float32)  # reused frame after frame
    for i in range(f_count):
        s = np.asarray(scores[i], dtype=np.float64)
        kept = np.isnan(s)[None, :] | (s[None, :] > t[:, None])
        n_pred[i] = kept.sum(1)
        if not (n_gt[i] and len(s)):
            continue
        lanes = gt_samples[g_start[i] : g_start[i + 1]] + pr_samples[p_start[i] : p_start[i + 1]]
        if len(lanes) > len(canvas):
            canvas = np.zeros((len(lanes), EVAL_SIZE * EVAL_SIZE), dtype=np.float32)
        iou = _frame_ious(lanes, int(n_gt[i]), canvas[: len(lanes)], device)
        hits[i] = frame_hits(iou, kept, iou_threshold)
    return hits, n_pred, n_gt


def _drawable(samples: list[np.ndarray], where: str) -> list[np.ndarray | None]:
    """The int32 pixels ``(k, 1, 2)`` OpenCV joins of every lane (None: fewer than 2 samples, nothing drawn), as
    :func:`draw_lanes` makes them; NaN samples raise ``ValueError`` naming ``where``."""
    out: list[np.ndarray | None] = []
    for lane in samples:
        if len(lane) < 2:
            out.append(None)
            continue
        if not np.isfinite(lane).all():
            raise ValueError(
                f"{where}: a lane with a repeated consecutive point (chord length 0) makes NaN spline points (the "
                "official calc_iou raises `cannot convert float NaN to integer`)"
            )
        px = np.trunc(lane).astype(np.int64)
        if np.abs(px).max() >= 2**31:
            px = np.clip(px, -(2**31) + 1, 2**31 - 1)
        out.append(px.astype(np.int32).reshape(-1, 1, 2))
    return out


def _frame_ious(lanes: list[np.ndarray | None], n_gt: int, canvas: np.ndarray, device: Any) -> np.ndarray:
    """``(n_gt, n_pred)`` IoUs of one frame's lanes (GT first) drawn as 0 / 1 float32 rows of ``canvas``: the Gram
    matrix of the rows holds every intersection and, on its diagonal, every lane's pixel count (exact integers)."""
    from drivemetrics.lane.culane_official import load_cv2

    cv2: Any = load_cv2("the CurveLanes lane metric")
    canvas[:] = 0.0
    for k, px in enumerate(lanes):
        if px is not None:  # the same pixels as on a uint8 image: only the value written differs
            cv2.polylines(canvas[k].reshape(EVAL_SIZE, EVAL_SIZE), [px], False, 1.0, thickness=LINE_WIDTH)
    if device is None:
        gram = (canvas @ canvas.T).astype(np.int64)
    else:
        import torch

        rows = torch.from_numpy(canvas).to(device)
        gram = (rows @ rows.T).round().to(torch.int64).cpu().numpy()
    sums = np.diagonal(gram)
    inter = gram[:n_gt, n_gt:]
    union = sums[:n_gt, None] + sums[None, n_gt:] - inter
    return np.where(union > 0, inter / np.maximum(union, 1), 0.0)


#: UFLDv2's CurveLanes evaluation (``evaluation/eval_wrapper.py::call_curvelane_eval``): lanes written at 2560 x 1440,
#: then its CULane C++ ``evaluate -w 5 -t 0.5 -c 224 -r 224 -x 224/2560 -y 224/1440``.
UFLDV2_FRAME = (2560.0, 1440.0)
UFLDV2_LINE_WIDTH = 5


def ufldv2_counts(
    gts: list[list[np.ndarray]],
    gt_sizes: np.ndarray,
    preds: list[list[np.ndarray]],
    pred_sizes: np.ndarray,
    empty_gt: Sequence[int] | None = None,
    iou_threshold: float = 0.5,
) -> np.ndarray:
    """``(F, 3)`` int64 ``[tp, fp, fn]`` per frame as UFLDv2 scores CurveLanes (its patched CULane C++ tool).

    Its converter (``scripts/make_curvelane_as_culane_test.py``) scales every GT lane to 2560 x 1440 (``x * (2560 /
    W)``, ``y * (1440 / H)`` in double) and sorts its points by ``y``; the predictions (the lanes kept, in their own
    frame ``pred_sizes``) are scaled the same way, unsorted. The tool reads each point as a double, multiplies it by
    the factor ``224 / 2560`` (``224 / 1440``) held in a C++ ``float`` and stores a ``cv::Point2f``; then the CULane
    rules on a 224 x 224 image (:mod:`drivemetrics.lane.culane_official`: the natural cubic spline of lanes of 3 or
    more points, ``cvRound``, ``cv::line`` 5 px wide, its Kuhn-Munkres, TP when IoU > ``iou_threshold``). ``empty_gt``:
    GT lanes without points per frame (the converter writes an empty line: a lane that is never matched).

    Examples:
        >>> import numpy as np
        >>> from drivemetrics.lane.curvelanes_scoring import ufldv2_counts
        >>> gt = np.array([[1000.0, 1439.0], [1100.0, 1000.0], [1200.0, 700.0]])
        >>> size = np.array([[2560.0, 1440.0]])
        >>> ufldv2_counts([[gt]], size, [[gt, gt + [600.0, 0.0]]], size).tolist()
        [[1, 1, 0]]
    """
    from drivemetrics.lane.culane_official import (
        matched_ious,
        official_iou_from_pixels,
        official_lanes_pixels,
        official_match,
    )

    fx, fy = float(np.float32(EVAL_SIZE / UFLDV2_FRAME[0])), float(np.float32(EVAL_SIZE / UFLDV2_FRAME[1]))

    def read(lane: np.ndarray, size: np.ndarray, sort: bool) -> np.ndarray:
        x = lane[:, 0] * (UFLDV2_FRAME[0] / float(size[0]))
        y = lane[:, 1] * (UFLDV2_FRAME[1] / float(size[1]))
        if sort:  # sorted(zip(y, x)): by y, then x
            order = np.lexsort((x, y))
            x, y = x[order], y[order]
        return np.stack([(x * fx).astype(np.float32), (y * fy).astype(np.float32)], axis=1)

    g_lanes = [read(lane, gt_sizes[i], True) for i, frame in enumerate(gts) for lane in frame]
    p_lanes = [read(lane, pred_sizes[i], False) for i, frame in enumerate(preds) for lane in frame]
    g_px, p_px = official_lanes_pixels(g_lanes), official_lanes_pixels(p_lanes)
    out = np.zeros((len(gts), 3), dtype=np.int64)
    g0 = p0 = 0
    for i, (g, p) in enumerate(zip(gts, preds, strict=True)):
        n_g = len(g) + (int(empty_gt[i]) if empty_gt is not None else 0)
        tp = 0
        if g and p:
            iou = official_iou_from_pixels(
                g_px[g0 : g0 + len(g)], p_px[p0 : p0 + len(p)], EVAL_SIZE, EVAL_SIZE, UFLDV2_LINE_WIDTH
            )
            tp = int((matched_ious(iou, official_match(iou)) > iou_threshold).sum())
        g0, p0 = g0 + len(g), p0 + len(p)
        out[i] = tp, len(p) - tp, n_g - tp
    return out
