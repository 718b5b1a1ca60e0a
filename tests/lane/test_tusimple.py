from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from drivemetrics.lane.evaluate import evaluate_tusimple_files
from drivemetrics.lane.io import read_tusimple_json, write_tusimple_json
from drivemetrics.lane.tusimple import (
    TuSimpleMetrics,
    select_ego_lanes,
    tusimple_f1,
    tusimple_image_scores,
    tusimple_metrics,
)

YS = np.arange(160.0, 720.0, 10.0)  # 56 rows


def _bench_reference(pred, gt, ys, run_time=0.0):
    """Plain-Python transcription of the LaneEval.bench rules (lists with -2 for missing), written for the test."""
    if run_time > 200 or len(pred) > len(gt) + 2:
        return 0.0, 0.0, 1.0
    accs_per_gt, matched, fn = [], 0, 0
    for g in gt:
        pts = [(y, x) for y, x in zip(ys, g, strict=True) if x >= 0]
        k = 0.0
        if len(pts) > 1:
            ym = sum(p[0] for p in pts) / len(pts)
            xm = sum(p[1] for p in pts) / len(pts)
            k = sum((p[0] - ym) * (p[1] - xm) for p in pts) / sum((p[0] - ym) ** 2 for p in pts)
        th = 20.0 / math.cos(math.atan(k))
        best = 0.0
        for p in pred:
            ok = 0
            for a, b in zip(p, g, strict=True):
                a = a if a >= 0 else -100.0
                b = b if b >= 0 else -100.0
                ok += abs(a - b) < th
            best = max(best, ok / len(g))
        accs_per_gt.append(best)
        if best < 0.85:
            fn += 1
        else:
            matched += 1
    fp = len(pred) - matched
    if len(gt) > 4 and fn > 0:
        fn -= 1
    s = sum(accs_per_gt)
    if len(gt) > 4:
        s -= min(accs_per_gt)
    d = max(min(4, len(gt)), 1)
    return s / d, (fp / len(pred) if pred else 0.0), fn / d


def _pad(lanes_per_image, n):
    lmax = max([len(lanes) for lanes in lanes_per_image] + [1])
    out = torch.full((len(lanes_per_image), lmax, n), float("nan"), dtype=torch.float64)
    mask = torch.zeros(len(lanes_per_image), lmax, dtype=torch.bool)
    for b, lanes in enumerate(lanes_per_image):
        for i, lane in enumerate(lanes):
            t = torch.tensor(lane, dtype=torch.float64)
            out[b, i] = torch.where(t >= 0, t, float("nan"))
            mask[b, i] = True
    return out, mask


def _line(x0, slope, missing_top=0):
    xs = [x0 + slope * (y - 160.0) for y in YS]
    return [-2.0] * missing_top + xs[missing_top:]


def _scores(pred, gt, run_time=None, **kw):
    p, pm = _pad([pred], len(YS))
    g, gm = _pad([gt], len(YS))
    rt = None if run_time is None else torch.tensor([float(run_time)])
    s = tusimple_image_scores(p, g, h_samples=torch.tensor(YS), run_time=rt, preds_mask=pm, target_mask=gm, **kw)
    return float(s["accuracy"][0]), float(s["fp"][0]), float(s["fn"][0])


def test_perfect_two_lanes():
    gt = [_line(400, -0.3), _line(880, 0.3)]
    assert _scores(gt, gt) == (1.0, 0.0, 0.0)


def test_all_missing_prediction_counts_missing_points_as_correct():
    # 10 of 56 GT points missing; the only prediction is all -2: those 10 rows are "correct".
    gt = [_line(600, 0.0, missing_top=10)]
    acc, fp, fn = _scores([[-2.0] * 56], gt)
    assert acc == pytest.approx(10 / 56, abs=1e-15)
    assert (fp, fn) == (1.0, 1.0)


