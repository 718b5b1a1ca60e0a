"""Lane matching loss: gradients (gradcheck, float64) and that optimising it raises DET_l."""

from __future__ import annotations

import pytest
import torch

from drivemetrics.lanetopology.matching_loss import LaneMatchingLoss, lane_matching_loss
from drivemetrics.lanetopology.openlanev2 import openlanev2_scores


def _lanes(seed: int, count: int, points: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    x = torch.linspace(0, 20, points, dtype=torch.float64)
    lanes = []
    for k in range(count):
        y = 3.5 * k + 0.3 * torch.randn(1, generator=gen, dtype=torch.float64) * x / 20
        lanes.append(torch.stack([x, y.expand_as(x), torch.zeros_like(x)], -1))
    return torch.stack(lanes)[None]


@pytest.mark.parametrize("distance", ["frechet", "chamfer"])
@pytest.mark.parametrize("assignment", ["hungarian", "soft"])
def test_gradcheck(distance: str, assignment: str) -> None:
    target = _lanes(0, 2, 4)
    lengths = torch.tensor([[4, 3]])
    preds = (_lanes(1, 3, 4) + 0.4).requires_grad_(True)
    assert torch.autograd.gradcheck(
        lambda p: lane_matching_loss(
            p, target, target_lengths=lengths, distance=distance, assignment=assignment, gamma=0.3
        ),  # type: ignore[arg-type]
        (preds,),
    )


def test_value_and_bad_arguments() -> None:
    target = _lanes(0, 2, 5)
    assert lane_matching_loss(target.clone(), target, gamma=1e-3).item() == pytest.approx(0.0, abs=1e-2)
    shifted = target + torch.tensor([0.0, 1.0, 0.0], dtype=torch.float64)
    assert lane_matching_loss(shifted, target, gamma=1e-3).item() == pytest.approx(1.0, abs=1e-2)
    # Frechet sees the point order, Chamfer does not
    reversed_ = target.flip(2)
    assert lane_matching_loss(reversed_, target, gamma=1e-3).item() > 5
    assert lane_matching_loss(reversed_, target, distance="chamfer", gamma=1e-3).item() < 0.1
    with pytest.raises(ValueError, match="assignment"):
        lane_matching_loss(target, target, assignment="greedy")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="shapes"):
        lane_matching_loss(target[0], target)
    assert lane_matching_loss(target, target, target_lengths=torch.zeros(1, 2, dtype=torch.long)).item() == 0.0


def _frame(lanes: torch.Tensor, confidence: float | None) -> dict:
    items = []
    for k, lane in enumerate(lanes.detach().tolist()):
        item: dict = {"points": lane}
        if confidence is not None:
            item["confidence"] = confidence - 0.01 * k
        items.append(item)
    n = len(items)
    return {
        "lane_centerline": items,
        "traffic_element": [],
        "topology_lclc": [[0.0] * n for _ in range(n)],
        "topology_lcte": [[] for _ in range(n)],
    }


@pytest.mark.slow
def test_optimising_the_loss_raises_det_l() -> None:
    target = _lanes(0, 3, 11)
    gen = torch.Generator().manual_seed(3)
    start = (
        target
        + torch.tensor([0.0, 1.4, 0.3], dtype=torch.float64)
        + 0.3 * torch.randn(target.shape, generator=gen, dtype=torch.float64)
    )
    preds = start.clone().requires_grad_(True)
    loss_fn = LaneMatchingLoss(gamma=0.05)
    optimiser = torch.optim.Adam([preds], lr=0.05)
    before = openlanev2_scores([_frame(preds[0], 0.9)], [_frame(target[0], None)], compat="reference")
    first = loss_fn(preds, target).item()
    for _ in range(60):
        optimiser.zero_grad()
        loss = loss_fn(preds, target)
        loss.backward()
        optimiser.step()
    after = openlanev2_scores([_frame(preds[0], 0.9)], [_frame(target[0], None)], compat="reference")
    print(f"loss {first:.3f} -> {loss.item():.3f}, DET_l {float(before['det_l']):.3f} -> {float(after['det_l']):.3f}")
    assert loss.item() < first / 2
    assert float(after["det_l"]) > float(before["det_l"]) + 0.3
    assert float(after["det_l"]) == pytest.approx(1.0)
