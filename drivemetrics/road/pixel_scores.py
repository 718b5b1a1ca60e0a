"""The KITTI-ROAD pixel kernels written once for numpy arrays and torch tensors: raw-value histograms of 8-bit
confidence maps, bucket histograms, per-threshold counts and the devkit's scores.

Every operation goes through :mod:`drivemetrics._internal.arrays` (or is an operator both libraries share), so a
kernel runs on what it is given: numpy arrays (``road-eval`` on the CPU, which never imports torch) or tensors on
any device (``road-eval --device``, the Metric classes through :mod:`drivemetrics.road.pixel_counting`). The
operations are the same IEEE ones in the same order on both sides (sums are sequential ``cumsum``), so both give
the same bits.
"""

from __future__ import annotations

import math
import warnings
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from drivemetrics._internal import arrays

if TYPE_CHECKING:
    from torch import Tensor

__all__ = [
    "AP_RECALL_LEVELS",
    "DEVKIT_EPS",
    "HISTOGRAM_LANES",
    "VALUE_LEVELS",
    "PixelCounts",
    "buckets_from_value_histograms",
    "counts_from_histograms",
    "devkit_scores",
    "threshold_grid",
    "value_histograms",
]

#: The devkit's 11 recall levels, as ``np.arange(0, 1.1, 0.1)`` produces them (0.30000000000000004 etc.).
AP_RECALL_LEVELS: tuple[float, ...] = tuple(i * 0.1 for i in range(11))
#: The devkit adds this to the denominators of precision and F (so a perfect 0.8 reads 0.79999999995).
DEVKIT_EPS = 1e-10
#: The values of an 8-bit confidence map (``p = v / 255``).
VALUE_LEVELS = 256
#: Sub-histograms of :func:`value_histograms` (pixel ``i`` of a row counts into sub-histogram ``i % 4``).
HISTOGRAM_LANES = 4

Array = Any  # numpy.ndarray or torch.Tensor


