"""LLAMAS lane F1 (the CULane metric on LLAMAS): GT from the labels' markers, wide-line IoU, one-to-one matching.

As in the official evaluator (unsupervised_llamas ``culane_metric/evaluate.py``, commit 9b99f46): the GT of a
frame is built from its label's markers (:func:`llamas_label_lanes`: the lanes ``l1, l0, r0, r1``, one x per image
row, rows 300-716); every lane is drawn ``line_width`` px wide (30) on the 717 x 1276 image; the IoU of every
(prediction, GT) pair is the pixel intersection over union; predictions and GT lanes are paired one-to-one
(``scipy.optimize.linear_sum_assignment`` on ``1 - IoU``); a pair with IoU ``> iou_threshold`` (strict, 0.5) is a
true positive, ``FP = n_pred - TP``, ``FN = n_gt - TP``; precision, recall and F1 from the dataset totals (0 when
TP = 0). CLRNet's multi-threshold F1 scores the same matches at IoU 0.50, 0.55, ..., 0.95 (F1@50, F1@75, mF1).

Both modes draw as the evaluator (OpenCV, the ``culane`` extra): each prediction line loses its consecutive
duplicate points and is resampled at 50 points by ``scipy.interpolate.splprep`` (``s=0``, ``k = min(3, n - 1)``),
every point is truncated to an integer pixel (``astype(np.int32)``) and the lanes are drawn with ``cv2.line`` of
thickness 30; each lane is drawn once, on the part of the image it can reach. They differ where the evaluator is
wrong:

* ``compat="reference"``: the evaluator, bugs included: after a lane is dropped (short or 1 marker) the remaining
  ids are renamed, so that the neighbour of a dropped ``l0`` is scored in its slot and ``l2`` is brought in; a
  prediction whose points are all equal, a GT lane without points at rows >= 300 and a lane whose markers are all
  vertical or horizontal raise ``ValueError`` (the evaluator raises ``TypeError``, ``AssertionError``,
  ``ValueError``).
* default: the ids are renamed before the drops (the dataset's gap closing, without the promotion); those three
  cases are handled (the lane is dropped with a warning, the GT lane is not scored, the lane is not extended) and
  reported.

``iou="shapely"`` is the evaluator's "unofficial" IoU (its Python API's default): the 50-point resampled lines are
buffered by ``line_width / 2`` (round caps, mitre joins), cut to the image polygon, and the IoU is their area ratio
(needs ``shapely``). The official command line and the published numbers use the pixel IoU.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import torch
from torch import Tensor

from drivemetrics._internal.compat import Compat, check_compat
from drivemetrics._internal.compute import precision_recall_f1
from drivemetrics._internal.metric import MetricFamily, ScalarMetric, add_config_state
from drivemetrics._internal.validation import check_tensor
from drivemetrics.lane.raster import check_lane_points

__all__ = [
    "LLAMAS_HEIGHT",
    "LLAMAS_WIDTH",
    "LlamasF1Score",
    "LlamasF1Score75",
    "LlamasMeanF1Score",
    "LlamasMetrics",
    "LlamasPrecision",
    "LlamasRecall",
    "llamas_counts",
    "llamas_f1",
    "llamas_interpolate",
    "llamas_label_lanes",
    "llamas_matches",
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


def _marker_px(marker: dict, key: str) -> tuple[Any, Any]:
    return marker[key]["x"], marker[key]["y"]


def _usable_markers(markers: list[dict]) -> list[dict]:
    """The markers ``_extend_lane`` may extend: neither vertical nor horizontal in the image."""
    return [
        m
        for m in markers
        if m["pixel_start"]["y"] != m["pixel_end"]["y"] and m["pixel_start"]["x"] != m["pixel_end"]["x"]
    ]


def _extend_lane(markers: list[dict], compat: Compat, where: str) -> list[dict]:
    """``spline_creator._extend_lane``: a marker from the nearest marker's start to row 716 or the image side."""
    usable = _usable_markers(markers)
    if not usable:
        if compat == "reference":
            raise ValueError(
                f"{where}: a lane whose markers are all vertical or horizontal in the image has no marker to extend "
                "(the official _extend_lane raises `min() arg is an empty sequence`)"
            )
        return markers  # default: nothing to extend from, the lane is scored as its markers give it
    closest = min(usable, key=lambda m: m["world_start"]["z"])  # the first of equals, as min()
    if closest["world_start"]["z"] < 0:
        return markers
    sx, sy = _marker_px(closest, "pixel_start")
    ex, ey = _marker_px(closest, "pixel_end")
    x_gradient = (ex - sx) / (ey - sy)
    y_gradient = (ey - sy) / (ex - sx)
    zero_x = sx + (716 - sy) * x_gradient
    if zero_x < 0:
        new = (0, sy - sx * y_gradient)
    elif zero_x > 1276:
        new = (1276, sy + (1276 - sx) * y_gradient)
    else:
        new = (zero_x, 716)
    fake = {
        "pixel_start": {"x": round(new[0]), "y": round(new[1])},  # helper_scripts.ir
        "pixel_end": {"x": sx, "y": sy},
    }
    return [fake, *markers]


