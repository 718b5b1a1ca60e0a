from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from drivemetrics.lane.culane import (
    CULaneMetrics,
    culane_counts,
    culane_f1,
    lane_iou_matrix,
    lanes_from_rows,
)
from drivemetrics.lane.raster import spline_lanes
from tests.lane._reference import brute_mask


def test_vertical_lanes_iou_by_hand():
    # two vertical lanes through the whole image, 15 px apart, width 30: each covers 31 columns, overlap 16
    ys = torch.tensor([-100.0, 700.0])
    pred = torch.stack([torch.full((2,), 500.0), ys], dim=-1)[None, None]
    gt = torch.stack([torch.full((2,), 515.0), ys], dim=-1)[None, None]
    iou = lane_iou_matrix(pred, gt)
    assert float(iou[0, 0, 0]) == pytest.approx(16 / 46)
    assert float(lane_iou_matrix(gt, gt)[0, 0, 0]) == 1.0


def test_counts_and_f1(device):
    ys = torch.arange(300.0, 590.0, 10.0)
    gt_x = torch.stack([400 - 0.8 * (ys - 300), 800 + 0.8 * (ys - 300), 1200 + 2.0 * (ys - 300)])
    pred_x = torch.stack([gt_x[0] + 5, gt_x[1] + 40, gt_x[0] + 200])
    gt = lanes_from_rows(gt_x[None], ys).to(device)
    pred = lanes_from_rows(pred_x[None], ys).to(device)
    counts = culane_counts(pred, gt)
    # lane 0: 5 px off (IoU ~0.7) -> TP; lane 1: 40 px off along a 0.8 slope -> no overlap; third pred far away
    assert (int(counts["tp"][0]), int(counts["fp"][0]), int(counts["fn"][0])) == (1, 2, 2)
    out = culane_f1(pred, gt)
    assert float(out["precision"]) == pytest.approx(1 / 3)
    assert float(out["recall"]) == pytest.approx(1 / 3)
    assert float(out["f1"]) == pytest.approx(1 / 3)


def test_hungarian_against_reference():
    from scipy.optimize import linear_sum_assignment

    rng = np.random.default_rng(1)
    ys = torch.arange(100.0, 200.0, 10.0)
    base = torch.tensor(rng.uniform(50, 250, size=(1, 4, 1))) + torch.zeros(1, 4, 10, dtype=torch.float64)
    pred_x = base[:, [0, 1, 2]] + torch.tensor(rng.normal(0, 8, size=(1, 3, 10)))
    gt = lanes_from_rows(base, ys)
    pred = lanes_from_rows(pred_x, ys)
    iou = lane_iou_matrix(pred, gt, height=200, width=300, line_width=30)[0].numpy()
    r, c = linear_sum_assignment(-iou)
    expected_tp = int((iou[r, c] > 0.5).sum())
    counts = culane_counts(pred, gt, height=200, width=300)
    assert int(counts["tp"][0]) == expected_tp
    assert int(counts["fp"][0]) == 3 - expected_tp
    assert int(counts["fn"][0]) == 4 - expected_tp


def test_metric_accumulates(device):
    ys = torch.arange(300.0, 590.0, 10.0)
    lane = lanes_from_rows((600 + 0 * ys)[None, None], ys).to(device)
    far = lanes_from_rows((1000 + 0 * ys)[None, None], ys).to(device)
    metric = CULaneMetrics().to(device)
    metric.update(lane, lane)  # TP
    metric.update(far, lane)  # FP + FN
    out = metric.compute()
    assert (int(metric.tp), int(metric.fp), int(metric.fn)) == (1, 1, 1)
    assert float(out["f1"]) == pytest.approx(0.5)


def test_empty_and_padding():
    ys = torch.arange(300.0, 590.0, 10.0)
    lane = lanes_from_rows((600 + 0 * ys)[None, None], ys)
    nothing = torch.full((1, 1, 29, 2), float("nan"))
    counts = culane_counts(nothing, lane)
    assert (int(counts["tp"][0]), int(counts["fp"][0]), int(counts["fn"][0])) == (0, 0, 1)
    assert float(culane_f1(nothing, nothing)["f1"]) == 0.0


