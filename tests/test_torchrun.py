"""Dataset commands under ``torchrun`` (gloo on this machine) write what one process writes (issue 30).

Each case (kitti-object-eval, culane-eval, openlanev2-eval, map-eval, openlane3d-eval) runs
``python -m drivemetrics COMMAND ...`` once and ``torchrun --standalone --nproc-per-node N -m drivemetrics COMMAND ...``
for several ``N`` on the real fixtures, and compares the JSON files byte for byte and the printed reports line for
line. (lanegraph-eval's shards are checked in tests/test_ragged.py's process group.)
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from drivemetrics.cli import main
from tests.conftest import REPO_ROOT

pytestmark = [pytest.mark.ddp, pytest.mark.slow]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["OMP_NUM_THREADS"] = "1"
    for name in ("WORLD_SIZE", "RANK", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(name, None)
    return env


def _run(args: list[str], processes: int, out: Path) -> str:
    """Run the command (``processes`` 1: plain ``python -m drivemetrics``), its JSON to ``out``; the stdout."""
    launcher = [sys.executable, "-m", "drivemetrics"]
    if processes > 1:
        launcher = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={processes}"]
        launcher += ["-m", "drivemetrics"]
    done = subprocess.run(
        [*launcher, *args, "--json", str(out)], env=_env(), capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, f"{processes} process(es): {done.stderr[-2000:]}"
    return done.stdout


def _assert_same_as_one_process(args: list[str], process_counts: list[int], tmp_path: Path) -> None:
    single = _run(args, 1, tmp_path / "one.json")
    for processes in process_counts:
        printed = _run(args, processes, tmp_path / f"{processes}.json")
        assert (tmp_path / f"{processes}.json").read_bytes() == (tmp_path / "one.json").read_bytes(), processes
        assert printed.replace(f"{processes}.json", "one.json") == single, processes


def test_kitti_object_eval_with_2_and_4_processes(fixtures_dir, tmp_path):
    kitti = fixtures_dir / "kitti_object"
    if not kitti.is_dir():
        pytest.skip("kitti_object fixtures absent")
    frames = tmp_path / "list.txt"
    frames.write_text("".join(f"{i:06d}\n" for i in range(0, 120, 3)))  # 40 frames, 7 without results
    args = ["kitti-object-eval", "--gt", str(kitti / "label_2"), "--det", str(kitti / "det_100")]
    _assert_same_as_one_process([*args, "--list", str(frames)], [2, 4], tmp_path)


def test_culane_eval_with_3_processes(fixtures_dir, tmp_path):
    culane = fixtures_dir / "culane"
    if not culane.is_dir():
        pytest.skip("culane fixtures absent")
    args = ["culane-eval", "--pred", str(culane / "pred"), "--gt", str(culane / "gt")]
    args += ["--list", str(culane / "list.txt"), "--iou-range", "--per-image"]
    _assert_same_as_one_process(args, [3], tmp_path)


def test_llamas_and_curvelanes_eval_with_2_processes(fixtures_dir, tmp_path):
    llamas, curvelanes = fixtures_dir / "llamas" / "cases", fixtures_dir / "curvelanes" / "cases"
    if not (llamas.is_dir() and curvelanes.is_dir()):
        pytest.skip("llamas / curvelanes fixtures absent")
    (tmp_path / "llamas").mkdir()
    (tmp_path / "curvelanes").mkdir()
    args = ["llamas-eval", "--gt", str(llamas / "labels" / "valid"), "--pred", str(llamas / "pred"), "--per-image"]
    _assert_same_as_one_process([*args, "--compat", "reference"], [2], tmp_path / "llamas")
    args = ["curvelanes-eval", "--gt", str(curvelanes / "valid"), "--pred", str(curvelanes / "pred"), "--per-image"]
    _assert_same_as_one_process(args, [2], tmp_path / "curvelanes")


def test_a_command_that_does_not_shard_runs_on_rank_0_alone(monkeypatch, capsys):
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "1")
    assert main(["tusimple-eval", "--pred", "/nonexistent", "--gt", "/nonexistent"]) == 0  # rank 1: nothing
    assert capsys.readouterr().out == ""
    monkeypatch.setenv("RANK", "0")
    assert main(["tusimple-eval", "--pred", "/nonexistent", "--gt", "/nonexistent"]) == 2  # rank 0 runs it
    assert "runs on rank 0 alone" in capsys.readouterr().err


@pytest.mark.parametrize("track", ["centerline", "lanesegment"])
def test_openlanev2_eval_with_3_processes(fixtures_dir, tmp_path, track):
    cases = fixtures_dir / "openlanev2" / f"{track}_cases.json"
    if not cases.is_file():
        pytest.skip("openlanev2 fixtures absent")
    args = ["openlanev2-eval", "--gt", str(cases), "--pred", str(cases), "--compat", "reference"]
    _assert_same_as_one_process(args, [3], tmp_path)


@pytest.mark.parametrize(
    ("protocol", "case"),
    [("nuscenes-maptr", "nuscenes_maptr"), ("default", "av2_cvpr23"), ("av2-cvpr23", "av2_cvpr23")],
)
def test_map_eval_with_2_processes(fixtures_dir, tmp_path, protocol, case):
    root = fixtures_dir / "map_ap" / "cases" / case
    if not root.is_dir():
        pytest.skip("map_ap fixtures absent")
    args = ["map-eval", "--protocol", protocol, "--gt", str(root / "gt.json"), "--pred", str(root / "pred.json")]
    _assert_same_as_one_process(args, [2], tmp_path)


def test_openlane3d_eval_with_2_and_3_processes(fixtures_dir, tmp_path):
    cases = fixtures_dir / "openlane3d" / "cases"
    if not cases.is_dir():
        pytest.skip("openlane3d fixtures absent")
    args = ["openlane3d-eval", "--gt", str(cases / "gt"), "--pred", str(cases / "pred")]
    _assert_same_as_one_process([*args, "--list", str(cases / "test_list.txt"), "--workers", "1"], [2, 3], tmp_path)


def test_openlane3d_eval_pairs_predictions_across_ranks(fixtures_dir, tmp_path):
    """Predictions naming the annotation of a line another rank reads (and a path annotated twice) score as in one
    process."""
    from tests.lane3d.test_cli_io import _copy_with_paths, _swapped

    cases = fixtures_dir / "openlane3d" / "cases"
    if not cases.is_dir():
        pytest.skip("openlane3d fixtures absent")
    pred_paths, gt_paths = _swapped(cases)
    pred_paths[50] = gt_paths[50]
    test_list = _copy_with_paths(cases, tmp_path / "data", pred_paths, gt_paths)
    args = ["openlane3d-eval", "--gt", str(tmp_path / "data" / "gt"), "--pred", str(tmp_path / "data" / "pred")]
    _assert_same_as_one_process([*args, "--list", str(test_list), "--workers", "1"], [2], tmp_path)


@pytest.mark.parametrize("roi", ["60x30", "100x50"])
def test_map_eval_streammapnet_with_2_processes(fixtures_dir, tmp_path, roi):
    root = fixtures_dir / "streammapnet" / "cases" / roi
    if not root.is_dir():
        pytest.skip("streammapnet fixtures absent")
    args = ["map-eval", "--protocol", "streammapnet", "--roi", roi, "--gt", str(root / "gts.json")]
    _assert_same_as_one_process([*args, "--pred", str(root / "submission_vector.json")], [2], tmp_path)


def test_map_eval_maptracker_shards_whole_scenes(fixtures_dir, tmp_path):
    """Each rank forms the tracks of its scenes: C-mAP, plain mAP and the per-frame flags of one process (the
    track ids are reported by one process only)."""
    import json

    root = fixtures_dir / "maptracker_cmap" / "cases" / "60x30"
    if not root.is_dir():
        pytest.skip("maptracker_cmap fixtures absent")
    args = ["map-eval", "--protocol", "maptracker", "--roi", "60x30", "--compat", "reference"]
    args += ["--gt", str(root / "samples.json"), "--pred", str(root / "submission_vector.json")]
    single = _run(args, 1, tmp_path / "one.json")
    printed = _run(args, 2, tmp_path / "two.json")
    one, two = json.loads((tmp_path / "one.json").read_text()), json.loads((tmp_path / "two.json").read_text())
    assert printed == single
    assert one["cmap"] == two["cmap"]
    assert one["plain"] == two["plain"]
    assert "gt_tracks" in one
    assert "gt_tracks" not in two
