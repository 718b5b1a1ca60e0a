"""Pixel counting for the KITTI-ROAD metrics: thresholds, per-threshold TP / FP / FN / TN histograms and the
devkit's scores from counts.

The kernels of :mod:`drivemetrics.road.pixel` without its Metric classes, so that the dataset evaluation
(:mod:`drivemetrics.road.evaluate`) and ``road-eval`` do not import ``torchmetrics`` (about 2 s of start-up: it
imports scipy.signal and matplotlib). Import them from :mod:`drivemetrics.road.pixel` or
:mod:`drivemetrics.functional`.
"""

from __future__ import annotations

import functools
import math
import weakref
from collections.abc import Callable, Sequence
from typing import NamedTuple

import torch
from torch import Tensor

from drivemetrics._internal import arrays
from drivemetrics._internal.compat import Compat, check_compat
from drivemetrics._internal.validation import check_binary, check_finite, check_same_shape, check_tensor, check_values
from drivemetrics.road.bev_inputs import as_batch
from drivemetrics.road.pixel_scores import (  # the kernels written once for numpy and torch (re-exported here)
    AP_RECALL_LEVELS,
    DEVKIT_EPS,
    PixelCounts,
    buckets_from_value_histograms,
    counts_from_histograms,
    devkit_scores,
)

__all__ = [
    "AP_RECALL_LEVELS",
    "CPU_BLOCK_PIXELS",
    "CPU_LANES",
    "DEVKIT_EPS",
    "PixelCounts",
    "bucket_histograms",
    "check_fixed_threshold",
    "confidence_buckets",
    "counts_at_threshold",
    "counts_from_histograms",
    "fixed_threshold_scores",
    "format_thresholds",
    "kitti_thresholds",
    "pixel_counts",
    "scores_from_counts",
    "scores_with_fixed_threshold",
    "validate_pixel_inputs",
    "with_fixed_threshold",
]


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
    if arrays.is_tensor(thresholds):
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


def _uniform_grid_size(thresholds: Tensor) -> tuple[int, Tensor] | None:
    """If ``thresholds`` is a grid ``k / (n - 1)`` plus at most 2 other values, return ``(n, extra values)``."""
    total = thresholds.numel()
    for n in (total, total - 1, total - 2):
        if n < 2 or n - 1 >= 2**24:
            continue
        grid = kitti_thresholds(n, device=thresholds.device)
        position = torch.searchsorted(thresholds, grid).clamp_max(total - 1)
        if bool((thresholds[position] == grid).all()):
            in_grid = torch.zeros(total, dtype=torch.bool, device=thresholds.device)
            in_grid[position] = True
            return n, thresholds[~in_grid]
    return None


def confidence_buckets(preds: Tensor, thresholds: Tensor) -> Tensor:
    """For each pixel, the number of thresholds ``<= p`` (integer, same shape as ``preds``, values ``0..T``).

    ``preds``: float confidences in [0, 1] or ``uint8`` values ``v`` meaning ``p = v / 255``; ``thresholds``: float64,
    sorted. Road at threshold ``k`` iff ``bucket > k``. The comparison is exact (see the module docstring).

    Fast path (same result as ``torch.bucketize`` against the exact thresholds): for float16/32 maps and a grid
    ``k / (n - 1)`` the bucket is ``floor(p * (n - 1)) + 1``, computed in float32 where that is exact for every
    float32 ``p`` (checked once per grid at the float32 neighbours of each threshold; true for the KITTI grid) or
    else in float64; up to two extra thresholds (e.g. a fixed 0.5) add one comparison each.
    """
    if preds.dtype == torch.uint8:
        levels = torch.arange(256, dtype=torch.float64, device=thresholds.device) / 255.0
        table = torch.bucketize(levels, thresholds, right=True)
        return table[preds.to(torch.int64)]
    plan = _level_plan(preds.dtype, thresholds)
    level, bits = plan.levels(preds.detach(), _no_buffer)
    if plan.bins == thresholds.numel() + 1 and plan.extras == 0 and level.dtype == torch.int32:
        return level  # bucketize gave the buckets directly
    bucket = level.to(torch.int32) + 1
    return bucket if bits is None else bucket + _popcount(bits)


