"""Tests of drivemetrics.vehicle.bicycle: presets, exact motion, rate limit, delay, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from drivemetrics.configs import config_path
from drivemetrics.vehicle import RAV4_2017, KinematicBicycle, VehicleParams

PRESET = config_path("vehicles/rav4_2017.toml")


def test_preset_file_matches_dataclass_defaults():
    assert VehicleParams.from_toml(PRESET) == VehicleParams() == RAV4_2017
    assert RAV4_2017.wheelbase == 2.65
    assert RAV4_2017.steer_ratio == 16.88


def test_preset_unknown_key(tmp_path):
    path = tmp_path / "car.toml"
    path.write_text("wheelbase = 2.7\nsteer_ratoi = 13\n")
    with pytest.raises(KeyError, match="steer_ratoi"):
        VehicleParams.from_toml(path)


@pytest.mark.parametrize(
    ("field", "value"),
    [("wheelbase", 0.0), ("steer_ratio", -1.0), ("substeps", 0), ("actuator_delay", -0.1), ("frame_rate", 0.0)],
)
def test_params_validation(field, value):
    with pytest.raises(ValueError, match=field):
        RAV4_2017.replace(**{field: value})


def _numpy_reference(wheel_angles, speed, params, dt_fine=1e-5):
    """Fine explicit integration of x' = v cos(r) sin(h), z' = v cos(r) cos(h), h' = v sin(r) / L per frame."""
    x = z = h = 0.0
    steps = round(params.frame_dt / dt_fine)
    out = []
    for rho in wheel_angles:
        for _ in range(steps):
            x += speed * math.cos(rho) * math.sin(h) * dt_fine
            z += speed * math.cos(rho) * math.cos(h) * dt_fine
            h += speed * math.sin(rho) / params.wheelbase * dt_fine
        out.append((x, z, h))
    return np.array(out)


def test_motion_matches_fine_integration(device):
    model = KinematicBicycle(RAV4_2017)
    wheel_angles = [0.02, 0.02, -0.01, 0.0]
    state = model.initial_state(1, dtype=torch.float64, device=device)
    poses = []
    for rho in wheel_angles:
        command = torch.tensor([rho * RAV4_2017.steer_ratio], dtype=torch.float64, device=device)
        state = model.step(state, command, 20.0)
        poses.append([float(state.x), float(state.z), float(state.heading)])
    expected = _numpy_reference(wheel_angles, 20.0, RAV4_2017)
    np.testing.assert_allclose(np.array(poses), expected, atol=2e-4)


def test_straight_and_batched():
    model = KinematicBicycle()
    state = model.initial_state(3, dtype=torch.float64)
    speed = torch.tensor([10.0, 20.0, 30.0], dtype=torch.float64)
    for _ in range(20):
        state = model.step(state, torch.zeros(3, dtype=torch.float64), speed)
    assert torch.allclose(state.z, speed * 1.0)
    assert torch.equal(state.x, torch.zeros(3, dtype=torch.float64))


def test_steering_rate_limit():
    rate = math.radians(25.0)  # ld-metric's 0.25 deg per 10 ms tick
    model = KinematicBicycle(RAV4_2017.replace(max_steer_rate=rate))
    state = model.initial_state(1, dtype=torch.float64)
    state = model.step(state, torch.tensor([1.0], dtype=torch.float64), 15.0)
    assert float(state.steering_wheel) == pytest.approx(rate * RAV4_2017.frame_dt)
    for _ in range(100):
        state = model.step(state, torch.tensor([1.0], dtype=torch.float64), 15.0)
    assert float(state.steering_wheel) == pytest.approx(1.0)


def test_actuator_delay():
    params = RAV4_2017.replace(actuator_delay=0.12)
    assert params.delay_substeps == 12
    model = KinematicBicycle(params)
    state = model.initial_state(1, dtype=torch.float64)
    cmd = torch.tensor([2.0], dtype=torch.float64)
    state = model.step(state, cmd, 20.0)
    state = model.step(state, cmd, 20.0)
    assert float(state.heading) == 0.0  # 10 sub-steps < 12 sub-steps of delay
    state = model.step(state, cmd, 20.0)
    assert float(state.heading) > 0.0


def test_wheel_angle_clamp_and_bad_speed():
    model = KinematicBicycle()
    state = model.initial_state(1, dtype=torch.float64)
    big = model.step(state, torch.tensor([100.0], dtype=torch.float64), 10.0)
    limit = model.step(
        state, torch.tensor([RAV4_2017.max_wheel_angle * RAV4_2017.steer_ratio], dtype=torch.float64), 10.0
    )
    assert float(big.heading) == pytest.approx(float(limit.heading))
    with pytest.raises(ValueError, match="speed"):
        model.step(state, torch.zeros(1, dtype=torch.float64), 0.0)


def test_gradcheck_step():
    model = KinematicBicycle()

    def fn(cmd, speed):
        state = model.initial_state(2, dtype=torch.float64)
        for _ in range(2):
            state = model.step(state, cmd, speed)
        return torch.stack([state.x, state.z, state.heading])

    cmd = torch.tensor([0.3, -0.5], dtype=torch.float64, requires_grad=True)
    speed = torch.tensor([12.0, 25.0], dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(fn, (cmd, speed))
