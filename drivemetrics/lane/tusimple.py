"""TuSimple lane metrics: accuracy, FP, FN (the official ``LaneEval.bench`` semantics) and F1, batched in torch.

Lanes are sampled at fixed image rows (``h_samples``, pixels): a lane is the vector of its x coordinates (pixels)
at those rows. In tensors a missing point is ``NaN``; like the official evaluator, any negative x (TuSimple writes
``-2``) also counts as missing.

Per image, for every ground-truth (GT) lane ``g`` (official rules):

* threshold ``20 / cos(atan(k))`` px, with ``k`` the least-squares slope of x on y over the GT lane's valid points
  (``k = 0`` when it has fewer than 2);
* point accuracy of a prediction ``p``: the fraction of the image's samples where ``|x_p - x_g| < threshold``, a
  missing point counting as ``x = -100`` (so missing in both is correct);
* ``max_acc(g)`` = the best point accuracy over all predictions (no one-to-one assignment); ``g`` is matched when
  ``max_acc >= 0.85``, else it is a false negative;
* ``FP = (n_pred - n_matched) / n_pred`` (can be negative when one prediction matches two GT lanes: LaneEval issue
  #36; the default ``compat`` counts the predictions that are nobody's best match instead), ``FN = fn / min(n_gt,
  4)``, ``accuracy = sum(max_acc) / min(n_gt, 4)``; with more than 4 GT lanes the worst ``max_acc`` is dropped and
  one false negative forgiven;
* an image with ``run_time > 200`` ms or more than ``n_gt + 2`` predictions scores ``(0, 0, 1)``.

Dataset values are per-image averages (what the official code computes, not the README's ratio of sums).
F1 is the harmonic mean of precision ``1 - FP`` and recall ``1 - FN`` of those averages.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import Tensor

from drivemetrics._internal.compat import Compat, check_compat
from drivemetrics._internal.compute import f1_score
from drivemetrics._internal.metric import MetricFamily, ScalarMetric, add_config_state
from drivemetrics._internal.validation import check_coordinates_within_limit, check_shape, check_tensor, check_values
from drivemetrics.lane.geometry import lane_slot_mask

__all__ = [
    "MAX_RUN_TIME_MS",
    "MISSING_VALUE",
    "PIXEL_THRESHOLD",
    "POINT_ACCURACY_THRESHOLD",
    "TuSimpleAccuracy",
    "TuSimpleF1Score",
    "TuSimpleFalseNegatives",
    "TuSimpleFalsePositives",
    "TuSimpleMetrics",
    "select_ego_lanes",
    "tusimple_f1",
    "tusimple_image_scores",
    "tusimple_metrics",
]

PIXEL_THRESHOLD = 20.0
POINT_ACCURACY_THRESHOLD = 0.85
MAX_RUN_TIME_MS = 200.0
MISSING_VALUE = -100.0


def _validate(preds: Tensor, target: Tensor, h_samples: Tensor, check_values: bool = True) -> Tensor:
    check_tensor(preds, "preds")
    check_tensor(target, "target")
    check_tensor(h_samples, "h_samples")
    check_shape(preds, "preds", ("B", "L_pred", "N"))
    check_shape(target, "target", (preds.shape[0], "L_gt", preds.shape[2]))
    if h_samples.ndim == 1:
        h_samples = h_samples.unsqueeze(0).expand(preds.shape[0], -1)
    check_shape(h_samples, "h_samples", (preds.shape[0], preds.shape[2]))
    if check_values:  # NaN marks a missing point; the readers' coordinate limit (`max_abs_coordinate`) applies
        check_coordinates_within_limit(preds, "preds", nan_ok=True)
        check_coordinates_within_limit(target, "target", nan_ok=True)
        check_coordinates_within_limit(h_samples, "h_samples", nan_ok=True)  # NaN: padding rows
    return h_samples


def _gt_thresholds(gt_x: Tensor, ys: Tensor, sample_ok: Tensor, pixel_threshold: float) -> Tensor:
    """Point threshold ``pixel_threshold / cos(atan(k))`` per GT lane, ``(B, L_gt)`` pixels, with ``k`` the ordinary
    least-squares slope of x on y over the lane's valid points (0 with fewer than 2)."""
    gt_valid = (gt_x >= 0) & sample_ok[:, None, :]  # NaN compares False
    weight = gt_valid.to(torch.float64)
    count = weight.sum(-1)
    safe_count = count.clamp(min=1)
    y_b = torch.where(sample_ok, ys, 0.0)[:, None, :]
    x_b = torch.where(gt_valid, gt_x, 0.0)
    y_mean = (weight * y_b).sum(-1) / safe_count
    x_mean = x_b.sum(-1) / safe_count
    dy = (y_b - y_mean[..., None]) * weight
    dx = (x_b - x_mean[..., None]) * weight
    syy = (dy * dy).sum(-1)
    slope = torch.where((count > 1) & (syy > 0), (dy * dx).sum(-1) / syy.clamp(min=1e-300), 0.0)
    return pixel_threshold / torch.cos(torch.atan(slope))


