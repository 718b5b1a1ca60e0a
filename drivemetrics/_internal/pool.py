"""The pools of the dataset evaluations: threads for file decoding, processes that stop cleanly on Ctrl-C.

:func:`parallel_map` maps a function over items in ``workers`` threads (file decoding; bounded memory).

:func:`map_in_processes` maps a picklable function over jobs in ``workers`` spawned processes (spawn, not fork:
forking a process that already runs torch / OpenMP threads can deadlock the children; a process without torch and
without other threads, such as ``openlanev2-eval`` on numpy arrays, forks its workers instead: they inherit the
function and the jobs, so only job numbers go out and results come back, and a worker costs milliseconds), yields
results in job order, and on ``KeyboardInterrupt`` (or any error) cancels the queued jobs and terminates the
workers before the exception propagates, so no worker outlives the command and the command writes no partial output.

``workers=None`` lets a measured cost model choose (:func:`pool_pays`): the jobs run in this process, each one
timed, and a pool is started for the jobs left only once their measured cost says that it saves more than a
worker's start-up (:data:`WORKER_START_SECONDS`: a fresh interpreter importing torch and the command's module;
:data:`FORK_START_SECONDS` for a forked one).
The pool gets only the cores other processes leave free (:func:`free_cores`: on a busy machine, extra processes
only share the same cores and pay their start-up on top). Small inputs and busy machines therefore never pay for
a pool, and large inputs on free cores get one after their first job.

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
import math
import multiprocessing
import os
import signal
import sys
import time
import warnings
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from typing import Any, TypeVar

from drivemetrics._internal.read_ahead import fork_is_safe

__all__ = [
    "T",
    "check_workers",
    "map_in_processes",
    "one_torch_thread_per_worker",
    "parallel_map",
]

T = TypeVar("T")


#: Seconds a spawned worker costs before its first job: a fresh interpreter importing torch, numpy and the command's
#: module, and receiving its jobs. Measured 1.9-2.6 s on the 2-core reference machine (idle to load 2); the auto
#: policy counts it once per pool (the workers start side by side, one per core).
WORKER_START_SECONDS = 2.5
#: Seconds a forked worker costs before its first job (no interpreter start, no import, no job sent: it inherits the
#: parent's memory). Forking is used where it is safe (:func:`~drivemetrics._internal.read_ahead.fork_is_safe`: no
#: torch, no other thread), i.e. by the commands that compute on numpy arrays. A generous bound of the fork itself.
FORK_START_SECONDS = 0.1

#: Seconds of jobs the auto policy times in this process before it weighs a pool (see :func:`_map_auto`).
MEASURE_SECONDS = 0.5


def usable_cores() -> int:
    """The CPU cores this process may run on (its affinity mask where the platform has one)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


def free_cores() -> int:
    """The usable cores that other processes leave free, at least 1 (all of them where there is no load average).

    The 1-minute load average counts the runnable processes, this one included; its own share is estimated from
    its CPU time so far (a process that has run ``t`` seconds adds about ``1 - exp(-t / 60)``), the rest is taken
    as busy cores: on 2 cores, a load of 0.3 leaves 2, a load of 1.2 from another job leaves 1, a load of 5 leaves 1.
    """
    cores = usable_cores()
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # Windows: no load average
        return cores
    own = 1.0 - math.exp(-time.process_time() / 60.0)
    busy_elsewhere = max(0.0, load - own)
    return max(1, min(cores, math.floor(cores - busy_elsewhere + 0.5)))


def pool_pays(seconds_left: float, workers: int, start_seconds: float | None = None) -> bool:
    """Whether ``workers`` spawned processes finish ``seconds_left`` of one-process work sooner, with a margin.

    The pool's time is one start-up plus the work shared out; it pays when it saves at least one more start-up
    (head-room for sending the jobs, uneven jobs and a busy machine); ``start_seconds`` defaults to
    :data:`WORKER_START_SECONDS`::

        start_seconds + seconds_left / workers + start_seconds < seconds_left

    Examples:
        >>> from drivemetrics._internal.pool import pool_pays
        >>> pool_pays(1.0, 2), pool_pays(20.0, 2), pool_pays(20.0, 1)
        (False, True, False)
    """
    start = WORKER_START_SECONDS if start_seconds is None else start_seconds
    return workers > 1 and seconds_left / workers + 2 * start < seconds_left