def test_bad_inputs():
    with pytest.raises(ValueError, match="iou_threshold"):
        CULaneMetrics(iou_threshold=1.5)


def _write_lines(path, lanes):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(" ".join(f"{v:g}" for xy in lane for v in xy) for lane in lanes) + "\n")


def test_culane_files_and_cli(tmp_path, capsys):
    from drivemetrics.cli import main
    from drivemetrics.lane.evaluate import evaluate_culane_dirs
    from drivemetrics.lane.io import read_culane_lines

    vertical = [(600.0, 580.0), (600.0, 300.0)]
    other = [(1000.0, 580.0), (1000.0, 300.0)]
    _write_lines(tmp_path / "gt" / "d" / "a.lines.txt", [vertical, other])
    _write_lines(tmp_path / "gt" / "d" / "b.lines.txt", [vertical])
    _write_lines(tmp_path / "pred" / "d" / "a.lines.txt", [[(x + 3, y) for x, y in vertical]])  # TP, one FN
    # b has no prediction file: FN
    lanes = read_culane_lines(tmp_path / "gt" / "d" / "a.lines.txt")
    assert lanes.shape == (2, 2, 2)
    result = evaluate_culane_dirs(tmp_path / "pred", tmp_path / "gt")
    assert (result["tp"], result["fp"], result["fn"], result["images"]) == (1, 0, 2, 2)
    assert result["precision"] == 1.0
    assert result["recall"] == pytest.approx(1 / 3)
    listing = tmp_path / "list.txt"
    listing.write_text("/d/a.jpg\n")
    out = tmp_path / "out.json"
    argv = ["culane-eval", "--pred", str(tmp_path / "pred"), "--gt", str(tmp_path / "gt"), "--list", str(listing)]
    assert main([*argv, "--json", str(out)]) == 0
    assert "f1" in capsys.readouterr().out
    assert '"fn": 1' in out.read_text()
    # --json over a prediction file (or named like one inside an input folder) is refused, the file intact
    target = tmp_path / "pred" / "d" / "a.lines.txt"
    before = target.read_bytes()
    assert main([*argv, "--json", str(target)]) == 2
    assert "inside the input folder" in capsys.readouterr().err
    assert target.read_bytes() == before


def test_culane_reader_errors(tmp_path):
    from drivemetrics.lane.io import read_culane_lines

    bad = tmp_path / "x.lines.txt"
    bad.write_text("1 2 3 4\n\n5 6 7\n")
    with pytest.raises(ValueError, match=r"x\.lines\.txt:3"):
        read_culane_lines(bad)
    bad.write_text("1 2 a 4\n")
    with pytest.raises(ValueError, match=r":1: expected numbers"):
        read_culane_lines(bad)
    with pytest.raises(FileNotFoundError):
        read_culane_lines(tmp_path / "none.lines.txt")


# ---------------------------------------------------------------------------------------------------------------
# spline interpolation, per-row drawing, thresholds, files (issues 15 / 19)


def _brute_iou(curves_a, curves_b, height, width, radius):
    masks = [[brute_mask(c, height, width, radius) for c in curves] for curves in (curves_a, curves_b)]
    out = np.zeros((len(curves_a), len(curves_b)))
    for i, a in enumerate(masks[0]):
        for j, b in enumerate(masks[1]):
            union = (a | b).sum()
            out[i, j] = (a & b).sum() / union if union else 0.0
    return out