class PixelCounts(NamedTuple):
    """Confusion counts per threshold, int64 tensors (or numpy arrays) of shape ``(..., T)`` (pixels).

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


def threshold_grid(num: int = 256) -> np.ndarray:
    """The devkit's threshold grid ``k / (num - 1)``, ``k = 0..num-1``, float64 numpy (the values of
    ``kitti_thresholds``, which is this grid as a tensor).

    Examples:
        >>> from drivemetrics.road.pixel_scores import threshold_grid
        >>> threshold_grid(3).tolist()
        [0.0, 0.5, 1.0]
    """
    if not isinstance(num, int) or isinstance(num, bool) or num < 2:
        raise ValueError(f"`thresholds` as a count must be an int >= 2, got {num!r}")
    return np.arange(num, dtype=np.float64) / (num - 1)


def value_histograms(preds: Array, red: Array, blue: Array) -> Array:
    """Raw-value histograms ``(2, 256)`` (int64) of the valid pixels of 8-bit confidence maps: ``[0]`` non-road,
    ``[1]`` road, ``[c, v]`` the number of pixels with value ``v``, pooled over every pixel given.

    A pixel is valid iff ``red > 0`` and road iff ``blue > 0`` (the devkit's rules on the ground truth's red and
    blue channels). ``preds``, ``red`` and ``blue`` are ``uint8`` arrays of one shape (any, e.g. ``(H, W)`` or
    ``(B, H, W)``), numpy or tensors on one device. One pass: each pixel gets the code ``value + 256 * class``
    (``class = 2 * valid + road``) and one ``bincount`` counts them (into :data:`HISTOGRAM_LANES` sub-histograms).

    Examples:
        >>> import numpy as np
        >>> from drivemetrics.road.pixel_scores import value_histograms
        >>> preds = np.array([[200, 30, 30]], dtype=np.uint8)
        >>> red = np.array([[255, 255, 0]], dtype=np.uint8)  # the last pixel is don't care
        >>> blue = np.array([[255, 0, 0]], dtype=np.uint8)  # the first pixel is road
        >>> hist = value_histograms(preds, red, blue)
        >>> hist.shape, int(hist[0, 30]), int(hist[1, 200]), int(hist.sum())
        ((2, 256), 1, 1, 2)
    """
    if not (preds.shape == red.shape == blue.shape):
        raise ValueError(f"`preds`, `red` and `blue` must have one shape, got {preds.shape}, {red.shape}, {blue.shape}")
    for name, values in (("preds", preds), ("red", red), ("blue", blue)):
        if arrays.dtype_name(values.dtype) != "uint8":
            raise TypeError(f"`{name}` must be uint8, got {values.dtype}")
    group = arrays.clamp_max(red, 1) * 2  # uint8: class = 2 * valid + road
    group += arrays.clamp_max(blue, 1)
    # neighbouring pixels count into different sub-histograms (group = class + 4 * lane): long runs of one code
    # (saturated road, sky) would otherwise increment one counter back to back, each waiting for the previous one
    group += arrays.astype(arrays.arange(group.shape[-1], like=group) % HISTOGRAM_LANES, "uint8") * 4
    code = arrays.astype(group, "int16")
    code *= VALUE_LEVELS
    code += preds  # uint8, widened on the fly
    hist = arrays.bincount(code.reshape(-1), HISTOGRAM_LANES * 4 * VALUE_LEVELS)
    return hist.reshape(HISTOGRAM_LANES, 4, VALUE_LEVELS).sum(0)[2:]


def buckets_from_value_histograms(hist: Array, thresholds: Array) -> Array:
    """Raw-value histograms ``(..., 256)`` of uint8 maps -> bucket histograms ``(..., T + 1)`` for the sorted
    float64 ``thresholds`` (same library and device as ``hist``).

    Value ``v`` (``p = v / 255``) falls in bucket ``#{k : t_k <= v / 255}``, which is non-decreasing in ``v``; the
    bucket histogram is the difference of the raw cumulative histogram read at each bucket's last value.

    Examples:
        >>> import numpy as np
        >>> from drivemetrics.road.pixel_scores import buckets_from_value_histograms
        >>> hist = np.zeros(256, dtype=np.int64); hist[[0, 128, 255]] = 1
        >>> buckets_from_value_histograms(hist, np.array([0.0, 0.5, 1.0])).tolist()
        [0, 1, 1, 1]
    """
    levels = arrays.astype(arrays.arange(VALUE_LEVELS, like=thresholds), "float64") / 255.0
    bucket_of_value = arrays.searchsorted(thresholds, levels, right=True)  # (256,), non-decreasing
    buckets = arrays.arange(thresholds.shape[0] + 1, like=thresholds)
    last_value = arrays.searchsorted(bucket_of_value, buckets, right=True) - 1  # -1: the bucket holds no value
    zero = hist[..., :1] * 0
    cumulative = arrays.cat([zero, hist.cumsum(-1)], -1)[..., last_value + 1]
    return cumulative - arrays.cat([zero, cumulative[..., :-1]], -1)


def counts_from_histograms(hist: Array) -> PixelCounts:
    """Per-threshold counts ``(..., T)`` from bucket histograms ``(..., 2, T + 1)`` (``[..., 0, :]`` negatives,
    ``[..., 1, :]`` positives; bucket ``b`` holds the pixels with ``b`` thresholds ``<= p``).

    Examples:
        >>> import numpy as np
        >>> from drivemetrics.road.pixel_scores import counts_from_histograms
        >>> counts = counts_from_histograms(np.array([[2, 1, 0], [0, 1, 3]]))  # 3 negatives, 4 positives, T = 2
        >>> counts.tp.tolist(), counts.fp.tolist()
        ([4, 3], [1, 0])
    """
    below = hist.cumsum(-1)[..., :-1]  # below[..., c, k] = #{class c : p < t_k}
    neg_num = hist[..., 0, :].sum(-1)[..., None]
    pos_num = hist[..., 1, :].sum(-1)[..., None]
    fn = below[..., 1, :]
    tn = below[..., 0, :]
    return PixelCounts(tp=pos_num - fn, fp=neg_num - tn, fn=fn, tn=tn)


def _gather_last(x: Array, index: Array) -> Array:
    return arrays.gather(x, -1, index[..., None])[..., 0]


def _eleven_point_ap(precision: Array, recall: Array, kept: Array) -> Array:
    """The devkit's 11-point interpolated AP ``(...)``: mean over the recall levels of the best precision at recall
    ``>=`` level (0 for a level no threshold reaches), summed in the devkit's order for an identical float."""
    levels = arrays.as_values(AP_RECALL_LEVELS, like=precision)
    reach = (recall[..., None, :] >= levels[:, None]) & kept[..., None, :]  # (..., 11, T)
    best_prec = arrays.clamp_min(arrays.amax(arrays.where(reach, precision[..., None, :], -math.inf), -1), 0.0)
    avg_prec = best_prec[..., 0] * 0.0
    for level in range(len(AP_RECALL_LEVELS)):
        avg_prec = avg_prec + best_prec[..., level]
    return avg_prec / len(AP_RECALL_LEVELS)


