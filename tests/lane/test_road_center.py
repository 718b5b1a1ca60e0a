from __future__ import annotations

import math

import pytest
import torch

from drivemetrics.lane.road_center import (
    expected_center_from_anchors,
    expected_center_from_maps,
    expected_center_from_polynomials,
    road_center_attack_loss,
)


def test_maps_hand_values(device):
    uniform = torch.zeros(1, 1, 3, 4, device=device)
    assert float(expected_center_from_maps(uniform)) == pytest.approx(0.5)
    # two columns with probabilities 1/4, 3/4 at centers 0.25, 0.75
    logits = torch.tensor([[[[0.0, math.log(3.0)]]]], device=device)
    assert float(expected_center_from_maps(logits)) == pytest.approx(0.25 * 0.25 + 0.75 * 0.75)
    # probabilities: lane 0 in column 0 (0.125) and column 1 (0.375) on two rows; lane 1 in column 3 (0.875)
    probs = torch.zeros(1, 2, 2, 4, device=device)
    probs[0, 0, 0, 0] = probs[0, 0, 1, 1] = 1.0
    probs[0, 1, :, 3] = 2.0
    center = expected_center_from_maps(probs, from_logits=False)
    assert float(center) == pytest.approx((0.125 + 0.375 + 0.875 + 0.875) / 4)
    assert float(expected_center_from_maps(probs, lanes=[1], from_logits=False)) == pytest.approx(0.875)


def test_maps_no_lane_cell_excluded():
    logits = torch.tensor([[[[0.0, 0.0, 50.0]]]])
    assert float(expected_center_from_maps(logits, no_lane_cell=True)) == pytest.approx(0.5)
    assert float(expected_center_from_maps(logits)) > 0.8


def test_maps_batched_independent():
    a = torch.randn(1, 2, 5, 7, dtype=torch.float64)
    b = torch.randn(1, 2, 5, 7, dtype=torch.float64)
    both = expected_center_from_maps(torch.cat([a, b]))
    torch.testing.assert_close(both, torch.cat([expected_center_from_maps(a), expected_center_from_maps(b)]))
    # mirroring the columns mirrors the center about 0.5
    torch.testing.assert_close(expected_center_from_maps(a.flip(-1)), 1 - expected_center_from_maps(a))


def test_polynomial_hand_values(device):
    coeffs = torch.tensor([[[1.0, 0.0, 0.0]]], device=device)  # x = y^2
    y = torch.tensor([0.5, 1.0], device=device)
    assert float(expected_center_from_polynomials(coeffs, y=y)) == pytest.approx((0.25 + 1.0) / 2)
    # default rows 0.40 .. 0.99: mean of x = y is 0.695
    line = torch.tensor([[[1.0, 0.0]]], device=device)
    assert float(expected_center_from_polynomials(line)) == pytest.approx(0.695)
    two = torch.tensor([[[0.0, 0.3], [0.0, 0.7]]], device=device)
    assert float(expected_center_from_polynomials(two, torch.tensor([[0.9, 0.2]], device=device))) == pytest.approx(0.3)
    # no confident lane: all lanes are used
    assert float(expected_center_from_polynomials(two, torch.tensor([[0.1, 0.2]], device=device))) == pytest.approx(0.5)


def test_anchor_hand_values(device):
    xs = torch.tensor([[[0.2, 0.4], [0.6, 0.8]]], device=device)
    conf = torch.tensor([[1.0, 3.0]], device=device)
    # rows: (0.2 + 3 * 0.6) / 4 = 0.5 and (0.4 + 3 * 0.8) / 4 = 0.7
    assert float(expected_center_from_anchors(xs, conf)) == pytest.approx(0.6)
    assert float(expected_center_from_anchors(xs * 640, conf, image_width=640)) == pytest.approx(0.6)
    anchors = torch.full_like(xs, 0.5)
    assert float(expected_center_from_anchors(anchors, conf, offsets=xs - 0.5)) == pytest.approx(0.6)


def test_attack_loss_direction():
    center = torch.tensor([0.25, 0.75])
    assert float(road_center_attack_loss(center, "right")) == pytest.approx(0.5)
    assert float(road_center_attack_loss(torch.tensor([0.2]), "left")) == pytest.approx(0.2)
    with pytest.raises(ValueError, match="direction"):
        road_center_attack_loss(center, "up")


def test_gradcheck_all_families():
    torch.manual_seed(0)
    maps = torch.randn(2, 2, 3, 5, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda m: expected_center_from_maps(m, no_lane_cell=True), (maps,))
    probs = torch.rand(2, 2, 3, 5, dtype=torch.float64).add(0.1).requires_grad_()
    assert torch.autograd.gradcheck(lambda m: expected_center_from_maps(m, from_logits=False), (probs,))
    coeffs = torch.randn(2, 3, 4, dtype=torch.float64, requires_grad=True)
    conf = torch.tensor([[0.9, 0.1, 0.6], [0.2, 0.3, 0.1]], dtype=torch.float64)
    assert torch.autograd.gradcheck(lambda c: expected_center_from_polynomials(c, conf), (coeffs,))
    xs = torch.rand(2, 6, 4, dtype=torch.float64, requires_grad=True)
    c = torch.rand(2, 6, dtype=torch.float64).add(0.05).requires_grad_()
    assert torch.autograd.gradcheck(expected_center_from_anchors, (xs, c))
    off = torch.randn(2, 6, 4, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(
        lambda o: expected_center_from_anchors(xs.detach(), c.detach(), image_width=640.0, offsets=o), (off,)
    )


def test_gradient_direction_pushes_right():
    logits = torch.zeros(1, 1, 1, 4, requires_grad=True)
    road_center_attack_loss(expected_center_from_maps(logits), "right").backward()
    # lowering the loss means raising the right-most column's score
    assert logits.grad[0, 0, 0, -1] < 0 < logits.grad[0, 0, 0, 0]


def test_bad_inputs():
    with pytest.raises(ValueError, match="maps"):
        expected_center_from_maps(torch.zeros(2, 3, 4))
    with pytest.raises(ValueError, match="NaN"):
        expected_center_from_maps(torch.full((1, 1, 2, 2), float("nan")))
    with pytest.raises(ValueError, match="lanes"):
        expected_center_from_maps(torch.zeros(1, 2, 2, 2), lanes=[2])
    with pytest.raises(ValueError, match="zero total"):
        expected_center_from_maps(torch.zeros(1, 1, 2, 2), from_logits=False)
    with pytest.raises(ValueError, match="confidence"):
        expected_center_from_anchors(torch.zeros(1, 2, 3), torch.zeros(1, 2))
    with pytest.raises(ValueError, match="confidence"):
        expected_center_from_polynomials(torch.zeros(1, 2, 3), torch.zeros(1, 3))
