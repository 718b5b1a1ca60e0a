"""Shared test fixtures: real-data fixture folder, devices, markers."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

REPO_ROOT = Path(__file__).resolve().parents[1]


def fixtures_root() -> Path | None:
    """``$DRIVEMETRICS_FIXTURES`` or ``../shared/fixtures`` beside the repository, if it exists."""
    env = os.environ.get("DRIVEMETRICS_FIXTURES")
    candidates = [Path(env)] if env else []
    candidates.append(REPO_ROOT.parent / "shared" / "fixtures")
    for path in candidates:
        if path.is_dir():
            return path
    return None


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    """The real-data fixtures folder; skips the test when it is absent."""
    root = fixtures_root()
    if root is None:
        pytest.skip("real fixtures not found: set DRIVEMETRICS_FIXTURES or place them in ../shared/fixtures")
    return root


DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


@pytest.fixture
def pools(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """The pools a command's auto worker policy starts, as ``(jobs, workers)``; their jobs run here, in order.

    The policy itself runs unchanged (on 2 usable cores, weighing a pool after the first job however short it is);
    only the pool it starts is replaced by a loop in this process, so a test sees the decision, not a timing.
    """
    from drivemetrics._internal import pool

    started: list[tuple[int, int]] = []
    auto = pool.map_in_processes

    def in_this_process(fn, jobs, workers, chunksize=None):
        if workers is None:  # the command's call: the real policy decides
            yield from auto(fn, jobs, None, chunksize)
            return
        started.append((len(jobs), workers))
        for job in jobs:
            yield fn(job)

    monkeypatch.setattr(pool, "map_in_processes", in_this_process)
    monkeypatch.setattr(pool, "usable_cores", lambda: 2)
    monkeypatch.setattr(pool, "MEASURE_SECONDS", 0.0)  # weigh a pool after the first job, however short
    return started


@pytest.fixture(params=DEVICES)
def device(request: pytest.FixtureRequest) -> torch.device:
    """Every available device: cpu, and cuda when present."""
    return torch.device(request.param)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if torch.cuda.is_available():
        return
    skip_gpu = pytest.mark.skip(reason="needs CUDA")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip_gpu)
