"""``drivemetrics kitti-object-eval``: stats files byte-identical to the official C++, JSON, lists and errors."""

from __future__ import annotations

import json

import pytest
import torch

from drivemetrics.cli import main


@pytest.fixture(scope="module")
def kitti_dir(fixtures_dir):
    path = fixtures_dir / "kitti_object"
    if not path.is_dir():
        pytest.skip("kitti_object fixtures absent")
    return path


def test_stats_files_equal_official_cpp_bytes(kitti_dir, tmp_path, capsys):
    frames = tmp_path / "list.txt"
    frames.write_text("".join(f"{i:06d}\n" for i in range(100)))
    stats, out_json = tmp_path / "stats", tmp_path / "out.json"
    argv = ["kitti-object-eval", "--gt", str(kitti_dir / "label_2"), "--det", str(kitti_dir / "det_100")]
    argv += ["--list", str(frames), "--write-stats", str(stats), "--json", str(out_json), "--workers", "2"]
    assert main(argv) == 0
    expected = sorted(p.name for p in (kitti_dir / "expected_official_100").iterdir())
    assert sorted(p.name for p in stats.iterdir()) == expected
    for name in expected:
        assert (stats / name).read_bytes() == (kitti_dir / "expected_official_100" / name).read_bytes(), name
    result = json.loads(out_json.read_text())
    assert list(result) == ["car"]
    assert list(result["car"]) == ["2d", "aos", "bev", "3d"]
    moderate = result["car"]["3d"]["moderate"]
    assert len(moderate["curve"]) == 41
    # the JSON is in fractions (issue 50: one unit in every command's JSON); the official C++ prints 31.7419 (%)
    assert 0 <= moderate["AP_R40"] <= 1
    assert abs(moderate["AP_R40"] - 0.317419) < 5e-7
    assert abs(moderate["AP_R40"] - sum(moderate["curve"][1:]) / 40) < 1e-12  # the curve (fractions) it averages
    assert abs(moderate["AP_R11"] - sum(moderate["curve"][0::4]) / 11) < 1e-12
    assert abs(result["car"]["2d"]["moderate"]["AP_R40"] - 0.387411) < 5e-7
    for per_diff in result["car"].values():
        for entry in per_diff.values():
            assert 0 <= entry["AP_R11"] <= 1
            assert 0 <= entry["AP_R40"] <= 1
    printed = capsys.readouterr().out
    assert "100 frames" in printed
    assert "38.7411" in printed  # Car 2D moderate R40: the table keeps the devkit's %, and says so
    assert "AP in %" in printed


def test_missing_result_files_count_as_empty_with_a_warning(kitti_dir, tmp_path, capsys):
    argv = ["kitti-object-eval", "--gt", str(kitti_dir / "label_2"), "--det", str(kitti_dir / "det_100")]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "200 frame(s) have no file" in captured.err
    assert "300 frames" in captured.out


def test_bad_inputs_exit_2(kitti_dir, tmp_path, capsys):
    gt, det = str(kitti_dir / "label_2"), str(kitti_dir / "det_100")
    assert main(["kitti-object-eval", "--gt", gt, "--det", det, "--write-stats", det]) == 2
    err = capsys.readouterr().err  # the one output rule (issue 51), named after the documented spelling
    assert "`--out`" in err, err
    assert "is the input `--pred`" in err, err
    assert main(["kitti-object-eval", "--gt", gt, "--det", det, "--out", gt]) == 2
    assert "is the input `--gt`" in capsys.readouterr().err
    assert main(["kitti-object-eval", "--gt", str(tmp_path / "none"), "--det", det]) == 2
    assert "--gt folder not found" in capsys.readouterr().err
    bad = tmp_path / "det"
    bad.mkdir()
    (bad / "000000.txt").write_text("Car -1 -1 0.1 1 2 3 4 1 1 1 0 0 5 0\n")  # no score
    assert main(["kitti-object-eval", "--gt", gt, "--det", str(bad)]) == 2
    assert "000000.txt:1: expected 16 columns" in capsys.readouterr().err


def test_json_never_over_a_frame_file(kitti_dir, tmp_path, capsys):
    det = tmp_path / "det"
    det.mkdir()
    source = kitti_dir / "det_100" / "000000.txt"
    (det / "000000.txt").write_bytes(source.read_bytes())
    args = ["kitti-object-eval", "--gt", str(kitti_dir / "label_2"), "--det", str(det)]
    assert main([*args, "--json", str(det / "000000.txt")]) == 2
    assert "inside the input folder" in capsys.readouterr().err
    assert (det / "000000.txt").read_bytes() == source.read_bytes()


def test_device_gives_the_numpy_numbers(kitti_dir, tmp_path, capsys):
    """``--device cpu`` runs the overlaps and the matching in torch: the same JSON as the numpy default."""
    frames = tmp_path / "frames.txt"
    frames.write_text("".join(f"{i:06d}\n" for i in range(20)))
    outputs = []
    for device in ([], ["--device", "cpu"]):
        out = tmp_path / f"out{len(outputs)}.json"
        argv = ["kitti-object-eval", "--gt", str(kitti_dir / "label_2"), "--pred", str(kitti_dir / "det_100")]
        assert main([*argv, "--list", str(frames), "--json", str(out), "--no-progress", *device]) == 0
        outputs.append(json.loads(out.read_text()))
    capsys.readouterr()
    assert outputs[0] == outputs[1]
    assert outputs[0]  # some class was evaluated
    if not torch.cuda.is_available():
        assert main([*argv, "--device", "cuda"]) == 2
        assert "--device cuda" in capsys.readouterr().err
