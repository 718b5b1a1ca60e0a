"""Layering (issue 12), checked statically on the source with ``ast`` (imports inside functions count too).

``geometry`` and ``vehicle`` at the bottom; the metric domains above them; ``demos``, ``synthetic`` and the CLI on
top. No domain imports ``drivemetrics.synthetic`` or ``drivemetrics.demos``; the bottom layer imports no domain.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "drivemetrics"
BOTTOM = ("geometry", "vehicle", "polyline")
DOMAINS = ("road", "lane", "roadnet", "lanegraph", "attack", "detection", "vectormap")
TOP = ("drivemetrics.synthetic", "drivemetrics.demos")


def imported_modules(path: Path) -> set[str]:
    """Absolute names of the modules ``path`` imports (``import``, ``from``, ``importlib.import_module("...")``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1])
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, *([base] if base else [])])
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            names.add(node.args[0].value)
    return names


def sources(*layers: str) -> list[Path]:
    return sorted(p for layer in layers if (PACKAGE / layer).is_dir() for p in (PACKAGE / layer).rglob("*.py"))


def offending(paths: list[Path], forbidden: tuple[str, ...]) -> dict[str, list[str]]:
    found = {}
    for path in paths:
        bad = sorted(m for m in imported_modules(path) if any(m == f or m.startswith(f + ".") for f in forbidden))
        if bad:
            found[str(path.relative_to(PACKAGE.parent))] = bad
    return found


def test_the_checker_sees_every_import_form(tmp_path, monkeypatch):
    fake = tmp_path / "drivemetrics" / "road"
    fake.mkdir(parents=True)
    (fake / "x.py").write_text(
        "import drivemetrics.synthetic\n"
        "from ..demos import graph\n"
        "def f():\n"
        "    from drivemetrics.synthetic.road_scene import make\n"
        "    importlib.import_module('drivemetrics.demos.road')\n"
    )
    monkeypatch.setattr(f"{__name__}.PACKAGE", tmp_path / "drivemetrics")
    assert offending([fake / "x.py"], TOP) == {
        "drivemetrics/road/x.py": [
            "drivemetrics.demos",
            "drivemetrics.demos.graph",
            "drivemetrics.demos.road",
            "drivemetrics.synthetic",
            "drivemetrics.synthetic.road_scene",
            "drivemetrics.synthetic.road_scene.make",
        ]
    }


def test_domains_have_sources():
    assert len(sources(*BOTTOM, *DOMAINS)) > 20


@pytest.mark.parametrize("layer", BOTTOM + DOMAINS)
def test_no_domain_imports_synthetic_or_demos(layer):
    assert offending(sources(layer), TOP) == {}


@pytest.mark.parametrize("layer", BOTTOM)
def test_bottom_layer_imports_no_domain(layer):
    assert offending(sources(layer), tuple(f"drivemetrics.{d}" for d in DOMAINS) + TOP) == {}
