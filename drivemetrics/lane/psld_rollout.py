"""The PSLD rollout (:func:`psld_deviations`) and its smooth maximum (:func:`smooth_psld`): the kernels that
:mod:`drivemetrics.lane.psld` and the driving-oriented losses share (defines no Metric; see
:mod:`~drivemetrics.lane.psld`
for the definition of PSLD).
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import Tensor

from drivemetrics._internal.precision import float32_if_half
from drivemetrics._internal.validation import check_finite, check_tensor
from drivemetrics.lane.control import LateralController, LinearMPC, PosedPath, VehiclePath, sample_profile
from drivemetrics.lane.geometry import default_z_samples
from drivemetrics.vehicle.bicycle import KinematicBicycle

__all__ = ["MAX_SPEED", "XRefSource", "psld_deviations", "smooth_psld"]

XRefSource = Literal["rollout", "center"]


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


def check_horizon(horizon_frames: int) -> None:
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
    check_horizon(horizon_frames)
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
