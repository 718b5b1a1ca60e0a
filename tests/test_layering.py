"""Layering (issues 12 and 46), checked statically on the source with ``ast`` (imports inside functions count too).

Four layers, imports only downwards (``docs/pages/conventions.md``, "Who imports whom"):

1. ``SHARED``: the private plumbing (``_internal``, with the array layer), the packaged configurations, and the
   lower packages the metric domains share (``geometry``, ``vehicle``, ``polyline``, ``graph``): they import no
   package of a layer above.
2. ``DOMAINS``: the metric domains. A domain imports layer 1 and its own modules, never another domain: what two
   domains use lives in one lower package of layer 1 (``graph`` for ``roadnet`` and ``lanegraph``, ``polyline`` for
   ``lanetopology`` and ``vectormap``).
3. ``APPLICATIONS``: tools built on the metrics, defining none (``attack`` drives a lane detector through the
   ``lane`` controller and losses); they import layers 1 and 2.
4. ``TOP``: ``synthetic``, ``demos`` (and the top-level modules ``cli``, ``functional``): use anything below.

Every package of ``drivemetrics`` is named in exactly one list, so a new domain cannot land unchecked. And numpy
versus torch is decided in one module, the array layer ``drivemetrics/_internal/arrays.py``: anywhere else an
``isinstance`` / ``issubclass`` / ``type(...) is`` naming an array type (``np.ndarray``, ``np.generic``,
``Tensor``), a call of ``torch.is_tensor`` or of the array layer's library switch ``is_numpy`` fails; code calls the
layer's functions instead (``arrays.is_tensor``, ``arrays.is_ndarray``, ``arrays.on_device``, ``arrays.to_numpy``...).

Each rule is self-tested on a small fake package that breaks it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "drivemetrics"
SHARED = ("_internal", "configs", "geometry", "vehicle", "polyline", "graph")
DOMAINS = ("road", "lane", "lane3d", "lanetopology", "roadnet", "lanegraph", "detection", "vectormap")
APPLICATIONS = ("attack",)
TOP = ("synthetic", "demos")
#: The one module allowed to tell numpy from torch.
ARRAY_LAYER = "_internal/arrays.py"
#: Names whose appearance in an ``isinstance`` / ``issubclass`` / ``type(x) is`` check makes it an array-type check.
ARRAY_TYPES = frozenset({"ndarray", "generic", "Tensor"})


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


def packages(root: Path) -> list[str]:
    """The subpackages of ``root`` (folders holding an ``__init__.py``)."""
    return sorted(p.name for p in root.iterdir() if (p / "__init__.py").is_file())


def unlisted_packages(root: Path) -> list[str]:
    """Packages of ``root`` in none of the layer lists (or in several)."""
    listed = [*SHARED, *DOMAINS, *APPLICATIONS, *TOP]
    return [name for name in packages(root) if listed.count(name) != 1]


def domain_crossings(root: Path) -> dict[str, list[str]]:
    """Imports of one domain's modules from another domain's, under ``root`` (the ``drivemetrics`` folder)."""
    found: dict[str, list[str]] = {}
    for domain in DOMAINS:
        others = tuple(f"drivemetrics.{d}" for d in DOMAINS if d != domain)
        for path in sorted((root / domain).rglob("*.py")) if (root / domain).is_dir() else []:
            bad = sorted(m for m in imported_modules(path) if any(m == f or m.startswith(f + ".") for f in others))
            if bad:
                found[str(path.relative_to(root.parent))] = bad
    return found


def _names(node: ast.AST) -> set[str]:
    return {getattr(n, "id", getattr(n, "attr", "")) for n in ast.walk(node)}


def _is_type_check(node: ast.AST) -> bool:
    if isinstance(node, ast.Call):
        func = node.func
        name = getattr(func, "id", getattr(func, "attr", None))
        if name in ("isinstance", "issubclass"):
            return len(node.args) == 2 and bool(_names(node.args[1]) & ARRAY_TYPES)
        torch_call = getattr(getattr(func, "value", None), "id", "") == "torch"
        return name == "is_numpy" or (name == "is_tensor" and torch_call)
    if isinstance(node, ast.Compare):
        equality = any(isinstance(op, (ast.Is, ast.IsNot, ast.Eq, ast.NotEq)) for op in node.ops)
        return equality and any(_names(c) & ARRAY_TYPES for c in node.comparators)
    return False


def array_type_checks(path: Path) -> list[int]:
    """Lines of ``path`` that decide numpy versus torch by themselves (see the module docstring)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return sorted(node.lineno for node in ast.walk(tree) if _is_type_check(node))


def type_checks_outside_the_array_layer(root: Path) -> dict[str, list[int]]:
    found = {}
    for path in sorted(root.rglob("*.py")):
        if path.relative_to(root).as_posix() == ARRAY_LAYER:
            continue
        lines = array_type_checks(path)
        if lines:
            found[str(path.relative_to(root.parent))] = lines
    return found