def test_angle_corrected_threshold():
    # GT slope 0.5 px/px -> threshold 20 * sqrt(1.25) = 22.36 px: shifts of 19 and 21 count, 23 does not.
    gt = [_line(300, 0.5)]
    for shift, expected in ((19.0, 1.0), (21.0, 1.0), (23.0, 0.0)):
        pred = [[x + shift for x in gt[0]]]
        assert _scores(pred, gt)[0] == expected
    # Strict inequality: exactly at the threshold is wrong (vertical lane, threshold exactly 20).
    assert _scores([_line(320.0, 0.0)], [_line(300.0, 0.0)])[0] == 0.0


def test_one_prediction_matching_two_lanes_gives_negative_fp():
    gt = [_line(600, 0.0), _line(605, 0.0)]
    pred = [_line(602, 0.0)]
    assert _scores(pred, gt, compat="reference") == (1.0, -1.0, 0.0)
    # the default mode counts predictions that are no GT lane's best match: never negative
    assert _scores(pred, gt) == (1.0, 0.0, 0.0)


def test_rejection_rules():
    gt = [_line(400, -0.3)]
    assert _scores([gt[0]] * 4, gt) == (0.0, 0.0, 1.0)  # more than n_gt + 2 predictions
    assert _scores([gt[0]] * 3, gt) == (1.0, 2 / 3, 0.0)  # exactly n_gt + 2 is allowed
    assert _scores(gt, gt, run_time=250) == (0.0, 0.0, 1.0)
    assert _scores(gt, gt, run_time=200) == (1.0, 0.0, 0.0)


def test_more_than_four_gt_lanes():
    gt = [_line(100 + 200 * i, 0.0) for i in range(5)]
    pred = gt[:3]  # two GT lanes missed: one forgiven, the worst accuracy (0) dropped
    acc, fp, fn = _scores(pred, gt)
    assert acc == 3 / 4
    assert fp == 0.0
    assert fn == 1 / 4


def test_no_gt_lanes_documented_values():
    acc, fp, fn = _scores([_line(300, 0.0)], [])
    assert (acc, fp, fn) == (0.0, 1.0, 0.0)
    assert _scores([], []) == (0.0, 0.0, 0.0)


def test_random_against_reference(device):
    rng = np.random.default_rng(3)
    preds, gts, refs = [], [], []
    for _ in range(40):
        n_gt = int(rng.integers(0, 6))
        gt = [_line(rng.uniform(50, 1200), rng.uniform(-1.5, 1.5), int(rng.integers(0, 30))) for _ in range(n_gt)]
        pred = []
        for g in gt[: int(rng.integers(0, n_gt + 1))]:
            noise = rng.normal(0, 12, size=56) + rng.choice([0.0, 30.0])
            pred.append([x + e if x >= 0 and rng.random() > 0.1 else -2.0 for x, e in zip(g, noise, strict=True)])
        for _ in range(int(rng.integers(0, 3))):
            pred.append(_line(rng.uniform(0, 1280), rng.uniform(-1, 1), int(rng.integers(0, 20))))
        preds.append(pred)
        gts.append(gt)
        refs.append(_bench_reference(pred, gt, YS, 0.0))
    p, pm = _pad(preds, 56)
    g, gm = _pad(gts, 56)
    s = tusimple_image_scores(
        p.to(device),
        g.to(device),
        h_samples=torch.tensor(YS, device=device),
        run_time=None,
        preds_mask=pm,
        target_mask=gm,
        compat="reference",
    )
    ref = torch.tensor(refs, dtype=torch.float64)
    torch.testing.assert_close(s["accuracy"].cpu(), ref[:, 0], rtol=0, atol=1e-12)
    torch.testing.assert_close(s["fp"].cpu(), ref[:, 1], rtol=0, atol=1e-12)
    torch.testing.assert_close(s["fn"].cpu(), ref[:, 2], rtol=0, atol=1e-12)


