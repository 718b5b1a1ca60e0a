"""ExpectedPSLDLoss: PSLD averaged over random speeds, controllers and start offsets / yaw."""

from __future__ import annotations

import pytest
import torch
import torch._dynamo

from drivemetrics.functional import expected_psld_loss, psld_deviations, smooth_psld
from drivemetrics.lane import ExpectedPSLDLoss, LinearMPC
from drivemetrics.lane.geometry import default_z_samples
from tests.lane._loss_toys import homography, straight_lanes

Z = default_z_samples(torch.float64)


def test_without_noise_and_one_controller_it_is_the_smooth_psld():
    target = torch.zeros(2, Z.numel(), dtype=torch.float64)
    preds = target + torch.tensor([[0.3], [-0.2]], dtype=torch.float64)
    value = expected_psld_loss(
        preds, target, speed=20.0, noise=torch.zeros(1, 2, 3), samples=1, controllers=[LinearMPC()]
    )
    expected = smooth_psld(psld_deviations(preds, target, speed=20.0)).mean()
    torch.testing.assert_close(value, expected)


def test_the_noise_is_applied():
    """A start offset changes the value; the draws of the speed, the offset and the yaw each enter."""
    target = torch.zeros(1, Z.numel(), dtype=torch.float64)
    preds = target + 0.3 * torch.sin(Z / 10)  # a curved error: the start pose matters
    base = expected_psld_loss(preds, target, speed=20.0, noise=torch.zeros(1, 1, 3), samples=1)
    for k in range(3):
        noise = torch.zeros(1, 1, 3)
        noise[0, 0, k] = 2.0
        moved = expected_psld_loss(preds, target, speed=20.0, noise=noise, samples=1)
        assert abs(float(moved) - float(base)) > 1e-8


def test_gradient_moves_the_lane_towards_the_ground_truth():
    start = straight_lanes(offset=0.5)
    u = start[..., 0].clone().requires_grad_()
    center = torch.zeros(1, Z.numel(), dtype=torch.float64)
    loss_fn = ExpectedPSLDLoss(input_type="points", samples=3)
    noise = torch.randn(3, 1, 3, generator=torch.Generator().manual_seed(0), dtype=torch.float64)

    def loss(cols):
        points = torch.stack([cols, start[..., 1]], -1)
        return loss_fn(points, center, speed=20.0, image_from_road=homography(), noise=noise)

    floor = float(loss(straight_lanes()[..., 0]))  # the smooth PSLD of the ground truth (log-sum-exp offset)
    first = float(loss(u).detach())
    opt = torch.optim.Adam([u], lr=0.5)
    for _ in range(60):
        opt.zero_grad()
        loss(u).backward()
        opt.step()
    assert float(loss(u).detach()) - floor < 0.3 * (first - floor)
    # the lane center moved towards the ground truth (left, smaller u) on the rows the controller reads
    moved = (u.detach() - start[..., 0]).mean(1)  # (1, N) mean column change of the two lines
    assert float(moved.sum()) < 0


def test_width_has_no_gradient_both_lines_move_alike():
    """The controller reads only the lane center: a lane too wide with the right center has (almost) no gradient,
    and an offset one moves both lines of a row the same way (use LookaheadLaneLoss for the width)."""
    center = torch.zeros(1, Z.numel(), dtype=torch.float64)
    noise = torch.zeros(3, 1, 3, dtype=torch.float64)
    loss_fn = ExpectedPSLDLoss(input_type="points", abs_eps=0.0, temperature=0.0)
    wide = straight_lanes(offset=0.2, width=4.4).requires_grad_()
    loss_fn(wide, center, speed=20.0, image_from_road=homography(), noise=noise).backward()
    g = wide.grad[0, :, :, 0]
    nonzero = (g.abs() > 1e-12).all(0)
    assert int(nonzero.sum()) >= 2
    assert bool((torch.sign(g[0, nonzero]) == torch.sign(g[1, nonzero])).all())


def test_gradcheck_float64():
    target = torch.zeros(2, Z.numel(), dtype=torch.float64)
    preds = (0.2 * torch.randn(2, Z.numel(), dtype=torch.float64)).requires_grad_()
    noise = torch.randn(2, 2, 3, dtype=torch.float64)
    assert torch.autograd.gradcheck(
        lambda p: expected_psld_loss(p, target, speed=torch.tensor([18.0, 24.0]), noise=noise, samples=2), (preds,)
    )


@pytest.mark.slow  # traces 3 MPC rollouts of 10 frames
def test_compiles_as_one_graph():
    target = torch.zeros(2, Z.numel())
    preds = (0.3 * torch.randn(2, Z.numel())).requires_grad_()
    noise = torch.randn(3, 2, 3)
    loss = ExpectedPSLDLoss(validate_args=False)
    speed = torch.tensor([20.0, 25.0])

    def fn(p):
        return loss(p, target, speed=speed, noise=noise)

    eager = fn(preds)
    (eager_grad,) = torch.autograd.grad(eager, preds)
    torch._dynamo.reset()
    value = torch.compile(fn, fullgraph=True, backend="aot_eager")(preds)
    (grad,) = torch.autograd.grad(value, preds)
    torch.testing.assert_close(value, eager)
    torch.testing.assert_close(grad, eager_grad)
    assert float(grad.abs().sum()) > 0


def test_bad_arguments_raise_one_line():
    target = torch.zeros(2, Z.numel())
    cases = [
        ({"speed": 0.0}, "`speed`"),
        ({"speed": 20.0, "samples": 0}, "`samples`"),
        ({"speed": 20.0, "offset_std": -1.0}, "`offset_std`"),
        ({"speed": 20.0, "noise": torch.zeros(2, 2, 3)}, "`noise`"),
        ({"speed": 20.0, "controllers": []}, "`controllers`"),
    ]
    for kwargs, match in cases:
        with pytest.raises(ValueError, match=match) as info:
            expected_psld_loss(target, target, **kwargs)
        assert "\n" not in str(info.value)
    with pytest.raises(ValueError, match="`preds`"):
        expected_psld_loss(target * float("nan"), target, speed=20.0)
    with pytest.raises(ValueError, match="`input_type`"):
        ExpectedPSLDLoss(input_type="row_scores")
