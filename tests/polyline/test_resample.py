"""Resampling kernels against plain GEOS-semantics loops, batched == one by one, gradients."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from drivemetrics.polyline import (
    arc_length,
    interpolate_at,
    pad_polylines,
    resample_by_count,
    resample_by_spacing,
    unpad_polylines,
)
from tests.polyline._reference import ref_length, ref_resample_count, ref_resample_spacing


def random_lines(seed: int, sizes: list[int], dim: int = 2) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    lines = []
    for n in sizes:
        steps = rng.normal(scale=rng.uniform(0.05, 2.0), size=(n, dim))
        line = np.cumsum(steps, axis=0)
        if n > 3 and rng.random() < 0.3:
            line[2] = line[1]  # a zero-length segment
        lines.append(np.round(line, 4))
    return lines


SIZES = [2, 2, 3, 5, 17, 40, 1000, 4]


@pytest.mark.parametrize("dim", [2, 3])
def test_arc_length_and_count_resampling_equal_the_loop(dim):
    lines = random_lines(1, SIZES, dim)
    points, lengths = pad_polylines([torch.from_numpy(x) for x in lines])
    assert points.dtype == torch.float64
    np.testing.assert_array_equal(arc_length(points, lengths).numpy(), [ref_length(x) for x in lines])
    resampled = resample_by_count(points, lengths, num_samples=100)
    for got, line in zip(resampled, lines, strict=True):
        np.testing.assert_allclose(got.numpy(), ref_resample_count(line, 100), rtol=0, atol=1e-12)


def test_count_resampling_of_a_closed_ring_repeats_its_start():
    ring = torch.tensor([[[0.0, 0.0], [2.0, 0.0], [2.0, 1.0], [0.0, 1.0], [0.0, 0.0]]], dtype=torch.float64)
    out = resample_by_count(ring, torch.tensor([5]), num_samples=7)
    torch.testing.assert_close(out[0, 0], out[0, -1])
    torch.testing.assert_close(out[0, 3], torch.tensor([2.0, 1.0], dtype=torch.float64))  # half of 6 m


def test_spacing_resampling_reproduces_numpy_arange_end_effects():
    # lengths that are (nearly) multiples of 0.3, where arange adds a position just below L
    lines = [np.array([[0.0, 0.0], [length, 0.0]]) for length in (0.9, 0.6, 1.2, 3.0, 0.2, 0.3, 2.9999999)]
    lines += random_lines(2, SIZES)
    points, lengths = pad_polylines([torch.from_numpy(x) for x in lines])
    samples, counts = resample_by_spacing(points, lengths, spacing=0.3)
    for got, line in zip(unpad_polylines(samples, counts), lines, strict=True):
        expected = ref_resample_spacing(line, 0.3)
        assert got.shape[0] == len(expected), (ref_length(line), got.shape[0], len(expected))
        np.testing.assert_allclose(got.numpy(), expected, rtol=0, atol=1e-12)
    # 0.9 m: arange(0.3, 0.9, 0.3) has 0.3, 0.6 and 0.8999999999999999 -> 5 points; 0.2 m: only the two ends
    assert counts[:7].tolist() == [np.arange(0.3, x, 0.3).size + 2 for x in (0.9, 0.6, 1.2, 3.0, 0.2, 0.3, 2.9999999)]
    assert counts[0] == 5  # numpy's end effect
    assert counts[4] == 2


def test_batched_equals_one_by_one():
    lines = random_lines(3, [2, 7, 30, 1000, 3])
    points, lengths = pad_polylines([torch.from_numpy(x) for x in lines])
    batched = resample_by_count(points.reshape(1, 5, *points.shape[1:]), lengths.reshape(1, 5), num_samples=50)[0]
    batched_s, counts_s = resample_by_spacing(points, lengths, spacing=0.5)
    for n, line in enumerate(lines):
        single_p, single_l = pad_polylines([torch.from_numpy(line)])
        torch.testing.assert_close(batched[n], resample_by_count(single_p, single_l, num_samples=50)[0], rtol=0, atol=0)
        one, count = resample_by_spacing(single_p, single_l, spacing=0.5)
        assert int(count[0]) == int(counts_s[n])
        torch.testing.assert_close(batched_s[n, : int(count[0])], one[0, : int(count[0])], rtol=0, atol=0)


def test_degenerate_lines():
    points = torch.tensor([[[1.0, 2.0], [0.0, 0.0]], [[3.0, 3.0], [3.0, 3.0]], [[0.0, 0.0], [0.0, 0.0]]])
    lengths = torch.tensor([1, 2, 0])
    out = resample_by_count(points, lengths, num_samples=4)
    assert torch.equal(out[0], torch.tensor([[1.0, 2.0]] * 4))
    assert torch.equal(out[1], torch.tensor([[3.0, 3.0]] * 4))
    assert torch.equal(out[2], torch.zeros(4, 2))
    _, counts = resample_by_spacing(points, lengths, spacing=0.3)
    assert counts.tolist() == [2, 2, 0]


def test_positions_beyond_the_ends_are_clamped():
    line = torch.tensor([[[0.0, 0.0], [1.0, 0.0]]])
    out = interpolate_at(line, torch.tensor([2]), torch.tensor([[-1.0, 5.0]]))
    assert out[0].tolist() == [[0.0, 0.0], [1.0, 0.0]]


def test_resampling_is_differentiable():
    points = torch.tensor([[[0.0, 0.0], [1.0, 0.3], [2.5, -0.2], [3.0, 1.0]]], dtype=torch.float64, requires_grad=True)
    lengths = torch.tensor([4])
    assert torch.autograd.gradcheck(lambda p: resample_by_count(p, lengths, num_samples=9), (points,))
    assert torch.autograd.gradcheck(lambda p: resample_by_spacing(p, lengths, spacing=0.7)[0], (points,))


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="D = 2 or 3"):
        resample_by_count(torch.zeros(2, 3, 4), torch.tensor([3, 3]), num_samples=5)
    with pytest.raises(ValueError, match="points_lengths"):
        resample_by_count(torch.zeros(2, 3, 2), torch.tensor([3, 4]), num_samples=5)
    with pytest.raises(ValueError, match="max_samples"):
        resample_by_spacing(torch.tensor([[[0.0, 0.0], [1e6, 0.0]]]), torch.tensor([2]), spacing=0.3)
