"""Optional dependencies (the extras): every path that needs one checks it before any work and ends with one line
naming the extra (exit 2 for commands); the demo without matplotlib prints its tables and one line about figures.

A missing module is simulated in a subprocess: ``sys.modules[name] = None`` makes ``import name`` fail (after
torchmetrics, which imports matplotlib itself whenever matplotlib is installed, has been imported).
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from drivemetrics._internal.extras import MissingExtraError, available, missing_extra_message, require

REPO = Path(__file__).resolve().parents[1]

#: Modules of the extras; only drivemetrics/_internal/extras.py imports them by name (pyspng is no extra: a
#: dependency where it has wheels, Pillow elsewhere, see drivemetrics._internal.png).
EXTRA_MODULES = {"matplotlib", "cv2", "rtree", "pytorch_lightning", "lightning", "jsonargparse"}

_HIDE = """
import sys
import torchmetrics  # noqa: F401
for name in list(sys.modules):
    if name.partition(".")[0] in {hidden!r}:
        sys.modules[name] = None
for name in {hidden!r}:
    sys.modules[name] = None
"""


def _run_without(hidden: tuple[str, ...], code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    script = _HIDE.format(hidden=hidden) + code
    return subprocess.run([sys.executable, "-c", script], cwd=cwd, env=env, capture_output=True, text=True, check=False)


def _command_without(hidden: tuple[str, ...], argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return _run_without(hidden, f"from drivemetrics.cli import main\nsys.exit(main({argv!r}))\n", cwd)


def test_require_names_the_extra():
    assert require("plot", "math", "drawing figures").sqrt(4.0) == 2.0
    with pytest.raises(MissingExtraError) as info:
        require("plot", "drivemetrics_no_such_module.pyplot", "drawing figures")
    assert str(info.value) == ("drawing figures needs drivemetrics_no_such_module: pip install 'drivemetrics[plot]'")
    assert info.value.extra == "plot"
    assert info.value.name == "drivemetrics_no_such_module"
    assert isinstance(info.value, ImportError)  # `except ImportError` keeps working
    assert not available("drivemetrics_no_such_module")
    assert missing_extra_message("culane", "cv2", "CULane compat='reference'") == (
        "CULane compat='reference' needs OpenCV: pip install 'drivemetrics[culane]'"
    )


def test_extra_modules_are_imported_only_through_the_helper():
    """A direct ``import matplotlib`` (or cv2, rtree, ...) would bypass the one check and its message."""
    found = []
    for path in sorted((REPO / "drivemetrics").rglob("*.py")):
        if path == REPO / "drivemetrics" / "_internal" / "extras.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            found += [f"{path.relative_to(REPO)}:{node.lineno} {n}" for n in names if n.split(".")[0] in EXTRA_MODULES]
    assert not found, found


def test_demo_without_matplotlib_prints_its_tables_and_one_line(tmp_path):
    done = _command_without(("matplotlib",), ["demo", "--quick", "--only", "lane", "--out", "out"], tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    assert "TuSimple acc" in done.stdout  # the table
    assert lines[-1] == (
        "drawing the demo's figures needs matplotlib: pip install 'drivemetrics[plot]' (the tables above are complete)"
    )
    assert "Traceback" not in done.stderr
    assert not list((tmp_path / "out").rglob("*.png"))


@pytest.mark.parametrize(
    ("hidden", "argv", "message"),
    [
        (
            ("cv2",),
            ["culane-eval", "--pred", "missing_pred", "--gt", "missing_gt", "--compat", "reference"],
            "drivemetrics culane-eval: error: CULane compat='reference' needs OpenCV: "
            "pip install 'drivemetrics[culane]'",
        ),
        (
            ("cv2",),
            [
                "lanegraph-eval",
                "--task",
                "successor",
                "--gt",
                "g.pickle",
                "--pred",
                "p.pickle",
                "--compat",
                "reference",
            ],
            "drivemetrics lanegraph-eval: error: UrbanLaneGraph compat='reference' (graph IoU) needs OpenCV: "
            "pip install 'drivemetrics[lanegraph]'",
        ),
        (
            ("matplotlib",),
            ["lanegraph-eval", "--task", "successor", "--gt", "gt.pickle", "--pred", "p.pickle", "--figures", "f"],
            "drivemetrics lanegraph-eval: error: drawing figures needs matplotlib: pip install 'drivemetrics[plot]'",
        ),
        (
            ("matplotlib",),
            ["graph-sensitivity", "--gt", "missing.graph", "--quick"],
            "drivemetrics graph-sensitivity: error: drawing figures needs matplotlib: pip install 'drivemetrics[plot]'",
        ),
    ],
)
def test_command_without_its_extra_says_which_before_any_work(tmp_path, hidden, argv, message):
    """The inputs do not exist: the extra is checked first, so its line comes instead of "file not found"."""
    done = _command_without(hidden, argv, tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip() == message
    assert done.stdout == ""


def test_python_api_without_its_extra(tmp_path):
    code = """
