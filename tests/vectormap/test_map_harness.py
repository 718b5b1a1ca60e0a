"""The map family in a generic, torchmetrics ``MetricTester``-style harness, with no adapter (issue 37).

torchmetrics' own harness (``unittests._helpers.testers.MetricTester``, not part of the installed package) feeds a
metric ``(preds[i], target[i])`` batch by batch through ``forward`` and checks each batch value and the final
``compute`` against the functional on the same inputs, concatenated along the batch. The harness below does only
that, for any metric whose inputs are tensors or dicts of tensors (torchmetrics' detection containers): it knows
nothing about polylines, so the map family passes it only because ``update(preds, target)`` takes the standard
containers.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from torch import Tensor
from torchmetrics import Metric, MetricCollection

from drivemetrics.vectormap.map_ap import (
    VectorMapAPMetrics,
    VectorMapAveragePrecision,
    VectorMapMeanAveragePrecision,
    vector_map_ap,
)
from drivemetrics.vectormap.protocol import PROTOCOLS

NUM_BATCHES, BATCH_SIZE = 4, 3


def _cat(batches: list) -> Tensor | dict[str, Tensor]:
    """Batches concatenated along dim 0: tensors, or dicts of tensors key by key (what ``MetricTester`` does)."""
    if isinstance(batches[0], dict):
        return {key: torch.cat([b[key] for b in batches]) for key in batches[0]}
    return torch.cat(batches)


def run_metric_tester(
    metric: Metric, functional: Callable[[object, object], Tensor], preds: list, target: list, atol: float = 1e-8
) -> None:
    """Forward every batch (value == functional of the batch), then compute == functional of all batches."""
    for p, t in zip(preds, target, strict=True):
        batch_value = metric(p, t)
        torch.testing.assert_close(batch_value, functional(p, t), atol=atol, rtol=0, equal_nan=True)
    torch.testing.assert_close(
        metric.compute(), functional(_cat(preds), _cat(target)), atol=atol, rtol=0, equal_nan=True
    )


def _map_batches(seed: int) -> tuple[list[dict[str, Tensor]], list[dict[str, Tensor]]]:
    g = torch.Generator().manual_seed(seed)
    preds, target = [], []
    for _ in range(NUM_BATCHES):
        lines = torch.cumsum(torch.randn(BATCH_SIZE, 4, 6, 2, generator=g), 2) * 2  # (B, M, Q, 2) metres
        labels = torch.randint(0, 3, (BATCH_SIZE, 4), generator=g)
        noise = 0.8 * torch.randn(BATCH_SIZE, 4, 1, 2, generator=g)
        preds.append({"points": lines + noise, "labels": labels, "scores": torch.rand(BATCH_SIZE, 4, generator=g)})
        target.append({"points": lines, "labels": labels})
    return preds, target


@pytest.mark.parametrize("protocol", ["default", "nuscenes-maptr", "av2-cvpr23"])
def test_map_family_runs_in_a_generic_harness(protocol):
    preds, target = _map_batches(3)
    run_metric_tester(
        VectorMapMeanAveragePrecision(protocol=protocol),
        lambda p, t: vector_map_ap(p, t, protocol=protocol)["map"],
        preds,
        target,
    )
    divider = PROTOCOLS[protocol].class_names.index("divider")
    run_metric_tester(
        VectorMapAveragePrecision("divider", threshold=1.0, protocol=protocol),
        lambda p, t: vector_map_ap(p, t, protocol=protocol)["ap_per_threshold"][divider, 1],
        preds,
        target,
    )


def test_map_family_in_a_metric_collection_counts_once():
    preds, target = _map_batches(5)
    collection = MetricCollection(
        {"map": VectorMapMeanAveragePrecision(), "divider": VectorMapAveragePrecision("divider")}
    )
    family = VectorMapAPMetrics()
    for p, t in zip(preds, target, strict=True):
        collection.update(p, t)
        family.update(p, t)
    values, expected = collection.compute(), family.compute()
    torch.testing.assert_close(values["map"], expected["map"], equal_nan=True)
    torch.testing.assert_close(values["divider"], expected["ap_divider"], equal_nan=True)
