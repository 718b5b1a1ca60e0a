"""Reading input files while the parent imports torch: a forked, torch-free reader process.

A dataset command spends its first seconds importing torch (about 1.5-2 s on a 2-core machine), which reading and
checking the input files do not need. :func:`read_ahead` forks a child *before* torch is imported (no threads of
torch or OpenMP exist yet, so the fork is safe), runs the reader there, and sends the parsed result back through a
pipe as one ordinary pickle; meanwhile the parent imports what the command needs. On two cores the reading then
costs the parent only the final ``pickle.loads`` (C speed, the data comes from our own child, which has already
checked it with the restricted reader).

It falls back to reading in this process where a fork is not safe or not possible: torch already imported (e.g.
under ``torchrun``, or a command called from Python), another Python thread running, no ``os.fork`` or not Linux,
or ``DRIVEMETRICS_READ_AHEAD=0``. Either way the reader's exception (a ``ValueError`` naming the file, an
``OSError``) is raised in the parent by :meth:`Pending.result`, so messages and exit codes do not change.

The child ignores Ctrl-C (the parent handles it) and dies on SIGTERM; the parent kills and reaps it whenever the
``with`` block is left early (an error, Ctrl-C, SIGTERM), so no reader outlives the command.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Generic, TypeVar

__all__ = ["Pending", "fork_is_safe", "read_ahead", "read_ahead_all"]

T = TypeVar("T")


def fork_is_safe() -> bool:
    """Whether this process may fork now: Linux, torch not imported (no torch / OpenMP threads), no other Python
    thread, and ``DRIVEMETRICS_READ_AHEAD`` not ``0``."""
    return (
        sys.platform.startswith("linux")
        and hasattr(os, "fork")
        and "torch" not in sys.modules
        and threading.active_count() == 1
        and os.environ.get("DRIVEMETRICS_READ_AHEAD", "1").strip() != "0"
    )


def _read_pipe(fd: int, into: list[bytes]) -> None:
    """Everything the child writes (the GIL is released while ``os.read`` waits)."""
    parts = []
    with os.fdopen(fd, "rb", closefd=True) as pipe:
        while chunk := pipe.read(1 << 20):
            parts.append(chunk)
    into.append(b"".join(parts))


class Pending(Generic[T]):
    """The result of a reader started by :func:`read_ahead`."""

    def __init__(self, pid: int | None, value: tuple[bool, Any] | None, reader: threading.Thread | None) -> None:
        self._pid = pid
        self._value = value
        self._reader = reader
        self._payload: list[bytes] = []

    @property
    def forked(self) -> bool:
        """Whether the reader runs (ran) in a forked child."""
        return self._pid is not None

    def result(self) -> T:
        """The reader's return value (waits for the child); its exception is raised here."""
        if self._value is None:
            assert self._reader is not None
            assert self._pid is not None
            self._reader.join()
            os.waitpid(self._pid, 0)
            self._pid = None
            if not self._payload or not self._payload[0]:
                raise RuntimeError("the reader process ended without a result")
            self._value = pickle.loads(self._payload[0])  # our own child's pickle of checked data
        ok, value = self._value
        if not ok:
            raise value
        return value

    def _stop(self) -> None:
        """Kill and reap a child still running (the ``with`` block was left early)."""
        if self._pid is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(self._pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self._pid, 0)
        self._pid = None


def _child(fn: Callable[..., Any], args: tuple[Any, ...], fd: int) -> None:
    """The forked reader: run ``fn``, write ``(ok, value)`` as one pickle, exit without any clean-up of the parent's."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        try:
            payload = pickle.dumps((True, fn(*args)), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as err:
            try:
                payload = pickle.dumps((False, err), protocol=pickle.HIGHEST_PROTOCOL)
            except Exception:
                payload = pickle.dumps((False, RuntimeError(f"{type(err).__name__}: {err}")))
        with os.fdopen(fd, "wb", closefd=True) as pipe:
            pipe.write(payload)
    finally:
        os._exit(0)


@contextlib.contextmanager
def read_ahead(fn: Callable[..., T], *args: Any) -> Iterator[Pending[T]]:
    """Run ``fn(*args)`` (a torch-free reader) in a forked child while the ``with`` body runs.

    Args:
        fn: the reader; its result (and any exception) must pickle.
        args: its arguments.

    Yields:
        A :class:`Pending`; ``.result()`` inside or after the block gives the value (or raises the reader's error).

    Examples:
        >>> from drivemetrics._internal.read_ahead import read_ahead
        >>> with read_ahead(sorted, [3, 1, 2]) as pending:
        ...     pass  # import torch here
        >>> pending.result()
        [1, 2, 3]
    """
    with read_ahead_all([(fn, args)]) as pendings:
        yield pendings[0]


@contextlib.contextmanager
def read_ahead_all(calls: Sequence[tuple[Callable[..., Any], tuple[Any, ...]]]) -> Iterator[list[Pending[Any]]]:
    """:func:`read_ahead` of several readers at once, each in its own forked child (two input files are read side
    by side on two cores); every child is forked before any thread of this process starts.

    Yields:
        One :class:`Pending` per call, in order.

    Examples:
        >>> from drivemetrics._internal.read_ahead import read_ahead_all
        >>> with read_ahead_all([(sorted, ([2, 1],)), (len, ("abc",))]) as (first, second):
        ...     pass
        >>> first.result(), second.result()
        ([1, 2], 3)
    """
    if not fork_is_safe():
        values = []
        for fn, args in calls:
            try:
                value: tuple[bool, Any] = (True, fn(*args))
            except Exception as err:
                value = (False, err)
            values.append(Pending(None, value, None))
        yield values
        return
    pendings: list[Pending[Any]] = []
    read_fds: list[int] = []
    try:
        for fn, args in calls:
            read_fd, write_fd = os.pipe()
            pid = os.fork()
            if pid == 0:  # pragma: no cover - the child (coverage does not follow it)
                for fd in (read_fd, *read_fds):
                    os.close(fd)
                _child(fn, args, write_fd)
            os.close(write_fd)
            read_fds.append(read_fd)
            pendings.append(Pending(pid, None, None))
        for pending, fd in zip(pendings, read_fds, strict=True):  # threads only once every child is forked
            pending._reader = threading.Thread(target=_read_pipe, args=(fd, pending._payload), daemon=True)
            pending._reader.start()
        yield pendings
        for pending in pendings:
            pending.result()  # reap the children now (the values are kept)
    except BaseException:
        for pending in pendings:
            pending._stop()
        for pending, fd in zip(pendings, read_fds, strict=False):
            if pending._reader is None:  # its pipe was never handed to a reader thread
                os.close(fd)
        raise