def test_iou_per_row_equals_pixel_masks_for_lanes_leaving_the_image_and_turning_back():
    height, width = 120, 200
    nan = float("nan")
    preds = torch.tensor(
        [
            [[-60.0, 130.0], [20.0, 80.0], [90.0, 40.0], [150.0, -30.0]],  # leaves the image at both ends
            [[40.0, 110.0], [60.0, 60.0], [110.0, 40.0], [150.0, 70.0]],  # turns back down: two cuts per row
            [[170.0, 118.0], [260.0, 60.0], [nan, nan], [nan, nan]],  # 2 points, mostly right of the image
        ],
        dtype=torch.float64,
    )[None]
    target = torch.tensor(
        [
            [[-50.0, 125.0], [25.0, 82.0], [95.0, 38.0], [140.0, -20.0]],
            [[45.0, 112.0], [62.0, 58.0], [112.0, 45.0], [145.0, 75.0]],
        ],
        dtype=torch.float64,
    )[None]
    iou = lane_iou_matrix(preds, target, height=height, width=width, line_width=20.0, spacing=3.0)[0].numpy()
    pred_curve, _ = spline_lanes(preds, spacing=3.0)
    gt_curve, _ = spline_lanes(target, spacing=3.0)
    expected = _brute_iou(pred_curve[0].numpy(), gt_curve[0].numpy(), height, width, 10.5)
    np.testing.assert_allclose(iou, expected, atol=2e-3)  # float32 rows: a boundary pixel at most
    assert expected[0, 0] > 0.5
    assert expected[1, 1] > 0.5
    assert expected[2].max() == 0


def _vertical_lane(x):
    return [(float(x), 600.0), (float(x), 300.0), (float(x), -10.0)]


def _write_frames(root, frames):
    """frames: {name: (gt lanes, pred lanes or None for no file)}; lanes as lists of (x, y) or raw strings."""
    for name, (gt, pred) in frames.items():
        for kind, lanes in (("gt", gt), ("pred", pred)):
            if lanes is None:
                continue
            path = root / kind / f"{name}.lines.txt"
            path.parent.mkdir(parents=True, exist_ok=True)
            lines = [lane if isinstance(lane, str) else " ".join(f"{v:g}" for xy in lane for v in xy) for lane in lanes]
            path.write_text("".join(line + "\n" for line in lines))


@pytest.mark.parametrize("compat", ["default", "reference"])
def test_threshold_sweep_f1_at_50_75_and_mf1(tmp_path, compat):
    if compat:
        pytest.importorskip("cv2")
    from drivemetrics.lane.evaluate import evaluate_culane_dirs

    # vertical lanes 31 px wide through the whole image, shifted by s px: IoU = (31 - s) / (31 + s) in both modes
    shifts = [0, 4, 8, 12]  # IoU 1, 0.771, 0.590, 0.442
    gt = [_vertical_lane(200 + 300 * k) for k in range(4)]
    pred = [_vertical_lane(200 + 300 * k + s) for k, s in enumerate(shifts)]
    _write_frames(tmp_path, {"a": (gt, pred)})
    thresholds = [round(0.5 + 0.05 * k, 2) for k in range(10)]
    result = evaluate_culane_dirs(tmp_path / "pred", tmp_path / "gt", iou_threshold=thresholds, compat=compat)
    tps = [result["by_threshold"][f"{t:.2f}"]["tp"] for t in thresholds]
    assert tps == [3, 3, 2, 2, 2, 2, 1, 1, 1, 1]
    assert result["tp"] == 3
    assert result["f1"] == pytest.approx(0.75)
    assert result["by_threshold"]["0.75"]["f1"] == pytest.approx(0.5)
    assert result["mean_f1"] == pytest.approx(18 / 40)  # the papers' mF1 (the CLI's name for IoU 0.50:0.05:0.95)
    assert "mF1" not in result
    two = evaluate_culane_dirs(tmp_path / "pred", tmp_path / "gt", iou_threshold=[0.5, 0.75], compat=compat)
    assert two["mean_f1"] == pytest.approx((0.75 + 0.5) / 2)


