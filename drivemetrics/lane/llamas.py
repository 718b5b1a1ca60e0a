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

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor

from drivemetrics._internal.compat import Compat, check_compat
from drivemetrics._internal.compute import precision_recall_f1
from drivemetrics._internal.metric import MetricFamily, ScalarMetric, add_config_state
from drivemetrics._internal.validation import check_tensor
from drivemetrics.lane.llamas_scoring import (
    IOU_KINDS,
    IOU_RANGE,
    LLAMAS_HEIGHT,
    LLAMAS_WIDTH,
    IoUKind,
    check_iou_extras,
    frame_matched_ious,
    llamas_interpolate,
    llamas_label_lanes,
)
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
    check_iou_extras(iou)
    p_np, g_np = preds.detach().cpu().double().numpy(), target.detach().cpu().double().numpy()
    pv, gv = p_valid.cpu().numpy(), g_valid.cpu().numpy()
    pl, gl = pred_lane.cpu().numpy(), gt_lane.cpu().numpy()
    for i in range(preds.shape[0]):  # per frame: scipy's splprep and assignment, OpenCV's lines
        pc, gc = np.flatnonzero(pl[i]), np.flatnonzero(gl[i])
        if not (pc.size and gc.size):
            continue
        pr = [p_np[i, k][pv[i, k]] for k in pc]
        gs = [g_np[i, k][gv[i, k]] for k in gc]
        matched[i, gc] = frame_matched_ious(gs, pr, line_width, iou, where=f"frame {i}")
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
        check_iou_extras(iou)  # checked here, not at the first update
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
