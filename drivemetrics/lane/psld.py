"""PSLD, the per-frame simulated lateral deviation (Sato et al., CVPR 2022), exact and as a differentiable loss.

For each frame a vehicle starts at the origin of the frame's road frame (X right, Z forward, heading 0) at the
frame's speed. Step 1 (one camera frame, 1/20 s) is controlled by the **detected** lane center, steps 2..Tp by the
**ground-truth** center (the road, re-expressed in the vehicle frame at every step); the lateral controller and the
kinematic bicycle are those of :mod:`drivemetrics.lane.control` and :mod:`drivemetrics.vehicle`. Then::

    PSLD(frame) = (1 / Tp) max_{1 <= t <= Tp} |x(t) - x_ref(t)|

Reference ``x_ref`` (argument ``x_ref_source``):

* ``"rollout"`` (default): the same closed loop driven by the ground-truth center at every step, compared
  index-wise, as ld-metric does (its ``y_GT``). A perfect detection scores exactly 0, whatever the controller's own
  tracking error or the start offset.
* ``"center"``: the ground-truth lane center itself at the vehicle's longitudinal position, ``X_gt(z(t))``.

Inputs are lane-center *profiles*: lateral positions ``(B, M)`` at fixed longitudinal distances ``z_samples``
(:func:`drivemetrics.lane.geometry.center_from_image_lanes` builds them from image lanes). Profiles are continued
linearly beyond their last sample. Everything runs batched over frames: one Python loop over the ``Tp`` steps.

Differences from ld-metric (documented, see the README): ld-metric sums the per-frame values over the 20 start
frames of a scenario (its number = 20 x our mean); it uses openpilot's nonlinear MPC and RK4 (we use a closed-form
linear MPC and exact arcs); its step 1 uses the detector on a synthesised view of the *simulated* pose while here
the frame's detection is used at the recorded pose (the start of every PSLD rollout), which is what makes PSLD
computable from per-frame detections alone.
"""

from __future__ import annotations

from typing import Any, Literal

import torch
from torch import Tensor, nn

from drivemetrics._internal.metric import CheckedStateMetric, add_config_state, plot_metric
from drivemetrics._internal.precision import float32_if_half
from drivemetrics.lane.control import LateralController, LinearMPC
from drivemetrics.lane.geometry import (
    DEFAULT_LANE_WIDTH,
    center_from_image_lanes,
    center_from_polynomials,
    default_z_samples,
    soft_argmax_rows,
)
from drivemetrics.lane.psld_rollout import (
    XRefSource,
    check_horizon,
    psld_deviations,
    smooth_psld,
)

__all__ = [
    "PSLD",
    "PSLDLoss",
    "psld",
    "psld_deviations",
    "smooth_psld",
]

#: How PSLD reduces the per-profile values: their mean, their sum, or none (one value per profile).
PSLDReduction = Literal["mean", "sum", "none"]


