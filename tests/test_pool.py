"""The worker policy of the process pool: one process for small inputs, a pool only where the measured work pays."""

from __future__ import annotations

import os
import time

import pytest

from drivemetrics._internal import pool
from drivemetrics._internal.pool import WORKER_START_SECONDS, map_in_processes, pool_pays


def _where(job: int) -> tuple[int, int]:
    return job, os.getpid()


def _slow_where(job: int) -> tuple[int, int]:
    time.sleep(0.2)
    return job, os.getpid()


def test_auto_workers_score_a_tiny_input_in_this_process():
    assert list(map_in_processes(_where, list(range(6)), None)) == [(k, os.getpid()) for k in range(6)]


def test_a_pool_pays_only_when_the_work_outweighs_its_start_up(monkeypatch):
    monkeypatch.setattr(pool, "usable_cores", lambda: 2)
    monkeypatch.setattr(os, "getloadavg", lambda: (1.0, 1.0, 1.0))  # an idle machine (this process only)
    start = WORKER_START_SECONDS
    assert not pool_pays(0.35, 2)  # OpenLane-V2, 1,000 frames of 11-point lanes in one process
    assert not pool_pays(4 * start * 0.99, 2)  # two workers halve the work: it must exceed 4 start-ups
    assert pool_pays(4 * start * 1.01, 2)
    assert pool_pays(3 * start * 1.01, 3)
    assert not pool_pays(3 * start * 0.99, 3)
    assert not pool_pays(1e6, 1)


def test_on_a_busy_machine_a_pool_must_save_its_stretched_start_up(monkeypatch):
    """Load 8 on 2 cores stretches the measured work and a worker's start-up alike (4x), and the two workers start
    on busy cores (their start-ups add up): the pool needs 8x the idle machine's work."""
    monkeypatch.setattr(pool, "usable_cores", lambda: 2)
    monkeypatch.setattr(os, "getloadavg", lambda: (8.0, 8.0, 8.0))
    assert pool.load_slowdown() == 4.0
    start = WORKER_START_SECONDS
    assert not pool_pays(4 * start * 1.01, 2)  # pays on an idle machine (above), not here
    assert not pool_pays(32 * start * 0.99, 2)
    assert pool_pays(32 * start * 1.01, 2)
    monkeypatch.setattr(os, "getloadavg", lambda: (0.3, 0.3, 0.3))
    assert pool.load_slowdown() == 1.0  # never below 1


@pytest.mark.slow
def test_auto_workers_start_a_pool_once_the_measured_jobs_say_it_pays(monkeypatch):
    monkeypatch.setattr(pool, "WORKER_START_SECONDS", 0.01)
    monkeypatch.setattr(pool, "load_slowdown", lambda: 1.0)
    monkeypatch.setattr(pool, "usable_cores", lambda: 2)
    out = list(map_in_processes(_slow_where, [0, 1, 2, 3], None))
    assert [job for job, _ in out] == [0, 1, 2, 3]
    assert out[0][1] == os.getpid()  # the first job is timed here
    assert all(pid != os.getpid() for _, pid in out[1:])  # the rest went to the pool


def test_workers_are_checked():
    with pytest.raises(ValueError, match="workers"):
        list(map_in_processes(_where, [1, 2], 0))
