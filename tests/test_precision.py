"""Every loss takes float16 / bfloat16 inputs (issue 50): computed in float32, a float32 loss, a gradient in the
input's dtype (``drivemetrics/_internal/precision.py`` states the rule).

The losses are enumerated from the public API (the ``nn.Module`` classes ``drivemetrics`` exports and the
``*_loss`` kernels of ``drivemetrics.functional``): a new loss fails ``test_every_exported_loss_has_a_case`` until
it has a case here. Each case is checked against the same call on the half inputs cast to float32 by hand: the same
value (up to float32 summation order), so the loss really computes in float32, not in 8 mantissa bits.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from torchmetrics import Metric

import drivemetrics
import drivemetrics.functional as F
from drivemetrics.lane.geometry import default_z_samples

Case = tuple[Callable[..., torch.Tensor], tuple[torch.Tensor, ...]]


def _psld() -> Case:
    m = default_z_samples().numel()
    loss = drivemetrics.PSLDLoss()
    return (lambda p, t: loss(p, t, speed=torch.tensor([20.0, 25.0]))), (0.3 * torch.randn(2, m), torch.zeros(2, m))


def _soft_f() -> Case:
    return drivemetrics.SoftFMeasureLoss(), (torch.rand(2, 12, 16), (torch.rand(2, 12, 16) > 0.5).float())


def _map_chamfer(mode: str) -> Callable[[], Case]:
    return lambda: (drivemetrics.MapChamferLoss(mode=mode), (torch.randn(2, 3, 5, 2), torch.randn(2, 3, 5, 2)))  # type: ignore[arg-type]


def _lane_matching(assignment: str, distance: str) -> Callable[[], Case]:
    def case() -> Case:
        loss = drivemetrics.LaneMatchingLoss(assignment=assignment, distance=distance)  # type: ignore[arg-type]
        return loss, (torch.randn(2, 3, 5, 2), torch.randn(2, 2, 4, 2))

    return case


def _map_chamfer_fn() -> Case:
    return (lambda p, t: F.map_chamfer_loss(p, t)), (torch.randn(2, 3, 5, 2), torch.randn(2, 3, 6, 2))


def _lane_matching_fn() -> Case:
    return (lambda p, t: F.lane_matching_loss(p, t)), (torch.randn(1, 2, 5, 3), torch.randn(1, 2, 4, 3))


def _center() -> Case:
    return (lambda c: F.road_center_attack_loss(c, "left")), (torch.rand(4),)


def _ego_lines() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Two ego lines (1, 2, N, 2) in pixels of the synthetic camera, a prediction 3 px off, and the homography."""
    from drivemetrics.synthetic.lane_clips import LaneCamera

    rows = torch.linspace(60.0, 120.0, 12)
    target = torch.stack([torch.stack([128 + s * 1.6 * (rows - 52), rows], -1) for s in (-1, 1)])[None]
    return target + torch.tensor([3.0, 0.0]), target, LaneCamera().image_from_road()


def _lookahead(functional: bool) -> Callable[[], Case]:
    def case() -> Case:
        preds, target, h = _ego_lines()
        if functional:
            return (lambda p, t: F.lookahead_lane_loss(p, t, image_from_road=h, speed=20.0)), (preds, target)
        loss = drivemetrics.LookaheadLaneLoss()
        return (lambda p, t: loss(p, t, image_from_road=h, speed=20.0)), (preds, target)

    return case


def _line_iou(functional: bool) -> Callable[[], Case]:
    def case() -> Case:
        preds, target, h = _ego_lines()
        if functional:
            return (lambda p, t: F.bev_line_iou_loss(p, t, image_from_road=h)), (preds, target)
        loss = drivemetrics.BEVLineIoULoss()
        return (lambda p, t: loss(p, t, image_from_road=h)), (preds, target)

    return case


def _control_weighted(functional: bool) -> Callable[[], Case]:
    def case() -> Case:
        preds, target, _ = _ego_lines()
        weights = torch.rand(target.shape[:3]) + 0.5
        if functional:
            return (lambda p, t: F.control_weighted_loss(p, t, weights=weights)), (preds, target)
        loss = drivemetrics.ControlWeightedLoss()
        return (lambda p, t: loss(p, t, weights=weights)), (preds, target)

    return case


def _expected_psld(functional: bool) -> Callable[[], Case]:
    def case() -> Case:
        m = default_z_samples().numel()
        inputs = (0.3 * torch.randn(2, m), torch.zeros(2, m))
        noise = torch.randn(3, 2, 3)  # fixed draws: the half and the by-hand call see the same controllers
        if functional:
            return (lambda p, t: F.expected_psld_loss(p, t, speed=20.0, noise=noise)), inputs
        loss = drivemetrics.ExpectedPSLDLoss()
        return (lambda p, t: loss(p, t, speed=20.0, noise=noise)), inputs

    return case


#: Loss name -> cases (one per mode whose arithmetic differs).
CASES: dict[str, dict[str, Callable[[], Case]]] = {
    "PSLDLoss": {"default": _psld},
    "SoftFMeasureLoss": {"default": _soft_f},
    "MapChamferLoss": {"chamfer": _map_chamfer("chamfer"), "permuted": _map_chamfer("permuted")},
    "LaneMatchingLoss": {
        f"{a}-{d}": _lane_matching(a, d) for a in ("hungarian", "soft") for d in ("frechet", "chamfer")
    },
    "map_chamfer_loss": {"default": _map_chamfer_fn},
    "lane_matching_loss": {"default": _lane_matching_fn},
    "road_center_attack_loss": {"default": _center},
    "LookaheadLaneLoss": {"default": _lookahead(False)},
    "lookahead_lane_loss": {"default": _lookahead(True)},
    "BEVLineIoULoss": {"default": _line_iou(False)},
    "bev_line_iou_loss": {"default": _line_iou(True)},
    "ControlWeightedLoss": {"default": _control_weighted(False)},
    "control_weighted_loss": {"default": _control_weighted(True)},
    "ExpectedPSLDLoss": {"default": _expected_psld(False)},
    "expected_psld_loss": {"default": _expected_psld(True)},
}


def exported_losses() -> set[str]:
    classes = {
        name
        for name in drivemetrics.__all__
        if issubclass(cls := getattr(drivemetrics, name), torch.nn.Module) and not issubclass(cls, Metric)
    }
    return classes | {name for name in F.__all__ if name.endswith("_loss")}


def test_every_exported_loss_has_a_case():
    assert exported_losses() <= set(CASES), sorted(exported_losses() - set(CASES))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize(
    "make", [pytest.param(make, id=f"{loss}-{mode}") for loss, modes in CASES.items() for mode, make in modes.items()]
)
def test_a_half_precision_loss_computes_in_float32(make, dtype):
    torch.manual_seed(0)
    fn, inputs = make()
    half = tuple(x.to(dtype).requires_grad_(i == 0) for i, x in enumerate(inputs))
    value = fn(*half)
    assert value.dtype == torch.float32
    by_hand = fn(*(x.detach().float() for x in half))
    torch.testing.assert_close(value, by_hand, rtol=1e-6, atol=1e-6)
    value.backward()
    assert half[0].grad is not None
    assert half[0].grad.dtype == dtype
    assert torch.isfinite(half[0].grad.float()).all()
    assert half[0].grad.float().abs().sum() > 0
