"""The layout rule of the library (issue 23), checked statically on the source with ``ast``.

The rule (README, "Layout"): one module ``drivemetrics/<domain>/<family>.py`` holds one metric family: its functional
kernel(s) (re-exported flat by ``drivemetrics.functional``), its ``torchmetrics.Metric`` classes and its loss. Every
domain names its other modules alike: ``io.py`` reads and writes files, ``evaluate.py`` evaluates a dataset or
folder, ``plot.py`` draws, ``cli.py`` holds the subcommands; shared helpers of a domain live in modules that define
no Metric. Hence:

1. a Metric class is defined only in a family module, beside a kernel of ``drivemetrics.functional``;
2. no module but ``evaluate`` / ``cli`` / ``plot`` (and the top layer: ``demos``, ``synthetic``, ``functional``)
   imports a Metric-defining module other than itself: kernels and helpers never depend on Metric classes;
3. scalar classes are ordinary subclasses of their family written in the source (no ``type()`` factory, no
   ``ScalarFromDict`` mixin; ``tests/test_api.py`` checks that their signatures show the family's parameters);
   a domain's private Metric base classes live in ``<domain>/_metric.py``;
4. a family module reads and writes no files (that is ``io.py``), and no domain has the old catch-all module names
   (``metrics.py``, ``loss.py``, ``*_metric.py``, ``*_eval.py``, ``*_io.py``);
5. a lazy package's exports never share a name with one of its submodules, and its ``__init__.pyi`` lists exactly
   the names of its ``_EXPORTS`` from the same modules (so type checkers see what the run time exports).

The self-tests at the top build a small package that breaks each rule and check that the checker reports it.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "drivemetrics"
#: Domains exempt from the rule (none: the graph split landed as roadnet/ and lanegraph/).
NOT_YET_SPLIT: tuple[str, ...] = ()
#: Modules allowed to import Metric classes: they run or present metrics, they are not kernels or helpers.
CONSUMERS = ("evaluate", "cli", "plot", "__init__", "__main__")
#: A domain's private Metric base classes (shared ``update`` / state plumbing, no kernel): ``<domain>/_metric.py``;
#: family modules may subclass them.
METRIC_BASES = "_metric"
TOP_LAYER = ("demos", "synthetic", "functional", "cli", "demo")
FILE_CALLS = ("open", "read_text", "write_text", "read_bytes", "atomic_write_text", "atomic_open", "load_image")
OLD_NAMES = ("metrics", "loss", "scalar_metrics")
OLD_SUFFIXES = ("_metric", "_eval", "_io")


def _modules(root: Path) -> dict[str, ast.Module]:
    """``{"drivemetrics.road.pixel": tree}`` for every module under ``root`` (the ``drivemetrics`` folder)."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        out[".".join(parts)] = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return out


def _base_names(node: ast.ClassDef) -> list[str]:
    names = []
    for base in node.bases:
        while isinstance(base, ast.Attribute):
            base = ast.Name(id=base.attr)
        if isinstance(base, ast.Name):
            names.append(base.id)
    return names


def _metric_classes(modules: dict[str, ast.Module]) -> dict[str, dict[str, ast.ClassDef]]:
    """``{module: {class name: node}}`` of the classes that derive from ``torchmetrics.Metric`` (by base names)."""
    classes = {(m, n.name): n for m, tree in modules.items() for n in tree.body if isinstance(n, ast.ClassDef)}
    metric_names = {"Metric"}
    while True:
        grown = metric_names | {name for (_, name), node in classes.items() if set(_base_names(node)) & metric_names}
        if grown == metric_names:
            break
        metric_names = grown
    found: dict[str, dict[str, ast.ClassDef]] = {}
    for (module, name), node in classes.items():
        if name in metric_names - {"Metric"}:
            found.setdefault(module, {})[name] = node
    return found


def _imports(module: str, tree: ast.Module) -> set[str]:
    """Absolute names of the modules ``tree`` imports (``from a.b import c`` gives ``a.b`` and ``a.b.c``)."""
    names: set[str] = set()
    package = module.rsplit(".", 1)[0]
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
    return names


