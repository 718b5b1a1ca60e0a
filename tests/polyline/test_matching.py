"""Greedy matching (nearest-only and fall-back) against a sequential loop; vectorised == loop on random cases."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from drivemetrics.polyline import greedy_match, nearest_target, score_rank
from tests.polyline._reference import ref_greedy


@pytest.mark.parametrize("fallback", [False, True])
@pytest.mark.parametrize("inclusive", [True, False])
def test_equals_the_sequential_loop(fallback, inclusive):
    rng = np.random.default_rng(3)
    thresholds = [0.5, 1.0, 1.5]
    for trial in range(40):
        frames, num_preds, num_targets = 3, int(rng.integers(0, 9)), int(rng.integers(0, 6))
        # distances on a coarse grid so that ties and threshold equality happen
        dist = np.round(rng.uniform(0, 2.5, size=(frames, num_preds, num_targets)) * 4) / 4
        scores = np.round(rng.uniform(size=(frames, num_preds)), 1)  # tied scores too
        valid_p = rng.random((frames, num_preds)) > 0.2
        valid_t = rng.random((frames, num_targets)) > 0.2
        tp = greedy_match(
            torch.from_numpy(dist),
            torch.from_numpy(scores),
            thresholds=thresholds,
            preds_valid=torch.from_numpy(valid_p),
            target_valid=torch.from_numpy(valid_t),
            inclusive=inclusive,
            fallback=fallback,
        )
        assert tp.shape == (frames, num_preds, 3)
        for f in range(frames):
            keep_p, keep_t = np.flatnonzero(valid_p[f]), np.flatnonzero(valid_t[f])
            sub = dist[f][np.ix_(keep_p, keep_t)]
            for k, threshold in enumerate(thresholds):
                expected = np.zeros(num_preds, dtype=bool)
                expected[keep_p] = ref_greedy(sub, scores[f, keep_p], threshold, inclusive, fallback)
                assert tp[f, :, k].tolist() == expected.tolist(), (trial, f, k)


def test_nearest_only_has_no_fallback():
    # both predictions are nearest to target 0; the second is within 1.0 of target 1 but may not take it
    dist = torch.tensor([[0.2, 3.0], [0.1, 0.9]])
    scores = torch.tensor([0.9, 0.5])
    assert greedy_match(dist, scores, thresholds=1.0)[:, 0].tolist() == [True, False]
    assert greedy_match(dist, scores, thresholds=1.0, fallback=True)[:, 0].tolist() == [True, True]


def test_inclusive_threshold_and_first_tie():
    dist = torch.tensor([[0.5, 0.5]])
    assert greedy_match(dist, torch.tensor([1.0]), thresholds=0.5)[0, 0].item() is True
    assert greedy_match(dist, torch.tensor([1.0]), thresholds=0.5, inclusive=False)[0, 0].item() is False
    index, value = nearest_target(torch.tensor([[0.5, 0.5, 0.25, 0.25]]))
    assert index.tolist() == [2]
    assert value.tolist() == [0.25]


def test_stable_rank_and_empty_frames():
    assert score_rank(torch.tensor([0.5, 0.5, 0.9])).tolist() == [1, 2, 0]
    assert greedy_match(torch.zeros(2, 3, 0), torch.ones(2, 3), thresholds=[1.0]).sum() == 0
    assert greedy_match(torch.zeros(2, 3, 0), torch.ones(2, 3), thresholds=[1.0], fallback=True).sum() == 0
    assert greedy_match(torch.zeros(2, 0, 4), torch.ones(2, 0), thresholds=[1.0]).shape == (2, 0, 1)