def test_one_point_blank_and_empty_files(tmp_path):
    from drivemetrics.lane.evaluate import evaluate_culane_dirs

    lane, other = _vertical_lane(400), _vertical_lane(1000)
    frames = {
        "one_point": ([lane], [lane, [(700.0, 300.0)]]),  # a 1-point predicted line
        "blank_line": ([lane, other], [lane, "", other]),  # a blank line between two lanes
        "empty_pred": ([lane, other], []),
        "empty_gt": ([], [lane]),
        "both_empty": ([], []),
        "missing_pred": ([lane], None),  # no prediction file: no lanes
    }
    _write_frames(tmp_path, frames)
    with pytest.warns(UserWarning, match="2 predicted and 0 GT lane"):
        default = evaluate_culane_dirs(tmp_path / "pred", tmp_path / "gt", per_image=True)
    expected_default = {
        "one_point": (1, 0, 0),
        "blank_line": (2, 0, 0),
        "empty_pred": (0, 0, 2),
        "empty_gt": (0, 1, 0),
        "both_empty": (0, 0, 0),
        "missing_pred": (0, 0, 1),
    }
    assert {k: (v["tp"], v["fp"], v["fn"]) for k, v in default["per_image"].items()} == expected_default
    assert default["dropped_lanes"] == {"pred": 2, "gt": 0}
    pytest.importorskip("cv2")
    compat = evaluate_culane_dirs(tmp_path / "pred", tmp_path / "gt", per_image=True, compat="reference")
    expected_compat = {**expected_default, "one_point": (1, 1, 0), "blank_line": (2, 1, 0)}
    assert {k: (v["tp"], v["fp"], v["fn"]) for k, v in compat["per_image"].items()} == expected_compat


def test_category_table_cli(tmp_path, capsys):
    from drivemetrics.cli import main

    lane, other = _vertical_lane(400), _vertical_lane(1000)
    frames = {
        "d/n1": ([lane, other], [lane, other]),  # normal: 2 TP
        "d/n2": ([lane], [_vertical_lane(460)]),  # normal: FP + FN
        "d/c1": ([lane], [lane]),  # curve: TP
        "d/x1": ([], [lane, other]),  # cross: no GT lanes, 2 FP
    }
    _write_frames(tmp_path, frames)
    split = tmp_path / "test_split"
    split.mkdir()
    (split / "test0_normal.txt").write_text("/d/n1.jpg\n/d/n2.jpg\n")
    (split / "test6_curve.txt").write_text("/d/c1.jpg\n")
    (split / "test7_cross.txt").write_text("/d/x1.jpg\n")
    out = tmp_path / "table.json"
    argv = ["culane-eval", "--pred", str(tmp_path / "pred"), "--gt", str(tmp_path / "gt"), "--list", str(split)]
    assert main([*argv, "--iou", "0.5", "0.75", "--per-image", "--json", str(out)]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].split()[-4:] == ["F1@50", "F1@75", "mean", "F1"]  # not mF1: that is IoU 0.50:0.05:0.95
    rows = {line.split()[0]: line.split()[1:] for line in printed[1:-1]}
    assert rows["normal"] == ["2", "2", "1", "1", "66.67", "66.67", "66.67"]
    assert rows["curve"] == ["1", "1", "0", "0", "100.00", "100.00", "100.00"]
    assert rows["cross"] == ["1", "-", "2", "-", "-", "-", "-"]
    assert rows["total"][:4] == ["4", "3", "3", "1"]
    result = json.loads(out.read_text())
    assert result["categories"]["cross"]["by_threshold"]["0.50"]["fp"] == 2
    assert result["categories"]["normal"]["images"] == 2
    assert result["categories"]["normal"]["mean_f1"] == pytest.approx(2 / 3)
    assert "mF1" not in result
    assert "mF1" not in result["categories"]["normal"]
    assert set(result["per_image"]) == {"/d/n1", "/d/n2", "/d/c1", "/d/x1"}  # as in the lists, no extension
    assert main([*argv, "--iou-range", "--json", str(out)]) == 0
    assert capsys.readouterr().out.splitlines()[0].split()[-3:] == ["F1@50", "F1@75", "mF1"]
    assert json.loads(out.read_text())["categories"]["curve"]["mF1"] == pytest.approx(1.0)
    assert result["tp"] == 3
    assert result["images"] == 4


