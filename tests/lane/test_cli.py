from __future__ import annotations

import json

from drivemetrics.cli import main


def _write(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def test_tusimple_eval_prints_and_writes(tmp_path, capsys):
    ys = [200, 210, 220, 230]
    gt = tmp_path / "gt.json"
    pred = tmp_path / "pred.json"
    _write(
        gt,
        [
            {"raw_file": "a", "lanes": [[100, 110, 120, 130]], "h_samples": ys},
            {"raw_file": "b", "lanes": [[500, 500, 500, 500]], "h_samples": ys},
        ],
    )
    # image a: perfect; image b: the only prediction is 50 px off -> (0, 1, 1)
    _write(
        pred,
        [
            {"raw_file": "b", "lanes": [[550, 550, 550, 550]], "run_time": 10},
            {"raw_file": "a", "lanes": [[101, 111, 121, 131]], "run_time": 10},
        ],
    )
    out = tmp_path / "res" / "out.json"
    assert main(["tusimple-eval", "--pred", str(pred), "--gt", str(gt), "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "Accuracy 0.500000" in printed
    assert json.loads(out.read_text()) == {"Accuracy": 0.5, "FP": 0.5, "FN": 0.5, "F1": 0.5}


def test_tusimple_eval_malformed_line_exit_code(tmp_path, capsys):
    gt = tmp_path / "gt.json"
    pred = tmp_path / "pred.json"
    _write(gt, [{"raw_file": "a", "lanes": [[1, 2]], "h_samples": [1, 2]}])
    pred.write_text('{"raw_file": "a", "lanes": [[1, 2]], "run_time": 1}\n{"raw_file": \n')
    assert main(["tusimple-eval", "--pred", str(pred), "--gt", str(gt)]) == 2
    assert "pred.json:2" in capsys.readouterr().err
    assert main(["tusimple-eval", "--pred", str(tmp_path / "missing.json"), "--gt", str(gt)]) == 2


def test_tusimple_eval_per_image_and_ego_only(tmp_path):
    ys = [200, 210]
    gt = tmp_path / "gt.json"
    pred = tmp_path / "pred.json"
    _write(gt, [{"raw_file": "a", "lanes": [[100, 100], [500, 500], [800, 800]], "h_samples": ys}])
    _write(pred, [{"raw_file": "a", "lanes": [[500, 500], [800, 800]], "run_time": 5}])
    out = tmp_path / "out.json"
    argv = ["tusimple-eval", "--pred", str(pred), "--gt", str(gt), "--json", str(out), "--per-image"]
    assert main(argv) == 0
    payload = json.loads(out.read_text())
    assert payload["per_image"] == [{"raw_file": "a", "accuracy": 2 / 3, "fp": 0.0, "fn": 1 / 3}]
    assert main([*argv, "--ego-only"]) == 0
    assert json.loads(out.read_text())["Accuracy"] == 1.0  # the keys of the run without --per-image


def test_tusimple_eval_refuses_to_write_over_its_prediction_file(tmp_path, capsys):
    ys = [200, 210]
    gt, pred = tmp_path / "label.json", tmp_path / "pred.json"
    _write(gt, [{"raw_file": "a", "lanes": [[100, 110]], "h_samples": ys}])
    _write(pred, [{"raw_file": "a", "lanes": [[100, 110]], "run_time": 10}])
    before = pred.read_bytes()
    assert main(["tusimple-eval", "--gt", str(gt), "--pred", str(pred), "--json", str(pred)]) == 2
    assert "`--json`" in capsys.readouterr().err
    assert pred.read_bytes() == before
    assert main(["tusimple-eval", "--gt", str(gt), "--pred", str(pred), "--json", str(gt)]) == 2
