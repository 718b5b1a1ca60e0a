"""Type checkers see the public API (issues 23, 50): mypy and pyright report exactly a user script's wrong calls.

The checkers see the package as the README installs it: ``pip install -e ".[dev]"``, whose editable wheel the
test builds with the project's own build backend and installs into a fresh virtual environment (no ``MYPYPATH``,
no ``extraPaths``). ``pyproject.toml``'s ``package-dir`` makes that wheel a plain path entry (``.pth``) instead of
setuptools' import hook, which neither checker follows; the test fails if the wheel holds an import hook again.

The script imports through the lazy packages (``drivemetrics``, ``drivemetrics.<domain>``, whose ``__init__.pyi``
stubs list the exports) and ``drivemetrics.functional``; it makes correct calls, which must pass, and one call per
line marked ``# wrong`` with an argument of the wrong type, which must be reported on that line and nowhere else.
Besides the hand-written lines, every mode argument typed with a ``Literal`` (``compat``, ``protocol``,
``reduction``, ``track``, ...) of every exported class and kernel gets two generated lines: its first allowed value
(no report) and a wrong string (reported); a new class or kernel is covered when it is exported. If a class or kernel
were typed ``Any`` (the issue's "Module is not callable", unresolved lazy names), the wrong calls would pass and the
test fails. Slow (mypy reads torch's stubs: about a minute, cached afterwards).
"""

from __future__ import annotations

import functools
import inspect
import os
import re
import shutil
import subprocess
import sys
import textwrap
import typing
import venv
import zipfile
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]

SCRIPT = """
import torch

import drivemetrics
import drivemetrics.functional as F
from drivemetrics.detection import KittiObjectAveragePrecision
from drivemetrics.lane import (
    CULaneF1Score,
    CULanePrecision,
    CULaneRecall,
    CurveLanesF1Score,
    CurveLanesPrecision,
    CurveLanesRecall,
    LlamasF1Score,
    LlamasF1Score75,
    LlamasMeanF1Score,
    LlamasPrecision,
    LlamasRecall,
    TuSimpleAccuracy,
    TuSimpleF1Score,
    TuSimpleFalseNegatives,
    TuSimpleFalsePositives,
)
from drivemetrics.road import (
    DrivingCorridorHitRate,
    DrivingCorridorLateralPrecision,
    DrivingCorridorLongitudinalF1Score,
    RoadPixelAveragePrecision,
    RoadPixelMaxFScore,
)

x = torch.zeros(1, 2, 3)
deviation: torch.Tensor = F.psld(x, x, speed=20.0)
scores: dict[str, torch.Tensor] = F.culane_f1(x, x, height=590)
pooled: dict[str, torch.Tensor] = F.road_pixel_scores(x, x)
metric = drivemetrics.road.RoadPixelMetrics(beta=1.0)
value: torch.Tensor = RoadPixelMaxFScore().compute()
version: str = drivemetrics.__version__
config_names: list[str] = drivemetrics.configs.config_names()
corridor = drivemetrics.DrivingCorridorMetrics()
scene = drivemetrics.synthetic
F.psld(x, x, speed="fast")  # wrong
F.culane_f1(x, x, height="590")  # wrong
F.tusimple_metrics(x, x, h_samples=x, compat="official")  # wrong
F.culane_f1(x, x, 590)  # wrong
drivemetrics.CULaneMetrics(line_width="30")  # wrong
RoadPixelMaxFScore(beta="1")  # wrong
RoadPixelAveragePrecision(integrated="yes")  # wrong
DrivingCorridorLateralPrecision(threshold="0.5")  # wrong
DrivingCorridorLongitudinalF1Score(0.5, distance="30")  # wrong
DrivingCorridorHitRate(0.5, grid=3)  # wrong
CULanePrecision(height="590")  # wrong
CULaneRecall(line_width="30")  # wrong
CULaneF1Score(compat="official")  # wrong
TuSimpleAccuracy(image_width="1280")  # wrong
LlamasPrecision(line_width="30")  # wrong
LlamasRecall(compat="official")  # wrong
LlamasF1Score(iou="area")  # wrong
LlamasF1Score75(line_width="30")  # wrong
LlamasMeanF1Score(compat="official")  # wrong
CurveLanesPrecision(score_threshold="0.5")  # wrong
CurveLanesRecall(compat="official")  # wrong
CurveLanesF1Score(iou_threshold="0.5")  # wrong
TuSimpleFalsePositives(pixel_threshold="20")  # wrong
TuSimpleFalseNegatives(compat="official")  # wrong
TuSimpleF1Score(image_width="1280")  # wrong
KittiObjectAveragePrecision(recall_points="40")  # wrong
lines, ids = x[None], x[..., 0].long()
map_preds = {"points": lines, "labels": ids, "scores": x[..., 0]}
map_scores: dict[str, torch.Tensor] = F.vector_map_ap(map_preds, {"points": lines, "labels": ids})
map_value: torch.Tensor = drivemetrics.VectorMapMeanAveragePrecision(protocol="av2-cvpr23").compute()
F.vector_map_ap(map_preds, map_preds, protocol=3)  # wrong
F.vector_map_ap(lines, None, ids, x, lines, None, ids)  # wrong
drivemetrics.VectorMapAveragePrecision("divider", threshold="1.0")  # wrong
drivemetrics.MapChamferLoss(reduction=3)  # wrong
drivemetrics.VectorMapMeanAveragePrecision(protocol="nuscenes")  # wrong
F.vector_map_ap(map_preds, map_preds, protocol="nuscenes")  # wrong
KittiObjectAveragePrecision(difficulty="medium")  # wrong
KittiObjectAveragePrecision(cls="truck")  # wrong
drivemetrics.SoftFMeasureLoss(reduction="average")  # wrong
RoadPixelMaxFScore(compat="official")  # wrong
"""

