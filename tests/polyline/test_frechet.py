"""Discrete Frechet kernels against a plain recursion, batched against one by one, and gradients."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from drivemetrics.polyline.frechet import (
    frechet_distance_matrix,
    frechet_distance_pairs,
    soft_frechet_distance_pairs,
)


def plain_frechet(a: np.ndarray, b: np.ndarray) -> float:
    """Textbook table fill, row by row (Eiter and Mannila)."""
    n, m = len(a), len(b)
    table = np.zeros((n, m))
    for i in range(n):
        for j in range(m):
            d = math.dist(a[i], b[j])
            if i == 0 and j == 0:
                table[i, j] = d
            elif i == 0:
                table[i, j] = max(table[i, j - 1], d)
            elif j == 0:
                table[i, j] = max(table[i - 1, j], d)
            else:
                table[i, j] = max(min(table[i - 1, j], table[i - 1, j - 1], table[i, j - 1]), d)
    return float(table[-1, -1])


def random_walk(rng: np.random.Generator, n: int, dim: int = 3) -> np.ndarray:
    return np.cumsum(rng.normal(size=(n, dim)), axis=0)


def test_known_values() -> None:
    a = torch.tensor([[0.0, 0.0], [1.0, 0.0], [2.0, 0.0]], dtype=torch.float64)
    # reversed copy: the endpoints must be coupled, so the distance is the length
    assert frechet_distance_pairs(a, a.flip(0)).item() == pytest.approx(2.0)
    assert frechet_distance_pairs(a, a).item() == 0.0
    # a single point against a polyline: the farthest point
    assert frechet_distance_pairs(a[:1], a).item() == pytest.approx(2.0)


def test_matches_plain_recursion_on_padded_batch() -> None:
    rng = np.random.default_rng(0)
    lengths = [2, 3, 5, 11, 17, 40, 2, 1]
    lines = [random_walk(rng, n) for n in lengths]
    others = [random_walk(rng, n) for n in reversed(lengths)]
    pad = max(lengths)

    def padded(items: list[np.ndarray]) -> torch.Tensor:
        out = np.full((len(items), pad, 3), np.nan)
        for k, x in enumerate(items):
            out[k, : len(x)] = x
        return torch.from_numpy(out)

    got = frechet_distance_pairs(
        padded(lines), padded(others), torch.tensor(lengths), torch.tensor(list(reversed(lengths)))
    )
    want = [plain_frechet(x, y) for x, y in zip(lines, others, strict=True)]
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)


@pytest.mark.slow
def test_thousand_point_lanes() -> None:
    rng = np.random.default_rng(1)
    a, b = random_walk(rng, 1000), random_walk(rng, 731)
    got = frechet_distance_pairs(torch.from_numpy(a)[None], torch.from_numpy(b)[None])
    assert got.item() == pytest.approx(plain_frechet(a, b), abs=1e-10)


def test_matrix_batched_equals_one_by_one() -> None:
    rng = np.random.default_rng(2)
    batch, num_g, num_p, n, m = 3, 4, 5, 9, 13
    target = torch.from_numpy(rng.normal(size=(batch, num_g, n, 3)))
    preds = torch.from_numpy(rng.normal(size=(batch, num_p, m, 3)))
    t_len = torch.from_numpy(rng.integers(1, n + 1, size=(batch, num_g)))
    p_len = torch.from_numpy(rng.integers(2, m + 1, size=(batch, num_p)))
    p_len[0, 1] = 0  # an absent prediction
    matrix = frechet_distance_matrix(preds, p_len, target, t_len, chunk_pairs=7)
    assert matrix.shape == (batch, num_p, num_g)
    for s in range(batch):
        for g in range(num_g):
            for p in range(num_p):
                if p_len[s, p] == 0:
                    assert matrix[s, p, g].item() == float("inf")
                    continue
                one = plain_frechet(target[s, g, : t_len[s, g]].numpy(), preds[s, p, : p_len[s, p]].numpy())
                assert matrix[s, p, g].item() == pytest.approx(one, abs=1e-12)


def test_float32_and_empty() -> None:
    preds = torch.zeros(2, 0, 4, 3)
    target = torch.zeros(2, 3, 5, 3)
    assert frechet_distance_matrix(preds, None, target, None).shape == (2, 0, 3)
    a = torch.tensor([[0.0, 0.0], [3.0, 4.0]])
    assert frechet_distance_pairs(a, a + 1).dtype == torch.float32


def test_bad_inputs() -> None:
    with pytest.raises(ValueError, match="a_lengths"):
        frechet_distance_pairs(torch.zeros(2, 3, 2), torch.zeros(2, 3, 2), torch.tensor([0, 3]))
    with pytest.raises(ValueError, match="same leading"):
        frechet_distance_pairs(torch.zeros(2, 3, 2), torch.zeros(3, 3, 2))
    with pytest.raises(ValueError, match="gamma"):
        soft_frechet_distance_pairs(torch.zeros(3, 2), torch.zeros(3, 2), gamma=0.0)


def test_soft_tends_to_hard_and_gradcheck() -> None:
    rng = np.random.default_rng(3)
    a = torch.from_numpy(random_walk(rng, 6, 2))
    b = torch.from_numpy(random_walk(rng, 4, 2))
    hard = frechet_distance_pairs(a, b).item()
    soft = soft_frechet_distance_pairs(a, b, gamma=1e-4).item()
    assert soft == pytest.approx(hard, abs=1e-2)
    a.requires_grad_(True)
    b.requires_grad_(True)
    assert torch.autograd.gradcheck(lambda x, y: soft_frechet_distance_pairs(x, y, gamma=0.3), (a, b))
    # padded entries get no gradient and do not change the value
    pad = torch.cat([b.detach(), torch.full((3, 2), float("nan"), dtype=torch.float64)]).requires_grad_(True)
    value = soft_frechet_distance_pairs(a, pad, b_lengths=torch.tensor(4), gamma=0.3)
    value.backward()
    assert torch.isfinite(pad.grad).all()
    assert (pad.grad[4:] == 0).all()
    assert value.item() == pytest.approx(soft_frechet_distance_pairs(a, b, gamma=0.3).item(), abs=1e-12)


def _lane_pairs(rng: np.random.Generator, k: int, n: int, m: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Smooth lanes and perturbed copies resampled to ``m`` points: shifted along and across, noisy, some reversed
    or truncated, so that the bands of the bounded kernel are proven exact in some pairs and not in others."""
    s = np.linspace(0, 1, n)[:, None]
    start = rng.normal(scale=5, size=(k, 1, 3))
    heading = rng.normal(size=(k, 1, 3)) * [1, 1, 0.05]
    a = start + s * heading * rng.uniform(10, 40, size=(k, 1, 1)) + np.sin(3 * s) * rng.normal(size=(k, 1, 3))
    t = np.linspace(0, 1, m)
    b = np.stack(
        [np.stack([np.interp(t * rng.uniform(0.6, 1), s[:, 0], a[i, :, c]) for c in range(3)], 1) for i in range(k)]
    )
    b = (
        b
        + rng.normal(scale=1.5, size=(k, 1, 3))
        + rng.normal(scale=0.2, size=(k, m, 3)) * (rng.random((k, 1, 1)) < 0.5)
    )
    b[::7] = b[::7, ::-1]
    return torch.from_numpy(a), torch.from_numpy(np.ascontiguousarray(b))