def tusimple_image_scores(
    preds: Tensor,
    target: Tensor,
    *,
    h_samples: Tensor,
    run_time: Tensor | None = None,
    preds_mask: Tensor | None = None,
    target_mask: Tensor | None = None,
    compat: Compat = "default",
    pixel_threshold: float = PIXEL_THRESHOLD,
    validate_args: bool = True,
) -> dict[str, Tensor]:
    """Official TuSimple per-image accuracy, FP and FN for a batch of images.

    Args:
        preds: ``(B, L_pred, N)`` predicted lane x coordinates (pixels) at the ``h_samples`` rows; NaN or negative
            = missing point.
        target: ``(B, L_gt, N)`` ground-truth lanes, same convention.
        h_samples: ``N`` or ``(B, N)`` row coordinates (pixels). NaN marks padding samples (images with fewer rows
            in a padded batch): they are ignored, and the accuracy denominator is the number of real samples.
        run_time: optional ``B`` run times in milliseconds (``> 200`` scores ``(0, 0, 1)``); default 0.
        preds_mask, target_mask: optional ``(B, L)`` bools telling which lane slots are real lanes. By default a
            slot is a lane when it has at least one non-NaN value, so an all-NaN slot is padding (pass a mask to
            count an all-missing prediction as a lane, as the official evaluator does for all ``-2`` lanes).
        compat: ``"default"``: FP counts the predictions that are no matched GT lane's best prediction (never
            negative); ``"reference"``: the official ``n_pred - n_matched`` (negative when one prediction matches
            two GT lanes, LaneEval issue #36).
        pixel_threshold: base point threshold in pixels (official: 20 px for 1280 x 720 images; scale it with
            the image width for other resolutions).
        validate_args: check the inputs' values (reads back from the device); ``False`` skips those checks.

    Returns:
        float64 tensors of shape ``(B,)``: ``accuracy``, ``fp``, ``fn`` (the official per-image values) and
        ``matched``, ``num_pred``, ``num_gt`` (the lane counts behind them, before the 4-lane cap and the rejection
        rules).

    Examples:
        >>> import torch
        >>> from drivemetrics.functional import tusimple_image_scores
        >>> ys = torch.arange(160.0, 720.0, 10.0)  # (N,) rows, pixels
        >>> gt = torch.stack([400 - 0.3 * (ys - 160), 880 + 0.3 * (ys - 160)])[None]  # (B, L_gt, N) = (1, 2, 56)
        >>> scores = tusimple_image_scores(gt + 5.0, gt, h_samples=ys)  # every point 5 px off: within 20 px
        >>> scores["accuracy"], scores["fp"], scores["fn"]
        (tensor([1.], dtype=torch.float64), tensor([0.], dtype=torch.float64), tensor([0.], dtype=torch.float64))
    """
    h_samples = _validate(preds, target, h_samples, validate_args)
    official_fp = check_compat(compat)
    if not pixel_threshold > 0:
        raise ValueError(f"`pixel_threshold` must be > 0 pixels, got {pixel_threshold}")
    device = preds.device
    pred_lane = lane_slot_mask(preds, preds_mask, "preds")
    gt_lane = lane_slot_mask(target, target_mask, "target")
    pred_x = preds.to(torch.float64)
    gt_x = target.to(torch.float64)
    ys = h_samples.to(device=device, dtype=torch.float64)
    sample_ok = ~torch.isnan(ys)  # B x N
    if not bool(sample_ok.any(dim=1).all()):
        raise ValueError("`h_samples` must hold at least one non-NaN row per image")
    num_samples = sample_ok.sum(dim=1).to(torch.float64)  # B

    threshold = _gt_thresholds(gt_x, ys, sample_ok, pixel_threshold)  # B x L_gt

    # Point accuracy of every (GT, prediction) pair: B x L_gt x L_pred.
    pred_m = torch.where(pred_x >= 0, pred_x, MISSING_VALUE)
    gt_m = torch.where(gt_x >= 0, gt_x, MISSING_VALUE)
    close = (pred_m[:, None, :, :] - gt_m[:, :, None, :]).abs() < threshold[..., None, None]
    close = close & sample_ok[:, None, None, :]
    pair_acc = close.sum(-1).to(torch.float64) / num_samples[:, None, None]
    pair_acc = pair_acc.masked_fill(~pred_lane[:, None, :], -1.0)
    if pair_acc.shape[-1] > 0:
        max_acc, best_pred = pair_acc.max(dim=-1)
    else:
        max_acc = torch.full(gt_lane.shape, -1.0, dtype=torch.float64, device=device)
        best_pred = torch.zeros(gt_lane.shape, dtype=torch.long, device=device)
    max_acc = max_acc.clamp(min=0.0)  # no prediction: 0

    matched_gt = gt_lane & (max_acc >= POINT_ACCURACY_THRESHOLD)
    missed_gt = gt_lane & ~matched_gt
    n_gt = gt_lane.sum(-1).to(torch.float64)
    n_pred = pred_lane.sum(-1).to(torch.float64)
    matched = matched_gt.sum(-1).to(torch.float64)
    fn = missed_gt.sum(-1).to(torch.float64)

    if official_fp:
        fp = n_pred - matched
    else:
        slots = torch.arange(pred_lane.shape[-1], device=device)
        is_best = ((best_pred[..., None] == slots) & matched_gt[..., None]).any(dim=1)  # B x L_pred
        fp = n_pred - (is_best & pred_lane).sum(-1).to(torch.float64)

    many = n_gt > 4
    fn = torch.where(many & (fn > 0), fn - 1, fn)
    acc_sum = torch.where(gt_lane, max_acc, 0.0).sum(-1)
    worst = torch.where(gt_lane, max_acc, torch.inf).amin(-1) if gt_lane.shape[-1] else torch.zeros_like(n_gt)
    acc_sum = torch.where(many, acc_sum - worst, acc_sum)
    denom = n_gt.clamp(max=4).clamp(min=1)
    accuracy = acc_sum / denom
    fp_rate = torch.where(n_pred > 0, fp / n_pred.clamp(min=1), 0.0)
    fn_rate = fn / denom

    rejected = n_pred > n_gt + 2
    if run_time is not None:
        check_tensor(run_time, "run_time")
        check_shape(run_time, "run_time", (preds.shape[0],))
        if not bool(torch.isfinite(run_time).all()):
            raise ValueError("`run_time` must be finite (milliseconds)")
        rejected = rejected | (run_time.to(device) > MAX_RUN_TIME_MS)
    accuracy = torch.where(rejected, 0.0, accuracy)
    fp_rate = torch.where(rejected, 0.0, fp_rate)
    fn_rate = torch.where(rejected, 1.0, fn_rate)
    return {"accuracy": accuracy, "fp": fp_rate, "fn": fn_rate, "matched": matched, "num_pred": n_pred, "num_gt": n_gt}


