"""KITTI-ROAD pixel metrics: per-threshold confusion counts and the devkit's scores (MaxF, AP, working point).

Semantics follow the KITTI-ROAD devkit (``evalExp`` + ``pxEval_maximizeFMeasure``):

- A pixel is *road at threshold* ``t_k`` iff its confidence ``p >= t_k``. The default thresholds are the devkit's
  256 values ``t_k = k / 255``, ``k = 0..255``; for ``uint8`` maps (``p = v / 255``) this is exactly ``v >= k``.
- The comparison is exact: the stored value of ``p`` (float16/32/64) is compared with the float64 threshold as
  real numbers, as the devkit's float64 histogram does. So ``p = 64/255`` stored as float32 (which rounds up)
  counts as road at threshold 64, and a float32 value just below ``64/255`` does not.
- Counting is one pass: each pixel is bucketed by the number of thresholds ``<= p`` (``torch.bucketize``), one
  ``bincount`` builds per-image histograms of positive and negative pixels, and cumulative sums give
  ``TP/FP/FN/TN`` at every threshold. Memory is ``O(pixels + thresholds)``, never ``pixels x thresholds``.
- Pixels outside the ``valid`` mask (KITTI's black "don't care" pixels) are ignored completely.
- Scores are computed from counts pooled over everything counted (micro average), one best threshold overall.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import NamedTuple

import torch
from torch import Tensor

from drivemetrics._validation import check_binary, check_finite, check_same_shape, check_tensor
from drivemetrics.geometry.bev import BevGrid

__all__ = [
    "PixelCounts",
    "confidence_buckets",
    "counts_at_threshold",
    "fixed_threshold_scores",
    "format_thresholds",
    "kitti_thresholds",
    "pixel_counts",
    "pixel_inputs_to_bev",
    "road_pixel_scores",
    "scores_from_counts",
]

#: The devkit's 11 recall levels, as ``np.arange(0, 1.1, 0.1)`` produces them (0.30000000000000004 etc.).
AP_RECALL_LEVELS: tuple[float, ...] = tuple(i * 0.1 for i in range(11))
#: The devkit adds this to the denominators of precision and F (so a perfect 0.8 reads 0.79999999995).
DEVKIT_EPS = 1e-10


class PixelCounts(NamedTuple):
    """Confusion counts per threshold, int64 tensors of shape ``(..., T)`` (pixels).

    ``tp[..., k]``: valid road pixels with ``p >= t_k``; ``fp``: valid non-road pixels with ``p >= t_k``;
    ``fn``: valid road pixels with ``p < t_k``; ``tn``: valid non-road pixels with ``p < t_k``.
    """

    tp: Tensor
    fp: Tensor
    fn: Tensor
    tn: Tensor

    def sum(self, dim: int = 0) -> PixelCounts:
        """Pool the counts over a batch dimension (default: the first)."""
        return PixelCounts(*(c.sum(dim) for c in self))


def kitti_thresholds(
    num: int = 256, dtype: torch.dtype = torch.float64, device: torch.device | str | None = None
) -> Tensor:
    """The devkit's threshold grid ``k / (num - 1)``, ``k = 0..num-1`` (default: the 256 values ``k / 255``)."""
    if not isinstance(num, int) or isinstance(num, bool) or num < 2:
        raise ValueError(f"`thresholds` as a count must be an int >= 2, got {num!r}")
    return (torch.arange(num, dtype=torch.float64, device=device) / (num - 1)).to(dtype)


