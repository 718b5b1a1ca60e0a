"""Lazy package exports (PEP 562), so that ``import drivemetrics.<domain>.cli`` stays cheap.

A package's ``__init__`` lists ``{"Name": "drivemetrics.domain.module"}`` and calls :func:`lazy_exports`; the
module holding a name is imported on first access (``from drivemetrics.road import RoadPixelMetrics``). The
``submodules`` argument (``{"road": "drivemetrics.road"}``) makes subpackages attributes that import on first use
(``import drivemetrics; drivemetrics.road``). Every lazy package has an ``__init__.pyi`` stub listing the same
names, so that type checkers see them (a test keeps the two in step).
Where an exported name equals a submodule's name (``drivemetrics.roadnet.apls`` the module and ``apls`` the
function), the package attribute is the exported object, as an eager ``from .apls import apls`` would leave it;
the module stays reachable through ``importlib.import_module`` / ``sys.modules``.
"""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Callable
from typing import Any


class _LazyPackage(types.ModuleType):
    """A package whose exported names win over same-named submodules the import system binds on it."""

    def __setattr__(self, name: str, value: Any) -> None:
        exports = self.__dict__.get("_EXPORTS", {})
        if isinstance(value, types.ModuleType) and name in exports and value.__name__ == f"{self.__name__}.{name}":
            return
        super().__setattr__(name, value)


def lazy_exports(
    package: str, exports: dict[str, str], submodules: dict[str, str] | None = None
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package`` that import ``exports[name]`` when ``name`` is first used.

    ``submodules`` (``{"road": "drivemetrics.road"}``) are attributes that are the imported modules themselves.
    """
    submodules = submodules or {}
    module_of_package = sys.modules[package]
    module_of_package.__class__ = _LazyPackage

    def _getattr(name: str) -> Any:
        if name in submodules:
            value = importlib.import_module(submodules[name])
            module_of_package.__dict__[name] = value
            return value
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        module_of_package.__dict__[name] = value
        return value

    def _dir() -> list[str]:
        return sorted(set(exports) | set(submodules) | set(module_of_package.__dict__))

    return _getattr, _dir