#: The road-network kernels (the script checks them when drivemetrics.functional has them).
GRAPH_LINES = """
from typing import Any
g: Any = None  # a networkx graph (networkx ships no type stubs, so graphs are Any; the keywords are checked)
opt_j_scores = F.opt_j(g, g, d_max=25.0)
apls_value = F.apls(g, g, protocol="cosmiq")
F.opt_j(g, g, d_max="25")  # wrong
F.apls(g, g, protocol=3)  # wrong
F.apls(g, g, protocol="spacenet")  # wrong
F.opt_j(g, g, compat="official")  # wrong
F.opt_g(g, g, matching="hungarian")  # wrong
drivemetrics.OptPMetrics(compat="official")  # wrong
drivemetrics.LaneGraphMetrics(task="crops")  # wrong
drivemetrics.LaneGraphPlanningMetrics(compat="official")  # wrong
F.psld(x, x, speed=20.0, reduction="average")  # wrong
"""


#: A value the script passes for every required argument that is not under test (``Any`` fits every type).
ANY_LINE = "from typing import Any as _Any\n_a: _Any = None\n"


def _literal_values(annotation: object) -> list[str]:
    """The strings of the ``Literal`` types in ``annotation`` (through unions and optionals)."""
    if typing.get_origin(annotation) is typing.Literal:
        return [value for value in typing.get_args(annotation) if isinstance(value, str)]
    return [value for arg in typing.get_args(annotation) for value in _literal_values(arg)]


@functools.cache
def _hint_namespace() -> dict[str, object]:
    """Names the annotations use under ``TYPE_CHECKING`` only: every module-level ``Literal`` alias, torch, numpy."""
    import importlib

    import numpy
    import torch

    namespace: dict[str, object] = {"torch": torch, "np": numpy, "Tensor": torch.Tensor}
    for path in sorted((REPO_ROOT / "drivemetrics").rglob("*.py")):
        aliases = re.findall(r"^(\w+) = Literal\[", path.read_text(encoding="utf-8"), flags=re.M)
        if aliases:
            module = importlib.import_module(".".join(path.relative_to(REPO_ROOT).with_suffix("").parts))
            namespace.update({name: getattr(module, name) for name in aliases})
    return namespace