def select_ego_lanes(lanes: Tensor, lane_mask: Tensor | None = None, image_width: float = 1280.0) -> Tensor:
    """Keep the ego-left and ego-right lane of every image (as Sato & Chen score TuSimple), mask the others.

    A lane's position is the mean x of its valid (finite, non-negative) points. The ego-left lane is the one with
    the largest mean x below ``image_width / 2``, the ego-right lane the one with the smallest mean x at or above
    it (the camera is assumed at the image center). Lanes without valid points are never chosen.

    Args:
        lanes: ``(B, L, N)`` lane x coordinates (pixels), NaN / negative = missing.
        lane_mask: optional ``(B, L)`` bools of real lane slots.
        image_width: image width in pixels (TuSimple: 1280).

    Returns:
        ``(B, L)`` bool mask with at most one left and one right lane per image.
    """
    check_shape(lanes, "lanes", ("B", "L", "N"))
    real = lane_slot_mask(lanes, lane_mask, "lanes")
    valid = lanes >= 0
    count = valid.sum(-1)
    mean_x = torch.where(valid, lanes, 0.0).sum(-1) / count.clamp(min=1)
    usable = real & (count > 0)
    center = image_width / 2
    left_score = torch.where(usable & (mean_x < center), mean_x, -torch.inf)
    right_score = torch.where(usable & (mean_x >= center), -mean_x, -torch.inf)
    chosen = torch.zeros_like(real)
    if lanes.shape[1] == 0:
        return chosen
    for score in (left_score, right_score):
        best = score.argmax(dim=1, keepdim=True)
        found = torch.isfinite(score.gather(1, best))
        chosen.scatter_(1, best, found | chosen.gather(1, best))
    return chosen


