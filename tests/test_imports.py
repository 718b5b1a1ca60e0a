"""Import budget: ``import drivemetrics``, the CLI and the domain packages stay light (issue 12).

Each check runs in a fresh interpreter (``sys.modules`` of this test process is already full) and reports which
modules the imports put in ``sys.modules``. Heavy packages: plotting, Lightning and ``scipy.signal`` (which
``torchmetrics`` pulls in) must wait until a function needs them; the top level and the CLI must not even load torch.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from drivemetrics.cli import COMMANDS

REPO_ROOT = Path(__file__).resolve().parents[1]
DOMAINS = (
    "geometry",
    "vehicle",
    "road",
    "lane",
    "roadnet",
    "lanegraph",
    "attack",
    "detection",
    "lanetopology",
    "vectormap",
)
HEAVY = ("matplotlib", "lightning", "pytorch_lightning", "scipy.signal")
HEAVY_OR_TORCH = (*HEAVY, "torch", "torchmetrics", "kornia", "scipy")

#: Library modules without a torchmetrics Metric in them: importing them must not load the heavy packages.
#: (A module defining a ``torchmetrics.Metric`` pulls ``scipy.signal`` and matplotlib through ``import
#: torchmetrics`` itself, which we cannot avoid.)
PLAIN_MODULES = (
    "drivemetrics.geometry.bev",
    "drivemetrics.geometry.calib",
    "drivemetrics.geometry.camera",
    "drivemetrics.geometry.homography",
    "drivemetrics.geometry.warp",
    "drivemetrics.vehicle.bicycle",
    "drivemetrics.vehicle.single_track",
    "drivemetrics.road.io",
    "drivemetrics.road.corridor_config",
    "drivemetrics.road.soft_f_measure",
    "drivemetrics.lane.geometry",
    "drivemetrics.lane.io",
    "drivemetrics.detection.io",
    "drivemetrics.detection.box_iou",
    "drivemetrics.lane.control",
    "drivemetrics.lane.road_center",
    "drivemetrics.lane.stats",
    "drivemetrics.graph.geometry",
    "drivemetrics.roadnet.io",
    "drivemetrics.roadnet.perturb",
    "drivemetrics.graph.path_similarity",
    "drivemetrics.lanetopology.frames",
    "drivemetrics.lanetopology.scoring",
    "drivemetrics.lanetopology.distances",
    "drivemetrics.lanetopology.matching",
    "drivemetrics.lanetopology.average_precision",
    "drivemetrics.lanetopology.topology",
    "drivemetrics.lanetopology.fscore",
    "drivemetrics.lane3d.resample",
    "drivemetrics.lane3d.pairs",
    "drivemetrics.lane3d.assignment",
    "drivemetrics.detection.evaluate",
    "drivemetrics.lanetopology.io",
    "drivemetrics.lanetopology.matching_loss",
    "drivemetrics.polyline.frechet",
    "drivemetrics.lanegraph.geometry",
    "drivemetrics.lanegraph.io",
    "drivemetrics.lanegraph.geo_topo",
    "drivemetrics.lanegraph.sda",
    "drivemetrics.lanegraph.iou",
    "drivemetrics.lanegraph.apls",
    "drivemetrics._internal.distributed",  # every sharded dataset command imports it
    "drivemetrics.lanetopology.evaluate",  # openlanev2-eval: no torchmetrics (~1 s of imports)
)


def loaded_after(code: str) -> dict:
    """Run ``code`` in a fresh interpreter; it must print one JSON line (helper ``mods()`` lists sys.modules)."""
    prelude = "import json, sys\ndef mods():\n    return sorted(sys.modules)\n"
    result = subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(code)],
        cwd=REPO_ROOT,
        env={"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def present(modules: list[str], names: tuple[str, ...]) -> list[str]:
    return sorted(n for n in names if n in modules)


def domain_modules(modules: list[str]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[:2][-1] in (*DOMAINS, "demos", "synthetic") and "." in m)


@pytest.fixture(scope="module")
def top_level_and_cli() -> dict:
    """sys.modules after ``drivemetrics --help``, then after importing every domain package and CLI module."""
    return loaded_after(
        f"""
        import contextlib, io
        from drivemetrics.cli import main
        with contextlib.redirect_stdout(io.StringIO()):
            try:
                main(["--help"])
            except SystemExit:
                pass
        after_help = mods()
        import importlib
        for domain in {DOMAINS!r}:
            try:
                importlib.import_module("drivemetrics." + domain)
            except ModuleNotFoundError as err:
                if err.name != "drivemetrics." + domain:
                    raise
        for module in sorted({{m for m, _ in {COMMANDS!r}.values()}}):
            importlib.import_module(module)
        print(json.dumps({{"help": after_help, "all": mods()}}))
        """
    )


def test_top_level_help_imports_no_domain_and_no_torch(top_level_and_cli):
    modules = top_level_and_cli["help"]
    assert domain_modules(modules) == []
    assert present(modules, HEAVY_OR_TORCH) == []


def test_domain_packages_and_cli_modules_import_no_heavy_package(top_level_and_cli):
    # domain __init__ files export lazily and the subcommand modules import the library in their run functions
    assert present(top_level_and_cli["all"], HEAVY_OR_TORCH) == []


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_subcommand_help_is_light(command):
    modules = loaded_after(
        f"""
        import contextlib, io
        from drivemetrics.cli import main
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            try:
                main([{command!r}, "--help"])
            except SystemExit:
                pass
        print(json.dumps({{"modules": mods(), "usage": out.getvalue()}}))
        """
    )
    assert f"drivemetrics {command}" in modules["usage"]  # the real parser answered, not the placeholder
    assert present(modules["modules"], HEAVY_OR_TORCH) == []
    own_package = COMMANDS[command][0].rsplit(".", 1)[0]
    others = [m for m in domain_modules(modules["modules"]) if not m.startswith(own_package)]
    assert others == []


def test_plain_library_modules_import_no_plotting_lightning_or_scipy_signal():
    modules = loaded_after(
        f"""
        import importlib
        for module in {PLAIN_MODULES!r}:
            importlib.import_module(module)
        print(json.dumps(mods()))
        """
    )
    assert present(modules, HEAVY) == []
    assert "kornia" not in modules  # ~1 s: imported only by the functions using it (road-eval does not)


@pytest.mark.slow
def test_no_library_module_imports_lightning():
    # every module of the package, torchmetrics-based ones included: Lightning only inside the functions using it
    modules = loaded_after(
        """
        import importlib, pkgutil
        import drivemetrics
        names = [m.name for m in pkgutil.walk_packages(drivemetrics.__path__, "drivemetrics.")]
        names = [n for n in names if n != "drivemetrics.__main__"]  # that one runs the command
        for name in names:
            importlib.import_module(name)
        print(json.dumps({"names": names, "modules": mods()}))
        """
    )
    assert "drivemetrics.road.pixel" in modules["names"]
    assert present(modules["modules"], ("lightning", "pytorch_lightning")) == []


def test_openlanev2_eval_imports_no_torchmetrics():
    # the command's engine and the sharding plumbing: torchmetrics' import (scipy.signal, matplotlib) costs ~1 s
    modules = loaded_after(
        """
        import drivemetrics.lanetopology.cli, drivemetrics.lanetopology.evaluate, drivemetrics._internal.distributed
        print(json.dumps(mods()))
        """
    )
    assert "torch" in modules
    assert present(modules, ("torchmetrics", *HEAVY)) == []


def test_kitti_object_eval_engine_imports_no_torch():
    # the command's reader, overlaps and evaluation run on numpy: torch's import (~1 s) is not needed
    modules = loaded_after(
        """
        import drivemetrics.detection.cli, drivemetrics.detection.io, drivemetrics.detection.box_iou
        import drivemetrics.detection.kitti_ap, drivemetrics._internal.read_ahead
        print(json.dumps(mods()))
        """
    )
    assert "drivemetrics.detection.kitti_ap" in modules
    assert present(modules, HEAVY_OR_TORCH) == []


def test_map_eval_numpy_path_imports_no_torch():
    # map-eval --protocol av2-cvpr23 reads, resamples, matches and scores on numpy: torch's import is not needed
    modules = loaded_after(
        """
        import drivemetrics.vectormap.cli, drivemetrics.vectormap.evaluate, drivemetrics.vectormap.lines
        import drivemetrics.vectormap.io, drivemetrics._internal.read_ahead, drivemetrics._internal.pool
        print(json.dumps(mods()))
        """
    )
    assert "drivemetrics.vectormap.lines" in modules
    assert present(modules, HEAVY_OR_TORCH) == []


def test_llamas_curvelanes_eval_engine_imports_no_torch():
    # llamas-eval and curvelanes-eval read, draw (OpenCV), match (SciPy) and score on numpy without --device: torch's
    # import is not needed, and their worker processes fork (issue 47)
    modules = loaded_after(
        """
        import drivemetrics.lane.cli, drivemetrics.lane.evaluate_lanes2d, drivemetrics.lane.io
        import drivemetrics.lane.llamas_scoring, drivemetrics.lane.curvelanes_scoring, drivemetrics._internal.pool
        print(json.dumps(mods()))
        """
    )
    assert "drivemetrics.lane.evaluate_lanes2d" in modules
    assert present(modules, HEAVY_OR_TORCH) == []


def test_llamas_and_curvelanes_eval_run_without_torch(fixtures_dir, tmp_path):
    # the whole command, not only its modules: reading, scoring and writing the JSON import no torch (issue 47)
    llamas, curvelanes = fixtures_dir / "llamas" / "cases", fixtures_dir / "curvelanes" / "cases"
    if not (llamas.is_dir() and curvelanes.is_dir()):
        pytest.skip("llamas / curvelanes fixtures absent")
    runs = [
        ["llamas-eval", "--gt", str(llamas / "labels" / "valid"), "--pred", str(llamas / "pred")],
        ["curvelanes-eval", "--gt", str(curvelanes / "valid"), "--pred", str(curvelanes / "pred")],
    ]
    for k, argv in enumerate(runs):
        argv = [*argv, "--compat", "reference", "--no-progress", "--json", str(tmp_path / f"{k}.json")]
        modules = loaded_after(
            f"""
            import contextlib, io
            from drivemetrics.cli import main
            with contextlib.redirect_stdout(io.StringIO()):
                assert main({argv!r}) == 0
            print(json.dumps(mods()))
            """
        )
        assert "drivemetrics.lane.evaluate_lanes2d" in modules
        assert present(modules, ("torch", "torchmetrics")) == []
        assert json.loads((tmp_path / f"{k}.json").read_text())["pooled"]["f1"] > 0
