"""Apollo 3D Lane Synthetic: reference mode against the official evaluator's outputs, probes, default-mode fixes."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from drivemetrics.lane3d.apollo import Apollo3DMetrics, apollo3d_matches, apollo3d_scores
from drivemetrics.lane3d.packed import pack_lane_lists


def _lane(x, y0=3.0, y1=100.0, step=1.0, z=0.0):
    y = np.arange(y0, y1 + 1e-9, step)
    return np.stack([np.full_like(y, x), y, np.full_like(y, z)], 1)


def _frame(gt, preds, probs, compat="reference"):
    g = pack_lane_lists([gt], visibility=[[np.ones(len(lane)) for lane in gt]])
    p = pack_lane_lists([preds], scores=[probs])
    out = apollo3d_matches(p, g, frames=1, compat=compat)
    t = out["counts"].shape[1]
    sums = np.zeros((t, 4))
    np.add.at(sums, out["pair_threshold"], out["pair_errors"])
    return apollo3d_scores(out["counts"].sum(0), sums, np.bincount(out["pair_threshold"], minlength=t)), out


def _probes(fixtures_dir):
    return json.loads((fixtures_dir / "apollo3d" / "probes.json").read_text())


def test_reference_mode_reproduces_the_fixture(fixtures_dir):
    from drivemetrics.lane3d.evaluate import evaluate_apollo3d_files

    root = fixtures_dir / "apollo3d"
    expected = json.loads((root / "expected.json").read_text())
    out = evaluate_apollo3d_files(root / "cases" / "test.json", root / "cases" / "test_pred_file.json", "reference")
    for key, value in expected["metrics"].items():
        assert out["metrics"][key] == pytest.approx(value, abs=1e-6), key
    want = {f["raw_file"]: f for f in expected["per_frame"]}
    for frame in out["per_frame"]:
        e = want[frame["raw_file"]]
        assert frame["laneline_per_threshold"] == e["laneline_per_threshold"]
        assert frame["centerline_per_threshold"] == e["centerline_per_threshold"]
        for kind in ("laneline_at_maxF", "centerline_at_maxF"):
            for k in ("x_error_close", "z_error_far"):
                assert sorted(frame[kind][k]) == pytest.approx(sorted(e[kind][k]), abs=1e-9)


@pytest.mark.parametrize(
    ("name", "gt", "preds", "probs"),
    [
        ("gt_at_x35_pruned", [_lane(-1.8), _lane(1.8), _lane(35.0)], [_lane(-1.8), _lane(1.8)], [0.9, 0.9]),
        (
            "pred_beyond_103m_counted",
            [_lane(-1.8), _lane(1.8)],
            [_lane(-1.8), _lane(1.8), _lane(0.0, 110, 150)],
            [0.9] * 3,
        ),
        ("half_length_prediction", [_lane(-1.8), _lane(1.8)], [_lane(-1.8, 3, 50), _lane(1.8)], [0.9, 0.9]),
        (
            "gt_and_pred_at_x15",
            [_lane(-1.8), _lane(1.8), _lane(15.0)],
            [_lane(-1.8), _lane(1.8), _lane(15.0)],
            [0.9] * 3,
        ),
    ],
)
def test_probes_give_the_recorded_values(fixtures_dir, name, gt, preds, probs):
    want = _probes(fixtures_dir)[name]
    scores, _ = _frame(gt, preds, probs)
    i = 9  # any threshold below 0.9: every lane counts
    assert scores["recall_curve"][i] == pytest.approx(want["R"], abs=1e-12)
    assert scores["precision_curve"][i] == pytest.approx(want["P"], abs=1e-12)
    assert scores["f_curve"][i] == pytest.approx(want["F"], abs=1e-12)


def test_probe_ap_with_repeated_recall(fixtures_dir):
    want = _probes(fixtures_dir)["ap_repeated_recall"]
    scores, _ = _frame([_lane(-1.8), _lane(1.8), _lane(5.4)], [_lane(-1.8), _lane(1.8), _lane(9.0)], [0.9, 0.6, 0.3])
    assert scores["ap"] == pytest.approx(want["AP"], abs=1e-12)
    assert scores["max_f_threshold"] == pytest.approx(want["max_F_prob_th"])


def test_probe_one_point_prediction_is_a_one_line_error_in_reference_mode(fixtures_dir):
    assert "AssertionError" in _probes(fixtures_dir)["one_point_prediction"]["exception"]
    with pytest.raises(ValueError, match="fewer than 2 points"):
        _frame([_lane(-1.8), _lane(1.8)], [_lane(-1.8), np.array([[1.8, 10.0, 0.0]])], [0.9, 0.9])
    scores, _ = _frame([_lane(-1.8), _lane(1.8)], [_lane(-1.8), np.array([[1.8, 10.0, 0.0]])], [0.9, 0.9], "default")
    assert scores["precision_curve"][0] == pytest.approx(1.0, abs=1e-5)  # dropped, not a false positive


def test_default_prunes_predictions_in_step_with_the_gt():
    gt, preds = [_lane(-1.8), _lane(1.8)], [_lane(-1.8), _lane(1.8), _lane(0.0, 110, 150)]
    ref, _ = _frame(gt, preds, [0.9] * 3)
    fixed, _ = _frame(gt, preds, [0.9] * 3, "default")
    assert ref["precision_curve"][0] == pytest.approx(2 / 3, abs=1e-5)  # the official rule: a false positive
    assert fixed["precision_curve"][0] == pytest.approx(1.0, abs=1e-5)


def test_default_does_not_truncate_the_cost():
    # two predictions 0.69 / 0.61 m from a GT lane over y 3..12 (10 samples, 90 more at 1.5): costs 141.9 and
    # 141.1, both 141 as ints: the official rule ties them and takes the first (farther) one
    gt = [_lane(0.0, 3, 12)]
    preds = [_lane(0.69, 3, 12), _lane(0.61, 3, 12)]
    _, ref = _frame(gt, preds, [0.9, 0.9])
    _, fixed = _frame(gt, preds, [0.9, 0.9], "default")
    assert ref["pair_errors"][0, 0] == pytest.approx(0.69)
    assert fixed["pair_errors"][0, 0] == pytest.approx(0.61)


def test_reference_mode_takes_or_tools_choice_among_tied_assignments():
    # every truncated cost is 0 (|dx| < 0.01 m over 100 samples): OR-Tools' min-cost flow pairs GT 0 with
    # prediction 1 and GT 1 with prediction 0 (tests/lane3d/test_mincostflow.py: [[3, 3], [3, 3]]); scipy the others
    gt, preds = [_lane(0.0, y1=103.0), _lane(0.005, y1=103.0)], [_lane(0.002, y1=103.0), _lane(0.009, y1=103.0)]
    _, out = _frame(gt, preds, [0.6, 0.7])
    first = out["pair_threshold"] == 0
    np.testing.assert_allclose(out["pair_errors"][first][:, 0], [0.009, 0.003], atol=1e-9)
    _, fixed = _frame(gt, preds, [0.6, 0.7], compat="default")  # the float cost: the closer pairs
    np.testing.assert_allclose(fixed["pair_errors"][fixed["pair_threshold"] == 0][:, 0], [0.002, 0.004], atol=1e-9)


def test_batched_equals_one_by_one_and_a_numpy_loop():
    rng = np.random.default_rng(0)
    frames_gt, frames_pred, probs = [], [], []
    for _ in range(6):
        xs = rng.uniform(-8, 8, rng.integers(0, 4))
        frames_gt.append([_lane(x, 3 + rng.uniform(0, 20), 60 + rng.uniform(0, 50), 2.0) for x in xs])
        frames_pred.append([_lane(x + rng.normal(0, 0.5), 3, 90, 3.0) for x in xs] + [_lane(rng.uniform(-9, 9))])
        probs.append(rng.uniform(0, 1, len(frames_pred[-1])).tolist())
    for compat in ("reference", "default"):
        g = pack_lane_lists(frames_gt, visibility=[[np.ones(len(lane)) for lane in f] for f in frames_gt])
        p = pack_lane_lists(frames_pred, scores=probs)
        batched = apollo3d_matches(p, g, frames=6, compat=compat)["counts"]
        for f in range(6):
            gf = pack_lane_lists([frames_gt[f]], visibility=[[np.ones(len(lane)) for lane in frames_gt[f]]])
            one = apollo3d_matches(pack_lane_lists([frames_pred[f]], scores=[probs[f]]), gf, frames=1, compat=compat)
            assert (one["counts"][0] == batched[f]).all()


def test_numpy_loop_of_the_per_sample_rules():
    # one frame, one pair, computed by hand: 0.3 m lateral offset over y 3..52 (50 samples visible in both)
    _, out = _frame([_lane(0.0, 3, 52)], [_lane(0.3, 3, 52)], [0.9])
    d = np.where(np.arange(3, 103) <= 52, 0.3, 1.5)  # the tool: 1.5 where either is invisible
    assert int(np.sum(d)) < 150
    assert out["counts"][0, 0].tolist() == [1, 1, 1, 1]
    assert out["pair_errors"][0].tolist() == pytest.approx([0.3, 0.3, 0.0, 0.0])


def test_metric_class_accumulates_like_the_kernel():
    from drivemetrics.lane3d.examples import apollo3d_example_inputs

    inputs = apollo3d_example_inputs()
    metric = Apollo3DMetrics()
    metric.update(**inputs)
    metric.update(**inputs)
    once = Apollo3DMetrics()(**inputs)
    twice = metric.compute()
    assert float(twice["max_f"]) == pytest.approx(float(once["max_f"]))
    assert float(twice["x_error_close"]) == pytest.approx(0.35)
    with pytest.raises(ValueError, match="scores"):
        metric.update({"points": inputs["preds"]["points"]}, inputs["target"])
    assert not math.isnan(float(twice["ap"]))
    assert torch.is_tensor(twice["ap"])


def _frame_vis(gt, vis, preds, probs, compat="reference"):
    g = pack_lane_lists([gt], visibility=[vis])
    out = apollo3d_matches(pack_lane_lists([preds], scores=[probs]), g, frames=1, compat=compat)
    t = out["counts"].shape[1]
    sums = np.zeros((t, 4))
    np.add.at(sums, out["pair_threshold"], out["pair_errors"])
    return apollo3d_scores(out["counts"].sum(0), sums, np.bincount(out["pair_threshold"], minlength=t))


def test_probe_no_far_both_visible_samples(fixtures_dir):
    want = _probes(fixtures_dir)["no_far_both_visible_samples"]
    gt = [_lane(-1.8), _lane(1.8)]
    vis = [(lane[:, 1] <= 40).astype(float) for lane in gt]
    got = _frame_vis(gt, vis, [_lane(-1.6, 3, 40), _lane(1.6, 3, 40)], [0.9, 0.9])
    for key, name in (("x_close", "x_error_close"), ("x_far", "x_error_far"), ("z_far", "z_error_far")):
        assert got[name] == pytest.approx(want[key], abs=1e-12)
    assert got["max_f"] == pytest.approx(want["F"], abs=1e-12)


def test_probe_gt_far_to_near_and_its_default_fix(fixtures_dir):
    want = _probes(fixtures_dir)["gt_far_to_near_from_120m"]
    gt = [_lane(-1.8, 3, 120)[::-1], _lane(1.8)]
    preds = [_lane(-1.8), _lane(1.8)]
    got = _frame_vis(gt, [np.ones(len(lane)) for lane in gt], preds, [0.9, 0.9])
    assert (got["recall"], got["precision"]) == pytest.approx((want["R"], want["P"]), abs=1e-12)
    fixed = _frame_vis(gt, [np.ones(len(lane)) for lane in gt], preds, [0.9, 0.9], "default")
    assert fixed["precision"] == pytest.approx(1.0, abs=1e-5)  # the reversed GT lane is evaluated


def test_probes_invisible_stretch_and_equal_thresholds(fixtures_dir):
    probes = _probes(fixtures_dir)
    stretch = _lane(1.8)  # one GT line, invisible for 30 <= y <= 60, and its exact prediction
    vis = [((stretch[:, 1] < 30) | (stretch[:, 1] > 60)).astype(float)]
    got = _frame_vis([stretch], vis, [_lane(1.8)], [0.9])
    assert got["max_f"] == pytest.approx(probes["gt_invisible_stretch"]["F"], abs=1e-12)
    gt = [_lane(-1.8), _lane(1.8)]
    got = _frame_vis(gt, [np.ones(len(lane)) for lane in gt], [_lane(-1.8), _lane(1.8)], [0.99, 0.99])
    want = probes["all_thresholds_equal"]
    assert got["ap"] == pytest.approx(want["AP"], abs=1e-12)
    assert got["max_f_threshold"] == pytest.approx(want["max_F_prob_th"])


def test_probe_probability_exactly_on_a_threshold(fixtures_dir):
    from drivemetrics.lane3d.apollo import APOLLO_THRESHOLDS

    probes = _probes(fixtures_dir)
    gt = [_lane(-1.8), _lane(1.8)]
    g = pack_lane_lists([gt], visibility=[[np.ones(len(lane)) for lane in gt]])
    p = pack_lane_lists([[_lane(-1.8), _lane(1.8)]], scores=[[0.5, 0.95]])
    counts = apollo3d_matches(p, g, frames=1, thresholds=(0.5, APOLLO_THRESHOLDS[9]))["counts"][0]
    for row, key in zip(counts, ("prob_exactly_0.5_fixed_th_0.5", "prob_exactly_0.5_fixed_th_linspace9"), strict=True):
        assert row[0] / (row[2] + 1e-6) == pytest.approx(probes[key]["R"], abs=1e-12)