@pytest.mark.parametrize(("n", "m"), [(201, 201), (60, 25), (25, 60), (3, 40)])
def test_bounded_bands_equal_the_full_programme(n: int, m: int) -> None:
    from drivemetrics.polyline.frechet import bounded_frechet_distance_pairs

    rng = np.random.default_rng(n * 1000 + m)
    a, b = _lane_pairs(rng, 40, n, m)
    a_len = torch.from_numpy(rng.integers(max(1, n // 2), n + 1, size=40))
    b_len = torch.from_numpy(rng.integers(max(1, m // 2), m + 1, size=40))
    full = frechet_distance_pairs(a, b, a_len, b_len)
    for widths in ((1,), (2, 8, 24), (4,)):
        assert torch.equal(bounded_frechet_distance_pairs(a, b, a_len, b_len, band_widths=widths), full)
        for bound in (2.0, 4.0):
            got = bounded_frechet_distance_pairs(a, b, a_len, b_len, max_distance=bound, band_widths=widths)
            assert torch.equal(got[full <= bound], full[full <= bound])
            assert bool(((got == full) | torch.isinf(got))[full > bound].all())
    # the plain table agrees (to rounding) on a few pairs
    for i in range(0, 40, 13):
        want = plain_frechet(a[i, : a_len[i]].numpy(), b[i, : b_len[i]].numpy())
        assert full[i].item() == pytest.approx(want, rel=1e-12)


def test_band_proof_paths() -> None:
    """A translated copy is decided by its end points in the narrowest band, a lane whose coupling leaves the band
    is handed on (the value stays exact), and a pair far beyond the bound is rejected."""
    from drivemetrics.polyline.bounded_frechet import _band_frechet

    s = torch.linspace(0, 30, 61, dtype=torch.float64)
    lane = torch.stack([s, torch.zeros_like(s), torch.zeros_like(s)], 1)
    shifted = lane + torch.tensor([2.0, 1.0, 0.0], dtype=torch.float64)  # along and across: end points decide
    # the second line has the same path, sampled densely first and sparsely after: the optimal coupling follows
    # the arc length, far from the proportional band
    uneven = torch.cat(
        [torch.linspace(0, 10, 41, dtype=torch.float64)[:-1], torch.linspace(10, 30, 21, dtype=torch.float64)]
    )
    lingering = torch.stack([uneven, torch.full_like(uneven, 0.5), torch.zeros_like(uneven)], 1)
    far = lane + torch.tensor([0.0, 50.0, 0.0], dtype=torch.float64)
    a = torch.stack([lane, lane, lane])
    b = torch.stack([shifted, lingering, far])
    lengths = torch.full((3,), 61)
    values, decided = _band_frechet(a, b, lengths, lengths, 2, torch.full((3,), 10.0, dtype=torch.float64))
    want = frechet_distance_pairs(a, b)
    assert decided.tolist() == [True, False, True]
    assert values[0].item() == want[0].item() == pytest.approx(math.sqrt(5))
    assert values[1].item() >= want[1].item()  # a band value is an upper bound
    assert math.isinf(values[2].item())