def format_thresholds(
    thresholds: int | Sequence[float] | Tensor | None, device: torch.device | str | None = None
) -> Tensor:
    """Turn a ``thresholds`` argument into a float64 1-D tensor, strictly increasing, inside [0, 1].

    ``None`` gives the devkit's 256 thresholds ``k / 255``; an int ``T`` gives ``k / (T - 1)``; a sequence or tensor
    is used as given (it must already be sorted).
    """
    if thresholds is None:
        return kitti_thresholds(256, device=device)
    if isinstance(thresholds, int) and not isinstance(thresholds, bool):
        return kitti_thresholds(thresholds, device=device)
    if isinstance(thresholds, Tensor):
        t = thresholds.detach().to(device=device if device is not None else thresholds.device, dtype=torch.float64)
    elif isinstance(thresholds, Sequence) and not isinstance(thresholds, str):
        t = torch.tensor([float(v) for v in thresholds], dtype=torch.float64, device=device)
    else:
        raise TypeError(f"`thresholds` must be None, an int, a sequence of floats or a 1-D tensor, got {thresholds!r}")
    if t.ndim != 1 or t.numel() < 1:
        raise ValueError(f"`thresholds` must be a non-empty 1-D list of values, got shape {tuple(t.shape)}")
    if not bool(torch.isfinite(t).all()) or bool((t < 0).any()) or bool((t > 1).any()):
        raise ValueError("`thresholds` must lie in [0, 1]")
    if t.numel() > 1 and not bool((t[1:] > t[:-1]).all()):
        raise ValueError("`thresholds` must be strictly increasing")
    return t


def _ceil_to_dtype(values: Tensor, dtype: torch.dtype) -> Tensor:
    """The smallest ``dtype`` number ``>= values`` (float64 input), so ``p >= ceil(t)`` iff ``p >= t`` exactly."""
    if dtype == torch.float64:
        return values
    cast = values.to(dtype)
    up = torch.nextafter(cast, torch.full_like(cast, math.inf))
    return torch.where(cast.to(torch.float64) < values, up, cast)


def confidence_buckets(preds: Tensor, thresholds: Tensor) -> Tensor:
    """For each pixel, the number of thresholds ``<= p`` (int32, same shape as ``preds``, values ``0..T``).

    ``preds``: float confidences in [0, 1] or ``uint8`` values ``v`` meaning ``p = v / 255``; ``thresholds``: float64,
    sorted. Road at threshold ``k`` iff ``bucket > k``.
    """
    if preds.dtype == torch.uint8:
        levels = torch.arange(256, dtype=torch.float64, device=thresholds.device) / 255.0
        table = torch.bucketize(levels, thresholds, right=True, out_int32=True)
        if table.numel() == 256 and torch.equal(table, torch.arange(1, 257, dtype=torch.int32, device=table.device)):
            return preds.to(torch.int32) + 1  # the devkit grid: v >= k  <=>  bucket = v + 1 > k
        return table[preds.to(torch.int64)]
    if preds.dtype in (torch.float16, torch.bfloat16):
        preds = preds.float()  # exact
    boundaries = _ceil_to_dtype(thresholds, preds.dtype)
    return torch.bucketize(preds, boundaries, right=True, out_int32=True)


def _as_batch(x: Tensor, name: str) -> Tensor:
    if x.ndim == 2:
        return x.unsqueeze(0)
    if x.ndim != 3:
        raise ValueError(f"`{name}` must have shape B x H x W (or H x W), got {tuple(x.shape)}")
    return x


def validate_pixel_inputs(
    preds: Tensor, target: Tensor, valid: Tensor | None = None, check_values: bool = True
) -> tuple[Tensor, Tensor, Tensor | None]:
    """Check and batch ``preds`` (float in [0, 1] or uint8), binary ``target`` and optional binary ``valid``.

    Returns the three as ``B x H x W`` tensors (``H x W`` inputs get ``B = 1``). ``check_values=False`` skips the
    value checks (NaN, range, binary), which need a device-to-host sync.
    """
    check_tensor(preds, "preds")
    check_tensor(target, "target")
    preds = _as_batch(preds, "preds")
    target = _as_batch(target, "target")
    check_same_shape(preds, "preds", target, "target")
    if not (preds.is_floating_point() or preds.dtype == torch.uint8):
        raise TypeError(f"`preds` must be a float tensor in [0, 1] or uint8 (0..255), got dtype {preds.dtype}")
    if check_values:
        check_binary(target, "target")
    if target.is_floating_point() or target.is_complex():
        target = target != 0
    if valid is not None:
        check_tensor(valid, "valid")
        valid = _as_batch(valid, "valid")
        check_same_shape(preds, "preds", valid, "valid")
    if check_values:
        if preds.is_floating_point():
            check_finite(preds, "preds")
            if preds.numel() and (bool((preds < 0).any()) or bool((preds > 1).any())):
                raise ValueError(
                    f"`preds` must hold confidences in [0, 1] (got min {preds.min().item():.4g}, "
                    f"max {preds.max().item():.4g}); apply a sigmoid to raw scores first"
                )
        if valid is not None:
            check_binary(valid, "valid")
    return preds, target, valid


