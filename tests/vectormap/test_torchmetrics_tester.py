"""The map family in torchmetrics' own ``MetricTester``, with no adapter (issue 37).

``MetricTester`` lives in torchmetrics' repository, not in its wheel: set ``TORCHMETRICS_TESTS`` to the ``tests``
folder of a torchmetrics checkout at the installed version (``git archive v<version> tests``); without it the module
is skipped. The tester feeds ``metric(preds[i], target[i])`` batch by batch (``preds[i]`` a list of per-frame dicts,
torchmetrics' detection convention), pickles and clones the metric (its TorchScript check is off: drivemetrics does
not support TorchScript, as docs/pages/logging.md says), and compares each batch value and the
final ``compute`` (also across two gloo processes) with a reference on all frames, which it builds by flattening
the per-batch lists. The classes and ``vector_map_ap`` receive those lists as they are. The reference is
``vector_map_ap`` on the batched form, padded by hand below (the comparator's own input, not the metric's), so a
difference between the two input forms, or in accumulating and syncing the ragged state, fails here.
"""

from __future__ import annotations

import importlib
import multiprocessing
import os
import sys
import tempfile
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import Tensor

from drivemetrics.vectormap.map_ap import (
    VectorMapAPMetrics,
    VectorMapAveragePrecision,
    VectorMapMeanAveragePrecision,
    vector_map_ap,
)
from drivemetrics.vectormap.protocol import PROTOCOLS
from tests.vectormap.padding import pad_by_hand

_TESTS = os.environ.get("TORCHMETRICS_TESTS", "")
if not _TESTS or not (Path(_TESTS) / "unittests" / "_helpers" / "testers.py").is_file():
    pytest.skip(
        "set TORCHMETRICS_TESTS to the `tests` folder of a torchmetrics checkout (it holds MetricTester)",
        allow_module_level=True,
    )


def _import_tester() -> Any:
    """``unittests`` from the checkout; its import sets the process-wide start method and sharing strategy
    (``unittests/conftest.py``), which are put back. ``cachier`` (torchmetrics' test requirement, an on-disk cache
    of reference results) gets a no-op stand-in where it is not installed, on ``sys.path`` so that the spawned
    DDP workers find it too; installed, its cache is switched off (it keys on the reference function's name only,
    so two protocols would share a result)."""
    if _TESTS not in sys.path:
        sys.path.insert(0, _TESTS)
    try:
        import cachier
    except ImportError:
        stub = Path(tempfile.mkdtemp(prefix="cachier-stub-"))
        (stub / "cachier.py").write_text(
            "def cachier(*args, **kwargs):\n    return lambda f: f\n\n\ndef disable_caching():\n    pass\n",
            encoding="utf-8",
        )
        sys.path.insert(0, str(stub))
    else:
        cachier.disable_caching()
    start_method = multiprocessing.get_start_method(allow_none=True)
    sharing = torch.multiprocessing.get_sharing_strategy()
    try:
        return importlib.import_module("unittests._helpers.testers")
    finally:
        multiprocessing.set_start_method(start_method, force=True)
        torch.multiprocessing.set_sharing_strategy(sharing)


testers = _import_tester()
MetricTester = testers.MetricTester
NUM_PROCESSES = testers.NUM_PROCESSES
NUM_BATCHES = 2 * NUM_PROCESSES  # divisible by the processes, as the tester requires
FRAMES_PER_BATCH = 3


def _per_frame_batches(seed: int) -> tuple[list[list[dict[str, Tensor]]], list[list[dict[str, Tensor]]]]:
    """``NUM_BATCHES`` lists of per-frame dicts; frames differ in line and point counts (ragged)."""
    g = torch.Generator().manual_seed(seed)
    preds, target = [], []
    for _ in range(NUM_BATCHES):
        batch_p, batch_t = [], []
        for _ in range(FRAMES_PER_BATCH):
            lines, points = int(torch.randint(1, 6, (1,), generator=g)), int(torch.randint(2, 8, (1,), generator=g))
            gt = torch.cumsum(torch.randn(lines, points, 2, generator=g), 1) * 2  # (M, Q, 2) metres
            labels = torch.randint(0, 3, (lines,), generator=g)
            noise = 0.8 * torch.randn(lines, 1, 2, generator=g)
            batch_p.append({"points": gt + noise, "labels": labels, "scores": torch.rand(lines, generator=g)})
            batch_t.append({"points": gt, "labels": labels})
        preds.append(batch_p)
        target.append(batch_t)
    return preds, target


