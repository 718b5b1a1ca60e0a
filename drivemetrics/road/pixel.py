"""KITTI-ROAD pixel metrics: per-threshold confusion counts and the devkit's scores (MaxF, AP, working point).

Semantics follow the KITTI-ROAD devkit (``evalExp`` + ``pxEval_maximizeFMeasure``):

- A pixel is *road at threshold* ``t_k`` iff its confidence ``p >= t_k``. The default thresholds are the devkit's
  256 values ``t_k = k / 255``, ``k = 0..255``; for ``uint8`` maps (``p = v / 255``) this is exactly ``v >= k``.
- The comparison is exact: the stored value of ``p`` (float16/32/64) is compared with the float64 threshold as
  real numbers, as the devkit's float64 histogram does. So ``p = 64/255`` stored as float32 (which rounds up)
  counts as road at threshold 64, and a float32 value just below ``64/255`` does not.
- Counting is one pass: each pixel is bucketed by the number of thresholds ``<= p`` (its raw value for uint8, an
  exact ``floor(p * 255) + 1`` for float maps on the devkit grid, ``torch.bucketize`` otherwise), one ``bincount``
  of small integer codes builds the histograms of positive and negative pixels, and cumulative sums give
  ``TP/FP/FN/TN`` at every threshold. Memory is ``O(pixels + thresholds)``, never ``(pixels, thresholds)``.
- Pixels outside the ``valid`` mask (KITTI's black "don't care" pixels) are ignored completely.
- Scores are computed from counts pooled over everything counted (micro average), one best threshold overall.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor

from drivemetrics._internal.compat import Compat, check_compat
from drivemetrics._internal.extras import require
from drivemetrics._internal.metric import MetricFamily, ScalarMetric
from drivemetrics.geometry.bev import BevGrid
from drivemetrics.road.bev_inputs import Space, pixel_inputs_to_bev

__all__ = [
    "PixelCounts",
    "RoadPixelAveragePrecision",
    "RoadPixelMaxFScore",
    "RoadPixelMetrics",
    "bucket_histograms",
    "confidence_buckets",
    "counts_at_threshold",
    "counts_from_histograms",
    "fixed_threshold_scores",
    "format_thresholds",
    "kitti_thresholds",
    "pixel_counts",
    "pixel_inputs_to_bev",
    "road_pixel_scores",
    "scores_from_counts",
    "scores_with_fixed_threshold",
    "validate_pixel_inputs",
    "with_fixed_threshold",
]

if TYPE_CHECKING:
    from drivemetrics.geometry.warp import WarpMode
from drivemetrics.road.pixel_counting import (  # the counting kernels, re-exported here with their family
    PixelCounts,
    bucket_histograms,
    check_fixed_threshold,
    confidence_buckets,
    counts_at_threshold,
    counts_from_histograms,
    fixed_threshold_scores,
    format_thresholds,
    kitti_thresholds,
    pixel_counts,
    scores_from_counts,
    scores_with_fixed_threshold,
    validate_pixel_inputs,
    with_fixed_threshold,
)

_SPACES = ("perspective", "bev")
#: Order fixed: the index is part of the metric's config key.
_WARP_MODES = ("devkit", "nearest", "bilinear")


def road_pixel_scores(
    preds: Tensor,
    target: Tensor,
    *,
    valid: Tensor | None = None,
    thresholds: int | Sequence[float] | Tensor | None = None,
    beta: float = 1.0,
    fixed_threshold: float | None = 0.5,
    compat: Compat = "default",
    validate_args: bool = True,
) -> dict[str, Tensor]:
    """Pooled devkit scores of a batch in one call (the functional form of ``RoadPixelMetrics``).

    Arguments as in :func:`pixel_counts` and :func:`scores_from_counts`; the keys are those of
    :func:`scores_from_counts` plus ``f_measure_fixed``, ``precision_fixed``, ``recall_fixed``, ``iou_fixed`` at
    ``p >= fixed_threshold`` (``None``: no fixed threshold, a little faster for float maps).

    Examples:
        >>> import torch
        >>> from drivemetrics.functional import road_pixel_scores
        >>> target = torch.zeros(1, 4, 4, dtype=torch.bool); target[:, 2:] = True  # (B, H, W): road in the lower half
        >>> preds = torch.where(target, 200, 30).to(torch.uint8)  # uint8 confidences, p = v / 255
        >>> scores = road_pixel_scores(preds, target)
        >>> scores["max_f"], scores["precision_wp"], scores["best_threshold"]
        (tensor(1.0000, dtype=torch.float64), tensor(1., dtype=torch.float64), tensor(0.1216, dtype=torch.float64))
        >>> scores["total_positives"]
        tensor(8., dtype=torch.float64)
    """
    check_fixed_threshold(fixed_threshold)
    preds, target, valid = validate_pixel_inputs(preds, target, valid, check_values=validate_args)
    sweep = format_thresholds(thresholds, device=preds.device)
    counted, sweep_index, fixed_index = with_fixed_threshold(sweep, fixed_threshold)
    counts = counts_from_histograms(bucket_histograms(preds, target, valid, counted, per_image=False)[0])
    return scores_with_fixed_threshold(
        counts, sweep, sweep_index, fixed_index, fixed_threshold, beta=beta, compat=compat
    )


class RoadPixelMetrics(MetricFamily):
    r"""KITTI-ROAD pixel evaluation (the devkit's ``evalExp`` + ``pxEval_maximizeFMeasure``), pooled over updates.

    As input to ``update`` the metric accepts:

    - ``preds``: ``(B, H, W)`` (or ``(H, W)``) road confidences, float in [0, 1] or ``uint8`` 0..255 (``p = v / 255``);
    - ``target``: same shape, binary road ground truth;
    - ``valid`` (optional): same shape, binary; 0 marks "don't care" pixels, which are ignored;
    - ``homography`` (``space="bev"``): ``(B, 3, 3)`` per-frame image-from-road homographies; a perspective metric
      ignores it, so perspective and BEV metrics can share one ``MetricCollection`` and one ``update`` call.

    The state is four int64 counters per threshold (TP, FP, FN, TN, summed across processes; plus a constant
    ``counting_config`` that keeps differently configured metrics out of one ``MetricCollection`` compute group),
    never the maps, so memory does not grow with the number of frames. ``compute()`` returns the dict of
    :func:`~drivemetrics.road.pixel.scores_from_counts` over everything seen (pooled, one best threshold; not a
    mean of per-image scores): ``max_f``, ``average_precision`` (11-point), ``average_precision_integrated``,
    ``best_threshold``, ``precision_wp``, ``recall_wp``, ``fpr_wp``, ``fnr_wp``, ``accuracy_wp``, ``iou_wp``, ...,
    the curves ``precision`` / ``recall`` / ``f_measure`` / ``thresholds``, plus ``f_measure_fixed``,
    ``precision_fixed``, ``recall_fixed``, ``iou_fixed`` at ``p >= fixed_threshold``.

    Road at threshold ``t_k`` iff ``p >= t_k`` (exact comparison; for uint8 maps and the default thresholds
    ``v >= k``). To log one number from Lightning use :class:`RoadPixelMaxFScore` or :class:`RoadPixelAveragePrecision`.

    Args:
        thresholds: ``None`` (the devkit's 256 values ``k / 255``), an int ``T`` (``k / (T - 1)``) or sorted values.
        beta: F-measure weight (devkit: 1).
        fixed_threshold: the threshold of the ``*_fixed`` keys (default 0.5, i.e. ``p >= 0.5``); ``None`` drops
            them (float maps then count a little faster).
        compat: ``"reference"`` reproduces the devkit's float32 rounding of the working-point values
            (``"default"``: exact float64 ratios of the counts).
        space: ``"perspective"`` (default) or ``"bev"`` (inputs are warped to the BEV grid with each frame's
            homography before counting; see ``grid`` and ``warp_mode``).
        grid: the BEV grid (``space="bev"``); default: the KITTI grid ``BevGrid()``.
        warp_mode: BEV warp, ``"devkit"`` (nearest neighbour exactly like the devkit's lookup, default) or
            ``"nearest"`` (nearest pixel in the 0-based convention) or ``"bilinear"`` (confidences interpolated;
            target and valid masks nearest). See :func:`~drivemetrics.road.pixel.pixel_inputs_to_bev`.
        validate_args: check values in ``update`` (costs a device-to-host sync).
        kwargs: see torchmetrics' ``Metric`` keyword arguments.

    Examples:
        >>> import torch
        >>> from drivemetrics.road import RoadPixelMetrics
        >>> metric = RoadPixelMetrics()
        >>> target = torch.zeros(1, 4, 4, dtype=torch.bool); target[:, 2:] = True
        >>> preds = torch.where(target, 200, 30).to(torch.uint8)
        >>> metric.update(preds, target)
        >>> round(metric.compute()["max_f"].item(), 6)
        1.0
    """

    is_differentiable = False
    higher_is_better = True
    full_state_update = False
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0

    tp: Tensor
    fp: Tensor
    fn: Tensor
    tn: Tensor

    def __init__(
        self,
        thresholds: int | Sequence[float] | Tensor | None = None,
        beta: float = 1.0,
        fixed_threshold: float | None = 0.5,
        compat: Compat = "default",
        space: Space = "perspective",
        grid: BevGrid | None = None,
        warp_mode: WarpMode = "devkit",
        validate_args: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if not (isinstance(beta, (int, float)) and math.isfinite(beta) and beta > 0):
            raise ValueError(f"`beta` must be a finite number > 0, got {beta!r}")
        check_fixed_threshold(fixed_threshold)
        if space not in _SPACES:
            raise ValueError(f"`space` must be one of {_SPACES}, got {space!r}")
        sweep = format_thresholds(thresholds)
        counted, sweep_index, fixed_index = with_fixed_threshold(sweep, fixed_threshold)  # one counting pass
        self.beta = float(beta)
        self.fixed_threshold = None if fixed_threshold is None else float(fixed_threshold)
        check_compat(compat)
        self.compat = compat
        self.validate_args = bool(validate_args)
        self.space = space
        self.warp_mode = warp_mode
        self.grid = grid
        if space == "bev":
            self._setup_bev(grid, warp_mode)
        self.register_buffer("thresholds", sweep, persistent=False)
        self.register_buffer("counted_thresholds", counted, persistent=False)
        self.register_buffer("_sweep_index", sweep_index, persistent=False)
        self.register_buffer("_fixed_index", fixed_index, persistent=False)
        for name in ("tp", "fp", "fn", "tn"):
            self.add_state(name, torch.zeros(counted.numel(), dtype=torch.int64), dist_reduce_fx="sum")
        # What the counters mean (the counted thresholds, the space and its warp), as a constant state: a
        # MetricCollection merges metrics whose states are equal into one compute group, and without this a
        # perspective and a BEV metric (or two threshold sets) that happen to count the same first batch would be
        # merged and share counters from then on.
        self.add_state("counting_config", self._counting_config(counted), dist_reduce_fx="max")

    def _counting_config(self, counted: Tensor) -> Tensor:
        """float64 ``[thresholds..., space, warp mode, grid x_min, x_max, z_min, z_max, resolution]``."""
        bev = [1.0, float(_WARP_MODES.index(self.warp_mode))] if self.space == "bev" else [0.0, -1.0]
        grid = self.grid if isinstance(self.grid, BevGrid) else None
        extent = [grid.x_min, grid.x_max, grid.z_min, grid.z_max, grid.resolution] if grid else [0.0] * 5
        return torch.cat([counted, torch.tensor(bev + extent, dtype=torch.float64)])

    def _setup_bev(self, grid: BevGrid | None, warp_mode: str) -> None:
        if grid is not None and not isinstance(grid, BevGrid):
            raise TypeError(f"`grid` must be a BevGrid, got {type(grid).__name__}")
        if warp_mode not in _WARP_MODES:
            raise ValueError(f"`warp_mode` must be one of {_WARP_MODES}, got {warp_mode!r}")
        self.grid = BevGrid() if grid is None else grid

    def update(
        self, preds: Tensor, target: Tensor, *, valid: Tensor | None = None, homography: Tensor | None = None
    ) -> None:
        """Count a batch (shapes in the class docstring)."""
        if self.space == "bev":
            preds, target, valid = self._to_bev(preds, target, valid, homography)
        preds, target, valid = validate_pixel_inputs(preds, target, valid, check_values=self.validate_args)
        hist = bucket_histograms(preds, target, valid, self.counted_thresholds, per_image=False)[0]
        counts = counts_from_histograms(hist)
        self.tp = self.tp + counts.tp
        self.fp = self.fp + counts.fp
        self.fn = self.fn + counts.fn
        self.tn = self.tn + counts.tn

    def _to_bev(
        self, preds: Tensor, target: Tensor, valid: Tensor | None, homography: Tensor | None
    ) -> tuple[Tensor, Tensor, Tensor]:
        if homography is None:
            raise ValueError("space='bev' needs `homography` (B x 3 x 3 image-from-road) in update()")
        return pixel_inputs_to_bev(
            preds, target, valid, homography, self.grid, mode=self.warp_mode, validate_args=self.validate_args
        )

    def compute(self) -> dict[str, Tensor]:
        """Pooled scores (see the class docstring)."""
        return scores_with_fixed_threshold(
            PixelCounts(self.tp, self.fp, self.fn, self.tn),
            self.thresholds,
            self._sweep_index,
            self._fixed_index,
            self.fixed_threshold,
            beta=self.beta,
            compat=self.compat,
        )

    def plot(self, val: dict[str, Tensor] | None = None, ax: Any = None) -> tuple[Any, Any]:
        """Draw the pooled precision-recall curve with the MaxF working point (needs matplotlib).

        Args:
            val: a dict from :meth:`compute` (default: compute now).
            ax: a matplotlib axes to draw into (default: a new figure).

        Returns:
            ``(figure, axes)``.
        """
        plt = require("plot", "matplotlib.pyplot", "plot()")
        scores = self.compute() if val is None else val
        kept = scores["recall"] > 0  # the points the devkit keeps (TP > 0)
        recall = scores["recall"][kept].cpu().numpy()
        precision = scores["precision"][kept].cpu().numpy()
        fig, ax = plt.subplots() if ax is None else (ax.figure, ax)
        ax.plot(
            recall,
            precision,
            label=f"{self.space}: MaxF {scores['max_f'].item():.4f}, AP {scores['average_precision'].item():.4f}",
        )
        ax.plot([scores["recall_wp"].item()], [scores["precision_wp"].item()], "o", color="black")
        ax.set_xlabel("recall")
        ax.set_ylabel("precision")
        ax.set_xlim(0, 1.01)
        ax.set_ylim(0, 1.01)
        ax.legend(loc="lower left")
        return fig, ax


class RoadPixelMaxFScore(ScalarMetric, RoadPixelMetrics):
    """The pooled KITTI-ROAD ``max_f`` as a scalar, for ``self.log(...)`` in Lightning (arguments as the family's).

    Examples:
        >>> from drivemetrics.road import RoadPixelMaxFScore, road_pixel_example_inputs
        >>> RoadPixelMaxFScore()(**road_pixel_example_inputs())
        tensor(1.0000, dtype=torch.float64)
    """

    key = "max_f"


class RoadPixelAveragePrecision(ScalarMetric, RoadPixelMetrics):
    """The pooled KITTI-ROAD 11-point ``average_precision`` as a scalar (``integrated=True``: the exact integrated AP).

    Examples:
        >>> from drivemetrics.road import RoadPixelAveragePrecision, road_pixel_example_inputs
        >>> RoadPixelAveragePrecision()(**road_pixel_example_inputs())
        tensor(1.0000, dtype=torch.float64)
    """

    def __init__(
        self,
        thresholds: int | Sequence[float] | Tensor | None = None,
        beta: float = 1.0,
        fixed_threshold: float | None = 0.5,
        compat: Compat = "default",
        space: Space = "perspective",
        grid: BevGrid | None = None,
        warp_mode: WarpMode = "devkit",
        validate_args: bool = True,
        integrated: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(thresholds, beta, fixed_threshold, compat, space, grid, warp_mode, validate_args, **kwargs)
        self.integrated = bool(integrated)
        self.ap_key = "average_precision_integrated" if self.integrated else "average_precision"

    key = "{ap_key}"
