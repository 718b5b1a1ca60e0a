"""CULane ``compat="reference"``: the official C++ evaluator (SCNN ``tools/lane_evaluation``) step by step.

numpy only (``cv2``, from the ``culane`` extra, is imported when a lane is drawn); files are read by
:mod:`drivemetrics.lane.io` and scored through :func:`drivemetrics.lane.culane.culane_matches` with
``compat="reference"``, which calls this module per image. What the official tool does, and this module with it:

* every text line of a ``.lines.txt`` file is a lane, also a blank line (0 points) or a 1-point line; such a lane
  has IoU 0 with every other lane (the tool prints "lane size must be greater or equal to 2" and goes on);
* points are ``cv::Point2f`` (float32); lanes of 3 or more points go through the tool's natural cubic spline
  (chord-length parameter, 50 steps per interval, computed in double from the float points, stored as float32);
  2-point lanes are kept as they are;
* every point becomes an integer pixel by ``cvRound`` (round half to even) and consecutive points are joined with
  ``cv::line`` of thickness ``line_width`` (8-connected) on an ``(height, width)`` image;
* repeated consecutive points: a lane whose points all fall in one pixel (e.g. ``x y x y``) is a disc of diameter
  ``line_width`` (``cv::line`` from a point to itself draws its round caps); in a lane of 3 or more points a repeated
  point makes a chord length 0, the spline's ``0 / 0`` turns every interpolated point into NaN, which ``cvRound``
  maps to ``INT_MIN``: the lane is drawn as the one segment from ``(INT_MIN, INT_MIN)`` to its last point (clipped
  to the image), as the official tool draws it;
* IoU = intersection / union of the drawn pixels (NaN when both drawings are empty, as the tool's 0 / 0);
* matching: the tool's Kuhn-Munkres on the IoU matrix with its 1e-2 equality tolerance; a GT lane is a TP when
  its match has IoU strictly above the threshold; FP = predicted lines - TP, FN = GT lines - TP; an empty GT or
  prediction list short-cuts to all FP / all FN.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from drivemetrics._internal.extras import require

__all__ = [
    "CV2_VERSIONS",
    "SPLINE_STEPS",
    "cv_round",
    "draw_official_lane",
    "load_cv2",
    "matched_ious",
    "official_iou_from_pixels",
    "official_iou_matrix",
    "official_iou_on_device",
    "official_lane_pixels",
    "official_lanes_pixels",
    "official_match",
    "official_spline",
    "official_splines",
]

SPLINE_STEPS = 50


def official_spline(points: np.ndarray, steps: int = SPLINE_STEPS) -> np.ndarray:
    """The official tool's natural cubic spline of a lane of ``n >= 3`` points: ``(n - 1) * steps + 1`` x 2 float32.

    Parameter = chord length between consecutive points; the second derivatives are 0 at both ends; each interval
    is sampled at ``k * h / steps``, ``k = 0 .. steps - 1``, then the last input point is appended.
    """
    p = np.asarray(points, dtype=np.float32)
    n = p.shape[0]
    if n < 3:
        raise ValueError(f"official_spline needs >= 3 points, got {n}")
    d = (p[1:] - p[:-1]).astype(np.float64)  # float32 differences, as the C++ Point2f arithmetic
    with np.errstate(divide="ignore", invalid="ignore"):
        h = np.sqrt(d[:, 0] ** 2 + d[:, 1] ** 2)
        slope = d / h[:, None]
        a, b, c = h[:-1].copy(), 2 * (h[:-1] + h[1:]), h[1:].copy()
        rhs = 6 * (slope[1:] - slope[:-1])  # (n - 2) x 2
        c[0] = c[0] / b[0]
        rhs[0] = rhs[0] / b[0]
        for i in range(1, n - 2):
            tmp = b[i] - a[i] * c[i - 1]
            c[i] = c[i] / tmp
            rhs[i] = (rhs[i] - a[i] * rhs[i - 1]) / tmp
        m = np.zeros((n, 2))
        m[n - 2] = rhs[n - 3]
        for i in range(n - 4, -1, -1):
            m[i + 1] = rhs[i] - c[i] * m[i + 2]
        m[0] = m[n - 1] = 0.0
        coef_b = slope - (2 * h[:, None] * m[:-1] + h[:, None] * m[1:]) / 6
        coef_c = m[:-1] / 2
        coef_d = (m[1:] - m[:-1]) / (6 * h[:, None])
        t = (h / steps)[:, None] * np.arange(steps)  # (n - 1) x steps
        t = t[..., None]
        curve = (
            p[:-1, None, :].astype(np.float64) + coef_b[:, None] * t + coef_c[:, None] * t**2 + coef_d[:, None] * t**3
        )
    return np.concatenate([curve.reshape(-1, 2).astype(np.float32), p[-1:]], axis=0)


def official_splines(points: np.ndarray, steps: int = SPLINE_STEPS) -> np.ndarray:
    """:func:`official_spline` of ``G`` lanes of the same point count at once: ``(G, n, 2)`` -> ``(G, (n - 1) *
    steps + 1, 2)`` float32, the same operations element by element (so the same bits as lane by lane)."""
    p = np.asarray(points, dtype=np.float32)
    g, n = p.shape[0], p.shape[1]
    if n < 3:
        raise ValueError(f"official_splines needs >= 3 points, got {n}")
    d = (p[:, 1:] - p[:, :-1]).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        h = np.sqrt(d[..., 0] ** 2 + d[..., 1] ** 2)  # G x (n - 1)
        slope = d / h[..., None]
        a, b, c = h[:, :-1].copy(), 2 * (h[:, :-1] + h[:, 1:]), h[:, 1:].copy()
        rhs = 6 * (slope[:, 1:] - slope[:, :-1])  # G x (n - 2) x 2
        c[:, 0] = c[:, 0] / b[:, 0]
        rhs[:, 0] = rhs[:, 0] / b[:, 0, None]
        for i in range(1, n - 2):
            tmp = b[:, i] - a[:, i] * c[:, i - 1]
            c[:, i] = c[:, i] / tmp
            rhs[:, i] = (rhs[:, i] - a[:, i, None] * rhs[:, i - 1]) / tmp[:, None]
        m = np.zeros((g, n, 2))
        m[:, n - 2] = rhs[:, n - 3]
        for i in range(n - 4, -1, -1):
            m[:, i + 1] = rhs[:, i] - c[:, i, None] * m[:, i + 2]
        m[:, 0] = m[:, n - 1] = 0.0
        hh = h[..., None]
        coef_b = slope - (2 * hh * m[:, :-1] + hh * m[:, 1:]) / 6
        coef_c = m[:, :-1] / 2
        coef_d = (m[:, 1:] - m[:, :-1]) / (6 * hh)
        t = (h / steps)[..., None] * np.arange(steps)  # G x (n - 1) x steps
        t = t[..., None]
        curve = (
            p[:, :-1, None, :].astype(np.float64)
            + coef_b[:, :, None] * t
            + coef_c[:, :, None] * t**2
            + coef_d[:, :, None] * t**3
        )
    return np.concatenate([curve.reshape(g, -1, 2).astype(np.float32), p[:, -1:]], axis=1)


def cv_round(values: np.ndarray) -> np.ndarray:
    """OpenCV's float -> int conversion (``cvRound``): round half to even; NaN / out of range -> ``INT_MIN``."""
    v = np.asarray(values, dtype=np.float32)
    ok = np.isfinite(v) & (np.abs(v) < 2.0**31 - 128)
    out = np.full(v.shape, np.iinfo(np.int32).min, dtype=np.int32)
    out[ok] = np.rint(v[ok]).astype(np.int32)
    return out


