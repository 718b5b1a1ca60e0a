"""A process pool for dataset evaluation that stops cleanly on Ctrl-C.

:func:`map_in_processes` maps a picklable function over jobs in ``workers`` spawned processes (spawn, not fork:
forking a process that already runs torch / OpenMP threads can deadlock the children), yields results in job
order, and on ``KeyboardInterrupt`` (or any error) cancels the queued jobs and terminates the workers before the
exception propagates, so no worker outlives the command and the command writes no partial output.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


def map_in_processes(fn: Callable[[Any], T], jobs: Sequence[Any], workers: int, chunksize: int = 1) -> Iterator[T]:
    """``fn(job)`` for every job, in order; ``workers == 1`` (or one job) runs in this process."""
    if workers < 1:
        raise ValueError(f"`workers` must be >= 1, got {workers}")
    if workers == 1 or len(jobs) <= 1:
        for job in jobs:
            yield fn(job)
        return
    pool = ProcessPoolExecutor(max_workers=min(workers, len(jobs)), mp_context=multiprocessing.get_context("spawn"))
    try:
        yield from pool.map(fn, jobs, chunksize=chunksize)
    except BaseException:
        processes = list((pool._processes or {}).values())
        pool.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            process.terminate()
        for process in processes:
            process.join(timeout=5)
        raise
    pool.shutdown(wait=True)