def test_padded_h_samples_ignore_padding():
    # Image with 30 rows padded to 56: the denominator is 30, padding values never count.
    gt = torch.full((1, 1, 56), float("nan"), dtype=torch.float64)
    gt[0, 0, :30] = 500.0
    pred = gt.clone()
    pred[0, 0, :3] = 600.0  # 27 of 30 correct
    ys = torch.full((1, 56), float("nan"), dtype=torch.float64)
    ys[0, :30] = torch.arange(30, dtype=torch.float64) * 10 + 420
    s = tusimple_image_scores(pred, gt, h_samples=ys)
    assert float(s["accuracy"][0]) == pytest.approx(27 / 30)


def test_f1_from_rates():
    assert float(tusimple_f1(0.0, 0.0)) == 1.0
    assert float(tusimple_f1(0.5, 0.0)) == pytest.approx(2 * 0.5 * 1 / 1.5)
    assert float(tusimple_f1(1.0, 1.0)) == 0.0


def test_ego_lane_selection():
    lanes = torch.tensor(
        [[[100.0] * 4, [500.0] * 4, [620.0, 640.0, 660.0, float("nan")], [700.0] * 4, [1100.0] * 4]],
        dtype=torch.float64,
    )
    chosen = select_ego_lanes(lanes)  # means 100, 500, 640 (>= center), 700, 1100
    assert chosen.tolist() == [[False, True, True, False, False]]
    assert select_ego_lanes(lanes[:, :2]).tolist() == [[False, True]]  # no right lane


def test_metric_accumulates_per_image_average(device):
    gt_a = [_line(400, -0.3), _line(880, 0.3)]
    gt_b = [_line(600, 0.0)]
    p1, pm1 = _pad([gt_a], 56)
    g1, gm1 = _pad([gt_a], 56)
    p2, pm2 = _pad([[_line(700, 0.0)]], 56)
    g2, gm2 = _pad([gt_b], 56)
    ys = torch.tensor(YS, device=device)
    metric = TuSimpleMetrics().to(device)
    metric.update(p1.to(device), g1.to(device), h_samples=ys, preds_mask=pm1, target_mask=gm1)
    metric.update(p2.to(device), g2.to(device), h_samples=ys, preds_mask=pm2, target_mask=gm2)
    out = metric.compute()
    # image 1: (1, 0, 0); image 2: (0, 1, 1) -> averages (0.5, 0.5, 0.5)
    assert float(out["accuracy"]) == 0.5
    assert float(out["fp"]) == 0.5
    assert float(out["fn"]) == 0.5
    assert float(out["f1"]) == pytest.approx(0.5)
    functional = tusimple_metrics(p2, g2, h_samples=torch.tensor(YS), preds_mask=pm2, target_mask=gm2)
    assert float(functional["accuracy"]) == 0.0


def test_bad_inputs():
    ys = torch.tensor(YS)
    good = torch.zeros(1, 1, 56, dtype=torch.float64) + 300
    with pytest.raises(ValueError, match="preds"):
        tusimple_image_scores(torch.zeros(1, 56), good, h_samples=ys)
    with pytest.raises(ValueError, match="target"):
        tusimple_image_scores(good, torch.zeros(1, 1, 55), h_samples=ys)
    with pytest.raises(ValueError, match="h_samples"):
        tusimple_image_scores(good, good, h_samples=ys[:10])
    with pytest.raises(ValueError, match="infinite"):
        tusimple_image_scores(good, good.clone().fill_(float("inf")), h_samples=ys)
    with pytest.raises(ValueError, match="run_time"):
        tusimple_image_scores(good, good, h_samples=ys, run_time=torch.tensor([float("nan")]))
    with pytest.raises(ValueError, match="compat"):
        tusimple_image_scores(good, good, h_samples=ys, compat="official")


