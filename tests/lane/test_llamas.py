"""LLAMAS (issue 47): the label pipeline, the kernels, the default-mode fixes, against the official evaluator's
fixture (unsupervised_llamas 9b99f46 evaluate.py) where it is present."""

from __future__ import annotations

import copy
import itertools
import json
import warnings

import numpy as np
import pytest
import torch

pytest.importorskip("cv2", reason="LLAMAS draws lanes with opencv-python-headless (the culane extra)")

from drivemetrics.lane.culane import IOU_RANGE, counts_from_matches
from drivemetrics.lane.evaluate import evaluate_llamas_dirs
from drivemetrics.lane.io import pad_lanes, read_culane_file, read_llamas_keys, read_llamas_label
from drivemetrics.lane.llamas import (
    LlamasMetrics,
    llamas_counts,
    llamas_f1,
    llamas_interpolate,
    llamas_label_lanes,
    llamas_matches,
)


@pytest.fixture(scope="module")
def llamas(fixtures_dir):
    root = fixtures_dir / "llamas"
    if not root.is_dir():
        pytest.skip("llamas fixture absent")
    return root, json.loads((root / "expected.json").read_text())


def _marker(x0, y0, x1, y1, z0, z1=None):
    z1 = z0 + 6.0 if z1 is None else z1
    return {
        "lane_marker_id": "m",
        "world_start": {"x": 1.0, "y": 1.6, "z": z0},
        "world_end": {"x": 1.0, "y": 1.6, "z": z1},
        "pixel_start": {"x": x0, "y": y0},
        "pixel_end": {"x": x1, "y": y1},
    }


def _lane(lane_id, x_bottom, slope=0.4):
    """Two markers of a straight lane: rows 700 -> 600 and 560 -> 460."""
    return {
        "lane_id": lane_id,
        "markers": [
            _marker(x_bottom, 700, round(x_bottom + slope * 100), 600, 5.0),
            _marker(round(x_bottom + slope * 140), 560, round(x_bottom + slope * 240), 460, 15.0),
        ],
    }


# ---------------------------------------------------------------------------------------------- label pipeline


def test_label_pipeline_equals_the_evaluators_gt_points(llamas):
    root, expected = llamas
    checked = 0
    for key, frame in expected["frames"].items():
        label = read_llamas_label(root / "cases" / "labels" / "valid" / f"{key}.json")
        lanes, _ = llamas_label_lanes(label, compat="reference")
        assert len(lanes) == len(frame["gt_points"]) == frame["n_gt"], key
        for lane, want in zip(lanes, frame["gt_points"], strict=True):
            # gt_points: the x of every row y_first..y_last (rows with x < 0 are not points)
            rows = np.arange(want["y_first"], want["y_last"] + 1)
            xs = np.array(want["x"], dtype=np.float64)
            keep = xs >= 0
            assert lane[:, 1].tolist() == rows[keep].tolist(), key
            assert lane[:, 0].tolist() == xs[keep].tolist(), key  # exact: the same float operations
            checked += 1
    assert checked > 150


def test_reference_renames_after_a_drop_and_the_default_does_not():
    short_l0 = {"lane_id": "l0", "markers": [_marker(500, 700, 520, 690, 5.0), _marker(530, 695, 540, 690, 9.0)]}
    label = {"lanes": [_lane("l2", 100), _lane("l1", 300), short_l0, _lane("r0", 800), _lane("r1", 1000)]}
    ref, _ = llamas_label_lanes(copy.deepcopy(label), compat="reference")
    default, _ = llamas_label_lanes(copy.deepcopy(label), compat="default")
    bottom = [lane[-1, 0] for lane in ref]
    # the official rule: l0 dropped (5 px span), l1 -> l0 and l2 -> l1: the far-left lane l2 is scored
    assert len(ref) == 4
    assert min(bottom) < 250
    # the fix: the JSON's l1, r0, r1 are scored, l2 stays out
    assert len(default) == 3
    assert min(lane[-1, 0] for lane in default) > 250


