"""``--device`` on every command with a tensor path (issue 50): ``--device cpu`` gives the default path's output
exactly, and a device this host lacks is one line naming ``--device`` (exit 2) before any work.

The commands whose default path is host code (``openlanev2-eval``: numpy; ``graph-eval``: CCQ on the default
device) run a different code path with ``--device cpu`` (torch there), so equality is a real check; the others'
default is ``cpu`` and the test pins that the option does not change a number. ``kitti-object-eval``,
``map-eval`` and the 3D-lane commands have their own tests of the same kind in their domains' test files.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from drivemetrics.cli import main

VANCOUVER_WINDOW = ["--window", "-1024", "-1024", "1024", "1024"]


def _tusimple(fx: Path, tmp: Path) -> list[str]:
    root = fx / "tusimple"
    return ["tusimple-eval", "--pred", str(root / "pred.json"), "--gt", str(root / "label.json"), "--per-image"]


def _culane(fx: Path, tmp: Path) -> list[str]:
    root = fx / "culane_official"
    paths = ["--pred", str(root / "pred"), "--gt", str(root / "gt"), "--list", str(root / "list.txt")]
    return ["culane-eval", *paths, "--per-image", "--iou-range", "--workers", "1"]


def _openlanev2(track: str) -> Callable[[Path, Path], list[str]]:
    def argv(fx: Path, tmp: Path) -> list[str]:
        cases = str(fx / "openlanev2" / f"{track}_cases.json")
        return ["openlanev2-eval", "--gt", cases, "--pred", cases, "--workers", "1"]

    return argv


def _graph(fx: Path, tmp: Path) -> list[str]:
    root = fx / "graphs" / "roadtracer_vancouver"
    paths = ["--gt", str(root / "gt.graph"), "--pred", str(root / "pred_segmentation.graph"), *VANCOUVER_WINDOW]
    return ["graph-eval", *paths, "--metrics", "ccq", "--workers", "1"]


JSON_COMMANDS = {
    "tusimple-eval": _tusimple,
    "culane-eval": _culane,
    "openlanev2-eval centerline": _openlanev2("centerline"),
    "openlanev2-eval lanesegment": _openlanev2("lanesegment"),
    "graph-eval": _graph,
}


@pytest.mark.parametrize("case", sorted(JSON_COMMANDS))
def test_device_cpu_writes_the_default_json(case, fixtures_dir, tmp_path, capsys):
    argv = [*JSON_COMMANDS[case](fixtures_dir, tmp_path), "--no-progress"]
    outputs = []
    for i, device in enumerate(([], ["--device", "cpu"])):
        out = tmp_path / f"out{i}.json"
        assert main([*argv, "--json", str(out), *device]) == 0, capsys.readouterr().err
        outputs.append(json.loads(out.read_text()))
    capsys.readouterr()
    assert outputs[0] == outputs[1]
    assert outputs[0]


def test_road_bev_device_cpu_writes_the_default_pngs(fixtures_dir, tmp_path, capsys):
    name = "umm_road_000000.png"
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / name).write_bytes((fixtures_dir / "kitti_road" / "training" / "gt_image_2" / name).read_bytes())
    calib = str(fixtures_dir / "kitti_road" / "training" / "calib")
    written = []
    for i, device in enumerate(([], ["--device", "cpu"])):
        out = tmp_path / f"out{i}"
        argv = ["road-bev", "--calib", calib, "--pred", str(tmp_path / "in"), "--out", str(out), "--no-progress"]
        assert main([*argv, *device]) == 0, capsys.readouterr().err
        written.append((out / name).read_bytes())
    capsys.readouterr()
    assert written[0] == written[1]


@pytest.mark.skipif(torch.cuda.is_available(), reason="this host has CUDA: --device cuda is valid")
@pytest.mark.parametrize("case", [*sorted(JSON_COMMANDS), "road-bev"])
def test_a_device_this_host_lacks_is_one_line_before_any_work(case, fixtures_dir, tmp_path, capsys):
    if case == "road-bev":
        (tmp_path / "calib").mkdir()
        (tmp_path / "in").mkdir()
        paths = ["--calib", str(tmp_path / "calib"), "--pred", str(tmp_path / "in"), "--out", str(tmp_path / "out")]
        argv = ["road-bev", *paths]
    else:
        argv = [*JSON_COMMANDS[case](fixtures_dir, tmp_path), "--json", str(tmp_path / "out.json")]
    assert main([*argv, "--device", "cuda", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "--device cuda: no cuda device on this host" in err, err
    assert len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "out.json").exists()
    assert not (tmp_path / "out").exists()
