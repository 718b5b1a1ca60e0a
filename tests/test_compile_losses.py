"""The training losses compile as one graph with ``validate_args=False`` (issue 27): forward and backward.

``torch.compile(fullgraph=True)`` raises on any graph break (a value check's ``.item()`` would be one), and the
compiled loss and its gradient must equal the eager ones. ``aot_eager`` traces forward and backward exactly as
inductor does, without generating C++ (fast); ``inductor`` (the default backend, C++ code generation) is tried on
one loss here and on all three by ``benchmarks/compile_losses.py``.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
import torch._dynamo

from drivemetrics.functional import (
    expected_center_from_anchors,
    expected_center_from_maps,
    expected_center_from_polynomials,
    road_center_attack_loss,
)
from drivemetrics.lane import PSLDLoss
from drivemetrics.lane.geometry import default_z_samples
from drivemetrics.road import SoftFMeasureLoss


def _soft_f() -> tuple[Callable[..., torch.Tensor], tuple[torch.Tensor, ...]]:
    logits = torch.randn(2, 1, 12, 16, requires_grad=True)
    target = (torch.rand(2, 1, 12, 16) > 0.5).float()
    return SoftFMeasureLoss(from_logits=True, validate_args=False), (logits, target)


def _soft_f_pooled() -> tuple[Callable[..., torch.Tensor], tuple[torch.Tensor, ...]]:
    probs = torch.rand(2, 12, 16, requires_grad=True)
    target = (torch.rand(2, 12, 16) > 0.5).float()
    valid = (torch.rand(2, 12, 16) > 0.2).float()
    loss = SoftFMeasureLoss(reduction="pooled", validate_args=False)
    return (lambda p, t, v: loss(p, t, valid=v)), (probs, target, valid)


def _soft_f_bev() -> tuple[Callable[..., torch.Tensor], tuple[torch.Tensor, ...]]:
    """The BEV soft F: the homography check honours ``validate_args=False`` (it was a graph break)."""
    from drivemetrics.geometry import BevGrid

    grid = BevGrid(x_min=-4.0, x_max=4.0, z_min=6.0, z_max=22.0, resolution=1.0)  # (16, 8) cells
    homography = torch.tensor([[40.0, 8.0, 80.0], [0.0, 6.0, 20.0], [0.0, 0.1, 1.0]], dtype=torch.float64)
    probs = torch.rand(2, 48, 160, requires_grad=True)
    target = (torch.rand(2, 48, 160) > 0.5).float()
    loss = SoftFMeasureLoss(space="bev", grid=grid, validate_args=False)
    return (lambda p, t: loss(p, t, homography=homography.expand(2, 3, 3))), (probs, target)


def _psld() -> tuple[Callable[..., torch.Tensor], tuple[torch.Tensor, ...]]:
    m = default_z_samples().numel()
    preds = (0.3 * torch.randn(2, m)).requires_grad_()
    loss = PSLDLoss(validate_args=False)
    return (lambda p, t, s: loss(p, t, speed=s)), (preds, torch.zeros(2, m), torch.tensor([20.0, 25.0]))


def _map_chamfer_permuted() -> tuple[Callable[..., torch.Tensor], tuple[torch.Tensor, ...]]:
    """MapTR's permutation-invariant point loss: the lengths' range check honours ``validate_args=False``."""
    from drivemetrics.vectormap import MapChamferLoss

    preds = torch.randn(2, 3, 5, 2, requires_grad=True)
    return MapChamferLoss(mode="permuted", validate_args=False), (preds, torch.randn(2, 3, 5, 2))


def _map_chamfer() -> tuple[Callable[..., torch.Tensor], tuple[torch.Tensor, ...]]:
    """The symmetric Chamfer mode: its fast path for fully valid lines honours ``validate_args=False`` (it was a
    graph break), with GT lines of several lengths and one ignored pair."""
    from drivemetrics.vectormap import MapChamferLoss

    preds = torch.randn(2, 3, 5, 2, requires_grad=True)
    target_lengths = torch.tensor([[7, 4, 0], [2, 7, 7]])
    loss = MapChamferLoss(validate_args=False)
    return (lambda p, t: loss(p, t, target_lengths=target_lengths)), (preds, torch.randn(2, 3, 7, 2))


def _lane_matching_soft(distance: str) -> tuple[Callable[..., torch.Tensor], tuple[torch.Tensor, ...]]:
    """The lane matching loss's soft assignment (issue 50): no read-back of which lanes are present."""
    from drivemetrics.lanetopology import LaneMatchingLoss

    preds = torch.randn(2, 3, 5, 2, requires_grad=True)
    target_lengths = torch.tensor([[4, 0], [2, 3]])  # one absent lane
    loss = LaneMatchingLoss(distance=distance, assignment="soft", validate_args=False)  # type: ignore[arg-type]
    return (lambda p, t: loss(p, t, target_lengths=target_lengths)), (preds, torch.randn(2, 2, 4, 2))