def official_lane_pixels(points: np.ndarray, steps: int = SPLINE_STEPS) -> np.ndarray | None:
    """Integer pixels ``(k, 2)`` (x, y) the official tool joins with ``cv::line``; None for lanes of < 2 points."""
    p = np.asarray(points, dtype=np.float32).reshape(-1, 2)
    if p.shape[0] < 2:
        return None
    return _pixels_of_curve(p if p.shape[0] == 2 else official_spline(p, steps))


def official_lanes_pixels(lanes: list[np.ndarray], steps: int = SPLINE_STEPS) -> list[np.ndarray | None]:
    """:func:`official_lane_pixels` of many lanes, the splines of lanes with the same point count computed at once."""
    points = [np.asarray(lane, dtype=np.float32).reshape(-1, 2) for lane in lanes]
    out: list[np.ndarray | None] = [None] * len(points)
    by_count: dict[int, list[int]] = {}
    for k, p in enumerate(points):
        if p.shape[0] == 2:
            out[k] = _pixels_of_curve(p)
        elif p.shape[0] >= 3:
            by_count.setdefault(p.shape[0], []).append(k)
    for members in by_count.values():
        curves = official_splines(np.stack([points[k] for k in members]), steps)
        for k, curve in zip(members, curves, strict=True):
            out[k] = _pixels_of_curve(curve)
    return out