def literal_arguments() -> list[tuple[str, inspect.Signature, str, list[str]]]:
    """``(call, signature, argument, allowed strings)`` of every ``Literal`` argument of the public classes and kernels.

    ``call`` is how the script names the callable: ``drivemetrics.<Class>`` (every Metric and loss class) or
    ``F.<kernel>`` (``drivemetrics.functional``).
    """
    import drivemetrics
    import drivemetrics.functional as F

    found = []
    for prefix, module in (("drivemetrics", drivemetrics), ("F", F)):
        for name in module.__all__:
            obj = getattr(module, name)
            if not callable(obj):
                continue
            function = obj.__init__ if inspect.isclass(obj) else obj
            hints = typing.get_type_hints(function, localns=_hint_namespace())
            signature = inspect.signature(obj)
            for parameter in signature.parameters.values():
                values = _literal_values(hints.get(parameter.name))
                if values:
                    found.append((f"{prefix}.{name}", signature, parameter.name, values))
    return found


def _call(call: str, signature: inspect.Signature, argument: str, value: str) -> str:
    """``call(...)`` with ``argument=value`` and ``_a`` (``Any``) for every other required argument."""
    args = []
    for parameter in signature.parameters.values():
        if parameter.name == argument:
            args.append(f"{argument}={value!r}")
        elif parameter.default is inspect.Parameter.empty and parameter.kind not in (
            inspect.Parameter.VAR_POSITIONAL,
            inspect.Parameter.VAR_KEYWORD,
        ):
            positional = parameter.kind is inspect.Parameter.POSITIONAL_ONLY
            args.append("_a" if positional else f"{parameter.name}=_a")
    return f"{call}({', '.join(args)})"


def literal_lines() -> str:
    """Two lines per ``Literal`` argument: its first allowed value (correct) and a wrong string (``# wrong``)."""
    lines = [ANY_LINE.rstrip("\n")]
    for call, signature, argument, values in literal_arguments():
        lines.append(_call(call, signature, argument, values[0]))
        lines.append(_call(call, signature, argument, "not-a-mode") + "  # wrong")
    return "\n".join(lines) + "\n"


def _script() -> str:
    import drivemetrics.functional as F

    text = textwrap.dedent(SCRIPT)
    if hasattr(F, "opt_j") and hasattr(F, "apls"):
        text += textwrap.dedent(GRAPH_LINES)
    return text + literal_lines()


def _takes_plain_str(annotation: object) -> bool:
    return annotation is str or any(_takes_plain_str(arg) for arg in typing.get_args(annotation))


def test_every_mode_argument_is_a_literal_and_the_script_covers_it():
    """The string mode arguments are typed ``Literal`` (a plain ``str`` would let a wrong mode through the checkers)."""
    import drivemetrics
    import drivemetrics.functional as F

    modes = {"compat", "protocol", "reduction", "mode", "track", "space", "assignment", "distance", "task"}
    plain = []
    for prefix, module in (("drivemetrics", drivemetrics), ("F", F)):
        for name in module.__all__:
            obj = getattr(module, name)
            if callable(obj):
                function = obj.__init__ if inspect.isclass(obj) else obj
                hints = typing.get_type_hints(function, localns=_hint_namespace())
                plain += [
                    f"{prefix}.{name}({p})"
                    for p in inspect.signature(obj).parameters
                    if p in modes and p in hints and _takes_plain_str(hints[p])
                ]
    assert not plain, f"mode arguments typed without Literal: {plain}"
    covered = {(call, argument) for call, _, argument, _ in literal_arguments()}
    assert ("drivemetrics.MapChamferLoss", "mode") in covered
    assert ("F.vector_map_ap", "protocol") in covered
    assert len(covered) > 100


def test_the_generated_lines_call_with_the_allowed_value_then_a_wrong_one():
    text = literal_lines()
    assert "drivemetrics.VectorMapAveragePrecision(class_name=_a, protocol='default')\n" in text
    assert "drivemetrics.VectorMapAveragePrecision(class_name=_a, protocol='not-a-mode')  # wrong\n" in text