def pixel_counts(
    preds: Tensor,
    target: Tensor,
    valid: Tensor | None = None,
    thresholds: int | Sequence[float] | Tensor | None = None,
    validate_args: bool = True,
) -> PixelCounts:
    """Per-image confusion counts at every threshold, in one pass.

    Args:
        preds: ``B x H x W`` (or ``H x W``) road confidences, float in [0, 1] or ``uint8`` 0..255 (``p = v / 255``).
        target: same shape, binary road ground truth (bool or 0/1).
        valid: optional same-shape binary mask; pixels where it is 0 are ignored (KITTI's "don't care").
        thresholds: ``None`` (the devkit's ``k / 255``, 256 values), an int ``T`` (``k / (T - 1)``), or sorted values.
        validate_args: check values (NaN, range, binary); turn off to avoid the device-to-host sync.

    Returns:
        :class:`PixelCounts` with int64 tensors of shape ``B x T``; ``.sum()`` pools them over the batch.
    """
    preds, target, valid = validate_pixel_inputs(preds, target, valid, check_values=validate_args)
    thr = format_thresholds(thresholds, device=preds.device)
    num_bins = thr.numel() + 1
    batch = preds.shape[0]
    bucket = confidence_buckets(preds, thr)
    index_dtype = torch.int32 if 2 * batch * num_bins + 1 < 2**31 else torch.int64
    image = torch.arange(batch, device=preds.device, dtype=index_dtype).view(-1, 1, 1)
    index = bucket.to(index_dtype) + num_bins * (target.to(index_dtype) + 2 * image)
    overflow_bin = 2 * batch * num_bins
    if valid is not None:
        index = torch.where(valid.bool(), index, torch.full_like(index, overflow_bin))
    hist = torch.bincount(index.reshape(-1), minlength=overflow_bin + 1)[:overflow_bin].view(batch, 2, num_bins)
    below = hist.cumsum(-1)[..., :-1]  # below[..., c, k] = #{class c : p < t_k}
    neg_num = hist[:, 0].sum(-1, keepdim=True)
    pos_num = hist[:, 1].sum(-1, keepdim=True)
    fn = below[:, 1]
    tn = below[:, 0]
    return PixelCounts(tp=pos_num - fn, fp=neg_num - tn, fn=fn, tn=tn)


def counts_at_threshold(
    preds: Tensor, target: Tensor, valid: Tensor | None = None, threshold: float = 0.5, validate_args: bool = True
) -> PixelCounts:
    """Per-image counts at one threshold (``p >= threshold``), int64 tensors of shape ``B``."""
    counts = pixel_counts(preds, target, valid, [float(threshold)], validate_args=validate_args)
    return PixelCounts(*(c[..., 0] for c in counts))


def _gather_last(x: Tensor, index: Tensor) -> Tensor:
    return torch.gather(x, -1, index.unsqueeze(-1)).squeeze(-1)