def _reference(preds: list, target: list, protocol: str) -> dict[str, Tensor]:
    return vector_map_ap(pad_by_hand(preds), pad_by_hand(target), protocol=protocol)


def _reference_map(preds: list, target: list, protocol: str) -> Tensor:
    return _reference(preds, target, protocol)["map"]


def _reference_divider_at_1(preds: list, target: list, protocol: str) -> Tensor:
    return _reference(preds, target, protocol)["ap_per_threshold"][PROTOCOLS[protocol].class_names.index("divider"), 1]


def _reference_family(preds: list, target: list, protocol: str) -> dict[str, Tensor]:
    """The family's dict keys (``map``, ``ap_<class>``, ``ap_<class>_<thr>``) from the functional's tensors."""
    out = _reference(preds, target, protocol)
    result = {"map": out["map"]}
    for c, name in enumerate(PROTOCOLS[protocol].class_names):
        result[f"ap_{name}"] = out["ap"][c]
        for t, threshold in enumerate(PROTOCOLS[protocol].thresholds):
            result[f"ap_{name}_{threshold:g}"] = out["ap_per_threshold"][c, t]
    return result


_CASES = [
    (VectorMapMeanAveragePrecision, {}, _reference_map),
    (VectorMapAveragePrecision, {"class_name": "divider", "threshold": 1.0}, _reference_divider_at_1),
    (VectorMapAPMetrics, {}, _reference_family),
]


class _BoundedPool:
    """``pytest.pool`` for ``run_class_metric_test(ddp=True)``: torchmetrics' session pool of gloo processes, but a
    rank that fails before a collective leaves the other waiting (gloo's timeout is 30 minutes), so each call gets
    ``DDP_SECONDS`` and then fails, and the pool is not used again."""

    def __init__(self, pool: Any) -> None:
        self.pool, self.broken = pool, False

    def starmap(self, task: Any, ranks: list[tuple[int, int]]) -> list[Any]:
        if self.broken:
            pytest.fail("the DDP pool timed out in an earlier test")
        try:
            return self.pool.starmap_async(task, ranks).get(timeout=DDP_SECONDS)
        except multiprocessing.TimeoutError:
            self.broken = True
            pytest.fail(f"the DDP ranks did not finish in {DDP_SECONDS} s (one rank failed before a collective?)")


DDP_SECONDS = 120


@pytest.fixture(scope="module")
def ddp_pool():
    """Two gloo processes in ``pytest.pool``, as torchmetrics' ``conftest.pytest_sessionstart`` makes them."""
    pool = torch.multiprocessing.get_context("spawn").Pool(processes=NUM_PROCESSES)
    try:
        setup_ddp = importlib.import_module("unittests").setup_ddp
        pool.starmap_async(setup_ddp, [(rank, NUM_PROCESSES) for rank in range(NUM_PROCESSES)]).get(DDP_SECONDS)
        pytest.pool = _BoundedPool(pool)
        yield pool
    finally:
        if hasattr(pytest, "pool"):
            del pytest.pool
        pool.terminate()
        pool.join()


@pytest.mark.parametrize("protocol", ["default", "av2-cvpr23"])
class TestVectorMapInMetricTester(MetricTester):
    atol = 1e-12

    def _run_class(self, ddp, seed, protocol, metric_class, metric_args, reference):
        preds, target = _per_frame_batches(seed)
        self.run_class_metric_test(
            ddp=ddp,
            preds=preds,
            target=target,
            metric_class=metric_class,
            reference_metric=partial(reference, protocol=protocol),
            metric_args={**metric_args, "protocol": protocol},
            check_scriptable=False,  # TorchScript is not supported (docs/pages/logging.md; the battery pins it)
        )

    @pytest.mark.parametrize(("metric_class", "metric_args", "reference"), _CASES)
    def test_class(self, protocol, metric_class, metric_args, reference):
        self._run_class(False, 7, protocol, metric_class, metric_args, reference)

    @pytest.mark.parametrize(("metric_class", "metric_args", "reference"), _CASES)
    def test_class_ddp(self, ddp_pool, protocol, metric_class, metric_args, reference):
        self._run_class(True, 8, protocol, metric_class, metric_args, reference)

    def test_functional(self, protocol):
        preds, target = _per_frame_batches(9)
        self.run_functional_metric_test(
            preds=preds,
            target=target,
            metric_functional=vector_map_ap,
            reference_metric=partial(_reference, protocol=protocol),
            metric_args={"protocol": protocol},
        )
