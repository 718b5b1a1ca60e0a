"""Correlation analysis between metrics over a set of scenarios (the E2E-LD / PSLD paper's Pearson analysis)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np
from scipy import stats
from torch import Tensor

from drivemetrics._internal import arrays as xp

__all__ = ["Correlation", "correlation_matrix", "pearson_r"]


class Correlation(NamedTuple):
    """Pearson correlation ``r`` and its two-sided p-value (null: no linear correlation), with the sample size."""

    r: float
    p_value: float
    n: int


def _as_array(values: Tensor | Sequence[float] | np.ndarray, name: str) -> np.ndarray:
    if xp.is_tensor(values):
        values = values.detach().cpu().double().numpy()
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError(f"`{name}` must be one value per scenario (1-D), got shape {array.shape}")
    if not np.isfinite(array).all():
        raise ValueError(f"`{name}` contains NaN or infinite values")
    return array


def pearson_r(a: Tensor | Sequence[float] | np.ndarray, b: Tensor | Sequence[float] | np.ndarray) -> Correlation:
    """Pearson ``r`` between two metrics evaluated on the same scenarios, with scipy's p-value.

    Args:
        a, b: ``(S,)`` one value per scenario (tensors, arrays or lists), ``S >= 3``.

    Raises:
        ValueError: different lengths, fewer than 3 scenarios, non-finite values, or a constant input (r undefined).
    """
    x, y = _as_array(a, "a"), _as_array(b, "b")
    if x.shape != y.shape:
        raise ValueError(f"`a` and `b` must have one value per scenario each, got {x.shape[0]} and {y.shape[0]}")
    if x.shape[0] < 3:
        raise ValueError(f"need at least 3 scenarios for a p-value, got {x.shape[0]}")
    for name, arr in (("a", x), ("b", y)):
        if np.ptp(arr) == 0:
            raise ValueError(f"`{name}` is constant over the scenarios: Pearson r is undefined")
    result = stats.pearsonr(x, y)
    return Correlation(float(result.statistic), float(result.pvalue), int(x.shape[0]))


def correlation_matrix(
    metrics: Mapping[str, Tensor | Sequence[float] | np.ndarray],
) -> dict[tuple[str, str], Correlation]:
    """Pearson correlation of every pair of named metrics (same scenarios, same order), keyed ``(name_a, name_b)``."""
    names = list(metrics)
    return {
        (first, second): pearson_r(metrics[first], metrics[second])
        for i, first in enumerate(names)
        for second in names[i + 1 :]
    }
