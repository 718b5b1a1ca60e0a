"""The official KITTI object evaluation: the C++ output on real data, GT as detections, and a per-frame port of the
C++ (tests/detection/kitti_oracle.py) on synthetic detector-like results with every edge case."""

from __future__ import annotations

import math

import numpy as np
import pytest

from drivemetrics.detection.io import KittiObjects, parse_kitti_objects, read_kitti_object_folder
from drivemetrics.detection.kitti_object import (
    DIFFICULTIES,
    LOOSE_OVERLAPS,
    evaluate_kitti_objects,
    kitti_recall_thresholds,
)
from tests.detection import kitti_oracle

STATS = {"2d": "detection", "aos": "orientation", "bev": "detection_ground", "3d": "detection_3d"}


@pytest.fixture(scope="module")
def kitti_dir(fixtures_dir):
    path = fixtures_dir / "kitti_object"
    if not path.is_dir():
        pytest.skip("kitti_object fixtures absent")
    return path


@pytest.fixture(scope="module")
def labels(kitti_dir) -> list[KittiObjects]:
    return list(read_kitti_object_folder(kitti_dir / "label_2").values())


def _curves(result, cls, metric):
    return np.array([result[cls][metric][d]["curve"] for d in DIFFICULTIES])


def test_official_cpp_stats_real_detector(kitti_dir, labels):
    frames = [f"{i:06d}" for i in range(100)]
    det = read_kitti_object_folder(kitti_dir / "det_100", frames, with_score=True)
    result = evaluate_kitti_objects(list(det.values()), labels[:100])
    assert set(result) == {"car"}  # the C++ evaluates only detected classes
    for metric, name in STATS.items():
        expected = np.loadtxt(kitti_dir / "expected_official_100" / f"stats_car_{name}.txt")
        printed = np.array([[float(f"{v:f}") for v in row] for row in _curves(result, "car", metric)])
        np.testing.assert_array_equal(printed, expected)
    # the AP values derived from the official curves (reference notes, section 6.3): fractions in the API, the
    # devkit's percentages once multiplied by 100 (bit for bit: the devkit's ``sum / 40 * 100``, same order)
    ap = [round(result["car"]["2d"][d]["ap_r40"] * 100, 4) for d in DIFFICULTIES]
    assert ap == [42.1458, 38.7411, 36.2159]
    ap = [round(result["car"]["3d"][d]["ap_r40"] * 100, 4) for d in DIFFICULTIES]
    assert ap == [34.9166, 31.7419, 29.0839]
    for metric in STATS:
        for d in DIFFICULTIES:
            entry = result["car"][metric][d]
            assert 0 <= entry["ap_r40"] <= 1
            assert 0 <= entry["ap_r11"] <= 1
            assert entry["ap_r40"] * 100 == sum(entry["curve"][1:]) / 40 * 100  # the devkit's percentage, exactly
            assert entry["ap_r11"] * 100 == sum(entry["curve"][0::4]) / 11 * 100


def test_folders_read_as_tables_give_the_frames_values(kitti_dir, labels, tmp_path):
    """``kitti-object-eval`` evaluates the folders as tables (``read_object_table``), without building frames: the
    same curves as the frames, with result files missing (no objects) and files of different column counts."""
    from drivemetrics.detection.io import read_object_table, write_kitti_object_folder

    frames = [f"{i:06d}" for i in range(300)]
    jittered = kitti_oracle.jitter_detections(labels, seed=3)
    results = {name: det for i, (name, det) in enumerate(zip(frames, jittered, strict=True)) if i % 7}
    write_kitti_object_folder(tmp_path / "det", results)
    gt_table = read_object_table(kitti_dir / "label_2", frames, with_score=False)
    det_table = read_object_table(tmp_path / "det", frames, with_score=True, missing="empty")
    assert isinstance(det_table.parsed, tuple)
    assert len(det_table.absent) == 43
    from_frames = evaluate_kitti_objects(list(det_table.frames().values()), labels, only_detected=False)
    assert evaluate_kitti_objects(det_table, gt_table, only_detected=False) == from_frames
    # labels of 15 columns read without with_score next to results: the table cannot hold both widths
    (tmp_path / "mixed").mkdir()
    for name in frames[:20]:
        (tmp_path / "mixed" / f"{name}.txt").write_text((kitti_dir / "label_2" / f"{name}.txt").read_text())
    (tmp_path / "mixed" / "000000.txt").write_text("Car 0 0 0 1 2 30 60 1.5 1.6 4 1 1.7 15 0 0.5\n")
    mixed = read_object_table(tmp_path / "mixed", frames[:20])
    assert not isinstance(mixed.parsed, tuple)
    first_results = list(det_table.frames().values())[:20]
    expected = evaluate_kitti_objects(first_results, list(mixed.frames().values()), only_detected=False)
    assert evaluate_kitti_objects(first_results, mixed, only_detected=False) == expected
    with pytest.raises(ValueError, match="with_score=True"):
        evaluate_kitti_objects(gt_table, gt_table)


