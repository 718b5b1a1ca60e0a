"""The pools of the dataset evaluations: threads for file decoding, processes that stop cleanly on Ctrl-C.

:func:`parallel_map` maps a function over items in ``workers`` threads (file decoding; bounded memory).

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
import itertools
import multiprocessing
import os
import signal
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from typing import Any, TypeVar

import torch

__all__ = ["T", "check_workers", "map_in_processes", "one_torch_thread_per_worker", "parallel_map"]

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


_Item = TypeVar("_Item")


_Result = TypeVar("_Result")


def check_workers(workers: int | None) -> int:
    """``workers`` as a positive int (``None``: ``os.cpu_count()``)."""
    if workers is None:
        return os.cpu_count() or 1
    if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
        raise ValueError(f"`workers` must be a positive int (or None for one per CPU core), got {workers!r}")
    return workers


@contextlib.contextmanager
def one_torch_thread_per_worker() -> Iterator[None]:
    """torch's intra-op threads set to 1 while frames are processed in parallel (restored after).

    Frame-level threads replace op-level ones: a frame's ops are small, and intra-op threads spinning on a busy
    machine cost more CPU than they save (measured: 1.7x the user time with one worker on 2 loaded cores).
    """
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def parallel_map(
    fn: Callable[[_Item], _Result], items: Iterable[_Item], workers: int | None = None
) -> Iterator[_Result]:
    """``fn(item)`` for every item, in order, computed by ``workers`` threads (default: one per CPU core).

    Meant for file decoding (Pillow and torch release the GIL while they work). At most ``2 * workers`` items are
    in flight, so memory stays bounded whatever the number of items; ``workers=1`` runs in the calling thread.
    An exception of ``fn`` is raised here (for the first failing item in order) and the queued items are dropped.
    """
    workers = check_workers(workers)
    if workers == 1:
        yield from map(fn, items)
        return
    pool = ThreadPoolExecutor(workers, thread_name_prefix="drivemetrics-read")
    try:
        todo = iter(items)
        pending = deque(pool.submit(fn, item) for item in itertools.islice(todo, 2 * workers))
        while pending:
            result = pending.popleft().result()
            pending.extend(pool.submit(fn, item) for item in itertools.islice(todo, 1))
            yield result
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