def test_reader_reports_line_numbers(tmp_path):
    gt = tmp_path / "gt.json"
    line = {"raw_file": "a.jpg", "lanes": [[1.0, -2]], "h_samples": [100, 110]}
    gt.write_text(json.dumps(line) + "\n\n" + '{"raw_file": "b.jpg", "lanes": [[1.0]], "h_samples": [1, 2]}\n')
    with pytest.raises(ValueError, match=r"gt\.json:3: lanes\[0\] has 1 values"):
        read_tusimple_json(gt)
    gt.write_text(json.dumps(line) + "\n{not json\n")
    with pytest.raises(ValueError, match=r":2: not valid JSON"):
        read_tusimple_json(gt)
    gt.write_text(json.dumps({"raw_file": "a.jpg", "lanes": [[1, "x"]], "h_samples": [1, 2]}) + "\n")
    with pytest.raises(ValueError, match=r":1: `lanes\[0\]` must be a list of numbers"):
        read_tusimple_json(gt)
    pred = tmp_path / "pred.json"
    pred.write_text(json.dumps({"raw_file": "a.jpg", "lanes": []}) + "\n")
    with pytest.raises(ValueError, match=r":1: missing key `run_time`"):
        read_tusimple_json(pred, require_h_samples=False)
    with pytest.raises(FileNotFoundError):
        read_tusimple_json(tmp_path / "nope.json")


def test_file_evaluation_checks_pairing(tmp_path):
    gt = tmp_path / "gt.json"
    pred = tmp_path / "pred.json"
    gt.write_text(json.dumps({"raw_file": "a.jpg", "lanes": [[5.0, 6.0]], "h_samples": [100, 110]}) + "\n")
    pred.write_text(json.dumps({"raw_file": "b.jpg", "lanes": [], "run_time": 1}) + "\n")
    with pytest.raises(ValueError, match="no prediction"):
        evaluate_tusimple_files(pred, gt)
    pred.write_text(json.dumps({"raw_file": "a.jpg", "lanes": [[5.0, 6.0, 7.0]], "run_time": 1}) + "\n")
    with pytest.raises(ValueError, match=r"pred\.json:1: lanes\[0\] has 3 values"):
        evaluate_tusimple_files(pred, gt)


def test_write_read_roundtrip(tmp_path):
    lanes = torch.tensor([[[1.5, float("nan"), 3.25], [float("nan")] * 3]], dtype=torch.float64)
    mask = torch.tensor([[True, True]])
    path = tmp_path / "x.json"
    write_tusimple_json(path, ["a.jpg"], lanes, mask, h_samples=torch.tensor([10.0, 20.0, 30.0]))
    assert json.loads(path.read_text())["lanes"] == [[1.5, -2, 3.25], [-2, -2, -2]]
    back = read_tusimple_json(path)
    torch.testing.assert_close(back.lanes, lanes, equal_nan=True)
    assert back.lane_mask.tolist() == [[True, True]]
    assert back.h_samples.tolist() == [[10.0, 20.0, 30.0]]


def test_conformance_official(fixtures_dir):
    folder = fixtures_dir / "tusimple"
    expected = json.loads((folder / "expected_official.json").read_text())
    overall, per_image = evaluate_tusimple_files(folder / "pred.json", folder / "label.json", compat="reference")
    assert [p["raw_file"] for p in per_image] == [e["raw_file"] for e in expected["per_image"]]
    for ours, theirs in zip(per_image, expected["per_image"], strict=True):
        for key in ("accuracy", "fp", "fn"):
            assert ours[key] == pytest.approx(theirs[key], abs=1e-12, rel=0), (ours["raw_file"], key)
    for item in expected["overall"]:
        assert overall[item["name"].lower()] == pytest.approx(item["value"], abs=1e-12, rel=0)