# ---------------------------------------------------------------------------------------------------------------
# self-tests: each checker reports a fake package that breaks its rule


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
    assert offending([fake / "x.py"], tuple(f"drivemetrics.{t}" for t in TOP)) == {
        "drivemetrics/road/x.py": [
            "drivemetrics.demos",
            "drivemetrics.demos.graph",
            "drivemetrics.demos.road",
            "drivemetrics.synthetic",
            "drivemetrics.synthetic.road_scene",
            "drivemetrics.synthetic.road_scene.make",
        ]
    }


def test_the_checker_sees_a_domain_importing_another(tmp_path, monkeypatch):
    root = tmp_path / "drivemetrics"
    for name in ("lanegraph", "roadnet", "graph"):
        (root / name).mkdir(parents=True)
        (root / name / "__init__.py").write_text("")
    (root / "lanegraph" / "apls.py").write_text(
        "from drivemetrics.graph.geometry import index_in_group\n"  # through the shared package: allowed
        "from drivemetrics.lanegraph import io\n"  # its own modules: allowed
        "from ..roadnet.geometry import graph_pairs\n"
        "def f():\n"
        "    import drivemetrics.roadnet.io\n"
    )
    (root / "roadnet" / "ok.py").write_text("from drivemetrics.graph import geometry\n")
    monkeypatch.setattr(f"{__name__}.PACKAGE", root)
    assert domain_crossings(root) == {
        "drivemetrics/lanegraph/apls.py": [
            "drivemetrics.roadnet.geometry",
            "drivemetrics.roadnet.geometry.graph_pairs",
            "drivemetrics.roadnet.io",
        ]
    }


def test_the_checker_sees_an_unlisted_package(tmp_path):
    root = tmp_path / "drivemetrics"
    for name in ("lane", "newdomain", "not_a_package"):
        (root / name).mkdir(parents=True)
    (root / "lane" / "__init__.py").write_text("")
    (root / "newdomain" / "__init__.py").write_text("")
    assert unlisted_packages(root) == ["newdomain"]


@pytest.mark.parametrize(
    "line",
    [
        "isinstance(x, np.ndarray)",
        "isinstance(x, (list, numpy.ndarray))",
        "isinstance(x, np.generic)",
        "isinstance(x, torch.Tensor)",
        "not isinstance(x, Tensor)",
        "issubclass(type(x), Tensor)",
        "type(x) is np.ndarray",
        "torch.is_tensor(x)",
        "xp.is_numpy(x)",
        "is_numpy(x)",
    ],
)
def test_the_checker_sees_every_array_type_check(tmp_path, line):
    root = tmp_path / "drivemetrics"
    (root / "_internal").mkdir(parents=True)
    (root / "lane").mkdir()
    (root / "lane" / "x.py").write_text(f"def f(x):\n    return {line}\n")
    (root / "lane" / "ok.py").write_text(
        "def f(x, y):\n"
        "    return arrays.is_tensor(x) or arrays.is_ndarray(y) or isinstance(x, (list, tuple)) or x.is_numpy\n"
    )
    (root / ARRAY_LAYER).write_text(f"def is_numpy(x):\n    return {line}\n")  # the array layer may
    assert type_checks_outside_the_array_layer(root) == {"drivemetrics/lane/x.py": [2]}


# ---------------------------------------------------------------------------------------------------------------
# the rules on the library


def test_every_package_is_in_one_layer():
    assert unlisted_packages(PACKAGE) == []


def test_domains_have_sources():
    assert len(sources(*SHARED, *DOMAINS)) > 20
    assert all((PACKAGE / d).is_dir() for d in (*SHARED, *DOMAINS, *APPLICATIONS, *TOP))


@pytest.mark.parametrize("layer", SHARED + DOMAINS + APPLICATIONS)
def test_nothing_below_the_top_imports_synthetic_or_demos(layer):
    assert offending(sources(layer), tuple(f"drivemetrics.{t}" for t in TOP)) == {}


@pytest.mark.parametrize("layer", SHARED)
def test_shared_layer_imports_no_domain(layer):
    above = (*(f"drivemetrics.{d}" for d in DOMAINS + APPLICATIONS + TOP), "drivemetrics.cli")
    assert offending(sources(layer), above) == {}


@pytest.mark.parametrize("layer", DOMAINS)
def test_domain_imports_no_application(layer):
    assert offending(sources(layer), tuple(f"drivemetrics.{a}" for a in APPLICATIONS)) == {}


def test_no_domain_imports_another_domain():
    assert domain_crossings(PACKAGE) == {}


def test_numpy_or_torch_is_told_apart_only_in_the_array_layer():
    assert type_checks_outside_the_array_layer(PACKAGE) == {}