def _reduce(values: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return values.mean()
    if reduction == "sum":
        return values.sum()
    if reduction == "none":
        return values
    raise ValueError(f"`reduction` must be 'mean', 'sum' or 'none', got {reduction!r}")


def psld(
    preds: Tensor,
    target: Tensor,
    *,
    speed: Tensor | float,
    z_samples: Tensor | None = None,
    horizon_frames: int = 10,
    x_ref_source: XRefSource = "rollout",
    controller: LateralController | None = None,
    initial_steering: Tensor | None = None,
    reduction: PSLDReduction = "mean",
    validate_args: bool = True,
) -> Tensor:
    """PSLD (metres per step): ``(1 / Tp) max_t |x(t) - x_ref(t)|`` per frame, reduced over frames.

    Arguments as :func:`psld_deviations`; ``reduction`` is ``"mean"`` (default), ``"sum"`` or ``"none"``
    (per-frame values ``(B,)``). ld-metric's per-scenario number is the ``"sum"`` over the scenario's 20 frames.

    Examples:
        >>> from drivemetrics.lane.geometry import default_z_samples
        >>> import torch
        >>> from drivemetrics.functional import psld
        >>> z = default_z_samples()
        >>> gt = torch.zeros(2, z.numel())
        >>> psld(gt, gt, speed=20.0)
        tensor(0.)
    """
    dev = psld_deviations(
        preds,
        target,
        speed=speed,
        z_samples=z_samples,
        horizon_frames=horizon_frames,
        x_ref_source=x_ref_source,
        controller=controller,
        initial_steering=initial_steering,
        validate_args=validate_args,
    )
    return _reduce(dev.abs().amax(1) / horizon_frames, reduction)


InputType = Literal["center", "points", "row_scores", "polynomial"]


class PSLDLoss(nn.Module):
    """Differentiable PSLD surrogate for training: gradients flow from lane predictions to the loss.

    The prediction is turned into a lane-center profile (``input_type``), rolled out as in :func:`psld`, and the
    max over steps becomes a log-sum-exp with ``temperature`` (metres; 0 recovers the exact PSLD).

    ``input_type``:

    * ``"center"``: ``preds`` ``(B, M)`` lane-center profile at ``z_samples`` (metres).
    * ``"points"``: ``(B, 2, N, 2)`` ego-left / ego-right lane points in pixels ``(u, v)``; needs
      ``image_from_road`` (homography, may itself require grad).
    * ``"row_scores"``: ``(B, 2, R, W)`` row-wise column logits of the two ego lines at image rows ``rows``
      (``(R,)`` pixels, constructor argument) -> soft-argmax columns -> points.
    * ``"polynomial"``: ``(B, 2, K)`` road-frame polynomial coefficients ``X = sum_k c_k Z^k`` of the two lines.

    ``target`` is always the ground-truth lane-center profile ``(B, M)`` at ``z_samples``.
    ``validate_args=False`` skips the value checks (finite, ``speed > 0``) that synchronise with the device.

    Examples:
        >>> from drivemetrics.lane import PSLDLoss
        >>> from drivemetrics.lane.geometry import default_z_samples
        >>> import torch
        >>> loss_fn = PSLDLoss()
        >>> z = default_z_samples()
        >>> pred = torch.full((2, z.numel()), 0.3, requires_grad=True)
        >>> loss = loss_fn(pred, torch.zeros(2, z.numel()), speed=torch.tensor([20.0, 25.0]))
        >>> loss.backward()
    """

    def __init__(
        self,
        input_type: InputType = "center",
        z_samples: Tensor | None = None,
        horizon_frames: int = 10,
        x_ref_source: XRefSource = "rollout",
        controller: LateralController | None = None,
        temperature: float = 0.02,
        abs_eps: float = 1e-3,
        rows: Tensor | None = None,
        softmax_temperature: float = 1.0,
        lane_width: float = DEFAULT_LANE_WIDTH,
        reduction: PSLDReduction = "mean",
        validate_args: bool = True,
    ) -> None:
        super().__init__()
        self.validate_args = bool(validate_args)
        if input_type not in ("center", "points", "row_scores", "polynomial"):
            raise ValueError(
                f"`input_type` must be 'center', 'points', 'row_scores' or 'polynomial', got {input_type!r}"
            )
        if input_type == "row_scores" and rows is None:
            raise ValueError("`rows` (image rows of the row-wise scores, pixels) is required for 'row_scores'")
        check_horizon(horizon_frames)
        self.input_type = input_type
        self.horizon_frames = int(horizon_frames)
        self.x_ref_source = x_ref_source
        self.controller = LinearMPC() if controller is None else controller
        self.temperature = float(temperature)
        self.abs_eps = float(abs_eps)
        self.softmax_temperature = float(softmax_temperature)
        self.lane_width = float(lane_width)
        self.reduction = reduction
        self.register_buffer("z_samples", default_z_samples() if z_samples is None else z_samples.clone(), False)
        self.register_buffer("rows", None if rows is None else rows.clone(), False)

    def center_profile(self, preds: Tensor, image_from_road: Tensor | None = None) -> Tensor:
        """The lane-center profile ``(B, M)`` of a prediction of this loss's ``input_type``."""
        z = self.z_samples.to(preds.dtype)
        if self.input_type == "center":
            return preds
        if self.input_type == "polynomial":
            return center_from_polynomials(preds, z)
        if image_from_road is None:
            raise ValueError(f"`image_from_road` is required for input_type {self.input_type!r}")
        if self.input_type == "row_scores":
            if preds.ndim != 4 or preds.shape[1] != 2 or preds.shape[2] != self.rows.shape[0]:
                raise ValueError(
                    f"`preds` must have shape B x 2 x {self.rows.shape[0]} x W (row-wise scores), got "
                    f"{tuple(preds.shape)}"
                )
            u = soft_argmax_rows(preds, self.softmax_temperature)
            v = self.rows.to(u).expand_as(u)
            preds = torch.stack([u, v], -1)
        # NaN / negative-u points are absent (no gradient flows to them); see center_from_image_lanes.
        return center_from_image_lanes(preds, image_from_road, z, None, self.lane_width)

    def forward(
        self,
        preds: Tensor,
        target: Tensor,
        *,
        speed: Tensor | float,
        image_from_road: Tensor | None = None,
    ) -> Tensor:
        """The smooth PSLD (metres per step), reduced over frames (``float32`` for half-precision inputs)."""
        preds, target = float32_if_half(preds), float32_if_half(target)
        center = self.center_profile(preds, image_from_road)
        dev = psld_deviations(
            center,
            target,
            speed=speed,
            z_samples=self.z_samples.to(center.dtype),
            horizon_frames=self.horizon_frames,
            x_ref_source=self.x_ref_source,
            controller=self.controller,
            validate_args=self.validate_args,
        )
        smooth = smooth_psld(dev, temperature=self.temperature, abs_eps=self.abs_eps, validate_args=False)
        return _reduce(smooth, self.reduction)


class PSLD(CheckedStateMetric):
    """PSLD accumulated over frames (``torchmetrics``): the mean (default) or the max of the per-frame values.

    States: ``total`` (sum of per-frame PSLD), ``count`` (frames), ``peak`` (largest per-frame value), synced with
    sum / sum / max. ``update(preds, target, speed)`` takes lane-center profiles as :func:`psld`.

    Args:
        aggregate: ``"mean"`` or ``"max"``: what :meth:`compute` returns.
        z_samples, horizon_frames, x_ref_source, controller: as :func:`psld`.
        validate_args: check values in ``update`` (finite, ``speed > 0``); ``False`` skips these host syncs.

    Examples:
        >>> import torch
        >>> from drivemetrics.lane.geometry import default_z_samples
        >>> from drivemetrics.lane import PSLD
        >>> z = default_z_samples()  # (M,) metres ahead
        >>> target = torch.zeros(2, z.numel())  # (B, M) lane centers, metres
        >>> preds = target + 0.5  # detected 0.5 m to the right
        >>> metric = PSLD()
        >>> metric.update(preds, target, speed=20.0)
        >>> metric.compute()  # metres
        tensor(0.0039)
    """

    is_differentiable = True
    higher_is_better = False
    full_state_update = False
    plot_lower_bound = 0.0
    plot_upper_bound = None  # unbounded (metres per step)

    total: Tensor
    count: Tensor
    peak: Tensor

    def __init__(
        self,
        aggregate: Literal["mean", "max"] = "mean",
        z_samples: Tensor | None = None,
        horizon_frames: int = 10,
        x_ref_source: XRefSource = "rollout",
        controller: LateralController | None = None,
        validate_args: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.validate_args = bool(validate_args)
        if aggregate not in ("mean", "max"):
            raise ValueError(f"`aggregate` must be 'mean' or 'max', got {aggregate!r}")
        check_horizon(horizon_frames)
        self.aggregate = aggregate
        self.horizon_frames = int(horizon_frames)
        self.x_ref_source = x_ref_source
        self.controller = LinearMPC() if controller is None else controller
        self.register_buffer("z_samples", None if z_samples is None else z_samples.clone(), persistent=False)
        self.add_state("total", torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("count", torch.tensor(0, dtype=torch.long), dist_reduce_fx="sum")
        self.add_state("peak", torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="max")
        controller_config = (type(self.controller).__name__, sorted(vars(self.controller).items()))
        add_config_state(self, ("PSLD", aggregate, self.horizon_frames, x_ref_source, controller_config))

    def update(self, preds: Tensor, target: Tensor, *, speed: Tensor | float) -> None:
        """Add the frames of a batch of profiles ``(B, M)``."""
        z = None if self.z_samples is None else self.z_samples.to(preds)
        values = psld(
            preds,
            target,
            speed=speed,
            z_samples=z,
            horizon_frames=self.horizon_frames,
            x_ref_source=self.x_ref_source,
            controller=self.controller,
            reduction="none",
            validate_args=self.validate_args,
        )
        self.total = self.total + values.sum().to(self.total.dtype)
        self.count = self.count + values.numel()
        self.peak = torch.maximum(self.peak, values.max().to(self.peak.dtype))

    def compute(self) -> Tensor:
        """Mean (or max) per-frame PSLD, metres per step; NaN before any frame was added (never a perfect 0)."""
        value = self.peak if self.aggregate == "max" else self.total / self.count.clamp_min(1)
        return torch.where(self.count > 0, value, torch.nan).float()

    def plot(self, val: Tensor | list[Tensor] | None = None, ax: Any = None) -> Any:
        """Plot a value (or a sequence of values) of the metric with matplotlib (torchmetrics' ``plot``)."""
        return plot_metric(self, val, ax)
