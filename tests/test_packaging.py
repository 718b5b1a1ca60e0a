"""The distributions: a wheel that works in a clean virtual environment, and an sdist whose tests can run.

The wheel test builds the wheel from this checkout, installs it with the CPU torch into a fresh venv that does not
see this interpreter's packages (no ``--system-site-packages``), runs it from a folder outside the checkout, and
checks that what the library reads at run time (the shipped configs) came along, and runs every ```python block of
the README and docs/pages against it (with the plot and culane extras; blocks that import Lightning are left out).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tarfile
import venv
import zipfile
from pathlib import Path

import pytest

from drivemetrics import __version__
from drivemetrics.configs import config_names, read_config

REPO = Path(__file__).resolve().parents[1]
TORCH_SPEC = os.environ.get("DRIVEMETRICS_TORCH_SPEC", "torch==2.13.0")  # the CPU build (as in the Makefile)


def _run(*args: str | Path, cwd: Path) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    done = subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"{args}: exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


#: Not copied into the build tree: version control, environments and earlier build outputs (a stale build/ folder
#: could put deleted modules into the wheel).
NOT_SOURCES = (".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", "site", "demo_out", "examples_out")


def _build(kind: str, out: Path) -> Path:
    """Build the ``"wheel"`` or ``"sdist"`` of a copy of the checkout into ``out`` (this interpreter's setuptools;
    building in the checkout would leave build/ and *.egg-info there)."""
    import shutil

    from setuptools import build_meta

    source = out.parent / f"source_{kind}"
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(*NOT_SOURCES))
    cwd = Path.cwd()
    os.chdir(source)
    try:
        name = build_meta.build_wheel(str(out)) if kind == "wheel" else build_meta.build_sdist(str(out))
    finally:
        os.chdir(cwd)
    return out / name


def test_shipped_configs_are_listed_and_readable():
    names = config_names()
    assert {"corridor.toml", "vehicles/rav4_2017.toml", "road_segmentation.yaml"} <= set(names)
    assert read_config("corridor") == read_config("corridor.toml")
    with pytest.raises(ValueError, match="no shipped config 'nope'"):
        read_config("nope")


def test_config_command_lists_and_prints(capsys):
    from drivemetrics.cli import main

    assert main(["config"]) == 0
    assert "vehicles/rav4_2017.toml" in capsys.readouterr().out.split()
    assert main(["config", "drp_attack"]) == 0
    assert capsys.readouterr().out == read_config("drp_attack.yaml")
    assert main(["config", "missing"]) == 2
    assert "no shipped config 'missing'" in capsys.readouterr().err


@pytest.mark.slow
def test_sdist_holds_a_runnable_test_suite(tmp_path):
    sdist = _build("sdist", tmp_path / "dist")
    with tarfile.open(sdist) as archive:
        members = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    tracked = _run("git", "ls-files", "tests", "training_examples", cwd=REPO).split()
    missing = sorted(set(tracked) - members)
    assert not missing, f"the sdist lacks {missing[:10]}"
    assert {"conftest.py", "tests/conftest.py", "tests/metric_inputs.py", "pyproject.toml", "LICENSE"} <= members
    assert "drivemetrics/configs/corridor.toml" in members


@pytest.mark.slow
def test_wheel_works_in_a_clean_venv(tmp_path):
    wheel = _build("wheel", tmp_path / "dist")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        metadata = archive.read(f"drivemetrics-{__version__}.dist-info/METADATA").decode()
    assert {f"drivemetrics/configs/{name}" for name in config_names()} <= names
    assert not any(name.startswith(("configs/", "tests/")) for name in names)  # nothing outside the package
    assert "License-File: LICENSE" in metadata
    assert f"drivemetrics-{__version__}.dist-info/licenses/LICENSE" in names
    assert "Classifier: Programming Language :: Python :: 3" in metadata

    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True, system_site_packages=False).create(env_dir)
    bin_dir = env_dir / ("Scripts" if sys.platform == "win32" else "bin")
    python = bin_dir / "python"
    _run(python, "-m", "pip", "install", "-q", TORCH_SPEC, cwd=tmp_path)  # CPU build first: no CUDA pull
    _run(python, "-m", "pip", "install", "-q", f"{wheel}[plot,culane]", cwd=tmp_path)  # culane: OpenCV, see below

    outside = tmp_path / "elsewhere"  # not the checkout: nothing may be found through the working directory
    outside.mkdir()
    assert _run(bin_dir / "drivemetrics", "--version", cwd=outside).strip() == f"drivemetrics {__version__}"
    assert "corridor.toml" in _run(bin_dir / "drivemetrics", "config", cwd=outside).split()
    assert _run(bin_dir / "drivemetrics", "config", "corridor", cwd=outside) == read_config("corridor")
    code = (
        "import drivemetrics, sys\n"
        "from drivemetrics.road.corridor_config import CorridorConfig, load_corridor_config\n"
        "assert 'site-packages' in drivemetrics.__file__, drivemetrics.__file__\n"
        "assert load_corridor_config() == CorridorConfig()\n"
        "print(load_corridor_config(speed=5.0).speed)\n"
    )
    assert _run(python, "-c", code, cwd=outside).strip() == "5.0"
    table = _run(bin_dir / "drivemetrics", "demo", "--quick", "--only", "lane", "--out", "demo", cwd=outside)
    assert table.strip()
    assert any((outside / "demo").iterdir())
    # every doc block runs against the installed wheel as a reader copies it (issue 50's walk: tests/test_docs.py
    # runs them against the checkout): a fresh interpreter, an empty folder, no PYTHONPATH, no DRIVEMETRICS_*
    from tests.test_docs import BLOCKS, EXTRA_IMPORTS

    env = {k: v for k, v in os.environ.items() if not k.startswith("DRIVEMETRICS") and k != "PYTHONPATH"}
    env.update({"OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg"})
    failed, ran = [], 0
    for block in BLOCKS:
        needs = [m for m in EXTRA_IMPORTS if re.search(rf"^\s*(import|from) {m}\b", block.code, re.MULTILINE)]
        if block.skip_reason is not None or any(m not in ("matplotlib", "cv2") for m in needs):
            continue  # marked in the page, or the lightning / lanegraph extra (not installed here)
        folder = tmp_path / f"block{ran}"
        folder.mkdir()
        done = subprocess.run(
            [python, "-c", block.code], cwd=folder, env=env, capture_output=True, text=True, check=False
        )
        ran += 1
        if done.returncode != 0:
            failed.append(f"{block.name}: {done.stderr.strip().splitlines()[-1:]}")
    assert ran >= 20
    assert not failed, failed


def _project() -> dict:
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def _requirement(name: str, requirements: list[str]):
    from packaging.requirements import Requirement

    found = [Requirement(r) for r in requirements if Requirement(r).name == name]
    assert len(found) == 1, f"{name}: {found}"
    return found[0]


def test_torchmetrics_range_is_bounded_and_holds_the_tested_version():
    from importlib.metadata import version

    requirement = _requirement("torchmetrics", _project()["dependencies"])
    assert any(spec.operator in ("<", "<=", "~=", "==") for spec in requirement.specifier), requirement
    assert requirement.specifier.contains(version("torchmetrics")), (requirement, version("torchmetrics"))
    assert not requirement.specifier.contains("2.0.0")  # the private internals may change with a major release


@pytest.mark.parametrize(
    ("platform", "machine", "python", "expected"),
    [
        ("linux", "x86_64", "3.12", True),
        ("linux", "x86_64", "3.10", True),
        ("win32", "AMD64", "3.13", True),
        ("darwin", "arm64", "3.14", True),
        ("darwin", "x86_64", "3.13", False),  # no wheel of the current pyspng: pip would build it from source
        ("linux", "aarch64", "3.11", False),
        ("linux", "x86_64", "3.15", False),  # a Python newer than every wheel
    ],
)
def test_pyspng_only_where_it_has_wheels(platform, machine, python, expected):
    requirement = _requirement("pyspng", _project()["dependencies"])
    environment = {"sys_platform": platform, "platform_machine": machine, "python_version": python}
    assert requirement.marker is not None
    assert requirement.marker.evaluate(environment) is expected


def test_pillow_decodes_where_pyspng_is_missing(monkeypatch):
    """The fallback the marker relies on: without pyspng the PNG reader uses Pillow."""
    from drivemetrics._internal import png

    monkeypatch.setitem(sys.modules, "pyspng", None)
    assert png.fast_decoder() == "pillow"
    assert png.decode_png_array("any.png", b"\x89PNG") is None  # the caller then reads the file with Pillow


def test_extras_refer_to_each_other_instead_of_copying():
    from packaging.requirements import Requirement

    extras = _project()["optional-dependencies"]
    own = {
        name: [Requirement(r) for r in requirements if Requirement(r).name != "drivemetrics"]
        for name, requirements in extras.items()
    }
    for name, requirements in own.items():
        for other, other_requirements in own.items():
            if other == name:
                continue
            copied = {r.name for r in requirements} & {r.name for r in other_requirements}
            assert not copied, f"extras {name!r} and {other!r} both list {sorted(copied)}: refer to one of them"
    dev = [Requirement(r) for r in extras["dev"] if Requirement(r).name == "drivemetrics"]
    assert len(dev) == 1
    assert dev[0].extras == set(extras) - {"dev", "png"}  # every feature extra (png only matters off the marker)
