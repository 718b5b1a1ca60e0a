"""Issue 36 for the OpenLane-V2 readers: limits, types, duplicate tokens, empty predictions, cost of one outlier."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest
import torch

from drivemetrics._internal.limits import set_limits
from drivemetrics.lanetopology import OpenLaneV2Metrics
from drivemetrics.lanetopology.evaluate import JOB_POINTS, _job_bounds, evaluate_openlanev2
from drivemetrics.lanetopology.frames import check_frame_input, parse_frame
from drivemetrics.lanetopology.io import read_ground_truth, read_predictions

TOKEN = ["val", "1", "2"]


def _lane(x: float, points: int = 11) -> list[list[float]]:
    return [[x, 2.0 * j, 0.0] for j in range(points)]


def _gt() -> dict:
    return {
        "lane_centerline": [{"points": _lane(0.0)}, {"points": _lane(3.5)}],
        "traffic_element": [],
        "topology_lclc": [[0, 1], [0, 0]],
        "topology_lcte": [[], []],
    }


def _pred(lanes: list, confidence: object = 0.8) -> dict:
    return {
        "lane_centerline": [{"points": lane, "confidence": confidence} for lane in lanes],
        "traffic_element": [],
        "topology_lclc": [[0.5] * len(lanes) for _ in lanes],
        "topology_lcte": [[] for _ in lanes],
    }


def test_empty_predictions_score_zero_not_a_crash():
    scores = evaluate_openlanev2({tuple(TOKEN): _pred([])}, {tuple(TOKEN): _gt()}, "centerline")
    assert scores["det_l"] == 0.0
    assert scores["f_score"] == 0.0
    metric = OpenLaneV2Metrics()
    metric.update([_pred([])], [_gt()])
    assert metric.compute()["det_l"].item() == 0.0


@pytest.mark.parametrize(
    ("confidence", "words"),
    [("0.5", "expected a number in [0, 1], got str"), (5.0, "5.0 is outside [0, 1]"), (True, "got bool")],
)
def test_confidences_are_numbers_in_unit_interval(confidence, words):
    with pytest.raises(ValueError, match=r"f: lane_centerline\[0\]\.confidence") as err:
        parse_frame(_pred([_lane(0.0)], confidence), track="centerline", is_pred=True, token="f")
    assert words in str(err.value)
    for good in (0.5, np.float32(0.5), np.array([0.5]), torch.tensor(0.5), 1):
        parse_frame(_pred([_lane(0.0)], good), track="centerline", is_pred=True, token="f")


def test_points_are_counted_before_they_are_converted():
    lane = [[0.0, 0.0, 0.0]] * 10**7  # 80 MB of references: converting it would take 240 MB more
    with pytest.raises(ValueError, match=r"w: lane_centerline\[0\]\.points: 10,000,000 points"):
        check_frame_input(_pred([lane]), track="centerline", is_pred=True, where="w")
    with pytest.raises(ValueError, match="max_map_line_points"):
        parse_frame(_pred([lane]), track="centerline", is_pred=True, token="f")
    with set_limits(max_map_lines_per_frame=2), pytest.raises(ValueError, match="3 items in one frame"):
        check_frame_input(_pred([_lane(0.0)] * 3), track="centerline", is_pred=True, where="w")


@pytest.mark.parametrize("value", [1e308, 1e4, float("nan")])
def test_coordinates_are_finite_and_within_the_limit(tmp_path, value):
    lane = _lane(0.0)
    lane[3][0] = value
    data = {"frames": [{"token": TOKEN, "pred": _pred([lane])}]}
    (tmp_path / "pred.json").write_text(json.dumps(data))
    with pytest.raises(ValueError, match=r"pred\.json: frame val/1/2: lane_centerline\[0\]\.points: "):
        read_predictions(tmp_path / "pred.json")
    with pytest.raises(ValueError, match=r"frame f: lane_centerline\[0\]\.points"):
        parse_frame(_pred([np.array(lane)]), track="centerline", is_pred=True, token="f")


def test_duplicate_tokens_are_refused_naming_both_places(tmp_path):
    frames = [{"token": TOKEN, "gt": _gt()}, {"token": ["val", "9", "9"], "gt": _gt()}, {"token": TOKEN, "gt": _gt()}]
    (tmp_path / "gt.json").write_text(json.dumps({"frames": frames}))
    with pytest.raises(ValueError, match=r"gt\.json: frame val/1/2 appears twice \(frames\[0\] and frames\[2\]\)"):
        read_ground_truth(tmp_path / "gt.json")
    # two pickle keys that name one token once converted to text
    results = {("val", 1, 2): {"predictions": _pred([])}, ("val", "1", "2"): {"predictions": _pred([])}}
    (tmp_path / "sub.pkl").write_bytes(pickle.dumps({"method": "m", "results": results}))
    with pytest.raises(ValueError, match=r"sub\.pkl: frame val/1/2 appears twice \(results key 0 and results key 1\)"):
        read_predictions(tmp_path / "sub.pkl")


def test_one_large_frame_gets_a_job_of_its_own():
    small, big = _pred([_lane(0.0)] * 5), _pred([_lane(0.0, 900)] * 900)
    tokens = list(range(600))
    preds = {t: (big if t == 300 else small) for t in tokens}
    target = {t: _gt() for t in tokens}
    jobs = _job_bounds(preds, target, tokens, 256)
    (with_big,) = [job for job in jobs if 300 in job]
    assert len(with_big) * 900 * 900 <= JOB_POINTS
    assert [t for job in jobs for t in job] == tokens
    assert max(len(job) for job in jobs) <= 256
