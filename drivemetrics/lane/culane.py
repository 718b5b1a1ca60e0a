"""CULane lane F1: lanes drawn as wide curves, IoU, one-to-one matching, TP / FP / FN counts.

As in the CULane evaluator (Pan et al., SCNN, ``tools/lane_evaluation``): every lane is interpolated with a natural
cubic spline, drawn ``line_width`` px wide (default 30) on an ``(H, W)`` image (default 590 x 1640); the IoU of every
(GT, prediction) pair is the pixel intersection over union of the drawings; GT and predicted lanes are paired
one-to-one maximising the total IoU; a pair with IoU ``> iou_threshold`` (strict, default 0.5) is a true positive,
``FP = n_pred - TP``, ``FN = n_gt - TP``; precision, recall and F1 come from the totals over the dataset.

Two modes:

* default: batched torch on any device. A lane is the natural cubic spline through its points (chord-length
  parameter, as the official tool), sampled every ``spacing`` px of chord (default 8); a pixel (center at integer
  coordinates) is inside when its distance to the sampled curve is ``<= line_width / 2``, computed in closed form
  per image row (no per-pixel loop); matching is ``scipy.optimize.linear_sum_assignment`` on ``1 - IoU``. Lanes
  with fewer than 2 points are dropped with a warning that counts them (the official tool scores them as lanes of
  IoU 0); consecutive repeated points are merged. IoUs differ from the official ones by the official tool's integer
  rounding of every point and OpenCV's polygonal pen (measured in the README).
* ``compat="reference"``: the official C++ evaluator step by step (:mod:`drivemetrics.lane.culane_official`,
  needs ``opencv-python-headless``, the ``culane`` extra): 0- and 1-point lanes count with IoU 0, float32 points,
  the tool's spline with 50 steps per interval, ``cvRound``, ``cv::line`` of thickness 30, its Kuhn-Munkres.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import torch
from torch import Tensor

from drivemetrics._internal.compat import Compat, check_compat
from drivemetrics._internal.compute import precision_recall_f1
from drivemetrics._internal.metric import MetricFamily, ScalarMetric, add_config_state
from drivemetrics._internal.validation import check_coordinates_within_limit, check_shape, check_tensor
from drivemetrics.lane.raster import check_lane_points, draw_lanes_in_chunks, row_intervals, spline_samples

__all__ = [
    "IOU_RANGE",
    "CULaneF1Score",
    "CULaneMetrics",
    "CULanePrecision",
    "CULaneRecall",
    "counts_from_matches",
    "culane_counts",
    "culane_f1",
    "culane_matches",
    "lane_iou_matrix",
    "lanes_from_rows",
]

IOU_RANGE = tuple(round(0.5 + 0.05 * k, 2) for k in range(10))  # mF1: mean F1 over IoU 0.50:0.05:0.95


def counts_from_matches(matches: dict[str, Tensor], iou_threshold: float = 0.5) -> dict[str, Tensor]:
    """Per-image ``tp``, ``fp``, ``fn`` (``(B,)`` long) at ``iou_threshold`` (strict) from :func:`culane_matches`."""
    tp = (matches["matched_iou"] > iou_threshold).sum(-1)
    return {"tp": tp, "fp": matches["num_pred"] - tp, "fn": matches["num_gt"] - tp}


def lanes_from_rows(xs: Tensor, ys: Tensor) -> Tensor:
    """Turn row-sampled lanes (``(B, L, N)`` x at rows ``ys``: ``N`` or ``(B, N)``) into ``(B, L, N, 2)`` points."""
    check_shape(xs, "xs", ("B", "L", "N"))
    if ys.ndim == 1:
        ys = ys.expand(xs.shape[0], -1)
    check_shape(ys, "ys", (xs.shape[0], xs.shape[2]))
    ys = ys.to(device=xs.device, dtype=xs.dtype)[:, None, :].expand_as(xs)
    return torch.stack([xs, torch.where(torch.isnan(xs), torch.nan, ys)], dim=-1)


def lane_iou_matrix(
    preds: Tensor,
    target: Tensor,
    *,
    height: int = 590,
    width: int = 1640,
    line_width: float = 30.0,
    preds_mask: Tensor | None = None,
    target_mask: Tensor | None = None,
    spacing: float = 8.0,
    validate_args: bool = True,
) -> Tensor:
    """IoU of every (prediction, GT) lane pair, default mode: ``(B, L_pred, L_gt)`` float64 (0 for padding slots
    and for lanes of fewer than 2 points). Lanes are drawn as their spline
    (:func:`drivemetrics.lane.raster.spline_lanes`, ``spacing`` px). ``validate_args`` refuses infinite
    coordinates and those beyond ``max_abs_coordinate`` (NaN marks padding; a read-back).

    Examples:
        >>> import torch
        >>> from drivemetrics.functional import lane_iou_matrix
        >>> lane = torch.tensor([[[[800.0, 580.0], [820.0, 300.0]]]])  # (B, L_gt, P, 2) = (1, 1, 2, 2), pixels
        >>> preds = torch.cat([lane, lane + torch.tensor([300.0, 0.0])], 1)  # the lane and a false one 300 px right
        >>> lane_iou_matrix(preds, lane)  # (B, L_pred, L_gt)
        tensor([[[1.],
                 [0.]]], dtype=torch.float64)
    """
    if not (line_width > 0 and height > 0 and width > 0):
        raise ValueError(f"need line_width, height, width > 0, got {line_width}, {height}, {width}")
    check_tensor(preds, "preds")
    check_tensor(target, "target")
    if preds.shape[0] != target.shape[0]:
        raise ValueError(
            f"`preds` and `target` must have the same batch size, got {preds.shape[0]} and {target.shape[0]}"
        )
    if validate_args:
        check_coordinates_within_limit(preds, "preds", nan_ok=True)
        check_coordinates_within_limit(target, "target", nan_ok=True)
    r = (line_width + 1) / 2  # OpenCV's pen of width w covers w + 1 px across, whatever the direction
    pred_curve, pred_tangent, pred_drawn = spline_samples(preds, preds_mask, spacing, 1024)
    gt_curve, gt_tangent, gt_drawn = spline_samples(target, target_mask, spacing, 1024)
    pf, pl, p_mono = row_intervals(pred_curve, pred_tangent, pred_drawn, height, width, r)
    gf, gl, g_mono = row_intervals(gt_curve, gt_tangent, gt_drawn, height, width, r)
    inter = (torch.minimum(pl[:, :, None], gl[:, None]) - torch.maximum(pf[:, :, None], gf[:, None]) + 1).clamp(min=0)
    inter = inter.sum(-1).to(torch.float64)
    area_p = (pl - pf + 1).clamp(min=0).sum(-1).to(torch.float64)
    area_g = (gl - gf + 1).clamp(min=0).sum(-1).to(torch.float64)
    union = area_p[:, :, None] + area_g[:, None, :] - inter
    iou = torch.where(union > 0, inter / union.clamp(min=1), 0.0)
    # lanes that turn back in y can cut a row twice: those images are drawn pixel by pixel
    redo = ~((p_mono | ~pred_drawn).all(-1) & (g_mono | ~gt_drawn).all(-1))
    for i in redo.nonzero().flatten().tolist():
        pm = draw_lanes_in_chunks(pred_curve[i], pred_drawn[i], height, width, 2 * r).flatten(1)
        gm = draw_lanes_in_chunks(gt_curve[i], gt_drawn[i], height, width, 2 * r).flatten(1)
        # a few lanes at a time: float or int copies of every mask would cost L x H x W x 4 (or 8) bytes
        gm_float = [gm[k : k + 8].to(torch.float32) for k in range(0, len(gm), 8)]
        gm_area = torch.cat([g.sum(-1) for g in gm_float] or [torch.zeros(0)]).to(torch.float64)
        rows_i, pm_area = [], []
        for k in range(0, len(pm), 8):
            chunk = pm[k : k + 8].to(torch.float32)
            rows_i.append(torch.cat([chunk @ g.T for g in gm_float] or [torch.zeros(len(chunk), 0)], dim=1))
            pm_area.append(chunk.sum(-1))
        inter_i = torch.cat(rows_i or [torch.zeros(0, len(gm))]).to(torch.float64)
        pm_area_t = torch.cat(pm_area or [torch.zeros(0)]).to(torch.float64)
        union_i = pm_area_t[:, None] + gm_area[None] - inter_i
        iou[i] = torch.where(union_i > 0, inter_i / union_i.clamp(min=1), 0.0)
    return iou


def _warn_short(valid: Tensor, lane_mask: Tensor, name: str) -> Tensor:
    """Drop lane slots with fewer than 2 valid points, warning with their number; returns the new lane mask."""
    short = lane_mask & (valid.sum(-1) < 2)
    n_short = int(short.sum())
    if n_short:
        warnings.warn(
            f"{n_short} {name} lane(s) with fewer than 2 points dropped (compat='reference' scores them as lanes "
            "with IoU 0, as the official tool)",
            stacklevel=3,
        )
    return lane_mask & ~short


def _hungarian(iou: np.ndarray) -> np.ndarray:
    """GT -> prediction match (``-1`` = none) maximising the total IoU; ``iou`` is ``(n_gt, n_pred)``."""
    from scipy.optimize import linear_sum_assignment

    match = np.full(iou.shape[0], -1, dtype=np.int64)
    if iou.size:
        rows, cols = linear_sum_assignment(1.0 - iou)
        match[rows] = cols
    return match


def culane_matches(
    preds: Tensor,
    target: Tensor,
    *,
    height: int = 590,
    width: int = 1640,
    line_width: float = 30.0,
    preds_mask: Tensor | None = None,
    target_mask: Tensor | None = None,
    compat: Compat = "default",
    validate_args: bool = True,
) -> dict[str, Tensor]:
    """Match predictions to GT lanes per image; :func:`counts_from_matches` gives TP / FP / FN at any threshold.

    Args:
        preds: ``(B, L_pred, P, 2)`` predicted lane points ``(x, y)`` in pixels, NaN = padding
            (:func:`lanes_from_rows` converts row-sampled lanes).
        target: ``(B, L_gt, Q, 2)`` GT lane points.
        height, width: image size (CULane 590 x 1640).
        line_width: drawn lane width in pixels (30).
        preds_mask, target_mask: optional ``(B, L)`` bools of real lanes (default: slots with a valid point; give
            them to count lanes of 0 points in compat mode).
        compat: ``"default"`` or ``"reference"`` (the official C++ tool, CPU, needs OpenCV).
        validate_args: check the inputs' values (reads back from the device); ``False`` skips those checks.

    Returns:
        ``"matched_iou"``: ``(B, L_gt)`` float64 IoU of every GT lane with its matched prediction (NaN: no match or
        padding); ``"num_pred"``, ``"num_gt"``: ``(B,)`` long numbers of scored lanes. TP at threshold ``t`` is
        ``(matched_iou > t)`` summed over the lanes.

    Examples:
        >>> import torch
        >>> from drivemetrics.functional import culane_matches
        >>> lane = torch.tensor([[[[800.0, 580.0], [820.0, 300.0]]]])  # (B, L_gt, P, 2) = (1, 1, 2, 2), pixels
        >>> preds = torch.cat([lane, lane + torch.tensor([300.0, 0.0])], 1)  # the lane and a false one 300 px right
        >>> culane_matches(preds, lane)
        {'matched_iou': tensor([[1.]], dtype=torch.float64), 'num_pred': tensor([2]), 'num_gt': tensor([1])}
    """
    check_compat(compat)
    check_tensor(preds, "preds")
    check_tensor(target, "target")
    if preds.shape[0] != target.shape[0]:
        raise ValueError(
            f"`preds` and `target` must have the same batch size, got {preds.shape[0]} and {target.shape[0]}"
        )
    p_valid, pred_lane = check_lane_points(preds, preds_mask, "preds", check_values=validate_args)
    g_valid, gt_lane = check_lane_points(target, target_mask, "target", check_values=validate_args)
    if compat == "reference":
        from drivemetrics.lane.culane_official import (
            matched_ious,
            official_iou_from_pixels,
            official_lanes_pixels,
            official_match,
        )

        preds_np, target_np = preds.detach().cpu().double().numpy(), target.detach().cpu().double().numpy()
        p_valid_np, g_valid_np = p_valid.cpu().numpy(), g_valid.cpu().numpy()
        pred_lane_np, gt_lane_np = pred_lane.cpu().numpy(), gt_lane.cpu().numpy()
        matched = np.full(target.shape[:2], np.nan)
        gt_rows = [np.flatnonzero(gt_lane_np[i]) for i in range(preds.shape[0])]
        pred_rows = [np.flatnonzero(pred_lane_np[i]) for i in range(preds.shape[0])]
        # the splines of every lane of the batch at once, then each image's IoU matrix
        gt_pixels = official_lanes_pixels(
            [target_np[i, k][g_valid_np[i, k]] for i, rows in enumerate(gt_rows) for k in rows]
        )
        pred_pixels = official_lanes_pixels(
            [preds_np[i, k][p_valid_np[i, k]] for i, rows in enumerate(pred_rows) for k in rows]
        )
        g_start = p_start = 0
        for i in range(preds.shape[0]):
            n_g, n_p = len(gt_rows[i]), len(pred_rows[i])
            gts, prs = gt_pixels[g_start : g_start + n_g], pred_pixels[p_start : p_start + n_p]
            g_start, p_start = g_start + n_g, p_start + n_p
            iou = official_iou_from_pixels(gts, prs, int(height), int(width), round(line_width))
            matched[i, gt_rows[i]] = matched_ious(iou, official_match(iou))
    else:
        pred_lane = _warn_short(p_valid, pred_lane, "predicted")
        gt_lane = _warn_short(g_valid, gt_lane, "GT")
        iou_all = (
            lane_iou_matrix(
                preds,
                target,
                height=height,
                width=width,
                line_width=line_width,
                preds_mask=pred_lane,
                target_mask=gt_lane,
                validate_args=False,
            )
            .cpu()
            .numpy()
        )
        pred_lane_np, gt_lane_np = pred_lane.cpu().numpy(), gt_lane.cpu().numpy()
        matched = np.full(target.shape[:2], np.nan)
        for i in range(preds.shape[0]):  # scipy's assignment runs per image on the CPU
            gt_rows, pred_cols = np.flatnonzero(gt_lane_np[i]), np.flatnonzero(pred_lane_np[i])
            iou = iou_all[i][np.ix_(pred_cols, gt_rows)].T
            match = _hungarian(iou)
            has = match >= 0
            matched[i, gt_rows[has]] = iou[np.flatnonzero(has), match[has]]
    device = preds.device
    return {
        "matched_iou": torch.from_numpy(matched).to(device),
        "num_pred": pred_lane.sum(-1).to(device),
        "num_gt": gt_lane.sum(-1).to(device),
    }


def culane_counts(
    preds: Tensor,
    target: Tensor,
    *,
    height: int = 590,
    width: int = 1640,
    line_width: float = 30.0,
    iou_threshold: float = 0.5,
    preds_mask: Tensor | None = None,
    target_mask: Tensor | None = None,
    compat: Compat = "default",
    validate_args: bool = True,
) -> dict[str, Tensor]:
    """Per-image CULane TP, FP, FN at ``iou_threshold`` (strict; 0.5, also 0.3 and 0.75 are used).

    Other arguments as :func:`culane_matches`. Returns ``{"tp", "fp", "fn"}``, ``(B,)`` long tensors.

    Examples:
        >>> import torch
        >>> from drivemetrics.functional import culane_counts
        >>> lane = torch.tensor([[[[800.0, 580.0], [820.0, 300.0]]]])  # (B, L_gt, P, 2) = (1, 1, 2, 2), pixels
        >>> preds = torch.cat([lane, lane + torch.tensor([300.0, 0.0])], 1)  # the lane and a false one 300 px right
        >>> culane_counts(preds, lane)
        {'tp': tensor([1]), 'fp': tensor([1]), 'fn': tensor([0])}
    """
    if not 0 <= iou_threshold < 1:
        raise ValueError(f"`iou_threshold` must be in [0, 1), got {iou_threshold}")
    matches = culane_matches(
        preds,
        target,
        height=height,
        width=width,
        line_width=line_width,
        preds_mask=preds_mask,
        target_mask=target_mask,
        compat=compat,
        validate_args=validate_args,
    )
    return counts_from_matches(matches, iou_threshold)


def culane_f1(
    preds: Tensor,
    target: Tensor,
    *,
    height: int = 590,
    width: int = 1640,
    line_width: float = 30.0,
    iou_threshold: float = 0.5,
    preds_mask: Tensor | None = None,
    target_mask: Tensor | None = None,
    compat: Compat = "default",
    validate_args: bool = True,
) -> dict[str, Tensor]:
    """CULane ``precision``, ``recall``, ``f1`` from the batch's total TP / FP / FN (0 when undefined).

    Arguments as in :func:`culane_counts`.

    Examples:
        >>> import torch
        >>> from drivemetrics.functional import culane_f1
        >>> lane = torch.tensor([[[[800.0, 580.0], [820.0, 300.0]]]])  # (B, L_gt, P, 2) = (1, 1, 2, 2), pixels
        >>> preds = torch.cat([lane, lane + torch.tensor([300.0, 0.0])], 1)  # the lane and a false one 300 px right
        >>> {key: round(value.item(), 4) for key, value in culane_f1(preds, lane).items()}
        {'precision': 0.5, 'recall': 1.0, 'f1': 0.6667}
    """
    counts = culane_counts(
        preds,
        target,
        height=height,
        width=width,
        line_width=line_width,
        iou_threshold=iou_threshold,
        preds_mask=preds_mask,
        target_mask=target_mask,
        compat=compat,
        validate_args=validate_args,
    )
    return precision_recall_f1(counts["tp"].sum(), counts["fp"].sum(), counts["fn"].sum())


class CULaneMetrics(MetricFamily):
    """CULane F1 accumulated over batches: sum-reduced TP / FP / FN counters.

    ``update(preds, target, preds_mask=None, target_mask=None)`` as :func:`culane_counts`; ``compute()`` returns
    ``{"precision", "recall", "f1"}`` (0-d float64).

    Args:
        height, width: image size in pixels (CULane 590 x 1640).
        line_width: drawn lane width in pixels (30).
        iou_threshold: IoU above which a matched pair counts (0.5).
        compat: ``"default"`` or ``"reference"`` (official C++ tool, CPU, needs OpenCV).
        kwargs: torchmetrics ``Metric`` keyword arguments.
        validate_args: check the inputs' values (reads back from the device); ``False`` skips those checks.

    Examples:
        >>> import torch
        >>> from drivemetrics.lane import CULaneMetrics
        >>> lane = torch.tensor([[[[800.0, 580.0], [820.0, 300.0]]]])  # (B, L_gt, P, 2) = (1, 1, 2, 2), pixels
        >>> preds = torch.cat([lane, lane + torch.tensor([300.0, 0.0])], 1)  # the lane and a false one 300 px right
        >>> metric = CULaneMetrics()
        >>> metric.update(preds, lane)
        >>> {key: round(value.item(), 4) for key, value in metric.compute().items()}
        {'precision': 0.5, 'recall': 1.0, 'f1': 0.6667}
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
        height: int = 590,
        width: int = 1640,
        line_width: float = 30.0,
        iou_threshold: float = 0.5,
        compat: Compat = "default",
        validate_args: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.validate_args = bool(validate_args)
        if not (height > 0 and width > 0 and line_width > 0):
            raise ValueError(f"need height, width, line_width > 0, got {height}, {width}, {line_width}")
        if not 0 <= iou_threshold < 1:
            raise ValueError(f"`iou_threshold` must be in [0, 1), got {iou_threshold}")
        check_compat(compat)
        if compat == "reference":  # OpenCV draws the lanes: checked here, not at the first update
            from drivemetrics.lane.culane_official import load_cv2

            load_cv2()
        self.height, self.width = int(height), int(width)
        self.line_width = float(line_width)
        self.iou_threshold = float(iou_threshold)
        self.compat = compat
        for name in ("tp", "fp", "fn"):
            self.add_state(name, torch.zeros((), dtype=torch.long), dist_reduce_fx="sum")
        # what the counters mean, as a constant state: keeps differently configured metrics out of one compute group
        add_config_state(self, ("CULane", self.height, self.width, self.line_width, self.iou_threshold, compat))

    def update(
        self, preds: Tensor, target: Tensor, *, preds_mask: Tensor | None = None, target_mask: Tensor | None = None
    ) -> None:
        """Add a batch (shapes as in :func:`culane_counts`)."""
        counts = culane_counts(
            preds,
            target,
            height=self.height,
            width=self.width,
            line_width=self.line_width,
            iou_threshold=self.iou_threshold,
            preds_mask=preds_mask,
            target_mask=target_mask,
            compat=self.compat,
            validate_args=self.validate_args,
        )
        self.tp = self.tp + counts["tp"].sum()
        self.fp = self.fp + counts["fp"].sum()
        self.fn = self.fn + counts["fn"].sum()

    def compute(self) -> dict[str, Tensor]:
        """``{"precision", "recall", "f1"}`` from the accumulated totals."""
        return precision_recall_f1(self.tp, self.fp, self.fn)


