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


def _graph(tmp_path):
    text = "0 0\n100 0\n100 100\n0 100\n\n0 1\n1 2\n2 3\n"
    (tmp_path / "gt.graph").write_text(text)
    (tmp_path / "pred.graph").write_text(text)
    argv = ["graph-eval", "--gt", str(tmp_path / "gt.graph"), "--pred", str(tmp_path / "pred.graph")]
    return [*argv, "--metrics", "ccq", "opt_j", "--workers", "1"], "graph-eval"


def _sensitivity(tmp_path):
    (tmp_path / "gt.graph").write_text("0 0\n200 0\n200 200\n0 200\n\n0 1\n1 2\n2 3\n3 0\n")
    argv = ["graph-sensitivity", "--gt", str(tmp_path / "gt.graph"), "--out", str(tmp_path / "sens"), "--crop", "0"]
    return [
        *argv,
        "--k-max",
        "1",
        "--metrics",
        "ccq",
        "--kinds",
        "interruptions",
        "--samples",
        "5",
    ], "graph-sensitivity"


def _lanegraph(tmp_path):
    import pickle

    import networkx as nx
    import numpy as np

    graph = nx.DiGraph([(0, 1), (1, 2)])
    nx.set_node_attributes(graph, {k: np.array([20.0 + 40 * k, 128.0]) for k in range(3)}, "pos")
    path = tmp_path / "g.pickle"
    path.write_bytes(pickle.dumps({"austin": {"eval": {"austin_1_0_0": graph}}}))
    argv = ["lanegraph-eval", "--gt", str(path), "--pred", str(path), "--task", "successor", "--workers", "1"]
    return argv, "lanegraph-eval"


def _map(tmp_path):
    gt = {"GTs": [{"sample_token": "a", "vectors": [{"pts": [[0, 0], [0, 10]], "type": 0}]}]}
    pred = {
        "results": [
            {"sample_token": "a", "vectors": [{"pts": [[0.5, 0], [0.5, 10]], "type": 0, "confidence_level": 0.9}]}
        ]
    }
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "pred.json").write_text(json.dumps(pred))
    argv = ["map-eval", "--protocol", "nuscenes-maptr", "--gt", str(tmp_path / "gt.json")]
    return [*argv, "--pred", str(tmp_path / "pred.json"), "--workers", "1"], "map-eval"


def _openlane3d(tmp_path):
    gt = {"file_path": "s/1.jpg", "extrinsic": [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 2], [0, 0, 0, 1]]}
    gt["lane_lines"] = [{"xyz": [[10, 60], [0, 0], [-2, -2]], "visibility": [1, 1], "category": 1}]
    pred = {"file_path": "s/1.jpg", "lane_lines": [{"xyz": [[0, 10, 0], [0, 60, 0]], "category": 1}]}
    for folder, data in (("gt", gt), ("pred", pred)):
        (tmp_path / folder / "s").mkdir(parents=True)
        (tmp_path / folder / "s" / "1.json").write_text(json.dumps(data))
    (tmp_path / "list.txt").write_text("s/1.jpg\n")
    argv = ["openlane3d-eval", "--gt", str(tmp_path / "gt"), "--pred", str(tmp_path / "pred")]
    return [*argv, "--list", str(tmp_path / "list.txt"), "--workers", "1"], "openlane3d-eval"


def _openlanev2(tmp_path):
    frame = {"lane_centerline": [{"points": [[0, 0, 0], [10, 0, 0]]}], "traffic_element": []}
    frame |= {"topology_lclc": [[0]], "topology_lcte": []}
    pred = {**frame, "lane_centerline": [{"points": [[0, 0.5, 0], [10, 0.5, 0]], "confidence": 0.9}]}
    pred["topology_lclc"] = [[0.0]]
    cases = {"track": "centerline", "frames": [{"token": "f0", "gt": frame, "pred": pred}]}
    (tmp_path / "cases.json").write_text(json.dumps(cases))  # the fixture layout: both sides in one file
    argv = ["openlanev2-eval", "--gt", str(tmp_path / "cases.json"), "--pred", str(tmp_path / "cases.json")]
    return [*argv, "--workers", "1"], "openlanev2-eval"


def _llamas(tmp_path):
    marker = {"world_start": {"x": 1, "y": 1.6, "z": 5}, "world_end": {"x": 1, "y": 1.6, "z": 11}}
    near = {**marker, "pixel_start": {"x": 700, "y": 700}, "pixel_end": {"x": 680, "y": 600}}
    far = {**marker, "world_start": {"x": 1, "y": 1.6, "z": 15}, "pixel_start": {"x": 672, "y": 560}}
    far["pixel_end"] = {"x": 652, "y": 460}
    (tmp_path / "labels" / "s").mkdir(parents=True)
    (tmp_path / "pred" / "s").mkdir(parents=True)
    label = {"lanes": [{"lane_id": "r0", "markers": [near, far]}]}
    (tmp_path / "labels" / "s" / "a.json").write_text(json.dumps(label))
    (tmp_path / "pred" / "s" / "a.lines.txt").write_text("700 700 652 460\n")
    argv = ["llamas-eval", "--gt", str(tmp_path / "labels"), "--pred", str(tmp_path / "pred"), "--workers", "1"]
    return argv, "llamas-eval"


