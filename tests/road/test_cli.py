import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from drivemetrics.cli import main

FRAMES = ["um_road_000000", "umm_road_000000", "uu_road_000000", "uu_road_000093"]


def write_baseline_results(gt_dir, out_dir):
    """The devkit's computeBaseline output: one 376 x 1242 location-potential PNG per frame (larger than the GT)."""
    potential = np.zeros((376, 1242), np.float32)
    for key in FRAMES:
        road = np.asarray(Image.open(gt_dir / f"{key}.png").convert("RGB"))[..., 2] > 0
        potential[: road.shape[0], : road.shape[1]] += road
    prior = ((potential / len(FRAMES)) * 255).astype(np.uint8)
    out_dir.mkdir(parents=True, exist_ok=True)
    for key in FRAMES:
        Image.fromarray(prior).save(out_dir / f"{key}.png")


@pytest.fixture
def baseline_results(fixtures_dir, tmp_path):
    write_baseline_results(fixtures_dir / "kitti_road/training/gt_image_2", tmp_path / "results")
    return tmp_path / "results"


def test_road_eval_needs_crop_for_baseline_maps(fixtures_dir, baseline_results, capsys):
    code = main(["road-eval", "--data", str(fixtures_dir / "kitti_road"), "--results", str(baseline_results)])
    assert code == 2
    assert "is 376 x 1242 but its ground truth is 375 x 1242; pass --crop" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("space", "urban", "per_image"),
    [
        # kitti_road.md section 7: the 4 frames pooled (= urban_road here) and the single-frame categories
        (
            "perspective",
            (0.8634450850048166, 0.9167009977958855, 64),
            {"um_road": (0.9110107479, 0.9336981812, 128), "umm_road": (0.9194780895, 0.9553328377, 1)},
        ),
        (
            "bev",
            (0.8036932039144153, 0.8368548662661625, 64),
            {"um_road": (0.7495937535, None, None), "umm_road": (0.9367359422, None, None)},
        ),
    ],
)
def test_road_eval_conformance_through_cli(fixtures_dir, baseline_results, tmp_path, capsys, space, urban, per_image):
    out = tmp_path / "scores.json"
    args = ["road-eval", "--data", str(fixtures_dir / "kitti_road"), "--results", str(baseline_results)]
    code = main([*args, "--space", space, "--crop", "--json", str(out), "--no-progress", "--compat", "reference"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "um_lane: no result files" in captured.err  # GT present, no result: skipped
    scores = json.loads(out.read_text())
    assert set(scores) == {"um_road", "umm_road", "uu_road", "urban_road"}
    for entry in scores.values():
        assert set(entry) == {
            "MaxF",
            "AvgPrec",
            "PRE_wp",
            "REC_wp",
            "FPR_wp",
            "FNR_wp",
            "A_wp",
            "BestThresh",
            "totalPosNum",
            "totalNegNum",
        }
    max_f, ap, thresh = urban
    assert abs(scores["urban_road"]["MaxF"] - max_f) < 1e-9
    assert abs(scores["urban_road"]["AvgPrec"] - ap) < 1e-9
    assert round(scores["urban_road"]["BestThresh"] * 255) == thresh
    for cat, (cat_f, cat_ap, cat_thresh) in per_image.items():
        assert abs(scores[cat]["MaxF"] - cat_f) < 1e-9, cat
        if cat_ap is not None:
            assert abs(scores[cat]["AvgPrec"] - cat_ap) < 1e-9, cat
            assert round(scores[cat]["BestThresh"] * 255) == cat_thresh, cat
    if space == "perspective":
        assert scores["urban_road"]["totalPosNum"] == 309518
        assert scores["urban_road"]["totalNegNum"] == 1548878
        assert abs(scores["urban_road"]["A_wp"] - 0.9547050000) < 1e-9
    # the printed table is in percent, one row per category
    row = next(line for line in captured.out.splitlines() if line.startswith("urban_road"))
    assert f"{100 * max_f:.2f}" in row


def test_road_eval_errors(tmp_path, capsys):
    (tmp_path / "data").mkdir()
    (tmp_path / "res").mkdir()
    assert main(["road-eval", "--data", str(tmp_path / "data"), "--results", str(tmp_path / "res")]) == 2
    assert "unknown KITTI-ROAD layout" in capsys.readouterr().err
    assert main(["road-eval", "--data", str(tmp_path / "nope"), "--results", str(tmp_path / "res")]) == 2
    assert "data folder not found" in capsys.readouterr().err


def test_road_bev_cli(fixtures_dir, tmp_path, capsys):
    gt_dir = fixtures_dir / "kitti_road/training/gt_image_2"
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "umm_road_000000.png").write_bytes((gt_dir / "umm_road_000000.png").read_bytes())
    args = ["road-bev", "--calib", str(fixtures_dir / "kitti_road/training/calib")]
    code = main([*args, "--input", str(tmp_path / "in"), "--output", str(tmp_path / "out"), "--no-progress"])
    assert code == 0
    assert "wrote 1 BEV image(s)" in capsys.readouterr().out
    bev = np.asarray(Image.open(tmp_path / "out" / "umm_road_000000.png"))
    # kitti_road.md section 7, umm_road_000000 in BEV: black 13025, red 145411, magenta 161564
    assert bev.shape == (800, 400, 3)
    assert int((bev.sum(-1) == 0).sum()) == 13025
    assert int(((bev[..., 0] == 255) & (bev[..., 2] == 0)).sum()) == 145411
    assert int(((bev[..., 0] == 255) & (bev[..., 2] == 255)).sum()) == 161564
    (tmp_path / "no_calib").mkdir()
    code = main(
        [
            "road-bev",
            *("--calib", str(tmp_path / "no_calib"), "--input", str(tmp_path / "in"), "--output", str(tmp_path / "o")),
        ]
    )
    assert code == 2
    assert "no calibration file for 'umm_road_000000'" in capsys.readouterr().err


def test_road_bev_refuses_to_overwrite_its_input(fixtures_dir, tmp_path, capsys):
    calib = str(fixtures_dir / "kitti_road/training/calib")
    (tmp_path / "res").mkdir()
    png = tmp_path / "res" / "umm_road_000000.png"
    png.write_bytes((fixtures_dir / "kitti_road/training/gt_image_2/umm_road_000000.png").read_bytes())
    before = png.read_bytes()
    code = main(["road-bev", "--calib", calib, "--input", str(tmp_path / "res"), "--output", str(tmp_path / "res")])
    assert code == 2
    assert "is the input `--pred`" in capsys.readouterr().err  # the grammar's name of --input
    assert png.read_bytes() == before
    assert sorted(p.name for p in (tmp_path / "res").iterdir()) == ["umm_road_000000.png"]


@pytest.mark.parametrize("link_in", ["output", "input"])
def test_road_bev_refuses_an_output_that_is_an_input_through_a_link(fixtures_dir, tmp_path, capsys, link_in):
    calib = str(fixtures_dir / "kitti_road/training/calib")
    real_dir, link_dir = (
        (tmp_path / "in", tmp_path / "out") if link_in == "output" else (tmp_path / "out", tmp_path / "in")
    )
    real_dir.mkdir()
    link_dir.mkdir()
    png = real_dir / "umm_road_000000.png"
    png.write_bytes((fixtures_dir / "kitti_road/training/gt_image_2/umm_road_000000.png").read_bytes())
    (link_dir / png.name).symlink_to(Path("..") / real_dir.name / png.name)
    before = png.read_bytes()
    code = main(["road-bev", "--calib", calib, "--input", str(tmp_path / "in"), "--output", str(tmp_path / "out")])
    assert code == 2
    assert "is the input file" in capsys.readouterr().err
    assert png.read_bytes() == before
    assert (link_dir / png.name).is_symlink()
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == [png.name] * 2


def test_bev_output_checked_against_the_inputs_just_before_writing(fixtures_dir, tmp_path):
    from drivemetrics._internal.files import InputFiles
    from drivemetrics.road.evaluate import _warp_file_to_bev

    calib = fixtures_dir / "kitti_road/training/calib"
    png = tmp_path / "umm_road_000000.png"
    png.write_bytes((fixtures_dir / "kitti_road/training/gt_image_2/umm_road_000000.png").read_bytes())
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / png.name).symlink_to(png)  # appeared after the up-front check
    with pytest.raises(ValueError, match="is the input file"):
        _warp_file_to_bev(png, calib, tmp_path / "out", None, InputFiles([png]))
    assert (tmp_path / "out" / png.name).is_symlink()