def tusimple_f1(fp: Tensor | float, fn: Tensor | float, *, validate_args: bool = True) -> Tensor:
    """F1 from TuSimple FP and FN rates: harmonic mean of precision ``1 - fp`` and recall ``1 - fn`` (0 if both 0).

    ``validate_args`` refuses rates outside [0, 1] and NaN (a read-back).

    Examples:
        >>> import torch
        >>> from drivemetrics.functional import tusimple_f1
        >>> tusimple_f1(torch.tensor(0.25), torch.tensor(0.5))  # precision 0.75, recall 0.5
        tensor(0.6000, dtype=torch.float64)
    """
    if validate_args:  # rates, as :func:`tusimple_metrics` gives them
        check_values(fp, "fp", low=0.0, high=1.0, what="rates")
        check_values(fn, "fn", low=0.0, high=1.0, what="rates")
    precision = 1.0 - torch.as_tensor(fp, dtype=torch.float64)
    recall = 1.0 - torch.as_tensor(fn, dtype=torch.float64)
    return f1_score(precision, recall)


def tusimple_metrics(
    preds: Tensor,
    target: Tensor,
    *,
    h_samples: Tensor,
    run_time: Tensor | None = None,
    preds_mask: Tensor | None = None,
    target_mask: Tensor | None = None,
    ego_only: bool = False,
    image_width: float = 1280.0,
    compat: Compat = "default",
    pixel_threshold: float = PIXEL_THRESHOLD,
    validate_args: bool = True,
) -> dict[str, Tensor]:
    """TuSimple ``accuracy``, ``fp``, ``fn`` (per-image averages) and ``f1`` of a batch, as 0-d float64 tensors.

    Arguments as in :func:`tusimple_image_scores`; ``ego_only=True`` first keeps only the ego-left and ego-right
    lanes of both predictions and GT (:func:`select_ego_lanes` with ``image_width``).

    Examples:
        >>> import torch
        >>> from drivemetrics.functional import tusimple_metrics
        >>> ys = torch.arange(160.0, 720.0, 10.0)
        >>> gt = torch.stack([400 - 0.3 * (ys - 160), 880 + 0.3 * (ys - 160)])[None]  # 1 x 2 x 56
        >>> out = tusimple_metrics(gt + 5.0, gt, h_samples=ys)
        >>> [round(out[k].item(), 3) for k in ("accuracy", "fp", "fn", "f1")]
        [1.0, 0.0, 0.0, 1.0]
    """
    if not (math.isfinite(image_width) and image_width > 0):
        raise ValueError(f"`image_width` must be a positive number of pixels, got {image_width!r}")
    if ego_only:
        preds_mask = select_ego_lanes(preds, preds_mask, image_width)
        target_mask = select_ego_lanes(target, target_mask, image_width)
    scores = tusimple_image_scores(
        preds,
        target,
        h_samples=h_samples,
        run_time=run_time,
        preds_mask=preds_mask,
        target_mask=target_mask,
        compat=compat,
        pixel_threshold=pixel_threshold,
        validate_args=validate_args,
    )
    accuracy, fp, fn = scores["accuracy"].mean(), scores["fp"].mean(), scores["fn"].mean()
    return {"accuracy": accuracy, "fp": fp, "fn": fn, "f1": tusimple_f1(fp, fn, validate_args=False)}