def _no_buffer(name: str, shape: Sequence[int], dtype: torch.dtype) -> None:
    """No reusable buffer (off the CPU, or outside the blocked loop): every op allocates its result."""
    return


def _popcount(bits: Tensor) -> Tensor:
    """Number of set bits of small uint8 patterns (at most 2 bits here)."""
    return (bits & 1).to(torch.int32) + ((bits >> 1) & 1).to(torch.int32)


class _LevelPlan(NamedTuple):
    """How pixels are counted: ``levels(p, take) -> (level, extra_bits)`` (``take(name, shape, dtype)`` lends a
    reusable buffer or ``None``), ``bins`` levels, ``2**extras`` bit patterns, and ``to_buckets`` turning the
    ``(..., 2**extras, bins)`` histogram into the ``(..., T + 1)`` bucket histogram."""

    levels: Callable[[Tensor, Callable[..., Tensor | None]], tuple[Tensor, Tensor | None]]
    bins: int
    extras: int
    to_buckets: Callable[[Tensor], Tensor]


_PLANS: dict[tuple[int, torch.dtype], tuple[weakref.ref[Tensor], int, _LevelPlan]] = {}


def _level_plan(dtype: torch.dtype, thresholds: Tensor) -> _LevelPlan:
    """:func:`_make_level_plan`, remembered per thresholds tensor (same object, unmodified) and dtype.

    Choosing a plan inspects the threshold values (a device-to-host sync off the CPU); a Metric passes the same
    thresholds buffer to every ``update``, so the sync happens once, not once per batch.
    """
    key = (id(thresholds), dtype)
    cached = _PLANS.get(key)
    if cached is not None and cached[0]() is thresholds and cached[1] == thresholds._version:
        return cached[2]
    plan = _make_level_plan(dtype, thresholds)
    if len(_PLANS) > 64:
        _PLANS.clear()
    _PLANS[key] = (weakref.ref(thresholds), thresholds._version, plan)
    return plan


def _make_level_plan(dtype: torch.dtype, thresholds: Tensor) -> _LevelPlan:
    """Choose the cheapest exact way to count maps of ``dtype`` at ``thresholds`` (decided once per call).

    - uint8: the level is the raw value ``v``; the 256-level histogram is regrouped by ``v / 255``.
    - float16/32 on a grid ``k / (n - 1)`` (plus up to 2 extra thresholds, e.g. a fixed 0.5): the level is
      ``floor(p * (n - 1))`` (exact, see :func:`_floor_rule`) and each extra threshold adds one bit ``p >= e``; the
      bucket is ``level + 1 + #bits``.
    - otherwise: the level is the bucket itself, from ``torch.bucketize`` against the exact thresholds.
    """
    num_buckets = thresholds.numel() + 1
    if dtype == torch.uint8:
        return _LevelPlan(
            lambda p, take: (p, None), 256, 0, lambda h: _regroup_uint8_histogram(h[..., 0, :], thresholds)
        )
    if dtype in (torch.float16, torch.bfloat16, torch.float32):
        uniform = _uniform_grid_size(thresholds)
        rule = _floor_rule(uniform[0], thresholds.device) if uniform is not None else None
        if uniform is not None and rule is not None:
            n, extras = uniform
            extra_values = _ceil_to_dtype(extras, torch.float32).tolist()
            level_dtype = torch.uint8 if n <= 256 else torch.int16 if n <= 2**15 else torch.int32

            def grid_levels(preds: Tensor, take: Callable[..., Tensor | None]) -> tuple[Tensor, Tensor | None]:
                preds = preds.float()  # exact for float16 / bfloat16
                if rule == torch.float32:
                    scaled = torch.mul(preds, n - 1, out=take("scaled", preds.shape, torch.float32))
                else:
                    scaled = preds.double().mul_(n - 1)
                scaled.clamp_(0, n - 1)
                level_buffer = take("level", preds.shape, level_dtype)
                level = scaled.to(level_dtype) if level_buffer is None else level_buffer.copy_(scaled)
                bits = None
                for i, value in enumerate(extra_values):
                    bit = torch.ge(preds, value, out=take(f"bit{i}", preds.shape, torch.bool)).view(torch.uint8)
                    bits = bit if bits is None else bits.add_(bit, alpha=2**i)
                return level, bits

            def grid_buckets(hist: Tensor) -> Tensor:
                buckets = torch.zeros(*hist.shape[:-2], num_buckets, dtype=hist.dtype, device=hist.device)
                for pattern in range(hist.shape[-2]):
                    shift = 1 + bin(pattern).count("1")
                    buckets[..., shift : shift + n] += hist[..., pattern, :]
                return buckets

            return _LevelPlan(grid_levels, n, len(extra_values), grid_buckets)
    work_dtype = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype
    boundaries = _ceil_to_dtype(thresholds, work_dtype)

    def search_levels(preds: Tensor, take: Callable[..., Tensor | None]) -> tuple[Tensor, Tensor | None]:
        return torch.bucketize(preds.to(work_dtype), boundaries, right=True, out_int32=True), None

    return _LevelPlan(search_levels, num_buckets, 0, lambda h: h[..., 0, :])