# Scalar classes for ``self.log``: they share CULaneMetrics' counters, so a MetricCollection of them counts once.


class CULanePrecision(ScalarMetric, CULaneMetrics):
    """CULane precision ``TP / (TP + FP)`` over all images seen (arguments as :class:`CULaneMetrics`).

    Examples:
        >>> from drivemetrics.lane import CULanePrecision, culane_example_inputs
        >>> CULanePrecision()(**culane_example_inputs())
        tensor(0.5000, dtype=torch.float64)
    """

    key = "precision"


class CULaneRecall(ScalarMetric, CULaneMetrics):
    """CULane recall ``TP / (TP + FN)`` over all images seen (arguments as :class:`CULaneMetrics`).

    Examples:
        >>> from drivemetrics.lane import CULaneRecall, culane_example_inputs
        >>> CULaneRecall()(**culane_example_inputs())
        tensor(1., dtype=torch.float64)
    """

    key = "recall"


class CULaneF1Score(ScalarMetric, CULaneMetrics):
    """CULane F1 over all images seen, a scalar for ``self.log`` (arguments as :class:`CULaneMetrics`).

    Examples:
        >>> from drivemetrics.lane import CULaneF1Score, culane_example_inputs
        >>> CULaneF1Score()(**culane_example_inputs())
        tensor(0.6667, dtype=torch.float64)
    """

    key = "f1"