def test_default_renames_gaps_in_the_ids_as_the_dataset_does():
    label = {"lanes": [_lane("l3", 100), _lane("l1", 300), _lane("r0", 800)]}  # l3 -> l1, l1 -> l0
    for compat in ("default", "reference"):
        lanes, _ = llamas_label_lanes(copy.deepcopy(label), compat=compat)
        assert len(lanes) == 3


def test_all_vertical_markers_and_a_lane_above_row_300():
    vertical = {"lane_id": "r0", "markers": [_marker(700, 700, 700, 600, 5.0), _marker(700, 560, 700, 460, 15.0)]}
    with pytest.raises(ValueError, match=r"min\(\) arg is an empty sequence"):
        llamas_label_lanes({"lanes": [vertical]}, compat="reference", where="f")
    lanes, notes = llamas_label_lanes({"lanes": [vertical]}, compat="default", where="f")
    assert len(lanes) == 1
    assert (lanes[0][:, 0] == 700).all()
    assert "not extended" in notes[0]
    high = {"lane_id": "r0", "markers": [_marker(700, 290, 690, 250, -1.0), _marker(690, 260, 680, 200, 30.0)]}
    with pytest.raises(ValueError, match="add_ys"):
        llamas_label_lanes({"lanes": [high]}, compat="reference", where="f")
    lanes, notes = llamas_label_lanes({"lanes": [high]}, compat="default", where="f")
    assert lanes == []
    assert "rows >= 300" in notes[0]


def test_interpolate_drops_repeats_and_refuses_equal_points():
    p = np.array([[600.0, 700.0], [600.0, 700.0], [640.0, 500.0]])
    assert np.allclose(llamas_interpolate(p, n=3), [[600, 700], [620, 600], [640, 500]])
    with pytest.raises(ValueError, match="all points of the lane are equal"):
        llamas_interpolate(np.array([[5.0, 5.0], [5.0, 5.0]]))


# ------------------------------------------------------------------------------------------------------ kernels


def _frames(root, expected, keys):
    preds, gts = [], []
    for key in keys:
        gts.append(
            llamas_label_lanes(read_llamas_label(root / "cases/labels/valid" / f"{key}.json"), compat="reference")[0]
        )
        preds.append(read_culane_file(root / "cases/pred" / f"{key}.lines.txt"))
    return pad_lanes(preds)[0], pad_lanes(gts)[0]


def test_reference_counts_and_ious_per_frame(llamas):
    root, expected = llamas
    keys = list(expected["frames"])
    preds, target = _frames(root, expected, keys)
    m = llamas_matches(preds, target, compat="reference")
    counts = [counts_from_matches(m, t) for t in IOU_RANGE]
    for i, key in enumerate(keys):
        e = expected["frames"][key]
        assert (int(counts[0]["tp"][i]), int(counts[0]["fp"][i]), int(counts[0]["fn"][i])) == (
            e["discrete"]["tp"],
            e["discrete"]["fp"],
            e["discrete"]["fn"],
        ), key
        assert [[int(c[k][i]) for k in ("tp", "fp", "fn")] for c in counts] == e["multi_threshold_counts"], key
        for _, gt, iou in e["discrete"].get("assignment", []):
            assert float(m["matched_iou"][i, gt]) == pytest.approx(iou, abs=1e-3)


def test_batched_equals_frame_by_frame(llamas):
    root, expected = llamas
    keys = list(expected["frames"])[:20]
    preds, target = _frames(root, expected, keys)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        batch = llamas_counts(preds, target, iou_thresholds=IOU_RANGE)
        for i in range(len(keys)):
            one = llamas_counts(preds[i : i + 1], target[i : i + 1], iou_thresholds=IOU_RANGE)
            for key in ("tp", "fp", "fn"):
                assert torch.equal(one[key][0], batch[key][i])