def test_validate_args_checks_a_folder_table_as_its_frames(kitti_dir, labels):
    """``validate_args`` on a folder's table (checked on its parsed columns, not flattened twice): the values the
    frames' check refuses are refused on the table too, naming the same argument and column."""
    import dataclasses

    from drivemetrics._internal.limits import set_limits
    from drivemetrics.detection.io import read_object_table

    frames = [f"{i:06d}" for i in range(40)]
    gt_table = read_object_table(kitti_dir / "label_2", frames, with_score=False)
    det = [lab.with_score(0.5) for lab in labels[:40]]
    det_table = dataclasses.replace(
        gt_table,
        with_score=True,
        parsed=(
            gt_table.parsed[0],
            np.c_[gt_table.parsed[1], np.full(len(gt_table.parsed[1]), 0.5)],
            gt_table.parsed[2],
        ),
    )
    assert evaluate_kitti_objects(det_table, gt_table) == evaluate_kitti_objects(det, labels[:40])

    def changed(table, column: int, value: float):
        values = table.parsed[1].copy()
        values[7, column] = value
        return dataclasses.replace(table, parsed=(table.parsed[0], values, table.parsed[2]))

    with set_limits(max_abs_coordinate=10_000):
        for table_args, match in (
            ((changed(det_table, 5, 1e5), gt_table), r"`preds\.bbox`: the coordinate 100000 is larger"),
            ((changed(det_table, 12, -1e5), gt_table), r"`preds\.location/dimensions/rotation_y`: the coordinate"),
            ((changed(det_table, 14, math.nan), gt_table), r"`preds\.score` contains NaN"),
            (
                (det_table, changed(gt_table, 9, math.inf)),
                r"`target\.location/dimensions/rotation_y` contains infinite",
            ),
            ((det_table, changed(gt_table, 3, math.nan)), r"`target\.bbox` contains NaN"),
        ):
            with pytest.raises(ValueError, match=match):
                evaluate_kitti_objects(*table_args)
            frames_args = [list(t.frames().values()) for t in table_args]
            with pytest.raises(ValueError, match=match):
                evaluate_kitti_objects(*frames_args)
        evaluate_kitti_objects(changed(det_table, 14, math.nan), gt_table, validate_args=False)  # not checked


def test_groundtruth_as_detections_gives_100_where_cpp_does(labels):
    det = [lab.with_score(1.0) for lab in labels]
    result = evaluate_kitti_objects(det, labels)
    assert set(result) == {"car", "pedestrian", "cyclist"}
    for cls, per_metric in result.items():
        assert set(per_metric) == {"2d", "bev", "3d"}  # DontCare rows carry alpha -10: no AOS, as the C++
        for metric, per_diff in per_metric.items():
            for diff, values in per_diff.items():
                if cls == "cyclist" and diff == "easy":  # n_gt = 34 <= 40: the C++ recall-sampling artefact
                    assert values["ap_r40"] == pytest.approx(0.825, abs=1e-11), metric
                    assert values["ap_r11"] == pytest.approx(9 / 11, abs=1e-11), metric
                else:
                    assert values["ap_r40"] == pytest.approx(1.0, abs=1e-11), (cls, metric, diff)
                    assert values["ap_r11"] == pytest.approx(1.0, abs=1e-11), (cls, metric, diff)


def _compare_with_oracle(
    result, expected, classes=("car", "pedestrian", "cyclist"), metrics=("2d", "aos", "bev", "3d")
):
    for cls in classes:
        for metric in metrics:
            got = _curves(result, cls, metric)
            want = np.array(expected[cls][metric])
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-12, equal_nan=True, err_msg=f"{cls} {metric}")


