"""LookaheadLaneLoss: center, heading and width on the road over a look-ahead window."""

from __future__ import annotations

import pytest
import torch
import torch._dynamo

from drivemetrics.functional import lookahead_lane_loss
from drivemetrics.lane import LookaheadLaneLoss
from tests.lane._loss_toys import homography, straight_lanes

SPEED = 10.0  # window 5 m to 20 m


def test_zero_at_the_ground_truth_and_the_offset_in_metres():
    target = straight_lanes()
    h = homography()
    assert float(lookahead_lane_loss(target, target, image_from_road=h, speed=SPEED)) == pytest.approx(0.0, abs=1e-9)
    # a lane 0.4 m to the right: center term 0.4 m (smooth |.|), heading and width 0
    shifted = straight_lanes(offset=0.4)
    value = lookahead_lane_loss(shifted, target, image_from_road=h, speed=SPEED, eps=0.0)
    assert float(value) == pytest.approx(0.4, abs=1e-6)
    only_center = lookahead_lane_loss(shifted, target, image_from_road=h, speed=SPEED, eps=0.0, weights=(1, 0, 0))
    assert float(only_center) == pytest.approx(0.4, abs=1e-6)


def test_width_term_gives_the_two_lines_opposite_gradients():
    target = straight_lanes(width=3.6)
    preds = straight_lanes(width=4.2).requires_grad_()  # too wide, center right
    lookahead_lane_loss(preds, target, image_from_road=homography(), speed=SPEED, weights=(0, 0, 1)).backward()
    g = preds.grad[0, :, :, 0]  # (2, N) d loss / d u
    rows = g.abs().sum(0) > 1e-12  # rows in the window
    assert int(rows.sum()) >= 3
    assert bool((g[0, rows] < 0).all())  # left line pushed right
    assert bool((g[1, rows] > 0).all())  # right line pushed left
    # the center term alone would push both lines the same way: here it is 0 (the center is right)
    preds.grad = None
    lookahead_lane_loss(preds, target, image_from_road=homography(), speed=SPEED, weights=(1, 0, 0)).backward()
    assert float(preds.grad.abs().max()) < 1e-9


def test_gradient_moves_the_lane_towards_the_ground_truth():
    target = straight_lanes()
    start = straight_lanes(offset=0.5, width=4.0)
    u = start[..., 0].clone().requires_grad_()  # optimise the columns, rows fixed
    loss_fn = LookaheadLaneLoss()  # 0.5 s to 2 s: 10 m to 40 m at 20 m/s
    h = homography()

    def loss(cols):
        return loss_fn(torch.stack([cols, start[..., 1]], -1), target, image_from_road=h, speed=20.0)

    first = float(loss(u).detach())
    opt = torch.optim.Adam([u], lr=0.3)  # pixels per step
    for _ in range(200):
        opt.zero_grad()
        loss(u).backward()
        opt.step()
    assert float(loss(u).detach()) < 0.3 * first
    from drivemetrics.lane.loss_inputs import road_points

    rows = slice(0, 5)  # inside the window (10 m to 37 m)
    before = road_points(start, h)[0] - road_points(target, h)[0]
    after = road_points(torch.stack([u.detach(), start[..., 1]], -1), h)[0] - road_points(target, h)[0]
    assert float(after[..., rows, 0].abs().max()) < 0.1 * float(before[..., rows, 0].abs().min())


def test_window_follows_the_speed():
    """Rows outside [0.5 s, 2 s] x speed carry (almost) no gradient."""
    target = straight_lanes()
    preds = straight_lanes(offset=0.3).requires_grad_()
    lookahead_lane_loss(preds, target, image_from_road=homography(), speed=4.0, softness=0.5).backward()
    g = preds.grad[0, 0, :, 0].abs()
    from drivemetrics.lane.loss_inputs import road_points

    z = road_points(target, homography())[0][0, 0, :, 1]
    inside, outside = (z > 2.5) & (z < 7.5), (z > 12)
    assert float(g[outside].max()) < 1e-3 * float(g[inside].max())


def test_gradcheck_float64():
    target = straight_lanes()
    preds = straight_lanes(offset=0.2, width=3.9) + 0.3 * torch.randn(1, 2, 16, 2, dtype=torch.float64)
    preds[..., 1] = target[..., 1]
    preds.requires_grad_()
    h = homography()

    def fn(p):
        return lookahead_lane_loss(p, target, image_from_road=h, speed=SPEED)

    assert torch.autograd.gradcheck(fn, (preds,))


def test_compiles_as_one_graph():
    target = straight_lanes(batch=2)
    preds = straight_lanes(offset=0.3, width=3.8, batch=2).float().requires_grad_()
    loss = LookaheadLaneLoss(validate_args=False)
    h = homography().float()
    speed = torch.tensor([10.0, 14.0])

    def fn(p):
        return loss(p, target.float(), image_from_road=h, speed=speed)

    eager = fn(preds)
    (eager_grad,) = torch.autograd.grad(eager, preds)
    torch._dynamo.reset()
    compiled = torch.compile(fn, fullgraph=True, backend="aot_eager")
    value = compiled(preds)
    (grad,) = torch.autograd.grad(value, preds)
    torch.testing.assert_close(value, eager)
    torch.testing.assert_close(grad, eager_grad)
    assert float(grad.abs().sum()) > 0


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"speed": -1.0}, "`speed`"),
        ({"speed": float("nan")}, "`speed`"),
        ({"window": (2.0, 0.5)}, "`window`"),
        ({"weights": (0.0, 0.0, 0.0)}, "`weights`"),
        ({"image_from_road": torch.eye(4)}, "`image_from_road`"),
    ],
)
def test_bad_arguments_raise_one_line(kwargs, match):
    target = straight_lanes()
    args = {"image_from_road": homography(), "speed": SPEED, **kwargs}
    with pytest.raises(ValueError, match=match) as info:
        lookahead_lane_loss(target, target, **args)
    assert "\n" not in str(info.value)


def test_nonfinite_preds_and_bad_shape_raise():
    target = straight_lanes()
    bad = target.clone()
    bad[0, 0, 3, 0] = float("nan")
    with pytest.raises(ValueError, match="`preds`"):
        lookahead_lane_loss(bad, target, image_from_road=homography(), speed=SPEED)
    with pytest.raises(ValueError, match="`preds`"):
        lookahead_lane_loss(target[:, :1], target[:, :1], image_from_road=homography(), speed=SPEED)
    with pytest.raises(ValueError, match="`window`"):
        LookaheadLaneLoss(window=(-1.0, 1.0))