def test_empty_lane_dimensions():
    ys = torch.tensor(YS)
    gt, gm = _pad([[_line(500, 0.0)]], 56)
    no_pred = torch.zeros(1, 0, 56, dtype=torch.float64)
    s = tusimple_image_scores(no_pred, gt, h_samples=ys, target_mask=gm)
    assert (float(s["accuracy"][0]), float(s["fp"][0]), float(s["fn"][0])) == (0.0, 0.0, 1.0)
    s = tusimple_image_scores(gt, torch.zeros(1, 0, 56, dtype=torch.float64), h_samples=ys)
    assert (float(s["accuracy"][0]), float(s["fp"][0]), float(s["fn"][0])) == (0.0, 1.0, 0.0)


def test_metric_merge_and_forward_match_functional():
    rng = np.random.default_rng(7)
    gts = [[_line(rng.uniform(100, 1100), rng.uniform(-1, 1)) for _ in range(3)] for _ in range(6)]
    preds = [[[x + rng.normal(0, 15) for x in lane] for lane in gt[:2]] for gt in gts]
    p, pm = _pad(preds, 56)
    g, gm = _pad(gts, 56)
    ys = torch.tensor(YS)
    whole = tusimple_metrics(p, g, h_samples=ys, preds_mask=pm, target_mask=gm)
    first, second = TuSimpleMetrics(), TuSimpleMetrics()
    batch_value = first(p[:4], g[:4], h_samples=ys, preds_mask=pm[:4], target_mask=gm[:4])
    torch.testing.assert_close(
        batch_value["accuracy"],
        tusimple_metrics(p[:4], g[:4], h_samples=ys, preds_mask=pm[:4], target_mask=gm[:4])["accuracy"],
    )
    second.update(p[4:], g[4:], h_samples=ys, preds_mask=pm[4:], target_mask=gm[4:])
    first.merge_state(second)
    merged = first.compute()
    for key in ("accuracy", "fp", "fn", "f1"):
        torch.testing.assert_close(merged[key], whole[key])


def test_metric_ego_only_scores_two_lanes():
    gt = [_line(200, 0.0), _line(500, 0.0), _line(800, 0.0), _line(1100, 0.0)]
    pred = [gt[1], gt[2], _line(20, 0.0)]  # both ego lanes right, an outer lane wrong
    p, pm = _pad([pred], 56)
    g, gm = _pad([gt], 56)
    metric = TuSimpleMetrics(ego_only=True)
    metric.update(p, g, h_samples=torch.tensor(YS), preds_mask=pm, target_mask=gm)
    out = metric.compute()
    assert (float(out["accuracy"]), float(out["fp"]), float(out["fn"])) == (1.0, 0.0, 0.0)
    full = tusimple_metrics(p, g, h_samples=torch.tensor(YS), preds_mask=pm, target_mask=gm)
    assert float(full["fn"]) == 0.5  # without ego_only the two outer GT lanes are missed


def _ddp_data():
    rng = np.random.default_rng(11)
    gts = [
        [_line(rng.uniform(100, 1100), rng.uniform(-1, 1)) for _ in range(int(rng.integers(1, 5)))] for _ in range(5)
    ]
    preds = [[[x + rng.normal(0, 12) for x in lane] for lane in gt] for gt in gts]
    p, pm = _pad(preds, 56)
    g, gm = _pad(gts, 56)
    return p, pm, g, gm


def _ddp_worker(rank, world):
    p, pm, g, gm = _ddp_data()
    part = slice(0, 1) if rank == 0 else slice(1, 5)  # uneven split
    metric = TuSimpleMetrics()
    metric.update(p[part], g[part], h_samples=torch.tensor(YS), preds_mask=pm[part], target_mask=gm[part])
    return {key: float(value) for key, value in metric.compute().items()}


@pytest.mark.ddp
@pytest.mark.slow
def test_metric_syncs_over_two_processes():
    from tests.ddp import run_distributed

    results = run_distributed(_ddp_worker)
    p, pm, g, gm = _ddp_data()
    expected = tusimple_metrics(p, g, h_samples=torch.tensor(YS), preds_mask=pm, target_mask=gm)
    for result in results:
        for key, value in expected.items():
            assert result[key] == pytest.approx(float(value), abs=1e-12)
