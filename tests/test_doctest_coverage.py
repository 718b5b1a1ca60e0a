"""Every exported Metric class, loss module and ``drivemetrics.functional`` name carries a ``>>>`` example (issue 27).

The examples themselves run as doctests (``--doctest-modules`` on ``drivemetrics/``, see pyproject.toml); this test
checks that they exist, in the object's own docstring (an inherited one does not count). The names come from the
packages' export lists (``_EXPORTS`` of the lazy packages, else ``__all__``) and from ``drivemetrics.functional``,
so new and renamed names are covered without edits here.

``python tests/test_doctest_coverage.py`` prints the names that still lack an example.
"""

from __future__ import annotations

import importlib
import pkgutil

import torch
from torchmetrics import Metric

import drivemetrics

#: Packages that are not public API (demo drivers).
NOT_API = ("demos",)


def domain_exports() -> dict[str, object]:
    """``{"drivemetrics.<domain>.<Name>": object}`` of every domain package's exports."""
    found = {}
    for info in pkgutil.iter_modules(drivemetrics.__path__):
        if not info.ispkg or info.name.startswith("_") or info.name in NOT_API:
            continue
        package = importlib.import_module(f"drivemetrics.{info.name}")
        names = getattr(package, "_EXPORTS", None) or getattr(package, "__all__", [])
        for name in names:
            found[f"drivemetrics.{info.name}.{name}"] = getattr(package, name)
    return found


def functional_names() -> dict[str, object]:
    """``{"drivemetrics.functional.<name>": object}`` (empty while the module does not exist)."""
    try:
        functional = importlib.import_module("drivemetrics.functional")
    except ModuleNotFoundError:
        return {}
    names = getattr(functional, "__all__", None) or [
        n for n, v in vars(functional).items() if callable(v) and str(getattr(v, "__module__", "")).startswith("drivem")
    ]
    return {f"drivemetrics.functional.{name}": getattr(functional, name) for name in names}


def needs_example(obj: object) -> bool:
    """Metric classes, loss modules (``nn.Module``) and kernels of the functional namespace need an example."""
    return isinstance(obj, type) and issubclass(obj, (Metric, torch.nn.Module))


def names_without_example() -> list[str]:
    candidates = {name: obj for name, obj in domain_exports().items() if needs_example(obj)}
    candidates.update(functional_names())
    return sorted(name for name, obj in candidates.items() if ">>>" not in (getattr(obj, "__doc__", None) or ""))


def test_the_check_sees_classes_and_kernels():
    exports = domain_exports()
    assert needs_example(exports["drivemetrics.road.RoadPixelMaxFScore"])  # a Metric class
    assert needs_example(exports["drivemetrics.lane.PSLDLoss"])  # a loss module
    assert not needs_example(exports["drivemetrics.road.CorridorConfig"])  # a parameter class, not required


class _NoExample(Metric):
    """A metric without an example."""


def test_an_inherited_example_does_not_count():
    assert ">>>" not in (_NoExample.__doc__ or "")


def test_every_metric_loss_and_kernel_has_an_example():
    missing = names_without_example()
    assert not missing, f"{len(missing)} names lack a >>> example: {', '.join(missing)}"


if __name__ == "__main__":
    missing = names_without_example()
    print(f"{len(missing)} names lack a >>> example:")
    print("\n".join(missing))


def test_docstrings_use_one_section_style():
    """Docstring sections are Google style (``Args:``, ``Returns:``, ``Examples:``): no numpy-style section with a
    dashed underline, which the docs would render differently."""
    import re
    from pathlib import Path

    underlined = re.compile(r"^\s*(Parameters|Returns|Raises|Examples|Notes|Attributes)\n\s*-{3,}\s*$", re.MULTILINE)
    offenders = [
        str(path.relative_to(Path(drivemetrics.__file__).parent))
        for path in sorted(Path(drivemetrics.__file__).parent.rglob("*.py"))
        if underlined.search(path.read_text())
    ]
    assert offenders == []
    assert underlined.search('    """Sum.\n\n    Examples\n    --------\n    >>> 1\n    """')  # the check can fail
