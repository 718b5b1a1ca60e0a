"""A process pool for dataset evaluation that stops cleanly on Ctrl-C.

:func:`map_in_processes` maps a picklable function over jobs in ``workers`` spawned processes (spawn, not fork:
forking a process that already runs torch / OpenMP threads can deadlock the children), yields results in job
order, and on ``KeyboardInterrupt`` (or any error) cancels the queued jobs and terminates the workers before the
exception propagates, so no worker outlives the command and the command writes no partial output.

Only the parent handles Ctrl-C: a terminal sends SIGINT to the whole process group, and a worker that got it would
print its own ``KeyboardInterrupt`` traceback (most visibly while it is still starting up and importing). The
workers are started with SIGINT blocked (the signal mask survives ``fork`` + ``exec``, so even a worker's
interpreter start-up never sees it) and their initializer ignores it. The parent is not deaf meanwhile: a SIGINT
taken by another of its threads raises ``KeyboardInterrupt`` at once, one aimed at the blocked thread as soon as
the workers are started; either way the workers are terminated.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import signal
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


def _ignore_sigint() -> None:
    """Worker initializer: the parent handles Ctrl-C (and terminates the workers)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@contextlib.contextmanager
def _sigint_blocked() -> Iterator[None]:
    """Block SIGINT in this thread (processes started meanwhile inherit the mask); a pending one fires on exit."""
    if not hasattr(signal, "pthread_sigmask"):  # Windows: no signal masks (and no process-group Ctrl-C storm)
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def map_in_processes(fn: Callable[[Any], T], jobs: Sequence[Any], workers: int, chunksize: int = 1) -> Iterator[T]:
    """``fn(job)`` for every job, in order; ``workers == 1`` (or one job) runs in this process."""
    if workers < 1:
        raise ValueError(f"`workers` must be >= 1, got {workers}")
    if workers == 1 or len(jobs) <= 1:
        for job in jobs:
            yield fn(job)
        return
    pool = ProcessPoolExecutor(
        max_workers=min(workers, len(jobs)),
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_ignore_sigint,
    )
    try:
        with _sigint_blocked():  # map submits every chunk now, which starts the workers (spawn: on demand)
            results = pool.map(fn, jobs, chunksize=chunksize)
        yield from results
    except BaseException:
        processes = list((pool._processes or {}).values())
        pool.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            process.terminate()
        for process in processes:
            process.join(timeout=5)
        raise
    pool.shutdown(wait=True)
