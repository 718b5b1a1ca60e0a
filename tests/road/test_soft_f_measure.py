"""Soft F-measure loss: hand values, hard-F limit, gradcheck (perspective and BEV), masks, training raises hard F."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from drivemetrics.functional import road_pixel_scores
from drivemetrics.geometry import BevGrid, bev_sample_pixels, warp_image_to_bev
from drivemetrics.road.soft_f_measure import SoftFMeasureLoss, soft_f_measure

PREDS = torch.tensor([[[0.8, 0.2], [0.6, 0.0]]], dtype=torch.float64)
TARGET = torch.tensor([[[1, 0], [1, 0]]])


def test_hand_values():
    # TP = 0.8 + 0.6 = 1.4, FP = 0.2, FN = 0.2 + 0.4 = 0.6
    assert soft_f_measure(PREDS, TARGET, smooth=0).item() == pytest.approx(2.8 / 3.6, abs=1e-15)
    assert soft_f_measure(PREDS, TARGET, smooth=0, beta=2).item() == pytest.approx(7 / 9.6, abs=1e-15)
    assert soft_f_measure(PREDS, TARGET, smooth=1).item() == pytest.approx(3.8 / 4.6, abs=1e-15)
    loss = SoftFMeasureLoss(smooth=0)(PREDS.unsqueeze(1), TARGET.unsqueeze(1))  # B x 1 x H x W accepted
    assert loss.item() == pytest.approx(1 - 2.8 / 3.6, abs=1e-15)


def test_binary_predictions_give_the_hard_f(device):
    g = torch.Generator().manual_seed(0)
    target = torch.rand(3, 9, 9, generator=g) < 0.4
    hard = (torch.rand(3, 9, 9, generator=g) < 0.5).double()
    valid = torch.rand(3, 9, 9, generator=g) < 0.9
    soft = soft_f_measure(hard.to(device), target.to(device), valid=valid.to(device), smooth=0, pooled=True)
    pooled = road_pixel_scores(hard, target, valid=valid, thresholds=[0.5])
    tp, fp, fn = pooled["tp_wp"], pooled["fp_wp"], pooled["fn_wp"]
    assert soft.item() == pytest.approx((2 * tp / (2 * tp + fp + fn)).item(), abs=1e-14)


def test_reductions_and_logits():
    g = torch.Generator().manual_seed(1)
    logits = torch.randn(4, 6, 7, generator=g, dtype=torch.float64)
    target = torch.rand(4, 6, 7, generator=g) < 0.5
    per_image = SoftFMeasureLoss(from_logits=True, reduction="none")(logits, target)
    assert per_image.shape == (4,)
    probs = torch.sigmoid(logits)
    torch.testing.assert_close(per_image, 1 - soft_f_measure(probs, target))
    assert SoftFMeasureLoss(from_logits=True)(logits, target).item() == pytest.approx(per_image.mean().item())
    assert SoftFMeasureLoss(from_logits=True, reduction="sum")(logits, target).item() == pytest.approx(
        per_image.sum().item()
    )
    pooled = SoftFMeasureLoss(from_logits=True, reduction="pooled")(logits, target)
    flat = 1 - soft_f_measure(probs.reshape(1, 24, 7), target.reshape(1, 24, 7))
    assert pooled.item() == pytest.approx(flat.item(), abs=1e-14)


def test_invalid_pixels_have_no_effect_and_no_gradient():
    g = torch.Generator().manual_seed(2)
    preds = torch.rand(2, 5, 5, generator=g, dtype=torch.float64, requires_grad=True)
    target = torch.rand(2, 5, 5, generator=g) < 0.5
    valid = torch.ones(2, 5, 5, dtype=torch.bool)
    valid[:, :, :2] = False
    loss = SoftFMeasureLoss()(preds, target, valid=valid)
    loss.backward()
    assert bool((preds.grad[:, :, :2] == 0).all())
    assert bool((preds.grad[:, :, 2:] != 0).all())
    changed = preds.detach().clone()
    changed[:, :, :2] = 1 - changed[:, :, :2]
    assert SoftFMeasureLoss()(changed, target, valid=valid).item() == loss.item()


@pytest.mark.parametrize("from_logits", [False, True])
@pytest.mark.parametrize("pooled", [False, True])
def test_gradcheck(from_logits, pooled):
    g = torch.Generator().manual_seed(3)
    raw = torch.rand(2, 4, 5, generator=g, dtype=torch.float64) * 0.9 + 0.05
    preds = (torch.logit(raw) if from_logits else raw).requires_grad_(True)
    target = torch.rand(2, 4, 5, generator=g) < 0.5
    valid = torch.rand(2, 4, 5, generator=g) < 0.8

    def fn(x):
        return soft_f_measure(x, target, valid=valid, beta=1.5, from_logits=from_logits, smooth=0.5, pooled=pooled)

    assert torch.autograd.gradcheck(fn, (preds,))


def _toy_homography() -> torch.Tensor:
    """image_from_road of a camera 1.6 m above the road, 8 px focal length, for a 12 x 16 image."""
    return torch.tensor([[8.0, 8.0, 0.0], [0.0, 2.0, 12.8], [0.0, 1.0, 0.0]], dtype=torch.float64)


SMALL_GRID = BevGrid(x_min=-2.0, x_max=2.0, z_min=4.0, z_max=12.0, resolution=0.25)


def test_bev_loss_gradcheck_and_value():
    g = torch.Generator().manual_seed(4)
    preds = (torch.rand(2, 12, 16, generator=g, dtype=torch.float64) * 0.9 + 0.05).requires_grad_(True)
    target = torch.rand(2, 12, 16, generator=g) < 0.5
    valid = torch.rand(2, 12, 16, generator=g) < 0.9
    homography = _toy_homography().expand(2, 3, 3)
    loss_fn = SoftFMeasureLoss(space="bev", grid=SMALL_GRID, reduction="none")
    assert torch.autograd.gradcheck(lambda x: loss_fn(x, target, valid=valid, homography=homography), (preds,))
    # value: soft F of the bilinearly warped probabilities on the nearest-pixel labels of the seen cells
    probs_bev, seen = warp_image_to_bev(preds.detach().unsqueeze(1), homography, SMALL_GRID, mode="bilinear")
    row, col, seen_nearest = bev_sample_pixels(homography, (12, 16), SMALL_GRID, mode="nearest")
    b = torch.arange(2).view(2, 1, 1)
    target_bev = target[b, row.clamp_min(0), col.clamp_min(0)] & seen_nearest
    valid_bev = valid[b, row.clamp_min(0), col.clamp_min(0)] & seen_nearest & seen
    p = probs_bev[:, 0] * valid_bev
    y = target_bev & valid_bev
    tp = (p * y).sum((1, 2))
    fp = (p * ~y).sum((1, 2))
    fn = ((1 - probs_bev[:, 0]) * y).sum((1, 2))
    expected = 1 - (2 * tp + 1) / (2 * tp + fp + fn + 1)
    torch.testing.assert_close(loss_fn(preds, target, valid=valid, homography=homography), expected)


def test_empty_ground_truth():
    empty = torch.zeros(1, 3, 3)
    assert SoftFMeasureLoss()(torch.zeros(1, 3, 3), empty).item() == 0.0  # nothing to find, nothing predicted
    assert SoftFMeasureLoss()(torch.full((1, 3, 3), 0.5), empty).item() == pytest.approx(1 - 1 / 5.5)
    with pytest.warns(RuntimeWarning, match="undefined"):
        f = soft_f_measure(torch.zeros(1, 3, 3), empty, smooth=0)
    assert f.item() == 0.0


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: SoftFMeasureLoss()(torch.full((1, 2, 2), 1.2), torch.ones(1, 2, 2)), ValueError, "from_logits"),
        (lambda: SoftFMeasureLoss()(torch.full((1, 2, 2), float("nan")), torch.ones(1, 2, 2)), ValueError, "NaN"),
        (
            lambda: SoftFMeasureLoss(from_logits=True)(torch.full((1, 2, 2), float("inf")), torch.ones(1, 2, 2)),
            ValueError,
            "NaN or infinite",
        ),
        (lambda: SoftFMeasureLoss()(torch.rand(1, 2, 2), torch.ones(1, 3, 2)), ValueError, "same shape"),
        (lambda: SoftFMeasureLoss()(torch.rand(1, 2, 2, 2), torch.ones(1, 2, 2, 2)), ValueError, "B x 1 x H x W"),
        (lambda: SoftFMeasureLoss()(torch.ones(1, 2, 2, dtype=torch.long), torch.ones(1, 2, 2)), TypeError, "float"),
        (lambda: SoftFMeasureLoss()(torch.rand(1, 2, 2), torch.full((1, 2, 2), 3)), ValueError, "binary"),
        (lambda: SoftFMeasureLoss(reduction="avg"), ValueError, "`reduction`"),
        (lambda: SoftFMeasureLoss(beta=-1), ValueError, "`beta`"),
        (lambda: SoftFMeasureLoss(smooth=-1), ValueError, "`smooth`"),
        (lambda: SoftFMeasureLoss(space="bev")(torch.rand(1, 2, 2), torch.ones(1, 2, 2)), ValueError, "homography"),
        (
            lambda: SoftFMeasureLoss()(torch.rand(1, 2, 2), torch.ones(1, 2, 2), homography=torch.eye(3)),
            ValueError,
            "only used with space='bev'",
        ),
    ],
)
def test_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()


def _scene(seed: int, batch: int = 8, size: int = 24):
    """Road = lower half with a wobbly edge; 3 noisy feature channels, one informative."""
    g = torch.Generator().manual_seed(seed)
    rows = torch.arange(size).view(1, size, 1).float()
    edge = size / 2 + 3 * torch.sin(torch.arange(size).float() / 3 + torch.rand(batch, 1, 1, generator=g) * 6)
    target = rows >= edge
    features = torch.randn(batch, 3, size, size, generator=g) * 0.8
    features[:, 0] += target.float() * 2 - 1
    return features, target


def test_optimising_the_loss_raises_the_hard_f():
    torch.manual_seed(0)
    net = torch.nn.Conv2d(3, 1, kernel_size=3, padding=1)
    with torch.no_grad():  # a bad start: the informative channel points the wrong way
        net.weight.zero_()
        net.weight[0, 0, 1, 1] = -1.0
    features, target = _scene(0)
    loss_fn = SoftFMeasureLoss(from_logits=True)

    def hard_maxf():
        with torch.no_grad():
            return road_pixel_scores(torch.sigmoid(net(features))[:, 0], target)["max_f"].item()

    before = hard_maxf()
    opt = torch.optim.Adam(net.parameters(), lr=0.05)
    losses = []
    for _ in range(60):
        opt.zero_grad()
        loss = loss_fn(net(features), target)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    after = hard_maxf()
    assert losses[-1] < losses[0] - 0.2
    assert after > before + 0.2
    assert after > 0.9
    held_out, held_target = _scene(1)
    with torch.no_grad():
        held = road_pixel_scores(torch.sigmoid(net(held_out))[:, 0], held_target)["max_f"].item()
    assert held > 0.9


def test_loss_runs_on_device(device):
    preds = torch.rand(2, 5, 5, device=device, requires_grad=True)
    loss = SoftFMeasureLoss()(preds, torch.ones(2, 5, 5, device=device))
    loss.backward()
    assert preds.grad.device.type == device.type
    assert np.isfinite(loss.item())


def test_half_precision_inputs_do_not_overflow():
    preds = torch.full((1, 400, 1000), 0.75, dtype=torch.float16, requires_grad=True)
    target = torch.ones(1, 400, 1000)
    loss = SoftFMeasureLoss(smooth=0)(preds, target)
    expected = 1 - 2 * 0.75 * 4e5 / (2 * 0.75 * 4e5 + 0.25 * 4e5)
    assert loss.item() == pytest.approx(expected, rel=1e-6)
    loss.backward()
    assert preds.grad.dtype == torch.float16
    assert bool(torch.isfinite(preds.grad).all())