def test_metric_class_accumulates_the_functional_totals(llamas):
    root, expected = llamas
    keys = list(expected["frames"])[:24]
    preds, target = _frames(root, expected, keys)
    metric = LlamasMetrics(compat="reference")
    for k in range(0, 24, 8):
        metric.update(preds[k : k + 8], target[k : k + 8])
    got, want = metric.compute(), llamas_f1(preds, target, compat="reference")
    for key in want:
        assert float(got[key]) == float(want[key])


def test_evaluate_matches_the_official_totals(llamas):
    root, expected = llamas
    result = evaluate_llamas_dirs(root / "cases/pred", root / "cases/labels/valid", compat="reference")
    official = expected["pooled"]["discrete"]
    for key in ("tp", "fp", "fn", "precision", "recall", "f1"):
        assert result["pooled"][key] == pytest.approx(official[key], abs=1e-12)
    for key in ("mF1", "F1@50", "F1@75"):
        assert result["multi_threshold"][key] == pytest.approx(expected["multi_threshold"][key], abs=1e-12)


def test_shapely_iou_equals_the_unofficial_numbers(llamas):
    pytest.importorskip("shapely", reason="the unofficial IoU needs shapely")
    root, expected = llamas
    result = evaluate_llamas_dirs(root / "cases/pred", root / "cases/labels/valid", compat="reference", iou="shapely")
    official = expected["pooled"]["continuous_unofficial"]
    for key in ("tp", "fp", "fn", "f1"):
        assert result["pooled"][key] == pytest.approx(official[key], abs=1e-12)


def test_default_mode_effect_on_the_fixture(llamas):
    """The measured effect of the fixes (docs/pages/domains/lane.md): only the frames where a dropped lane renamed
    its neighbours change."""
    root, expected = llamas
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = evaluate_llamas_dirs(root / "cases/pred", root / "cases/labels/valid", per_image=True)
    changed = {
        k
        for k, v in result["per_frame"].items()
        if (v["tp"], v["fp"], v["fn"]) != tuple(expected["frames"][k]["discrete"][c] for c in ("tp", "fp", "fn"))
    }
    assert (result["pooled"]["tp"], result["pooled"]["fp"], result["pooled"]["fn"]) == (136, 112, 77)
    assert len(changed) == 6
    for key in changed:
        label = json.loads((root / "cases/labels/valid" / f"{key}.json").read_text())
        assert any(len(lane["markers"]) < 2 for lane in label["lanes"]) or "short" in str(
            expected["frames"][key]["generator_tags"]
        )


# ------------------------------------------------------------------------------------------------------ crashes


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("gt_all_markers_vertical", "min\\(\\) arg is an empty sequence"),
        ("gt_lane_above_row_300", "add_ys"),
        ("pred_all_points_equal", "all points of the lane are equal"),
        ("pred_odd_value_count", "even number"),
        ("missing_pred_file", "not found"),
    ],
)
def test_crash_cases_give_one_line_errors_in_reference_mode(llamas, case, message, tmp_path):
    root, _ = llamas
    case_dir = root / "crash_cases" / case
    pred = case_dir / "pred"
    if not pred.is_dir():
        pred = tmp_path  # the missing file's case has no prediction folder at all
    with pytest.raises((ValueError, FileNotFoundError), match=message) as info:
        evaluate_llamas_dirs(pred, case_dir / "labels/valid", compat="reference")
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("case", ["gt_all_markers_vertical", "gt_lane_above_row_300", "pred_all_points_equal"])
def test_crash_cases_are_handled_in_the_default_mode(llamas, case):
    root, _ = llamas
    case_dir = root / "crash_cases" / case
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        result = evaluate_llamas_dirs(case_dir / "pred", case_dir / "labels/valid", per_image=True)
    assert result["notes"], "the handled case is reported"
    assert result["pooled"]["tp"] + result["pooled"]["fn"] >= 1