def _pixels_of_curve(curve: np.ndarray) -> np.ndarray:
    pixels = cv_round(curve)
    # consecutive repeats only redraw the same round cap: dropping them leaves the drawing unchanged
    keep = np.ones(len(pixels), dtype=bool)
    keep[1:] = (pixels[1:] != pixels[:-1]).any(axis=1)
    pixels = pixels[keep]
    if len(pixels) == 1:  # every point in one pixel: cv::line(p, p) still draws its round caps, a one-point
        pixels = np.repeat(pixels, 2, axis=0)  # polyline draws nothing, so keep a zero-length segment
    return pixels


#: OpenCV releases whose thick lines equal the official tool's on lanes leaving the image (4.13 draws them otherwise)
CV2_VERSIONS = ((4, 10), (4, 13))
_checked_cv2: list[bool] = []


def load_cv2(what: str = "CULane compat='reference'") -> object:
    """``cv2``, with an install hint naming ``what`` (the path that draws) when missing and a warning (once) for
    releases that draw differently."""
    cv2 = require("culane", "cv2", what)
    if not _checked_cv2:
        _checked_cv2.append(True)
        version = tuple(int(v) for v in cv2.__version__.split(".")[:2])
        if not CV2_VERSIONS[0] <= version < CV2_VERSIONS[1]:
            import warnings

            warnings.warn(
                f"OpenCV {cv2.__version__}: thick lines crossing the image border may differ by a few pixels from "
                "the official CULane tool's (exact with opencv-python-headless >= 4.10, < 4.13)",
                stacklevel=3,
            )
    return cv2


def draw_official_lane(points: np.ndarray, height: int, width: int, line_width: int) -> np.ndarray | None:
    """``(height, width)`` uint8 0/1 drawing of one lane as the official tool makes it (None for < 2 points)."""
    cv2 = load_cv2()
    pixels = official_lane_pixels(points)
    if pixels is None:
        return None
    image = np.zeros((height, width), dtype=np.uint8)
    cv2.polylines(image, [pixels.reshape(-1, 1, 2)], isClosed=False, color=1, thickness=int(line_width))
    return image


def official_iou_matrix(
    gt_lanes: list[np.ndarray], pred_lanes: list[np.ndarray], height: int = 590, width: int = 1640, line_width: int = 30
) -> np.ndarray:
    """``(n_gt, n_pred)`` IoU matrix of the official tool (0 for lanes of < 2 points, NaN for 0 / 0)."""
    if not gt_lanes or not pred_lanes:
        return np.zeros((len(gt_lanes), len(pred_lanes)))
    return official_iou_from_pixels(
        official_lanes_pixels(gt_lanes), official_lanes_pixels(pred_lanes), height, width, line_width
    )


