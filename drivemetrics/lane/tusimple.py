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
  #36; ``fp_mode="unmatched"`` counts the predictions that are nobody's best match instead), ``FN = fn / min(n_gt,
  4)``, ``accuracy = sum(max_acc) / min(n_gt, 4)``; with more than 4 GT lanes the worst ``max_acc`` is dropped and
  one false negative forgiven;
* an image with ``run_time > 200`` ms or more than ``n_gt + 2`` predictions scores ``(0, 0, 1)``.

Dataset values are per-image averages (what the official code computes, not the README's ratio of sums).
F1 is the harmonic mean of precision ``1 - FP`` and recall ``1 - FN`` of those averages.
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import torch
from torch import Tensor
from torchmetrics import Metric

from drivemetrics._files import atomic_open, read_text
from drivemetrics._metric import ScalarFromDict, add_config_state, plot_metric
from drivemetrics._progress import progress_bar
from drivemetrics._validation import check_shape, check_tensor

PIXEL_THRESHOLD = 20.0
POINT_ACCURACY_THRESHOLD = 0.85
MAX_RUN_TIME_MS = 200.0
MISSING_VALUE = -100.0

FpMode = Literal["official", "unmatched"]


@dataclass
class TuSimpleImageScores:
    """Per-image TuSimple scores, each of shape ``B`` (float64).

    ``accuracy``, ``fp``, ``fn`` are the official per-image values; ``matched``, ``num_pred``, ``num_gt`` are
    the lane counts behind them (before the 4-lane cap and the rejection rules).
    """

    accuracy: Tensor
    fp: Tensor
    fn: Tensor
    matched: Tensor
    num_pred: Tensor
    num_gt: Tensor


def _lane_masks(lanes: Tensor, lane_mask: Tensor | None, name: str) -> Tensor:
    if lane_mask is None:
        return torch.isfinite(lanes).any(dim=-1)
    check_shape(lane_mask, f"{name}_mask", lanes.shape[:2])
    return lane_mask.to(device=lanes.device, dtype=torch.bool)


def _validate(preds: Tensor, target: Tensor, h_samples: Tensor) -> Tensor:
    check_tensor(preds, "preds")
    check_tensor(target, "target")
    check_tensor(h_samples, "h_samples")
    check_shape(preds, "preds", ("B", "L_pred", "N"))
    check_shape(target, "target", (preds.shape[0], "L_gt", preds.shape[2]))
    if h_samples.ndim == 1:
        h_samples = h_samples.unsqueeze(0).expand(preds.shape[0], -1)
    check_shape(h_samples, "h_samples", (preds.shape[0], preds.shape[2]))
    if bool(torch.isinf(preds).any()) or bool(torch.isinf(target).any()):
        raise ValueError("`preds` and `target` must not contain infinite values (use NaN for a missing point)")
    return h_samples


def tusimple_image_scores(
    preds: Tensor,
    target: Tensor,
    h_samples: Tensor,
    run_time: Tensor | None = None,
    preds_mask: Tensor | None = None,
    target_mask: Tensor | None = None,
    fp_mode: FpMode = "official",
    pixel_threshold: float = PIXEL_THRESHOLD,
) -> TuSimpleImageScores:
    """Official TuSimple per-image accuracy, FP and FN for a batch of images.

    Args:
        preds: ``B x L_pred x N`` predicted lane x coordinates (pixels) at the ``h_samples`` rows; NaN or negative
            = missing point.
        target: ``B x L_gt x N`` ground-truth lanes, same convention.
        h_samples: ``N`` or ``B x N`` row coordinates (pixels). NaN marks padding samples (images with fewer rows
            in a padded batch): they are ignored, and the accuracy denominator is the number of real samples.
        run_time: optional ``B`` run times in milliseconds (``> 200`` scores ``(0, 0, 1)``); default 0.
        preds_mask, target_mask: optional ``B x L`` bools telling which lane slots are real lanes. By default a
            slot is a lane when it has at least one non-NaN value, so an all-NaN slot is padding (pass a mask to
            count an all-missing prediction as a lane, as the official evaluator does for all ``-2`` lanes).
        fp_mode: ``"official"`` (``n_pred - n_matched``, may be negative) or ``"unmatched"`` (predictions that are
            no matched GT lane's best prediction; never negative).
        pixel_threshold: base point threshold in pixels (official: 20 px for 1280 x 720 images; scale it with
            the image width for other resolutions).

    Returns:
        :class:`TuSimpleImageScores` (float64 tensors of shape ``B``).
    """
    h_samples = _validate(preds, target, h_samples)
    if fp_mode not in ("official", "unmatched"):
        raise ValueError(f"`fp_mode` must be 'official' or 'unmatched', got {fp_mode!r}")
    if not pixel_threshold > 0:
        raise ValueError(f"`pixel_threshold` must be > 0 pixels, got {pixel_threshold}")
    device = preds.device
    pred_lane = _lane_masks(preds, preds_mask, "preds")
    gt_lane = _lane_masks(target, target_mask, "target")
    pred_x = preds.to(torch.float64)
    gt_x = target.to(torch.float64)
    ys = h_samples.to(device=device, dtype=torch.float64)
    sample_ok = ~torch.isnan(ys)  # B x N
    if not bool(sample_ok.any(dim=1).all()):
        raise ValueError("`h_samples` must hold at least one non-NaN row per image")
    num_samples = sample_ok.sum(dim=1).to(torch.float64)  # B

    # Slope of x on y over each GT lane's valid points (ordinary least squares); threshold 20 / cos(atan(k)).
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
    threshold = pixel_threshold / torch.cos(torch.atan(slope))  # B x L_gt

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

    if fp_mode == "official":
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
    return TuSimpleImageScores(accuracy, fp_rate, fn_rate, matched, n_pred, n_gt)


def select_ego_lanes(lanes: Tensor, lane_mask: Tensor | None = None, image_width: float = 1280.0) -> Tensor:
    """Keep the ego-left and ego-right lane of every image (as Sato & Chen score TuSimple), mask the others.

    A lane's position is the mean x of its valid (finite, non-negative) points. The ego-left lane is the one with
    the largest mean x below ``image_width / 2``, the ego-right lane the one with the smallest mean x at or above
    it (the camera is assumed at the image centre). Lanes without valid points are never chosen.

    Args:
        lanes: ``B x L x N`` lane x coordinates (pixels), NaN / negative = missing.
        lane_mask: optional ``B x L`` bools of real lane slots.
        image_width: image width in pixels (TuSimple: 1280).

    Returns:
        ``B x L`` bool mask with at most one left and one right lane per image.
    """
    check_shape(lanes, "lanes", ("B", "L", "N"))
    real = _lane_masks(lanes, lane_mask, "lanes")
    valid = lanes >= 0
    count = valid.sum(-1)
    mean_x = torch.where(valid, lanes, 0.0).sum(-1) / count.clamp(min=1)
    usable = real & (count > 0)
    centre = image_width / 2
    left_score = torch.where(usable & (mean_x < centre), mean_x, -torch.inf)
    right_score = torch.where(usable & (mean_x >= centre), -mean_x, -torch.inf)
    chosen = torch.zeros_like(real)
    if lanes.shape[1] == 0:
        return chosen
    for score in (left_score, right_score):
        best = score.argmax(dim=1, keepdim=True)
        found = torch.isfinite(score.gather(1, best))
        chosen.scatter_(1, best, found | chosen.gather(1, best))
    return chosen


def tusimple_f1(fp: Tensor | float, fn: Tensor | float) -> Tensor:
    """F1 from TuSimple FP and FN rates: harmonic mean of precision ``1 - fp`` and recall ``1 - fn`` (0 if both 0)."""
    precision = 1.0 - torch.as_tensor(fp, dtype=torch.float64)
    recall = 1.0 - torch.as_tensor(fn, dtype=torch.float64)
    total = precision + recall
    return torch.where(total > 0, 2 * precision * recall / torch.where(total > 0, total, 1.0), 0.0)


def tusimple_metrics(
    preds: Tensor,
    target: Tensor,
    h_samples: Tensor,
    run_time: Tensor | None = None,
    preds_mask: Tensor | None = None,
    target_mask: Tensor | None = None,
    ego_only: bool = False,
    image_width: float = 1280.0,
    fp_mode: FpMode = "official",
    pixel_threshold: float = PIXEL_THRESHOLD,
) -> dict[str, Tensor]:
    """TuSimple ``accuracy``, ``fp``, ``fn`` (per-image averages) and ``f1`` of a batch, as 0-d float64 tensors.

    Arguments as in :func:`tusimple_image_scores`; ``ego_only=True`` first keeps only the ego-left and ego-right
    lanes of both predictions and GT (:func:`select_ego_lanes` with ``image_width``).

    Example:
        >>> ys = torch.arange(160.0, 720.0, 10.0)
        >>> gt = torch.stack([400 - 0.3 * (ys - 160), 880 + 0.3 * (ys - 160)])[None]  # 1 x 2 x 56
        >>> out = tusimple_metrics(gt + 5.0, gt, ys)
        >>> [round(out[k].item(), 3) for k in ("accuracy", "fp", "fn", "f1")]
        [1.0, 0.0, 0.0, 1.0]
    """
    if ego_only:
        preds_mask = select_ego_lanes(preds, preds_mask, image_width)
        target_mask = select_ego_lanes(target, target_mask, image_width)
    scores = tusimple_image_scores(
        preds, target, h_samples, run_time, preds_mask, target_mask, fp_mode, pixel_threshold
    )
    accuracy, fp, fn = scores.accuracy.mean(), scores.fp.mean(), scores.fn.mean()
    return {"accuracy": accuracy, "fp": fp, "fn": fn, "f1": tusimple_f1(fp, fn)}


class TuSimpleMetrics(Metric):
    """TuSimple accuracy, FP, FN and F1 accumulated over batches (per-image averages, official rules).

    ``update(preds, target, h_samples, run_time=None, preds_mask=None, target_mask=None)`` takes the arguments of
    :func:`tusimple_image_scores`; ``compute()`` returns ``{"accuracy", "fp", "fn", "f1"}`` (0-d float64).
    States are sums over images, reduced by ``sum`` across processes.

    Args:
        ego_only: score only the ego-left / ego-right lanes (:func:`select_ego_lanes`).
        image_width: image width in pixels, used by ``ego_only``.
        fp_mode: ``"official"`` or ``"unmatched"`` (see :func:`tusimple_image_scores`).
        pixel_threshold: base point threshold in pixels (20 for TuSimple's 1280 x 720 images).
        kwargs: torchmetrics ``Metric`` keyword arguments.
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
        fp_mode: FpMode = "official",
        pixel_threshold: float = PIXEL_THRESHOLD,
        **kwargs: object,
    ) -> None:
        super().__init__(**kwargs)
        if not pixel_threshold > 0:
            raise ValueError(f"`pixel_threshold` must be > 0 pixels, got {pixel_threshold}")
        self.pixel_threshold = float(pixel_threshold)
        if fp_mode not in ("official", "unmatched"):
            raise ValueError(f"`fp_mode` must be 'official' or 'unmatched', got {fp_mode!r}")
        if not image_width > 0:
            raise ValueError(f"`image_width` must be > 0 pixels, got {image_width}")
        self.ego_only = ego_only
        self.image_width = float(image_width)
        self.fp_mode: FpMode = fp_mode
        for name in ("sum_accuracy", "sum_fp", "sum_fn"):
            self.add_state(name, torch.zeros((), dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("num_images", torch.zeros((), dtype=torch.long), dist_reduce_fx="sum")
        add_config_state(self, ("TuSimple", self.ego_only, self.image_width, self.fp_mode, self.pixel_threshold))

    def update(
        self,
        preds: Tensor,
        target: Tensor,
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
            preds, target, h_samples, run_time, preds_mask, target_mask, self.fp_mode, self.pixel_threshold
        )
        self.sum_accuracy += scores.accuracy.sum()
        self.sum_fp += scores.fp.sum()
        self.sum_fn += scores.fn.sum()
        self.num_images += scores.accuracy.numel()

    def compute(self) -> dict[str, Tensor]:
        """``{"accuracy", "fp", "fn", "f1"}`` over all images seen (NaN before any update)."""
        n = self.num_images.to(torch.float64)
        fp, fn = self.sum_fp / n, self.sum_fn / n
        return {"accuracy": self.sum_accuracy / n, "fp": fp, "fn": fn, "f1": tusimple_f1(fp, fn).to(fp.device)}

    def plot(self, val: dict[str, Tensor] | Sequence[dict[str, Tensor]] | None = None, ax: Any = None) -> Any:
        """Plot the four values (or their sequence over epochs) with matplotlib; returns ``(fig, ax)``."""
        return plot_metric(self, val, ax)


class TuSimpleAccuracy(ScalarFromDict, TuSimpleMetrics):
    """TuSimple accuracy (mean per-image fraction of matched points), a scalar for ``self.log``.

    Shares the states of :class:`TuSimpleMetrics` (same arguments), so a ``MetricCollection`` of the TuSimple
    scalar classes counts once per batch.
    """

    key = "accuracy"
    is_differentiable = False
    higher_is_better = True
    full_state_update = False
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0


class TuSimpleFalsePositives(ScalarFromDict, TuSimpleMetrics):
    """TuSimple FP rate (mean per-image fraction of unmatched predicted lanes), a scalar for ``self.log``."""

    key = "fp"
    is_differentiable = False
    higher_is_better = False
    full_state_update = False
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0


class TuSimpleFalseNegatives(ScalarFromDict, TuSimpleMetrics):
    """TuSimple FN rate (mean per-image fraction of missed ground-truth lanes), a scalar for ``self.log``."""

    key = "fn"
    is_differentiable = False
    higher_is_better = False
    full_state_update = False
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0


class TuSimpleF1Score(ScalarFromDict, TuSimpleMetrics):
    """TuSimple F1 from the mean FP and FN rates (:func:`tusimple_f1`), a scalar for ``self.log``."""

    key = "f1"
    is_differentiable = False
    higher_is_better = True
    full_state_update = False
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0


# ----------------------------------------------------------------------------------------------------------------
# JSON-lines files


@dataclass
class TuSimpleRecords:
    """Lanes of a TuSimple JSON-lines file as padded tensors.

    Attributes:
        raw_files: image names (``raw_file``), one per line.
        lanes: ``B x L x N`` float64 x coordinates (pixels), NaN = missing (negative values in the file) or padding.
        lane_mask: ``B x L`` bool, True for lanes present in the file (also all-missing ones).
        h_samples: ``B x N`` float64 rows (pixels), NaN-padded; None when the file has none (predictions).
        run_time: ``B`` float64 milliseconds; None when the file has none (labels).
        lane_lengths: ``B x L`` long, number of values each lane has in the file (0 for padding).
        line_numbers: 1-based line of each record in the file.
    """

    raw_files: list[str]
    lanes: Tensor
    lane_mask: Tensor
    h_samples: Tensor | None
    run_time: Tensor | None
    lane_lengths: Tensor
    line_numbers: list[int]

    def __len__(self) -> int:
        return len(self.raw_files)


def _number_list(value: object, where: str, what: str) -> list[float]:
    if not isinstance(value, list) or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
        raise ValueError(f"{where}: `{what}` must be a list of numbers")
    return [float(v) for v in value]


def read_tusimple_json(path: str | Path, require_h_samples: bool | None = None) -> TuSimpleRecords:
    """Read a TuSimple JSON-lines file (labels or predictions) into padded tensors.

    Each non-empty line is a JSON object with ``raw_file`` and ``lanes`` (lists of x or ``-2``), and either
    ``h_samples`` (labels) or ``run_time`` (predictions, a scalar in ms). Every lane must have one value per
    ``h_samples`` row (checked here for labels, against the labels in :func:`evaluate_tusimple_files` for
    predictions).

    Args:
        path: file to read.
        require_h_samples: True for label files, False for prediction files, None to accept either.

    Raises:
        FileNotFoundError: missing file.
        ValueError: malformed line, naming the file and 1-based line number.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"TuSimple file not found: {path}")
    raw_files: list[str] = []
    all_lanes: list[list[list[float]]] = []
    all_h: list[list[float] | None] = []
    all_rt: list[float | None] = []
    line_numbers: list[int] = []
    for number, line in enumerate(io.StringIO(read_text(path, what="TuSimple file")), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as err:
            raise ValueError(f"{where}: not valid JSON ({err.msg})") from None
        if not isinstance(record, dict):
            raise ValueError(f"{where}: expected a JSON object per line")
        for key in ("raw_file", "lanes"):
            if key not in record:
                raise ValueError(f"{where}: missing key `{key}`")
        if not isinstance(record["raw_file"], str):
            raise ValueError(f"{where}: `raw_file` must be a string")
        if not isinstance(record["lanes"], list):
            raise ValueError(f"{where}: `lanes` must be a list of lanes")
        lanes = [_number_list(lane, where, f"lanes[{i}]") for i, lane in enumerate(record["lanes"])]
        h = None
        if "h_samples" in record:
            h = _number_list(record["h_samples"], where, "h_samples")
            if not h:
                raise ValueError(f"{where}: `h_samples` is empty")
            for i, lane in enumerate(lanes):
                if len(lane) != len(h):
                    raise ValueError(f"{where}: lanes[{i}] has {len(lane)} values but `h_samples` has {len(h)} rows")
        elif require_h_samples:
            raise ValueError(f"{where}: missing key `h_samples`")
        rt = None
        if "run_time" in record:
            rt_value = record["run_time"]
            if isinstance(rt_value, bool) or not isinstance(rt_value, (int, float)):
                raise ValueError(f"{where}: `run_time` must be a number (milliseconds)")
            rt = float(rt_value)
        elif require_h_samples is False:
            raise ValueError(f"{where}: missing key `run_time`")
        raw_files.append(record["raw_file"])
        line_numbers.append(number)
        all_lanes.append(lanes)
        all_h.append(h)
        all_rt.append(rt)
    if not raw_files:
        raise ValueError(f"{path}: no records")
    has_h = [h is not None for h in all_h]
    has_rt = [rt is not None for rt in all_rt]
    if any(has_h) and not all(has_h):
        raise ValueError(f"{path}:{line_numbers[has_h.index(False)]}: `h_samples` missing on some lines only")
    n = max([len(h) for h in all_h if h is not None] + [len(lane) for lanes in all_lanes for lane in lanes] + [1])
    num_lanes = max([len(lanes) for lanes in all_lanes] + [0])
    lanes_t = torch.full((len(raw_files), num_lanes, n), torch.nan, dtype=torch.float64)
    mask = torch.zeros((len(raw_files), num_lanes), dtype=torch.bool)
    lengths = torch.zeros((len(raw_files), num_lanes), dtype=torch.long)
    for b, lanes in enumerate(all_lanes):
        for i, lane in enumerate(lanes):
            values = torch.tensor(lane, dtype=torch.float64)
            lanes_t[b, i, : len(lane)] = torch.where(values >= 0, values, torch.nan)
            mask[b, i] = True
            lengths[b, i] = len(lane)
    h_t = None
    if all(has_h):
        h_t = torch.full((len(raw_files), n), torch.nan, dtype=torch.float64)
        for b, h in enumerate(all_h):
            h_t[b, : len(h)] = torch.tensor(h, dtype=torch.float64)
    rt_t = torch.tensor([rt if rt is not None else 0.0 for rt in all_rt], dtype=torch.float64) if any(has_rt) else None
    return TuSimpleRecords(raw_files, lanes_t, mask, h_t, rt_t, lengths, line_numbers)


def write_tusimple_json(
    path: str | Path,
    raw_files: Sequence[str],
    lanes: Tensor,
    lane_mask: Tensor | None = None,
    h_samples: Tensor | None = None,
    run_time: Tensor | Sequence[float] | None = None,
) -> None:
    """Write lanes as TuSimple JSON lines (NaN -> ``-2``, x rounded to 0.01 px as in the dataset).

    Args:
        path: output file.
        raw_files: ``B`` image names.
        lanes: ``B x L x N`` x coordinates (pixels), NaN = missing.
        lane_mask: optional ``B x L`` bools of lanes to write (default: lanes with a non-NaN value).
        h_samples: optional ``N`` or ``B x N`` rows (labels); NaN-padded rows are dropped with their values.
        run_time: optional ``B`` milliseconds (predictions).
    """
    check_shape(lanes, "lanes", (len(raw_files), "L", "N"))
    mask = _lane_masks(lanes, lane_mask, "lanes").cpu()
    values = lanes.detach().to("cpu", torch.float64)
    h = None
    if h_samples is not None:
        h = h_samples.detach().to("cpu", torch.float64)
        if h.ndim == 1:
            h = h.unsqueeze(0).expand(len(raw_files), -1)
        check_shape(h, "h_samples", (len(raw_files), lanes.shape[2]))
    times = None if run_time is None else [float(t) for t in torch.as_tensor(run_time).reshape(-1).tolist()]
    if times is not None and len(times) != len(raw_files):
        raise ValueError(f"`run_time` must have {len(raw_files)} values, got {len(times)}")
    with atomic_open(path, "w", encoding="utf-8") as handle:
        for b, name in enumerate(raw_files):
            keep = torch.ones(lanes.shape[2], dtype=torch.bool) if h is None else ~torch.isnan(h[b])
            record: dict[str, object] = {"raw_file": name}
            record["lanes"] = [
                [round(v, 2) if v == v else -2 for v in values[b, i][keep].tolist()]
                for i in range(lanes.shape[1])
                if mask[b, i]
            ]
            if h is not None:
                record["h_samples"] = [int(v) if float(v).is_integer() else v for v in h[b][keep].tolist()]
            if times is not None:
                record["run_time"] = times[b]
            handle.write(json.dumps(record) + "\n")


def evaluate_tusimple_files(
    pred_path: str | Path,
    gt_path: str | Path,
    ego_only: bool = False,
    image_width: float = 1280.0,
    fp_mode: FpMode = "official",
    progress: bool | None = False,
) -> tuple[dict[str, float], list[dict[str, object]]]:
    """Score a TuSimple prediction file against a label file (``LaneEval.bench_one_submit`` semantics).

    Every label ``raw_file`` needs exactly one prediction with the same ``raw_file`` (order may differ) and the
    same number of values per lane as the label's ``h_samples``. ``progress``: a tqdm bar over the three stages
    (read the labels, read the predictions, score every image in one batch) on stderr (``None``: only when stdout
    and stderr are terminals).

    Returns:
        ``({"Accuracy", "FP", "FN", "F1"}, per_image)`` with fractions, and per image
        ``{"raw_file", "accuracy", "fp", "fn"}``.
    """
    with progress_bar(3, "tusimple-eval", "stage", progress) as bar:
        bar.set_postfix_str("reading labels")
        gt = read_tusimple_json(gt_path, require_h_samples=True)
        bar.update()
        bar.set_postfix_str("reading predictions")
        pred = read_tusimple_json(pred_path, require_h_samples=False)
        bar.update()
        bar.set_postfix_str(f"scoring {len(gt.raw_files)} images")
        result = _score_tusimple_records(gt, pred, pred_path, gt_path, ego_only, image_width, fp_mode)
        bar.update()
    return result


def _score_tusimple_records(
    gt: TuSimpleRecords,
    pred: TuSimpleRecords,
    pred_path: str | Path,
    gt_path: str | Path,
    ego_only: bool,
    image_width: float,
    fp_mode: FpMode,
) -> tuple[dict[str, float], list[dict[str, object]]]:
    """The body of :func:`evaluate_tusimple_files` once both files are read."""
    if gt.h_samples is None:  # pragma: no cover - guaranteed by require_h_samples
        raise ValueError(f"{gt_path}: labels need `h_samples`")
    if len(set(gt.raw_files)) != len(gt.raw_files):
        raise ValueError(f"{gt_path}: duplicate `raw_file` entries")
    index = {}
    for i, name in enumerate(pred.raw_files):
        if name in index:
            raise ValueError(f"{pred_path}:{pred.line_numbers[i]}: duplicate prediction for `{name}`")
        index[name] = i
    missing = [name for name in gt.raw_files if name not in index]
    if missing:
        raise ValueError(f"{pred_path}: no prediction for {len(missing)} label image(s), e.g. `{missing[0]}`")
    if len(pred.raw_files) != len(gt.raw_files):
        extra = sorted(set(pred.raw_files) - set(gt.raw_files))
        raise ValueError(f"{pred_path}: predictions for images that are not in the labels, e.g. `{extra[0]}`")
    order = torch.tensor([index[name] for name in gt.raw_files])
    n_rows = (~torch.isnan(gt.h_samples)).sum(1)
    pred_lanes, pred_mask = pred.lanes[order], pred.lane_mask[order]
    wrong_length = pred_mask & (pred.lane_lengths[order] != n_rows[:, None])
    if bool(wrong_length.any()):
        b, k = (int(v) for v in wrong_length.nonzero()[0])
        line = pred.line_numbers[int(order[b])]
        length = int(pred.lane_lengths[order][b, k])
        raise ValueError(
            f"{pred_path}:{line}: lanes[{k}] has {length} values but the label's `h_samples` has {int(n_rows[b])} rows"
        )
    n = gt.lanes.shape[2]
    if pred_lanes.shape[2] < n:
        pad = torch.full((*pred_lanes.shape[:2], n - pred_lanes.shape[2]), torch.nan, dtype=torch.float64)
        pred_lanes = torch.cat([pred_lanes, pad], dim=2)
    pred_lanes = pred_lanes[:, :, :n]
    run_time = pred.run_time[order] if pred.run_time is not None else None
    if ego_only:
        pred_mask = select_ego_lanes(pred_lanes, pred_mask, image_width)
        gt_mask = select_ego_lanes(gt.lanes, gt.lane_mask, image_width)
    else:
        gt_mask = gt.lane_mask
    scores = tusimple_image_scores(pred_lanes, gt.lanes, gt.h_samples, run_time, pred_mask, gt_mask, fp_mode)
    per_image = [
        {"raw_file": name, "accuracy": float(a), "fp": float(p), "fn": float(f)}
        for name, a, p, f in zip(gt.raw_files, scores.accuracy, scores.fp, scores.fn, strict=True)
    ]
    fp, fn = scores.fp.mean(), scores.fn.mean()
    overall = {
        "Accuracy": float(scores.accuracy.mean()),
        "FP": float(fp),
        "FN": float(fn),
        "F1": float(tusimple_f1(fp, fn)),
    }
    return overall, per_image