def test_keys_are_the_last_two_path_components(llamas):
    root, expected = llamas
    assert read_llamas_keys(root / "cases/labels/valid") == sorted(expected["frames"])


def test_bad_label_is_one_line(tmp_path):
    path = tmp_path / "seq" / "a.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"lanes": [{"lane_id": "l0", "markers": [{"pixel_start": {"x": 1}}]}]}))
    with pytest.raises(ValueError, match=r"markers\[0\]\.pixel_start"):
        read_llamas_label(path)


def test_pixel_iou_on_a_torch_device_equals_numpy():
    # --device: the intersections as a matrix product of the drawn masks (here on the CPU; CI has no GPU)
    from drivemetrics.lane.llamas_scoring import pixel_iou

    rows = np.arange(300.0, 717.0)
    gts = [np.stack([640 + s * (rows - 300), rows], 1) for s in (-0.8, 0.5, 1.4)]
    gts.append(np.array([[-500.0, 300.0], [-400.0, 716.0]]))  # drawn outside the image: union 0 with another such
    preds = [g[::40] + np.array([dx, 0.0]) for g, dx in zip(gts, (3.0, 25.0, 60.0, 0.0), strict=True)]
    want = pixel_iou(gts, preds, 30)
    got = pixel_iou(gts, preds, 30, device=torch.device("cpu"))
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert np.array_equal(np.nan_to_num(got), np.nan_to_num(want))
    assert 0 < want[0, 0] < 1
    assert np.isnan(want[3, 3])


