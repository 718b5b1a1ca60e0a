"""Batched kinematic bicycle with steering-wheel actuation, frame-rate stepping and vehicle presets.

Frame: X lateral (right), Z forward, metres; heading in radians from +Z towards +X (the KITTI road frame). A frame
(default 20 Hz) is integrated in ``substeps`` exact constant-steering arcs (:func:`single_track_step`); before each
sub-step the steering wheel moves towards the (possibly delayed) command, limited by ``max_steer_rate``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from pathlib import Path
from typing import NamedTuple

import torch
from torch import Tensor

from drivemetrics.vehicle.single_track import single_track_step

__all__ = ["OPENPILOT_MOCK_V066", "RAV4_2017", "BicycleState", "KinematicBicycle", "VehicleParams"]


@dataclass(frozen=True)
class VehicleParams:
    """Vehicle and simulation constants (SI units). Defaults: Toyota RAV4 2017 (shipped preset
    ``vehicles/rav4_2017.toml``).

    Attributes:
        name: preset name.
        wheelbase: metres.
        steer_ratio: steering-wheel angle / road-wheel angle.
        max_wheel_angle: road-wheel angle limit, radians.
        max_steer_rate: steering-wheel rate limit, rad/s (``inf``: unlimited).
        actuator_delay: pure delay between a steering command and its effect, seconds (rounded to sub-steps).
        frame_rate: camera frames per second; one controller decision per frame.
        substeps: integration sub-steps per frame.
    """

    name: str = "toyota_rav4_2017"
    wheelbase: float = 2.65
    steer_ratio: float = 16.88
    max_wheel_angle: float = 0.872665
    max_steer_rate: float = math.inf
    actuator_delay: float = 0.0
    frame_rate: float = 20.0
    substeps: int = 5

    def __post_init__(self) -> None:
        for key in ("wheelbase", "steer_ratio", "max_wheel_angle", "max_steer_rate", "frame_rate"):
            if not getattr(self, key) > 0:
                raise ValueError(f"`{key}` must be > 0, got {getattr(self, key)}")
        if not self.actuator_delay >= 0:
            raise ValueError(f"`actuator_delay` must be >= 0 seconds, got {self.actuator_delay}")
        if int(self.substeps) != self.substeps or self.substeps < 1:
            raise ValueError(f"`substeps` must be a positive integer, got {self.substeps}")

    @property
    def frame_dt(self) -> float:
        """Seconds per frame."""
        return 1.0 / self.frame_rate

    @property
    def substep_dt(self) -> float:
        """Seconds per integration sub-step."""
        return 1.0 / (self.frame_rate * self.substeps)

    @property
    def delay_substeps(self) -> int:
        """Actuator delay in whole sub-steps."""
        return round(self.actuator_delay / self.substep_dt)

    @classmethod
    def from_toml(cls, path: str | Path) -> VehicleParams:
        """Read a preset file whose keys are this class's fields (unknown keys are an error)."""
        try:
            import tomllib
        except ModuleNotFoundError:  # Python 3.10
            import tomli as tomllib  # type: ignore[no-redef]
        with open(path, "rb") as handle:
            data = tomllib.load(handle)
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise KeyError(f"unknown vehicle keys {unknown} in {path}; expected a subset of {sorted(known)}")
        return cls(**data)

    def replace(self, **changes: object) -> VehicleParams:
        """A copy with some fields changed."""
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values.update(changes)
        return VehicleParams(**values)  # type: ignore[arg-type]


RAV4_2017 = VehicleParams()
"""Toyota RAV4 2017, the vehicle of the E2E-LD / PSLD papers (and of DRP-attack's openpilot mock car)."""

OPENPILOT_MOCK_V066 = VehicleParams(name="openpilot_mock_v0.6.6", wheelbase=2.70, steer_ratio=13.0)
"""The vanilla openpilot v0.6.6 ``mock`` car that the released ld-metric code would load (see the README)."""


class BicycleState(NamedTuple):
    """Vehicle state, each ``(B,)``: position ``x``, ``z`` (metres), ``heading`` (rad), ``steering_wheel`` (rad).

    ``pending`` (``(B, D)``) holds the steering-wheel commands still in the actuator-delay line (``D`` = delay in
    sub-steps, 0 without delay), oldest first.
    """

    x: Tensor
    z: Tensor
    heading: Tensor
    steering_wheel: Tensor
    pending: Tensor


class KinematicBicycle:
    """Batched kinematic bicycle stepped one camera frame at a time (differentiable except at the limits).

    Examples:
        >>> from drivemetrics.vehicle import KinematicBicycle
        >>> from drivemetrics.vehicle import RAV4_2017
        >>> import torch
        >>> model = KinematicBicycle(RAV4_2017)
        >>> state = model.initial_state(4)
        >>> state = model.step(state, torch.full((4,), 0.1), speed=torch.full((4,), 20.0))
    """

    def __init__(self, params: VehicleParams = RAV4_2017) -> None:
        self.params = params

    def initial_state(
        self,
        batch: int,
        steering_wheel: Tensor | float = 0.0,
        dtype: torch.dtype | None = None,
        device: torch.device | str | None = None,
    ) -> BicycleState:
        """State at the origin, heading 0, the given steering-wheel angle (rad); the delay line holds it too."""
        dtype = dtype or torch.get_default_dtype()
        zeros = torch.zeros(batch, dtype=dtype, device=device)
        wheel = torch.as_tensor(steering_wheel, dtype=dtype, device=device).expand(batch).clone()
        pending = wheel[:, None].expand(batch, self.params.delay_substeps).clone()
        return BicycleState(zeros, zeros.clone(), zeros.clone(), wheel, pending)

    def step(self, state: BicycleState, command: Tensor, speed: Tensor | float, validate: bool = True) -> BicycleState:
        """Advance one frame: ``substeps`` sub-steps of rate-limited, delayed steering and exact arc motion.

        Args:
            state: the current :class:`BicycleState`.
            command: commanded steering-wheel angle, radians, ``(B,)``; held for the whole frame.
            speed: m/s, ``(B,)`` or float (constant over the frame; must be > 0).
            validate: check ``speed`` (a host sync on GPU; callers that checked it already pass False).
        """
        p = self.params
        x, z, heading, wheel, pending = state
        speed_t = torch.as_tensor(speed, dtype=x.dtype, device=x.device)
        if validate and bool((speed_t <= 0).any()):
            raise ValueError("`speed` must be > 0 m/s (the kinematic model has no defined behaviour at rest)")
        max_change = p.max_steer_rate * p.substep_dt
        for _ in range(p.substeps):
            if pending.shape[1]:
                target = pending[:, 0]
                pending = torch.cat([pending[:, 1:], command[:, None]], 1)
            else:
                target = command
            limited = wheel + (target - wheel).clamp(-max_change, max_change)
            wheel = target if math.isinf(max_change) else limited
            road_wheel = (wheel / p.steer_ratio).clamp(-p.max_wheel_angle, p.max_wheel_angle)
            x, z, heading = single_track_step(x, z, heading, speed_t, road_wheel, p.substep_dt, p.wheelbase)
        return BicycleState(x, z, heading, wheel, pending)
