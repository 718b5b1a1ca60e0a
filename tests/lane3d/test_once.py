"""ONCE-3DLanes: reference mode against the official evaluator (munkres 1.1.4 ties included), probes, fixes."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from drivemetrics.lane3d.munkres import munkres_assignment
from drivemetrics.lane3d.once import ONCE3DMetrics, once3d_iou, once3d_matches, once3d_mean_distance
from drivemetrics.lane3d.packed import pack_lane_lists

pytest.importorskip("cv2")


def _line(x=1.0, y=1.6, z0=5.0, z1=40.0, slope=0.0):
    z = np.arange(z0, z1 + 1e-9, 1.0)
    return np.stack([x + slope * z, np.full_like(z, y), z], 1)


def _probes(fixtures_dir):
    return json.loads((fixtures_dir / "once3d" / "probes.json").read_text())


def test_reference_mode_reproduces_the_fixture_including_tie_frames(fixtures_dir):
    from drivemetrics.lane3d.evaluate import evaluate_once3d_files

    root = fixtures_dir / "once3d"
    expected = json.loads((root / "expected.json").read_text())
    out = evaluate_once3d_files(root / "cases" / "gt", root / "cases" / "pred", "reference")
    for row, e in zip(out["table"], expected["table"], strict=True):
        for key in ("F1", "precision", "recall", "distance_error"):
            if e[key] is None:
                assert row[key] is None
            else:
                assert row[key] == pytest.approx(e[key], abs=1e-6), (e["prob_thresh"], key)
        assert (row["gt_all"], row["pred_all"], row["tp_all"]) == (e["gt_all"], e["pred_all"], e["tp_all"])
    want = {f["file"]: f for f in expected["per_frame"]}
    ties = 0
    for frame in out["per_frame"]:
        e = want[frame["file"]]
        assert frame["tp"] == e["tp"], frame["file"]
        ties += bool(e.get("tie_sensitive"))
    assert ties > 10  # the tie-sensitive frames are among those compared


def test_munkres_port_keeps_its_tie_choice_where_scipy_differs():
    from scipy.optimize import linear_sum_assignment

    rng = random.Random(3)
    differs = 0
    for _ in range(300):
        m = [[rng.choice([1.0, 1.0, 0.5, 0.0]) for _ in range(4)] for _ in range(3)]
        rows, cols = linear_sum_assignment(np.array(m))
        ours = munkres_assignment(m)
        assert sum(m[i][j] for i, j in ours) == pytest.approx(float(np.array(m)[rows, cols].sum()))
        differs += ours != list(zip(rows.tolist(), cols.tolist(), strict=True))
    assert differs > 0  # ties where scipy's choice is another one
    assert munkres_assignment([[1.0, 1.0], [1.0, 1.0]]) == [(0, 0), (1, 1)]


def test_distance_probes(fixtures_dir):
    probes = _probes(fixtures_dir)
    near, far = _line(z0=5, z1=20), _line(z0=30, z1=50)
    assert once3d_mean_distance(near, far, compat="reference") == pytest.approx(probes["dist_same_xy_disjoint_depth"])
    base = _line(z0=5, z1=40)
    got = once3d_mean_distance(base, base + np.array([0.2, 0, 0]), compat="reference")
    assert got == pytest.approx(probes["dist_straight_along_z_lateral_0.2"], abs=1e-12)
    heading = _line(z0=5, z1=45, slope=0.05)
    got = once3d_mean_distance(heading, heading + np.array([0.5, 0, 0]), compat="reference")
    assert got == pytest.approx(probes["dist_heading_lane_shift_0.5"], abs=1e-9)


def test_iou_probes(fixtures_dir):
    probes = _probes(fixtures_dir)
    lane = _line(z0=5, z1=40)
    got = once3d_iou([lane], [lane, lane + np.array([0.5, 0, 0]), lane + np.array([1.6, 0, 0])], compat="reference")[0]
    assert got.tolist() == pytest.approx(
        [probes["iou_identical"], probes["iou_lateral_0.5"], probes["iou_lateral_1.6"]]
    )
    beyond = _line(z0=11, z1=40)
    assert once3d_iou([beyond], [beyond], compat="reference")[0, 0] == probes["iou_both_start_beyond_10m"]
    assert once3d_iou([beyond], [beyond])[0, 0] == 1.0  # default: the whole lane is drawn
    assert once3d_iou([_line(x=12)], [_line(x=12)], compat="reference")[0, 0] == probes["iou_x_12m_identical"]
    assert once3d_iou([_line(x=10.5)], [_line(x=10.5)], compat="reference")[0, 0] == probes["iou_x_10.5m_identical"]


def test_kept_scores_and_iou0_pair_probes(fixtures_dir):
    probes = _probes(fixtures_dir)
    lane = _line(z0=5, z1=40)
    thresholds = tuple(s * 0.01 for s in range(10, 100, 5))
    for score, key in ((0.35, "kept_score_0.35_at_35"), (0.5, "kept_score_0.5_at_50"), (0.95, "kept_score_0.95_at_95")):
        out = once3d_matches(
            pack_lane_lists([[lane]], scores=[[score]]), pack_lane_lists([[lane]]), frames=1, compat="reference"
        )
        assert out["counts"][0, thresholds.index(min(thresholds, key=lambda t: abs(t - score))), 1] == probes[key]
    beyond = _line(z0=12, z1=40)
    out = once3d_matches(
        pack_lane_lists([[beyond]], scores=[[0.9]]), pack_lane_lists([[beyond]]), frames=1, compat="reference"
    )
    want = probes["eval_iou0_pair_is_tp"]
    assert out["counts"][0, :, 2].tolist() == want[2]


def test_default_measures_depth_and_reference_does_not():
    near, far = _line(z0=5, z1=20), _line(z0=30, z1=50)
    gt, pred = pack_lane_lists([[near]]), pack_lane_lists([[far]], scores=[[0.99]])
    assert once3d_matches(pred, gt, frames=1, compat="reference")["counts"][0, -1, 2] == 1  # the official rule: a TP
    assert once3d_matches(pred, gt, frames=1)["counts"][0, -1, 2] == 0


def test_one_point_prediction():
    gt = pack_lane_lists([[_line()]])
    pred = pack_lane_lists([[_line(), np.array([[1.0, 1.6, 5.0]])]], scores=[[0.9, 0.9]])
    with pytest.raises(ValueError, match="fewer than 2 points"):
        once3d_matches(pred, gt, frames=1, compat="reference")
    out = once3d_matches(pred, gt, frames=1)
    assert out["counts"][0, 0].tolist() == [1, 2, 1]


def test_batched_equals_one_by_one():
    rng = np.random.default_rng(1)
    gts, preds, scores = [], [], []
    for _ in range(5):
        xs = rng.uniform(-6, 6, rng.integers(0, 4))
        gts.append([_line(x, z0=rng.uniform(3, 12)) for x in xs])
        preds.append([_line(x + rng.normal(0, 0.3)) for x in xs] + [_line(rng.uniform(-6, 6))])
        scores.append(rng.uniform(0, 1, len(preds[-1])).tolist())
    for compat in ("reference", "default"):
        batched = once3d_matches(pack_lane_lists(preds, scores=scores), pack_lane_lists(gts), frames=5, compat=compat)
        for f in range(5):
            one = once3d_matches(
                pack_lane_lists([preds[f]], scores=[scores[f]]), pack_lane_lists([gts[f]]), frames=1, compat=compat
            )
            assert (one["counts"][0] == batched["counts"][f]).all()
            assert np.allclose(one["distance_sum"][0], batched["distance_sum"][f])


def test_metric_class_and_threshold_argument():
    from drivemetrics.lane3d.examples import once3d_example_inputs

    out = ONCE3DMetrics()(**once3d_example_inputs())
    assert float(out["f1"]) == pytest.approx(2 / 3)
    assert out["f1_table"].shape == (18,)
    with pytest.raises(ValueError, match="score_threshold"):
        ONCE3DMetrics(score_threshold=0.33)
