import math

import torch

from drivemetrics.vehicle import single_track_step


def test_straight_limit_drives_along_heading():
    x, z, h = torch.zeros(2), torch.zeros(2), torch.tensor([0.0, math.pi / 2])
    nx, nz, nh = single_track_step(x, z, h, speed=10.0, wheel_angle=0.0, dt=0.05, wheelbase=2.7)
    torch.testing.assert_close(nx, torch.tensor([0.0, 0.5]), atol=1e-6, rtol=0)
    torch.testing.assert_close(nz, torch.tensor([0.5, 0.0]), atol=1e-6, rtol=0)
    torch.testing.assert_close(nh, h)


def test_constant_steering_stays_on_circle_of_radius_l_over_tan_rho():
    L, rho, v, dt = 2.7, 0.1, 10.0, 0.05
    R = L / math.tan(rho)
    x = z = h = torch.zeros((), dtype=torch.float64)
    for _ in range(40):
        x, z, h = single_track_step(x, z, h, v, rho, dt, L)
    # positive rho turns right: circle center at (+R, 0)
    assert abs(math.hypot(x.item() - R, z.item()) - R) < 1e-9
    assert x.item() > 0
    assert abs(h.item() - 40 * v / L * math.sin(rho) * dt) < 1e-12


def test_gradients_finite_at_zero_steering():
    rho = torch.zeros(3, dtype=torch.float64, requires_grad=True)
    x = z = h = torch.zeros(3, dtype=torch.float64)
    assert torch.autograd.gradcheck(lambda r: torch.stack(single_track_step(x, z, h, 10.0, r, 0.05, 2.7)), (rho,))
    nx, _, _ = single_track_step(x, z, h, 10.0, rho, 0.05, 2.7)
    nx.sum().backward()
    assert torch.isfinite(rho.grad).all()
    assert (rho.grad > 0).all()  # steering right moves right
