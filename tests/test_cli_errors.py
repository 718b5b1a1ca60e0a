"""The one error contract of the ``drivemetrics`` command (issue 36): every exception that escapes a command is one
line; bad input exits 2, an internal bug exits 1 with a hint to report it, SIGTERM ends the workers and exits 143."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from drivemetrics import cli
from drivemetrics.cli import main

REPO = Path(__file__).resolve().parents[1]


def _fail_with(monkeypatch: pytest.MonkeyPatch, err: BaseException) -> None:
    def run(args: object) -> int:
        raise err

    monkeypatch.setattr(cli, "_run", run)


@pytest.mark.parametrize(
    "err",
    [
        ValueError("bad.json: line 3: not a number"),
        OSError(21, "Is a directory", "some/folder"),
        KeyError("frame 7 has no 'points'"),
        TypeError("confidence must be a number"),
        IndexError("list index out of range"),
        OverflowError("cannot convert float infinity to integer"),
        MemoryError(),
        RecursionError("maximum recursion depth exceeded"),
        EOFError("Ran out of input"),
        ModuleNotFoundError("No module named 'cv2'"),
        torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB\nsee the docs"),
    ],
    ids=lambda err: type(err).__name__,
)
def test_bad_input_is_one_line_and_exit_2(monkeypatch, capsys, err):
    _fail_with(monkeypatch, err)
    assert main(["demo", "--out", "x"]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("drivemetrics demo: error: ")
    assert lines[0] != "drivemetrics demo: error: "


def test_memory_error_says_what_happened(monkeypatch, capsys):
    _fail_with(monkeypatch, MemoryError())
    main(["demo", "--out", "x"])
    assert "out of memory" in capsys.readouterr().err


@pytest.mark.parametrize(
    "err", [RuntimeError("shape mismatch"), AssertionError(), AttributeError("'NoneType' object has no attribute 'x'")]
)
def test_internal_bug_is_one_line_exit_1_with_a_report_hint(monkeypatch, capsys, err):
    _fail_with(monkeypatch, err)
    assert main(["demo", "--out", "x"]) == 1
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"drivemetrics demo: internal error: {type(err).__name__}")
    assert "report" in lines[0]
    assert "--verbose" in lines[0]


def test_verbose_adds_the_traceback(monkeypatch, capsys):
    _fail_with(monkeypatch, RuntimeError("boom"))
    assert main(["--verbose", "demo", "--out", "x"]) == 1
    err = capsys.readouterr().err
    assert "Traceback" in err
    assert err.rstrip().splitlines()[-1].startswith("drivemetrics demo: internal error")


def test_bogus_device_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["map-eval", "--gt", "g.json", "--pred", "p.json", "--device", "bogus"])
    assert exit_info.value.code == 2
    assert "argument --device: not a device: 'bogus'" in capsys.readouterr().err


@pytest.mark.skipif(torch.cuda.is_available(), reason="this host has CUDA")
def test_cuda_device_without_cuda_is_one_line_before_any_work(tmp_path, capsys):
    # the files do not exist: the device is checked first
    assert main(["map-eval", "--gt", str(tmp_path / "g.json"), "--pred", str(tmp_path / "p.json"), "--device", "cuda"])
    lines = capsys.readouterr().err.splitlines()
    assert lines == [
        f"drivemetrics map-eval: error: --device cuda: no cuda device on this host (torch {torch.__version__})"
    ]


def _write_culane_frames(root: Path, frames: int) -> None:
    """CULane GT / prediction files: four straight lanes per frame, the predictions shifted by 3 px."""
    for folder in ("gt", "pred"):
        (root / folder).mkdir()
    names = []
    for i in range(frames):
        names.append(f"f{i:05d}.jpg")
        for folder, shift in (("gt", 0), ("pred", 3)):
            lanes = [
                " ".join(f"{300 + 300 * k + shift + 0.3 * (590 - y):.1f} {y}" for y in range(590, 250, -10))
                for k in range(4)
            ]
            (root / folder / f"f{i:05d}.lines.txt").write_text("\n".join(lanes) + "\n")
    (root / "list.txt").write_text("\n".join(names) + "\n")


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text().split()
        found.extend(int(child) for child in text)
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the process tree from /proc")
def test_sigterm_ends_the_workers_and_the_resource_tracker_and_keeps_outputs(tmp_path):
    _write_culane_frames(tmp_path, 6000)  # still running at the signal
    out = tmp_path / "out.json"
    out.write_text('{"old": 1}\n')
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    argv = ["culane-eval", "--gt", str(tmp_path / "gt"), "--pred", str(tmp_path / "pred")]
    argv += ["--list", str(tmp_path / "list.txt"), "--workers", "2", "--chunk", "16", "--json", str(out)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "drivemetrics", *argv], env=env, stderr=subprocess.PIPE, text=True, cwd=tmp_path
    )
    try:
        deadline = time.monotonic() + 120
        children: list[int] = []
        while time.monotonic() < deadline and proc.poll() is None:
            children = _children(proc.pid)
            if len(children) >= 3:  # the resource tracker and two workers
                break
            time.sleep(0.2)
        assert len(children) >= 3, f"workers never started: {children}, exit {proc.poll()}"
        time.sleep(0.3)
        assert proc.poll() is None, "the command ended before the signal: the test needs more frames"
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, stderr
    assert stderr.splitlines() == ["drivemetrics culane-eval: terminated (SIGTERM)"]
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and any(_alive(child) for child in children):
        time.sleep(0.2)
    assert not [child for child in children if _alive(child)], "a worker or the resource tracker outlived the command"
    assert out.read_text() == '{"old": 1}\n'
    assert not list(tmp_path.glob(".*.tmp"))
