"""Differentiable lateral controllers that follow a lane-center path: closed-form linear MPC and pure pursuit.

A controller is called as ``controller(path, speed, steering_wheel) -> command``:

* ``path`` describes the center line to follow *as seen from the vehicle* (X right, Z forward, vehicle at the
  origin): a :class:`VehiclePath` (a profile already in the vehicle frame) or a :class:`PosedPath` (a profile in
  a road frame plus the vehicle pose in that frame); both sample lateral position and slope at longitudinal
  distances;
* ``speed`` ``(B,)`` m/s, ``steering_wheel`` ``(B,)`` the current steering-wheel angle, radians;
* the result is the commanded steering-wheel angle ``(B,)``, radians (road-wheel angle x steer ratio).

``controller.bind(speed)`` returns the same function with the speed-dependent work done once (for rollouts at a
constant speed). Everything is batched (no Python loop over the batch), device-agnostic and differentiable with
respect to the path.

How :class:`LinearMPC` differs from openpilot's lateral MPC (v0.6, ACADO): openpilot solves a *nonlinear*
problem (states x, y, psi, delta; control = steering rate; RK4; 20 non-uniform intervals 5 x 0.05 s + 15 x 0.15 s
over 2.5 s; costs on path offset, on soft lane-line barriers ``exp(-(w_L - y))``, heading ``(v + 1)(atan(poly') -
psi)`` and steering rate; box limits |psi| <= 90 deg, |delta| <= 50 deg) with warm-started SQP iterations, and it
follows three cubic polynomials (path, left and right lines with probabilities). Here the kinematics are linearised
around the vehicle's own straight line (small heading, ``psi' = v delta / L``), the control is the road-wheel
angle, piecewise constant on ``steps`` uniform intervals, the costs are quadratic (path offset, heading against the
path slope, steering rate, a tiny angle penalty), there are no lane-line barriers and no box constraints (the
vehicle model clamps the wheel angle), and the input is one center path. The optimum is then one ``(steps, steps)``
linear solve per speed, so a step is a few dot products: exact, batched and differentiable.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import torch
from torch import Tensor

from drivemetrics.vehicle.bicycle import RAV4_2017, VehicleParams

__all__ = ["LateralController", "LinearMPC", "PosedPath", "PurePursuit", "VehiclePath", "sample_profile"]


def sample_profile(knots_z: Tensor, knots_x: Tensor, z_query: Tensor) -> tuple[Tensor, Tensor]:
    """Piecewise-linear profile value and slope at ``z_query``, continued linearly beyond the ends.

    Args:
        knots_z: ``(M,)`` shared or ``(B, M)`` per-row increasing distances, metres.
        knots_x: ``(B, M)`` lateral positions, metres.
        z_query: ``(B, Q)`` metres.

    Returns:
        ``(x, slope)``, each ``(B, Q)``; ``slope = dX / dZ`` of the segment used.
    """
    m = knots_x.shape[-1]
    if knots_z.ndim == 1:
        hi = torch.bucketize(z_query.detach(), knots_z.detach()).clamp(1, m - 1)
        z_lo, z_hi = knots_z[hi - 1], knots_z[hi]
    else:
        hi = torch.searchsorted(knots_z.detach().contiguous(), z_query.detach().contiguous()).clamp(1, m - 1)
        z_lo, z_hi = knots_z.gather(-1, hi - 1), knots_z.gather(-1, hi)
    x_lo, x_hi = knots_x.gather(-1, hi - 1), knots_x.gather(-1, hi)
    dz = z_hi - z_lo
    dz = torch.where(dz.abs() > 1e-9, dz, torch.full_like(dz, 1e-9))
    slope = (x_hi - x_lo) / dz
    return x_lo + (z_query - z_lo) * slope, slope


class VehiclePath:
    """A lane-center profile in the vehicle frame: ``x`` ``(B, M)`` at increasing ``z`` (``(M,)`` or ``(B, M)``)."""

    def __init__(self, z: Tensor, x: Tensor) -> None:
        if x.ndim != 2 or x.shape[-1] < 2:
            raise ValueError(f"path `x` must have shape B x M with M >= 2, got {tuple(x.shape)}")
        if z.shape not in (x.shape[-1:], x.shape):
            raise ValueError(f"path `z` must have shape ({x.shape[-1]},) or {tuple(x.shape)}, got {tuple(z.shape)}")
        self.z, self.x = z.to(x), x

    def sample(self, z_query: Tensor) -> tuple[Tensor, Tensor]:
        """Lateral position and slope ``(B, Q)`` at vehicle-frame distances ``z_query`` ``(B, Q)``."""
        return sample_profile(self.z, self.x, z_query)


class PosedPath:
    """A profile ``x`` ``(B, M)`` at ``z`` ``(M,)`` in a road frame, seen from a vehicle at ``(px, pz, heading)``.

    Sampling at vehicle-frame distance ``q`` solves ``Z'(z) = q`` for the road-frame distance ``z`` by fixed-point
    iteration (``iterations``, contraction factor ``|tan(heading) dX/dz|``, so 3 iterations reach ~1e-6 of a metre
    for realistic headings) and rotates value and slope into the vehicle frame. Needs ``|heading|`` well below 90 deg.
    """

    def __init__(
        self, z: Tensor, x: Tensor, px: Tensor, pz: Tensor, heading: Tensor, iterations: int = 3
    ) -> None:  # fmt: skip
        self.z, self.x = z.to(x), x
        self.px, self.pz = px[:, None], pz[:, None]
        self.cos, self.sin = torch.cos(heading)[:, None], torch.sin(heading)[:, None]
        self.iterations = iterations

    def sample(self, z_query: Tensor) -> tuple[Tensor, Tensor]:
        """Lateral position and slope ``(B, Q)`` in the vehicle frame at vehicle-frame distances ``(B, Q)``."""
        c, s = self.cos, self.sin
        z_road = self.pz + z_query / c
        for _ in range(self.iterations):
            x_road, _ = sample_profile(self.z, self.x, z_road)
            z_road = self.pz + (z_query - s * (x_road - self.px)) / c
        x_road, slope = sample_profile(self.z, self.x, z_road)
        x_vehicle = c * (x_road - self.px) - s * (z_road - self.pz)
        slope_vehicle = (c * slope - s) / (s * slope + c)
        return x_vehicle, slope_vehicle


Path = VehiclePath | PosedPath


class LateralController(Protocol):
    """Anything mapping (path, speed, steering wheel) to a steering-wheel command; see the module docstring."""

    params: VehicleParams

    def __call__(self, path: Path, speed: Tensor | float, steering_wheel: Tensor) -> Tensor: ...

    def bind(self, speed: Tensor) -> Callable[[Path, Tensor], Tensor]: ...


def _speed(speed: Tensor | float, like: Tensor) -> Tensor:
    v = torch.as_tensor(speed, dtype=like.dtype, device=like.device).expand(like.shape[0])
    if bool((v <= 0).any()):
        raise ValueError("`speed` must be > 0 m/s")
    return v


class LinearMPC:
    """Batched linear MPC over a fixed horizon, solved in closed form (see the module docstring).

    Cost (running terms weighted by the interval length ``dt``)::

        J = sum_k dt [w_path (e_k - e_ref,k)^2 + w_heading (psi_k - psi_ref,k)^2 + w_angle delta_k^2]
            + sum_k dt w_rate ((delta_k - delta_{k-1}) / dt)^2

    where ``e_k``, ``psi_k`` are the predicted lateral offset and heading at the end of interval ``k`` (exact for
    the linearised model with piecewise-constant wheel angle ``delta_k``), ``e_ref,k`` / ``psi_ref,k`` the path's
    offset and slope angle at the predicted distance ``v t_k``, and ``delta_{-1}`` the current wheel angle. With an
    actuator delay the prediction starts from the state after the delay (current angle held), like openpilot.

    Args:
        params: vehicle (wheelbase, steer ratio, delay).
        horizon: seconds (default 2.5, as openpilot).
        steps: control intervals over the horizon.
        path_weight, heading_weight, rate_weight, angle_weight: cost weights (m^-2, rad^-2, s^2 rad^-2, rad^-2).
    """

    def __init__(
        self,
        params: VehicleParams = RAV4_2017,
        horizon: float = 2.5,
        steps: int = 10,
        path_weight: float = 1.0,
        heading_weight: float = 10.0,
        rate_weight: float = 0.5,
        angle_weight: float = 1e-3,
    ) -> None:
        if not horizon > 0:
            raise ValueError(f"`horizon` must be > 0 seconds, got {horizon}")
        if int(steps) != steps or steps < 1:
            raise ValueError(f"`steps` must be a positive integer, got {steps}")
        weights = {
            "path_weight": path_weight,
            "heading_weight": heading_weight,
            "rate_weight": rate_weight,
            "angle_weight": angle_weight,
        }
        for name, value in weights.items():
            if not value >= 0:
                raise ValueError(f"`{name}` must be >= 0, got {value}")
        self.params = params
        self.horizon = float(horizon)
        self.steps = int(steps)
        self.path_weight = float(path_weight)
        self.heading_weight = float(heading_weight)
        self.rate_weight = float(rate_weight)
        self.angle_weight = float(angle_weight)

    @property
    def dt(self) -> float:
        """Seconds per control interval."""
        return self.horizon / self.steps

    def _matrices(self, dtype: torch.dtype, device: torch.device) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """Unit-speed response matrices ``G_e``, ``G_psi`` (``(N, N)``), the difference matrix and state times."""
        n, dt = self.steps, self.dt
        t_state = torch.arange(1, n + 1, dtype=dtype, device=device) * dt  # end of interval k
        t_start = torch.arange(n, dtype=dtype, device=device) * dt  # start of control interval j
        tau = (t_state[:, None] - t_start[None, :]).clamp_min(0)
        g_psi = tau.clamp(max=dt)  # psi_k = (v / L) sum_j g_psi[k, j] delta_j
        g_e = torch.where(tau <= dt, tau**2 / 2, dt**2 / 2 + dt * (tau - dt))  # e_k = (v^2 / L) sum_j g_e delta_j
        eye = torch.eye(n, dtype=dtype, device=device)
        diff = eye - torch.diag(torch.ones(n - 1, dtype=dtype, device=device), -1)
        return g_e, g_psi, diff, t_state

    def _hessian(self, v: Tensor) -> Tensor:
        g_e, g_psi, diff, _ = self._matrices(v.dtype, v.device)
        L, dt, n = self.params.wheelbase, self.dt, self.steps
        alpha = (dt * self.path_weight * (v**2 / L) ** 2)[:, None, None]
        beta = (dt * self.heading_weight * (v / L) ** 2)[:, None, None]
        eye = torch.eye(n, dtype=v.dtype, device=v.device)
        const = dt * self.angle_weight * eye + (self.rate_weight / dt) * (diff.T @ diff)
        return alpha * (g_e.T @ g_e) + beta * (g_psi.T @ g_psi) + const

    def _references(self, path: Path, v: Tensor, delta_now: Tensor) -> tuple[Tensor, Tensor]:
        """Residual targets ``e_ref - e_free`` and ``psi_ref - psi_free``, each ``(B, N)``."""
        p, L = self.params, self.params.wheelbase
        _, _, _, t_state = self._matrices(v.dtype, v.device)
        d = p.delay_substeps * p.substep_dt
        e0 = v**2 * delta_now * d**2 / (2 * L)
        psi0 = v * delta_now * d / L
        e_ref, slope = path.sample(v[:, None] * (t_state[None, :] + d))
        e_free = e0[:, None] + (v * psi0)[:, None] * t_state[None, :]
        return e_ref - e_free, torch.atan(slope) - psi0[:, None]

    def plan(self, path: Path, speed: Tensor | float, steering_wheel: Tensor) -> Tensor:
        """The optimal road-wheel angles over the horizon, ``(B, steps)`` radians (full solve)."""
        v = _speed(speed, steering_wheel)
        g_e, g_psi, diff, _ = self._matrices(v.dtype, v.device)
        L, dt = self.params.wheelbase, self.dt
        delta_now = steering_wheel / self.params.steer_ratio
        r_e, r_psi = self._references(path, v, delta_now)
        rhs = (
            (dt * self.path_weight * v**2 / L)[:, None] * (r_e @ g_e)
            + (dt * self.heading_weight * v / L)[:, None] * (r_psi @ g_psi)
            + (self.rate_weight / dt) * delta_now[:, None] * diff[0]
        )
        return _solve(self._hessian(v), rhs[..., None])[..., 0]

    def bind(self, speed: Tensor) -> Callable[[Path, Tensor], Tensor]:
        """The controller at fixed speeds ``(B,)``: gains precomputed, each call is a few dot products."""
        v = speed
        g_e, g_psi, _, _ = self._matrices(v.dtype, v.device)
        L, dt, ratio = self.params.wheelbase, self.dt, self.params.steer_ratio
        first = torch.zeros(v.shape[0], self.steps, 1, dtype=v.dtype, device=v.device)
        first[:, 0] = 1
        row = _solve(self._hessian(v), first)[..., 0]  # first row of the (symmetric) inverse
        gain_e = (dt * self.path_weight * v**2 / L)[:, None] * (row @ g_e.T)
        gain_psi = (dt * self.heading_weight * v / L)[:, None] * (row @ g_psi.T)
        gain_now = (self.rate_weight / dt) * row[:, 0]

        def command(path: Path, steering_wheel: Tensor) -> Tensor:
            delta_now = steering_wheel / ratio
            r_e, r_psi = self._references(path, v, delta_now)
            delta = (gain_e * r_e).sum(-1) + (gain_psi * r_psi).sum(-1) + gain_now * delta_now
            return delta * ratio

        return command

    def __call__(self, path: Path, speed: Tensor | float, steering_wheel: Tensor) -> Tensor:
        """Commanded steering-wheel angle ``(B,)`` radians: the first planned wheel angle x steer ratio."""
        return self.bind(_speed(speed, steering_wheel))(path, steering_wheel)


def _solve(a: Tensor, b: Tensor) -> Tensor:
    """``torch.linalg.solve`` in at least float32: CPU has no 16-bit LU, and 16 bits are too few for it anyway."""
    if a.dtype in (torch.float16, torch.bfloat16):
        return torch.linalg.solve(a.float(), b.float()).to(a.dtype)
    return torch.linalg.solve(a, b)


class PurePursuit:
    """Pure pursuit: steer on the arc through the path point one look-ahead distance ahead.

    Look-ahead ``l_d = max(min_lookahead, lookahead_time * v)``; target ``(x_t, z_t) = (X(l_d), l_d)``; road-wheel
    angle ``atan(2 L x_t / (x_t^2 + z_t^2))``. No memory of the current angle (``steering_wheel`` is ignored).
    """

    def __init__(
        self, params: VehicleParams = RAV4_2017, lookahead_time: float = 1.0, min_lookahead: float = 6.0
    ) -> None:
        if not (lookahead_time >= 0 and min_lookahead > 0):
            raise ValueError(
                f"need lookahead_time >= 0 and min_lookahead > 0, got {lookahead_time} and {min_lookahead}"
            )
        self.params = params
        self.lookahead_time = float(lookahead_time)
        self.min_lookahead = float(min_lookahead)

    def bind(self, speed: Tensor) -> Callable[[Path, Tensor], Tensor]:
        """The controller at fixed speeds ``(B,)``."""
        lookahead = (speed * self.lookahead_time).clamp_min(self.min_lookahead)
        L, ratio = self.params.wheelbase, self.params.steer_ratio

        def command(path: Path, steering_wheel: Tensor) -> Tensor:
            x_t = path.sample(lookahead[:, None])[0][:, 0]
            return torch.atan(2 * L * x_t / (x_t**2 + lookahead**2)) * ratio

        return command

    def __call__(self, path: Path, speed: Tensor | float, steering_wheel: Tensor) -> Tensor:
        """Commanded steering-wheel angle ``(B,)`` radians."""
        return self.bind(_speed(speed, steering_wheel))(path, steering_wheel)