def test_device_cpu_equals_numpy_on_the_fixture(llamas):
    root, _ = llamas
    args = (root / "cases" / "pred", root / "cases" / "labels" / "valid")
    for compat in ("reference", "default"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = evaluate_llamas_dirs(*args, compat=compat, per_image=True)
            got = evaluate_llamas_dirs(*args, compat=compat, per_image=True, device="cpu")
        assert got == want


# --------------------------------------------------------------------------------- speed tricks change no number


def _gt_like_lane(rng, rows=417):
    """A GT-like lane: one vertex per image row (rows 300-716), x drifting by up to a few pixels per row, the way
    the label pipeline makes them (cut where x < 0)."""
    x = rng.uniform(-200, 1476) + np.cumsum(rng.normal(rng.uniform(-3, 3), rng.uniform(0.1, 2.0), rows))
    lane = np.stack([x, np.arange(300.0, 300.0 + rows)], axis=1)
    return lane[lane[:, 0] >= 0] if rng.random() < 0.7 else lane


def test_one_polyline_draws_the_official_per_segment_lines_on_gt_like_lanes():
    # the evaluator's draw_lane: cv2.line per segment (both round caps); one cv2.polylines call draws the same pixels
    import cv2

    from drivemetrics.lane.culane_official import _draw_cropped

    rng = np.random.default_rng(47)
    checked = 0
    for _ in range(60):
        lane = _gt_like_lane(rng)
        if len(lane) < 2:
            continue
        pixels = lane.astype(np.int32)
        official = np.zeros((717, 1276), np.uint8)
        for a, b in itertools.pairwise(pixels.tolist()):
            cv2.line(official, tuple(a), tuple(b), color=(1,), thickness=30)
        crop, top, left = _draw_cropped(cv2, pixels, 717, 1276, 30)
        ours = np.zeros_like(official)
        ours[top : top + crop.shape[0], left : left + crop.shape[1]] = crop
        assert np.array_equal(ours, official)
        checked += int(official.any())
    assert checked > 40


@pytest.mark.parametrize("width", [1, 2, 3, 5, 15, 30, 31])
def test_lanes_drawn_on_a_crop_equal_the_whole_image(width):
    # the crop is the lane's box grown by width // 2 + 3: nothing of the thick line (nor its caps) falls outside it
    import cv2

    from drivemetrics.lane.culane_official import _draw_cropped

    rng = np.random.default_rng(width)
    for k in range(80):
        if k % 2:
            lane = _gt_like_lane(rng, rows=int(rng.integers(2, 417)))
        else:  # short lanes of a few points anywhere, in and around the image
            n = int(rng.integers(2, 8))
            lane = np.stack([rng.uniform(-60, 1336, n), rng.uniform(-60, 777, n)], axis=1)
        if len(lane) < 2:
            continue
        pixels = lane.astype(np.int32)
        whole = np.zeros((717, 1276), np.uint8)
        cv2.polylines(whole, [pixels.reshape(-1, 1, 2)], isClosed=False, color=1, thickness=width)
        crop, top, left = _draw_cropped(cv2, pixels, 717, 1276, width)
        ours = np.zeros_like(whole)
        ours[top : top + crop.shape[0], left : left + crop.shape[1]] = crop
        assert np.array_equal(ours, whole), (width, k)


def _fill_gaps_one_row_at_a_time(values):
    """The official gap filling, row after row in Python floats (spline_creator._sample_points)."""
    out = values.copy()
    for lane in out:
        x = lane.tolist()
        set_rows = [r for r, v in enumerate(x) if v != -1]
        for a, b in itertools.pairwise(set_rows):
            for r in range(a + 1, b):
                x[r] = x[r - 1] + (x[b] - x[r - 1]) / (b - r + 1)
        lane[:] = x
    return out


def test_gap_filling_of_all_gaps_at_once_gives_the_row_by_row_floats():
    from drivemetrics.lane.llamas_scoring import _fill_gaps

    rng = np.random.default_rng(9)
    values = np.full((40, 717), -1.0)
    for lane in values:
        rows = np.sort(rng.choice(717, size=int(rng.integers(0, 60)), replace=False))
        lane[rows] = (
            rng.uniform(0, 1276, len(rows)) if rng.random() < 0.5 else np.round(rng.uniform(0, 1276, len(rows)))
        )
    values[0, [3, 700]] = [10.0, 20.0]  # one gap of 696 rows
    want = _fill_gaps_one_row_at_a_time(values)
    got = _fill_gaps(values.copy())
    assert got.tobytes() == want.tobytes()
    assert (got != values).sum() > 1000  # gaps were filled


def test_labels_in_one_pass_equal_one_by_one(llamas):
    from drivemetrics.lane.llamas_scoring import llamas_labels_lanes

    root, _ = llamas
    paths = sorted((root / "cases" / "labels" / "valid").rglob("*.json"))
    labels = [read_llamas_label(p) for p in paths]
    for compat in ("reference", "default"):
        batched = llamas_labels_lanes(labels, compat=compat, wheres=[str(p) for p in paths])
        for path, label, (lanes, notes) in zip(paths, labels, batched, strict=True):
            want_lanes, want_notes = llamas_label_lanes(label, compat=compat, where=str(path))
            assert notes == want_notes
            assert [lane.tobytes() for lane in lanes] == [lane.tobytes() for lane in want_lanes]


def test_labels_in_one_pass_raise_the_first_failing_labels_error():
    from drivemetrics.lane.llamas_scoring import llamas_labels_lanes

    good = {"lanes": [_lane("l0", 500), _lane("r0", 800)]}
    vertical = {"lane_id": "r0", "markers": [_marker(700, 700, 700, 600, 5.0), _marker(700, 560, 700, 460, 15.0)]}
    low = {"lane_id": "l0", "markers": [_marker(500, 900, 520, 800, 5.0), _marker(530, 700, 540, 600, 15.0)]}
    high = {"lane_id": "r0", "markers": [_marker(700, 290, 690, 250, -1.0), _marker(690, 260, 680, 200, 30.0)]}
    # a marker below the image comes before the all-vertical lane after it (the official order), labels in order
    labels = [good, {"lanes": [high]}, {"lanes": [low, vertical]}]
    with pytest.raises(ValueError, match="b lane r0: fewer than 2 points"):
        llamas_labels_lanes(labels, compat="reference", wheres=["a", "b", "c"])
    with pytest.raises(ValueError, match="c lane l0: a marker reaches row 900"):
        llamas_labels_lanes([good, labels[2]], compat="reference", wheres=["a", "c"])
    with pytest.raises(ValueError, match=r"min\(\) arg is an empty sequence"):
        llamas_labels_lanes([good, {"lanes": [vertical]}], compat="reference", wheres=["a", "c"])
    out = llamas_labels_lanes(labels, compat="default", wheres=["a", "b", "c"])
    assert [len(lanes) for lanes, _ in out] == [2, 0, 2]


def test_fitpack_calls_give_splprep_and_splev_floats():
    from scipy.interpolate import splev, splprep

    from drivemetrics.lane import llamas_scoring

    assert llamas_scoring._fitpack_calls() is not None  # this SciPy: the direct calls are used
    rng = np.random.default_rng(3)
    for _ in range(300):
        m = int(rng.integers(2, 40))
        p = np.stack([rng.uniform(0, 1276) + np.cumsum(rng.normal(0, 20, m)), np.sort(rng.uniform(0, 717, m))[::-1]], 1)
        if rng.random() < 0.3:
            p = np.round(p)
        got = llamas_interpolate(p)
        # the evaluator's interpolate_lane: consecutive repeats removed, splprep on lists, splev
        p = p[np.r_[True, (p[1:] != p[:-1]).any(axis=1)]]
        if len(p) < 2:
            continue
        tck, _ = splprep([p[:, 0].tolist(), p[:, 1].tolist()], s=0, t=50, k=min(3, len(p) - 1))
        want = np.array(splev(np.linspace(0.0, 1.0, 50), tck)).T
        assert got.tobytes() == want.tobytes()


def test_interpolate_without_the_fitpack_calls_is_the_same(monkeypatch):
    from drivemetrics.lane import llamas_scoring

    p = np.array([[600.0, 700.0], [612.5, 640.0], [630.0, 560.0], [640.0, 500.0]])
    fast = llamas_interpolate(p)
    monkeypatch.setattr(llamas_scoring, "_fitpack_calls", lambda: None)
    assert llamas_interpolate(p).tobytes() == fast.tobytes()


def test_culane_files_read_at_once_equal_line_by_line(tmp_path):
    from drivemetrics._internal.limits import set_limits

    path = tmp_path / "a.lines.txt"
    path.write_text("1.5 700 2.25 650 3 600\n\n640 716\n-3e2 1e3 4 5\n")
    lanes = read_culane_file(path)
    assert [lane.tolist() for lane in lanes] == [
        [[1.5, 700.0], [2.25, 650.0], [3.0, 600.0]],
        [],
        [[640.0, 716.0]],
        [[-300.0, 1000.0], [4.0, 5.0]],
    ]
    assert lanes[1].shape == (0, 2)
    # a bad line is still named, whichever check finds it
    for text, message in [
        ("1 2 3 4\n1 2 3\n", r":2: a lane needs an even number"),
        ("1 2 3 4\n1 nan\n", r":2: a lane needs an even number of finite"),
        ("1 2\n1 x\n", r":2: expected numbers"),
        ("1 2\n1 2e12\n", r":2: the coordinate 2e\+12 px is larger than max_abs_coordinate"),
    ]:
        path.write_text(text)
        with pytest.raises(ValueError, match=message):
            read_culane_file(path)
    path.write_text("1 2 3 4 5 6\n")
    with set_limits(max_lane_points=2), pytest.raises(ValueError, match=r":1: 3 points in one lane"):
        read_culane_file(path)
    path.write_text("")
    assert read_culane_file(path) == []
