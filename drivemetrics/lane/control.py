"""Differentiable lateral controllers that follow a lane-centre profile: closed-form linear MPC and pure pursuit.

A controller is called as ``controller(path_z, path_x, speed, steering_wheel) -> command``:

* ``path_z`` ``(M,)`` or ``(B, M)`` increasing longitudinal distances and ``path_x`` ``(B, M)`` lateral positions
  of the path to follow, metres, **in the current vehicle frame** (X right, Z forward, vehicle at the origin);
* ``speed`` ``(B,)`` m/s, ``steering_wheel`` ``(B,)`` the current steering-wheel angle, radians;
* the result is the commanded steering-wheel angle ``(B,)``, radians (road-wheel angle x steer ratio).

Everything is batched (no Python loop over the batch), device-agnostic and differentiable with respect to the path.

How :class:`LinearMPC` differs from openpilot's lateral MPC (v0.6, ACADO): openpilot solves a *nonlinear*
problem (states x, y, psi, delta; control = steering rate; RK4; 20 non-uniform intervals 5 x 0.05 s + 15 x 0.15 s
over 2.5 s; costs on path offset, on soft lane-line barriers ``exp(-(w_L - y))``, heading ``(v + 1)(atan(poly') -
psi)`` and steering rate; box limits |psi| <= 90 deg, |delta| <= 50 deg) with warm-started SQP iterations. Here the
kinematics are linearised around the vehicle's own straight line (small heading, ``psi' = v delta / L``), the
control is the road-wheel angle, piecewise constant on ``steps`` uniform intervals, the costs are quadratic (path
offset, heading from the path slope, steering rate, a tiny angle penalty), there are no lane-line barrier terms and no
box constraints (the vehicle model clamps the wheel angle), so the optimum is one ``steps x steps`` linear solve per
frame: exact, batched and differentiable. The input is one centre path instead of three polynomials.
"""

from __future__ import annotations

from typing import Protocol

import torch
from torch import Tensor

from drivemetrics.lane.geometry import interpolate_profile
from drivemetrics.vehicle.bicycle import RAV4_2017, VehicleParams

__all__ = ["LateralController", "LinearMPC", "PurePursuit"]


class LateralController(Protocol):
    """Anything mapping (path, speed, steering wheel) to a steering-wheel command; see the module docstring."""

    params: VehicleParams

    def __call__(self, path_z: Tensor, path_x: Tensor, speed: Tensor, steering_wheel: Tensor) -> Tensor: ...


def _path_inputs(path_z: Tensor, path_x: Tensor, speed: Tensor | float) -> tuple[Tensor, Tensor]:
    if path_x.ndim != 2:
        raise ValueError(f"`path_x` must have shape B x M, got {tuple(path_x.shape)}")
    if path_x.shape[-1] < 2:
        raise ValueError("`path_x` needs at least 2 samples")
    z = path_z.to(path_x).expand_as(path_x)
    v = torch.as_tensor(speed, dtype=path_x.dtype, device=path_x.device).expand(path_x.shape[0])
    if bool((v <= 0).any()):
        raise ValueError("`speed` must be > 0 m/s")
    return z, v


