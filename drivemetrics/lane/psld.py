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
from drivemetrics._internal.validation import check_finite, check_tensor
from drivemetrics.lane.control import LateralController, LinearMPC, PosedPath, VehiclePath, sample_profile
from drivemetrics.lane.geometry import (
    DEFAULT_LANE_WIDTH,
    center_from_image_lanes,
    center_from_polynomials,
    default_z_samples,
    soft_argmax_rows,
)
from drivemetrics.vehicle.bicycle import KinematicBicycle

__all__ = [
    "PSLD",
    "PSLDLoss",
    "psld",
    "psld_deviations",
    "smooth_psld",
]

XRefSource = Literal["rollout", "center"]
#: How PSLD reduces the per-profile values: their mean, their sum, or none (one value per profile).
PSLDReduction = Literal["mean", "sum", "none"]


def _check_profiles(preds: Tensor, target: Tensor, z_samples: Tensor, values: bool = True) -> None:
    """Shapes and dtypes always; with ``values`` also finiteness and increasing ``z_samples`` (host syncs)."""
    for name, value in (("preds", preds), ("target", target)):
        check_tensor(value, name)
        if value.ndim != 2:
            raise ValueError(f"`{name}` must be a lane-center profile of shape B x M, got {tuple(value.shape)}")
        if not value.is_floating_point():
            raise ValueError(f"`{name}` must be a floating tensor, got {value.dtype}")
        if values:
            check_finite(value, name)
    if preds.shape != target.shape:
        raise ValueError(
            f"`preds` and `target` must have the same shape, got {tuple(preds.shape)}, {tuple(target.shape)}"
        )
    if preds.shape[0] == 0:
        raise ValueError("`preds` is empty (no frames)")
    check_tensor(z_samples, "z_samples")
    if z_samples.ndim != 1 or z_samples.shape[0] != preds.shape[1]:
        raise ValueError(f"`z_samples` must have shape ({preds.shape[1]},), got {tuple(z_samples.shape)}")
    if z_samples.shape[0] < 2 or (values and not bool((z_samples[1:] > z_samples[:-1]).all())):
        raise ValueError("`z_samples` must hold at least 2 strictly increasing distances")


#: Largest speed accepted, m/s (above the land speed record, 341 m/s): a larger one is a unit error.
MAX_SPEED = 350.0


def _check_speed(speed: Tensor | float, like: Tensor, values: bool = True) -> Tensor:
    v = torch.as_tensor(speed, dtype=like.dtype, device=like.device)
    if v.ndim > 1 or (v.ndim == 1 and v.shape[0] not in (1, like.shape[0])):
        raise ValueError(f"`speed` must be a float or have shape ({like.shape[0]},), got {tuple(v.shape)}")
    if values:
        check_finite(v, "speed")
    if values and bool((v <= 0).any()):
        raise ValueError("`speed` must be > 0 m/s for every frame (PSLD is undefined for a vehicle at rest)")
    if values and bool((v > MAX_SPEED).any()):
        raise ValueError(f"`speed` must be at most {MAX_SPEED:g} m/s (faster than any road vehicle), got {v.max():.4g}")
    return v.expand(like.shape[0])


def _check_horizon(horizon_frames: int) -> None:
    if int(horizon_frames) != horizon_frames or horizon_frames < 1:
        raise ValueError(f"`horizon_frames` (Tp) must be an integer >= 1, got {horizon_frames}")