def _center_maps() -> tuple[Callable[..., torch.Tensor], tuple[torch.Tensor, ...]]:
    def loss(maps: torch.Tensor) -> torch.Tensor:
        center = expected_center_from_maps(maps, lanes=(1, 2), validate_args=False)
        return road_center_attack_loss(center, validate_args=False)

    return loss, (torch.randn(2, 4, 8, 16, requires_grad=True),)


def _center_polynomials() -> tuple[Callable[..., torch.Tensor], tuple[torch.Tensor, ...]]:
    def loss(coefficients: torch.Tensor, confidence: torch.Tensor) -> torch.Tensor:
        center = expected_center_from_polynomials(coefficients, confidence, validate_args=False)
        return road_center_attack_loss(center, "left", validate_args=False)

    return loss, (torch.randn(2, 4, 3, requires_grad=True), torch.rand(2, 4))


def _center_anchors() -> tuple[Callable[..., torch.Tensor], tuple[torch.Tensor, ...]]:
    def loss(xs: torch.Tensor, confidence: torch.Tensor) -> torch.Tensor:
        center = expected_center_from_anchors(xs, confidence, validate_args=False)
        return road_center_attack_loss(center, validate_args=False)

    return loss, (torch.rand(2, 5, 8, requires_grad=True), torch.rand(2, 5, requires_grad=True))


CASES = {
    "soft_f": _soft_f,
    "soft_f_pooled": _soft_f_pooled,
    "soft_f_bev": _soft_f_bev,
    "psld": _psld,
    "map_chamfer": _map_chamfer,
    "map_chamfer_permuted": _map_chamfer_permuted,
    "lane_matching_soft_frechet": lambda: _lane_matching_soft("frechet"),
    "lane_matching_soft_chamfer": lambda: _lane_matching_soft("chamfer"),
    "center_maps": _center_maps,
    "center_polynomials": _center_polynomials,
    "center_anchors": _center_anchors,
}


def _check_compiled_matches_eager(case: str, backend: str) -> None:
    torch.manual_seed(0)
    fn, inputs = CASES[case]()
    leaves = [x for x in inputs if x.requires_grad]
    eager = fn(*inputs)
    eager_grads = torch.autograd.grad(eager, leaves)
    torch._dynamo.reset()
    compiled = torch.compile(fn, fullgraph=True, backend=backend)  # raises on a graph break
    value = compiled(*inputs)
    grads = torch.autograd.grad(value, leaves)
    torch.testing.assert_close(value, eager)
    for got, expected in zip(grads, eager_grads, strict=True):
        assert got.abs().sum() > 0  # a real gradient flows
        torch.testing.assert_close(got, expected)


@pytest.mark.parametrize(
    "case", [pytest.param(c, marks=pytest.mark.slow) if c == "psld" else c for c in sorted(CASES)]
)  # PSLD traces a 10-frame MPC roll-out: ~30 s
def test_loss_compiles_as_one_graph_forward_and_backward(case):
    _check_compiled_matches_eager(case, "aot_eager")


@pytest.mark.parametrize(
    "case", ["center_maps"]
)  # inductor on soft F / PSLD: 45 s / 170 s; benchmarks/compile_losses.py
def test_loss_compiles_with_inductor(case):
    _check_compiled_matches_eager(case, "inductor")


def test_the_hungarian_lane_matching_breaks_the_graph():
    """SciPy's assignment runs on the host: ``assignment="hungarian"`` does not compile as one graph (documented in
    ``docs/pages/performance.md``); ``"soft"`` does (the cases above)."""
    from drivemetrics.lanetopology import LaneMatchingLoss

    loss = LaneMatchingLoss(validate_args=False)
    torch._dynamo.reset()
    with pytest.raises(torch._dynamo.exc.TorchDynamoException):
        torch.compile(loss, fullgraph=True, backend="eager")(torch.randn(1, 2, 3, 2), torch.randn(1, 2, 3, 2))


def test_validation_is_what_breaks_the_graph():
    """With the default ``validate_args=True`` the value checks synchronise with the host: no full graph."""
    _, inputs = _center_maps()
    torch._dynamo.reset()

    def checked(maps: torch.Tensor) -> torch.Tensor:
        return expected_center_from_maps(maps).sum()

    with pytest.raises(torch._dynamo.exc.TorchDynamoException):  # Unsupported / UserError on the data-dependent check
        torch.compile(checked, fullgraph=True, backend="eager")(*inputs)
