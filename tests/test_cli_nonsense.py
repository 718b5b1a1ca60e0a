"""Issue 51: nonsense the commands accepted (exit 0) is refused in one line naming the option or the file, and
every numeric option of every registered subcommand has a range (NaN, infinities and absurd sizes refused)."""

from __future__ import annotations

import argparse
import os

import pytest

from drivemetrics.cli import COMMANDS, main
from tests.test_outputs import _subparser, _valid_runs


def _one_line(capsys) -> str:
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def _exit_code(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as stop:  # a usage error (argparse)
        return int(stop.code or 0)


@pytest.mark.parametrize("width", ["0", "nan", "-5", "inf"])
def test_tusimple_ego_width_must_be_positive_and_finite(width, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    argv = _valid_runs()["tusimple-eval"](tmp_path)
    assert _exit_code([*argv, "--ego-only", "--image-width", width]) == 2
    assert "--image-width" in _one_line(capsys)


@pytest.mark.parametrize(
    ("option", "value"),
    [("--width", "1000000000"), ("--height", "0"), ("--line-width", "1e6"), ("--line-width", "0"), ("--iou", "nan")],
)
def test_culane_sizes_out_of_range_are_refused(option, value, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    argv = _valid_runs()["culane-eval"](tmp_path)
    assert _exit_code([*argv, option, value]) == 2
    assert option in _one_line(capsys)


def test_culane_canvas_beyond_the_pixel_limit_is_refused_before_work(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    argv = _valid_runs()["culane-eval"](tmp_path)
    assert _exit_code([*argv, "--width", "100000", "--height", "100000"]) == 2
    line = _one_line(capsys)
    assert "--width" in line
    assert "max_png_pixels" in line


def test_graph_window_beyond_the_extent_limit_is_refused(tmp_path, monkeypatch, capsys):
    # issue 51: a 40,000 px window cost 2.1 GB
    monkeypatch.chdir(tmp_path)
    argv = _valid_runs()["graph-eval"](tmp_path)
    assert _exit_code([*argv, "--window", "0", "0", "40000", "40000"]) == 2
    line = _one_line(capsys)
    assert "--window" in line
    assert "max_graph_extent" in line


def _kitti_frame(folder, name: str, score: bool) -> None:
    folder.mkdir(exist_ok=True)
    row = "Car 0.00 0 -1.58 587.01 173.33 614.12 200.12 1.65 1.67 3.64 -0.65 1.71 46.70 -1.59"
    (folder / f"{name}.txt").write_text(row + (" 0.9" if score else "") + "\n")


def test_a_kitti_detection_file_that_is_a_folder_is_refused(tmp_path, capsys):
    _kitti_frame(tmp_path / "gt", "000000", False)
    _kitti_frame(tmp_path / "gt", "000001", False)
    _kitti_frame(tmp_path / "det", "000000", True)
    (tmp_path / "det" / "000001.txt").mkdir()
    argv = ["kitti-object-eval", "--gt", str(tmp_path / "gt"), "--det", str(tmp_path / "det"), "--no-progress"]
    assert _exit_code(argv) == 2
    line = _one_line(capsys)
    assert "000001.txt" in line
    assert "folder" in line


@pytest.mark.parametrize("kind", ["dangling", "looping"])
def test_a_road_result_that_is_a_broken_link_is_refused(kind, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    argv = _valid_runs()["road-eval"](tmp_path)
    result = tmp_path / "ok" / "um_road_000000.png"
    result.unlink()
    if kind == "dangling":
        os.symlink(tmp_path / "nowhere.png", result)
    else:
        os.symlink(result, result)
    assert _exit_code(argv) == 2
    line = _one_line(capsys)
    assert "um_road_000000.png" in line
    assert kind in line


NUMERIC = [
    (command, action.option_strings[0])
    for command in COMMANDS
    for action in _subparser(command)._actions
    if action.type in (int, float) or getattr(action.type, "__name__", "") in ("int", "float", "positive_int")
]


@pytest.mark.parametrize(("command", "option"), NUMERIC, ids=lambda v: str(v))
def test_every_numeric_option_refuses_nan_and_absurd_values(command, option, capsys):
    sub = _subparser(command)
    action = next(a for a in sub._actions if option in a.option_strings)
    for text in ("nan", "inf", "1e400", "9" * 5000):
        message = None
        try:
            value = action.type(text)
        except (ValueError, argparse.ArgumentTypeError) as err:
            message = str(err)
        assert message is not None, f"{command} {option} accepted {text[:20]!r} as {value!r}"
        assert len(message) < 200, message[:300]


# ---------------------------------------------------------------------------------------------------------------
# the internal error, warnings, long messages, a second Ctrl-C


def test_a_networkx_pickle_with_a_list_adjacency_is_bad_input_not_an_internal_error(tmp_path, capsys):
    import pickle

    import networkx as nx

    good = nx.Graph()
    good.add_node(0, pos=(0.0, 0.0))
    good.add_node(1, pos=(10.0, 0.0))
    good.add_edge(0, 1)
    bad = nx.Graph()
    bad.add_node(0, pos=(0.0, 0.0))
    bad._adj = [1, 2]
    (tmp_path / "gt.pickle").write_bytes(pickle.dumps(good))
    (tmp_path / "bad.pickle").write_bytes(pickle.dumps(bad))
    argv = ["graph-eval", "--workers", "1", "--gt", str(tmp_path / "gt.pickle"), "--pred", str(tmp_path / "bad.pickle")]
    assert _exit_code(argv) == 2
    line = _one_line(capsys)
    assert "bad.pickle" in line
    assert "_adj is a list" in line


def test_numpy_warnings_are_one_line_each_without_source_lines(tmp_path):
    import subprocess
    import sys

    from tests.conftest import REPO_ROOT

    for folder, row in (("gt", ""), ("det", " 0.9")):
        (tmp_path / folder).mkdir()
        box = "587.01 173.33 614.12 200.12" if folder == "gt" else "1e308 173.33 -1e308 200.12"
        (tmp_path / folder / "000000.txt").write_text(
            f"Car 0.00 0 -1.58 {box} 1.65 1.67 3.64 -0.65 1.71 46.70 -1.59{row}\n"
        )
    argv = ["kitti-object-eval", "--gt", str(tmp_path / "gt"), "--det", str(tmp_path / "det"), "--no-progress"]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    # issue 51: a 1e308 coordinate is refused by default (max_abs_coordinate), in one line
    run = subprocess.run([sys.executable, "-m", "drivemetrics", *argv], capture_output=True, text=True, env=env)
    assert run.returncode == 2, run.stderr[-600:]
    assert run.stderr.count("\n") == 1, run.stderr
    assert "max_abs_coordinate" in run.stderr, run.stderr
    # with the limit raised to the largest float it admits, numpy overflows: each warning one line, no source line
    argv += ["--limit", f"max_abs_coordinate={10**308}"]
    run = subprocess.run([sys.executable, "-m", "drivemetrics", *argv], capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stderr[-600:]
    lines = run.stderr.strip().splitlines()
    assert lines, "expected the overflow warnings"
    assert all(line.startswith("drivemetrics kitti-object-eval: warning") for line in lines), lines


def test_an_error_quoting_100_kb_of_input_is_cut():
    from drivemetrics.cli import MAX_ERROR_CHARS, error_line

    line = error_line(ValueError("bad.json: unknown key " + "k" * 100_000 + " at the end"))
    assert len(line) <= MAX_ERROR_CHARS
    assert line.startswith("bad.json: unknown key kkk")
    assert line.endswith("at the end")


def test_a_50_kb_sample_token_is_not_printed_whole(tmp_path, monkeypatch, capsys):
    import json

    monkeypatch.chdir(tmp_path)
    argv = _valid_runs()["map-eval"](tmp_path)
    (tmp_path / "ok.json").write_text(json.dumps({"results": [{"sample_token": "a" * 50_000, "vectors": []}]}))
    assert _exit_code(list(argv)) == 0
    err = capsys.readouterr().err
    assert err.strip()
    assert max(len(line) for line in err.splitlines()) < 250


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "getpgid"), reason="POSIX signals")
def test_a_second_ctrl_c_during_the_workers_prints_no_traceback(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    from tests.conftest import REPO_ROOT
    from tests.test_cli_errors import _children, _write_culane_frames

    _write_culane_frames(tmp_path, 6000)  # still running at the signal
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "OMP_NUM_THREADS": "1"}
    argv = ["culane-eval", "--gt", str(tmp_path / "gt"), "--pred", str(tmp_path / "pred")]
    argv += ["--list", str(tmp_path / "list.txt"), "--workers", "2", "--chunk", "16", "--no-progress"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "drivemetrics", *argv],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        # Ctrl-C as a terminal delivers it: a test run started in the background (`make test-slow &`) ignores
        # SIGINT, and an ignored SIGINT is inherited, so the command would rightly run to its end (exit 0)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None and len(_children(proc.pid)) < 3:
            time.sleep(0.2)
        time.sleep(0.3)
        assert proc.poll() is None, "the command ended before the signal: the test needs more frames"
        proc.send_signal(signal.SIGINT)
        for _ in range(10):  # Ctrl-C again and again while the command cleans up and exits
            time.sleep(0.05)
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "Traceback" not in stderr, stderr[-2000:]
    assert proc.returncode == 130, stderr[-600:]
    assert stderr.strip().splitlines() == ["drivemetrics culane-eval: interrupted"]


def test_a_100_kb_list_entry_is_not_quoted_whole(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    from tests.cost_harness import _culane

    _, ok = _culane(tmp_path, "800 580 810 450\n", "a.jpg\n")
    (tmp_path / "ok_list.txt").write_text("x" * 100_000 + "\n")
    assert _exit_code(ok) == 2
    line = _one_line(capsys)
    assert "File name too long" in line
    assert len(line) < 200


def test_a_kitti_line_with_a_5000_digit_number_is_quoted_to_80_characters(tmp_path, capsys):
    from tests.cost_harness import KITTI_ROW, _kitti_crowd

    _, ok = _kitti_crowd(tmp_path, 1)
    (tmp_path / "ok_det" / "000000.txt").write_text(KITTI_ROW.replace("587.01", "9" * 5000) + " 0.9\n")
    assert _exit_code([a if a not in ("ok_gt", "ok_det") else str(tmp_path / a) for a in ok]) == 2
    line = _one_line(capsys)
    assert "000000.txt:1" in line
    assert len(line) < 250
