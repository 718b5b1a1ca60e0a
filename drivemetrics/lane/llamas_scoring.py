"""The LLAMAS scoring steps on numpy arrays, without torch: the label pipeline, the prediction resampling, the
pixel and shapely IoUs, the matching, and the per-frame scoring of ``llamas-eval`` (:mod:`drivemetrics.lane.llamas`
has the rules, the tensor kernels and the Metric classes built on these).

``llamas-eval`` runs on this module alone on the CPU (torch is never imported, so its worker processes fork and
start in milliseconds); with ``device`` the pairwise intersections of the drawn lanes are one matrix product of
their masks on that torch device (the drawing stays OpenCV's, the official rasteriser).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from drivemetrics._internal.compat import Compat, check_compat

__all__ = [
    "GT_FIRST_ROW",
    "IOU_KINDS",
    "IOU_RANGE",
    "LANE_SLOTS",
    "LLAMAS_HEIGHT",
    "LLAMAS_WIDTH",
    "IoUKind",
    "assign_matches",
    "check_iou_extras",
    "frame_matched_ious",
    "llamas_interpolate",
    "llamas_label_lanes",
    "llamas_labels_lanes",
    "pixel_iou",
    "shapely_iou",
]

LLAMAS_HEIGHT, LLAMAS_WIDTH = 717, 1276
#: The first GT row scored (``add_ys``), the lane slots scored, in the evaluator's order.
GT_FIRST_ROW = 300
LANE_SLOTS = ("l1", "l0", "r0", "r1")
IoUKind = Literal["pixel", "shapely"]
IOU_KINDS: tuple[IoUKind, ...] = ("pixel", "shapely")
#: CLRNet's IoU thresholds 0.50:0.05:0.95 (F1@50, F1@75, mF1), as CULane's ``IOU_RANGE``.
IOU_RANGE = tuple(round(0.5 + 0.05 * k, 2) for k in range(10))


# --------------------------------------------------------------------------------------------------- label pipeline


def _ir(values: np.ndarray) -> np.ndarray:
    """``helper_scripts.ir``: ``int(round(v))``, Python's round half to even (float64 -> int64)."""
    return np.rint(np.asarray(values, dtype=np.float64)).astype(np.int64)


def _usable(px: list[tuple[int, int, int, int]]) -> list[int]:
    """The markers (``sx, sy, ex, ey`` pixels) ``_extend_lane`` may extend, by index: neither vertical nor
    horizontal in the image."""
    return [k for k, (sx, sy, ex, ey) in enumerate(px) if sy != ey and sx != ex]


def _extend_lane(
    px: list[tuple[int, int, int, int]], z: list[float], compat: Compat, where: str
) -> list[tuple[int, int, int, int]]:
    """``spline_creator._extend_lane`` on the marker pixels (``sx, sy, ex, ey`` Python ints, as the official code
    computes) and the markers' ``world_start.z``: a marker from the nearest marker's start to row 716 or the image
    side, prepended."""
    usable = _usable(px)
    if not usable:
        if compat == "reference":
            raise ValueError(
                f"{where}: a lane whose markers are all vertical or horizontal in the image has no marker to extend "
                "(the official _extend_lane raises `min() arg is an empty sequence`)"
            )
        return px  # default: nothing to extend from, the lane is scored as its markers give it
    closest = min(usable, key=lambda k: z[k])  # the first of equals, as min()
    if z[closest] < 0:
        return px
    sx, sy, ex, ey = px[closest]
    x_gradient = (ex - sx) / (ey - sy)
    y_gradient = (ey - sy) / (ex - sx)
    zero_x = sx + (716 - sy) * x_gradient
    if zero_x < 0:
        new = (0, sy - sx * y_gradient)
    elif zero_x > 1276:
        new = (1276, sy + (1276 - sx) * y_gradient)
    else:
        new = (zero_x, 716)
    return [(round(new[0]), round(new[1]), sx, sy), *px]  # helper_scripts.ir


