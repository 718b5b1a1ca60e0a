"""Chamfer kernels against double loops, batched == one by one, padding, gradients."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from drivemetrics.polyline import (
    chamfer_distance,
    chamfer_distance_matrix,
    chamfer_distance_pairs,
    drop_closing_point,
    pad_polylines,
)
from tests.polyline._reference import ref_chamfer
from tests.polyline.test_resample import random_lines


@pytest.mark.parametrize("dim", [2, 3])
def test_matrix_equals_double_loops(dim):
    preds = random_lines(10, [2, 9, 40, 2], dim)
    target = random_lines(11, [3, 2, 25], dim)
    a, a_len = pad_polylines([torch.from_numpy(x) for x in preds])
    b, b_len = pad_polylines([torch.from_numpy(x) for x in target])
    got = {
        r: chamfer_distance_matrix(a, a_len, b, b_len, reduction=r)
        for r in ("mean", "sum", "max", "forward", "backward")
    }
    for i, p in enumerate(preds):
        for j, t in enumerate(target):
            forward, backward = ref_chamfer(p, t)
            np.testing.assert_allclose(got["mean"][i, j].item(), (forward + backward) / 2, rtol=1e-14)
            np.testing.assert_allclose(got["sum"][i, j].item(), forward + backward, rtol=1e-14)
            np.testing.assert_allclose(got["max"][i, j].item(), max(forward, backward), rtol=1e-14)
            np.testing.assert_allclose(got["forward"][i, j].item(), forward, rtol=1e-14)
            np.testing.assert_allclose(got["backward"][i, j].item(), backward, rtol=1e-14)


def test_long_lines_against_loops():
    preds = random_lines(12, [1000])
    target = random_lines(13, [2, 1000])
    a, a_len = pad_polylines([torch.from_numpy(x) for x in preds])
    b, b_len = pad_polylines([torch.from_numpy(x) for x in target])
    got = chamfer_distance_matrix(a, a_len, b, b_len, max_elements=300_000)  # forces chunking? one frame: no
    for j, t in enumerate(target):
        forward, backward = ref_chamfer(preds[0], t)
        np.testing.assert_allclose(got[0, j].item(), (forward + backward) / 2, rtol=1e-13)


def test_batched_equals_one_by_one_and_chunking_changes_nothing():
    rng = np.random.default_rng(5)
    frames_a, frames_b = [], []
    for f in range(7):
        frames_a.append(
            pad_polylines([torch.from_numpy(x) for x in random_lines(20 + f, list(rng.integers(2, 30, 4)))], 30)
        )
        frames_b.append(
            pad_polylines([torch.from_numpy(x) for x in random_lines(40 + f, list(rng.integers(2, 30, 3)))], 30)
        )
    a = torch.stack([p for p, _ in frames_a])
    a_len = torch.stack([n for _, n in frames_a])
    a_len[2, 3] = 0  # an absent prediction
    b = torch.stack([p for p, _ in frames_b])
    b_len = torch.stack([n for _, n in frames_b])
    whole = chamfer_distance_matrix(a, a_len, b, b_len)
    chunked = chamfer_distance_matrix(a, a_len, b, b_len, max_elements=1)
    assert torch.equal(whole, chunked)
    for f in range(7):
        torch.testing.assert_close(whole[f], chamfer_distance_matrix(a[f], a_len[f], b[f], b_len[f]), rtol=0, atol=0)
    assert torch.isinf(whole[2, 3]).all()
    assert torch.isfinite(whole[2, :3]).all()
    # the paired kernel agrees with the matrix diagonal
    paired = chamfer_distance(a[:, :3], a_len[:, :3], b, b_len)
    torch.testing.assert_close(paired, torch.diagonal(whole[:, :3, :], dim1=1, dim2=2), rtol=0, atol=0)


def test_padding_values_are_never_read():
    a, a_len = pad_polylines([torch.tensor([[0.0, 0.0], [1.0, 0.0]])], 5)
    b, b_len = pad_polylines([torch.tensor([[0.0, 1.0], [1.0, 1.0]])], 4)
    before = chamfer_distance_matrix(a, a_len, b, b_len)
    a[:, 2:] = 1e6
    b[:, 2:] = -3.0
    assert torch.equal(before, chamfer_distance_matrix(a, a_len, b, b_len))
    assert before.item() == 1.0


def test_gradcheck_including_coincident_points():
    a = torch.tensor([[[0.0, 0.0], [1.0, 0.2], [2.0, -0.1]]], dtype=torch.float64, requires_grad=True)
    b = torch.tensor([[[0.1, 0.5], [1.3, 1.0]], [[0.5, 0.5], [2.5, 0.0]]], dtype=torch.float64, requires_grad=True)
    a_len, b_len = torch.tensor([3]), torch.tensor([2, 2])
    for reduction in ("mean", "sum", "max"):
        assert torch.autograd.gradcheck(
            lambda x, y, r=reduction: chamfer_distance_matrix(x, a_len, y, b_len, reduction=r), (a, b)
        )
    same = a.detach().clone().requires_grad_(True)
    value = chamfer_distance_matrix(same, a_len, a.detach(), a_len)
    value.sum().backward()
    assert value.item() == 0.0
    assert torch.isfinite(same.grad).all()


def test_closed_ring_drop_and_errors():
    ring = torch.tensor([[[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 0.0]]])
    assert drop_closing_point(ring, torch.tensor([4])).tolist() == [3]
    with pytest.raises(ValueError, match="same D"):
        chamfer_distance_matrix(torch.zeros(1, 2, 2), torch.tensor([2]), torch.zeros(1, 2, 3), torch.tensor([2]))
    with pytest.raises(ValueError, match="reduction"):
        chamfer_distance_matrix(ring, torch.tensor([4]), ring, torch.tensor([4]), reduction="median")


def test_max_distance_prunes_only_pairs_beyond_it():
    rng = np.random.default_rng(9)
    lines = [torch.from_numpy(x + rng.uniform(-6, 6, 2)) for x in random_lines(30, list(rng.integers(2, 40, 12)))]
    a, a_len = pad_polylines(lines[:6])
    b, b_len = pad_polylines(lines[6:])
    full = chamfer_distance_matrix(a, a_len, b, b_len)
    for limit in (0.5, 1.5, 4.0):
        pruned = chamfer_distance_matrix(a, a_len, b, b_len, max_distance=limit)
        near = full <= limit
        assert torch.equal(pruned[near], full[near])
        assert (pruned[~near] > limit).all()
    assert torch.isinf(chamfer_distance_matrix(a, a_len, b, b_len, max_distance=0.0)[full > 1.0]).any()


@pytest.mark.parametrize("dim", [2, 3])
def test_without_gradient_equals_cdist_bit_for_bit(dim):
    # without autograd the matrix takes minima of squared distances and roots them after (exact roots): the values
    # must be scipy's cdist bit for bit, and in 2-D those of the differentiable torch.cdist path (in 3-D torch.cdist
    # itself can be 1 ulp off scipy)
    rng = np.random.default_rng(11 + dim)
    preds = [rng.uniform(-30, 30, (int(n), dim)) for n in rng.integers(2, 60, 9)]
    target = [x + rng.normal(0, 0.7, x.shape) for x in preds[:5]] + [rng.uniform(-30, 30, (7, dim))]
    a, a_len = pad_polylines([torch.from_numpy(x) for x in preds])
    b, b_len = pad_polylines([torch.from_numpy(x) for x in target])
    fast = chamfer_distance_matrix(a, a_len, b, b_len, reduction="forward")
    slow = chamfer_distance_matrix(a.requires_grad_(), a_len, b, b_len, reduction="forward").detach()
    if dim == 2:
        assert torch.equal(fast, slow)
    scipy_distance = pytest.importorskip("scipy.spatial.distance")
    for i, p in enumerate(preds):
        for j, t in enumerate(target):
            nearest = scipy_distance.cdist(p, t).min(1)
            assert fast[i, j].item() == np.cumsum(nearest)[-1] / len(p)


@pytest.mark.parametrize("max_distance", [None, 3.0])
def test_pairs_by_index_equal_the_matrix_bit_for_bit(max_distance):
    # lines of very different lengths (fixed-spacing samples), absent lines, pairs listed twice and out of order
    sizes_a = [2, 9, 40, 2, 300, 17, 120, 5]
    sizes_b = [3, 2, 25, 260, 60]
    a, a_len = pad_polylines([torch.from_numpy(x) for x in random_lines(31, sizes_a)])
    b, b_len = pad_polylines([torch.from_numpy(x) for x in random_lines(32, sizes_b)])
    a_len[3] = 0
    matrix = chamfer_distance_matrix(a[None], a_len[None], b[None], b_len[None], max_distance=max_distance)[0]
    rows, cols = torch.meshgrid(torch.arange(len(sizes_a)), torch.arange(len(sizes_b)), indexing="ij")
    order = torch.randperm(rows.numel(), generator=torch.Generator().manual_seed(0))
    i = torch.cat([rows.flatten()[order], torch.tensor([4, 4])])
    j = torch.cat([cols.flatten()[order], torch.tensor([3, 3])])
    got = chamfer_distance_pairs(a, a_len, b, b_len, i, j, max_distance=max_distance)
    assert torch.equal(got, matrix[i, j])  # inf where absent or pruned, the same bits elsewhere
    assert torch.isinf(got[i == 3]).all()
    chunked = chamfer_distance_pairs(a, a_len, b, b_len, i, j, max_elements=1, max_distance=max_distance)
    assert torch.equal(chunked, got)
    if max_distance is not None:
        full = chamfer_distance_pairs(a, a_len, b, b_len, i, j)
        within = full <= max_distance
        assert torch.equal(got[within], full[within])
        assert torch.isinf(got[~within]).any()
        assert within.any()


def test_pairs_by_index_refuse_bad_indices():
    a, a_len = pad_polylines([torch.from_numpy(x) for x in random_lines(33, [3, 4])])
    with pytest.raises(ValueError, match=r"`target_index` must lie in \[0, 1\], got 0..2"):
        chamfer_distance_pairs(a, a_len, a, a_len, torch.tensor([0, 1]), torch.tensor([0, 2]))
    with pytest.raises(ValueError, match=r"`preds_index` and `target_index` must be \(K,\)"):
        chamfer_distance_pairs(a, a_len, a, a_len, torch.tensor([0, 1]), torch.tensor([0]))
    empty = chamfer_distance_pairs(
        a, a_len, a, a_len, torch.tensor([], dtype=torch.long), torch.tensor([], dtype=torch.long)
    )
    assert empty.shape == (0,)
