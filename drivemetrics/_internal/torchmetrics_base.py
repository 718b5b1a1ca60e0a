"""``torchmetrics.Metric`` without the rest of torchmetrics: the start-up of a Metric class (issue 50).

``import torchmetrics`` (1.9) runs a package ``__init__`` that imports every metric of every domain, ``scipy.signal``
and ``scipy.stats`` among them, and its base module imports ``matplotlib.pyplot`` for ``plot``: together about 1 s on
a quiet machine, most of a first ``from drivemetrics.road import RoadPixelMaxFScore`` after ``import torch``. A
drivemetrics Metric needs only the base class, ``torchmetrics.metric.Metric``. :func:`base_metric` imports that
module

- under a ``torchmetrics`` package whose ``__init__`` has not run yet; the package completes itself (runs its
  ``__init__`` in the same module object) the first time anything else is asked of it:
  ``torchmetrics.MetricCollection``, ``from torchmetrics import Accuracy``, ``torchmetrics.__version__`` work as
  usual, on the same classes
  (``torchmetrics.Metric`` is the class the drivemetrics metrics derive from); submodules import as usual;
- with a ``torchmetrics.utilities.plot`` that loads itself (and matplotlib) on first use: the three names the base
  module binds at import are stand-ins (two annotation types and a function that loads the module, then calls the
  real one); any other name loads the module first, so torchmetrics' own metrics bind the real functions.

Where ``torchmetrics`` was imported already, nothing changes. ``tests/test_startup.py`` checks the behaviour.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from typing import Any

__all__ = ["base_metric"]

#: Set in a deferred module's namespace once its own code has run.
_COMPLETE = "_drivemetrics_module_complete"


def _complete(module: Any) -> None:
    """Run the code of a deferred ``module`` (the package or its plot module) in its own module object, once."""
    namespace = module.__dict__
    if namespace.get(_COMPLETE):
        return
    namespace[_COMPLETE] = True
    namespace.pop("__getattr__", None)  # afterwards a missing name is an AttributeError
    logger = namespace.get("_logger")
    handlers = list(logger.handlers) if logger is not None else []
    module.__spec__.loader.exec_module(module)
    for handler in handlers:  # the package's __init__ added its own handler to the same logger: keep one
        if len(namespace["_logger"].handlers) > 1:
            namespace["_logger"].removeHandler(handler)


def _deferred(name: str, origin: str) -> Any:
    """The module ``name`` (file ``origin``) created but not run; a missing attribute runs it (:func:`_complete`)."""
    spec = importlib.util.spec_from_file_location(
        name, origin, submodule_search_locations=[os.path.dirname(origin)] if origin.endswith("__init__.py") else None
    )
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(f"{name}: {origin} not found")
    module = importlib.util.module_from_spec(spec)

    def __getattr__(attribute: str) -> Any:  # noqa: N807  # PEP 562
        if attribute.startswith("__") and attribute.endswith("__"):  # the import system's probes (``__path__``)
            raise AttributeError(f"module {name!r} has no attribute {attribute!r}")
        _complete(module)
        if attribute in module.__dict__:
            return module.__dict__[attribute]
        raise AttributeError(f"module {name!r} has no attribute {attribute!r}")

    module.__getattr__ = __getattr__  # type: ignore[attr-defined]
    sys.modules[name] = module
    return module


def base_metric() -> type:
    """``torchmetrics.Metric``, importing only its module where torchmetrics is not imported yet."""
    if "torchmetrics" in sys.modules:
        from torchmetrics import Metric

        return Metric
    spec = importlib.util.find_spec("torchmetrics")
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError("drivemetrics needs torchmetrics: pip install 'torchmetrics>=1.3,<2'")
    root = os.path.dirname(spec.origin)
    package = _deferred("torchmetrics", spec.origin)
    import logging

    # what the package's __init__ defines before its imports, and its modules import back (utilities.prints)
    package._logger = logging.getLogger("torchmetrics")
    package._logger.addHandler(logging.StreamHandler())
    package._logger.setLevel(logging.INFO)
    package._PACKAGE_ROOT, package._PROJECT_ROOT = root, os.path.dirname(root)
    plot = _deferred("torchmetrics.utilities.plot", os.path.join(root, "utilities", "plot.py"))

    def plot_single_or_multi_val(*args: Any, **kwargs: Any) -> Any:
        _complete(plot)  # matplotlib now
        return plot.plot_single_or_multi_val(*args, **kwargs)

    plot._AX_TYPE, plot._PLOT_OUT_TYPE = object, tuple[object, object]
    plot.plot_single_or_multi_val = plot_single_or_multi_val
    try:
        import torchmetrics.utilities  # noqa: F401  # first, as the package does: it imports torchmetrics.metric
        from torchmetrics.metric import Metric
    except BaseException:
        for module in [m for m in sys.modules if m == "torchmetrics" or m.startswith("torchmetrics.")]:
            del sys.modules[module]
        raise
    sys.modules["torchmetrics.utilities"].plot = plot
    package.Metric = Metric
    return Metric