def _kernels(modules: dict[str, ast.Module]) -> set[tuple[str, str]]:
    """``(module, name)`` of every kernel that ``drivemetrics.functional`` re-exports."""
    tree = modules.get("drivemetrics.functional")
    if tree is None:
        return set()
    return {
        (node.module, alias.name)
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and node.module
        for alias in node.names
    }


def _checked(module: str) -> bool:
    parts = module.split(".")
    return len(parts) > 1 and parts[1] not in NOT_YET_SPLIT


def layout_violations(root: Path) -> list[str]:
    """Every breach of rules 1-4 under ``root`` (a ``drivemetrics`` folder), one line each."""
    modules = _modules(root)
    metric_modules = _metric_classes(modules)
    kernel_modules = {m for m, _ in _kernels(modules)}
    problems = []
    for module, classes in metric_modules.items():
        if not _checked(module):
            continue
        leaf = module.rsplit(".", 1)[1]
        if leaf == METRIC_BASES:
            continue
        if leaf in CONSUMERS or leaf.startswith("_") or module not in kernel_modules:
            problems.append(f"{module}: Metric classes {sorted(classes)} outside a family module beside its kernel")
    for module, tree in modules.items():
        if not _checked(module):
            continue
        parts = module.split(".")
        leaf = parts[-1]
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "type" and len(node.args) == 3:
                problems.append(f"{module}: a class made at run time with type(name, bases, namespace)")
            if isinstance(node, ast.Name) and node.id == "ScalarFromDict":
                problems.append(f"{module}: uses the ScalarFromDict mixin (write an ordinary subclass)")
        if not leaf.startswith("_") and (leaf in OLD_NAMES or leaf.endswith(OLD_SUFFIXES)):
            problems.append(f"{module}: old module name (use <family>.py, io.py, evaluate.py, plot.py, cli.py)")
        if leaf not in CONSUMERS and parts[1] not in TOP_LAYER:
            for imported in sorted(_imports(module, tree)):
                if imported in metric_modules and imported != module and not imported.endswith("." + METRIC_BASES):
                    problems.append(f"{module}: imports the Metric-defining module {imported}")
        if module in metric_modules:
            calls = {
                getattr(n.func, "attr", getattr(n.func, "id", None)) for n in ast.walk(tree) if isinstance(n, ast.Call)
            }
            for name in sorted(calls & set(FILE_CALLS)):
                problems.append(f"{module}: a family module doing file I/O ({name}); that belongs in io.py")
    return problems


def stub_violations(root: Path) -> list[str]:
    """Breaches of rule 5: exports named like submodules, stubs that disagree with ``_EXPORTS``."""
    problems = []
    for init in sorted(root.rglob("__init__.py")):
        tree = ast.parse(init.read_text(encoding="utf-8"))
        exports = None
        for node in tree.body:
            if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "_EXPORTS":
                exports = _literal_exports(node.value, tree)
        if exports is None:
            continue
        package = ".".join(init.parent.relative_to(root.parent).parts)
        if package.split(".")[-1] in NOT_YET_SPLIT:
            continue
        submodules = {p.stem for p in init.parent.glob("*.py")} | {p.name for p in init.parent.iterdir() if p.is_dir()}
        for name, module in exports.items():
            if name in submodules and module != f"{package}.{name}":
                problems.append(f"{package}: exports {name!r}, also the name of a submodule")
        stub = init.with_suffix(".pyi")
        if not stub.exists():
            problems.append(f"{package}: no __init__.pyi stub")
            continue
        stubbed = {}
        stub_tree = ast.parse(stub.read_text(encoding="utf-8"))
        for node in stub_tree.body:
            if isinstance(node, ast.ImportFrom) and node.module:
                for alias in node.names:
                    name = alias.asname or alias.name
                    submodule = f"{node.module}.{alias.name}"
                    path = root.parent / Path(*submodule.split("."))
                    is_module = path.is_dir() or path.with_suffix(".py").exists()
                    stubbed[name] = submodule if is_module else node.module
        if stubbed != exports:
            missing = sorted(set(exports) - set(stubbed))
            extra = sorted(set(stubbed) - set(exports))
            moved = sorted(n for n in set(exports) & set(stubbed) if exports[n] != stubbed[n])
            problems.append(f"{package}: __init__.pyi disagrees: missing {missing}, extra {extra}, moved {moved}")
    return problems


