"""One progress-bar rule for the dataset commands (tqdm on stderr).

``enabled=None`` (the default of the commands): a bar only when both stdout and stderr are terminals, so a
redirected or piped run (``drivemetrics culane-eval ... > scores.txt``, CI logs) stays quiet; ``--no-progress``
passes ``False``; ``True`` forces it.
"""

from __future__ import annotations

import sys

from tqdm import tqdm


def progress_enabled(enabled: bool | None) -> bool:
    """Resolve ``enabled``: ``None`` means "stdout and stderr are both terminals"."""
    if enabled is not None:
        return bool(enabled)
    return all(getattr(stream, "isatty", lambda: False)() for stream in (sys.stdout, sys.stderr))


def progress_bar(total: int, desc: str, unit: str, enabled: bool | None = None) -> tqdm:
    """A tqdm bar of ``total`` ``unit`` on stderr (hidden unless :func:`progress_enabled`); use as a context manager."""
    return tqdm(total=total, desc=desc, unit=unit, disable=not progress_enabled(enabled), leave=False, file=sys.stderr)