def _sample_lanes(lanes: list[list[tuple[int, int, int, int]]], compat: Compat) -> tuple[np.ndarray, np.ndarray]:
    """``SplineCreator._sample_points`` up to its gap filling (:func:`_fill_gaps`) of every lane at once (its
    markers' pixels ``sx, sy, ex, ey`` each): ``(L, 717)`` mean x per row, ``-1`` = none. Within a lane every
    marker's start comes first, then the samples of the markers taller than 2 px, in marker order (the official
    order of the sums).

    Also returns, per lane, the lowest row a marker reaches when it lies outside the 717-row image in
    ``compat="reference"`` (the official code stops there; the caller raises), else ``-1``."""
    height = LLAMAS_HEIGHT
    m = np.array([row for px in lanes for row in px], dtype=np.int64).reshape(-1, 4)
    lane_of = np.repeat(np.arange(len(lanes)), [len(px) for px in lanes])
    sx, sy, ex, ey = m.T
    tall = sy - ey
    count = np.where(tall > 2, tall + 1, 0)
    which = np.repeat(np.arange(len(m)), count)
    i = (np.arange(which.size) - np.repeat(np.cumsum(count) - count, count)).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        slope = (ex - sx) / np.where(tall > 2, tall, 1)
        step = (sy - ey) / np.where(tall > 2, tall, 1).astype(np.float64)
    st, sl = step[which], slope[which]
    rows = np.concatenate([sy, _ir(sy[which] - st * i)])
    xs = np.concatenate([sx.astype(np.float64), _ir(sx[which] + sl * st * i).astype(np.float64)])
    lane = np.concatenate([lane_of, lane_of[which]])
    outside = np.full(len(lanes), -1, dtype=np.int64)
    if compat == "reference":
        bad = (rows >= height) | (rows < -height)
        if bad.any():
            for k in np.unique(lane[bad]).tolist():
                outside[k] = int(rows[lane == k].max())
        rows = rows % height  # a negative row indexes from the end of the list, as in Python
    else:
        keep = (rows >= 0) & (rows < height)
        rows, xs, lane = rows[keep], xs[keep], lane[keep]
    size = len(lanes) * height
    total = np.bincount(lane * height + rows, weights=xs, minlength=size).reshape(len(lanes), height)
    count = np.bincount(lane * height + rows, minlength=size).reshape(len(lanes), height)
    return np.where(count > 0, total / np.maximum(count, 1), -1.0), outside