class TuSimpleMetrics(MetricFamily):
    """TuSimple accuracy, FP, FN and F1 accumulated over batches (per-image averages, official rules).

    ``update(preds, target, h_samples, run_time=None, preds_mask=None, target_mask=None)`` takes the arguments of
    :func:`tusimple_image_scores`; ``compute()`` returns ``{"accuracy", "fp", "fn", "f1"}`` (0-d float64).
    States are sums over images, reduced by ``sum`` across processes.

    Args:
        ego_only: score only the ego-left / ego-right lanes (:func:`select_ego_lanes`).
        image_width: image width in pixels, used by ``ego_only``.
        compat: ``"default"`` or ``"reference"`` (the official FP counting, see :func:`tusimple_image_scores`).
        pixel_threshold: base point threshold in pixels (20 for TuSimple's 1280 x 720 images).
        kwargs: torchmetrics ``Metric`` keyword arguments.
        validate_args: check the inputs' values (reads back from the device); ``False`` skips those checks.

    Examples:
        >>> import torch
        >>> from drivemetrics.lane import TuSimpleMetrics
        >>> ys = torch.arange(160.0, 720.0, 10.0)  # (N,) rows, pixels
        >>> gt = torch.stack([400 - 0.3 * (ys - 160), 880 + 0.3 * (ys - 160)])[None]  # (B, L_gt, N) = (1, 2, 56)
        >>> metric = TuSimpleMetrics()
        >>> metric.update(gt + 5.0, gt, h_samples=ys)
        >>> {key: value.item() for key, value in metric.compute().items()}
        {'accuracy': 1.0, 'fp': 0.0, 'fn': 0.0, 'f1': 1.0}
    """

    is_differentiable = False
    higher_is_better = True
    full_state_update = False
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0

    sum_accuracy: Tensor
    sum_fp: Tensor
    sum_fn: Tensor
    num_images: Tensor

    def __init__(
        self,
        ego_only: bool = False,
        image_width: float = 1280.0,
        compat: Compat = "default",
        pixel_threshold: float = PIXEL_THRESHOLD,
        validate_args: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.validate_args = bool(validate_args)
        if not pixel_threshold > 0:
            raise ValueError(f"`pixel_threshold` must be > 0 pixels, got {pixel_threshold}")
        self.pixel_threshold = float(pixel_threshold)
        check_compat(compat)
        if not image_width > 0:
            raise ValueError(f"`image_width` must be > 0 pixels, got {image_width}")
        self.ego_only = ego_only
        self.image_width = float(image_width)
        self.compat: Compat = compat
        for name in ("sum_accuracy", "sum_fp", "sum_fn"):
            self.add_state(name, torch.zeros((), dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("num_images", torch.zeros((), dtype=torch.long), dist_reduce_fx="sum")
        add_config_state(self, ("TuSimple", self.ego_only, self.image_width, self.compat, self.pixel_threshold))

    def update(
        self,
        preds: Tensor,
        target: Tensor,
        *,
        h_samples: Tensor,
        run_time: Tensor | None = None,
        preds_mask: Tensor | None = None,
        target_mask: Tensor | None = None,
    ) -> None:
        """Add a batch of images (shapes as in :func:`tusimple_image_scores`)."""
        if self.ego_only:
            preds_mask = select_ego_lanes(preds, preds_mask, self.image_width)
            target_mask = select_ego_lanes(target, target_mask, self.image_width)
        scores = tusimple_image_scores(
            preds,
            target,
            h_samples=h_samples,
            run_time=run_time,
            preds_mask=preds_mask,
            target_mask=target_mask,
            compat=self.compat,
            pixel_threshold=self.pixel_threshold,
            validate_args=self.validate_args,
        )
        self.sum_accuracy = self.sum_accuracy + scores["accuracy"].sum()
        self.sum_fp = self.sum_fp + scores["fp"].sum()
        self.sum_fn = self.sum_fn + scores["fn"].sum()
        self.num_images = self.num_images + scores["accuracy"].numel()

    def compute(self) -> dict[str, Tensor]:
        """``{"accuracy", "fp", "fn", "f1"}`` over all images seen (NaN before any update)."""
        n = self.num_images.to(torch.float64)
        fp, fn = self.sum_fp / n, self.sum_fn / n
        f1 = tusimple_f1(fp, fn, validate_args=False).to(fp.device)
        return {"accuracy": self.sum_accuracy / n, "fp": fp, "fn": fn, "f1": f1}


class TuSimpleAccuracy(ScalarMetric, TuSimpleMetrics):
    """TuSimple accuracy (mean per-image fraction of matched points), a scalar for ``self.log``.

    Shares the states of :class:`TuSimpleMetrics` (same arguments), so a ``MetricCollection`` of the TuSimple
    scalar classes counts once per batch; the same holds for the other three.

    Examples:
        >>> from drivemetrics.lane import TuSimpleAccuracy, tusimple_example_inputs
        >>> TuSimpleAccuracy()(**tusimple_example_inputs())
        tensor(1., dtype=torch.float64)
    """

    key = "accuracy"


class _TuSimpleErrorRate(ScalarMetric, TuSimpleMetrics):
    """The base of the FP and FN rates: lower is better."""

    higher_is_better = False


class TuSimpleFalsePositives(_TuSimpleErrorRate):
    """TuSimple FP rate (mean per-image fraction of unmatched predicted lanes), a scalar for ``self.log``.

    Examples:
        >>> from drivemetrics.lane import TuSimpleFalsePositives, tusimple_example_inputs
        >>> TuSimpleFalsePositives()(**tusimple_example_inputs())
        tensor(0., dtype=torch.float64)
    """

    key = "fp"


class TuSimpleFalseNegatives(_TuSimpleErrorRate):
    """TuSimple FN rate (mean per-image fraction of missed ground-truth lanes), a scalar for ``self.log``.

    Examples:
        >>> from drivemetrics.lane import TuSimpleFalseNegatives, tusimple_example_inputs
        >>> TuSimpleFalseNegatives()(**tusimple_example_inputs())
        tensor(0., dtype=torch.float64)
    """

    key = "fn"


class TuSimpleF1Score(ScalarMetric, TuSimpleMetrics):
    """TuSimple F1 from the mean FP and FN rates (:func:`tusimple_f1`), a scalar for ``self.log``.

    Examples:
        >>> from drivemetrics.lane import TuSimpleF1Score, tusimple_example_inputs
        >>> TuSimpleF1Score()(**tusimple_example_inputs())
        tensor(1., dtype=torch.float64)
    """

    key = "f1"
