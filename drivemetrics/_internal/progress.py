"""One progress-bar rule for the dataset commands (tqdm on stderr).

- ``enabled=None`` (the default of the commands and of the library functions behind them): a bar only when both
  stdout and stderr are terminals, so a redirected or piped run (``drivemetrics culane-eval ... > scores.txt``,
  CI logs, ``| tee``) stays quiet;
- ``--no-progress`` passes ``False`` (:func:`~drivemetrics._internal.options.add_no_progress`); ``True`` forces it;
- under torchrun only rank 0 draws (``RANK`` unset or 0), whatever ``enabled`` says.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from typing import TypeVar

from tqdm import tqdm

__all__ = ["T", "is_rank_zero", "progress_bar", "progress_enabled", "progress_iter"]

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