def _curvelanes(tmp_path):
    (tmp_path / "valid" / "labels").mkdir(parents=True)
    (tmp_path / "pred").mkdir()
    lane = [{"x": "1000", "y": "1439"}, {"x": "1200", "y": "700"}]
    (tmp_path / "valid" / "labels" / "a.lines.json").write_text(json.dumps({"Lines": [lane]}))
    (tmp_path / "pred" / "a.lines.json").write_text(json.dumps({"Lines": [{"score": 0.9, "points": lane}]}))
    argv = ["curvelanes-eval", "--gt", str(tmp_path / "valid"), "--pred", str(tmp_path / "pred")]
    return [*argv, "--image-size", "2560x1440", "--workers", "1"], "curvelanes-eval"


def _apollo3d(tmp_path):
    lane = [[1.0, float(y), 0.0] for y in range(5, 100, 5)]
    gt = {"raw_file": "images/00/1.jpg", "cam_height": 1.8, "cam_pitch": 0.04, "laneLines": [lane]}
    gt |= {"laneLines_visibility": [[1.0] * len(lane)], "centerLines": [lane], "centerLines_visibility": [[1.0] * 19]}
    pred = {"raw_file": "images/00/1.jpg", "laneLines": [lane], "laneLines_prob": [0.9]}
    pred |= {"centerLines": [lane], "centerLines_prob": [0.9]}
    (tmp_path / "test.json").write_text(json.dumps(gt) + "\n")
    (tmp_path / "pred.json").write_text(json.dumps(pred) + "\n")
    argv = ["apollo3d-eval", "--gt", str(tmp_path / "test.json"), "--pred", str(tmp_path / "pred.json")]
    return [*argv, "--workers", "1"], "apollo3d-eval"


def _once3d(tmp_path):
    lane = [[1.0, 1.6, float(z)] for z in range(5, 50, 5)]
    for folder, data in (("gt", {"lanes": [lane]}), ("pred", {"lanes": [{"points": lane, "score": 0.99}]})):
        (tmp_path / folder / "s" / "cam01").mkdir(parents=True)
        (tmp_path / folder / "s" / "cam01" / "1.json").write_text(json.dumps(data))
    argv = ["once3d-eval", "--gt", str(tmp_path / "gt"), "--pred", str(tmp_path / "pred"), "--workers", "1"]
    return argv, "once3d-eval"


COMMANDS = {
    "apollo3d-eval": _apollo3d,
    "once3d-eval": _once3d,
    "llamas-eval": _llamas,
    "curvelanes-eval": _curvelanes,
    "openlanev2-eval": _openlanev2,
    "culane-eval": _culane,
    "tusimple-eval": _tusimple,
    "kitti-object-eval": _kitti,
    "graph-eval": _graph,
    "graph-sensitivity": _sensitivity,
    "lanegraph-eval": _lanegraph,
    "map-eval": _map,
    "openlane3d-eval": _openlane3d,
}


#: dataset commands without a bar, and why
WITHOUT_A_BAR: dict[str, str] = {}
#: dataset commands with a bar that is not run here, and why
BAR_NOT_RUN_HERE = {
    "road-bev": "the bar of road-eval (drivemetrics.road.evaluate._progress); needs KITTI calibrations and PNGs",
    "road-eval": "drivemetrics.road.evaluate._progress; needs KITTI-ROAD PNGs (the command matrix runs it)",
    "openlane3d-eval": "progress_bar in drivemetrics.lane3d.evaluate; needs the OpenLane layout (its own matrix row)",
}


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


def test_only_rank_zero_draws(monkeypatch):
    _fake_terminal(monkeypatch)
    monkeypatch.setenv("RANK", "0")
    assert progress_enabled(None)
    monkeypatch.setenv("RANK", "1")
    assert not progress_enabled(None)
    assert not progress_enabled(True)  # even when forced


def test_every_dataset_command_follows_the_rule():
    """Each dataset command is tested below or listed as without a bar; each with a bar has --no-progress."""
    from drivemetrics.cli import COMMANDS as ALL
    from tests.test_input_kinds import NOT_DATASET_COMMANDS, command_parser

    assert set(ALL) - NOT_DATASET_COMMANDS == set(COMMANDS) | set(WITHOUT_A_BAR) | set(BAR_NOT_RUN_HERE)
    for command in set(COMMANDS) | set(BAR_NOT_RUN_HERE):
        assert "--no-progress" in command_parser(command)._option_string_actions, command


def test_a_bar_under_torchrun_is_drawn_by_rank_zero_only(tmp_path, capsys, monkeypatch):
    argv, desc = _lanegraph(tmp_path)
    _fake_terminal(monkeypatch)
    monkeypatch.setenv("RANK", "1")  # WORLD_SIZE unset: the command runs here, as rank 1 would draw
    assert main(argv) == 0
    assert desc not in capsys.readouterr().err


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