def _sample_points(markers: list[dict], compat: Compat, where: str) -> np.ndarray:
    """``SplineCreator._sample_points`` up to its gap filling (:func:`_fill_gaps`): the mean x per row, ``-1`` =
    none."""
    height = LLAMAS_HEIGHT
    m = np.array([[*_marker_px(m, "pixel_start"), *_marker_px(m, "pixel_end")] for m in markers], dtype=np.int64)
    sx, sy, ex, ey = m.T
    tall = sy - ey
    # every marker's start at its row; markers taller than 2 px sampled row by row, all markers at once
    count = np.where(tall > 2, tall + 1, 0)
    which = np.repeat(np.arange(len(m)), count)
    i = (np.arange(which.size) - np.repeat(np.cumsum(count) - count, count)).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        slope = (ex - sx) / np.where(tall > 2, tall, 1)
        step = (sy - ey) / np.where(tall > 2, tall, 1).astype(np.float64)
    st, sl = step[which], slope[which]
    rows = np.concatenate([sy, _ir(sy[which] - st * i)])
    xs = np.concatenate([sx.astype(np.float64), _ir(sx[which] + sl * st * i).astype(np.float64)])
    if compat == "reference":
        if (rows >= height).any() or (rows < -height).any():
            raise ValueError(
                f"{where}: a marker reaches row {int(rows.max())}, outside the 717-row image (the official "
                "_sample_points stops in pdb.set_trace)"
            )
        rows = rows % height  # a negative row indexes from the end of the list, as in Python
    else:
        keep = (rows >= 0) & (rows < height)
        rows, xs = rows[keep], xs[keep]
    total = np.bincount(rows, weights=xs, minlength=height)
    count = np.bincount(rows, minlength=height)
    return np.where(count > 0, total / np.maximum(count, 1), -1.0)


