"""Tests of drivemetrics.synthetic.lane_detectors: the four reference detector families and the tiny detector."""

from __future__ import annotations

import pytest
import torch

from drivemetrics.synthetic.lane_detectors import FAMILIES, LaneDetector, make_detector


@pytest.mark.parametrize("size", [(128, 256), (64, 128)])
@pytest.mark.parametrize("family", FAMILIES)
def test_outputs_and_gradients_reach_the_image(family, size):
    height, width = size
    rows = torch.arange(height * 0.36, height, height / 32)
    torch.manual_seed(0)
    detector = make_detector(family, rows, size)
    images = torch.rand(3, 1, height, width, requires_grad=True)
    out = detector(images)
    center = detector.center(out)
    lanes = detector.lanes(out)
    assert center.shape == (3,)
    assert lanes.shape == (3, 2, rows.numel(), 2)
    assert torch.equal(lanes[..., 1], rows.expand(3, 2, -1))
    assert torch.isfinite(center).all()
    assert torch.isfinite(lanes).all()
    grad = torch.autograd.grad(center.sum(), images, retain_graph=True)[0]
    assert grad.abs().sum() > 0
    grad = torch.autograd.grad(lanes[..., 0].sum(), images)[0]
    assert grad.abs().sum() > 0


@pytest.mark.parametrize("size", [(128, 256), (64, 128)])
def test_segmentation_lane_x_maps_pooled_columns_to_pixels(size):
    height, width = size
    detector = LaneDetector("segmentation", torch.tensor([height - 2.0]), size)
    pool = height // 32
    maps = torch.full((1, 2, 1, width // pool), -1e4)
    maps[0, 0, 0, 5] = maps[0, 1, 0, 20] = 0.0
    x = detector.lane_x({"maps": maps})
    # pooled column c covers pixels pool * c .. pool * c + pool - 1: its center is pool * (c + 0.5) - 0.5
    assert torch.allclose(x[0, :, 0], torch.tensor([pool * 5.5 - 0.5, pool * 20.5 - 0.5]))


def test_anchor_features_are_local():
    """An anchor's outputs depend on the pixels along it (LaneATT-like pooling): changing the right edge of the
    image leaves the scores of the anchors that stay in the left half unchanged (beyond the receptive field)."""
    torch.manual_seed(0)
    rows = torch.arange(46.0, 128.0, 4.0)
    detector = make_detector("anchor", rows)
    images = torch.rand(1, 1, 128, 256)
    changed = images.clone()
    changed[..., 224:] = 0.0  # right edge
    a, b = detector(images), detector(changed)
    left = detector.anchor_x.amax(-1) < 128  # anchors that stay in the left half at every row
    assert left.sum() >= 3
    assert torch.allclose(a["classes"][0, left], b["classes"][0, left])
    assert not torch.allclose(a["classes"][0, ~left], b["classes"][0, ~left])