_FLOOR_RULES: dict[tuple[int, str], torch.dtype | None] = {}


def _floor_rule(n: int, device: torch.device) -> torch.dtype | None:
    """The float dtype in which ``floor(p * (n - 1)) >= k  <=>  p >= fl64(k / (n - 1))`` for every float32 ``p``.

    Both sides are monotone in ``p`` (IEEE rounding is monotone), so it suffices to check the two float32 values
    on either side of each threshold. float32 arithmetic passes for the KITTI grid ``n = 256``; float64 (where
    ``p * (n - 1)`` is exact) passes for most other grids; ``None`` means use ``bucketize``.
    """
    key = (n, str(device))
    if key not in _FLOOR_RULES:
        grid = kitti_thresholds(n, device=device)
        at_or_above = _ceil_to_dtype(grid, torch.float32)
        below = torch.nextafter(at_or_above, torch.full_like(at_or_above, -math.inf))
        k = torch.arange(n, dtype=torch.float64, device=device)
        _FLOOR_RULES[key] = None
        for dtype in (torch.float32, torch.float64):
            ok_above = torch.floor((at_or_above.to(dtype) * (n - 1)).double()) >= k
            ok_below = torch.floor((below.to(dtype) * (n - 1)).double()) < k
            if bool(ok_above.all()) and bool(ok_below[1:].all()):
                _FLOOR_RULES[key] = dtype
                break
    return _FLOOR_RULES[key]


#: CPU block size (pixels): the temporaries of a block stay in the cache (0: one pass over the batch, as on GPUs).
CPU_BLOCK_PIXELS = 2**19
#: CPU sub-histograms: pixel ``i`` of a row counts into sub-histogram ``i % CPU_LANES`` (summed afterwards), so long
#: runs of equal values (saturated road, sky) do not serialise the increments of one counter.
CPU_LANES = 4


@functools.lru_cache(maxsize=16)
def _lane_offsets(length: int, lanes: int, classes: int) -> Tensor:
    """uint8 ``(i % lanes) * classes`` for ``i < length`` (CPU, cached; read-only)."""
    return (torch.arange(length) % lanes).to(torch.uint8).mul_(classes)


