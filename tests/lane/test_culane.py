from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from drivemetrics.lane.culane import (
    CULaneF1,
    culane_counts,
    culane_f1,
    draw_lanes,
    lane_iou_matrix,
    lanes_from_rows,
)


def _brute_mask(points, height, width, radius):
    """Distance of every pixel centre to every segment, numpy loops over segments (test reference)."""
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float64)
    mask = np.zeros((height, width), dtype=bool)
    pts = [p for p in points if not np.isnan(p).any()]
    for (ax, ay), (bx, by) in itertools.pairwise(pts):
        dx, dy = bx - ax, by - ay
        l2 = dx * dx + dy * dy
        t = np.clip(((xx - ax) * dx + (yy - ay) * dy) / l2, 0, 1) if l2 > 0 else np.zeros_like(xx)
        d2 = (xx - ax - t * dx) ** 2 + (yy - ay - t * dy) ** 2
        mask |= d2 <= radius * radius
    return mask


def test_draw_matches_brute_force(device):
    rng = np.random.default_rng(0)
    height, width = 40, 70
    lanes = []
    for _ in range(6):
        n = int(rng.integers(2, 6))
        pts = np.stack([rng.uniform(-10, width + 10, n), rng.uniform(-10, height + 10, n)], axis=1)
        pts = np.concatenate([pts, np.full((6 - n, 2), np.nan)])
        lanes.append(pts)
    # special cases: vertical, horizontal, repeated point
    lanes.append(np.array([[20.3, -5], [20.3, 50], [np.nan, np.nan], *[[np.nan, np.nan]] * 3]))
    lanes.append(np.array([[-5, 12.7], [80, 12.7], [80, 12.7], *[[np.nan, np.nan]] * 3]))
    points = torch.tensor(np.stack(lanes), dtype=torch.float64).reshape(2, 4, 6, 2)
    masks = draw_lanes(points.to(device), height, width, line_width=9.0).cpu().numpy()
    for b in range(2):
        for lane in range(4):
            expected = _brute_mask(points[b, lane].numpy(), height, width, 4.5)
            assert (masks[b, lane] == expected).all(), (b, lane)
            assert expected.any()


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
    assert (int(counts.tp[0]), int(counts.fp[0]), int(counts.fn[0])) == (1, 2, 2)
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
    iou = lane_iou_matrix(pred, gt, 200, 300, 30)[0].numpy()
    r, c = linear_sum_assignment(-iou)
    expected_tp = int((iou[r, c] > 0.5).sum())
    counts = culane_counts(pred, gt, 200, 300)
    assert int(counts.tp[0]) == expected_tp
    assert int(counts.fp[0]) == 3 - expected_tp
    assert int(counts.fn[0]) == 4 - expected_tp


def test_metric_accumulates(device):
    ys = torch.arange(300.0, 590.0, 10.0)
    lane = lanes_from_rows((600 + 0 * ys)[None, None], ys).to(device)
    far = lanes_from_rows((1000 + 0 * ys)[None, None], ys).to(device)
    metric = CULaneF1().to(device)
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
    assert (int(counts.tp[0]), int(counts.fp[0]), int(counts.fn[0])) == (0, 0, 1)
    assert float(culane_f1(nothing, nothing)["f1"]) == 0.0


def test_bad_inputs():
    one_point = torch.tensor([[[[5.0, 5.0], [float("nan"), float("nan")]]]])
    with pytest.raises(ValueError, match="fewer than 2 valid points"):
        draw_lanes(one_point, 10, 10)
    with pytest.raises(ValueError, match="points"):
        draw_lanes(torch.zeros(1, 2, 3), 10, 10)
    with pytest.raises(ValueError, match="iou_threshold"):
        CULaneF1(iou_threshold=1.5)
    with pytest.raises(ValueError, match="infinite"):
        draw_lanes(torch.full((1, 1, 2, 2), float("inf")), 10, 10)


def _write_lines(path, lanes):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(" ".join(f"{v:g}" for xy in lane for v in xy) for lane in lanes) + "\n")


def test_culane_files_and_cli(tmp_path, capsys):
    from drivemetrics.cli import main
    from drivemetrics.lane.culane import evaluate_culane_dirs, read_culane_lines

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


def test_culane_reader_errors(tmp_path):
    from drivemetrics.lane.culane import read_culane_lines

    bad = tmp_path / "x.lines.txt"
    bad.write_text("1 2 3 4\n\n5 6 7\n")
    with pytest.raises(ValueError, match=r"x\.lines\.txt:3"):
        read_culane_lines(bad)
    bad.write_text("1 2 a 4\n")
    with pytest.raises(ValueError, match=r":1: expected numbers"):
        read_culane_lines(bad)
    with pytest.raises(FileNotFoundError):
        read_culane_lines(tmp_path / "none.lines.txt")