import torch
from drivemetrics._internal.extras import MissingExtraError
from drivemetrics.lane import CULaneMetrics
from drivemetrics.road import RoadPixelMaxFScore
try:
    CULaneMetrics(compat="reference")  # refused at construction, not at the first update
except MissingExtraError as error:
    print(error)
metric = RoadPixelMaxFScore()
metric.update(torch.rand(1, 4, 4), torch.rand(1, 4, 4) > 0.5)
try:
    metric.plot()
except MissingExtraError as error:
    print(error)
"""
    done = _run_without(("cv2", "matplotlib"), code, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines() == [
        "CULane compat='reference' needs OpenCV: pip install 'drivemetrics[culane]'",
        "plot() needs matplotlib: pip install 'drivemetrics[plot]'",
    ]


#: What needs OpenCV (the ``culane`` extra) in every mode, not only ``compat="reference"``: each class is refused
#: without it (checked below), and the install lines of the README and docs/pages/install.md name each (issue 50's
#: walk: the README said "OpenCV for compat=\"reference\"", and the ONCE-3DLanes example died on a base install).
OPENCV_IN_EVERY_MODE = {
    "LLAMAS": ("drivemetrics.lane", "LlamasMetrics", "llamas_example_inputs", "the LLAMAS pixel IoU"),
    "CurveLanes": ("drivemetrics.lane", "CurveLanesMetrics", "curvelanes_example_inputs", "the CurveLanes lane metric"),
    "ONCE-3DLanes": ("drivemetrics.lane3d", "ONCE3DMetrics", "once3d_example_inputs", "the ONCE-3DLanes BEV IoU"),
    "C-mAP": (
        "drivemetrics.vectormap",
        "ConsistentMapAPMetrics",
        "consistent_map_example_inputs",
        "MapTracker's track formation (C-mAP)",
    ),
}


def test_what_needs_opencv_in_every_mode_says_so_and_the_install_lines_name_it(tmp_path):
    lines = []
    for module, cls, inputs, _ in OPENCV_IN_EVERY_MODE.values():
        lines += [
            f"from {module} import {cls}, {inputs}",
            "try:",
            f"    metric = {cls}()",
            f"    metric.update(**{inputs}())",
            "    metric.compute()",
            f"    print({cls!r}, 'ran')",
            "except MissingExtraError as error:",
            "    print(error)",
        ]
    code = "from drivemetrics._internal.extras import MissingExtraError\n" + "\n".join(lines) + "\n"
    done = _run_without(("cv2",), code, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines() == [
        f"{what} needs OpenCV: pip install 'drivemetrics[culane]'" for *_, what in OPENCV_IN_EVERY_MODE.values()
    ]
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    install = (REPO / "docs" / "pages" / "install.md").read_text(encoding="utf-8")
    for page, text in (("README.md", readme.split("## Install", 1)[1].split("```", 2)[1]), ("install.md", install)):
        culane = " ".join(line for line in text.splitlines() if "[culane]" in line or line.strip().startswith("#"))
        for name in OPENCV_IN_EVERY_MODE:
            assert name in culane, (page, name)
