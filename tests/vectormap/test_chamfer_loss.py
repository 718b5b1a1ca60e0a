"""The map Chamfer / permutation-invariant loss: values against loops, invariances, gradients."""

from __future__ import annotations

import itertools

import pytest
import torch

from drivemetrics.vectormap.chamfer_loss import MapChamferLoss, map_chamfer_loss


def loop_permuted(pred: torch.Tensor, target: torch.Tensor) -> float:
    """Minimum over the GT's equivalent orders of the mean point distance, by enumeration."""
    num = target.shape[0]
    closed = bool((target[0] == target[-1]).all()) and num >= 3
    candidates = []
    if closed:
        ring = target[:-1]
        for shift, flip in itertools.product(range(num - 1), (False, True)):
            order = torch.roll(ring, -shift, 0)
            order = torch.cat([order, order[:1]])
            candidates.append(order.flip(0) if flip else order)
    else:
        candidates = [target, target.flip(0)]
    return min(float((pred - c).norm(dim=-1).mean()) for c in candidates)


def test_permuted_equals_enumeration_for_open_and_closed_lines():
    g = torch.Generator().manual_seed(0)
    target = torch.randn(2, 3, 6, 2, generator=g, dtype=torch.float64)
    target[0, 1, -1] = target[0, 1, 0]  # a ring
    target[1, 2, -1] = target[1, 2, 0]
    preds = torch.randn(2, 3, 6, 2, generator=g, dtype=torch.float64)
    got = map_chamfer_loss(preds, target, mode="permuted", reduction="none")
    for b in range(2):
        for n in range(3):
            assert got[b, n].item() == pytest.approx(loop_permuted(preds[b, n], target[b, n]), rel=1e-12)


def test_invariances():
    g = torch.Generator().manual_seed(1)
    line = torch.randn(1, 1, 8, 2, generator=g, dtype=torch.float64)
    ring = torch.cat([line[:, :, :7], line[:, :, :1]], 2)
    assert map_chamfer_loss(line.flip(2), line, mode="permuted").item() == 0.0
    rotated = torch.cat([torch.roll(ring[:, :, :7], 3, 2), torch.roll(ring[:, :, :7], 3, 2)[:, :, :1]], 2)
    assert map_chamfer_loss(rotated.flip(2), ring, mode="permuted").item() == 0.0
    # an open line is not invariant to a shift of its start point
    assert map_chamfer_loss(torch.roll(line, 2, 2), line, mode="permuted").item() > 0.1
    assert map_chamfer_loss(torch.roll(line, 2, 2), line, mode="chamfer").item() == 0.0


def test_gradcheck_and_ignored_pairs():
    g = torch.Generator().manual_seed(2)
    preds = torch.randn(2, 2, 5, 2, generator=g, dtype=torch.float64, requires_grad=True)
    target = torch.randn(2, 2, 5, 2, generator=g, dtype=torch.float64)
    lengths = torch.tensor([[5, 0], [5, 5]])
    for mode in ("chamfer", "permuted"):
        for dist in ("l2", "l1"):
            assert torch.autograd.gradcheck(
                lambda p, m=mode, d=dist: map_chamfer_loss(p, target, target_lengths=lengths, mode=m, point_distance=d),
                (preds,),
            )
    none = map_chamfer_loss(preds, target, target_lengths=lengths, reduction="none")
    assert none[0, 1].item() == 0.0
    assert map_chamfer_loss(preds, target, target_lengths=lengths).item() == pytest.approx(none.sum().item() / 3)
    module = MapChamferLoss(mode="permuted", reduction="sum")
    assert module(preds, target, target_lengths=lengths).item() == pytest.approx(
        map_chamfer_loss(preds, target, target_lengths=lengths, mode="permuted", reduction="sum").item()
    )


def test_errors():
    with pytest.raises(ValueError, match="mode"):
        map_chamfer_loss(torch.zeros(1, 1, 3, 2), torch.zeros(1, 1, 3, 2), mode="hausdorff")
    with pytest.raises(ValueError, match="permuted"):
        map_chamfer_loss(torch.zeros(1, 1, 3, 2), torch.zeros(1, 1, 4, 2), mode="permuted")