@pytest.mark.parametrize("seed", [0, 1])
def test_matches_per_frame_port_of_cpp_on_synthetic_detections(labels, seed):
    gts = labels[seed * 40 : seed * 40 + 40]
    dets = kitti_oracle.jitter_detections(gts, seed=seed)
    result = evaluate_kitti_objects(dets, gts, only_detected=False)
    _compare_with_oracle(result, kitti_oracle.evaluate(gts, dets))
    assert result["car"]["2d"]["moderate"]["ap_r40"] > 0.1  # a meaningful case, not all zeros


def test_loose_overlaps_match_port(labels):
    gts = labels[100:130]
    dets = kitti_oracle.jitter_detections(gts, seed=3)
    result = evaluate_kitti_objects(dets, gts, overlaps="loose", only_detected=False)
    for metric in ("bev", "3d"):
        expected = kitti_oracle.evaluate(gts, dets, overlaps=LOOSE_OVERLAPS[metric], metrics=(metric,))
        _compare_with_oracle(result, expected, metrics=(metric,))


def _frame(text: str, with_score: bool) -> KittiObjects:
    return parse_kitti_objects(text, with_score=with_score)


def test_edge_cases_match_port():
    """Tiny any-class detections absorbing a GT, Van / Person_sitting, DontCare hits, score ties, empty frames,
    a GT ignored for its height exactly 40 px, two detections on one GT, one detection between two GTs."""
    gt_text = [
        "Car 0.00 0 0.1 100 100 200 180 1.5 1.6 3.9 0 1.6 20 0.1\n"
        "Van 0.00 0 0.1 300 100 400 180 2.0 1.8 4.5 4 1.6 20 0.1\n"
        "Car 0.00 0 0.1 500 100 600 140 1.5 1.6 3.9 8 1.6 20 0.1\n"  # height exactly 40: ignored for easy
        "DontCare -1 -1 -10 700 100 800 200 -1 -1 -1 -1000 -1000 -1000 -10\n"
        "Pedestrian 0.00 0 0.3 900 100 930 180 1.7 0.6 0.8 12 1.6 20 0.0\n"
        "Person_sitting 0.00 0 0.3 950 100 980 180 1.2 0.6 0.8 14 1.6 20 0.0\n",
        "",
        "Car 0.00 0 0.2 100 100 200 180 1.5 1.6 3.9 0 1.6 20 0.2\n"
        "Car 0.00 1 0.2 150 100 250 180 1.5 1.6 3.9 1 1.6 20 0.2\n",
    ]
    det_text = [
        "Car -1 -1 0.2 102 101 201 181 1.5 1.6 3.9 0.05 1.6 20.1 0.12 0.9\n"
        "Car -1 -1 0.2 100 100 200 175 1.5 1.6 3.9 0.0 1.6 20 0.1 0.9\n"  # same score: order decides
        "Car -1 -1 0.1 301 100 400 181 2.0 1.8 4.5 4 1.6 20 0.1 0.8\n"  # on the Van: ignored
        "Car -1 -1 0.1 500 100 600 140 1.5 1.6 3.9 8 1.6 20 0.1 0.7\n"
        "Cyclist -1 -1 0.1 705 105 795 195 1.5 1.6 3.9 30 1.6 20 0.1 0.6\n"  # on DontCare
        "Car -1 -1 0.1 705 105 795 195 1.5 1.6 3.9 30 1.6 20 0.1 0.65\n"  # on DontCare
        "Pedestrian -1 -1 0.3 951 100 980 180 1.2 0.6 0.8 14 1.6 20 0.0 0.5\n"
        "Pedestrian -1 -1 0.3 901 100 930 180 1.7 0.6 0.8 12 1.6 20 0.0 0.4\n"
        "Cyclist -1 -1 0.3 901 150 930 170 1.7 0.6 0.8 12 1.6 20 0.0 0.95\n",  # tiny, any class
        "Car -1 -1 0.1 10 10 100 100 1.5 1.6 3.9 0 1.6 30 0.1 0.3\n",
        "Car -1 -1 0.2 120 100 220 180 1.5 1.6 3.9 0.5 1.6 20 0.2 0.55\n"
        "Car -1 -1 0.2 99 100 199 180 1.5 1.6 3.9 0 1.6 20 0.2 0.35\n"
        "Pedestrian -1 -1 0.2 120 100 220 110 1.5 1.6 3.9 0.5 1.6 20 0.2 0.99\n",  # tiny, over both cars
    ]
    gts = [_frame(t, False) for t in gt_text]
    dets = [_frame(t, True) for t in det_text]
    result = evaluate_kitti_objects(dets, gts, only_detected=False)
    _compare_with_oracle(result, kitti_oracle.evaluate(gts, dets))


