"""Options of the shared core that OpenLane-V2 needs: matched target index, float32 11-point grid, closing point."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from drivemetrics.polyline import (
    average_precision_11point,
    drop_closing_point,
    greedy_match,
    greedy_match_index,
    interpolated_precision_11point,
)
from drivemetrics.polyline.frechet import bounded_frechet_distance_pairs, frechet_distance_pairs


def _loop_index(dist: np.ndarray, scores: np.ndarray, threshold: float, inclusive: bool, fallback: bool) -> list[int]:
    """Sequential greedy matching (dist (P, G)), the matched target per prediction or -1."""
    num_preds, num_targets = dist.shape
    match = [-1] * num_preds
    taken = [False] * num_targets
    for i in sorted(range(num_preds), key=lambda k: -scores[k]):
        if num_targets == 0:
            continue
        if fallback:
            best, best_j = math.inf, -1
            for j in range(num_targets):
                ok = dist[i, j] <= threshold if inclusive else dist[i, j] < threshold
                if ok and not taken[j] and dist[i, j] < best:
                    best, best_j = dist[i, j], j
        else:
            best_j = int(np.argmin(dist[i]))
            ok = dist[i, best_j] <= threshold if inclusive else dist[i, best_j] < threshold
            best_j = best_j if ok and not taken[best_j] else -1
        if best_j >= 0:
            match[i] = best_j
            taken[best_j] = True
    return match


@pytest.mark.parametrize("fallback", [False, True])
@pytest.mark.parametrize("inclusive", [True, False])
def test_greedy_match_index_equals_the_loop_and_the_flags(fallback: bool, inclusive: bool) -> None:
    rng = np.random.default_rng(7)
    thresholds = [0.5, 1.0, 1.5]
    for _ in range(30):
        frames, num_preds, num_targets = 3, int(rng.integers(0, 8)), int(rng.integers(0, 6))
        dist = np.round(rng.uniform(0, 2.5, size=(frames, num_preds, num_targets)) * 4) / 4  # ties
        scores = np.round(rng.uniform(size=(frames, num_preds)), 1)
        args = (torch.from_numpy(dist), torch.from_numpy(scores))
        index = greedy_match_index(*args, thresholds=thresholds, inclusive=inclusive, fallback=fallback)
        flags = greedy_match(*args, thresholds=thresholds, inclusive=inclusive, fallback=fallback)
        assert torch.equal(index >= 0, flags)
        for f in range(frames):
            for k, threshold in enumerate(thresholds):
                want = _loop_index(dist[f], scores[f], threshold, inclusive, fallback)
                assert index[f, :, k].tolist() == want


def test_greedy_match_index_ignores_padding() -> None:
    dist = torch.tensor([[[0.1, 0.2], [0.3, 0.05]]])
    scores = torch.tensor([[0.9, 0.8]])
    index = greedy_match_index(dist, scores, thresholds=[1.0], target_valid=torch.tensor([[False, True]]))
    assert index[0, :, 0].tolist() == [1, -1]  # both point at target 1; the higher score takes it
    valid = torch.tensor([[False, True]])
    index = greedy_match_index(dist, scores, thresholds=[1.0], preds_valid=valid, fallback=True)
    assert index[0, :, 0].tolist() == [-1, 1]


def test_float32_grid_reaches_seven_tenths() -> None:
    precision = torch.tensor([1.0, 0.5], dtype=torch.float32)
    recall = torch.tensor([0.3, 0.7], dtype=torch.float32)  # float32(0.7) < 0.7000000000000001 in float64
    in64 = interpolated_precision_11point(precision, recall)
    in32 = interpolated_precision_11point(precision, recall, compare_dtype=torch.float32)
    assert in64[7].item() == 0.0
    assert in32[7].item() == 0.5
    # 4 levels at 1, 4 at 0.5 (float32 grid) vs 3 at 0.5 (float64 grid)
    ap32 = average_precision_11point(precision, recall, dtype=torch.float32, compare_dtype=torch.float32)
    assert ap32.item() == pytest.approx(6 / 11, abs=1e-7)
    assert average_precision_11point(precision, recall).item() == pytest.approx(5.5 / 11, abs=1e-7)


def test_drop_closing_point_min_points() -> None:
    points = torch.tensor([[[1.0, 2.0], [1.0, 2.0], [0.0, 0.0]], [[0.0, 0.0], [1.0, 0.0], [0.0, 0.0]]])
    lengths = torch.tensor([2, 3])
    assert drop_closing_point(points, lengths).tolist() == [2, 2]
    assert drop_closing_point(points, lengths, min_points=2).tolist() == [1, 2]
    assert drop_closing_point(points, torch.tensor([1, 3]), min_points=2).tolist() == [1, 2]  # 1 point stays


@pytest.mark.parametrize(("n", "m"), [(2, 2), (11, 7), (1, 5), (30, 1), (40, 40)])
def test_bounded_frechet_is_exact_below_the_bound(n: int, m: int) -> None:
    gen = torch.Generator().manual_seed(n * 100 + m)
    k = 60
    a = torch.randn(k, n, 3, dtype=torch.float64, generator=gen).cumsum(1)
    b = a[:, :1] + torch.randn(k, m, 3, dtype=torch.float64, generator=gen).cumsum(1)
    a_len = torch.randint(1, n + 1, (k,), generator=gen)
    b_len = torch.randint(1, m + 1, (k,), generator=gen)
    want = frechet_distance_pairs(a, b, a_len, b_len)
    assert torch.equal(bounded_frechet_distance_pairs(a, b, a_len, b_len), want)
    for bound in (want.median(), want * torch.rand(k, generator=gen, dtype=torch.float64) * 2):
        got = bounded_frechet_distance_pairs(a, b, a_len, b_len, max_distance=bound, check_every=2)
        below = want <= bound
        assert torch.equal(got[below], want[below])
        assert bool(((got == want) | torch.isinf(got))[~below].all())
    # a 2-point lane against a shifted copy: distance 1 exactly, dropped below 1
    line = torch.tensor([[[0.0, 0.0], [4.0, 0.0]]])
    assert bounded_frechet_distance_pairs(line, line + torch.tensor([0.0, 1.0]), max_distance=1.0).tolist() == [1.0]
    assert math.isinf(bounded_frechet_distance_pairs(line, line + torch.tensor([0.0, 1.0]), max_distance=0.9)[0])
