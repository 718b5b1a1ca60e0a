"""ControlWeightedLoss and control_sensitivity_weights: a CAPO-style, control-weighted point loss."""

from __future__ import annotations

import pytest
import torch
import torch._dynamo

from drivemetrics.functional import control_sensitivity_weights, control_weighted_loss, psld
from drivemetrics.lane import ControlWeightedLoss
from drivemetrics.lane.geometry import center_from_image_lanes
from tests.lane._loss_toys import homography, straight_lanes

Z = torch.arange(0.0, 101.0, dtype=torch.float64)


def _weights(target, **kw):
    center = torch.zeros(target.shape[0], Z.numel(), dtype=torch.float64)
    return control_sensitivity_weights(target, center, speed=20.0, image_from_road=homography(), z_samples=Z, **kw)


def test_weights_measure_the_psld_of_a_one_pixel_shift():
    """Without smoothing or floor, the weight ratio of two points is the ratio of the PSLD of shifting each."""
    target = straight_lanes()
    w = _weights(target, smoothing=0, floor=0.0)
    assert w.shape == (1, 2, 16)
    assert float(w.mean()) == pytest.approx(1.0)
    center = torch.zeros(1, Z.numel(), dtype=torch.float64)

    def psld_of_shift(row: int) -> float:
        shifted = target.clone()
        shifted[0, 0, row, 0] += 0.01  # a small shift of one point (linear regime)
        profile = center_from_image_lanes(shifted, homography(), Z)
        return float(psld(profile, center, speed=20.0, z_samples=Z))

    top = int(w[0, 0].argmax())
    weights = w[0, 0]
    other = int((weights - weights[weights > 0.05 * weights.max()].median()).abs().argmin())  # a median-weight row
    measured = psld_of_shift(top) / psld_of_shift(other)
    assert measured == pytest.approx(float(w[0, 0, top] / w[0, 0, other]), rel=0.05)
    assert float(w[0, 0, top] / w[0, 0, other]) > 2  # the controller does not look at every row alike


def test_floor_smoothing_and_absent_points():
    target = straight_lanes()
    target[0, 1, 10:] = float("nan")
    w = _weights(target, smoothing=2, floor=0.2)
    assert bool((w[0, 1, 10:] == 0).all())
    present = w[w > 0]
    assert float(present.mean()) == pytest.approx(1.0)
    assert float(present.min()) >= 0.2 / (1 + 0.2) - 1e-9  # floored at 0.2 x mean before renormalising
    raw = _weights(straight_lanes(), smoothing=0, floor=0.0)
    smooth = _weights(straight_lanes(), smoothing=3, floor=0.0)
    assert float(smooth[0, 0].diff().abs().max()) < float(raw[0, 0].diff().abs().max())


def test_loss_by_hand_and_opposite_gradients_for_a_wrong_width():
    target = torch.tensor([[[[100.0, 60.0], [90.0, 80.0]], [[150.0, 60.0], [160.0, 80.0]]]], dtype=torch.float64)
    preds = target.clone()
    preds[0, 0, :, 0] -= 3.0  # left line 3 px further left
    preds[0, 1, :, 0] += 3.0  # right line 3 px further right: the lane is too wide
    preds.requires_grad_()
    weights = torch.tensor([[[1.0, 3.0], [1.0, 3.0]]], dtype=torch.float64)
    loss = control_weighted_loss(preds, target, weights=weights, eps=0.0)
    assert float(loss) == pytest.approx(3.0)
    loss.backward()
    assert bool((preds.grad[0, 0, :, 0] < 0).all())  # d loss / d u < 0: the left line is pulled right
    assert bool((preds.grad[0, 1, :, 0] > 0).all())  # the right line is pulled left
    assert float(preds.grad[0, 0, 1, 0] / preds.grad[0, 0, 0, 0]) == pytest.approx(3.0)


def test_gradient_moves_the_lane_towards_the_ground_truth():
    target = straight_lanes()
    weights = _weights(target)
    start = straight_lanes(offset=0.3, width=4.0)
    u = start[..., 0].clone().requires_grad_()
    loss_fn = ControlWeightedLoss()

    def loss(cols):
        return loss_fn(torch.stack([cols, start[..., 1]], -1), target, weights=weights)

    first = float(loss(u).detach())
    opt = torch.optim.Adam([u], lr=0.5)
    for _ in range(100):
        opt.zero_grad()
        loss(u).backward()
        opt.step()
    assert float(loss(u).detach()) < 0.1 * first
    assert float((u.detach() - target[..., 0]).abs().mean()) < 0.1 * float((start - target)[..., 0].abs().mean())


def test_gradcheck_float64():
    target = straight_lanes()
    preds = (target + 0.7 * torch.randn(1, 2, 16, 2, dtype=torch.float64)).requires_grad_()
    weights = torch.rand(1, 2, 16, dtype=torch.float64) + 0.1
    assert torch.autograd.gradcheck(lambda p: control_weighted_loss(p, target, weights=weights), (preds,))


def test_compiles_as_one_graph():
    target = straight_lanes(batch=2).float()
    target[1, 0, 3] = float("nan")
    preds = (target.nan_to_num() + torch.randn(2, 2, 16, 2)).requires_grad_()
    weights = torch.rand(2, 2, 16) + 0.1
    loss = ControlWeightedLoss(validate_args=False)

    def fn(p):
        return loss(p, target, weights=weights)

    eager = fn(preds)
    (eager_grad,) = torch.autograd.grad(eager, preds)
    torch._dynamo.reset()
    value = torch.compile(fn, fullgraph=True, backend="aot_eager")(preds)
    (grad,) = torch.autograd.grad(value, preds)
    torch.testing.assert_close(value, eager)
    torch.testing.assert_close(grad, eager_grad)
    assert float(grad.abs().sum()) > 0


def test_bad_arguments_raise_one_line():
    target = straight_lanes()
    weights = torch.ones(1, 2, 16, dtype=torch.float64)
    cases = [
        ({"weights": -weights}, "`weights`"),
        ({"weights": weights[:, :, :3]}, "`weights`"),
        ({"weights": weights * float("nan")}, "`weights`"),
        ({"weights": weights, "eps": -1.0}, "`eps`"),
    ]
    for kwargs, match in cases:
        with pytest.raises(ValueError, match=match) as info:
            control_weighted_loss(target, target, **kwargs)
        assert "\n" not in str(info.value)
    with pytest.raises(ValueError, match="`floor`"):
        ControlWeightedLoss(floor=2.0)
    with pytest.raises(ValueError, match="`center`"):
        control_sensitivity_weights(target, torch.zeros(3, 101), speed=20.0, image_from_road=homography(), z_samples=Z)
