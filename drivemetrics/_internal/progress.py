"""One progress-bar rule for the dataset commands (tqdm on stderr).

- ``enabled=None`` (the default of the commands and of the library functions behind them): a bar only when both
  stdout and stderr are terminals, so a redirected or piped run (``drivemetrics culane-eval ... > scores.txt``,
  CI logs, ``| tee``) stays quiet;
- ``--no-progress`` passes ``False`` (:func:`~drivemetrics._internal.options.add_no_progress`); ``True`` forces it;
- under torchrun only rank 0 draws (``RANK`` unset or 0), whatever ``enabled`` says.
"""

from __future__ import annotations

import contextlib
import os
import sys
import warnings
from collections.abc import Iterable, Iterator
from typing import TypeVar

from tqdm import tqdm

__all__ = [
    "T",
    "is_rank_zero",
    "one_line_warnings",
    "progress_bar",
    "progress_enabled",
    "progress_iter",
    "warning_line",
]

T = TypeVar("T")


class _Bar(tqdm):  # type: ignore[misc]
    """tqdm without its monitor thread (which every bar, hidden ones too, would start): a command's process stays
    single-threaded, so it may fork its workers (:mod:`drivemetrics._internal.pool`); our bars update often enough
    not to need the monitor's refresh of slow ones."""

    monitor_interval = 0


def is_rank_zero() -> bool:
    """Whether this process is rank 0 of a torchrun launch (or not part of one): ``RANK`` unset, empty or 0."""
    return os.environ.get("RANK", "0").strip() in ("", "0")


def progress_enabled(enabled: bool | None) -> bool:
    """Resolve ``enabled``: ``None`` means "stdout and stderr are both terminals"; never on a rank other than 0."""
    if not is_rank_zero():
        return False
    if enabled is not None:
        return bool(enabled)
    return all(getattr(stream, "isatty", lambda: False)() for stream in (sys.stdout, sys.stderr))


def progress_bar(total: int, desc: str, unit: str, enabled: bool | None = None) -> tqdm:
    """A tqdm bar of ``total`` ``unit`` on stderr (hidden unless :func:`progress_enabled`); use as a context manager."""
    return _Bar(total=total, desc=desc, unit=unit, disable=not progress_enabled(enabled), leave=False, file=sys.stderr)


def progress_iter(items: Iterable[T], total: int, desc: str, unit: str, enabled: bool | None = None) -> Iterable[T]:
    """``items`` as they are consumed, with the bar of :func:`progress_bar` (the items themselves when hidden)."""
    if not progress_enabled(enabled):
        return items
    return _Bar(items, total=total, desc=desc, unit=unit, leave=False, file=sys.stderr)


#: The running command's prefix (``drivemetrics COMMAND``), set by :func:`one_line_warnings`.
_COMMAND: list[str] = []


def warning_line(message: str, kind: str = "warning") -> None:
    """Print a command's own warning (or ``kind="note"``) as one line on stderr, as Python warnings are printed
    while a command runs: ``drivemetrics COMMAND: warning: MESSAGE`` (``warning: MESSAGE`` outside a command).

    Examples:
        >>> import sys
        >>> from drivemetrics._internal.progress import one_line_warnings, warning_line
        >>> sys.stderr = sys.stdout  # to show the line here
        >>> with one_line_warnings("drivemetrics map-eval"):
        ...     warning_line("2 prediction sample(s) have no GT sample")
        drivemetrics map-eval: warning: 2 prediction sample(s) have no GT sample
        >>> sys.stderr = sys.__stderr__
    """
    prefix = f"{_COMMAND[-1]}: " if _COMMAND else ""
    print(f"{prefix}{kind}: {' '.join(str(message).split())}", file=sys.stderr)


@contextlib.contextmanager
def one_line_warnings(prefix: str) -> Iterator[None]:
    """While a command runs, each warning is one line on stderr, ``PREFIX: warning: MESSAGE`` (at most 300
    characters), without the source line Python prints by default (numpy's ``RuntimeWarning: overflow encountered
    in multiply`` followed by a line of the library's code tells a user nothing about their input). Only the format
    changes (``warnings.formatwarning``): filters and ``catch_warnings(record=True)`` work as before."""
    previous = warnings.formatwarning

    def one_line(
        message: Warning | str, category: type[Warning], filename: str, lineno: int, line: str | None = None
    ) -> str:
        text = " ".join(str(message).split())
        if len(text) > 300:
            text = text[:280] + " [...]"
        name = getattr(category, "__name__", "Warning")
        kind = "" if name in ("UserWarning", "RuntimeWarning") else f" ({name})"
        return f"{prefix}: warning{kind}: {text}\n"

    warnings.formatwarning = one_line
    _COMMAND.append(prefix)
    try:
        yield
    finally:
        warnings.formatwarning = previous
        _COMMAND.pop()
