"""Keeping freed memory in the process: array temporaries of a few megabytes are reused instead of being handed back
to the operating system and faulted in again, page by page, by the next allocation.

glibc's ``malloc`` serves large blocks with ``mmap`` and returns them with ``munmap`` on ``free`` (and trims the
heap top beyond a threshold), so a loop of numpy operations on arrays of a few MB pays a page fault per 4 KB page
on every step: measured on ``map-eval --protocol av2-cvpr23``, about 0.3 s of its 1 s of system time. A dataset
command that runs on numpy calls :func:`keep_freed_memory` once; its forked readers and workers inherit the setting.
The peak memory does not change (what is kept was in use a moment before). Elsewhere (other C libraries, Windows,
macOS) it does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

__all__ = ["keep_freed_memory"]

# mallopt parameters (glibc's malloc.h)
_M_TRIM_THRESHOLD = -1
_M_TOP_PAD = -2
_M_MMAP_THRESHOLD = -3


def keep_freed_memory(block_bytes: int = 256 << 20) -> bool:
    """Ask glibc to serve blocks up to ``block_bytes`` from the heap and to keep freed memory (no trimming); returns
    whether the setting was applied (glibc on Linux only).

    Examples:
        >>> from drivemetrics._internal.memory import keep_freed_memory
        >>> keep_freed_memory() in (True, False)
        True
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc (musl has no mallopt)
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    applied = mallopt(_M_MMAP_THRESHOLD, block_bytes) == 1
    applied &= mallopt(_M_TRIM_THRESHOLD, 4 * block_bytes) == 1
    applied &= mallopt(_M_TOP_PAD, 64 << 20) == 1
    return bool(applied)
