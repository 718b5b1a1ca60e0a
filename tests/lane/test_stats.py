"""Tests of drivemetrics.lane.stats: Pearson r and p-value against an independent computation."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy import stats as sps

from drivemetrics.lane.stats import correlation_matrix, pearson_r


def test_pearson_matches_textbook_formula():
    rng = np.random.default_rng(0)
    a = rng.normal(size=30)
    b = 0.6 * a + rng.normal(size=30)
    result = pearson_r(torch.from_numpy(a), b.tolist())
    da, db = a - a.mean(), b - b.mean()
    r = float((da * db).sum() / math.sqrt((da**2).sum() * (db**2).sum()))
    t = r * math.sqrt((30 - 2) / (1 - r**2))
    p = 2 * sps.t.sf(abs(t), df=28)
    assert result.r == pytest.approx(r, rel=1e-12)
    assert result.p_value == pytest.approx(p, rel=1e-9)
    assert result.n == 30


def test_perfect_and_anti_correlation():
    x = [1.0, 2.0, 3.0, 5.0]
    assert pearson_r(x, [2 * v + 1 for v in x]).r == pytest.approx(1.0)
    assert pearson_r(x, [-v for v in x]).r == pytest.approx(-1.0)


def test_correlation_matrix_pairs():
    metrics = {"e2e": [0.1, 0.3, 0.2, 0.5], "psld": [0.01, 0.02, 0.025, 0.04], "f1": [0.9, 0.7, 0.8, 0.6]}
    table = correlation_matrix(metrics)
    assert set(table) == {("e2e", "psld"), ("e2e", "f1"), ("psld", "f1")}
    assert table[("e2e", "f1")].r < 0 < table[("e2e", "psld")].r


@pytest.mark.parametrize(
    ("a", "b", "match"),
    [
        ([1.0, 2.0], [1.0, 2.0], "at least 3"),
        ([1.0, 2.0, 3.0], [1.0, 2.0], "one value per scenario"),
        ([1.0, 1.0, 1.0], [1.0, 2.0, 3.0], "constant"),
        ([1.0, float("nan"), 3.0], [1.0, 2.0, 3.0], "NaN"),
        ([[1.0, 2.0, 3.0]], [1.0, 2.0, 3.0], "1-D"),
    ],
)
def test_bad_inputs(a, b, match):
    with pytest.raises(ValueError, match=match):
        pearson_r(a, b)
