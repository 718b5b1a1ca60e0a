"""Optional dependencies: the one check, and the one-line message naming the extra that installs them.

The package's extras (``pyproject.toml``) install modules that only some paths need: matplotlib for figures and
``plot()`` (``plot``), OpenCV for the ``compat="reference"`` modes of CULane and UrbanLaneGraph (``culane``,
``lanegraph``; also LLAMAS and CurveLanes in both modes), rtree for UrbanLaneGraph's reference candidate order
(``lanegraph``), shapely for LLAMAS' unofficial IoU (``llamas``). A path that needs one
calls :func:`require` before any work; when the module is missing it raises :class:`MissingExtraError`, whose
message is one line, e.g. ``drawing figures needs matplotlib: pip install 'drivemetrics[plot]'``. The
``drivemetrics`` command prints it as ``drivemetrics COMMAND: error: ...`` and exits with status 2 (an
``ImportError`` is bad input for :func:`drivemetrics.cli.main`); paths for which the extra only adds something (the
demo's figures) ask :func:`available` and go on without it.
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["DISTRIBUTIONS", "MissingExtraError", "available", "missing_extra_message", "pyplot_for_files", "require"]

#: Module -> the distribution pip installs for it (the names users see in the message).
DISTRIBUTIONS: dict[str, str] = {
    "matplotlib": "matplotlib",
    "cv2": "OpenCV",
    "rtree": "rtree",
    "shapely": "shapely",
}


class MissingExtraError(ModuleNotFoundError):
    """An optional dependency is not installed; ``str(error)`` is one line that names the extra to install.

    A ``ModuleNotFoundError`` (so ``except ImportError`` still catches it), with ``extra`` (``"plot"``, ...) and
    ``name`` (the missing top-level module).
    """

    def __init__(self, message: str, extra: str, module: str) -> None:
        super().__init__(message, name=module)
        self.extra = extra


def missing_extra_message(extra: str, module: str, what: str) -> str:
    """The one line: ``"<what> needs <distribution>: pip install 'drivemetrics[<extra>]'"``.

    Args:
        extra: the extra of ``pyproject.toml`` that installs the module (``"plot"``, ``"culane"``, ...).
        module: the import name (``"matplotlib"``, ``"cv2"``).
        what: what needs it, as the subject of "needs" (``"drawing figures"``, ``"CULane compat='reference'"``).
    """
    top = module.partition(".")[0]
    return f"{what} needs {DISTRIBUTIONS.get(top, top)}: pip install 'drivemetrics[{extra}]'"


def available(module: str) -> bool:
    """Whether ``module`` imports (an extra's module; it is imported, so a later import costs nothing)."""
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True


def require(extra: str, module: str, what: str) -> ModuleType:
    """Import ``module`` of the extra ``extra``, or raise :class:`MissingExtraError` with the one-line message.

    Args:
        extra: the extra that installs it (``"plot"``, ``"culane"``, ``"lanegraph"``).
        module: the import name, possibly dotted (``"matplotlib.pyplot"``, ``"rtree.index"``).
        what: what needs it, as the subject of "needs" (``"drawing figures"``, ``"plot()"``).

    Returns:
        The imported module.

    Raises:
        MissingExtraError: the module (or one it needs) is not installed.

    Example:
        >>> from drivemetrics._internal.extras import require
        >>> from drivemetrics._internal.extras import missing_extra_message
        >>> require("plot", "math", "drawing figures").sqrt(4.0)
        2.0
        >>> missing_extra_message("plot", "matplotlib.pyplot", "drawing figures")
        "drawing figures needs matplotlib: pip install 'drivemetrics[plot]'"
    """
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise MissingExtraError(missing_extra_message(extra, module, what), extra, module.partition(".")[0]) from error


def pyplot_for_files() -> ModuleType:
    """``matplotlib.pyplot`` on the file-only Agg backend (figures written to PNG files, no window), or
    :class:`MissingExtraError` ``drawing figures needs matplotlib: pip install 'drivemetrics[plot]'``."""
    matplotlib = require("plot", "matplotlib", "drawing figures")
    matplotlib.use("Agg")
    return require("plot", "matplotlib.pyplot", "drawing figures")