def test_culane_f1_metric_compat_counts_zero_point_lanes():
    pytest.importorskip("cv2")
    lane = torch.tensor([[400.0, 600.0], [400.0, 300.0], [400.0, -10.0]], dtype=torch.float64)
    preds = torch.full((1, 2, 3, 2), float("nan"), dtype=torch.float64)
    preds[0, 0] = lane
    target = lane[None, None]
    preds_mask = torch.tensor([[True, True]])  # the second slot is a 0-point line
    metric = CULaneMetrics(compat="reference")
    metric.update(preds, target, preds_mask=preds_mask)
    assert (int(metric.tp), int(metric.fp), int(metric.fn)) == (1, 1, 0)
    default = CULaneMetrics()
    with pytest.warns(UserWarning, match="1 predicted lane"):
        default.update(preds, target, preds_mask=preds_mask)
    assert (int(default.tp), int(default.fp), int(default.fn)) == (1, 0, 0)
    with pytest.raises(ValueError, match="compat"):
        CULaneMetrics(compat="official")


def test_one_line_output_names_the_mean_f1(tmp_path, capsys):
    from drivemetrics.cli import main

    _write_frames(tmp_path, {"d/a": ([_vertical_lane(400)], [_vertical_lane(404)])})  # IoU 27 / 35 = 0.771
    argv = ["culane-eval", "--pred", str(tmp_path / "pred"), "--gt", str(tmp_path / "gt")]
    assert main([*argv, "--iou", "0.5", "0.8"]) == 0
    printed = capsys.readouterr().out
    assert "mean F1    0.500000" in printed
    assert "mF1" not in printed
    assert main([*argv, "--iou-range"]) == 0
    assert "mF1        0.600000" in capsys.readouterr().out


def test_per_image_frame_names(tmp_path):
    from drivemetrics.lane.evaluate import evaluate_culane_dirs
    from drivemetrics.lane.io import read_culane_list

    frames = {"d/a": ([_vertical_lane(400)], [_vertical_lane(400)]), "d/b": ([_vertical_lane(400)], [])}
    _write_frames(tmp_path, frames)
    listing = tmp_path / "list.txt"
    listing.write_text("/d/a.jpg\nd/b.jpg\n")

    def keys(names: list[str] | None) -> list[str]:
        return list(evaluate_culane_dirs(tmp_path / "pred", tmp_path / "gt", names, per_image=True)["per_image"])

    assert keys(read_culane_list(listing, as_written=True)) == ["/d/a", "d/b"]  # the list's own spelling
    assert keys(["/d/a.lines.txt", "/d/a.jpg", "d/b"]) == ["/d/a", "d/b"]  # one frame per file, first spelling
    assert keys(read_culane_list(listing)) == ["d/a", "d/b"]  # relative .lines.txt paths
    assert keys(None) == ["d/a", "d/b"]  # folder scan: paths relative to the GT folder


@pytest.mark.slow
def test_workers_give_the_same_result(tmp_path):
    pytest.importorskip("cv2")
    from drivemetrics.lane.evaluate import evaluate_culane_dirs

    frames = {f"f{k}": ([_vertical_lane(300 + k)], [_vertical_lane(300 + 2 * k)]) for k in range(6)}
    _write_frames(tmp_path, frames)
    for compat in ("default", "reference"):
        one = evaluate_culane_dirs(tmp_path / "pred", tmp_path / "gt", chunk=2, compat=compat, per_image=True)
        two = evaluate_culane_dirs(
            tmp_path / "pred", tmp_path / "gt", chunk=2, compat=compat, workers=2, per_image=True
        )
        assert one["per_image"] == two["per_image"]
        assert one["tp"] == two["tp"]
