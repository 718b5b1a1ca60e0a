"""``torchmetrics`` wrappers of the KITTI-ROAD pixel metrics (perspective or BEV), pooled over every update."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor
from torchmetrics import Metric

from drivemetrics._metric import plot_metric
from drivemetrics.geometry.bev import BevGrid
from drivemetrics.road.pixel import (
    PixelCounts,
    bucket_histograms,
    check_fixed_threshold,
    counts_from_histograms,
    format_thresholds,
    pixel_inputs_to_bev,
    scores_with_fixed_threshold,
    validate_pixel_inputs,
    with_fixed_threshold,
)

__all__ = ["RoadAveragePrecision", "RoadMaxF", "RoadPixelMetrics"]

_SPACES = ("perspective", "bev")
_WARP_MODES = ("devkit", "nearest", "bilinear")


class RoadPixelMetrics(Metric):
    r"""KITTI-ROAD pixel evaluation (the devkit's ``evalExp`` + ``pxEval_maximizeFMeasure``), pooled over updates.

    As input to ``update`` the metric accepts:

    - ``preds``: ``B x H x W`` (or ``H x W``) road confidences, float in [0, 1] or ``uint8`` 0..255 (``p = v / 255``);
    - ``target``: same shape, binary road ground truth;
    - ``valid`` (optional): same shape, binary; 0 marks "don't care" pixels, which are ignored;
    - ``homography`` (``space="bev"``): ``B x 3 x 3`` per-frame image-from-road homographies; a perspective metric
      ignores it, so perspective and BEV metrics can share one ``MetricCollection`` and one ``update`` call.

    The state is four int64 counters per threshold (TP, FP, FN, TN, summed across processes; plus a constant
    ``counting_config`` that keeps differently configured metrics out of one ``MetricCollection`` compute group),
    never the maps, so memory does not grow with the number of frames. ``compute()`` returns the dict of
    :func:`~drivemetrics.road.pixel.scores_from_counts` over everything seen (pooled, one best threshold; not a
    mean of per-image scores): ``MaxF``, ``AvgPrec`` (11-point), ``AvgPrecIntegrated``, ``BestThresh``, ``PRE_wp``,
    ``REC_wp``, ``FPR_wp``, ``FNR_wp``, ``A_wp``, ``IoU_wp``, ..., the curves ``precision`` / ``recall`` / ``F`` /
    ``thresholds``, plus ``F_fixed``, ``PRE_fixed``, ``REC_fixed``, ``IoU_fixed`` at ``p >= fixed_threshold``.

    Road at threshold ``t_k`` iff ``p >= t_k`` (exact comparison; for uint8 maps and the default thresholds
    ``v >= k``). To log one number from Lightning use :class:`RoadMaxF` or :class:`RoadAveragePrecision`.

    Args:
        thresholds: ``None`` (the devkit's 256 values ``k / 255``), an int ``T`` (``k / (T - 1)``) or sorted values.
        beta: F-measure weight (devkit: 1).
        fixed_threshold: the threshold of the ``*_fixed`` keys (default 0.5, i.e. ``p >= 0.5``); ``None`` drops
            them (float maps then count a little faster).
        devkit_float32: reproduce the devkit's float32 rounding of the working-point values.
        space: ``"perspective"`` (default) or ``"bev"`` (inputs are warped to the BEV grid with each frame's
            homography before counting; see ``grid`` and ``warp_mode``).
        grid: the BEV grid (``space="bev"``); default: the KITTI grid ``BevGrid()``.
        warp_mode: BEV warp, ``"devkit"`` (nearest neighbour exactly like the devkit's lookup, default) or
            ``"nearest"`` (nearest pixel in the 0-based convention) or ``"bilinear"`` (confidences interpolated;
            target and valid masks nearest). See :func:`~drivemetrics.road.pixel.pixel_inputs_to_bev`.
        validate_args: check values in ``update`` (costs a device-to-host sync).
        kwargs: see torchmetrics' ``Metric`` keyword arguments.

    Example:
        >>> import torch
        >>> metric = RoadPixelMetrics()
        >>> target = torch.zeros(1, 4, 4, dtype=torch.bool); target[:, 2:] = True
        >>> preds = torch.where(target, 200, 30).to(torch.uint8)
        >>> metric.update(preds, target)
        >>> round(metric.compute()["MaxF"].item(), 6)
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
        devkit_float32: bool = False,
        space: str = "perspective",
        grid: BevGrid | None = None,
        warp_mode: str = "devkit",
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
        self.devkit_float32 = bool(devkit_float32)
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
        self, preds: Tensor, target: Tensor, valid: Tensor | None = None, homography: Tensor | None = None
    ) -> None:
        """Count a batch (shapes in the class docstring)."""
        if self.space == "bev":
            preds, target, valid = self._to_bev(preds, target, valid, homography)
        preds, target, valid = validate_pixel_inputs(preds, target, valid, check_values=self.validate_args)
        hist = bucket_histograms(preds, target, valid, self.counted_thresholds, per_image=False)[0]
        counts = counts_from_histograms(hist)
        self.tp += counts.tp
        self.fp += counts.fp
        self.fn += counts.fn
        self.tn += counts.tn

    def _to_bev(
        self, preds: Tensor, target: Tensor, valid: Tensor | None, homography: Tensor | None
    ) -> tuple[Tensor, Tensor, Tensor]:
        if homography is None:
            raise ValueError("space='bev' needs `homography` (B x 3 x 3 image-from-road) in update()")
        return pixel_inputs_to_bev(preds, target, valid, homography, self.grid, mode=self.warp_mode)

    def compute(self) -> dict[str, Tensor]:
        """Pooled scores (see the class docstring)."""
        return scores_with_fixed_threshold(
            PixelCounts(self.tp, self.fp, self.fn, self.tn),
            self.thresholds,
            self._sweep_index,
            self._fixed_index,
            self.fixed_threshold,
            beta=self.beta,
            devkit_float32=self.devkit_float32,
        )

    def plot(self, val: dict[str, Tensor] | None = None, ax: Any = None) -> tuple[Any, Any]:
        """Draw the pooled precision-recall curve with the MaxF working point (needs matplotlib).

        Args:
            val: a dict from :meth:`compute` (default: compute now).
            ax: a matplotlib axes to draw into (default: a new figure).

        Returns:
            ``(figure, axes)``.
        """
        try:
            import matplotlib.pyplot as plt
        except ModuleNotFoundError as error:  # pragma: no cover - matplotlib is an optional extra
            raise ModuleNotFoundError("plot() needs matplotlib: pip install 'drivemetrics[plot]'") from error
        scores = self.compute() if val is None else val
        kept = scores["recall"] > 0  # the points the devkit keeps (TP > 0)
        recall = scores["recall"][kept].cpu().numpy()
        precision = scores["precision"][kept].cpu().numpy()
        fig, ax = plt.subplots() if ax is None else (ax.figure, ax)
        ax.plot(
            recall,
            precision,
            label=f"{self.space}: MaxF {scores['MaxF'].item():.4f}, AP {scores['AvgPrec'].item():.4f}",
        )
        ax.plot([scores["REC_wp"].item()], [scores["PRE_wp"].item()], "o", color="black")
        ax.set_xlabel("recall")
        ax.set_ylabel("precision")
        ax.set_xlim(0, 1.01)
        ax.set_ylim(0, 1.01)
        ax.legend(loc="lower left")
        return fig, ax


class RoadMaxF(RoadPixelMetrics):
    """The pooled KITTI-ROAD ``MaxF`` as a scalar, for ``self.log(...)`` in Lightning (same args as the base)."""

    def compute(self) -> Tensor:  # type: ignore[override]
        """Pooled MaxF (float64 scalar)."""
        return super().compute()["MaxF"]

    def plot(self, val: Tensor | Sequence[Tensor] | None = None, ax: Any = None) -> tuple[Any, Any]:  # type: ignore[override]
        """``val=None``: the pooled PR curve with its MaxF point; else a value or a sequence of values over epochs."""
        return _plot_scalar(self, val, ax)


class RoadAveragePrecision(RoadPixelMetrics):
    """The pooled KITTI-ROAD 11-point ``AvgPrec`` as a scalar (``integrated=True``: the exact integrated AP)."""

    def __init__(self, *args: Any, integrated: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.integrated = bool(integrated)

    def compute(self) -> Tensor:  # type: ignore[override]
        """Pooled AP (float64 scalar)."""
        return super().compute()["AvgPrecIntegrated" if self.integrated else "AvgPrec"]

    def plot(self, val: Tensor | Sequence[Tensor] | None = None, ax: Any = None) -> tuple[Any, Any]:  # type: ignore[override]
        """``val=None``: the pooled PR curve with its MaxF point; else a value or a sequence of values over epochs."""
        return _plot_scalar(self, val, ax)


def _plot_scalar(metric: RoadPixelMetrics, val: Tensor | Sequence[Tensor] | None, ax: Any) -> tuple[Any, Any]:
    if val is None:
        with metric.sync_context():  # the pooled curve over all processes, as compute() would see it
            scores = RoadPixelMetrics.compute(metric)
        return RoadPixelMetrics.plot(metric, scores, ax)
    return plot_metric(metric, val, ax)