def _fill_gaps(values: np.ndarray) -> np.ndarray:
    """The official gap filling of ``_sample_points`` on ``(N, 717)`` row means (``-1`` = none), all lanes at once:
    every unset row between two set rows of a lane gets ``x[r - 1] + (x[next] - x[r - 1]) / (next - r + 1)``, row
    after row (a recurrence, not a closed form, so the same floats). The recurrence steps every gap at once: step
    ``k`` sets the ``k``-th row of every gap longer than ``k`` (the same IEEE operations as the official Python
    floats, one element each)."""
    flat = values.reshape(-1)
    set_idx = np.flatnonzero(flat != -1)
    starts, ends = set_idx[:-1] + 1, set_idx[1:]  # unset rows starts..ends-1 lie before the set row `ends`
    gap = (ends > starts) & (set_idx[:-1] // values.shape[1] == set_idx[1:] // values.shape[1])  # within a lane
    starts, ends = starts[gap], ends[gap]
    if not starts.size:
        return values
    order = np.argsort(starts - ends, kind="stable")  # the longest gaps first: gaps still open are a prefix
    starts, ends = starts[order], ends[order]
    length = ends - starts  # descending
    still_open = len(length) - np.searchsorted(length[::-1], np.arange(int(length[0])), side="right")
    targets = flat[ends]
    for k, n in enumerate(still_open.tolist()):  # gaps longer than k
        r = starts[:n] + k
        prev = flat[r - 1]
        flat[r] = prev + (targets[:n] - prev) / (ends[:n] - r + 1)
    return values


def _rename(lane_ids: list[str]) -> dict[str, str]:
    """``label_file_scripts._fix_lane_names``: ids per side renumbered in sorted (string) order."""
    mapping, counters = {}, {"l": 0, "r": 0}
    for key in sorted(lane_ids):
        side = key[:1]
        if side in counters:
            mapping[key] = f"{side}{counters[side]}"
            counters[side] += 1
    return mapping


def llamas_label_lanes(
    label: dict | str, *, compat: Compat = "default", where: str = "label"
) -> tuple[list[np.ndarray], list[str]]:
    """The GT lanes of a LLAMAS label as the evaluator builds them: ``(n, 2)`` float64 points ``(x, y)``.

    ``read_json`` drops lanes whose markers' ``pixel_start.y`` span fewer than 20 px and lanes of fewer than 2
    markers, truncates the pixel values to integers, and renames the lane ids per side in sorted order (after the
    drops in ``compat="reference"``, so that dropping ``l0`` makes ``l1`` the scored ``l0``); the nearest marker is
    extended to row 716 or the image side; the markers are sampled row by row, averaged per row, the gaps between
    them filled linearly; the lanes ``l1, l0, r0, r1`` (in that order, empty slots skipped) keep their rows
    300-716 with ``x >= 0``; a lane of fewer than 2 such points: ``compat="reference"`` raises ``ValueError`` (the
    official ``add_ys`` assertion), the default drops it with a note.

    Args:
        label: the label JSON (text or parsed dict): ``projection_matrix`` and ``lanes`` of ``markers``.
        compat: ``"default"`` renames the lane ids before the drops (a dropped lane leaves its slot empty instead
            of promoting its neighbour) and handles the official crashes (notes); ``"reference"`` renames after the
            drops and raises where the official code raises.
        where: the label's name in error messages and notes.

    Returns:
        (the lanes, notes on what the default mode handled differently from the official code).

    Examples:
        >>> from drivemetrics.lane.llamas import llamas_label_lanes
        >>> marker = {"world_start": {"x": 1.5, "y": 1.6, "z": 8.0}, "world_end": {"x": 1.5, "y": 1.6, "z": 14.0},
        ...           "pixel_start": {"x": 900, "y": 560}, "pixel_end": {"x": 780, "y": 470}}
        >>> far = {"world_start": {"x": 1.5, "y": 1.6, "z": 20.0}, "world_end": {"x": 1.5, "y": 1.6, "z": 26.0},
        ...        "pixel_start": {"x": 720, "y": 425}, "pixel_end": {"x": 690, "y": 403}}
        >>> lanes, notes = llamas_label_lanes({"lanes": [{"lane_id": "r0", "markers": [marker, far]}]})
        >>> lanes[0][0].tolist(), lanes[0][-1].tolist(), len(lanes[0])  # from the far marker down to row 716
        ([690.0, 403.0], [1108.0, 716.0], 314)
    """
    return llamas_labels_lanes([label], compat=compat, wheres=[where])[0]


def _kept_and_renamed(content: dict, compat: Compat) -> tuple[list[dict], dict[str, str]]:
    """A label's lanes of at least 2 markers spanning 20 rows, and the renaming of their ids."""
    lanes = content["lanes"]
    kept = []
    for lane in lanes:
        rows = [int(m["pixel_start"]["y"]) for m in lane["markers"]]
        if not rows or max(rows) - min(rows) < 20 or len(lane["markers"]) < 2:
            continue
        kept.append(lane)
    # the renaming closes gaps in the ids (l3, l2, l0 -> l2, l1, l0); done after the drops (reference), a dropped
    # l0 makes l1 the scored l0 and brings l2 in; the default renames the JSON's lanes before dropping
    ids = [lane["lane_id"] for lane in (kept if compat == "reference" else lanes)]
    return kept, _rename(ids)


def _check_rows_inside(lane_wheres: list[str], outside: Any, lanes: range) -> None:
    """One line for the first of ``lanes`` with a marker outside the image (``outside[k] >= 0``: the row)."""
    for k in lanes:
        if outside[k] >= 0:
            raise ValueError(
                f"{lane_wheres[k]}: a marker reaches row {int(outside[k])}, outside the 717-row image (the "
                "official _sample_points stops in pdb.set_trace)"
            )


def llamas_labels_lanes(
    labels: Sequence[dict | str], *, compat: Compat = "default", wheres: Sequence[str] | None = None
) -> list[tuple[list[np.ndarray], list[str]]]:
    """:func:`llamas_label_lanes` of several labels at once (the sampling and the gap filling of all their lanes
    in one pass): per label, its lanes and notes. ``wheres``: the labels' names in messages (``label 0``, ...).
    In ``compat="reference"`` the first label that the official code fails on raises, its own first error (the
    labels before it are done first, as one by one).

    Examples:
        >>> from drivemetrics.lane.llamas_scoring import llamas_labels_lanes
        >>> marker = {"world_start": {"x": 1.5, "y": 1.6, "z": 8.0}, "world_end": {"x": 1.5, "y": 1.6, "z": 14.0},
        ...           "pixel_start": {"x": 900, "y": 560}, "pixel_end": {"x": 780, "y": 470}}
        >>> far = {"world_start": {"x": 1.5, "y": 1.6, "z": 20.0}, "world_end": {"x": 1.5, "y": 1.6, "z": 26.0},
        ...        "pixel_start": {"x": 720, "y": 425}, "pixel_end": {"x": 690, "y": 403}}
        >>> label = {"lanes": [{"lane_id": "r0", "markers": [marker, far]}]}
        >>> [len(lanes[0]) for lanes, notes in llamas_labels_lanes([label, {"lanes": []}, label])[::2]]
        [314, 314]
    """
    check_compat(compat)
    if wheres is None:
        wheres = [f"label {k}" for k in range(len(labels))]
    frames = []  # per label: its sampled lanes' names, first lane index, notes, deferred error
    sampled: list[list[tuple[int, int, int, int]]] = []
    lane_wheres: list[str] = []
    for label, where in zip(labels, wheres, strict=True):
        kept, mapping = _kept_and_renamed(json.loads(label) if isinstance(label, str) else label, compat)
        notes: list[str] = []
        names: list[str] = []
        first = len(sampled)
        error: ValueError | None = None
        for lane in kept:
            markers = lane["markers"]
            ends = [(m["pixel_start"], m["pixel_end"]) for m in markers]
            px = [(int(ps["x"]), int(ps["y"]), int(pe["x"]), int(pe["y"])) for ps, pe in ends]  # read_json's int()
            name = mapping.get(lane["lane_id"], lane["lane_id"])
            lane_where = f"{where} lane {lane['lane_id']}"
            usable = bool(_usable(px))
            if compat != "reference" and name not in LANE_SLOTS:  # the official code samples every lane
                if not usable:
                    notes.append(
                        f"{lane_where}: all markers vertical or horizontal, not scored (the official code crashes)"
                    )
                continue
            try:
                extended = _extend_lane(px, [float(m["world_start"]["z"]) for m in markers], compat, lane_where)
            except ValueError as err:  # raised after the lanes before it are sampled (their errors come first)
                error = err
                break
            names.append(name)
            sampled.append(extended)
            lane_wheres.append(lane_where)
            if compat != "reference" and not usable:
                notes.append(f"{lane_where}: all markers vertical or horizontal, not extended")
        frames.append((names, first, notes, error))
    rows_x, outside = _sample_lanes(sampled, compat)
    by_frame: list[dict[str, np.ndarray]] = []
    for names, first, _, _ in frames:
        by_frame.append(dict(zip(names, rows_x[first : first + len(names)], strict=True)))  # a repeated name: last
    kept_rows = [xs for by_id in by_frame for xs in by_id.values()]
    # per kept lane, at once: its filled rows, how many are set, and its points (x, row) at rows >= 300
    filled = _fill_gaps(np.stack(kept_rows)) if kept_rows else np.full((0, LLAMAS_HEIGHT), -1.0)
    n_set = np.count_nonzero(filled >= 0, axis=1).tolist()
    scored = filled[:, GT_FIRST_ROW:] >= 0
    n_scored = np.count_nonzero(scored, axis=1).tolist()
    rows_scored = np.arange(GT_FIRST_ROW, LLAMAS_HEIGHT, dtype=np.float64)
    points = np.stack([filled[:, GT_FIRST_ROW:], np.broadcast_to(rows_scored, scored.shape)], axis=2)
    index = iter(range(len(kept_rows)))
    by_frame_index = [{name: next(index) for name in by_id} for by_id in by_frame]
    out = []
    for (names, first, notes, error), by_id, where in zip(frames, by_frame_index, wheres, strict=True):
        _check_rows_inside(lane_wheres, outside, range(first, first + len(names)))
        if error is not None:
            raise error
        lanes_out = []
        for slot in LANE_SLOTS:
            if slot not in by_id:
                continue
            k = by_id[slot]
            if n_set[k] <= 1:  # "lanes annotated with a single point are ignored"
                continue
            if n_scored[k] <= 1:
                if compat == "reference":
                    raise ValueError(
                        f"{where} lane {slot}: fewer than 2 points at rows >= 300 (the official add_ys assertion fails)"
                    )
                notes.append(f"{where} lane {slot}: no points at rows >= 300, not scored")
                continue
            lanes_out.append(points[k][scored[k]])
        out.append((lanes_out, notes))
    return out


# ------------------------------------------------------------------------------------------- prediction resampling


def llamas_interpolate(points: np.ndarray, n: int = 50, where: str = "prediction") -> np.ndarray:
    """The evaluator's ``interpolate_lane``: consecutive duplicate points removed, then ``splprep(s=0, k=min(3,
    m - 1))`` evaluated at ``n`` uniform parameters: ``(n, 2)`` float64.

    Raises ``ValueError`` for a lane of fewer than 2 distinct consecutive points (the official code raises
    ``TypeError`` from ``splprep``).

    Examples:
        >>> import numpy as np
        >>> from drivemetrics.lane.llamas import llamas_interpolate
        >>> llamas_interpolate(np.array([[600.0, 700.0], [640.0, 500.0], [640.0, 500.0]]), n=3).round(6).tolist()
        [[600.0, 700.0], [620.0, 600.0], [640.0, 500.0]]
    """
    from scipy.interpolate import splev, splprep

    p = np.asarray(points, dtype=np.float64).reshape(-1, 2)
    keep = np.ones(len(p), dtype=bool)
    keep[1:] = (p[1:] != p[:-1]).any(axis=1)
    p = p[keep]
    if len(p) < 2:
        raise ValueError(
            f"{where}: all points of the lane are equal, no curve to fit (the official splprep raises "
            "`1 <= k= 0 <=5 must hold`)"
        )
    k = min(3, len(p) - 1)
    fitpack = _fitpack_calls()
    if fitpack is not None:
        out = _fit_and_sample(p, k, n, *fitpack)
        if out is not None:
            return out
    tck, _ = splprep(p.T, s=0, t=n, k=k)  # the same float64 values as the official lists
    return np.array(splev(_uniform(n), tck)).T


def _fit_and_sample(p: np.ndarray, k: int, n: int, parcur: Any, spline_at: Any) -> np.ndarray | None:
    """``splprep(p.T, s=0, t=n, k=k)`` and ``splev`` at ``n`` uniform parameters as the FITPACK calls that SciPy's
    wrappers make with those arguments (the same arrays in, the same floats out; the wrappers' argument handling
    costs more than the fit of a 50-point lane). ``None`` where FITPACK reports an error or a warning: the public
    functions then raise or warn as the official code's."""
    m = len(p)
    knots, coef, info = parcur(
        p.reshape(-1), np.ones(m), np.zeros(m), 0, 1, k, 0, False, 0, np.atleast_1d(n), max(m + k + 1, 2 * k + 3),
        np.array([], float), np.array([], _FITPACK_INT), 0,
    )  # fmt: skip
    if info["ier"] > 0:
        return None
    coef = coef.reshape(2, len(knots) - k - 1)
    x, ier_x = spline_at(knots, coef[0], k, _uniform(n), 0)
    y, ier_y = spline_at(knots, coef[1], k, _uniform(n), 0)
    if ier_x or ier_y:
        return None
    return np.array([x, y]).T


@functools.cache
def _fitpack_calls() -> tuple[Any, Any] | None:
    """SciPy's ``_fitpack._parcur`` and ``_dfitpack.splev`` (the FITPACK calls behind ``splprep`` and ``splev``;
    private, so used only where they give the public functions' floats on a check lane), else ``None``."""
    try:
        from scipy.interpolate import _dfitpack, _fitpack, splev, splprep

        global _FITPACK_INT
        _FITPACK_INT = _dfitpack.types.intvar.dtype  # splprep's empty integer work array
        calls = (_fitpack._parcur, _dfitpack.splev)
        for lane in _CHECK_LANES:
            k = min(3, len(lane) - 1)
            tck, _ = splprep(lane.T, s=0, t=50, k=k)
            want = np.array(splev(_uniform(50), tck)).T
            got = _fit_and_sample(lane, k, 50, *calls)
            if got is None or got.tobytes() != want.tobytes():
                return None
    except Exception:  # another SciPy: the public functions
        return None
    return calls


_FITPACK_INT: Any = np.int32
#: Lanes of 2, 3 and 9 points (k = 1, 2, 3) on which :func:`_fitpack_calls` checks the FITPACK calls.
_CHECK_LANES = (
    np.array([[600.0, 700.0], [640.0, 500.0]]),
    np.array([[600.0, 700.0], [630.5, 560.25], [640.0, 500.0]]),
    np.array([[700.0 + 3.0 * i - 0.37 * i * i, 716.0 - 40.0 * i] for i in range(9)]),
)


@functools.cache
def _uniform(n: int) -> np.ndarray:
    """``np.linspace(0, 1, n)``, made once per ``n`` (read-only)."""
    out = np.linspace(0.0, 1.0, n)
    out.flags.writeable = False
    return out


# ------------------------------------------------------------------------------------------------------- IoUs


def pixel_iou(gts: list[np.ndarray], preds: list[np.ndarray], line_width: int, device: Any = None) -> np.ndarray:
    """``discrete_cross_iou`` (``(n_pred, n_gt)``): points truncated to int32, ``cv2.line`` segments; with a torch
    ``device`` the intersections are one matrix product of the drawn masks there (the same integers)."""
    from drivemetrics.lane.culane_official import official_iou_from_pixels

    def pixels(lane: np.ndarray) -> np.ndarray:
        px = np.asarray(lane).astype(np.int32)
        return px if len(px) > 1 else np.repeat(px, 2, axis=0)  # cv2.line(p, p) draws a disc

    gp, pp = [pixels(g) for g in gts], [pixels(p) for p in preds]
    if device is not None:
        from drivemetrics.lane.culane_official import official_iou_on_device

        return official_iou_on_device(gp, pp, LLAMAS_HEIGHT, LLAMAS_WIDTH, int(line_width), device).T
    return official_iou_from_pixels(gp, pp, LLAMAS_HEIGHT, LLAMAS_WIDTH, int(line_width)).T


def shapely_iou(gts: list[np.ndarray], preds: list[np.ndarray], line_width: float) -> np.ndarray:
    """``continuous_cross_iou`` (``(n_pred, n_gt)``): buffered lines cut to the image polygon, area IoU."""
    from drivemetrics._internal.extras import require

    geometry = require("llamas", "shapely.geometry", "LLAMAS iou='shapely'")
    h, w = LLAMAS_HEIGHT, LLAMAS_WIDTH
    image = geometry.Polygon([(0, 0), (0, h - 1), (w - 1, h - 1), (w - 1, 0)])

    def shape(lane: np.ndarray) -> Any:
        return (
            geometry.LineString(lane).buffer(distance=line_width / 2.0, cap_style=1, join_style=2).intersection(image)
        )

    ps, gs = [shape(p) for p in preds], [shape(g) for g in gts]
    iou = np.zeros((len(ps), len(gs)))
    for i, p in enumerate(ps):
        for j, g in enumerate(gs):
            iou[i, j] = p.intersection(g).area / p.union(g).area
    return iou


def check_iou_extras(iou: IoUKind) -> None:
    """OpenCV (pixel IoU) or shapely (``iou="shapely"``), with the one-line install hint when missing."""
    if iou == "pixel":
        from drivemetrics.lane.culane_official import load_cv2

        load_cv2("the LLAMAS pixel IoU")
    else:
        from drivemetrics._internal.extras import require

        require("llamas", "shapely.geometry", "LLAMAS iou='shapely'")


def assign_matches(iou_pred_gt: np.ndarray) -> np.ndarray:
    """Matched IoU per GT lane (NaN: none) of ``linear_sum_assignment(1 - IoU)`` on ``(n_pred, n_gt)``."""
    from scipy.optimize import linear_sum_assignment

    out = np.full(iou_pred_gt.shape[1], np.nan)
    if iou_pred_gt.size:
        rows, cols = linear_sum_assignment(1 - iou_pred_gt)
        out[cols] = iou_pred_gt[rows, cols]
    return out


def frame_matched_ious(
    gts: list[np.ndarray],
    preds: list[np.ndarray],
    line_width: float = 30.0,
    iou: IoUKind = "pixel",
    device: Any = None,
    where: str = "frame",
) -> np.ndarray:
    """Matched IoU of every GT lane of one frame (NaN: none): the predictions (``(n, 2)`` points, each of at least 2
    distinct consecutive points) resampled by :func:`llamas_interpolate`, the IoUs of ``iou``, the assignment of
    :func:`assign_matches`. ``device``: a torch device for the pixel IoU's intersections (None: numpy).

    Examples:
        >>> import numpy as np
        >>> from drivemetrics.lane.llamas_scoring import frame_matched_ious
        >>> rows = np.arange(300.0, 717.0)
        >>> gt = np.stack([640 + 0.5 * (rows - 300), rows], 1)
        >>> preds = [np.array([[640.0, 300.0], [848.0, 716.0]]), np.array([[100.0, 716.0], [300.0, 400.0]])]
        >>> frame_matched_ious([gt], preds).round(3)
        array([0.988])
    """
    if not (gts and preds):
        return np.full(len(gts), np.nan)
    resampled = [llamas_interpolate(p, where=f"{where} prediction lane {k}") for k, p in enumerate(preds)]
    if iou == "pixel":
        ious = pixel_iou(gts, resampled, round(line_width), device)
    else:
        ious = shapely_iou(gts, resampled, line_width)
    return assign_matches(ious)