def devkit_scores(
    counts: PixelCounts, thresholds: Array, beta: float = 1.0, reference: bool = False, warn_empty: bool = True
) -> dict[str, Array]:
    """The devkit's scores (``pxEval_maximizeFMeasure``) from int64 counts ``(..., T)`` at float64 ``thresholds``
    ``(T,)`` (same library and device): the kernel of
    :func:`~drivemetrics.road.pixel_counting.scores_from_counts`, which documents the keys and checks the inputs.

    ``reference``: the working-point values from float32 counts, as the devkit computes them.

    Examples:
        >>> import numpy as np
        >>> from drivemetrics.road.pixel_scores import PixelCounts, devkit_scores
        >>> counts = PixelCounts(np.array([4, 3, 0]), np.array([4, 1, 0]), np.array([0, 1, 4]), np.array([0, 3, 4]))
        >>> scores = devkit_scores(counts, np.array([0.0, 0.5, 1.0]))
        >>> round(float(scores["max_f"]), 4), float(scores["best_threshold"]), float(scores["precision_wp"])
        (0.75, 0.5, 0.75)
    """
    tp, fp, fn, tn = counts
    tp64, fp64, fn64, tn64 = (arrays.astype(c, "float64") for c in (tp, fp, fn, tn))
    pos_num = (tp64 + fn64)[..., 0]
    neg_num = (fp64 + tn64)[..., 0]
    empty = pos_num == 0
    if warn_empty and bool(empty.any()):
        warnings.warn(
            "road pixel metrics: no valid ground-truth road pixel (empty ground truth or all pixels invalid); "
            "the scores are NaN",
            RuntimeWarning,
            stacklevel=3,
        )

    # -- the devkit's curves (float64, epsilon in the precision and F denominators) --
    kept = tp > 0  # the devkit drops recall == precision == 0, i.e. TP == 0 (a suffix of the thresholds)
    with arrays.overflow_allowed():  # 0 / 0 where there is no positive pixel: NaN, replaced below
        recall = arrays.where(kept, tp64 / pos_num[..., None], 0.0)
    precision = tp64 / (tp64 + fp64 + DEVKIT_EPS)
    beta2 = float(beta) ** 2
    f_curve = (1 + beta2) * (precision * recall) / (beta2 * precision + recall + DEVKIT_EPS)  # devkit's order

    # -- MaxF and the working point: argmax returns the first (lowest-threshold) maximum in both libraries --
    best = arrays.where(kept, f_curve, -math.inf).argmax(-1)
    # -- integrated AP: area under the step precision-recall curve (precision without epsilon), summed in order --
    exact_prec = arrays.where(kept, tp64 / arrays.clamp_min(tp64 + fp64, 1.0), 0.0)
    next_recall = arrays.cat([recall[..., 1:], recall[..., :1] * 0.0], -1)
    scores = {
        "max_f": _gather_last(f_curve, best),
        "average_precision": _eleven_point_ap(precision, recall, kept),
        "average_precision_integrated": ((recall - next_recall) * exact_prec).cumsum(-1)[..., -1],
        "best_threshold": thresholds[best],
        "best_threshold_index": best,
    }
    scores.update(_working_point(counts, best, reference))
    scores.update(
        total_positives=pos_num,
        total_negatives=neg_num,
        precision=precision,
        recall=recall,
        f_measure=f_curve,
        thresholds=arrays.broadcast_to(thresholds, tp.shape),
    )
    undefined = ("max_f", "average_precision", "average_precision_integrated", "best_threshold")
    for key in (*undefined, *(k for k in scores if k.endswith("_wp"))):
        scores[key] = arrays.where(empty, math.nan, scores[key])
    return scores


def _working_point(counts: PixelCounts, best: Array, reference: bool) -> dict[str, Array]:
    """The ``*_wp`` values at threshold index ``best``: float64 ratios of the counts, or (``reference``) the
    devkit's float32 ones (it packs the counts into uint32 and casts them to float32)."""
    dtype = "float32" if reference else "float64"
    tp_w, fp_w, fn_w, tn_w = (arrays.astype(_gather_last(c, best), dtype) for c in counts)
    pos_w = tp_w + fn_w
    neg_w = tn_w + fp_w
    with arrays.overflow_allowed():
        return {
            "precision_wp": tp_w / (tp_w + fp_w),
            "recall_wp": tp_w / pos_w,
            "tpr_wp": tp_w / pos_w,
            "fpr_wp": fp_w / neg_w,
            "fnr_wp": fn_w / pos_w,
            "accuracy_wp": (tp_w + tn_w) / (pos_w + neg_w),
            "iou_wp": tp_w / (tp_w + fp_w + fn_w),
            "tp_wp": tp_w,
            "fp_wp": fp_w,
            "fn_wp": fn_w,
            "tn_wp": tn_w,
        }