@pytest.mark.parametrize("n_gt", [1, 7, 40, 41, 57, 400])
def test_recall_thresholds_match_cpp_loop(n_gt):
    gen = np.random.default_rng(n_gt)
    for trial in range(20):
        n_tp = int(gen.integers(0, n_gt + 1))
        scores = gen.choice(np.round(gen.random(8), 2), n_tp) if trial % 2 else gen.random(n_tp)
        assert kitti_recall_thresholds(scores, n_gt) == kitti_oracle.get_thresholds(list(scores), n_gt)


def test_small_gt_thresholds_keep_every_score():
    assert kitti_recall_thresholds([0.9, 0.8, 0.7], 3) == [0.9, 0.8, 0.7]
    assert len(kitti_recall_thresholds(np.linspace(1, 0, 1000), 1000)) == 41


def test_aos_skipped_when_an_alpha_is_missing():
    gt = _frame("Car 0.00 0 0.1 100 100 200 180 1.5 1.6 3.9 0 1.6 20 0.1\n", False)
    det = _frame(
        "Car -1 -1 0.1 100 100 200 180 1.5 1.6 3.9 0 1.6 20 0.1 0.9\nMisc -1 -1 -10 0 0 10 10 1 1 1 0 0 5 0 0.1\n",
        True,
    )
    assert "aos" not in evaluate_kitti_objects([det], [gt])["car"]
    with_alpha = _frame("Car -1 -1 0.1 100 100 200 180 1.5 1.6 3.9 0 1.6 20 0.1 0.9\n", True)
    aos = evaluate_kitti_objects([with_alpha], [gt])["car"]["aos"]["easy"]
    assert aos["ap_r11"] == pytest.approx(1 / 11)  # n_gt = 1: one threshold, recall sampling slot 0 only
    assert math.isclose(aos["curve"][0], 1.0)


def test_zero_size_groundtruth_is_not_matched_in_bev_or_3d():
    """A GT with w = l = 0 under a detection has BEV / 3D IoU 0, as the official C++ (boost) gives; the clipping
    used to keep the whole detection, a union of rounding size and an IoU ~1e15, so AP depended on rounding."""
    det = _frame("Car -1 -1 0.1 100 100 200 180 1.5 1.73 4.2 0 1.6 20 0.1 0.9\n", True)
    sized = _frame("Car 0.00 0 0.1 100 100 200 180 1.5 1.73 4.2 0 1.6 20 0.1\n", False)
    point = _frame("Car 0.00 0 0.1 100 100 200 180 1.5 0 0 0 1.6 20 0.1\n", False)
    matched = evaluate_kitti_objects([det], [sized])["car"]
    result = evaluate_kitti_objects([det], [point])["car"]
    for diff in DIFFICULTIES:
        for metric in ("2d", "bev", "3d"):  # n_gt = 1: a match gives R11 1 / 11
            assert matched[metric][diff]["ap_r11"] == pytest.approx(1 / 11), (metric, diff)
        assert result["2d"][diff]["ap_r11"] == pytest.approx(1 / 11)  # the 2D boxes still match
        for metric in ("bev", "3d"):
            assert result[metric][diff]["ap_r11"] == 0.0, (metric, diff)
            assert result[metric][diff]["ap_r40"] == 0.0, (metric, diff)


def test_bad_inputs():
    gt = _frame("Car 0.00 0 0.1 100 100 200 180 1.5 1.6 3.9 0 1.6 20 0.1\n", False)
    with pytest.raises(ValueError, match="frames"):
        evaluate_kitti_objects([], [gt])
    with pytest.raises(ValueError, match="score"):
        evaluate_kitti_objects([gt], [gt])
    with pytest.raises(ValueError, match="class"):
        evaluate_kitti_objects([gt.with_score(1.0)], [gt], classes=["truck"])
    with pytest.raises(ValueError, match="overlaps"):
        evaluate_kitti_objects([gt.with_score(1.0)], [gt], overlaps="medium")
