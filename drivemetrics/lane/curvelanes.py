"""CurveLanes lane F1 as the papers report it (CondLaneNet, CLRerNet, ...): the vega lane metric.

As in Huawei Noah's ``lane_metric.py`` (vega, copied in CondLaneNet's ``tools/condlanenet/lane_metric.py``): GT and
predicted lanes are scaled separately and anisotropically to a 224 x 224 image (``x / (W / 224)``, ``y / (H /
224)``, each with its own image size); every lane is the natural cubic spline through its points in chord length,
sampled at ``t = 0, 1, 2, ... < h`` on every interval plus its last point, the samples truncated to integers and
joined with OpenCV lines 5 px wide; IoU = intersection / union of the drawn pixels (0 for an empty union); GT and
predicted lanes are paired one-to-one (``linear_sum_assignment`` on ``1 - IoU``); a pair with IoU ``> 0.5`` is a
hit. Predictions are kept when their score is ``> t`` (lanes without a score always); the papers report ``t =
0.5``, vega's ``LaneMetric`` the best F1 over ``t = 0.1, ..., 0.9``. Precision = hits / #pred, recall = hits / #GT,
F1 their harmonic mean, from the dataset totals. 1-point lanes draw nothing but count (GT: FN, prediction: FP).

Two modes (both draw with OpenCV, the ``culane`` extra; the splines of all lanes of one point count are computed at
once, each lane is drawn once and the IoUs of a frame come from one matrix product):

* ``compat="reference"``: the official numbers, bugs included: ``P = hits / (#pred + eps)``, ``R = hits / (#GT +
  eps)``, ``F1 = 2PR / (P + R + eps)`` with ``eps = sys.float_info.epsilon`` (a perfect recall reads
  0.9999999999999998); a lane with a repeated consecutive point (chord length 0) raises ``ValueError`` (the
  official spline divides 0 by 0 and ``int(NaN)`` raises).
* default: the same drawing; consecutive repeated points are merged (the lane is scored, not a crash), precision,
  recall and F1 are exact fractions (0 when undefined, no epsilon).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor

from drivemetrics._internal.compat import Compat, check_compat
from drivemetrics._internal.compute import precision_recall_f1
from drivemetrics._internal.metric import MetricFamily, ScalarMetric, add_config_state
from drivemetrics._internal.validation import check_shape, check_tensor, check_values
from drivemetrics.lane.curvelanes_scoring import SCORE_THRESHOLDS, curvelanes_spline, score_lane_frames
from drivemetrics.lane.raster import check_lane_points

__all__ = [
    "SCORE_THRESHOLDS",
    "CurveLanesF1Score",
    "CurveLanesMetrics",
    "CurveLanesPrecision",
    "CurveLanesRecall",
    "curvelanes_counts",
    "curvelanes_f1",
    "curvelanes_matches",
    "curvelanes_scores",
    "curvelanes_spline",
]


def curvelanes_matches(
    preds: Tensor,
    target: Tensor,
    *,
    image_size: Tensor,
    preds_size: Tensor | None = None,
    scores: Tensor | None = None,
    preds_mask: Tensor | None = None,
    target_mask: Tensor | None = None,
    score_thresholds: Sequence[float] = (0.5,),
    iou_threshold: float = 0.5,
    compat: Compat = "default",
    validate_args: bool = True,
) -> dict[str, Tensor]:
    """Hits, predicted and GT lane counts of CurveLanes frames at each score threshold.

    Args:
        preds: ``(B, L_pred, P, 2)`` predicted lane points ``(x, y)`` in pixels of the prediction's own frame
            (``preds_size``), NaN = padding.
        target: ``(B, L_gt, Q, 2)`` GT lane points in pixels of the image (``image_size``).
        image_size: ``(B, 2)`` image width and height (pixels) of each frame.
        preds_size: ``(B, 2)`` width and height the predictions are given in (the prediction's ``Shape``;
            default: ``image_size``).
        scores: optional ``(B, L_pred)`` lane scores, NaN = unscored (always kept).
        preds_mask, target_mask: optional ``(B, L)`` bools of real lanes (default: slots with a valid point);
            lanes of 0 points are dropped, as the metric drops empty point lists.
        score_thresholds: a prediction with a score is kept at ``t`` when ``score > t`` (strict).
        iou_threshold: a matched pair with IoU ``> iou_threshold`` is a hit (0.5).
        compat: ``"default"`` merges repeated consecutive points; ``"reference"`` raises on them as the official
            code does.
        validate_args: check the inputs' values (reads back from the device); ``False`` skips those checks.

    Returns:
        ``{"hits", "num_pred"}``: ``(B, T)`` long per score threshold; ``"num_gt"``: ``(B,)`` long.

    Examples:
        >>> import torch
        >>> from drivemetrics.functional import curvelanes_matches
        >>> gt = torch.tensor([[[[1000.0, 1439.0], [1200.0, 700.0]]]])  # (B, L, Q, 2) in a 2560 x 1440 image
        >>> preds = torch.cat([gt, gt + torch.tensor([600.0, 0.0])], 1)  # the lane and a false one
        >>> size = torch.tensor([[2560.0, 1440.0]])
        >>> scores = torch.tensor([[0.9, 0.3]])
        >>> curvelanes_matches(preds, gt, image_size=size, scores=scores, score_thresholds=(0.1, 0.5))
        {'hits': tensor([[1, 1]]), 'num_pred': tensor([[2, 1]]), 'num_gt': tensor([1])}
    """
    check_compat(compat)
    thresholds = [float(t) for t in score_thresholds]
    if not thresholds or not all(0 <= t <= 1 for t in thresholds):
        raise ValueError(f"`score_thresholds` must be one or more values in [0, 1], got {score_thresholds}")
    if not 0 <= iou_threshold < 1:
        raise ValueError(f"`iou_threshold` must be in [0, 1), got {iou_threshold}")
    check_tensor(preds, "preds")
    check_tensor(target, "target")
    b = target.shape[0]
    if preds.shape[0] != b:
        raise ValueError(f"`preds` and `target` must have the same batch size, got {preds.shape[0]} and {b}")
    p_valid, pred_lane = check_lane_points(preds, preds_mask, "preds", check_values=validate_args)
    g_valid, gt_lane = check_lane_points(target, target_mask, "target", check_values=validate_args)
    check_shape(image_size, "image_size", (b, 2))
    sizes = image_size.detach().cpu().double().numpy()
    p_sizes = sizes if preds_size is None else preds_size.detach().cpu().double().numpy()
    if preds_size is not None:
        check_shape(preds_size, "preds_size", (b, 2))
    if validate_args and not (np.isfinite(sizes).all() and (sizes > 0).all()):
        raise ValueError("`image_size` must be finite and > 0")
    if validate_args and not (np.isfinite(p_sizes).all() and (p_sizes > 0).all()):
        raise ValueError("`preds_size` must be finite and > 0")
    score_np = np.full(pred_lane.shape, np.nan)
    if scores is not None:
        check_shape(scores, "scores", tuple(pred_lane.shape))
        if validate_args:  # NaN: unscored (always kept)
            check_values(scores, "scores", nan_ok=True, what="scores")
        score_np = scores.detach().cpu().double().numpy()
    pred_lane = pred_lane & p_valid.any(-1)
    gt_lane = gt_lane & g_valid.any(-1)
    p_np, g_np = preds.detach().cpu().double().numpy(), target.detach().cpu().double().numpy()
    pv, gv = p_valid.cpu().numpy(), g_valid.cpu().numpy()
    pl, gl = pred_lane.cpu().numpy(), gt_lane.cpu().numpy()
    # every lane of the batch scaled to 224 x 224, splined and drawn once; per frame one product for the IoUs
    gts = [[g_np[i, k][gv[i, k]] for k in np.flatnonzero(gl[i])] for i in range(b)]
    prs = [[p_np[i, k][pv[i, k]] for k in np.flatnonzero(pl[i])] for i in range(b)]
    lane_scores = [score_np[i, np.flatnonzero(pl[i])] for i in range(b)]
    hits, n_pred, _ = score_lane_frames(
        gts, sizes, prs, lane_scores, p_sizes, thresholds, iou_threshold=iou_threshold, compat=compat
    )
    device = preds.device
    return {
        "hits": torch.from_numpy(hits).to(device),
        "num_pred": torch.from_numpy(n_pred).to(device),
        "num_gt": gt_lane.sum(-1).to(device),
    }


def curvelanes_scores(
    hits: Tensor, num_pred: Tensor, num_gt: Tensor, *, compat: Compat = "default"
) -> dict[str, Tensor]:
    """``{"precision", "recall", "f1"}`` (float64) from total hits, predicted and GT lanes.

    ``compat="reference"`` adds vega's ``sys.float_info.epsilon`` to every denominator; the default is exact (0
    when undefined).

    Examples:
        >>> import torch
        >>> from drivemetrics.lane.curvelanes import curvelanes_scores
        >>> one = torch.tensor(1)
        >>> curvelanes_scores(one, one, one, compat="reference")["recall"].item()
        0.9999999999999998
        >>> curvelanes_scores(one, one, one)["recall"].item()
        1.0
    """
    if check_compat(compat):
        eps = sys.float_info.epsilon
        h, p, g = (v.to(torch.float64) for v in (hits, num_pred, num_gt))
        precision, recall = h / (p + eps), h / (g + eps)
        return {"precision": precision, "recall": recall, "f1": 2 * precision * recall / (precision + recall + eps)}
    return precision_recall_f1(hits, num_pred - hits, num_gt - hits)


def curvelanes_counts(
    preds: Tensor,
    target: Tensor,
    *,
    image_size: Tensor,
    preds_size: Tensor | None = None,
    scores: Tensor | None = None,
    preds_mask: Tensor | None = None,
    target_mask: Tensor | None = None,
    score_threshold: float = 0.5,
    iou_threshold: float = 0.5,
    compat: Compat = "default",
    validate_args: bool = True,
) -> dict[str, Tensor]:
    """Per-frame ``tp``, ``fp``, ``fn`` (``(B,)`` long) at one score threshold; arguments as :func:`curvelanes_matches`.

    Examples:
        >>> import torch
        >>> from drivemetrics.functional import curvelanes_counts
        >>> gt = torch.tensor([[[[1000.0, 1439.0], [1200.0, 700.0]]]])
        >>> preds = torch.cat([gt, gt + torch.tensor([600.0, 0.0])], 1)
        >>> curvelanes_counts(preds, gt, image_size=torch.tensor([[2560.0, 1440.0]]))
        {'tp': tensor([1]), 'fp': tensor([1]), 'fn': tensor([0])}
    """
    m = curvelanes_matches(
        preds,
        target,
        image_size=image_size,
        preds_size=preds_size,
        scores=scores,
        preds_mask=preds_mask,
        target_mask=target_mask,
        score_thresholds=(score_threshold,),
        iou_threshold=iou_threshold,
        compat=compat,
        validate_args=validate_args,
    )
    tp = m["hits"][:, 0]
    return {"tp": tp, "fp": m["num_pred"][:, 0] - tp, "fn": m["num_gt"] - tp}


def curvelanes_f1(
    preds: Tensor,
    target: Tensor,
    *,
    image_size: Tensor,
    preds_size: Tensor | None = None,
    scores: Tensor | None = None,
    preds_mask: Tensor | None = None,
    target_mask: Tensor | None = None,
    score_threshold: float = 0.5,
    iou_threshold: float = 0.5,
    compat: Compat = "default",
    validate_args: bool = True,
) -> dict[str, Tensor]:
    """CurveLanes ``precision``, ``recall``, ``f1`` of the batch's totals; arguments as :func:`curvelanes_matches`.

    Examples:
        >>> import torch
        >>> from drivemetrics.functional import curvelanes_f1
        >>> gt = torch.tensor([[[[1000.0, 1439.0], [1200.0, 700.0]]]])
        >>> preds = torch.cat([gt, gt + torch.tensor([600.0, 0.0])], 1)
        >>> scores = curvelanes_f1(preds, gt, image_size=torch.tensor([[2560.0, 1440.0]]))
        >>> {k: round(v.item(), 4) for k, v in scores.items()}
        {'precision': 0.5, 'recall': 1.0, 'f1': 0.6667}
    """
    c = curvelanes_counts(
        preds,
        target,
        image_size=image_size,
        preds_size=preds_size,
        scores=scores,
        preds_mask=preds_mask,
        target_mask=target_mask,
        score_threshold=score_threshold,
        iou_threshold=iou_threshold,
        compat=compat,
        validate_args=validate_args,
    )
    tp = c["tp"].sum()
    return curvelanes_scores(tp, c["fp"].sum() + tp, c["fn"].sum() + tp, compat=compat)


class CurveLanesMetrics(MetricFamily):
    """CurveLanes lane F1 accumulated over batches: sum-reduced hits, predicted and GT lanes per score threshold.

    ``update(preds, target, image_size, preds_size=None, scores=None, preds_mask=None, target_mask=None)`` as
    :func:`curvelanes_matches`; ``compute()`` returns ``{"precision", "recall", "f1"}`` at ``score_threshold`` and
    ``"max_f1"``, vega's best F1 over ``score_thresholds`` (0-d float64).

    Args:
        score_threshold: the score threshold of the reported precision / recall / F1 (0.5, the papers').
        score_thresholds: the thresholds ``max_f1`` runs over (vega's 0.1, ..., 0.9; ``score_threshold`` is added).
        iou_threshold: IoU above which a matched pair is a hit (0.5).
        compat: ``"default"`` or ``"reference"`` (vega's epsilon and its crash on repeated points).
        validate_args: check the inputs' values (reads back from the device); ``False`` skips those checks.
        kwargs: torchmetrics ``Metric`` keyword arguments.

    Examples:
        >>> import torch
        >>> from drivemetrics.lane import CurveLanesMetrics
        >>> gt = torch.tensor([[[[1000.0, 1439.0], [1200.0, 700.0]]]])  # (B, L, Q, 2) in a 2560 x 1440 image
        >>> preds = torch.cat([gt, gt + torch.tensor([600.0, 0.0])], 1)  # the lane and a false one
        >>> metric = CurveLanesMetrics()
        >>> metric.update(preds, gt, image_size=torch.tensor([[2560.0, 1440.0]]), scores=torch.tensor([[0.9, 0.3]]))
        >>> {key: round(value.item(), 4) for key, value in metric.compute().items()}
        {'precision': 1.0, 'recall': 1.0, 'f1': 1.0, 'max_f1': 1.0}
    """

    is_differentiable = False
    higher_is_better = True
    full_state_update = False
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0

    hits: Tensor
    num_pred: Tensor
    num_gt: Tensor

    def __init__(
        self,
        score_threshold: float = 0.5,
        score_thresholds: Sequence[float] = SCORE_THRESHOLDS,
        iou_threshold: float = 0.5,
        compat: Compat = "default",
        validate_args: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.validate_args = bool(validate_args)
        check_compat(compat)
        thresholds = sorted({float(t) for t in score_thresholds} | {float(score_threshold)})
        if not all(0 <= t <= 1 for t in thresholds):
            raise ValueError(f"score thresholds must lie in [0, 1], got {thresholds}")
        if not 0 <= iou_threshold < 1:
            raise ValueError(f"`iou_threshold` must be in [0, 1), got {iou_threshold}")
        from drivemetrics.lane.culane_official import load_cv2

        load_cv2("the CurveLanes lane metric")  # OpenCV draws the lanes: checked here, not at the first update
        self.thresholds = tuple(thresholds)
        self.primary = self.thresholds.index(float(score_threshold))
        self.iou_threshold, self.compat = float(iou_threshold), compat
        self.add_state("hits", torch.zeros(len(thresholds), dtype=torch.long), dist_reduce_fx="sum")
        self.add_state("num_pred", torch.zeros(len(thresholds), dtype=torch.long), dist_reduce_fx="sum")
        self.add_state("num_gt", torch.zeros((), dtype=torch.long), dist_reduce_fx="sum")
        add_config_state(self, ("CurveLanes", self.thresholds, self.primary, self.iou_threshold, compat))

    def update(
        self,
        preds: Tensor,
        target: Tensor,
        *,
        image_size: Tensor,
        preds_size: Tensor | None = None,
        scores: Tensor | None = None,
        preds_mask: Tensor | None = None,
        target_mask: Tensor | None = None,
    ) -> None:
        """Add a batch (shapes as in :func:`curvelanes_matches`)."""
        m = curvelanes_matches(
            preds,
            target,
            image_size=image_size,
            preds_size=preds_size,
            scores=scores,
            preds_mask=preds_mask,
            target_mask=target_mask,
            score_thresholds=self.thresholds,
            iou_threshold=self.iou_threshold,
            compat=self.compat,
            validate_args=self.validate_args,
        )
        self.hits = self.hits + m["hits"].sum(0).to(self.hits.device)
        self.num_pred = self.num_pred + m["num_pred"].sum(0).to(self.num_pred.device)
        self.num_gt = self.num_gt + m["num_gt"].sum().to(self.num_gt.device)

    def compute(self) -> dict[str, Tensor]:
        """``{"precision", "recall", "f1", "max_f1"}`` from the accumulated totals."""
        s = curvelanes_scores(self.hits, self.num_pred, self.num_gt, compat=self.compat)
        out = {key: value[self.primary] for key, value in s.items()}
        out["max_f1"] = s["f1"].max()
        return out


class CurveLanesPrecision(ScalarMetric, CurveLanesMetrics):
    """CurveLanes precision at score > 0.5 over all frames seen (arguments as :class:`CurveLanesMetrics`).

    Examples:
        >>> from drivemetrics.lane import CurveLanesPrecision, curvelanes_example_inputs
        >>> CurveLanesPrecision()(**curvelanes_example_inputs())
        tensor(0.5000, dtype=torch.float64)
    """

    key = "precision"


class CurveLanesRecall(ScalarMetric, CurveLanesMetrics):
    """CurveLanes recall at score > 0.5 over all frames seen (arguments as :class:`CurveLanesMetrics`).

    Examples:
        >>> from drivemetrics.lane import CurveLanesRecall, curvelanes_example_inputs
        >>> CurveLanesRecall()(**curvelanes_example_inputs())
        tensor(1., dtype=torch.float64)
    """

    key = "recall"


class CurveLanesF1Score(ScalarMetric, CurveLanesMetrics):
    """CurveLanes F1 at score > 0.5, a scalar for ``self.log`` (arguments as :class:`CurveLanesMetrics`).

    Examples:
        >>> from drivemetrics.lane import CurveLanesF1Score, curvelanes_example_inputs
        >>> CurveLanesF1Score()(**curvelanes_example_inputs())
        tensor(0.6667, dtype=torch.float64)
    """

    key = "f1"
