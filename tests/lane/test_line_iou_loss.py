"""BEVLineIoULoss: per-line IoU on the road with a distance-growing tolerance."""

from __future__ import annotations

import pytest
import torch
import torch._dynamo

from drivemetrics.functional import bev_line_iou_loss
from drivemetrics.lane import BEVLineIoULoss
from tests.lane._loss_toys import homography, straight_lanes


def test_value_by_hand():
    """A lane shifted 0.1 m, radius 0.2 m, no growth, no near weight: IoU = (0.4 - 0.1) / (0.4 + 0.1) = 0.6."""
    target = straight_lanes()
    preds = straight_lanes(offset=0.1)
    value = bev_line_iou_loss(
        preds, target, image_from_road=homography(), radius=0.2, radius_growth=0.0, near_weight=0.0
    )
    assert float(value) == pytest.approx(0.4, abs=1e-9)
    assert float(bev_line_iou_loss(target, target, image_from_road=homography())) == pytest.approx(0.0, abs=1e-12)


def test_missing_ground_truth_points_and_lines_are_ignored():
    target = straight_lanes(batch=2)
    preds = straight_lanes(offset=0.1, batch=2)
    target[0, :, 8:] = float("nan")  # half the rows absent
    target[1, 1] = float("nan")  # the right line absent
    kw = {"image_from_road": homography(), "radius": 0.2, "radius_growth": 0.0, "near_weight": 0.0}
    values = bev_line_iou_loss(preds, target, reduction="none", **kw)
    torch.testing.assert_close(values, torch.full((2,), 0.4, dtype=torch.float64))


def test_tolerance_grows_with_distance_and_near_rows_weigh_more():
    target = straight_lanes()
    far_off, near_off = target.clone(), target.clone()
    h = homography()
    from drivemetrics.lane.loss_inputs import road_points

    z = road_points(target, h)[0][0, 0, :, 1]
    far, near = z > 12, z < 5
    shift = torch.tensor([6.0, 0.0], dtype=torch.float64)
    far_off[:, :, far] += shift
    near_off[:, :, near] += shift
    growth = {"radius_growth": 0.05, "near_weight": 0.0, "image_from_road": h}
    # a 6-px error far away is metres on the road, near it is centimetres; per row the IoU counts metres but the
    # far tolerance is wider: per metre of error, the far rows cost less than with a fixed radius
    fixed = {"radius_growth": 0.0, "near_weight": 0.0, "image_from_road": h}
    assert float(bev_line_iou_loss(far_off, target, **growth)) < float(bev_line_iou_loss(far_off, target, **fixed))
    weighted = {"radius_growth": 0.0, "near_weight": 5.0, "image_from_road": h}
    assert float(bev_line_iou_loss(near_off, target, **weighted)) > float(bev_line_iou_loss(near_off, target, **fixed))


def test_gradient_moves_the_lane_towards_the_ground_truth_and_fixes_the_width():
    target = straight_lanes()
    start = straight_lanes(offset=0.3, width=4.2)  # shifted and too wide
    u = start[..., 0].clone().requires_grad_()
    h = homography()
    loss_fn = BEVLineIoULoss()

    def loss(cols):
        return loss_fn(torch.stack([cols, start[..., 1]], -1), target, image_from_road=h)

    # too wide: the two lines of a row get opposite gradients
    wide = straight_lanes(width=4.2)[..., 0].requires_grad_()
    (g,) = torch.autograd.grad(loss_fn(torch.stack([wide, start[..., 1]], -1), target, image_from_road=h), wide)
    assert bool((g[0, 0] < 0).all())  # left line pushed right
    assert bool((g[0, 1] > 0).all())  # right line pushed left
    first = float(loss(u).detach())
    opt = torch.optim.Adam([u], lr=0.3)
    for _ in range(150):
        opt.zero_grad()
        loss(u).backward()
        opt.step()
    assert float(loss(u).detach()) < 0.2 * first


def test_gradcheck_float64():
    target = straight_lanes()
    preds = straight_lanes(offset=0.2, width=3.9)
    preds[..., 0] += 0.5 * torch.randn(1, 2, 16, dtype=torch.float64)
    preds.requires_grad_()
    h = homography()
    assert torch.autograd.gradcheck(lambda p: bev_line_iou_loss(p, target, image_from_road=h), (preds,))


def test_compiles_as_one_graph():
    target = straight_lanes(batch=2).float()
    preds = straight_lanes(offset=0.3, width=3.8, batch=2).float().requires_grad_()
    loss = BEVLineIoULoss(validate_args=False)
    h = homography().float()

    def fn(p):
        return loss(p, target, image_from_road=h)

    eager = fn(preds)
    (eager_grad,) = torch.autograd.grad(eager, preds)
    torch._dynamo.reset()
    value = torch.compile(fn, fullgraph=True, backend="aot_eager")(preds)
    (grad,) = torch.autograd.grad(value, preds)
    torch.testing.assert_close(value, eager)
    torch.testing.assert_close(grad, eager_grad)
    assert float(grad.abs().sum()) > 0


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"radius": 0.0}, "`radius`"),
        ({"radius_growth": -0.1}, "`radius_growth`"),
        ({"near_distance": 0.0}, "`near_distance`"),
        ({"reduction": "max"}, "`reduction`"),
        ({"image_from_road": torch.eye(2)}, "`image_from_road`"),
    ],
)
def test_bad_arguments_raise_one_line(kwargs, match):
    target = straight_lanes()
    args = {"image_from_road": homography(), **kwargs}
    with pytest.raises(ValueError, match=match) as info:
        bev_line_iou_loss(target, target, **args)
    assert "\n" not in str(info.value)
    bad = target.clone()
    bad[0, 0, 0, 0] = float("inf")
    with pytest.raises(ValueError, match="`preds`"):
        bev_line_iou_loss(bad, target, image_from_road=homography())
