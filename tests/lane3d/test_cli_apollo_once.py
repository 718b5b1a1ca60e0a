"""``apollo3d-eval`` and ``once3d-eval``: one-line errors naming the file (exit 2), default-mode handling of what
stops the official tools, atomic JSON output."""

from __future__ import annotations

import json

import pytest

from drivemetrics.cli import main

pytest.importorskip("cv2")


def _apollo(tmp_path, gt_lines, pred_lines):
    gt, pred = tmp_path / "test.json", tmp_path / "pred.json"
    gt.write_text("".join(json.dumps(line) + "\n" for line in gt_lines))
    pred.write_text("".join(json.dumps(line) + "\n" for line in pred_lines))
    return ["apollo3d-eval", "--gt", str(gt), "--pred", str(pred), "--no-progress"]


LANE = [[1.8, float(y), 0.0] for y in range(3, 101)]
GT = {
    "raw_file": "a.jpg",
    "laneLines": [LANE],
    "laneLines_visibility": [[1.0] * 98],
    "centerLines": [],
    "centerLines_visibility": [],
}
PRED = {"raw_file": "a.jpg", "laneLines": [LANE], "laneLines_prob": [0.9], "centerLines": [], "centerLines_prob": []}


def test_apollo_missing_prediction_line(tmp_path, capsys):
    gt2 = {**GT, "raw_file": "b.jpg"}
    argv = _apollo(tmp_path, [GT, gt2], [PRED])
    assert main([*argv, "--compat", "reference"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "pred.json" in err[0]
    assert "1 prediction lines for 2 GT lines" in err[0]
    out = tmp_path / "out.json"
    assert main([*argv, "--json", str(out)]) == 0  # default: the missing frame is an empty prediction
    metrics = json.loads(out.read_text())["metrics"]
    assert metrics["recall"] == pytest.approx(0.5, abs=1e-5)


def test_apollo_bad_field_and_one_point_prediction(tmp_path, capsys):
    argv = _apollo(tmp_path, [GT], [{**PRED, "laneLines_prob": "x"}])
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "pred.json: line 1" in err
    assert "laneLines_prob" in err
    argv = _apollo(tmp_path, [GT], [{**PRED, "laneLines": [LANE, [[0.0, 5.0, 0.0]]], "laneLines_prob": [0.9, 0.9]}])
    assert main([*argv, "--compat", "reference"]) == 2
    assert "fewer than 2 points" in capsys.readouterr().err
    assert main(argv) == 0


def _once(tmp_path, files):
    for rel, data in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data))
    return ["once3d-eval", "--gt", str(tmp_path / "gt"), "--pred", str(tmp_path / "pred"), "--no-progress"]


ONCE_LANE = [[1.8, 1.6, float(z)] for z in range(3, 41)]


def test_once_missing_prediction_file(tmp_path, capsys):
    argv = _once(
        tmp_path,
        {
            "gt/000001/cam01/1.json": {"lanes": [ONCE_LANE]},
            "gt/000001/cam01/2.json": {"lanes": [ONCE_LANE]},
            "pred/000001/cam01/1.json": {"lanes": [{"points": ONCE_LANE, "score": 0.99}]},
        },
    )
    assert main([*argv, "--compat", "reference"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "pred/000001/cam01/2.json" in err[0]
    assert "missing prediction file" in err[0]
    out = tmp_path / "out.json"
    assert main([*argv, "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["missing_predictions"] == ["000001/cam01/2.json"]
    assert result["metrics_at_0.95"]["recall"] == pytest.approx(0.5)


def test_once_one_point_and_empty_prediction(tmp_path, capsys):
    argv = _once(
        tmp_path,
        {
            "gt/000001/cam01/1.json": {"lanes": [ONCE_LANE]},
            "pred/000001/cam01/1.json": {
                "lanes": [{"points": [[1.8, 1.6, 5.0]], "score": 0.99}, {"points": [], "score": 0.99}]
            },
        },
    )
    assert main([*argv, "--compat", "reference"]) == 2
    err = capsys.readouterr().err
    assert "pred/000001/cam01/1.json" in err
    assert "fewer than 2 points" in err
    out = tmp_path / "out.json"
    assert main([*argv, "--json", str(out)]) == 0
    row = json.loads(out.read_text())["metrics_at_0.95"]
    assert (row["gt_all"], row["pred_all"]) == (1, 2)


def test_once_bad_score_names_the_field(tmp_path, capsys):
    argv = _once(
        tmp_path,
        {
            "gt/000001/cam01/1.json": {"lanes": [ONCE_LANE]},
            "pred/000001/cam01/1.json": {"lanes": [{"points": ONCE_LANE, "score": "high"}]},
        },
    )
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "lanes[0].score" in err
    assert "1.json" in err


@pytest.mark.parametrize("compat", ["reference", "default"])
def test_the_cpu_path_imports_neither_torch_nor_torchmetrics(tmp_path, compat):
    import subprocess
    import sys

    apollo = _apollo(tmp_path, [GT], [PRED])
    once_lane = [[1.8, 1.6, float(z)] for z in range(3, 41)]
    for sub, data in (("gt", {"lanes": [once_lane]}), ("pred", {"lanes": [{"points": once_lane, "score": 0.99}]})):
        (tmp_path / sub / "000001" / "cam01").mkdir(parents=True)
        (tmp_path / sub / "000001" / "cam01" / "1.json").write_text(json.dumps(data))
    once = ["once3d-eval", "--gt", str(tmp_path / "gt"), "--pred", str(tmp_path / "pred"), "--no-progress"]
    for argv in (apollo, once):
        code = (
            "import sys\nfrom drivemetrics.cli import main\n"
            f"assert main({[*argv, '--compat', compat, '--workers', '1']!r}) == 0\n"
            "loaded = [m for m in ('torch', 'torchmetrics') if m in sys.modules]\n"
            "assert not loaded, loaded\n"
        )
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
        assert done.returncode == 0, f"{argv[0]}: {done.stderr[-2000:]}"