def scores_from_counts(
    counts: PixelCounts | Sequence[Tensor],
    thresholds: int | Sequence[float] | Tensor | None = None,
    beta: float = 1.0,
    devkit_float32: bool = False,
    warn_empty: bool = True,
) -> dict[str, Tensor]:
    """The devkit's scores (``pxEval_maximizeFMeasure``) from per-threshold counts, plus a few extra keys.

    Args:
        counts: ``(tp, fp, fn, tn)`` of shape ``(..., T)``; leading dimensions are kept (e.g. per-image scores).
        thresholds: the ``T`` thresholds the counts were taken at (same forms as in :func:`pixel_counts`).
        beta: F-measure weight (the devkit uses 1).
        devkit_float32: reproduce the devkit's working-point rounding (counts cast to float32 and the ``*_wp`` ratios
            computed in float32). Default: exact float64 ratios of the int64 counts.
        warn_empty: warn when there is no valid positive pixel (scores are then NaN).

    Returns:
        A dict of tensors of shape ``(...)`` unless noted:

        - devkit keys: ``MaxF`` (max over thresholds of ``F_beta``, with the devkit's 1e-10 epsilon), ``AvgPrec``
          (11-point interpolated AP at recall levels ``np.arange(0, 1.1, 0.1)``), ``BestThresh`` (the lowest threshold
          reaching MaxF), ``PRE_wp``, ``REC_wp``, ``TPR_wp``, ``FPR_wp``, ``FNR_wp``, ``A_wp`` (accuracy), ``Q_wp``
          (IoU), ``TP_wp``, ``FP_wp``, ``FN_wp``, ``TN_wp`` at that working point, ``totalPosNum``, ``totalNegNum``;
        - extra keys: ``IoU_wp`` (same as ``Q_wp``), ``AvgPrecIntegrated`` (the area under the step precision-recall
          curve, ``sum_k (R_k - R_{k+1}) P_k``, no interpolation), ``BestThreshIndex`` (int64);
        - curves, shape ``(..., T)``: ``precision`` (with the devkit's epsilon), ``recall``, ``F``, ``thresholds``.
          Entries with ``TP = 0`` (which the devkit drops) have precision 0 and recall 0.

    Differences from the devkit, all where it crashes or loses precision: no positive pixel gives NaN scores (the
    devkit raises); a recall level no threshold reaches adds 0 to the 11-point AP (the devkit raises; with
    thresholds starting at 0 every level is reached); ``*_wp`` values are exact float64 unless ``devkit_float32``.
    """
    tp, fp, fn, tn = (torch.as_tensor(c) for c in counts)
    if not (tp.shape == fp.shape == fn.shape == tn.shape) or tp.ndim < 1:
        raise ValueError(
            "`counts` must be four tensors (tp, fp, fn, tn) of the same shape (..., T), got shapes "
            f"{[tuple(c.shape) for c in (tp, fp, fn, tn)]}"
        )
    thr = format_thresholds(thresholds, device=tp.device)
    if thr.numel() != tp.shape[-1]:
        raise ValueError(f"`thresholds` has {thr.numel()} values but `counts` have {tp.shape[-1]} thresholds")
    if not beta > 0 or not math.isfinite(beta):
        raise ValueError(f"`beta` must be a finite number > 0, got {beta}")
    tp64, fp64, fn64, tn64 = (c.to(torch.float64) for c in (tp, fp, fn, tn))
    pos_num = (tp64 + fn64)[..., 0]
    neg_num = (fp64 + tn64)[..., 0]
    if warn_empty and bool((pos_num == 0).any()):
        warnings.warn(
            "road pixel metrics: no valid ground-truth road pixel (empty ground truth or all pixels invalid); "
            "the scores are NaN",
            RuntimeWarning,
            stacklevel=2,
        )

    # -- the devkit's curves (float64, epsilon in the precision and F denominators) --
    recall = tp64 / pos_num.unsqueeze(-1)
    precision = tp64 / (tp64 + fp64 + DEVKIT_EPS)
    kept = tp > 0  # the devkit drops recall == precision == 0, i.e. TP == 0 (a suffix of the thresholds)
    recall = torch.where(kept, recall, torch.zeros_like(recall))
    beta2 = float(beta) ** 2
    f_curve = (1 + beta2) * (precision * recall) / (beta2 * precision + recall + DEVKIT_EPS)  # devkit's order

    # -- MaxF and the working point: argmax returns the first (lowest-threshold) maximum, as numpy does --
    masked_f = torch.where(kept, f_curve, torch.full_like(f_curve, -math.inf))
    best = masked_f.argmax(-1)
    max_f = _gather_last(f_curve, best)

    # -- 11-point interpolated AP: mean over levels of the best precision at recall >= level --
    levels = torch.tensor(AP_RECALL_LEVELS, dtype=torch.float64, device=tp.device)
    reach = (recall.unsqueeze(-2) >= levels.unsqueeze(-1)) & kept.unsqueeze(-2)  # (..., 11, T)
    best_prec = torch.where(reach, precision.unsqueeze(-2), torch.full_like(reach, -math.inf, dtype=torch.float64))
    best_prec = best_prec.amax(-1).clamp_min(0.0)
    avg_prec = torch.zeros_like(pos_num)
    for level in range(len(AP_RECALL_LEVELS)):  # summed in the devkit's order, so the float result is identical
        avg_prec = avg_prec + best_prec[..., level]
    avg_prec = avg_prec / len(AP_RECALL_LEVELS)

    # -- integrated AP: area under the step precision-recall curve (precision without epsilon) --
    exact_prec = torch.where(kept, tp64 / (tp64 + fp64).clamp_min(1.0), torch.zeros_like(tp64))
    next_recall = torch.cat([recall[..., 1:], torch.zeros_like(recall[..., :1])], -1)
    ap_integrated = ((recall - next_recall) * exact_prec).sum(-1)

    # -- values at the working point --
    wp_dtype = torch.float32 if devkit_float32 else torch.float64
    if devkit_float32:  # the devkit packs the counts into uint32 and casts to float32
        tp_w, fp_w, fn_w, tn_w = (_gather_last(c, best).to(torch.float32) for c in (tp, fp, fn, tn))
    else:
        tp_w, fp_w, fn_w, tn_w = (_gather_last(c, best) for c in (tp64, fp64, fn64, tn64))
    pos_w = tp_w + fn_w
    neg_w = tn_w + fp_w
    scores = {
        "MaxF": max_f,
        "AvgPrec": avg_prec,
        "AvgPrecIntegrated": ap_integrated,
        "BestThresh": thr[best],
        "BestThreshIndex": best,
        "PRE_wp": tp_w / (tp_w + fp_w),
        "REC_wp": tp_w / pos_w,
        "TPR_wp": tp_w / pos_w,
        "FPR_wp": fp_w / neg_w,
        "FNR_wp": fn_w / pos_w,
        "A_wp": (tp_w + tn_w) / (pos_w + neg_w),
        "Q_wp": tp_w / (tp_w + fp_w + fn_w),
        "IoU_wp": tp_w / (tp_w + fp_w + fn_w),
        "TP_wp": tp_w.to(wp_dtype),
        "FP_wp": fp_w.to(wp_dtype),
        "FN_wp": fn_w.to(wp_dtype),
        "TN_wp": tn_w.to(wp_dtype),
        "totalPosNum": pos_num,
        "totalNegNum": neg_num,
        "precision": precision,
        "recall": recall,
        "F": f_curve,
        "thresholds": thr.expand(tp.shape),
    }
    empty = pos_num == 0
    if bool(empty.any()):
        for key in ("MaxF", "AvgPrec", "AvgPrecIntegrated", "BestThresh", *(k for k in scores if k.endswith("_wp"))):
            scores[key] = torch.where(empty, torch.full_like(scores[key], math.nan), scores[key])
    return scores


