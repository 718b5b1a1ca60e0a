"""Average precision from pooled, matched detections: precision / recall curve, VOC area AP and 11-point AP.

The references differ in dtypes, and the library lets each preset say which: MapTR keeps precision in float32
(recall in float64) and stores the AP as float32; OpenLane-V2 keeps both in float32 and compares recall with a
float64 grid ``0, 0.1, ..., 1.0`` built as ``i * 0.1`` (so ``0.30000000000000004`` and ``0.7000000000000001``:
a float32 recall of exactly 7/10 misses the 0.7 point, 3/10 reaches 0.3) under numpy 2's promotion; the devkit
runs on numpy 1.x, whose value-based casting compares in float32 (7/10 reaches 0.7): ``compare_dtype=torch.float32``.

Written once for torch tensors (any device) and numpy arrays (no torch import: the dataset commands' CPU path) with
:mod:`drivemetrics._internal.arrays`; dtypes may be given as torch or numpy dtypes or by name (``"float32"``).
"""

from __future__ import annotations

from typing import Any

from drivemetrics._internal import arrays as xp
from drivemetrics._internal.validation import check_values

Tensor = Any  # a torch.Tensor, or a numpy array
DType = Any  # a torch or numpy dtype, or its name; None: float64

__all__ = [
    "average_precision_11point",
    "average_precision_area",
    "interpolated_precision_11point",
    "pooled_precision_recall",
]


def pooled_precision_recall(
    scores: Tensor,
    true_positive: Tensor,
    num_targets: Tensor | int,
    *,
    precision_dtype: DType = None,
    recall_dtype: DType = None,
    validate_args: bool = True,
) -> tuple[Tensor, Tensor]:
    """Precision and recall after each detection, detections pooled over frames and sorted by descending score.

    Args:
        scores: ``(N,)`` confidences of all detections of one class (every frame pooled).
        true_positive: ``(..., N)`` bool flags (leading dims e.g. thresholds), from :func:`greedy_match`.
        num_targets: number of targets of the class (scalar or broadcastable to the leading dims).
        precision_dtype: dtype of the precision division (``float32`` where a reference tracks it so; default
            float64).
        recall_dtype: dtype of the recall division (default float64).
        validate_args: refuse NaN scores, flags other than 0 / 1 and negative ``num_targets`` (a
            read-back); ``False`` skips those checks.

    Returns:
        ``(precision (..., N), recall (..., N))`` in score order (ties in input order). Recall is 0 with no
        target (``cumTP / max(num_targets, 1)``, as the references' ``max(n, eps)``).

    Examples:
        >>> import torch
        >>> from drivemetrics.polyline import pooled_precision_recall
        >>> scores, matched = torch.tensor([0.9, 0.8, 0.7]), torch.tensor([True, False, True])
        >>> precision, recall = pooled_precision_recall(scores, matched, 4)
        >>> precision.tolist(), recall.tolist()
        ([1.0, 0.5, 0.6666666666666666], [0.25, 0.25, 0.5])
    """
    if validate_args:
        check_values(scores, "scores", finite=False, what="scores")
        check_values(true_positive, "true_positive", low=0, high=1, what="flags")
        check_values(num_targets, "num_targets", low=0, what="counts")
    if scores.ndim != 1 or true_positive.shape[-1] != scores.shape[0]:
        raise ValueError(
            f"`scores` must be (N,) and `true_positive` (..., N); got {tuple(scores.shape)}, "
            f"{tuple(true_positive.shape)}"
        )
    order = xp.stable_descending_order(xp.detach(scores))
    tp = xp.astype(true_positive[..., order], "float64")
    cum_tp = tp.cumsum(-1)
    cum_fp = (1 - tp).cumsum(-1)
    total = xp.as_values(num_targets, like=tp)
    if total.ndim:
        total = total[..., None]
    recall_name, precision_name = xp.dtype_name(recall_dtype or "float64"), xp.dtype_name(precision_dtype or "float64")
    recall = xp.astype(cum_tp, recall_name) / xp.astype(total.clip(min=1), recall_name)
    precision = xp.astype(cum_tp, precision_name) / xp.astype((cum_tp + cum_fp).clip(min=1), precision_name)
    return precision, recall


