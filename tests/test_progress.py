"""Progress bars of the dataset commands (issue 27): shown on a terminal, quiet when redirected or ``--no-progress``.

``culane-eval``, ``tusimple-eval`` and ``kitti-object-eval`` on tiny synthetic inputs; a terminal is faked by making
``isatty()`` of the captured stdout / stderr return True.
"""

from __future__ import annotations

import json
import sys

import pytest

from drivemetrics._internal.progress import progress_enabled
from drivemetrics.cli import main

KITTI_CAR = "Car 0.00 0 -1.58 587.01 173.33 614.12 200.12 1.65 1.67 3.64 -0.65 1.71 46.70 -1.59"


def _culane(tmp_path):
    for folder in ("gt", "pred"):
        path = tmp_path / folder / "d" / "a.lines.txt"
        path.parent.mkdir(parents=True)
        path.write_text("600 580 600 300\n")
    return ["culane-eval", "--pred", str(tmp_path / "pred"), "--gt", str(tmp_path / "gt")], "culane-eval"


def _tusimple(tmp_path):
    ys = [200, 210, 220, 230]
    gt, pred = tmp_path / "gt.json", tmp_path / "pred.json"
    gt.write_text(json.dumps({"raw_file": "a", "lanes": [[100, 110, 120, 130]], "h_samples": ys}) + "\n")
    pred.write_text(json.dumps({"raw_file": "a", "lanes": [[101, 111, 121, 131]], "run_time": 10}) + "\n")
    return ["tusimple-eval", "--pred", str(pred), "--gt", str(gt)], "tusimple-eval"


def _kitti(tmp_path):
    (tmp_path / "gt").mkdir()
    (tmp_path / "det").mkdir()
    (tmp_path / "gt" / "000000.txt").write_text(KITTI_CAR + "\n")
    (tmp_path / "det" / "000000.txt").write_text(KITTI_CAR + " 0.9\n")
    return ["kitti-object-eval", "--gt", str(tmp_path / "gt"), "--det", str(tmp_path / "det")], "kitti-object-eval"


COMMANDS = {"culane-eval": _culane, "tusimple-eval": _tusimple, "kitti-object-eval": _kitti}


def _fake_terminal(monkeypatch):
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True, raising=False)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)


def test_progress_rule(monkeypatch):
    assert progress_enabled(True)
    assert not progress_enabled(False)
    assert not progress_enabled(None)  # pytest captures both streams: not a terminal
    _fake_terminal(monkeypatch)
    assert progress_enabled(None)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: False)  # output redirected to a file
    assert not progress_enabled(None)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_bar_on_a_terminal_only(command, tmp_path, capsys, monkeypatch):
    argv, desc = COMMANDS[command](tmp_path)
    assert main(argv) == 0
    assert desc not in capsys.readouterr().err  # redirected: quiet
    _fake_terminal(monkeypatch)
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert desc in captured.err  # the bar goes to stderr, the table to stdout
    assert desc not in captured.out
    assert main([*argv, "--no-progress"]) == 0
    assert desc not in capsys.readouterr().err
