"""Tests of drivemetrics.lane.control: MPC optimality, closed-loop tracking, posed paths, gradients."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from drivemetrics.lane.control import LinearMPC, PosedPath, PurePursuit, VehiclePath, sample_profile
from drivemetrics.vehicle import RAV4_2017, KinematicBicycle

Z = torch.arange(0.0, 151.0, 1.0, dtype=torch.float64)


def _numpy_cost(delta, ctrl, v, e_ref_fn, slope_fn, delta_now):
    """The documented MPC cost, by explicit simulation of the linearised model (independent of the matrices)."""
    L, dt = ctrl.params.wheelbase, ctrl.dt
    e = psi = 0.0
    cost, prev = 0.0, delta_now
    for k, d in enumerate(delta):
        e += v * psi * dt + v**2 * d * dt**2 / (2 * L)
        psi += v * d * dt / L
        z = v * (k + 1) * dt
        cost += dt * (
            ctrl.path_weight * (e - e_ref_fn(z)) ** 2 + ctrl.heading_weight * (psi - math.atan(slope_fn(z))) ** 2
        )
        cost += dt * ctrl.angle_weight * d**2 + ctrl.rate_weight / dt * (d - prev) ** 2
        prev = d
    return cost


@pytest.mark.parametrize("v", [8.0, 27.0])
def test_mpc_plan_is_the_optimum_of_its_cost(v):
    ctrl = LinearMPC(steps=8)
    path_x = (0.4 + 0.01 * Z + 2e-4 * Z**2)[None]
    wheel_now = torch.tensor([0.05], dtype=torch.float64)
    plan = ctrl.plan(VehiclePath(Z, path_x), torch.tensor([v], dtype=torch.float64), wheel_now)[0].numpy()

    def curve(z):
        return 0.4 + 0.01 * z + 2e-4 * z**2

    def e_ref(z):  # the controller follows the 1 m piecewise-linear profile of the curve
        return float(np.interp(z, Z.numpy(), curve(Z.numpy())))

    def slope(z):  # of the 1 m piecewise-linear profile's segment (lo, hi] holding z, as sampled by the controller
        hi = max(math.ceil(z), 1)
        return curve(hi) - curve(hi - 1)

    delta_now = 0.05 / RAV4_2017.steer_ratio

    def cost(d):
        return _numpy_cost(d, ctrl, v, e_ref, slope, delta_now)

    # The cost is quadratic: central differences give its gradient and Hessian exactly (up to rounding).
    n, h = 8, 1e-2
    eye = np.eye(n) * h
    grad = np.array([(cost(eye[i]) - cost(-eye[i])) / (2 * h) for i in range(n)])

    def second(i, j):
        return cost(eye[i] + eye[j]) - cost(eye[i] - eye[j]) - cost(-eye[i] + eye[j]) + cost(-eye[i] - eye[j])

    hess = np.array([[second(i, j) / (4 * h * h) for j in range(n)] for i in range(n)])
    optimum = np.linalg.solve(hess, -grad)
    np.testing.assert_allclose(plan, optimum, atol=1e-7)
    assert cost(plan) <= cost(plan + 1e-3 * np.random.default_rng(0).standard_normal(n))
    # bind() / __call__ give the first planned angle (x steer ratio)
    cmd = ctrl(VehiclePath(Z, path_x), v, wheel_now)
    assert float(cmd) == pytest.approx(plan[0] * RAV4_2017.steer_ratio, rel=1e-9)


def _closed_loop(ctrl, speed, world_x_fn, seconds=4.0):
    model = KinematicBicycle(ctrl.params)
    state = model.initial_state(1, dtype=torch.float64)
    v = torch.tensor([speed], dtype=torch.float64)
    errors = []
    for _ in range(round(seconds * ctrl.params.frame_rate)):
        path = PosedPath(Z, world_x_fn(Z)[None], state.x, state.z, state.heading)
        state = model.step(state, ctrl(path, v, state.steering_wheel), v)
        errors.append(float(state.x - world_x_fn(state.z)))
    return np.array(errors)


@pytest.mark.parametrize("ctrl", [LinearMPC(), PurePursuit()], ids=["mpc", "pure_pursuit"])
def test_closed_loop_converges_to_offset_and_tracks_curve(ctrl):
    offset = _closed_loop(ctrl, 20.0, lambda z: torch.full_like(z, 1.0), seconds=5.0)
    assert abs(offset[0]) > 0.9  # starts 1 m off
    assert abs(offset[-1]) < 0.06
    radius = 250.0
    curve = _closed_loop(ctrl, 20.0, lambda z: radius - torch.sqrt((radius**2 - z**2).clamp_min(0)), seconds=2.0)
    assert np.abs(curve).max() < 0.05


def test_posed_path_matches_explicit_transform():
    gen = torch.Generator().manual_seed(1)
    road_x = (0.3 * torch.sin(Z / 20) + 0.01 * Z)[None].repeat(3, 1)
    px = torch.tensor([0.2, -0.5, 0.0], dtype=torch.float64)
    pz = torch.tensor([3.0, 10.0, 0.0], dtype=torch.float64)
    heading = torch.tensor([0.02, -0.05, 0.08], dtype=torch.float64)
    q = torch.rand(3, 5, generator=gen, dtype=torch.float64) * 60 + 1
    x_v, slope_v = PosedPath(Z, road_x, px, pz, heading).sample(q)
    for b in range(3):
        # dense explicit rigid transform of the road profile into the vehicle frame, then np.interp
        c, s = math.cos(heading[b]), math.sin(heading[b])
        dx, dz = road_x[b].numpy() - float(px[b]), Z.numpy() - float(pz[b])
        xv, zv = c * dx - s * dz, s * dx + c * dz
        np.testing.assert_allclose(x_v[b].numpy(), np.interp(q[b].numpy(), zv, xv), atol=1e-6)
        seg_slope = np.diff(xv) / np.diff(zv)
        idx = np.searchsorted(zv, q[b].numpy()) - 1
        np.testing.assert_allclose(slope_v[b].numpy(), seg_slope[idx], atol=1e-6)


def test_sample_profile_extrapolates_linearly():
    x, slope = sample_profile(
        Z[:3], torch.tensor([[0.0, 1.0, 3.0]], dtype=torch.float64), torch.tensor([[-1.0, 4.0]], dtype=torch.float64)
    )
    assert x.tolist() == [[-1.0, 7.0]]
    assert slope.tolist() == [[1.0, 2.0]]


def test_bad_arguments():
    with pytest.raises(ValueError, match="horizon"):
        LinearMPC(horizon=0.0)
    with pytest.raises(ValueError, match="steps"):
        LinearMPC(steps=0)
    with pytest.raises(ValueError, match="rate_weight"):
        LinearMPC(rate_weight=-1.0)
    with pytest.raises(ValueError, match="speed"):
        LinearMPC()(VehiclePath(Z, torch.zeros(1, Z.numel())), 0.0, torch.zeros(1))
    with pytest.raises(ValueError, match="path `x`"):
        VehiclePath(Z, torch.zeros(Z.numel()))


@pytest.mark.parametrize("ctrl", [LinearMPC(steps=5), PurePursuit()], ids=["mpc", "pure_pursuit"])
def test_gradcheck_controller(ctrl):
    z = torch.arange(0.0, 80.0, 4.0, dtype=torch.float64)
    path = (0.2 + 0.01 * z)[None].repeat(2, 1).requires_grad_()
    wheel = torch.tensor([0.1, -0.2], dtype=torch.float64, requires_grad=True)
    speed = torch.tensor([15.0, 25.0], dtype=torch.float64)
    assert torch.autograd.gradcheck(lambda p, w: ctrl(VehiclePath(z, p), speed, w), (path, wheel))