def _warning_line(message: Warning | str, *_: object, **__: object) -> None:
    """A worker's warning on one line of stderr, without the source path and code line Python adds."""
    print(f"warning: {' '.join(str(message).split())}", file=sys.stderr)


def _start_worker(uses_torch: bool = True) -> None:
    """Worker initializer: the parent handles Ctrl-C (and terminates the workers); where the parent uses torch,
    torch runs one thread per worker (the workers share the cores, a job's ops are small). A parent without torch
    (a command on numpy arrays) starts workers that do not import it either."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a forked worker inherits the command's SIGTERM handler
    warnings.showwarning = _warning_line  # type: ignore[assignment]  # as the commands print theirs: one line
    if uses_torch:
        import torch

        torch.set_num_threads(1)


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


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    """SIGINT ignored meanwhile (main thread; elsewhere nothing changes): the cleanup after the first Ctrl-C."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def map_in_processes(
    fn: Callable[[Any], T], jobs: Sequence[Any], workers: int | None, chunksize: int | None = None
) -> Iterator[T]:
    """``fn(job)`` for every job, in order; ``workers == 1`` (or one job) runs in this process, ``None`` lets
    :func:`pool_pays` decide from the measured time of the jobs run so far. ``chunksize``: jobs sent to a worker
    at a time (default: about eight chunks per worker). At most :func:`usable_cores` processes are started, and no
    more than there are chunks, whatever ``workers`` asks (``--workers 10000`` on 2 cores starts 2)."""
    if workers is None:
        yield from _map_auto(fn, jobs, chunksize)
        return
    if workers < 1:
        raise ValueError(f"`workers` must be >= 1, got {workers}")
    workers = min(workers, usable_cores())  # more processes than cores only share them and pay their start-up
    if chunksize is None:
        chunksize = max(1, len(jobs) // (8 * workers))
    workers = min(workers, -(-len(jobs) // chunksize))  # no more processes than chunks of work
    if workers == 1 or len(jobs) <= 1:
        for job in jobs:
            yield fn(job)
        return
    forked = fork_is_safe()
    pool = ProcessPoolExecutor(
        max_workers=min(workers, len(jobs)),
        mp_context=multiprocessing.get_context("fork" if forked else "spawn"),
        initializer=_start_worker,
        initargs=("torch" in sys.modules,),
    )
    try:
        with _sigint_blocked():  # map submits every chunk now, which starts the workers (spawn: on demand)
            if forked:  # the workers inherit fn and the jobs: only job numbers go out, only results come back
                _INHERITED.append((fn, jobs))
                try:
                    results = pool.map(_run_inherited, range(len(jobs)), chunksize=chunksize)
                finally:
                    _INHERITED.pop()  # the workers are forked by now (a fork pool starts them all at once)
            else:
                results = pool.map(fn, jobs, chunksize=chunksize)
        yield from results
    except BaseException:
        with _sigint_ignored():  # a second Ctrl-C must not leave the workers running
            processes = list((pool._processes or {}).values())
            _wakeup_tolerates_close(pool)  # before shutdown, which drops the executor's reference to it
            pool.shutdown(wait=False, cancel_futures=True)
            for process in processes:
                process.terminate()
            for process in processes:
                process.join(timeout=5)
        raise
    pool.shutdown(wait=True)


def _wakeup_tolerates_close(pool: ProcessPoolExecutor) -> None:
    """The executor's manager thread closes its wake-up pipe once it sees the workers gone, while the interpreter's
    exit hook may be writing to that pipe (Python < 3.12 takes no lock there): about 1 SIGTERM in 15 ended with
    "Exception ignored in: <module 'threading'> ... OSError: [Errno 9] Bad file descriptor". A write to a pipe
    closed meanwhile is dropped instead (it only wakes a thread that has already ended)."""
    thread_wakeup = getattr(pool, "_executor_manager_thread_wakeup", None)
    if thread_wakeup is None:
        return
    write = thread_wakeup.wakeup

    def wakeup() -> None:
        with contextlib.suppress(OSError):  # the manager thread closed the pipe between the check and the write
            write()

    thread_wakeup.wakeup = wakeup


#: ``(fn, jobs)`` of the forked pool being started (read by its workers, which inherit it).
_INHERITED: list[tuple[Callable[[Any], Any], Sequence[Any]]] = []


def _run_inherited(index: int) -> Any:
    """A forked worker's call: job ``index`` of the jobs it inherited."""
    fn, jobs = _INHERITED[-1]
    return fn(jobs[index])


def _map_auto(fn: Callable[[Any], T], jobs: Sequence[Any], chunksize: int | None) -> Iterator[T]:
    """Jobs in this process, timed; the rest in a pool on the free cores as soon as :func:`pool_pays` says so.

    The first job also pays one-time costs (lazy imports, caches): once a second job is timed, the cost per job is
    taken from the later jobs only, and a pool is weighed only once the timed jobs took :data:`MEASURE_SECONDS`
    (short jobs: a few dozen of them, not the first alone). Where forking is safe the pool is forked and costs
    :data:`FORK_START_SECONDS`, not :data:`WORKER_START_SECONDS`.
    """
    busy = 0.0  # seconds spent in fn so far (not in the caller between two results)
    first = 0.0  # of which the first job
    for done, job in enumerate(jobs):
        left = len(jobs) - done
        if done and busy >= MEASURE_SECONDS:
            per_job = busy if done == 1 else (busy - first) / (done - 1)
            workers = min(free_cores(), left)
            start_seconds = FORK_START_SECONDS if fork_is_safe() else WORKER_START_SECONDS
            if pool_pays(per_job * left, workers, start_seconds):
                yield from map_in_processes(fn, jobs[done:], workers, chunksize)
                return
        start = time.perf_counter()
        result = fn(job)
        busy += time.perf_counter() - start
        if not done:
            first = busy
        yield result


_Item = TypeVar("_Item")


_Result = TypeVar("_Result")


def check_workers_or_auto(workers: int | None) -> int | None:
    """``workers`` checked: a positive int, or ``None`` (the cost model of :func:`map_in_processes` decides)."""
    if workers is None:
        return None
    return check_workers(workers)


def check_workers(workers: int | None, name: str = "workers") -> int:
    """``workers`` as a positive int (``None``: ``os.cpu_count()``); ``name``: the argument named in the error."""
    if workers is None:
        return os.cpu_count() or 1
    if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
        raise ValueError(f"`{name}` must be a positive int (or None for one per CPU core), got {workers!r}")
    return workers


@contextlib.contextmanager
def one_torch_thread_per_worker() -> Iterator[None]:
    """torch's intra-op threads set to 1 while frames are processed in parallel (restored after).

    Frame-level threads replace op-level ones: a frame's ops are small, and intra-op threads spinning on a busy
    machine cost more CPU than they save (measured: 1.7x the user time with one worker on 2 loaded cores).
    """
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def parallel_map(
    fn: Callable[[_Item], _Result], items: Iterable[_Item], workers: int | None = None
) -> Iterator[_Result]:
    """``fn(item)`` for every item, in order, computed by ``workers`` threads (default and most: one per usable
    CPU core).

    Meant for file decoding (Pillow and torch release the GIL while they work). At most ``2 * workers`` items are
    in flight, so memory stays bounded whatever the number of items; ``workers=1`` runs in the calling thread.
    An exception of ``fn`` is raised here (for the first failing item in order) and the queued items are dropped.
    """
    workers = min(check_workers(workers), usable_cores())  # CPU-bound decoding: more threads than cores only wait
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
