"""Readers (devkit pickles through the restricted unpickler, fixture JSON) and the openlanev2-eval command."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import numpy as np
import pytest

from drivemetrics._internal.safe_pickle import UnsafePickleError
from drivemetrics.cli import main
from drivemetrics.lanetopology.evaluate import evaluate_openlanev2_files
from drivemetrics.lanetopology.io import read_ground_truth, read_predictions


def _fixture(fixtures_dir: Path, track: str) -> Path:
    path = fixtures_dir / "openlanev2" / f"{track}_cases.json"
    if not path.is_file():
        pytest.skip("openlanev2 fixtures absent")
    return path


def _as_arrays(frame: dict, pred: bool) -> dict:
    """A fixture frame in the devkit's in-memory form: numpy arrays for points and matrices."""
    out = {}
    for key, value in frame.items():
        if key.startswith("topology"):
            n_rows = len(frame["lane_centerline" if "lane_centerline" in frame else "lane_segment"])
            arr = np.asarray(value, dtype=np.float64 if pred else np.int8)
            out[key] = arr.reshape(n_rows, -1) if arr.size else arr.reshape(n_rows, 0)
        else:
            out[key] = [
                {k: (np.asarray(v, dtype=np.float32) if isinstance(v, list) else v) for k, v in item.items()}
                for item in value
            ]
    return out


def test_devkit_pickles_give_the_fixture_values(fixtures_dir: Path, tmp_path: Path) -> None:
    cases = _fixture(fixtures_dir, "centerline")
    frames = json.loads(cases.read_text())["frames"]
    gt = {tuple(f["token"]): {"annotation": _as_arrays(f["gt"], False), "sensor": {}} for f in frames}
    submission = {
        "method": "x",
        "results": {tuple(f["token"]): {"predictions": _as_arrays(f["pred"], True)} for f in frames},
    }
    (tmp_path / "gt.pkl").write_bytes(pickle.dumps(gt))
    (tmp_path / "pred.pkl").write_bytes(pickle.dumps(submission))
    target = read_ground_truth(tmp_path / "gt.pkl")
    assert list(target) == [tuple(f["token"]) for f in frames]
    track, scores = evaluate_openlanev2_files(tmp_path / "gt.pkl", tmp_path / "pred.pkl", compat="reference")
    expected = json.loads((cases.parent / "expected.json").read_text())["centerline"]["metrics"]
    assert track == "centerline"
    for key, value in expected.items():
        assert scores[key.lower()] == pytest.approx(value, abs=1e-6), key
    # a missing frame is named
    del submission["results"][tuple(frames[3]["token"])]
    (tmp_path / "pred2.pkl").write_bytes(pickle.dumps(submission))
    with pytest.raises(ValueError, match="predictions missing for 1 of the"):
        evaluate_openlanev2_files(tmp_path / "gt.pkl", tmp_path / "pred2.pkl")


class _Evil:
    def __reduce__(self):
        return (print, ("pwned",))


def test_pickle_with_code_is_refused(tmp_path: Path) -> None:
    (tmp_path / "bad.pkl").write_bytes(pickle.dumps({"method": "x", "results": _Evil()}))
    with pytest.raises(UnsafePickleError):
        read_predictions(tmp_path / "bad.pkl")


@pytest.mark.parametrize("track", ["centerline", "lanesegment"])
def test_cli_json(fixtures_dir: Path, tmp_path: Path, track: str, capsys: pytest.CaptureFixture[str]) -> None:
    cases = _fixture(fixtures_dir, track)
    out = tmp_path / "scores.json"
    code = main(["openlanev2-eval", "--gt", str(cases), "--pred", str(cases), "--compat", "reference",
                 "--json", str(out), "--workers", "1"])  # fmt: skip
    assert code == 0
    printed = capsys.readouterr().out
    expected = json.loads((cases.parent / "expected.json").read_text())[track]
    written = json.loads(out.read_text())
    for key, value in expected["metrics"].items():
        assert written[key] == pytest.approx(value, abs=1e-6), key
        assert key in printed
    lane = "DET_l" if track == "centerline" else "DET_ls"
    assert written["per_threshold"][f"{lane}@1.0"] == pytest.approx(
        expected["per_threshold"][f"{lane}_per_threshold"]["1.0"], abs=1e-6
    )


def test_cli_bad_input(fixtures_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = _fixture(fixtures_dir, "centerline")
    data = json.loads(cases.read_text())
    data["frames"][2]["pred"]["lane_centerline"][0]["confidence"] = 2.0
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    assert main(["openlanev2-eval", "--gt", str(cases), "--pred", str(bad), "--workers", "1"]) == 2
    err = capsys.readouterr().err
    assert "frame val/10000/315970000000200000: lane_centerline[0].confidence: 2.0 is outside [0, 1]" in err
    assert main(["openlanev2-eval", "--gt", str(cases), "--pred", str(cases), "--json", str(cases)]) == 2