def test_the_script_builds_every_scalar_class_of_the_split_domains():
    import drivemetrics

    scalar = {
        name
        for name in drivemetrics.__all__
        if inspect.isclass(cls := getattr(drivemetrics, name))
        and cls.__module__.split(".")[1] in ("road", "lane", "detection")
        and any(b.__name__.endswith("Metrics") and b.__module__ == cls.__module__ for b in cls.__mro__[1:])
    }
    built = set(re.findall(r"^(\w+)\(", SCRIPT, flags=re.M))
    assert scalar <= built, sorted(scalar - built)


@pytest.fixture(scope="module")
def editable_install(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment holding the README's editable install; returns its interpreter.

    The editable wheel comes from the project's build backend (what ``pip install -e .`` asks it for) and is unpacked
    as pip installs a wheel; the environment sees the test's own dependencies (torch, numpy, ...) through a path entry
    to their ``site-packages``, whose ``.pth`` files (an editable install of another checkout) are not processed.
    """
    root = tmp_path_factory.mktemp("editable")
    build = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from setuptools import build_meta; print(build_meta.build_editable(sys.argv[1]))",
            str(root),
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert build.returncode == 0, build.stderr[-2000:]
    wheel = root / build.stdout.strip().splitlines()[-1]
    env = root / "venv"
    venv.EnvBuilder(with_pip=False).create(env)
    python = env / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    site = Path(
        subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    with zipfile.ZipFile(wheel) as archive:
        pth = [name for name in archive.namelist() if name.endswith(".pth")]
        hooks = [name for name in archive.namelist() if name.endswith(".py")]
        assert not hooks, f"the editable wheel installs an import hook ({hooks}): mypy and pyright cannot follow it"
        assert len(pth) == 1, archive.namelist()
        entry = archive.read(pth[0]).decode().strip()
        assert not entry.startswith("import"), entry
        assert Path(entry).resolve() == REPO_ROOT, entry
        archive.extractall(site)
    import sysconfig

    (site / "_test_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    where = subprocess.run(
        [python, "-c", "import drivemetrics; print(drivemetrics.__file__)"], capture_output=True, text=True, cwd=root
    )
    assert Path(where.stdout.strip()).resolve() == REPO_ROOT / "drivemetrics" / "__init__.py", where
    return python


def _wrong_lines(script: Path) -> set[int]:
    return {i for i, line in enumerate(script.read_text().splitlines(), 1) if line.endswith("# wrong")}


def test_mypy_reports_exactly_the_wrong_calls(tmp_path, editable_install):
    pytest.importorskip("mypy", reason="mypy is a dev dependency")
    script = tmp_path / "user_script.py"
    script.write_text(_script(), encoding="utf-8")
    env = {key: value for key, value in os.environ.items() if key not in ("MYPYPATH", "PYTHONPATH")}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--python-executable",
            str(editable_install),
            "--follow-imports=silent",
            "--no-error-summary",
            "--show-error-codes",
            "--cache-dir",
            str(REPO_ROOT / ".mypy_cache"),
            str(script),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    reported: dict[int, list[str]] = {}
    for line in result.stdout.splitlines():
        match = re.match(r"(?:.*/)?user_script\.py:(\d+): error: (.*)", line)
        if match:
            reported.setdefault(int(match.group(1)), []).append(match.group(2))
    assert set(reported) == _wrong_lines(script), (result.stdout[-6000:], result.stderr[-2000:])


def test_pyright_reports_exactly_the_wrong_calls(tmp_path, editable_install):
    pyright = shutil.which("pyright") or str(Path(sys.executable).with_name("pyright"))
    if not Path(pyright).exists():
        pytest.skip("pyright is not installed")
    script = tmp_path / "user_script.py"
    script.write_text(_script(), encoding="utf-8")
    (tmp_path / "pyrightconfig.json").write_text('{"reportMissingModuleSource": false}', encoding="utf-8")
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    result = subprocess.run(
        [pyright, "--pythonpath", str(editable_install), str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    if "error" in result.stderr.lower() and not result.stdout:
        pytest.skip(f"pyright did not run: {result.stderr.strip()[:200]}")
    reported = {int(m.group(1)) for m in re.finditer(r"user_script\.py:(\d+):\d+ - error", result.stdout)}
    assert reported == _wrong_lines(script), result.stdout[-6000:]
