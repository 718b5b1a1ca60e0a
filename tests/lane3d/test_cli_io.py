"""Readers (official layout, PersFormer predictions, errors naming file and field) and the openlane3d-eval command
end to end on the fixture, checked with the fixture's own compare.py."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from drivemetrics._internal.limits import set_limits
from drivemetrics.cli import main
from drivemetrics.lane3d.evaluate import evaluate_openlane3d_files, evaluate_openlane3d_frames
from drivemetrics.lane3d.io import read_openlane_gt, read_openlane_pred, read_test_list

EXTRINSIC = [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 2], [0, 0, 0, 1]]


def _fixture(fixtures_dir: Path) -> Path:
    path = fixtures_dir / "openlane3d"
    if not (path / "expected.json").is_file():
        pytest.skip("openlane3d fixtures absent")
    return path


def _write(path: Path, data: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize("compat", ["reference", "default"])
def test_cli_on_the_fixture(fixtures_dir, tmp_path, capsys, compat):
    path = _fixture(fixtures_dir)
    out = tmp_path / "result.json"
    cases = path / "cases"
    args = ["openlane3d-eval", "--gt", str(cases / "gt"), "--pred", str(cases / "pred")]
    args += ["--list", str(cases / "test_list.txt"), "--json", str(out), "--workers", "2", "--compat", compat]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "F-score" in printed
    assert "category accuracy" in printed
    result = json.loads(out.read_text())
    assert len(result["per_frame"]) == 60
    check = subprocess.run(
        [sys.executable, str(path / "compare.py"), str(path / "expected.json"), str(out)],
        capture_output=True,
        text=True,
    )
    if compat == "reference":
        assert check.returncode == 0, check.stdout
        assert "RESULT: PASS" in check.stdout
    else:  # the documented fixes move the scores (docs/pages/lane3d.md)
        assert check.returncode == 1
        assert result["metrics"]["F_score"] == pytest.approx(0.573378, abs=1e-6)


def test_cli_refuses_to_overwrite_an_input(fixtures_dir, capsys):
    path = _fixture(fixtures_dir) / "cases"
    args = ["openlane3d-eval", "--gt", str(path / "gt"), "--pred", str(path / "pred")]
    assert main([*args, "--list", str(path / "test_list.txt"), "--json", str(path / "test_list.txt")]) == 2
    assert "--json" in capsys.readouterr().err


def test_persformer_predictions_keep_lanes_above_half_probability(tmp_path):
    lane = [[0.0, 5.0, 0.0], [0.0, 60.0, 0.0]]
    data = {
        "file_path": "s/1.jpg",
        "laneLines": [lane, lane, lane],
        "laneLines_prob": [[0.1, 0.2, 0.7], [0.5, 0.4], [0.2, 0.51]],
    }
    frame = read_openlane_pred(_write(tmp_path / "p.json", data))
    assert frame.categories == [2, 1]  # 0.5 is not above 0.5
    assert frame.points[0].shape == (2, 3)


def test_persformer_layout_end_to_end(tmp_path):
    gt = {"file_path": "s/1.jpg", "extrinsic": EXTRINSIC}
    gt["lane_lines"] = [{"xyz": [[10, 60], [0, 0], [-2, -2]], "visibility": [1, 1], "category": 21}]
    pred = {"file_path": "s/1.jpg", "laneLines": [[[0.2, 10, 0], [0.2, 60, 0]]], "laneLines_prob": [[0.0] * 20 + [0.9]]}
    _write(tmp_path / "gt" / "s" / "1.json", gt)
    _write(tmp_path / "pred" / "s" / "1.json", pred)
    (tmp_path / "list.txt").write_text("s/1.jpg\n")
    out = evaluate_openlane3d_files(tmp_path / "gt", tmp_path / "pred", tmp_path / "list.txt")
    assert out["metrics"]["F_score"] == 1.0
    assert out["metrics"]["category_accuracy"] == 1.0  # a left curb (20) predicted for a right one (21)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"lane_lines": []}, "'file_path'"),
        ({"file_path": "a.jpg", "lane_lines": [{"xyz": [[0, 0], [1, 1]], "category": 1}]}, "lane_lines[0].xyz"),
        ({"file_path": "a.jpg", "lane_lines": [{"xyz": [[0, 1, 2], [0, 1, 2]]}]}, "lane_lines[0]: needs"),
        ({"file_path": "a.jpg", "lane_lines": [{"xyz": [[0, 1, 2], [0, 1, 2]], "category": "x"}]}, "'category'"),
        ({"file_path": "a.jpg", "lane_lines": [{"xyz": [[0, 1, 1e9], [0, 1, 2]], "category": 1}]}, "max_lane3d_abs"),
        ({"file_path": "a.jpg"}, "'lane_lines' (official) or 'laneLines'"),
        ({"file_path": "a.jpg", "laneLines": [[[0, 1, 2]]], "laneLines_prob": []}, "1 laneLines but 0"),
    ],
)
def test_bad_predictions_name_the_file_and_field(tmp_path, data, message):
    path = _write(tmp_path / "bad.json", data)
    with pytest.raises(ValueError, match=r"bad\.json") as err:
        read_openlane_pred(path)
    assert message in str(err.value)


def test_bad_annotations_name_the_file_and_field(tmp_path):
    lane = {"xyz": [[10, 60], [0, 0], [-2, -2]], "visibility": [1], "category": 1}
    path = _write(tmp_path / "gt.json", {"file_path": "a.jpg", "extrinsic": EXTRINSIC, "lane_lines": [lane]})
    with pytest.raises(ValueError, match=r"gt.json: lane_lines\[0\].visibility: 1 values for 2 points"):
        read_openlane_gt(path)
    path = _write(tmp_path / "gt.json", {"file_path": "a.jpg", "extrinsic": [[1, 0], [0, 1]], "lane_lines": []})
    with pytest.raises(ValueError, match=r"gt\.json: field 'extrinsic'"):
        read_openlane_gt(path)


def test_limits_bound_lanes_and_points(tmp_path):
    lane = {"xyz": [[0, i, 0] for i in range(10)], "category": 1}
    path = _write(tmp_path / "p.json", {"file_path": "a.jpg", "lane_lines": [lane, lane]})
    with set_limits(max_lane3d_points=9), pytest.raises(ValueError, match="max_lane3d_points=9"):
        read_openlane_pred(path)
    with set_limits(max_lane3d_lanes=1), pytest.raises(ValueError, match="max_lane3d_lanes=1"):
        read_openlane_pred(path)


def test_missing_files_and_unknown_frames(tmp_path, capsys):
    (tmp_path / "list.txt").write_text("s/1.jpg\n")
    assert (
        main(["openlane3d-eval", "--gt", str(tmp_path), "--pred", str(tmp_path), "--list", str(tmp_path / "list.txt")])
        == 2
    )
    assert "1.json" in capsys.readouterr().err
    (tmp_path / "empty.txt").write_text("\n")
    with pytest.raises(ValueError, match="empty"):
        read_test_list(tmp_path / "empty.txt")
    gt = {"file_path": "s/1.jpg", "extrinsic": EXTRINSIC, "lane_lines": []}
    _write(tmp_path / "gt" / "s" / "1.json", gt)
    _write(tmp_path / "pred" / "s" / "1.json", {"file_path": "s/2.jpg", "lane_lines": []})
    with pytest.raises(ValueError, match=r"s/2\.jpg"):
        evaluate_openlane3d_files(tmp_path / "gt", tmp_path / "pred", tmp_path / "list.txt")


# ----------------------------------------------------------------------------------------------------------------
# predictions paired by file_path over the whole list, whatever the chunks


def _copy_with_paths(cases: Path, tmp_path: Path, pred_paths: dict[int, str], gt_paths: dict[int, str]) -> Path:
    """The fixture's frames under ``tmp_path``, the ``file_path`` of some predictions / annotations (by line)
    replaced; returns the test list."""
    lines = read_test_list(cases / "test_list.txt")
    for k, line in enumerate(lines):
        name = line.replace("jpg", "json")
        for folder, changed in (("gt", gt_paths), ("pred", pred_paths)):
            data = json.loads((cases / folder / name).read_text())
            data["file_path"] = changed.get(k, data["file_path"])
            _write(tmp_path / folder / name, data)
    test_list = tmp_path / "test_list.txt"
    test_list.write_text("".join(line + "\n" for line in lines))
    return test_list


def _expected(tmp_path: Path, test_list: Path) -> dict:
    """The frames read in this process and paired by ``file_path`` over the whole list (the evaluator's dict)."""
    lines = read_test_list(test_list)
    gt = [read_openlane_gt(tmp_path / "gt" / line.replace("jpg", "json")) for line in lines]
    preds = [read_openlane_pred(tmp_path / "pred" / line.replace("jpg", "json")) for line in lines]
    return evaluate_openlane3d_frames(gt, preds, "reference")


def _swapped(cases: Path) -> tuple[dict[int, str], dict[int, str]]:
    """Predictions of lines 0 / 45 name each other's annotation; the annotation path of line 50 is also the one
    of line 3 (the later line wins, as in the evaluator's dict), which the prediction of line 50 names."""
    lines = read_test_list(cases / "test_list.txt")
    return {0: lines[45], 45: lines[0]}, {50: lines[3]}


@pytest.mark.parametrize("workers", [1, pytest.param(2, marks=pytest.mark.slow)])
def test_a_prediction_may_name_the_annotation_of_another_chunk(fixtures_dir, tmp_path, monkeypatch, workers):
    import drivemetrics.lane3d.evaluate as ev

    cases = _fixture(fixtures_dir) / "cases"
    pred_paths, gt_paths = _swapped(cases)
    pred_paths[50] = gt_paths[50]
    test_list = _copy_with_paths(cases, tmp_path, pred_paths, gt_paths)
    monkeypatch.setattr(ev, "CHUNK_FRAMES", 8)  # lines 0 / 45 and 3 / 50 in different chunks
    monkeypatch.setattr(ev, "MIN_FRAMES_FOR_PROCESSES", 1)
    out = evaluate_openlane3d_files(tmp_path / "gt", tmp_path / "pred", test_list, "reference", workers)
    expected = _expected(tmp_path, test_list)
    assert out == expected
    # the swapped frames are scored (a prediction of a frame with lanes scored against them), not left empty
    assert out["per_frame"][0]["cnt_gt"] == expected["per_frame"][0]["cnt_gt"] > 0
    unchanged = evaluate_openlane3d_files(cases / "gt", cases / "pred", cases / "test_list.txt", "reference")
    assert out["per_frame"][0] != unchanged["per_frame"][0]


def test_a_prediction_naming_no_annotation_fails_with_one_line(fixtures_dir, tmp_path, monkeypatch, capsys):
    import drivemetrics.lane3d.evaluate as ev

    cases = _fixture(fixtures_dir) / "cases"
    test_list = _copy_with_paths(cases, tmp_path, {30: "validation/elsewhere/1.jpg"}, {})
    monkeypatch.setattr(ev, "CHUNK_FRAMES", 8)
    with pytest.raises(ValueError, match="names no annotation of the test list") as error:
        evaluate_openlane3d_files(tmp_path / "gt", tmp_path / "pred", test_list, "reference")
    message = str(error.value)
    assert "\n" not in message
    name = read_test_list(test_list)[30].replace("jpg", "json")
    assert message.startswith(str(tmp_path / "pred" / name))
    assert "validation/elsewhere/1.jpg" in message
    args = ["openlane3d-eval", "--gt", str(tmp_path / "gt"), "--pred", str(tmp_path / "pred"), "--list"]
    assert main([*args, str(test_list), "--no-progress"]) == 2
    assert "validation/elsewhere/1.jpg" in capsys.readouterr().err
