"""Tests of drivemetrics.lane.psld: exact PSLD, the PSLD metric and the differentiable PSLDLoss."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from drivemetrics.geometry.camera import image_from_road_homography, intrinsic_matrix, road_to_image
from drivemetrics.lane.control import LinearMPC, PurePursuit
from drivemetrics.lane.geometry import default_z_samples
from drivemetrics.lane.psld import PSLD, PSLDLoss, psld, psld_deviations, smooth_psld
from drivemetrics.vehicle import RAV4_2017

Z = default_z_samples(torch.float64)
DT = RAV4_2017.frame_dt


def _scenes(n, seed=0, scale=1.0):
    """Ground-truth centers (gentle curves, start offsets) and perturbed detections, ``(n, M)`` each."""
    gen = torch.Generator().manual_seed(seed)

    def rnd(*shape):
        return torch.randn(*shape, generator=gen, dtype=torch.float64)

    z = Z[None]
    gt = 0.3 * rnd(n, 1) + 0.01 * rnd(n, 1) * z + 1e-4 * rnd(n, 1) * z**2
    noise = scale * (0.3 * rnd(n, 1) + 0.01 * rnd(n, 1) * z + 2e-4 * rnd(n, 1) * z**2)
    speed = 10.0 + 20.0 * torch.rand(n, generator=gen, dtype=torch.float64)
    return gt + noise, gt, speed


def test_perfect_detection_scores_zero(device):
    _, gt, speed = _scenes(5)
    gt, speed = gt.to(device), speed.to(device)
    assert torch.equal(psld(gt, gt, speed=speed, reduction="none"), torch.zeros(5, dtype=torch.float64, device=device))


def test_one_step_hand_computed():
    """Tp = 1, pure pursuit, straight road: one exact arc of the bicycle, computed by hand."""
    c, v = 0.5, 20.0
    pred = torch.full((1, Z.numel()), c, dtype=torch.float64)
    gt = torch.zeros_like(pred)
    value = psld(pred, gt, speed=v, horizon_frames=1, controller=PurePursuit())
    lookahead, L = max(6.0, v * 1.0), RAV4_2017.wheelbase
    rho = math.atan(2 * L * c / (c**2 + lookahead**2))
    theta = v / L * math.sin(rho) * DT
    lateral = v * math.cos(rho) * DT * (1 - math.cos(theta)) / theta
    assert float(value) == pytest.approx(lateral, rel=1e-9)


def _numpy_psld(pred, gt, speed, tp, lookahead_time=1.0, min_lookahead=6.0, dt_fine=1e-4):
    """Independent PSLD with pure pursuit: numpy, one frame at a time, fine explicit integration."""
    L, ratio = RAV4_2017.wheelbase, RAV4_2017.steer_ratio
    z = Z.numpy()
    lookahead = max(min_lookahead, speed * lookahead_time)

    def command(profile, x, zp, h):
        c, s = math.cos(h), math.sin(h)
        xv, zv = c * (profile - x) - s * (z - zp), s * (profile - x) + c * (z - zp)
        i = np.searchsorted(zv, lookahead)
        x_t = xv[i - 1] + (lookahead - zv[i - 1]) * (xv[i] - xv[i - 1]) / (zv[i] - zv[i - 1])
        return math.atan(2 * L * x_t / (x_t**2 + lookahead**2)) * ratio

    def rollout(first):
        x = zp = h = 0.0
        xs = []
        for t in range(tp):
            rho = command(first if t == 0 else gt, x, zp, h) / ratio
            for _ in range(round(DT / dt_fine)):
                x += speed * math.cos(rho) * math.sin(h) * dt_fine
                zp += speed * math.cos(rho) * math.cos(h) * dt_fine
                h += speed * math.sin(rho) / L * dt_fine
            xs.append(x)
        return np.array(xs)

    return np.abs(rollout(pred) - rollout(gt)).max() / tp


def test_matches_independent_numpy_rollout():
    pred, gt, speed = _scenes(3, seed=3)
    ours = psld(pred, gt, speed=speed, horizon_frames=4, controller=PurePursuit(), reduction="none")
    for b in range(3):
        ref = _numpy_psld(pred[b].numpy(), gt[b].numpy(), float(speed[b]), 4)
        assert float(ours[b]) == pytest.approx(ref, rel=2e-3)


def test_reference_modes_and_scaling():
    offset = torch.full((1, Z.numel()), 0.5, dtype=torch.float64)  # vehicle starts 0.5 m right of the center
    assert float(psld(offset, offset, speed=20.0)) == 0.0
    center = psld(offset, offset, speed=20.0, x_ref_source="center", horizon_frames=1)
    assert float(center) == pytest.approx(0.5, abs=0.02)  # still ~0.5 m off after 1/20 s
    pred, gt, speed = _scenes(4, seed=5)
    dev = psld_deviations(pred, gt, speed=speed, horizon_frames=10)
    for tp in (1, 5, 10):
        expected = dev[:, :tp].abs().amax(1) / tp
        assert torch.allclose(psld(pred, gt, speed=speed, horizon_frames=tp, reduction="none"), expected)
    # mirror symmetry: a detection error to the left or to the right of a straight road costs the same
    straight = torch.zeros(1, Z.numel(), dtype=torch.float64)
    err = 0.3 + 0.01 * Z[None]
    assert torch.allclose(psld(straight + err, straight, speed=20.0), psld(straight - err, straight, speed=20.0))


def test_reductions():
    pred, gt, speed = _scenes(6, seed=2)
    per_frame = psld(pred, gt, speed=speed, reduction="none")
    assert per_frame.shape == (6,)
    assert torch.allclose(psld(pred, gt, speed=speed), per_frame.mean())
    assert torch.allclose(psld(pred, gt, speed=speed, reduction="sum"), per_frame.sum())


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"horizon_frames": 0}, "horizon_frames"),
        ({"speed": 0.0}, "speed"),
        ({"x_ref_source": "road"}, "x_ref_source"),
        ({"reduction": "max"}, "reduction"),
    ],
)
def test_bad_arguments(kwargs, match):
    pred, gt, speed = _scenes(2)
    args = {"speed": speed, **kwargs}
    with pytest.raises(ValueError, match=match):
        psld(pred, gt, **args)


def test_bad_profiles():
    pred, gt, speed = _scenes(2)
    bad = pred.clone()
    bad[0, 3] = float("nan")
    with pytest.raises(ValueError, match="preds"):
        psld(bad, gt, speed=speed)
    with pytest.raises(ValueError, match="same shape"):
        psld(pred[:, :50], gt, speed=speed)
    with pytest.raises(ValueError, match="z_samples"):
        psld(pred, gt, speed=speed, z_samples=Z[:50])
    with pytest.raises(ValueError, match="B x M"):
        psld(pred[0], gt[0], speed=20.0)


def test_metric_accumulates_mean_and_max(device):
    pred, gt, speed = _scenes(8, seed=4)
    pred, gt, speed = pred.to(device), gt.to(device), speed.to(device)
    per_frame = psld(pred, gt, speed=speed, reduction="none")
    metric = PSLD().to(device)
    metric.update(pred[:3], gt[:3], speed=speed[:3])
    metric.update(pred[3:], gt[3:], speed=speed[3:])
    assert float(metric.compute()) == pytest.approx(float(per_frame.mean()), rel=1e-6)
    peak = PSLD(aggregate="max").to(device)
    batch_value = peak(pred, gt, speed=speed)
    assert float(batch_value) == pytest.approx(float(per_frame.max()), rel=1e-6)
    assert float(peak.compute()) == pytest.approx(float(per_frame.max()), rel=1e-6)
    metric.reset()
    metric.update(gt, gt, speed=speed)
    assert float(metric.compute()) == 0.0
    with pytest.raises(ValueError, match="aggregate"):
        PSLD(aggregate="median")


def test_smooth_max_recovers_exact():
    pred, gt, speed = _scenes(5, seed=6)
    dev = psld_deviations(pred, gt, speed=speed)
    exact = dev.abs().amax(1) / 10
    assert torch.equal(smooth_psld(dev, temperature=0.0, abs_eps=0.0), exact)
    approx = smooth_psld(dev, temperature=1e-4, abs_eps=1e-6)
    assert torch.allclose(approx, exact, atol=1e-4 * math.log(10) / 10 + 1e-6)
    loss = PSLDLoss(temperature=0.0, abs_eps=0.0, reduction="none")
    assert torch.allclose(loss(pred, gt, speed=speed), psld(pred, gt, speed=speed, reduction="none"))


def test_surrogate_correlates_with_exact():
    pred, gt, speed = _scenes(200, seed=7)
    exact = psld(pred, gt, speed=speed, reduction="none")
    surrogate = PSLDLoss(reduction="none")(pred, gt, speed=speed)
    r = np.corrcoef(exact.numpy(), surrogate.detach().numpy())[0, 1]
    assert r >= 0.95


def test_gradient_descent_lowers_exact_psld():
    pred, gt, speed = _scenes(16, seed=8, scale=2.0)
    before = psld(pred, gt, speed=speed)
    param = pred.clone().requires_grad_()
    loss_fn = PSLDLoss()
    opt = torch.optim.Adam([param], lr=0.05)
    for _ in range(30):
        opt.zero_grad()
        loss_fn(param, gt, speed=speed).backward()
        opt.step()
    after = psld(param.detach(), gt, speed=speed)
    assert float(after) < 0.5 * float(before)


Z_SMALL = torch.arange(0.0, 101.0, 10.0, dtype=torch.float64)


def test_gradcheck_center_profile():
    pred, gt, speed = _scenes(2, seed=9)
    idx = (Z_SMALL).long()
    pred, gt = pred[:, idx].clone().requires_grad_(), gt[:, idx]
    loss = PSLDLoss(z_samples=Z_SMALL, horizon_frames=3, reduction="none")
    assert torch.autograd.gradcheck(lambda p: loss(p, gt, speed=speed), (pred,))
    mpc_free = PSLDLoss(z_samples=Z_SMALL, horizon_frames=3, controller=PurePursuit(), reduction="none")
    assert torch.autograd.gradcheck(lambda p: mpc_free(p, gt, speed=speed), (pred,))


def test_gradcheck_image_points_rows_and_polynomials():
    H = image_from_road_homography(intrinsic_matrix(700.0, 700.0, 620.0, 190.0).double(), 1.6, pitch=0.03)
    gt = torch.zeros(1, Z_SMALL.numel(), dtype=torch.float64)
    speed = torch.tensor([20.0], dtype=torch.float64)
    z_img = torch.tensor([8.0, 15.0, 30.0], dtype=torch.float64)
    lines = torch.stack([torch.stack([-1.6 + 0 * z_img, z_img], -1), torch.stack([2.0 + 0 * z_img, z_img], -1)])
    uv = road_to_image(H, lines)[None].detach().requires_grad_()
    points_loss = PSLDLoss("points", z_samples=Z_SMALL, horizon_frames=2)
    H_param = H.clone().requires_grad_()
    assert torch.autograd.gradcheck(lambda p, h: points_loss(p, gt, speed=speed, image_from_road=h), (uv, H_param))
    rows = uv[0, 0, :, 1].detach()
    scores = torch.randn(1, 2, 3, 12, dtype=torch.float64, requires_grad=True)
    # place the 12 score columns around each line's true column: column k -> u = u_line - 6 + k
    shift = torch.eye(3, dtype=torch.float64)
    shift[0, 2] = -6.0 + float(uv[0, 0, 0, 0].detach())
    row_loss = PSLDLoss("row_scores", z_samples=Z_SMALL, horizon_frames=2, rows=rows)
    assert torch.autograd.gradcheck(
        lambda s: row_loss(s, gt, speed=speed, image_from_road=torch.linalg.inv(shift) @ H), (scores,)
    )
    coeffs = torch.tensor([[[-1.7, 0.01, 1e-4], [1.9, 0.01, 1e-4]]], dtype=torch.float64, requires_grad=True)
    poly_loss = PSLDLoss("polynomial", z_samples=Z_SMALL, horizon_frames=2)
    assert torch.autograd.gradcheck(lambda c: poly_loss(c, gt, speed=speed), (coeffs,))


def test_loss_arguments():
    with pytest.raises(ValueError, match="input_type"):
        PSLDLoss("mask")
    with pytest.raises(ValueError, match="rows"):
        PSLDLoss("row_scores")
    with pytest.raises(ValueError, match="image_from_road"):
        PSLDLoss("points")(torch.zeros(1, 2, 3, 2), torch.zeros(1, Z.numel()), speed=20.0)


def test_default_controller_is_mpc():
    pred, gt, speed = _scenes(2, seed=10)
    assert torch.equal(psld(pred, gt, speed=speed), psld(pred, gt, speed=speed, controller=LinearMPC()))


def test_metric_merge_state_uses_sum_and_max():
    pred, gt, speed = _scenes(6, seed=11)
    per_frame = psld(pred, gt, speed=speed, reduction="none")
    a, b = PSLD(), PSLD(aggregate="max")
    a.update(pred[:2], gt[:2], speed=speed[:2])
    other = PSLD()
    other.update(pred[2:], gt[2:], speed=speed[2:])
    a.merge_state(other)
    assert float(a.compute()) == pytest.approx(float(per_frame.mean()), rel=1e-6)
    b.update(pred[:2], gt[:2], speed=speed[:2])
    other_max = PSLD(aggregate="max")
    other_max.update(pred[2:], gt[2:], speed=speed[2:])
    b.merge_state(other_max)
    assert float(b.compute()) == pytest.approx(float(per_frame.max()), rel=1e-6)


def test_loss_on_points_with_absent_points():
    H = image_from_road_homography(intrinsic_matrix(700.0, 700.0, 620.0, 190.0).double(), 1.6, pitch=0.03)
    z_img = torch.tensor([8.0, 15.0, 30.0, 45.0], dtype=torch.float64)
    lines = torch.stack([torch.stack([-1.5 + 0 * z_img, z_img], -1), torch.stack([2.1 + 0 * z_img, z_img], -1)])
    uv = road_to_image(H, lines)[None].clone()
    uv[0, 0, 3] = float("nan")  # an absent point
    uv.requires_grad_()
    loss = PSLDLoss("points")(uv, torch.zeros(1, Z.numel(), dtype=torch.float64), speed=20.0, image_from_road=H)
    loss.backward()
    assert bool(torch.isfinite(loss))
    assert bool(torch.isfinite(uv.grad).all())
    assert float(uv.grad[0, 0, 3].abs().sum()) == 0.0
    assert float(uv.grad[0, 1].abs().sum()) > 0.0


def _ddp_worker(rank, world):
    pred, gt, speed = _scenes(6, seed=12)
    part = slice(0, 2) if rank == 0 else slice(2, 6)  # uneven split across ranks
    mean, peak = PSLD(), PSLD(aggregate="max")
    mean.update(pred[part], gt[part], speed=speed[part])
    peak.update(pred[part], gt[part], speed=speed[part])
    return float(mean.compute()), float(peak.compute())


@pytest.mark.ddp
def test_metric_syncs_over_two_processes():
    from tests.ddp import run_distributed

    results = run_distributed(_ddp_worker)
    pred, gt, speed = _scenes(6, seed=12)
    per_frame = psld(pred, gt, speed=speed, reduction="none")
    for mean, peak in results:
        assert mean == pytest.approx(float(per_frame.mean()), rel=1e-6)
        assert peak == pytest.approx(float(per_frame.max()), rel=1e-6)


def test_initial_steering_and_rate_limit():
    """With a steering-rate limit the start angle matters: starting at the angle that holds the curve beats
    starting straight (the wheel needs time to get there), for the detector and the reference loop alike."""
    params = RAV4_2017.replace(max_steer_rate=math.radians(25.0))
    ctrl = LinearMPC(params)
    radius = 200.0
    gt = (Z**2 / (2 * radius))[None]
    holding = torch.tensor([math.atan(RAV4_2017.wheelbase / radius) * RAV4_2017.steer_ratio], dtype=torch.float64)
    dev_hold = psld_deviations(gt, gt, speed=20.0, controller=ctrl, x_ref_source="center", initial_steering=holding)
    dev_zero = psld_deviations(gt, gt, speed=20.0, controller=ctrl, x_ref_source="center", initial_steering=holding * 0)
    assert float(dev_hold.abs().max()) < 0.5 * float(dev_zero.abs().max())
    # without a rate limit the default snap makes the start angle irrelevant for a perfect detection
    assert float(psld(gt, gt, speed=20.0)) == 0.0


def test_metric_plot():
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    pred, gt, speed = _scenes(3, seed=13)
    metric = PSLD()
    values = [metric(pred, gt, speed=speed) for _ in range(2)]
    fig, ax = metric.plot(values)
    assert ax.get_ylim()[0] <= 0.0
    matplotlib.pyplot.close(fig)
