"""The one reference switch of the library: ``compat="default"`` or ``compat="reference"``.

Every metric that reproduces a released tool takes ``compat``: ``"default"`` is the paper's definition with the
library's documented fixes, ``"reference"`` reproduces the released tool, bugs included (the CLI spells it
``--compat reference``). Protocol parameters that are not "reproduce the released tool" (KITTI ``overlaps``,
thresholds) are ordinary arguments, not compat modes.
"""

from __future__ import annotations

from typing import Literal

__all__ = ["COMPAT_MODES", "Compat", "check_compat"]

Compat = Literal["default", "reference"]
COMPAT_MODES: tuple[Compat, ...] = ("default", "reference")


def check_compat(compat: object, name: str = "compat") -> bool:
    """Validate a compat switch and say whether it asks for the released tool's behaviour.

    Args:
        compat: ``"default"`` or ``"reference"``.
        name: the argument's name in the error message.

    Returns:
        ``True`` for ``"reference"``, ``False`` for ``"default"``.

    Raises:
        ValueError: for any other value, naming the argument.

    Examples:
        >>> from drivemetrics._internal.compat import check_compat
        >>> check_compat("reference")
        True
        >>> check_compat("default")
        False
    """
    if not isinstance(compat, str) or compat not in COMPAT_MODES:
        raise ValueError(f"`{name}` must be one of {COMPAT_MODES}, got {compat!r}")
    return compat == "reference"
