"""Shared pieces of the ``torchmetrics.Metric`` classes: scalar views of dict metrics, config keys and ``plot``.

A dict-returning Metric (``compute() -> {"precision": ..., "recall": ..., "f1": ...}``) cannot be logged with
Lightning's ``self.log(name, metric)``. Its scalar classes are ordinary subclasses with their own ``__init__`` that
override ``compute`` (and ``plot`` with :func:`plot_metric`), so they keep the family's states (same names, shapes
and reductions) and return one value: a ``MetricCollection`` of several scalar classes of one family then counts
once per batch (torchmetrics compute groups).

Compute groups are formed by comparing state values after the first update, so two metrics of one family that
count differently (another threshold, another image size, ...) could be merged by accident when their first
counts coincide. :func:`add_config_state` adds a constant state derived from the counting options to prevent it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor
from torchmetrics import Metric

__all__ = ["add_config_state", "config_key", "plot_metric"]

CONFIG_STATE = "config_key"


def config_key(config: object) -> Tensor:
    """An int64 tensor of 8 values in 0..255 identifying ``repr(config)`` (a sha256 prefix).

    Small integers, so torchmetrics' ``allclose`` state comparison tells any two different keys apart.
    """
    digest = hashlib.sha256(repr(config).encode("utf-8")).digest()[:8]
    return torch.tensor(list(digest), dtype=torch.int64)


def add_config_state(metric: Metric, config: object) -> None:
    """Add the constant state ``config_key`` (see :func:`config_key`) to ``metric``, once.

    ``config`` holds everything that changes what the metric counts (not what ``compute`` reads from the counts).
    The state is reduced with ``max`` (equal on every process) and restored by ``reset``.
    """
    if CONFIG_STATE not in metric._defaults:
        metric.add_state(CONFIG_STATE, config_key(config), dist_reduce_fx="max")


def plot_metric(metric: Metric, val: Any = None, ax: Any = None) -> tuple[Any, Any]:
    """torchmetrics' ``plot``: a value, a sequence of values (one per epoch) or a dict of scalars, with matplotlib.

    Args:
        metric: the metric whose name, bounds and ``higher_is_better`` label the plot.
        val: a value from ``compute`` / ``forward``, or a sequence of them; default: ``metric.compute()``.
        ax: matplotlib axes to draw into (default: a new figure).

    Returns:
        ``(figure, axes)``.
    """
    try:
        import matplotlib.pyplot  # noqa: F401
    except ModuleNotFoundError as error:  # pragma: no cover - matplotlib is an optional extra
        raise ModuleNotFoundError("plot() needs matplotlib: pip install 'drivemetrics[plot]'") from error
    if isinstance(val, Sequence) and not isinstance(val, (str, Tensor)):
        val = list(val)
    return metric._plot(val, ax)