def official_iou_from_pixels(
    gt_pixels: list[np.ndarray | None],
    pred_pixels: list[np.ndarray | None],
    height: int = 590,
    width: int = 1640,
    line_width: int = 30,
) -> np.ndarray:
    """:func:`official_iou_matrix` of lanes given as :func:`official_lane_pixels` (None: fewer than 2 points).

    Each lane is drawn on the part of the image it can reach (its pixels' box grown by more than the line's
    reach, cut to the image): ``cv::line`` works in integer (fixed-point) coordinates, so moving a drawing by whole
    pixels moves its pixels and nothing else, and every border of that part the lane could cross is the image's
    own. A lane with a point far outside the image (e.g. ``INT_MIN`` from a NaN) is drawn on the whole image.
    """
    iou = np.zeros((len(gt_pixels), len(pred_pixels)))
    if not gt_pixels or not pred_pixels:
        return iou
    cv2 = load_cv2()
    gt = [_draw_cropped(cv2, p, height, width, line_width) for p in gt_pixels]
    pred = [_draw_cropped(cv2, p, height, width, line_width) for p in pred_pixels]
    gt_sum = [int(np.count_nonzero(d[0])) if d is not None else 0 for d in gt]
    pred_sum = [int(np.count_nonzero(d[0])) if d is not None else 0 for d in pred]
    for i, g in enumerate(gt):
        if g is None:
            continue
        gm, gy, gx = g
        for j, q in enumerate(pred):
            if q is None:
                continue
            pm, py, px = q
            y0, y1 = max(gy, py), min(gy + gm.shape[0], py + pm.shape[0])
            x0, x1 = max(gx, px), min(gx + gm.shape[1], px + pm.shape[1])
            inter = 0
            if y1 > y0 and x1 > x0:
                a = gm[y0 - gy : y1 - gy, x0 - gx : x1 - gx]
                b = pm[y0 - py : y1 - py, x0 - px : x1 - px]
                inter = int(np.count_nonzero(a & b))
            union = gt_sum[i] + pred_sum[j] - inter
            iou[i, j] = inter / union if union else math.nan
    return iou


def official_iou_on_device(
    gt_pixels: Sequence[np.ndarray | None],
    pred_pixels: Sequence[np.ndarray | None],
    height: int,
    width: int,
    line_width: int,
    device: object,
) -> np.ndarray:
    """:func:`official_iou_from_pixels` with the intersections counted on a torch ``device``: the lanes are drawn
    as there (OpenCV, on the host), their masks placed in the frame's common box on the device, and every
    (GT, prediction) intersection is one entry of a matrix product of the masks (0 / 1 in float32: exact integer
    sums below 2**24 pixels); the same IoUs, bit for bit."""
    import torch

    iou = np.zeros((len(gt_pixels), len(pred_pixels)))
    if not gt_pixels or not pred_pixels:
        return iou
    cv2 = load_cv2()
    drawn = [_draw_cropped(cv2, p, height, width, line_width) for p in [*gt_pixels, *pred_pixels]]
    spots = []
    for d in drawn:
        if d is None:
            spots.append((np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)))
            continue
        ys, xs = np.nonzero(d[0])
        spots.append((ys.astype(np.int64) + d[1], xs.astype(np.int64) + d[2]))
    rows = np.concatenate([s[0] for s in spots])
    cols = np.concatenate([s[1] for s in spots])
    lane = np.repeat(np.arange(len(spots)), [len(s[0]) for s in spots])
    sums = np.bincount(lane, minlength=len(spots))
    n_gt = len(gt_pixels)
    if rows.size:
        top, left = int(rows.min()), int(cols.min())
        box_w = int(cols.max()) - left + 1
        box = (int(rows.max()) - top + 1) * box_w
        flat = torch.from_numpy((rows - top) * box_w + (cols - left)).to(device)
        masks = torch.zeros((len(spots), box), dtype=torch.float32, device=device)
        masks[torch.from_numpy(lane).to(device), flat] = 1.0
        inter = (masks[:n_gt] @ masks[n_gt:].T).round().to(torch.int64).cpu().numpy()
    else:
        inter = np.zeros((n_gt, len(pred_pixels)), dtype=np.int64)
    for i in range(n_gt):
        for j in range(len(pred_pixels)):
            if drawn[i] is None or drawn[n_gt + j] is None:
                continue
            union = int(sums[i]) + int(sums[n_gt + j]) - int(inter[i, j])
            iou[i, j] = int(inter[i, j]) / union if union else math.nan
    return iou