def average_precision_area(
    precision: Tensor, recall: Tensor, *, sum_dtype: DType = None, validate_args: bool = True
) -> Tensor:
    """VOC "area" AP: precision made monotone from the right, integrated over the recall steps.

    Adds ``(recall 0, precision 0)`` before and ``(recall 1, precision 0)`` after the curve, replaces each
    precision by the largest precision at the same or a later position, and sums ``(recall step) x (precision at
    the step's right end)``. Computed in the promoted dtype of both inputs (MapTR: float32 precision x float64
    recall -> float64).

    Args:
        precision: ``(..., N)`` precision after each detection (score order).
        recall: ``(..., N)`` recall after each detection.
        sum_dtype: dtype the step terms are summed in (default: the promoted dtype; MapTR's float32 terms summed
            in float64 stay within a float32 ulp of numpy's float32 pairwise sum).
        validate_args: refuse precision outside [0, 1], negative recall, NaN and curves of different
            lengths (a read-back); ``False`` skips those checks.

    Returns:
        ``(...)`` AP in [0, 1].

    Examples:
        >>> import torch
        >>> from drivemetrics.polyline import average_precision_area
        >>> average_precision_area(torch.tensor([1.0, 0.5, 2 / 3]), torch.tensor([0.25, 0.25, 0.5]))
        tensor(0.4167)
    """
    if validate_args:
        _check_curve(precision, recall)
    dtype = xp.promote(precision, recall)
    zeros = xp.full((*recall.shape[:-1], 1), 0.0, like=recall, dtype=dtype)
    mrec = xp.cat([zeros, xp.astype(recall, dtype), zeros + 1], -1)
    mpre = xp.cat([zeros, xp.astype(precision, dtype), zeros], -1)
    mpre = xp.reverse_cummax(mpre)
    terms = (mrec[..., 1:] - mrec[..., :-1]) * mpre[..., 1:]
    return xp.astype(terms, xp.dtype_name(sum_dtype or dtype)).sum(-1)


def interpolated_precision_11point(
    precision: Tensor, recall: Tensor, *, compare_dtype: DType = None, validate_args: bool = True
) -> Tensor:
    """``(..., 11)``: for ``r = i * 0.1`` (float64, ``i = 0..10``), the largest precision with recall ``>= r`` or 0.

    Recall is compared in ``compare_dtype``: float64 (default) after exact promotion, as numpy 2 compares a float32
    array with a float64 grid; ``torch.float32`` casts the grid to float32 first, as numpy 1.x value-based casting
    does (the OpenLane-V2 devkit: there a float32 recall of exactly 7/10 reaches the 0.7 point).

    ``validate_args`` refuses precision outside [0, 1], negative recall and NaN (a read-back).

    Examples:
        >>> import torch
        >>> from drivemetrics.polyline import interpolated_precision_11point
        >>> interpolated_precision_11point(torch.tensor([1.0, 0.5]), torch.tensor([0.3, 0.7], dtype=torch.float32))
        tensor([1.0000, 1.0000, 1.0000, 1.0000, 0.5000, 0.5000, 0.5000, 0.0000, 0.0000,
                0.0000, 0.0000])
    """
    if validate_args:
        _check_curve(precision, recall)
    compare = xp.dtype_name(compare_dtype or "float64")
    grid = xp.astype(xp.astype(xp.arange(11, like=recall), "float64") * 0.1, compare)
    reach = xp.astype(recall, compare)[..., None, :] >= grid[:, None]  # (..., 11, N)
    if precision.shape[-1] == 0:
        return xp.full((*precision.shape[:-1], 11), 0.0, like=precision)
    return xp.amax(xp.where(reach, precision[..., None, :], 0.0), -1)


def average_precision_11point(
    precision: Tensor,
    recall: Tensor,
    *,
    dtype: DType = None,
    compare_dtype: DType = None,
    validate_args: bool = True,
) -> Tensor:
    """11-point interpolated AP: the mean of :func:`interpolated_precision_11point`, summed in order in ``dtype``.

    Args:
        precision: ``(..., N)``.
        recall: ``(..., N)``.
        dtype: accumulation dtype (default: ``precision``'s; OpenLane-V2 sums in float32).
        compare_dtype: dtype recall and grid are compared in (see :func:`interpolated_precision_11point`).
        validate_args: refuse precision outside [0, 1], negative recall, NaN and curves of different
            lengths (a read-back); ``False`` skips those checks.

    Examples:
        >>> import torch
        >>> from drivemetrics.polyline import average_precision_11point
        >>> average_precision_11point(torch.tensor([1.0, 0.5]), torch.tensor([0.3, 0.7], dtype=torch.float32))
        tensor(0.5000)
    """
    if validate_args:
        _check_curve(precision, recall)
    values = xp.astype(
        interpolated_precision_11point(precision, recall, compare_dtype=compare_dtype, validate_args=False),
        xp.dtype_name(dtype or precision.dtype),
    )
    total = values[..., 0]
    for i in range(1, 11):
        total = total + values[..., i]
    return total / 11


def _check_curve(precision: Tensor, recall: Tensor) -> None:
    """``validate_args`` of the AP integrations: precision in [0, 1], recall >= 0, no NaN, same length."""
    if precision.shape[-1] != recall.shape[-1]:
        raise ValueError(
            f"`precision` and `recall` must have the same length, got {precision.shape[-1]} and {recall.shape[-1]}"
        )
    check_values(precision, "precision", low=0.0, high=1.0)
    check_values(recall, "recall", low=0.0)  # above 1 only when flags outnumber targets: still integrable