def _literal_exports(value: ast.expr, tree: ast.Module) -> dict[str, str]:
    """The ``_EXPORTS`` dict, also when written as ``{**_A, **_B}`` of module-level dict literals."""
    if isinstance(value, ast.Dict):
        out = {}
        for key, item in zip(value.keys, value.values, strict=True):
            if key is None and isinstance(item, ast.Name):
                for node in tree.body:
                    if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == item.id:
                        out.update(_literal_exports(node.value, tree))
            elif key is not None:
                out[ast.literal_eval(key)] = ast.literal_eval(item)
        return out
    return ast.literal_eval(value)


# ---------------------------------------------------------------------------------------------- the checker itself


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / "drivemetrics" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return root / "drivemetrics"


GOOD = {
    "__init__.py": "",
    "functional.py": "from drivemetrics.lane.culane import culane_f1\n",
    "lane/__init__.py": "",
    "lane/culane.py": textwrap.dedent(
        """
        from torchmetrics import Metric
        def culane_f1(preds, target): ...
        class CULaneMetrics(Metric): ...
        class CULaneF1Score(CULaneMetrics):
            def __init__(self, height: int = 590) -> None: ...
        """
    ),
    "lane/evaluate.py": "from drivemetrics.lane.culane import CULaneMetrics\n",
}


def test_the_checker_passes_a_package_that_follows_the_rule(tmp_path):
    assert layout_violations(_write(tmp_path, GOOD)) == []


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"lane/evaluate.py": "from torchmetrics import Metric\nclass Extra(Metric): ...\n"}, "outside a family"),
        ({"lane/helpers.py": "from torchmetrics import Metric\nclass Extra(Metric): ...\n"}, "outside a family"),
        ({"lane/tusimple.py": "from drivemetrics.lane.culane import culane_f1\n"}, "imports the Metric-defining"),
        ({"lane/io.py": "from drivemetrics.lane import culane\n"}, "imports the Metric-defining"),
        ({"lane/culane.py": GOOD["lane/culane.py"] + "Made = type('Made', (CULaneMetrics,), {})\n"}, "run time"),
        (
            {"lane/culane.py": GOOD["lane/culane.py"] + "class A(ScalarFromDict, CULaneMetrics): ...\n"},
            "ScalarFromDict",
        ),
        ({"lane/culane.py": GOOD["lane/culane.py"] + "def read(p):\n    return open(p).read()\n"}, "file I/O"),
        ({"lane/metrics.py": "x = 1\n"}, "old module name"),
        ({"lane/kitti_io.py": "x = 1\n"}, "old module name"),
    ],
)
def test_the_checker_reports_a_module_that_breaks_the_rule(tmp_path, files, expected):
    problems = layout_violations(_write(tmp_path, {**GOOD, **files}))
    assert any(expected in p for p in problems), problems


def test_the_stub_checker_reports_disagreements_and_name_clashes(tmp_path):
    exports = '_EXPORTS = {"culane_f1": "drivemetrics.lane.culane", "culane": "drivemetrics.lane.evaluate"}\n'
    root = _write(tmp_path, {**GOOD, "lane/__init__.py": exports})
    problems = stub_violations(root)
    assert any("no __init__.pyi" in p for p in problems)
    assert any("'culane', also the name of a submodule" in p for p in problems)
    (root / "lane" / "__init__.pyi").write_text("from drivemetrics.lane.culane import culane_f1\n", encoding="utf-8")
    assert any("missing ['culane']" in p for p in stub_violations(root))


# ----------------------------------------------------------------------------------------------- the library


def test_the_library_follows_the_layout_rule():
    assert layout_violations(PACKAGE) == []


def test_every_lazy_package_has_a_matching_stub_and_no_export_shadows_a_submodule():
    assert stub_violations(PACKAGE) == []