def bucket_histograms(
    preds: Tensor, target: Tensor, valid: Tensor | None, thresholds: Tensor, per_image: bool = True
) -> Tensor:
    """Histograms of the buckets (:func:`confidence_buckets`) of negative and positive valid pixels.

    Inputs are ``(B, H, W)`` (already validated; ``target`` / ``valid`` bool or 0/1), ``thresholds`` float64 sorted.
    Returns int64 ``(B, 2, (T + 1))`` (``(1, 2, (T + 1))`` pooled when ``per_image=False``); ``[:, 0]`` negatives,
    ``[:, 1]`` positives.

    One pass: each pixel gets a small integer code ``bucket + bins * (class + classes * image)`` (int16 when it
    fits, the class part built in uint8) and one ``bincount`` (off the CPU a fixed-size ``index_add_``, which needs
    no host sync) counts them; invalid pixels get their own classes,
    dropped afterwards. ``uint8`` maps are counted by raw value (256 bins) and the small histogram is then
    regrouped into buckets, so any threshold set costs the same. On the CPU the pixels go through in blocks of
    :data:`CPU_BLOCK_PIXELS` (and :data:`CPU_LANES` sub-histograms) so the temporaries stay in the cache; on other
    devices the batch is one pass.
    """
    preds = preds.detach()  # counting is not differentiable (and the CPU path writes into reused buffers)
    batch = preds.shape[0]
    device = preds.device
    plan = _level_plan(preds.dtype, thresholds)
    bins = plan.bins
    patterns = 2**plan.extras
    classes = 2 if valid is None else 4  # target bit + 2 * valid bit
    blocked = device.type == "cpu" and CPU_BLOCK_PIXELS > 0
    lanes = CPU_LANES if blocked else 1
    groups = classes * patterns * lanes  # per image; the group code is uint8
    # int16 codes halve the CPU memory traffic; elsewhere int32
    code_dtype = torch.int16 if blocked and bins * groups <= 2**15 else torch.int32

    workspace: dict[tuple[str, torch.dtype], Tensor] = {}

    def take(name: str, shape: Sequence[int], dtype: torch.dtype) -> Tensor | None:
        """A reusable CPU buffer of ``shape`` (fresh large allocations page-fault on every block)."""
        if not blocked:
            return None
        numel = math.prod(shape)
        buffer = workspace.get((name, dtype))
        if buffer is None or buffer.numel() < numel:
            buffer = workspace[(name, dtype)] = torch.empty(numel, dtype=dtype)
        return buffer[:numel].view(shape)

    def block_histogram(p: Tensor, t: Tensor, v: Tensor | None, images: int) -> Tensor:
        """``(images, patterns, 2, bins)`` histogram of a block; the group of a pixel is
        ``class + classes * (pattern + patterns * (lane + lanes * image))``."""
        level, bits = plan.levels(p, take)
        group = _as_uint8(t)  # may view `target`: only ever written through `out=` into our own buffer
        buffer = take("group", p.shape, torch.uint8)
        if v is not None:
            group = torch.add(group, _as_uint8(v), alpha=2, out=buffer)
        if bits is not None:
            group = torch.add(group, bits, alpha=classes, out=buffer)
        if lanes > 1:  # neighbouring pixels count into different sub-histograms (runs of equal codes are slow)
            group = torch.add(group, _lane_offsets(p.shape[-1], lanes, classes * patterns), out=buffer)
        if images > 1:
            step = classes * patterns * lanes
            offsets = torch.arange(0, images * step, step, dtype=torch.uint8, device=device).view(-1, 1, 1)
            group = torch.add(group, offsets, out=buffer)
        code = take("code", p.shape, code_dtype)
        code = group.to(code_dtype) if code is None else code.copy_(group)
        code.mul_(bins).add_(level)
        size = images * groups * bins
        if blocked:  # CPU: bincount is the fastest counter
            hist = torch.bincount(code.reshape(-1), minlength=size)
        else:  # CUDA's bincount reads the codes' min and max back to the host; a fixed-size scatter does not
            flat = code.reshape(-1).to(torch.int64)
            hist = torch.zeros(size, dtype=torch.int64, device=device).index_add_(0, flat, torch.ones_like(flat))
        hist = hist.view(images, lanes, patterns, classes, bins).sum(1)
        return hist[:, :, -2:]  # the valid negative and positive classes

    pixels = preds.shape[1] * preds.shape[2]
    if blocked and pixels > CPU_BLOCK_PIXELS:  # large images: blocks of pixels, one image at a time
        hist = torch.zeros(batch if per_image else 1, patterns, 2, bins, dtype=torch.int64)
        for image in range(batch):
            flat = [preds[image].reshape(-1), target[image].reshape(-1)]
            flat.append(None if valid is None else valid[image].reshape(-1))
            for start in range(0, pixels, CPU_BLOCK_PIXELS):
                block = [None if x is None else x[start : start + CPU_BLOCK_PIXELS] for x in flat]
                hist[image if per_image else 0] += block_histogram(*block, images=1)[0]
    else:  # chunks of whole images (the whole batch at once off the CPU)
        chunk = max(1, CPU_BLOCK_PIXELS // max(pixels, 1)) if blocked else batch
        if per_image:  # image offsets must fit the uint8 group code and the code dtype
            max_codes = 2**15 if code_dtype == torch.int16 else 2**31
            chunk = min(chunk, 256 // groups, max_codes // (bins * groups))
        parts = [
            block_histogram(
                preds[i : i + chunk],
                target[i : i + chunk],
                None if valid is None else valid[i : i + chunk],
                images=min(chunk, batch - i) if per_image else 1,
            )
            for i in range(0, max(batch, 1), max(chunk, 1))
        ]
        hist = torch.cat(parts) if per_image else torch.stack(parts).sum(0)
    return plan.to_buckets(hist.transpose(1, 2))  # (images, 2, patterns, bins) -> (images, 2, T + 1)


def _regroup_uint8_histogram(hist: Tensor, thresholds: Tensor) -> Tensor:
    """Raw-value histograms ``(..., 256)`` of uint8 maps -> bucket histograms ``(..., T + 1)``
    (:func:`~drivemetrics.road.pixel_scores.buckets_from_value_histograms`)."""
    return buckets_from_value_histograms(hist, thresholds)


def _as_uint8(mask: Tensor) -> Tensor:
    """A 0/1 mask as uint8 (a free view for bool)."""
    if mask.dtype == torch.bool:
        return mask.view(torch.uint8)
    return (mask != 0).view(torch.uint8)


def validate_pixel_inputs(
    preds: Tensor, target: Tensor, valid: Tensor | None = None, check_values: bool = True
) -> tuple[Tensor, Tensor, Tensor | None]:
    """Check and batch ``preds`` (float in [0, 1] or uint8), binary ``target`` and optional binary ``valid``.

    Returns the three as ``(B, H, W)`` tensors (``(H, W)`` inputs get ``B = 1``). ``check_values=False`` skips the
    value checks (NaN, range, binary), which need a device-to-host sync.
    """
    check_tensor(preds, "preds")
    check_tensor(target, "target")
    preds = as_batch(preds, "preds")
    target = as_batch(target, "target")
    check_same_shape(preds, "preds", target, "target")
    if not (preds.is_floating_point() or preds.dtype == torch.uint8):
        raise TypeError(f"`preds` must be a float tensor in [0, 1] or uint8 (0..255), got dtype {preds.dtype}")
    if check_values:
        check_binary(target, "target")
    if target.is_floating_point() or target.is_complex():
        target = target != 0
    if valid is not None:
        check_tensor(valid, "valid")
        valid = as_batch(valid, "valid")
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
    *,
    valid: Tensor | None = None,
    thresholds: int | Sequence[float] | Tensor | None = None,
    validate_args: bool = True,
) -> PixelCounts:
    """Per-image confusion counts at every threshold, in one pass.

    Args:
        preds: ``(B, H, W)`` (or ``(H, W)``) road confidences, float in [0, 1] or ``uint8`` 0..255 (``p = v / 255``).
        target: same shape, binary road ground truth (bool or 0/1).
        valid: optional same-shape binary mask; pixels where it is 0 are ignored (KITTI's "don't care").
        thresholds: ``None`` (the devkit's ``k / 255``, 256 values), an int ``T`` (``k / (T - 1)``), or sorted values.
        validate_args: check values (NaN, range, binary); turn off to avoid the device-to-host sync.

    Returns:
        :class:`PixelCounts` with int64 tensors of shape ``B x T``; ``.sum()`` pools them over the batch.

    Examples:
        >>> import torch
        >>> from drivemetrics.functional import pixel_counts
        >>> target = torch.zeros(1, 4, 4, dtype=torch.bool); target[:, 2:] = True  # (B, H, W): road in the lower half
        >>> preds = torch.where(target, 200, 30).to(torch.uint8)  # uint8 confidences, p = v / 255
        >>> counts = pixel_counts(preds, target, thresholds=[0.0, 0.5, 1.0])
        >>> counts.tp, counts.fp
        (tensor([[8, 8, 0]]), tensor([[8, 0, 0]]))
    """
    preds, target, valid = validate_pixel_inputs(preds, target, valid, check_values=validate_args)
    thr = format_thresholds(thresholds, device=preds.device)
    return counts_from_histograms(bucket_histograms(preds, target, valid, thr, per_image=True))


def counts_at_threshold(
    preds: Tensor, target: Tensor, *, valid: Tensor | None = None, threshold: float = 0.5, validate_args: bool = True
) -> PixelCounts:
    """Per-image counts at one threshold (``p >= threshold``), int64 tensors of shape ``B``.

    Examples:
        >>> import torch
        >>> from drivemetrics.functional import counts_at_threshold
        >>> target = torch.zeros(1, 4, 4, dtype=torch.bool); target[:, 2:] = True  # (B, H, W): road in the lower half
        >>> preds = torch.where(target, 200, 30).to(torch.uint8)  # uint8 confidences, p = v / 255
        >>> counts_at_threshold(preds, target, threshold=0.5)
        PixelCounts(tp=tensor([8]), fp=tensor([0]), fn=tensor([0]), tn=tensor([8]))
    """
    counts = pixel_counts(preds, target, valid=valid, thresholds=[float(threshold)], validate_args=validate_args)
    return PixelCounts(*(c[..., 0] for c in counts))


def scores_from_counts(
    counts: PixelCounts | Sequence[Tensor],
    *,
    thresholds: int | Sequence[float] | Tensor | None = None,
    beta: float = 1.0,
    compat: Compat = "default",
    warn_empty: bool = True,
    validate_args: bool = True,
) -> dict[str, Tensor]:
    """The devkit's scores (``pxEval_maximizeFMeasure``) from per-threshold counts, plus a few extra keys.

    Keys of the result (the devkit's names in brackets; the CLI prints those):

    - ``max_f`` (``MaxF``): max over thresholds of ``F_beta``, with the devkit's 1e-10 epsilon;
      ``average_precision`` (``AvgPrec``): 11-point interpolated AP at recall levels ``np.arange(0, 1.1, 0.1)``;
      ``best_threshold`` (``BestThresh``): the lowest threshold reaching ``max_f``;
    - at that working point: ``precision_wp`` (``PRE_wp``), ``recall_wp`` (``REC_wp``), ``tpr_wp``
      (``TPR_wp``), ``fpr_wp`` (``FPR_wp``), ``fnr_wp`` (``FNR_wp``), ``accuracy_wp`` (``A_wp``), ``iou_wp``
      (``Q_wp``, ``IoU_wp``), ``tp_wp``, ``fp_wp``, ``fn_wp``, ``tn_wp`` (``TP_wp`` ...); ``total_positives``
      / ``total_negatives`` (``totalPosNum`` / ``totalNegNum``, pixels);
    - extra keys: ``average_precision_integrated`` (the area under the step precision-recall curve,
      ``sum_k (R_k - R_{k+1}) P_k``, no interpolation), ``best_threshold_index`` (int64);
    - curves, shape ``(..., T)``: ``precision`` (with the devkit's epsilon), ``recall``, ``f_measure``,
      ``thresholds``. Entries with ``TP = 0`` (which the devkit drops) have precision 0 and recall 0.

    Args:
        counts: ``(tp, fp, fn, tn)`` of shape ``(..., T)`` (pixels); leading dimensions are kept (e.g. per-image
            scores).
        thresholds: the ``T`` thresholds the counts were taken at (same forms as in :func:`pixel_counts`).
        beta: F-measure weight (the devkit uses 1).
        compat: ``"default"``: the working-point values are exact float64 ratios of the int64 counts;
            ``"reference"``: the devkit's rounding (counts cast to float32, the ``*_wp`` ratios computed in float32).
        warn_empty: warn when there is no valid positive pixel (scores are then NaN).
        validate_args: refuse negative, NaN or infinite counts (a read-back); ``False`` skips it.

    Returns:
        The keys listed above, tensors of shape ``(...)`` unless noted.

    Note:
        Differences from the devkit, all where it crashes or loses precision: no positive pixel gives NaN scores
        (the devkit raises); a recall level no threshold reaches adds 0 to the 11-point AP (the devkit raises; with
        thresholds starting at 0 every level is reached); ``*_wp`` values are exact float64 unless
        ``compat="reference"``.

    Examples:
        >>> import torch
        >>> from drivemetrics.functional import scores_from_counts
        >>> counts = (torch.tensor([4, 3, 0]), torch.tensor([4, 1, 0]), torch.tensor([0, 1, 4]),
        ...           torch.tensor([0, 3, 4]))
        >>> scores = scores_from_counts(counts, thresholds=[0.0, 0.5, 1.0])
        >>> round(scores["max_f"].item(), 4), scores["best_threshold"].item(), scores["precision_wp"].item()
        (0.75, 0.5, 0.75)
    """
    reference = check_compat(compat)
    tp, fp, fn, tn = _count_tensors(counts, validate_args)
    thr = format_thresholds(thresholds, device=tp.device)
    if thr.numel() != tp.shape[-1]:
        raise ValueError(f"`thresholds` has {thr.numel()} values but `counts` have {tp.shape[-1]} thresholds")
    if not beta > 0 or not math.isfinite(beta):
        raise ValueError(f"`beta` must be a finite number > 0, got {beta}")
    return devkit_scores(PixelCounts(tp, fp, fn, tn), thr, beta=beta, reference=reference, warn_empty=warn_empty)


def fixed_threshold_scores(
    counts: PixelCounts | Sequence[Tensor], beta: float = 1.0, *, validate_args: bool = True
) -> dict[str, Tensor]:
    """Plain ``F_beta``, precision, recall and IoU from counts at one threshold (no epsilon; 0/0 gives NaN).

    ``validate_args`` refuses negative, NaN or infinite counts (a read-back).

    Examples:
        >>> import torch
        >>> from drivemetrics.functional import fixed_threshold_scores
        >>> scores = fixed_threshold_scores((torch.tensor(3), torch.tensor(1), torch.tensor(1), torch.tensor(5)))
        >>> scores["f_measure"], scores["iou"]
        (tensor(0.7500, dtype=torch.float64), tensor(0.6000, dtype=torch.float64))
    """
    if validate_args:
        _check_counts(counts)
    tp, fp, fn, _ = (torch.as_tensor(c).to(torch.float64) for c in counts)
    beta2 = float(beta) ** 2
    return {
        "f_measure": (1 + beta2) * tp / ((1 + beta2) * tp + beta2 * fn + fp),
        "precision": tp / (tp + fp),
        "recall": tp / (tp + fn),
        "iou": tp / (tp + fp + fn),
    }


def check_fixed_threshold(fixed_threshold: float | None) -> None:
    """``fixed_threshold`` must be ``None`` or a number in [0, 1]."""
    if fixed_threshold is not None and not (
        isinstance(fixed_threshold, (int, float))
        and not isinstance(fixed_threshold, bool)
        and 0 <= fixed_threshold <= 1
    ):
        raise ValueError(f"`fixed_threshold` must be None or a number in [0, 1], got {fixed_threshold!r}")


def with_fixed_threshold(thresholds: Tensor, fixed_threshold: float | None) -> tuple[Tensor, Tensor, Tensor | None]:
    """Thresholds to count at so that one pass serves the sweep and a fixed threshold.

    Returns ``(counted, sweep_index, fixed_index)``: the sorted union (float64) and where the sweep thresholds and
    the fixed one sit in it (``fixed_index`` is ``None`` when ``fixed_threshold`` is).
    """
    if fixed_threshold is None:
        return thresholds, torch.arange(thresholds.numel(), device=thresholds.device), None
    fixed = torch.tensor([float(fixed_threshold)], dtype=torch.float64, device=thresholds.device)
    counted = torch.unique(torch.cat([thresholds, fixed]))
    return counted, torch.searchsorted(counted, thresholds), torch.searchsorted(counted, fixed)[0]


def scores_with_fixed_threshold(
    counts: PixelCounts,
    thresholds: Tensor,
    sweep_index: Tensor,
    fixed_index: Tensor | None,
    fixed_threshold: float | None,
    beta: float = 1.0,
    compat: Compat = "default",
) -> dict[str, Tensor]:
    """:func:`scores_from_counts` over the sweep plus ``f_measure_fixed``, ``precision_fixed``, ``recall_fixed``,
    ``iou_fixed`` and ``fixed_threshold`` (unless it is ``None``), from counts taken at the union of
    :func:`with_fixed_threshold`."""
    sweep = PixelCounts(*(c[..., sweep_index] for c in counts))
    scores = scores_from_counts(sweep, thresholds=thresholds, beta=beta, compat=compat, validate_args=False)
    if fixed_index is None or fixed_threshold is None:
        return scores
    fixed = PixelCounts(*(c[..., fixed_index] for c in counts))
    for key, value in fixed_threshold_scores(fixed, beta=beta, validate_args=False).items():
        scores[f"{key}_fixed"] = value
    scores["fixed_threshold"] = torch.tensor(float(fixed_threshold), dtype=torch.float64, device=counts.tp.device)
    return scores


def _check_counts(counts: PixelCounts | Sequence[Tensor]) -> None:
    """``validate_args`` of the score functions: four count tensors ``(tp, fp, fn, tn)``, finite and >= 0."""
    if len(counts) != 4:
        raise ValueError(f"`counts` must be four tensors (tp, fp, fn, tn), got {len(counts)}")
    for name, values in zip(("tp", "fp", "fn", "tn"), counts, strict=True):
        check_values(values, f"counts.{name}", low=0, what="pixel counts")


def _count_tensors(counts: PixelCounts | Sequence[Tensor], validate_args: bool) -> tuple[Tensor, ...]:
    """``(tp, fp, fn, tn)`` of one shape ``(..., T)``; with ``validate_args`` also finite and >= 0."""
    tp, fp, fn, tn = (torch.as_tensor(c) for c in counts)
    if not (tp.shape == fp.shape == fn.shape == tn.shape) or tp.ndim < 1:
        raise ValueError(
            "`counts` must be four tensors (tp, fp, fn, tn) of the same shape (..., T), got shapes "
            f"{[tuple(c.shape) for c in (tp, fp, fn, tn)]}"
        )
    if validate_args:
        _check_counts((tp, fp, fn, tn))
    return tp, fp, fn, tn
