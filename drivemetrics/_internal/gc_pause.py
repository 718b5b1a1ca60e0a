"""Pausing Python's cyclic garbage collector around work that builds or walks many small objects (no Metric here).

Reading a large JSON document, or evaluating a dataset while the caller's parsed input (millions of dicts, lists
and arrays) is alive, allocates many small objects; every automatic full collection then scans all objects alive,
several times the cost of the work itself.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["gc_paused"]


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """No automatic garbage collection inside the block (re-enabled after it, if it was enabled). Reference cycles
    made inside the block are collected by the next collection after it.

    Examples:
        >>> import gc
        >>> from drivemetrics._internal.gc_pause import gc_paused
        >>> with gc_paused():
        ...     gc.isenabled()
        False
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
