"""The read-ahead reader: input files read in a forked, torch-free child while the command imports torch."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from drivemetrics._internal.read_ahead import read_ahead

REPO = Path(__file__).resolve().parents[1]

# Runs the command in a fresh interpreter and records, in one log file shared by every process: the first import of
# torch (by an import hook) and each reader call, with the process id and whether torch was imported there.
_TRACED_COMMAND = r"""
import os, sys
log = open(sys.argv[1], "a", buffering=1)

class TorchImportHook:
    def find_spec(self, name, path=None, target=None):
        if name in ("torch", "torchmetrics") and name not in sys.modules:
            log.write(f"import {name} pid={os.getpid()}\n")
        return None

sys.meta_path.insert(0, TorchImportHook())
import importlib
io = importlib.import_module(os.environ["TRACE_MODULE"])

def traced(name, original):
    def read(*args, **kwargs):
        log.write(f"{name} pid={os.getpid()} torch_imported={'torch' in sys.modules}\n")
        return original(*args, **kwargs)
    return read

for name in os.environ["TRACE_READERS"].split(","):
    setattr(io, name, traced(name, getattr(io, name)))
from drivemetrics.cli import main
code = main(sys.argv[2:])
log.write(f"exit {code} pid={os.getpid()}\n")
raise SystemExit(code)
"""


_OPENLANEV2_READERS = ("drivemetrics.lanetopology.io", "read_ground_truth,read_predictions")


def _run_traced(
    tmp_path: Path, *args: str, readers: tuple[str, str] = _OPENLANEV2_READERS
) -> tuple[subprocess.CompletedProcess, list[str]]:
    script, log = tmp_path / "traced.py", tmp_path / "events.log"
    script.write_text(_TRACED_COMMAND)
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    env["TRACE_MODULE"], env["TRACE_READERS"] = readers
    env.pop("DRIVEMETRICS_READ_AHEAD", None)
    done = subprocess.run([sys.executable, str(script), str(log), *args], capture_output=True, text=True, env=env)
    return done, log.read_text().splitlines()


def _fixture(fixtures_dir: Path) -> Path:
    path = fixtures_dir / "openlanev2" / "centerline_cases.json"
    if not path.is_file():
        pytest.skip("openlanev2 fixtures absent")
    return path


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the forked reader is Linux-only")
def test_openlanev2_eval_reads_its_files_in_a_forked_child_and_never_imports_torch(fixtures_dir: Path, tmp_path: Path):
    cases = _fixture(fixtures_dir)
    for compat in ("reference", "default"):
        log = tmp_path / "events.log"
        log.unlink(missing_ok=True)
        done, events = _run_traced(
            tmp_path, "openlanev2-eval", "--gt", str(cases), "--pred", str(cases), "--compat", compat
        )
        assert done.returncode == 0, done.stderr
        assert "OLS" in done.stdout
        command_pid = events[-1].split("pid=")[1]
        assert events[-1] == f"exit 0 pid={command_pid}"
        # the scoring runs on numpy arrays: no process of the command imports torch (by import order, not time)
        assert not any(e.startswith("import torch") for e in events), events
        reads = [e for e in events if e.startswith("read_")]
        assert sorted(r.split()[0] for r in reads) == ["read_ground_truth", "read_predictions"]  # side by side
        for read in reads:  # the files were read by a forked child
            assert read.endswith("torch_imported=False"), events
            assert f"pid={command_pid}" not in read, events


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the forked reader is Linux-only")
def test_map_eval_reads_its_files_before_torch_is_imported(fixtures_dir: Path, tmp_path: Path):
    root = fixtures_dir / "map_ap" / "cases" / "nuscenes_maptr"
    if not (root / "gt.json").is_file():
        pytest.skip("map_ap fixtures absent")
    gt, pred = str(root / "gt.json"), str(root / "pred.json")
    done, events = _run_traced(
        tmp_path,
        "map-eval",
        "--protocol",
        "nuscenes-maptr",
        "--gt",
        gt,
        "--pred",
        pred,
        readers=("drivemetrics.vectormap.io", "read_map_files"),
    )
    assert done.returncode == 0, done.stderr
    assert "mAP" in done.stdout
    command_pid = events[-1].split("pid=")[1]
    assert events[-1] == f"exit 0 pid={command_pid}"
    assert f"import torch pid={command_pid}" in events
    reads = [e for e in events if e.startswith("read_")]
    assert len(reads) == 1, events
    assert reads[0].endswith("torch_imported=False"), events
    assert f"pid={command_pid}" not in reads[0], events


_MAP_FLAT_READERS = ("drivemetrics.vectormap.evaluate", "read_resampled,evaluate_flat")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the forked reader is Linux-only")
def test_map_eval_av2_reads_in_forked_children_and_never_imports_torch(fixtures_dir: Path, tmp_path: Path):
    root = fixtures_dir / "map_ap" / "cases" / "av2_cvpr23"
    if not (root / "gt.json").is_file():
        pytest.skip("map_ap fixtures absent")
    gt, pred = str(root / "gt.json"), str(root / "pred.json")
    argv = ["map-eval", "--protocol", "av2-cvpr23", "--gt", gt, "--pred", pred]
    for workers in ([], ["--workers", "2"]):
        (tmp_path / "events.log").unlink(missing_ok=True)
        done, events = _run_traced(tmp_path, *argv, *workers, readers=_MAP_FLAT_READERS)
        assert done.returncode == 0, done.stderr
        assert "mAP" in done.stdout
        command_pid = events[-1].split("pid=")[1]
        assert events[-1] == f"exit 0 pid={command_pid}"
        # numpy all the way: no process of the command imports torch or torchmetrics (by import order, not time)
        assert not any(e.startswith("import ") for e in events), events
        reads = [e for e in events if e.startswith("read_resampled")]
        assert len(reads) == 2, events  # GT and predictions side by side, each in a forked child
        for read in reads:
            assert read.endswith("torch_imported=False"), events
            assert f"pid={command_pid}" not in read, events
        assert f"evaluate_flat pid={command_pid} torch_imported=False" in events
    # an error of the reader in the child is the command's one-line error
    (tmp_path / "bad.json").write_text(
        '{"results": {"1": {"vectors": [[[0, 0], [1, 1]]], "scores": [2.0], "labels": [0]}}}'
    )
    done, _ = _run_traced(
        tmp_path, "map-eval", "--protocol", "av2-cvpr23", "--gt", gt, "--pred", str(tmp_path / "bad.json")
    )
    assert done.returncode == 2
    assert "bad.json: sample 1: scores[0]: the score must be a number in [0, 1]" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the forked reader is Linux-only")
def test_a_reader_error_in_the_child_is_the_commands_one_line_error(fixtures_dir: Path, tmp_path: Path):
    cases = _fixture(fixtures_dir)
    bad = tmp_path / "bad.pkl"
    bad.write_bytes(pickle.dumps({"results": os.system}))
    done, _ = _run_traced(tmp_path, "openlanev2-eval", "--gt", str(cases), "--pred", str(bad))
    assert done.returncode == 2
    assert "bad.pkl: refusing to unpickle global" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    done, _ = _run_traced(tmp_path, "openlanev2-eval", "--gt", str(cases), "--pred", str(tmp_path / "absent.pkl"))
    assert done.returncode == 2
    assert "absent.pkl" in done.stderr


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the forked reader is Linux-only")
def test_kitti_object_eval_reads_its_folders_in_two_forked_children_and_never_imports_torch(
    fixtures_dir: Path, tmp_path: Path
):
    kitti = fixtures_dir / "kitti_object"
    if not (kitti / "det_100").is_dir():
        pytest.skip("kitti_object fixtures absent")
    (tmp_path / "list.txt").write_text("".join(f"{i:06d}\n" for i in range(100)))
    args = ["--gt", str(kitti / "label_2"), "--det", str(kitti / "det_100"), "--list", str(tmp_path / "list.txt")]
    readers = ("drivemetrics.detection.io", "read_object_table")
    done, events = _run_traced(tmp_path, "kitti-object-eval", *args, "--no-progress", readers=readers)
    assert done.returncode == 0, done.stderr
    assert "100 frames" in done.stdout
    command_pid = events[-1].split("pid=")[1]
    assert events[-1] == f"exit 0 pid={command_pid}"
    # the evaluation runs on numpy: no process of the command imports torch or torchmetrics (by import order)
    assert not any(e.startswith("import torch") for e in events), events
    reads = [e for e in events if e.startswith("read_")]
    assert len(reads) == 2, events  # labels and results, side by side: two forked children, neither the command
    pids = {read.split("pid=")[1].split()[0] for read in reads}
    assert len(pids) == 2, events
    assert command_pid not in pids, events
    for read in reads:
        assert read.endswith("torch_imported=False"), events


def _fail(path: str) -> None:
    raise ValueError(f"{path}: broken")


def test_read_ahead_returns_the_value_and_raises_the_readers_error():
    with read_ahead(sorted, [3, 1, 2]) as pending:
        pass
    assert pending.result() == [1, 2, 3]
    with pytest.raises(ValueError, match=r"x\.pkl: broken"), read_ahead(_fail, "x.pkl") as pending:
        pending.result()


def test_read_ahead_does_not_fork_once_torch_is_imported():
    import torch  # noqa: F401 - imported by the test run anyway; the fork would no longer be safe

    with read_ahead(os.getpid) as pending:
        pass
    assert not pending.forked
    assert pending.result() == os.getpid()
