"""The worker policy of the process pool: one process for small inputs, a pool only where the measured work pays."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

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


def test_a_pool_pays_only_when_the_work_outweighs_its_start_up():
    start = WORKER_START_SECONDS
    assert not pool_pays(0.35, 2)  # OpenLane-V2, 1,000 frames of 11-point lanes in one process
    assert not pool_pays(4 * start * 0.99, 2)  # two workers halve the work: it must exceed 4 start-ups
    assert pool_pays(4 * start * 1.01, 2)
    assert pool_pays(3 * start * 1.01, 3)
    assert not pool_pays(3 * start * 0.99, 3)
    assert not pool_pays(1e6, 1)


@pytest.mark.slow
def test_auto_workers_start_a_pool_once_the_measured_jobs_say_it_pays(monkeypatch):
    monkeypatch.setattr(pool, "WORKER_START_SECONDS", 0.01)
    monkeypatch.setattr(pool, "idle_cores", lambda: 2)
    out = list(map_in_processes(_slow_where, [0, 1, 2, 3], None))
    assert [job for job, _ in out] == [0, 1, 2, 3]
    assert out[0][1] == os.getpid()  # the first job is timed here
    assert all(pid != os.getpid() for _, pid in out[1:])  # the rest went to the pool


def test_auto_workers_start_no_pool_when_other_work_fills_the_cores(monkeypatch):
    monkeypatch.setattr(pool, "WORKER_START_SECONDS", 0.0)
    monkeypatch.setattr(pool, "FORK_START_SECONDS", 0.0)
    monkeypatch.setattr(pool, "pool_pays", lambda *args: True)  # the work alone would pay for a pool
    monkeypatch.setattr(pool, "usable_cores", lambda: 2)
    monkeypatch.setattr(os, "getloadavg", lambda: (8.0, 8.0, 8.0))  # two cores, load 8
    assert pool.idle_cores() == 1
    assert list(map_in_processes(_where, list(range(4)), None)) == [(k, os.getpid()) for k in range(4)]
    monkeypatch.setattr(os, "getloadavg", lambda: (1.2, 1.0, 1.0))  # only this process: both cores idle
    assert pool.idle_cores() == 2


def test_workers_are_checked():
    with pytest.raises(ValueError, match="workers"):
        list(map_in_processes(_where, [1, 2], 0))


_FORKED_POOL = r"""
import os, sys
from drivemetrics._internal.pool import map_in_processes

# lambdas do not pickle: only workers that inherit the function and the jobs (fork) can run them
jobs = [lambda k=k: k * k for k in range(6)]
results = list(map_in_processes(lambda job: (job(), os.getpid()), jobs, 2))
assert [value for value, _ in results] == [k * k for k in range(6)], results
assert os.getpid() not in {pid for _, pid in results}, "the jobs ran in worker processes"
assert "torch" not in sys.modules
print("ok")
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forked workers are Linux-only")
def test_a_process_without_torch_forks_workers_that_inherit_the_jobs():
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1]), "OMP_NUM_THREADS": "1"}
    env.pop("DRIVEMETRICS_READ_AHEAD", None)
    done = subprocess.run([sys.executable, "-c", _FORKED_POOL], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_with_torch_imported_the_workers_are_spawned():
    import torch  # noqa: F401 - forking a process that runs torch threads is unsafe

    assert not pool.fork_is_safe()