class LinearMPC:
    """Batched linear MPC over a fixed horizon, solved in closed form (see the module docstring).

    Cost (all terms integrated over the horizon with the interval length ``dt``)::

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
        for name, value in (
            ("path_weight", path_weight),
            ("heading_weight", heading_weight),
            ("rate_weight", rate_weight),
            ("angle_weight", angle_weight),
        ):
            if not value >= 0:
                raise ValueError(f"`{name}` must be >= 0, got {value}")
        self.params = params
        self.horizon = float(horizon)
        self.steps = int(steps)
        self.path_weight = float(path_weight)
        self.heading_weight = float(heading_weight)
        self.rate_weight = float(rate_weight)
        self.angle_weight = float(angle_weight)

    def _matrices(self, dtype: torch.dtype, device: torch.device) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """Unit-speed response matrices ``G_e``, ``G_psi`` (``N x N``), the difference matrix and the times."""
        n, dt = self.steps, self.horizon / self.steps
        t_state = torch.arange(1, n + 1, dtype=dtype, device=device) * dt  # end of interval k
        t_start = torch.arange(n, dtype=dtype, device=device) * dt  # start of control interval j
        tau = (t_state[:, None] - t_start[None, :]).clamp_min(0)
        g_psi = tau.clamp(max=dt)  # psi_k = (v / L) sum_j g_psi[k, j] delta_j
        g_e = torch.where(tau <= dt, tau**2 / 2, dt**2 / 2 + dt * (tau - dt))  # e_k = (v^2 / L) sum_j g_e delta_j
        eye = torch.eye(n, dtype=dtype, device=device)
        diff = eye - torch.diag(torch.ones(n - 1, dtype=dtype, device=device), -1)
        return g_e, g_psi, diff, t_state

    def plan(self, path_z: Tensor, path_x: Tensor, speed: Tensor | float, steering_wheel: Tensor) -> Tensor:
        """The optimal road-wheel angles over the horizon, ``(B, steps)`` radians."""
        z, v = _path_inputs(path_z, path_x, speed)
        p = self.params
        dtype, device = path_x.dtype, path_x.device
        n, dt, L = self.steps, self.horizon / self.steps, p.wheelbase
        g_e, g_psi, diff, t_state = self._matrices(dtype, device)
        delta_now = steering_wheel.to(path_x) / p.steer_ratio
        # State after the actuator delay with the current angle held (small-angle kinematics).
        d = p.delay_substeps * p.substep_dt
        e0 = v**2 * delta_now * d**2 / (2 * L)
        psi0 = v * delta_now * d / L
        z_pred = v[:, None] * (t_state[None, :] + d)  # (B, N)
        e_ref = interpolate_profile(z, path_x, z_pred)
        h = 0.5
        slope = (interpolate_profile(z, path_x, z_pred + h) - interpolate_profile(z, path_x, z_pred - h)) / (2 * h)
        psi_ref = torch.atan(slope)
        # Free response (no new control) of the linear model from (e0, psi0).
        e_free = e0[:, None] + v[:, None] * psi0[:, None] * t_state[None, :]
        psi_free = psi0[:, None].expand_as(e_free)
        a_e = (v**2 / L)[:, None, None] * g_e  # (B, N, N)
        a_psi = (v / L)[:, None, None] * g_psi
        eye = torch.eye(n, dtype=dtype, device=device)
        hess = dt * (
            self.path_weight * a_e.transpose(1, 2) @ a_e
            + self.heading_weight * a_psi.transpose(1, 2) @ a_psi
            + self.angle_weight * eye
        ) + (self.rate_weight / dt) * (diff.T @ diff)
        prev = torch.zeros_like(e_free)
        prev = torch.cat([delta_now[:, None], prev[:, 1:]], 1)  # D delta - prev = rate * dt
        rhs = dt * (
            self.path_weight * (a_e.transpose(1, 2) @ (e_ref - e_free)[..., None])
            + self.heading_weight * (a_psi.transpose(1, 2) @ (psi_ref - psi_free)[..., None])
        ) + (self.rate_weight / dt) * (diff.T @ prev[..., None])
        return torch.linalg.solve(hess, rhs)[..., 0]

    def __call__(self, path_z: Tensor, path_x: Tensor, speed: Tensor | float, steering_wheel: Tensor) -> Tensor:
        """Commanded steering-wheel angle ``(B,)`` radians: the first planned wheel angle x steer ratio."""
        return self.plan(path_z, path_x, speed, steering_wheel)[:, 0] * self.params.steer_ratio


class PurePursuit:
    """Pure pursuit: steer on the arc through the path point one look-ahead distance ahead.

    Look-ahead ``l_d = max(min_lookahead, lookahead_time * v)``; target ``(x_t, z_t) = (X(l_d), l_d)``; road-wheel
    angle ``atan(2 L x_t / (x_t^2 + z_t^2))``. No memory of the current angle (``steering_wheel`` is ignored).
    """

    def __init__(self, params: VehicleParams = RAV4_2017, lookahead_time: float = 1.0, min_lookahead: float = 6.0):
        if not (lookahead_time >= 0 and min_lookahead > 0):
            raise ValueError(
                f"need lookahead_time >= 0 and min_lookahead > 0, got {lookahead_time} and {min_lookahead}"
            )
        self.params = params
        self.lookahead_time = float(lookahead_time)
        self.min_lookahead = float(min_lookahead)

    def __call__(self, path_z: Tensor, path_x: Tensor, speed: Tensor | float, steering_wheel: Tensor) -> Tensor:
        """Commanded steering-wheel angle ``(B,)`` radians."""
        z, v = _path_inputs(path_z, path_x, speed)
        lookahead = (v * self.lookahead_time).clamp_min(self.min_lookahead)
        x_t = interpolate_profile(z, path_x, lookahead[:, None])[:, 0]
        wheel = torch.atan(2 * self.params.wheelbase * x_t / (x_t**2 + lookahead**2))
        return wheel * self.params.steer_ratio