def psld_deviations(
    preds: Tensor,
    target: Tensor,
    *,
    speed: Tensor | float,
    z_samples: Tensor | None = None,
    horizon_frames: int = 10,
    x_ref_source: XRefSource = "rollout",
    controller: LateralController | None = None,
    initial_steering: Tensor | None = None,
    validate_args: bool = True,
) -> Tensor:
    """Signed lateral deviations ``x(t) - x_ref(t)`` of the PSLD rollouts, ``(B, Tp)`` metres, t = 1..Tp.

    Args:
        preds: detected lane-center profiles ``(B, M)`` (metres) at ``z_samples``.
        target: ground-truth lane-center profiles ``(B, M)``.
        speed: ``(B,)`` or float, m/s (> 0).
        z_samples: ``(M,)`` metres, increasing; default :func:`default_z_samples`.
        horizon_frames: ``Tp`` (frames; default 10 = 0.5 s at 20 Hz; the paper's best for attacks is 5).
        x_ref_source: ``"rollout"`` or ``"center"`` (module docstring).
        controller: a lateral controller (default ``LinearMPC()`` with the RAV4 2017 vehicle); its ``params``
            define the vehicle.
        initial_steering: ``(B,)`` steering-wheel angle at the start, radians; default: the first command
            (ld-metric's snap), so the start angle never limits the first step.
        validate_args: check values (finite, ``speed > 0``, increasing ``z_samples``); these checks synchronise
            with the device, ``False`` skips them (shapes are always checked).

    Examples:
        >>> import torch
        >>> from drivemetrics.lane.geometry import default_z_samples
        >>> from drivemetrics.functional import psld_deviations
        >>> z = default_z_samples()  # (M,) metres ahead
        >>> target = torch.zeros(2, z.numel())  # (B, M) lane centers, metres
        >>> preds = target + 0.5  # detected 0.5 m to the right
        >>> deviations = psld_deviations(preds, target, speed=20.0)  # (B, Tp) metres
        >>> deviations.shape, deviations.abs().amax(1)
        (torch.Size([2, 10]), tensor([0.0386, 0.0386]))
    """
    preds, target = float32_if_half(preds), float32_if_half(target)  # 8 mantissa bits lose the rollout's centimetres
    z_samples = default_z_samples(preds.dtype, preds.device) if z_samples is None else z_samples.to(preds)
    _check_profiles(preds, target, z_samples, validate_args)
    _check_horizon(horizon_frames)
    if x_ref_source not in ("rollout", "center"):
        raise ValueError(f"`x_ref_source` must be 'rollout' or 'center', got {x_ref_source!r}")
    controller = LinearMPC() if controller is None else controller
    v = _check_speed(speed, preds, validate_args)
    batch = preds.shape[0]
    with_ref = x_ref_source == "rollout"
    first_path = torch.cat([preds, target]) if with_ref else preds
    road = torch.cat([target, target]) if with_ref else target
    speeds = torch.cat([v, v]) if with_ref else v
    n = first_path.shape[0]
    model = KinematicBicycle(controller.params)
    state = model.initial_state(n, dtype=preds.dtype, device=preds.device)
    control = controller.bind(speeds)
    if initial_steering is None:
        command = control(VehiclePath(z_samples, first_path), state.steering_wheel)
        wheel0 = command
    else:
        wheel0 = torch.as_tensor(initial_steering, dtype=preds.dtype, device=preds.device).expand(batch)
        wheel0 = torch.cat([wheel0, wheel0]) if with_ref else wheel0
        command = control(VehiclePath(z_samples, first_path), wheel0)
    state = state._replace(steering_wheel=wheel0, pending=wheel0[:, None].expand_as(state.pending).clone())
    xs = []
    for step in range(horizon_frames):
        if step > 0:
            # The ground-truth center seen from the current pose (the road is fixed in the frame's road frame).
            command = control(PosedPath(z_samples, road, state.x, state.z, state.heading), state.steering_wheel)
        state = model.step(state, command, speeds, validate=False)
        if with_ref:
            xs.append(state.x[:batch] - state.x[batch:])
        else:
            center, _ = sample_profile(z_samples, target, state.z[:, None])
            xs.append(state.x - center[:, 0])
    return torch.stack(xs, 1)


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


def smooth_psld(
    deviations: Tensor, *, temperature: float = 0.02, abs_eps: float = 1e-3, validate_args: bool = True
) -> Tensor:
    """Smooth PSLD per frame from signed deviations ``(B, Tp)``: smooth |.| then a log-sum-exp maximum.

    ``|d| ~ sqrt(d^2 + eps^2) - eps`` and ``max_t a_t ~ T log sum_t exp(a_t / T)``; the result lies within
    ``temperature * log(Tp) + abs_eps`` metres of the exact ``max_t |d_t|`` before the ``1 / Tp`` scale, and
    ``temperature = abs_eps = 0`` gives the exact PSLD. ``validate_args`` refuses NaN or infinite deviations (a
    read-back).

    Examples:
        >>> import torch
        >>> from drivemetrics.lane.geometry import default_z_samples
        >>> from drivemetrics.functional import psld_deviations
        >>> from drivemetrics.functional import smooth_psld
        >>> z = default_z_samples()  # (M,) metres ahead
        >>> target = torch.zeros(2, z.numel())  # (B, M) lane centers, metres
        >>> preds = target + 0.5  # detected 0.5 m to the right
        >>> deviations = psld_deviations(preds, target, speed=20.0)
        >>> smooth_psld(deviations, temperature=0.0, abs_eps=0.0)  # the exact PSLD per frame
        tensor([0.0039, 0.0039])
    """
    if temperature < 0 or abs_eps < 0:
        raise ValueError(f"`temperature` and `abs_eps` must be >= 0, got {temperature} and {abs_eps}")
    check_tensor(deviations, "deviations")
    if deviations.ndim != 2:
        raise ValueError(f"`deviations` must be (B, Tp), got {tuple(deviations.shape)}")
    if validate_args:
        check_finite(deviations, "deviations")
    tp = deviations.shape[1]
    mag = (deviations**2 + abs_eps**2).sqrt() - abs_eps if abs_eps > 0 else deviations.abs()
    peak = temperature * torch.logsumexp(mag / temperature, dim=1) if temperature > 0 else mag.amax(1)
    return peak / tp


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
        _check_horizon(horizon_frames)
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
        _check_horizon(horizon_frames)
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