#: Points this far outside the image (pixels) make a lane drawn on the whole image (no crop).
_FAR = 1 << 20


def _draw_cropped(
    cv2: object, pixels: np.ndarray | None, height: int, width: int, line_width: int
) -> tuple[np.ndarray, int, int] | None:
    """``(drawing, top, left)``: the lane drawn as :func:`draw_official_lane` does, on the image rows ``top:`` and
    columns ``left:`` it can reach (None for lanes of < 2 points)."""
    if pixels is None:
        return None
    # the farthest pixel of a thick line or its round caps lies line_width // 2 + 1 from its points (ThickLine's
    # offsets and cap radius round (line_width / 2) * 2**16 to a pixel): two more pixels of margin
    reach = int(line_width) // 2 + 3
    (lo_x, lo_y), (hi_x, hi_y) = pixels.min(axis=0).tolist(), pixels.max(axis=0).tolist()
    if min(lo_x, lo_y) < -_FAR or max(hi_x, hi_y) > _FAR:
        top = left = 0
        bottom, right = height, width
    else:
        left, top = max(0, lo_x - reach), max(0, lo_y - reach)
        right, bottom = min(width, hi_x + reach + 1), min(height, hi_y + reach + 1)
        if right <= left or bottom <= top:  # nothing of the lane reaches the image
            return np.zeros((0, 0), dtype=np.uint8), 0, 0
    image = np.zeros((bottom - top, right - left), dtype=np.uint8)
    shifted = (pixels - np.array([left, top], dtype=pixels.dtype)).reshape(-1, 1, 2)
    cv2.polylines(image, [shifted], isClosed=False, color=1, thickness=int(line_width))  # type: ignore[attr-defined]
    return image, top, left


def official_match(iou: np.ndarray) -> np.ndarray:
    """GT -> prediction match (``-1`` = none) of the official Kuhn-Munkres (1e-2 tolerance) on ``(n_gt, n_pred)``."""
    n_gt, n_pred = iou.shape
    if n_gt == 0 or n_pred == 0:
        return np.full(n_gt, -1, dtype=np.int64)
    swap = n_gt > n_pred
    mat = (iou.T if swap else iou).tolist()
    n_left, n_right = len(mat), len(mat[0])
    left_match, right_match = [-1] * n_left, [-1] * n_right
    right_w = [0.0] * n_right
    left_w = []
    for row in mat:
        w = -1e5
        for v in row:
            if w < v:  # NaN never compares true, as in C++
                w = v
        left_w.append(w)
    left_used, right_used = [False] * n_left, [False] * n_right

    def dfs(u: int) -> bool:
        left_used[u] = True
        for v in range(n_right):
            if not right_used[v] and abs(left_w[u] + right_w[v] - mat[u][v]) < 1e-2:
                right_used[v] = True
                if right_match[v] == -1 or dfs(right_match[v]):
                    right_match[v] = u
                    left_match[u] = v
                    return True
        return False

    for u in range(n_left):
        while True:
            left_used[:] = [False] * n_left
            right_used[:] = [False] * n_right
            if dfs(u):
                break
            d = 1e10
            for i in range(n_left):
                if left_used[i]:
                    for j in range(n_right):
                        if not right_used[j]:
                            cand = left_w[i] + right_w[j] - mat[i][j]
                            if cand < d:  # std::min(d, cand) keeps d when cand is NaN
                                d = cand
            if d == 1e10:
                return np.array(right_match if swap else left_match, dtype=np.int64)
            for i in range(n_left):
                if left_used[i]:
                    left_w[i] -= d
            for j in range(n_right):
                if right_used[j]:
                    right_w[j] += d
    return np.array(right_match if swap else left_match, dtype=np.int64)


def matched_ious(iou: np.ndarray, gt_match: np.ndarray) -> np.ndarray:
    """IoU of every GT lane with its match (NaN when unmatched): TP at threshold t = ``(matched > t).sum()``."""
    out = np.full(iou.shape[0], np.nan)
    has = gt_match >= 0
    out[has] = iou[np.flatnonzero(has), gt_match[has]]
    return out