def _fill_gaps(values: np.ndarray) -> np.ndarray:
    """The official gap filling of ``_sample_points`` on ``(N, 717)`` row means (``-1`` = none), all lanes at once:
    every unset row between two set rows of a lane gets ``x[r - 1] + (x[next] - x[r - 1]) / (next - r + 1)``, row
    after row (a recurrence, not a closed form, so the same floats)."""
    flat = values.reshape(-1)
    set_idx = np.flatnonzero(flat != -1)
    starts, ends = set_idx[:-1] + 1, set_idx[1:]  # unset rows starts..ends-1 lie before the set row `ends`
    gap = (ends > starts) & (set_idx[:-1] // values.shape[1] == set_idx[1:] // values.shape[1])  # within a lane
    starts, ends = starts[gap], ends[gap]
    target = flat[ends]
    for k in range(int((ends - starts).max(initial=0))):  # over the offset in a gap, every gap at once
        live = starts + k < ends
        cur = starts[live] + k
        prev = flat[cur - 1]
        flat[cur] = prev + (target[live] - prev) / (ends[live] - cur + 1)
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
    check_compat(compat)
    content = json.loads(label) if isinstance(label, str) else label
    lanes = content["lanes"]
    kept = []
    for lane in lanes:
        rows = [int(m["pixel_start"]["y"]) for m in lane["markers"]]
        if not rows or max(rows) - min(rows) < 20 or len(lane["markers"]) < 2:
            continue
        kept.append(lane)
    # the renaming closes gaps in the ids (l3, l2, l0 -> l2, l1, l0); done after the drops (reference), a dropped
    # l0 makes l1 the scored l0 and brings l2 in; the default renames the JSON's lanes before dropping any
    ids = [lane["lane_id"] for lane in (kept if compat == "reference" else lanes)]
    mapping = _rename(ids)
    by_id: dict[str, np.ndarray] = {}
    notes: list[str] = []
    for lane in kept:
        markers = [
            {
                "pixel_start": {k: int(v) for k, v in m["pixel_start"].items()},
                "pixel_end": {k: int(v) for k, v in m["pixel_end"].items()},
                "world_start": {k: float(v) for k, v in m["world_start"].items()},
                "world_end": {k: float(v) for k, v in m["world_end"].items()},
            }
            for m in lane["markers"]
        ]
        name = mapping.get(lane["lane_id"], lane["lane_id"])
        lane_where = f"{where} lane {lane['lane_id']}"
        if compat != "reference" and name not in LANE_SLOTS:  # the official code samples every lane
            if not _usable_markers(markers):
                notes.append(
                    f"{lane_where}: all markers vertical or horizontal, not scored (the official code crashes)"
                )
            continue
        by_id[name] = _sample_points(_extend_lane(markers, compat, lane_where), compat, lane_where)
        if compat != "reference" and not _usable_markers(markers):
            notes.append(f"{lane_where}: all markers vertical or horizontal, not extended")
    out = []
    rows_all = np.arange(LLAMAS_HEIGHT, dtype=np.float64)
    if by_id:
        filled = _fill_gaps(np.stack(list(by_id.values())))
        by_id = dict(zip(by_id, filled, strict=True))
    for slot in LANE_SLOTS:
        if slot not in by_id:
            continue
        xs = by_id[slot]
        if (xs >= 0).sum() <= 1:  # "lanes annotated with a single point are ignored"
            continue
        keep = xs[GT_FIRST_ROW:] >= 0
        if keep.sum() <= 1:
            if compat == "reference":
                raise ValueError(
                    f"{where} lane {slot}: fewer than 2 points at rows >= 300 (the official add_ys assertion fails)"
                )
            notes.append(f"{where} lane {slot}: no points at rows >= 300, not scored")
            continue
        out.append(np.stack([xs[GT_FIRST_ROW:][keep], rows_all[GT_FIRST_ROW:][keep]], axis=1))
    return out, notes


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
    tck, _ = splprep([p[:, 0].tolist(), p[:, 1].tolist()], s=0, t=n, k=min(3, len(p) - 1))
    return np.array(splev(np.linspace(0.0, 1.0, n), tck)).T


# ------------------------------------------------------------------------------------------------------- IoUs


def _pixel_iou(gts: list[np.ndarray], preds: list[np.ndarray], line_width: int) -> np.ndarray:
    """``discrete_cross_iou`` (``(n_pred, n_gt)``): points truncated to int32, ``cv2.line`` segments."""
    from drivemetrics.lane.culane_official import official_iou_from_pixels

    def pixels(lane: np.ndarray) -> np.ndarray:
        px = np.asarray(lane).astype(np.int32)
        return px if len(px) > 1 else np.repeat(px, 2, axis=0)  # cv2.line(p, p) draws a disc

    iou = official_iou_from_pixels(
        [pixels(g) for g in gts], [pixels(p) for p in preds], LLAMAS_HEIGHT, LLAMAS_WIDTH, int(line_width)
    )
    return iou.T


def _shapely_iou(gts: list[np.ndarray], preds: list[np.ndarray], line_width: float) -> np.ndarray:
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


def _check_extras(iou: IoUKind) -> None:
    """OpenCV (pixel IoU) or shapely (``iou="shapely"``), with the one-line install hint when missing."""
    if iou == "pixel":
        from drivemetrics.lane.culane_official import load_cv2

        load_cv2("the LLAMAS pixel IoU")
    else:
        from drivemetrics._internal.extras import require

        require("llamas", "shapely.geometry", "LLAMAS iou='shapely'")


def _assign(iou_pred_gt: np.ndarray) -> np.ndarray:
    """Matched IoU per GT lane (NaN: none) of ``linear_sum_assignment(1 - IoU)`` on ``(n_pred, n_gt)``."""
    from scipy.optimize import linear_sum_assignment

    out = np.full(iou_pred_gt.shape[1], np.nan)
    if iou_pred_gt.size:
        rows, cols = linear_sum_assignment(1 - iou_pred_gt)
        out[cols] = iou_pred_gt[rows, cols]
    return out


def _drop_short(points: Tensor, valid: Tensor, lane: Tensor, name: str) -> Tensor:
    """Lane slots with at least 2 distinct consecutive valid points; warns with the number dropped."""
    pts = torch.where(valid[..., None], points, torch.nan)
    diff = (pts[..., 1:, :] - pts[..., :-1, :]).abs().amax(-1)
    # distinct points: the first valid point plus every valid point differing from its valid predecessor
    n_valid = valid.sum(-1)
    distinct = torch.zeros_like(n_valid)
    if points.shape[2] > 1:
        distinct = ((diff > 0) & valid[..., 1:] & valid[..., :-1]).sum(-1) + (n_valid > 0).long()
    ok = lane & (distinct >= 2)
    n_short = int((lane & ~ok).sum())
    if n_short:
        warnings.warn(
            f"{n_short} {name} lane(s) with fewer than 2 distinct points dropped (the official LLAMAS evaluator drops "
            "lines of < 2 points and crashes on lines whose points are all equal)",
            stacklevel=3,
        )
    return ok


def llamas_matches(
    preds: Tensor,
    target: Tensor,
    *,
    preds_mask: Tensor | None = None,
    target_mask: Tensor | None = None,
    line_width: float = 30.0,
    iou: IoUKind = "pixel",
    compat: Compat = "default",
    validate_args: bool = True,
) -> dict[str, Tensor]:
    """Match predicted to GT lanes of LLAMAS frames; :func:`drivemetrics.lane.culane.counts_from_matches` gives TP /
    FP / FN at any IoU threshold (the matching does not depend on it).

    Args:
        preds: ``(B, L_pred, P, 2)`` predicted lane points ``(x, y)`` in pixels of the 1276 x 717 image (as in the
            ``.lines.txt`` files), NaN = padding. Lines with fewer than 2 points are not lanes (the evaluator drops
            them at loading).
        target: ``(B, L_gt, Q, 2)`` GT lane points (:func:`llamas_label_lanes`).
        preds_mask, target_mask: optional ``(B, L)`` bools of real lanes (default: slots with a valid point).
        line_width: drawn lane width in pixels (30, the evaluator's default).
        iou: ``"pixel"`` (the official numbers) or ``"shapely"`` (the evaluator's ``unofficial=True``).
        compat: ``"default"`` or ``"reference"`` (the evaluator's steps, CPU, needs OpenCV and scipy).
        validate_args: check the inputs' values (reads back from the device); ``False`` skips those checks.

    Returns:
        ``"matched_iou"``: ``(B, L_gt)`` float64 IoU of every GT lane with its match (NaN: none);
        ``"num_pred"``, ``"num_gt"``: ``(B,)`` long numbers of scored lanes.

    Examples:
        >>> import torch
        >>> from drivemetrics.functional import llamas_matches
        >>> rows = torch.arange(300.0, 717.0)
        >>> gt = torch.stack([640 + 0.5 * (rows - 300), rows], -1)[None, None]  # (B, L, Q, 2) = (1, 1, 417, 2)
        >>> preds = torch.tensor([[[[640.0, 300.0], [848.0, 716.0]], [[100.0, 716.0], [300.0, 400.0]]]])
        >>> llamas_matches(preds, gt)["matched_iou"].round(decimals=3)
        tensor([[0.9880]], dtype=torch.float64)
    """
    check_compat(compat)
    if iou not in IOU_KINDS:
        raise ValueError(f"`iou` must be one of {IOU_KINDS}, got {iou!r}")
    if not line_width > 0:
        raise ValueError(f"`line_width` must be > 0, got {line_width}")
    check_tensor(preds, "preds")
    check_tensor(target, "target")
    if preds.shape[0] != target.shape[0]:
        raise ValueError(
            f"`preds` and `target` must have the same batch size, got {preds.shape[0]} and {target.shape[0]}"
        )
    p_valid, pred_lane = check_lane_points(preds, preds_mask, "preds", check_values=validate_args)
    g_valid, gt_lane = check_lane_points(target, target_mask, "target", check_values=validate_args)
    pred_lane = pred_lane & (p_valid.sum(-1) >= 2)  # load_prediction: lines of < 2 points are no lanes
    gt_lane = gt_lane & (g_valid.sum(-1) >= 2)
    if compat == "default":
        pred_lane = _drop_short(preds, p_valid, pred_lane, "predicted")
    device = preds.device
    matched = np.full(target.shape[:2], np.nan)
    _check_extras(iou)
    p_np, g_np = preds.detach().cpu().double().numpy(), target.detach().cpu().double().numpy()
    pv, gv = p_valid.cpu().numpy(), g_valid.cpu().numpy()
    pl, gl = pred_lane.cpu().numpy(), gt_lane.cpu().numpy()
    for i in range(preds.shape[0]):  # per frame: scipy's splprep and assignment, OpenCV's lines
        pc, gc = np.flatnonzero(pl[i]), np.flatnonzero(gl[i])
        if not (pc.size and gc.size):
            continue
        pr = [llamas_interpolate(p_np[i, k][pv[i, k]], where=f"frame {i} prediction lane {k}") for k in pc]
        gs = [g_np[i, k][gv[i, k]] for k in gc]
        ious = _pixel_iou(gs, pr, round(line_width)) if iou == "pixel" else _shapely_iou(gs, pr, line_width)
        matched[i, gc] = _assign(ious)
    return {
        "matched_iou": torch.from_numpy(matched).to(device),
        "num_pred": pred_lane.sum(-1).to(device),
        "num_gt": gt_lane.sum(-1).to(device),
    }


def llamas_counts(
    preds: Tensor,
    target: Tensor,
    *,
    preds_mask: Tensor | None = None,
    target_mask: Tensor | None = None,
    line_width: float = 30.0,
    iou: IoUKind = "pixel",
    iou_thresholds: Sequence[float] = (0.5,),
    compat: Compat = "default",
    validate_args: bool = True,
) -> dict[str, Tensor]:
    """Per-frame LLAMAS ``tp``, ``fp``, ``fn`` (``(B, T)`` long) at each of ``iou_thresholds`` (strict).

    Other arguments as :func:`llamas_matches`.

    Examples:
        >>> import torch
        >>> from drivemetrics.functional import llamas_counts
        >>> rows = torch.arange(300.0, 717.0)
        >>> gt = torch.stack([640 + 0.5 * (rows - 300), rows], -1)[None, None]
        >>> preds = torch.tensor([[[[640.0, 300.0], [848.0, 716.0]], [[100.0, 716.0], [300.0, 400.0]]]])
        >>> llamas_counts(preds, gt, iou_thresholds=(0.5, 0.99))
        {'tp': tensor([[1, 0]]), 'fp': tensor([[1, 2]]), 'fn': tensor([[0, 1]])}
    """
    thresholds = _check_thresholds(iou_thresholds)
    matches = llamas_matches(
        preds,
        target,
        preds_mask=preds_mask,
        target_mask=target_mask,
        line_width=line_width,
        iou=iou,
        compat=compat,
        validate_args=validate_args,
    )
    tp = torch.stack([(matches["matched_iou"] > t).sum(-1) for t in thresholds], dim=-1)
    return {"tp": tp, "fp": matches["num_pred"][:, None] - tp, "fn": matches["num_gt"][:, None] - tp}


def _check_thresholds(thresholds: Sequence[float]) -> list[float]:
    values = [float(t) for t in thresholds]
    if not values or not all(0 <= t < 1 for t in values):
        raise ValueError(f"`iou_thresholds` must be one or more values in [0, 1), got {thresholds}")
    return values


def llamas_f1(
    preds: Tensor,
    target: Tensor,
    *,
    preds_mask: Tensor | None = None,
    target_mask: Tensor | None = None,
    line_width: float = 30.0,
    iou: IoUKind = "pixel",
    compat: Compat = "default",
    validate_args: bool = True,
) -> dict[str, Tensor]:
    """LLAMAS ``precision``, ``recall``, ``f1`` at IoU > 0.5 and CLRNet's ``f1_75`` and ``mean_f1`` (IoU 0.50:0.05:0.95)
    from the batch's totals (0 when undefined). Arguments as :func:`llamas_matches`.

    Examples:
        >>> import torch
        >>> from drivemetrics.functional import llamas_f1
        >>> rows = torch.arange(300.0, 717.0)
        >>> gt = torch.stack([640 + 0.5 * (rows - 300), rows], -1)[None, None]
        >>> preds = torch.tensor([[[[640.0, 300.0], [848.0, 716.0]], [[100.0, 716.0], [300.0, 400.0]]]])
        >>> {k: round(v.item(), 4) for k, v in llamas_f1(preds, gt).items()}
        {'precision': 0.5, 'recall': 1.0, 'f1': 0.6667, 'f1_75': 0.6667, 'mean_f1': 0.6667}
    """
    counts = llamas_counts(
        preds,
        target,
        preds_mask=preds_mask,
        target_mask=target_mask,
        line_width=line_width,
        iou=iou,
        iou_thresholds=IOU_RANGE,
        compat=compat,
        validate_args=validate_args,
    )
    return _scores(counts["tp"].sum(0), counts["fp"].sum(0), counts["fn"].sum(0))


def _scores(tp: Tensor, fp: Tensor, fn: Tensor) -> dict[str, Tensor]:
    """``{"precision", "recall", "f1"}`` at IoU 0.5 plus ``f1_75`` and ``mean_f1`` from ``(10,)`` totals."""
    s = precision_recall_f1(tp, fp, fn)
    return {
        "precision": s["precision"][0],
        "recall": s["recall"][0],
        "f1": s["f1"][0],
        "f1_75": s["f1"][5],
        "mean_f1": s["f1"].mean(),
    }


class LlamasMetrics(MetricFamily):
    """LLAMAS lane F1 accumulated over batches: sum-reduced TP / FP / FN at IoU 0.50, 0.55, ..., 0.95.

    ``update(preds, target, preds_mask=None, target_mask=None)`` as :func:`llamas_matches`; ``compute()`` returns
    ``{"precision", "recall", "f1"}`` at IoU > 0.5, ``"f1_75"`` and ``"mean_f1"`` (CLRNet's F1@75 and mF1), 0-d
    float64.

    Args:
        line_width: drawn lane width in pixels (30).
        iou: ``"pixel"`` (official) or ``"shapely"`` (the evaluator's unofficial IoU, needs shapely).
        compat: ``"default"`` or ``"reference"`` (the official evaluator's steps, CPU, needs OpenCV).
        validate_args: check the inputs' values (reads back from the device); ``False`` skips those checks.
        kwargs: torchmetrics ``Metric`` keyword arguments.

    Examples:
        >>> import torch
        >>> from drivemetrics.lane import LlamasMetrics
        >>> rows = torch.arange(300.0, 717.0)
        >>> gt = torch.stack([640 + 0.5 * (rows - 300), rows], -1)[None, None]  # (B, L, Q, 2) GT at rows 300..716
        >>> preds = torch.tensor([[[[640.0, 300.0], [848.0, 716.0]], [[100.0, 716.0], [300.0, 400.0]]]])
        >>> metric = LlamasMetrics()
        >>> metric.update(preds, gt)
        >>> {key: round(value.item(), 4) for key, value in metric.compute().items()}
        {'precision': 0.5, 'recall': 1.0, 'f1': 0.6667, 'f1_75': 0.6667, 'mean_f1': 0.6667}
    """

    is_differentiable = False
    higher_is_better = True
    full_state_update = False
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0

    tp: Tensor
    fp: Tensor
    fn: Tensor

    def __init__(
        self,
        line_width: float = 30.0,
        iou: IoUKind = "pixel",
        compat: Compat = "default",
        validate_args: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.validate_args = bool(validate_args)
        if not line_width > 0:
            raise ValueError(f"`line_width` must be > 0, got {line_width}")
        if iou not in IOU_KINDS:
            raise ValueError(f"`iou` must be one of {IOU_KINDS}, got {iou!r}")
        check_compat(compat)
        _check_extras(iou)  # checked here, not at the first update
        self.line_width, self.iou, self.compat = float(line_width), iou, compat
        for name in ("tp", "fp", "fn"):
            self.add_state(name, torch.zeros(len(IOU_RANGE), dtype=torch.long), dist_reduce_fx="sum")
        add_config_state(self, ("LLAMAS", self.line_width, iou, compat))

    def update(
        self, preds: Tensor, target: Tensor, *, preds_mask: Tensor | None = None, target_mask: Tensor | None = None
    ) -> None:
        """Add a batch (shapes as in :func:`llamas_matches`)."""
        counts = llamas_counts(
            preds,
            target,
            preds_mask=preds_mask,
            target_mask=target_mask,
            line_width=self.line_width,
            iou=self.iou,
            iou_thresholds=IOU_RANGE,
            compat=self.compat,
            validate_args=self.validate_args,
        )
        self.tp = self.tp + counts["tp"].sum(0).to(self.tp.device)
        self.fp = self.fp + counts["fp"].sum(0).to(self.fp.device)
        self.fn = self.fn + counts["fn"].sum(0).to(self.fn.device)

    def compute(self) -> dict[str, Tensor]:
        """``{"precision", "recall", "f1", "f1_75", "mean_f1"}`` from the accumulated totals."""
        return _scores(self.tp, self.fp, self.fn)


class LlamasPrecision(ScalarMetric, LlamasMetrics):
    """LLAMAS precision at IoU > 0.5 over all frames seen (arguments as :class:`LlamasMetrics`).

    Examples:
        >>> from drivemetrics.lane import LlamasPrecision, llamas_example_inputs
        >>> LlamasPrecision()(**llamas_example_inputs())
        tensor(0.5000, dtype=torch.float64)
    """

    key = "precision"


class LlamasRecall(ScalarMetric, LlamasMetrics):
    """LLAMAS recall at IoU > 0.5 over all frames seen (arguments as :class:`LlamasMetrics`).

    Examples:
        >>> from drivemetrics.lane import LlamasRecall, llamas_example_inputs
        >>> LlamasRecall()(**llamas_example_inputs())
        tensor(1., dtype=torch.float64)
    """

    key = "recall"


class LlamasF1Score(ScalarMetric, LlamasMetrics):
    """LLAMAS F1 at IoU > 0.5 over all frames seen, a scalar for ``self.log`` (arguments as :class:`LlamasMetrics`).

    Examples:
        >>> from drivemetrics.lane import LlamasF1Score, llamas_example_inputs
        >>> LlamasF1Score()(**llamas_example_inputs())
        tensor(0.6667, dtype=torch.float64)
    """

    key = "f1"


class LlamasF1Score75(ScalarMetric, LlamasMetrics):
    """CLRNet's LLAMAS F1@75: F1 at IoU > 0.75 over all frames seen (arguments as :class:`LlamasMetrics`).

    Examples:
        >>> from drivemetrics.lane import LlamasF1Score75, llamas_example_inputs
        >>> LlamasF1Score75()(**llamas_example_inputs())
        tensor(0.6667, dtype=torch.float64)
    """

    key = "f1_75"


class LlamasMeanF1Score(ScalarMetric, LlamasMetrics):
    """CLRNet's LLAMAS mF1: mean F1 over IoU 0.50:0.05:0.95 (arguments as :class:`LlamasMetrics`).

    Examples:
        >>> from drivemetrics.lane import LlamasMeanF1Score, llamas_example_inputs
        >>> LlamasMeanF1Score()(**llamas_example_inputs())
        tensor(0.6667, dtype=torch.float64)
    """

    key = "mean_f1"