def fixed_threshold_scores(counts: PixelCounts | Sequence[Tensor], beta: float = 1.0) -> dict[str, Tensor]:
    """Plain ``F_beta``, precision, recall and IoU from counts at one threshold (no epsilon; 0/0 gives NaN)."""
    tp, fp, fn, _ = (torch.as_tensor(c).to(torch.float64) for c in counts)
    beta2 = float(beta) ** 2
    return {
        "F": (1 + beta2) * tp / ((1 + beta2) * tp + beta2 * fn + fp),
        "PRE": tp / (tp + fp),
        "REC": tp / (tp + fn),
        "IoU": tp / (tp + fp + fn),
    }


def road_pixel_scores(
    preds: Tensor,
    target: Tensor,
    valid: Tensor | None = None,
    thresholds: int | Sequence[float] | Tensor | None = None,
    beta: float = 1.0,
    devkit_float32: bool = False,
    validate_args: bool = True,
) -> dict[str, Tensor]:
    """Pooled devkit scores of a batch in one call: :func:`pixel_counts` summed over images, then
    :func:`scores_from_counts`. Shapes and arguments as there."""
    counts = pixel_counts(preds, target, valid, thresholds, validate_args=validate_args).sum(0)
    return scores_from_counts(counts, thresholds, beta=beta, devkit_float32=devkit_float32)