def test_road_eval_truncated_result_png_is_one_line_naming_the_file(fixtures_dir, tmp_path, capsys):
    data = fixtures_dir / "kitti_road/training"
    (tmp_path / "res").mkdir()
    for gt in sorted((data / "gt_image_2").glob("*.png")):
        (tmp_path / "res" / gt.name).write_bytes(gt.read_bytes())
    broken = sorted((tmp_path / "res").iterdir())[0]
    broken.write_bytes(broken.read_bytes()[:300])
    code = main(["road-eval", "--data", str(data), "--results", str(tmp_path / "res"), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2
    assert f"{broken.name}: cannot decode the result PNG" in err
    assert "Traceback" not in err


def test_road_eval_empty_road_gives_null_in_json(tmp_path):
    """Run as a process: the command's one-line warning format (``one_line_warnings``) is what reaches a terminal;
    inside pytest the warning is recorded by pytest's own ``catch_warnings`` instead."""
    import os
    import subprocess
    import sys

    from tests.conftest import REPO_ROOT

    (tmp_path / "data" / "gt_image_2").mkdir(parents=True)
    (tmp_path / "res").mkdir()
    red = np.zeros((4, 5, 3), np.uint8)
    red[..., 0] = 255  # valid, no road anywhere
    Image.fromarray(red).save(tmp_path / "data" / "gt_image_2" / "uu_road_000001.png")
    Image.fromarray(np.full((4, 5), 200, np.uint8)).save(tmp_path / "res" / "uu_road_000001.png")
    out = tmp_path / "s.json"
    args = ["road-eval", "--data", str(tmp_path / "data"), "--results", str(tmp_path / "res"), "--json", str(out)]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    run = subprocess.run(
        [sys.executable, "-m", "drivemetrics", *args, "--no-progress"], capture_output=True, text=True, env=env
    )
    assert run.returncode == 0, run.stderr[-600:]
    err = run.stderr  # the warning as the command prints it: one line, no source path
    assert "drivemetrics road-eval: warning: road pixel metrics: no valid ground-truth road pixel" in err
    assert "evaluate.py" not in err, err
    assert "scores_from_counts(" not in err, err
    scores = json.loads(out.read_text())
    assert scores["uu_road"]["MaxF"] is None
    assert scores["uu_road"]["totalPosNum"] == 0
    assert scores["uu_road"]["totalNegNum"] == 20


def _write_lane_result(gt_dir, out_dir, shift_px=0):
    """um_lane_000000 result: 255 on the ground-truth ego-lane (optionally shifted sideways), 0 elsewhere."""
    lane = np.asarray(Image.open(gt_dir / "um_lane_000000.png").convert("RGB"))[..., 2] > 0
    lane = np.roll(lane, shift_px, axis=1)
    out_dir.mkdir(parents=True, exist_ok=True)
    Image.fromarray((lane * 255).astype(np.uint8)).save(out_dir / "um_lane_000000.png")


def test_road_eval_corridor_table(fixtures_dir, tmp_path, capsys):
    gt_dir = fixtures_dir / "kitti_road/training/gt_image_2"
    data = str(fixtures_dir / "kitti_road")
    tables = {}
    for shift in (0, 60):
        res, out = tmp_path / f"res{shift}", tmp_path / f"scores{shift}.json"
        _write_lane_result(gt_dir, res, shift)
        args = ["road-eval", "--data", data, "--results", str(res), "--space", "bev", "--corridor"]
        code = main([*args, "--categories", "um_lane", "--json", str(out), "--no-progress"])
        captured = capsys.readouterr()
        assert code == 0, captured.err
        assert "Driving corridor" in captured.out
        assert "Precision_lat" in captured.out
        tables[shift] = json.loads(out.read_text())["um_lane_corridor"]
    # the ground truth itself: a corridor inside the ego-lane, perfect lateral precision at every distance
    for d in (20, 30, 40):
        assert tables[0][f"precision_lat_{d}m"] == pytest.approx(1.0)
        assert tables[0][f"f1_long_{d}m"] == pytest.approx(1.0)
    # a result shifted sideways in the image (60 px, about a lane width at mid range) is worse at every distance
    for d in (20, 30):
        assert tables[60][f"precision_lat_{d}m"] < tables[0][f"precision_lat_{d}m"]


def test_road_eval_corridor_needs_bev(fixtures_dir, tmp_path, capsys):
    args = ["road-eval", "--data", str(fixtures_dir / "kitti_road"), "--results", str(tmp_path), "--corridor"]
    assert main(args) == 2
    assert "`--corridor` needs `--space bev`" in capsys.readouterr().err
    assert main([*args, "--space", "bev", "--categories", "um_road"]) == 2
    assert "include um_lane" in capsys.readouterr().err


def test_cli_choices_equal_the_library_constants():
    # the CLI module hard-codes them to stay light at import
    from drivemetrics.road import cli, evaluate, io

    assert cli.ROAD_CATEGORIES == io.ROAD_CATEGORIES
    assert cli.SPACES == evaluate.SPACES


def test_road_eval_rejects_zero_workers(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["road-eval", "--data", "d", "--results", "r", "--workers", "0"])
    assert exit_info.value.code == 2
    assert "--workers: must be >= 1, got 0" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # the hidden old spelling: the error names the grammar's option only
        main(["road-eval", "--gt", "d", "--pred", "r", "--threads", "0"])
    assert "argument --workers: must be >= 1, got 0" in capsys.readouterr().err


def test_road_eval_json_never_over_a_file_of_the_input_folders(fixtures_dir, baseline_results, capsys):
    data = str(fixtures_dir / "kitti_road/training")
    frame = baseline_results / "um_road_000000.png"
    before = frame.read_bytes()
    base = ["road-eval", "--data", data, "--results", str(baseline_results), "--crop", "--no-progress"]
    assert main([*base, "--json", str(frame)]) == 2
    err = capsys.readouterr().err
    assert "--json" in err
    assert "inside the input folder" in err
    assert frame.read_bytes() == before
    # issue 51: no output inside an input folder, whatever its name (the next run may read it as an input)
    assert main([*base, "--json", str(baseline_results / "scores.json")]) == 2
    assert "inside the input folder `--pred`" in capsys.readouterr().err  # the grammar's name of --results
    assert not (baseline_results / "scores.json").exists()


@pytest.mark.parametrize("space", ["perspective", "bev"])
def test_road_eval_on_the_cpu_imports_no_torch_and_equals_the_tensor_path(
    fixtures_dir, baseline_results, tmp_path, space
):
    """In a fresh interpreter: ``road-eval`` (two forked workers) leaves torch and torchmetrics out of
    ``sys.modules``; ``--device cpu`` (the tensor path: tensor warp, the same kernels on tensors) writes the same
    numbers, bit for bit."""
    import os
    import subprocess
    import sys

    from tests.conftest import REPO_ROOT

    code = (
        "import sys; from drivemetrics.cli import main; rc = main(sys.argv[1:]); "
        "print('loaded', 'torch' in sys.modules, 'torchmetrics' in sys.modules); sys.exit(rc)"
    )
    base = ["road-eval", "--gt", str(fixtures_dir / "kitti_road"), "--pred", str(baseline_results), "--crop"]
    base += ["--space", space, "--no-progress", "--compat", "reference"]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    scores, loaded = {}, {}
    for name, extra in (("numpy", ["--workers", "2"]), ("tensors", ["--workers", "1", "--device", "cpu"])):
        out = tmp_path / f"{name}.json"
        argv = [sys.executable, "-c", code, *base, "--json", str(out), *extra]
        run = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tmp_path)
        assert run.returncode == 0, run.stderr[-600:]
        scores[name] = json.loads(out.read_text())
        loaded[name] = run.stdout.strip().splitlines()[-1]
    assert loaded == {"numpy": "loaded False False", "tensors": "loaded True False"}
    assert scores["numpy"] == scores["tensors"]
    assert set(scores["numpy"]) == {"um_road", "umm_road", "uu_road", "urban_road"}
