"""Type checkers see the public API (issue 23): mypy on a user-style script reports exactly its wrong calls.

The script imports through the lazy packages (``drivemetrics``, ``drivemetrics.<domain>``, whose ``__init__.pyi``
stubs list the exports) and ``drivemetrics.functional``; it makes correct calls, which must pass, and one call per
line marked ``# wrong`` with an argument of the wrong type, which must be reported on that line and nowhere else.
If a class or kernel were typed ``Any`` (the issue's "Module is not callable", unresolved lazy names), the wrong
calls would pass and the test fails. Slow (mypy reads torch's stubs: about a minute, cached afterwards).
"""

from __future__ import annotations

import inspect
import os
import re
import shutil
import subprocess
import sys
import textwrap
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


def _script() -> str:
    import drivemetrics.functional as F

    text = textwrap.dedent(SCRIPT)
    if hasattr(F, "opt_j") and hasattr(F, "apls"):
        text += textwrap.dedent(GRAPH_LINES)
    return text


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


@pytest.mark.slow
def test_mypy_reports_exactly_the_wrong_calls(tmp_path):
    pytest.importorskip("mypy", reason="mypy is a dev dependency")
    script = tmp_path / "user_script.py"
    script.write_text(_script(), encoding="utf-8")
    expected = {i for i, line in enumerate(script.read_text().splitlines(), 1) if line.endswith("# wrong")}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--follow-imports=silent",
            "--no-error-summary",
            "--show-error-codes",
            "--cache-dir",
            str(REPO_ROOT / ".mypy_cache"),
            str(script),
        ],
        cwd=tmp_path,
        env={**os.environ, "MYPYPATH": str(REPO_ROOT)},
        capture_output=True,
        text=True,
        timeout=900,
    )
    reported = {}
    for line in result.stdout.splitlines():
        match = re.match(r"(?:.*/)?user_script\.py:(\d+): error: (.*)", line)
        if match:
            reported.setdefault(int(match.group(1)), []).append(match.group(2))
    assert set(reported) == expected, (result.stdout, result.stderr)


@pytest.mark.slow
def test_pyright_resolves_the_lazy_names(tmp_path):
    if shutil.which("pyright") is None and not Path(sys.executable).with_name("pyright").exists():
        pytest.skip("pyright is not installed")
    script = tmp_path / "user_script.py"
    script.write_text(_script(), encoding="utf-8")
    expected = {i for i, line in enumerate(script.read_text().splitlines(), 1) if line.endswith("# wrong")}
    (tmp_path / "pyrightconfig.json").write_text(
        f'{{"extraPaths": ["{REPO_ROOT}"], "reportMissingModuleSource": false}}', encoding="utf-8"
    )
    pyright = shutil.which("pyright") or str(Path(sys.executable).with_name("pyright"))
    result = subprocess.run(
        [pyright, "--pythonpath", sys.executable, str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,
    )
    if "error" in result.stderr.lower() and not result.stdout:
        pytest.skip(f"pyright did not run: {result.stderr.strip()[:200]}")
    reported = {int(m.group(1)) for m in re.finditer(r"user_script\.py:(\d+):\d+ - error", result.stdout)}
    assert reported == expected, result.stdout
