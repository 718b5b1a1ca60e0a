"""The road-network package: lazy exports, their type stub, and the layout of its families."""

import ast
import importlib
import inspect
from pathlib import Path

import pytest

PACKAGES = ("drivemetrics.roadnet", "drivemetrics.lanegraph")
ROOT = Path(__file__).resolve().parents[2]


def _stub_names(package: str) -> dict[str, str]:
    """``{name: module}`` of the ``from module import name as name`` lines of the package's ``__init__.pyi``."""
    path = ROOT / Path(*package.split(".")) / "__init__.pyi"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {alias.name: node.module for node in tree.body if isinstance(node, ast.ImportFrom) for alias in node.names}


@pytest.mark.parametrize("package", PACKAGES)
def test_stub_lists_exactly_the_lazy_exports(package):
    module = importlib.import_module(package)
    assert _stub_names(package) == module._EXPORTS
    for name, where in module._EXPORTS.items():
        assert hasattr(importlib.import_module(where), name), f"{where} has no {name}"


@pytest.mark.parametrize("package", PACKAGES)
def test_scalar_classes_are_ordinary_subclasses_with_real_signatures(package):
    from torchmetrics import Metric

    module = importlib.import_module(package)
    classes = [getattr(module, n) for n in module.__all__ if inspect.isclass(getattr(module, n))]
    metrics = [c for c in classes if issubclass(c, Metric)]
    assert len(metrics) >= 13
    for cls in metrics:
        params = inspect.signature(cls).parameters
        assert "compat" not in params or params["compat"].default == "default", cls.__name__
        assert "variant" not in params, cls.__name__
        assert [p.kind for p in params.values()].count(inspect.Parameter.VAR_POSITIONAL) == 0, cls.__name__
        assert cls.__module__.startswith(package), cls.__name__  # defined in its family module, not at run time
        assert f"class {cls.__name__}(" in inspect.getsource(importlib.import_module(cls.__module__))
        if not cls.__name__.endswith("Metrics"):  # a scalar subclasses its dict family
            assert any(base.__name__.endswith("Metrics") for base in cls.__mro__[1:]), cls.__name__


def test_kernel_modules_import_no_metric_module():
    """Helpers (geometry, path_similarity, io) define no Metric; no module imports another family's Metric module."""
    metric_modules = set()
    sources = {}
    for package in PACKAGES:
        folder = ROOT / Path(*package.split("."))
        for path in folder.glob("*.py"):
            name = f"{package}.{path.stem}"
            sources[name] = path.read_text(encoding="utf-8")
            if "(GraphMetric)" in sources[name] or "(PerSampleMean)" in sources[name] or "(Metric)" in sources[name]:
                metric_modules.add(name)
    helpers = {
        "drivemetrics.graph.geometry",
        "drivemetrics.graph.path_similarity",
        "drivemetrics.roadnet.io",
        "drivemetrics.lanegraph.geometry",
        "drivemetrics.lanegraph.geo_topo",
        "drivemetrics.lanegraph.sda",
        "drivemetrics.lanegraph.iou",
        "drivemetrics.lanegraph.apls",
    }
    assert not helpers & metric_modules
    for name, text in sources.items():
        if name.endswith(("evaluate", "cli", "sensitivity", "__init__", "_metric")):
            continue
        imported = {n.module for n in ast.walk(ast.parse(text)) if isinstance(n, ast.ImportFrom)}
        bad = {m for m in imported if m in metric_modules and not m.endswith("._metric")}
        assert not bad, f"{name} imports the Metric module(s) {sorted(bad)}"