def pixel_inputs_to_bev(
    preds: Tensor,
    target: Tensor,
    valid: Tensor | None,
    image_from_road: Tensor,
    grid: BevGrid | None = None,
    mode: str = "devkit",
) -> tuple[Tensor, Tensor, Tensor]:
    """Warp a perspective prediction, its ground truth and valid mask to the BEV grid, for BEV evaluation.

    Args:
        preds: ``B x H x W`` (or ``H x W``) confidences, float in [0, 1] or ``uint8``.
        target: same shape, binary road ground truth.
        valid: optional same-shape binary mask of evaluated pixels.
        image_from_road: ``B x 3 x 3`` (one per frame) or ``3 x 3`` road -> image homographies
            (:func:`drivemetrics.geometry.image_from_road`); float64 for bit-exact devkit lookups.
        grid: the BEV grid (default: the KITTI-ROAD grid, 800 x 400 cells of 0.05 m).
        mode: ``"devkit"`` (the devkit's nearest-pixel lookup, bit for bit; uint8 stays uint8), ``"nearest"``, or
            ``"bilinear"`` (confidences interpolated, differentiable; ``target`` and ``valid`` use the nearest
            pixel, since labels must not be blended).

    Returns:
        ``(preds_bev, target_bev, valid_bev)``, each ``B x rows x cols``; ``valid_bev`` (bool) is the warped valid
        mask AND the cells that see the image (the devkit's warped GT is black, i.e. "don't care", there).
    """
    from drivemetrics.geometry.warp import warp_image_to_bev

    check_tensor(image_from_road, "image_from_road")
    preds = _as_batch(check_tensor(preds, "preds"), "preds")
    target = _as_batch(check_tensor(target, "target"), "target")
    check_same_shape(preds, "preds", target, "target")
    if valid is not None:
        valid = _as_batch(check_tensor(valid, "valid"), "valid")
        check_same_shape(preds, "preds", valid, "valid")
    label_mode = "nearest" if mode == "bilinear" else mode
    if mode == "bilinear" and not preds.is_floating_point():
        preds = preds.float() / 255.0 if preds.dtype == torch.uint8 else preds.float()
    preds_bev, seen = warp_image_to_bev(preds.unsqueeze(1), image_from_road, grid, mode=mode)
    labels = target.bool() if valid is None else torch.stack([target.bool(), valid.bool()], 1)
    labels = labels if labels.ndim == 4 else labels.unsqueeze(1)
    labels_bev, labels_seen = warp_image_to_bev(labels, image_from_road, grid, mode=label_mode)
    valid_bev = seen & labels_seen
    if valid is not None:
        valid_bev = valid_bev & labels_bev[:, 1]
    return preds_bev[:, 0], labels_bev[:, 0], valid_bev
