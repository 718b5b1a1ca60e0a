"""CurveLanes (issue 47): the vega lane metric's spline, kernels and default-mode fixes, against CondLaneNet's copy
of the metric (the fixture's expected.json) where the fixture is present."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

pytest.importorskip("cv2", reason="CurveLanes draws lanes with opencv-python-headless (the culane extra)")

from drivemetrics.lane.curvelanes import (
    SCORE_THRESHOLDS,
    CurveLanesMetrics,
    curvelanes_counts,
    curvelanes_f1,
    curvelanes_matches,
    curvelanes_scores,
    curvelanes_spline,
)
from drivemetrics.lane.evaluate import evaluate_curvelanes_dirs
from drivemetrics.lane.io import (
    curvelanes_image_sizes,
    jpeg_size,
    pad_lanes,
    read_curvelanes_label,
    read_curvelanes_list,
    read_curvelanes_pred,
)


@pytest.fixture(scope="module")
def curvelanes(fixtures_dir):
    root = fixtures_dir / "curvelanes"
    if not root.is_dir():
        pytest.skip("curvelanes fixture absent")
    return root, json.loads((root / "expected.json").read_text())


def _vega_spline(lane):
    """vega's calc_params + spline_interp, transcribed loop by loop (the per-point reference of the kernel)."""
    n = len(lane)
    x, y = [p[0] for p in lane], [p[1] for p in lane]
    if n == 2:
        h0 = np.sqrt((x[0] - x[1]) * (x[0] - x[1]) + (y[0] - y[1]) * (y[0] - y[1]))
        params = [(x[0], (x[1] - x[0]) / h0, 0, 0, y[0], (y[1] - y[0]) / h0, 0, 0, h0)]
    else:
        h = [np.sqrt((x[i] - x[i + 1]) ** 2 + (y[i] - y[i + 1]) ** 2) for i in range(n - 1)]
        h = [
            np.sqrt((x[i] - x[i + 1]) * (x[i] - x[i + 1]) + (y[i] - y[i + 1]) * (y[i] - y[i + 1])) for i in range(n - 1)
        ]
        a, b, c, dx_, dy_ = [], [], [], [], []
        for i in range(n - 2):
            a.append(h[i])
            b.append(2 * (h[i] + h[i + 1]))
            c.append(h[i + 1])
            tx = 6 * ((x[i + 2] - x[i + 1]) / h[i + 1] - (x[i + 1] - x[i]) / h[i])
            ty = 6 * ((y[i + 2] - y[i + 1]) / h[i + 1] - (y[i + 1] - y[i]) / h[i])
            if i == 0:
                c[i] /= b[i]
                dx_.append(tx / b[i])
                dy_.append(ty / b[i])
            else:
                base = b[i] - a[i] * c[i - 1]
                c[i] /= base
                dx_.append((tx - a[i] * dx_[i - 1]) / base)
                dy_.append((ty - a[i] * dy_[i - 1]) / base)
        mx, my = np.zeros(n), np.zeros(n)
        mx[n - 2], my[n - 2] = dx_[n - 3], dy_[n - 3]
        for i in range(n - 4, -1, -1):
            mx[i + 1] = dx_[i] - c[i] * mx[i + 2]
            my[i + 1] = dy_[i] - c[i] * my[i + 2]
        mx[0] = mx[-1] = my[0] = my[-1] = 0
        params = []
        for i in range(n - 1):
            bx = (x[i + 1] - x[i]) / h[i] - (2 * h[i] * mx[i] + h[i] * mx[i + 1]) / 6
            by = (y[i + 1] - y[i]) / h[i] - (2 * h[i] * my[i] + h[i] * my[i + 1]) / 6
            params.append(
                (x[i], bx, mx[i] / 2, (mx[i + 1] - mx[i]) / (6 * h[i]), y[i], by, my[i] / 2,
                 (my[i + 1] - my[i]) / (6 * h[i]), h[i])
            )  # fmt: skip
    out = []
    for ax, bx, cx, dx, ay, by, cy, dy, hh in params:
        t = 0
        while t < hh:
            out.append((ax + bx * t + cx * t * t + dx * t * t * t, ay + by * t + cy * t * t + dy * t * t * t))
            t += 1
    out.append((x[-1], y[-1]))
    return np.array(out)


def test_spline_equals_the_official_loops_bit_for_bit():
    rng = np.random.default_rng(3)
    lanes = [np.cumsum(rng.uniform(1, 30, size=(n, 2)), axis=0) for n in (2, 3, 3, 5, 9, 9, 14)]
    for lane, got in zip(lanes, curvelanes_spline(lanes), strict=True):
        want = _vega_spline(lane.tolist())
        assert got.shape == want.shape
        assert np.array_equal(got, want)


def test_spline_keeps_short_lanes_and_makes_nan_on_a_zero_chord():
    one = np.array([[3.0, 4.0]])
    assert np.array_equal(curvelanes_spline([one])[0], one)
    assert len(curvelanes_spline([np.array([[1.0, 1.0], [1.0, 1.0]])])[0]) == 1  # zero length: its end point only
    repeated = np.array([[0.0, 0.0], [5.0, 5.0], [5.0, 5.0], [9.0, 20.0]])
    assert np.isnan(curvelanes_spline([repeated])[0]).any()


def test_epsilon_of_the_reference_and_the_exact_default():
    one = torch.tensor(1)
    ref = curvelanes_scores(one, one, one, compat="reference")
    assert ref["recall"].item() == 0.9999999999999998  # vega: hits / (#GT + eps)
    assert curvelanes_scores(one, one, one)["recall"].item() == 1.0
    zero = torch.tensor(0)
    assert curvelanes_scores(zero, zero, zero)["f1"].item() == 0.0
    assert curvelanes_scores(zero, zero, zero, compat="reference")["f1"].item() == 0.0


def _frames(root, names, sizes):
    gts, preds, scores, p_sizes = [], [], [], []
    for name in names:
        gts.append(read_curvelanes_label(root / "cases/valid/labels" / f"{name}.lines.json", "reference")[0])
        p, s, size = read_curvelanes_pred(root / "cases/pred" / f"{name}.lines.json")
        preds.append(p)
        scores.append(s)
        p_sizes.append(size)
    n = max(len(p) for p in preds)
    score_t = torch.full((len(names), n), torch.nan, dtype=torch.float64)
    mask = torch.zeros(len(names), n, dtype=torch.bool)
    for i, (p, s) in enumerate(zip(preds, scores, strict=True)):
        score_t[i, : len(s)] = torch.tensor(s, dtype=torch.float64)
        mask[i, : len(p)] = torch.tensor([len(lane) > 0 for lane in p])
    return {
        "preds": pad_lanes(preds)[0],
        "target": pad_lanes(gts)[0],
        "image_size": torch.tensor([sizes[n] for n in names], dtype=torch.float64),
        "preds_size": torch.tensor(p_sizes, dtype=torch.float64),
        "scores": score_t,
        "preds_mask": mask,
    }


def test_reference_counts_per_frame_and_threshold(curvelanes):
    root, expected = curvelanes
    names = read_curvelanes_list(root / "cases/valid")
    inputs = _frames(root, names, curvelanes_image_sizes(root / "cases/valid", names))
    m = curvelanes_matches(**inputs, score_thresholds=SCORE_THRESHOLDS, compat="reference")
    for i, name in enumerate(names):
        per = expected["frames"][name]["per_threshold"]
        for j, t in enumerate(SCORE_THRESHOLDS):
            e = per[f"{t:g}"]
            got = (int(m["hits"][i, j]), int(m["num_pred"][i, j]), int(m["num_gt"][i]))
            assert got == (e["hit"], e["pr_num"], e["gt_num"]), (name, t)


def test_batched_equals_frame_by_frame_and_the_metric_class(curvelanes):
    root, _ = curvelanes
    names = read_curvelanes_list(root / "cases/valid")[:20]
    inputs = _frames(root, names, curvelanes_image_sizes(root / "cases/valid", names))
    batch = curvelanes_counts(**inputs)
    for i in range(len(names)):
        one = curvelanes_counts(**{k: v[i : i + 1] for k, v in inputs.items()})
        for key in ("tp", "fp", "fn"):
            assert torch.equal(one[key][0], batch[key][i])
    metric = CurveLanesMetrics()
    for k in range(0, 20, 7):
        metric.update(**{key: v[k : k + 7] for key, v in inputs.items()})
    got, want = metric.compute(), curvelanes_f1(**inputs)
    for key in want:
        assert float(got[key]) == float(want[key])


def test_evaluate_matches_the_official_totals(curvelanes):
    root, expected = curvelanes
    result = evaluate_curvelanes_dirs(root / "cases/pred", root / "cases/valid", compat="reference")
    for key in ("hit_num", "pr_num", "gt_num", "precision", "recall"):
        assert result["pooled"][key] == pytest.approx(expected["primary"][key], abs=1e-12)
    assert result["pooled"]["f1"] == pytest.approx(expected["primary"]["f1_measure"], abs=1e-12)
    assert result["vega_max_f1"] == pytest.approx(expected["vega_max_f1_over_thresholds"]["f1_measure"], abs=1e-12)
    assert result["vega_max_f1_threshold"] == expected["vega_max_f1_over_thresholds"]["at_threshold"]


def test_default_mode_on_the_fixture_differs_by_the_epsilon_only(curvelanes):
    root, _ = curvelanes
    ref = evaluate_curvelanes_dirs(root / "cases/pred", root / "cases/valid", compat="reference", per_image=True)
    default = evaluate_curvelanes_dirs(root / "cases/pred", root / "cases/valid", per_image=True)
    assert default["per_frame"] == ref["per_frame"]
    assert default["pooled"]["f1"] == 2 * 105 / (174 + 197)  # exact fractions
    assert ref["pooled"]["f1"] != default["pooled"]["f1"]
    assert abs(ref["pooled"]["f1"] - default["pooled"]["f1"]) < 1e-12


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("gt_duplicate_point", "repeats a point"),
        ("pred_duplicate_point", "repeats a point"),
        ("gt_empty_lane", "empty"),
    ],
)
def test_crash_cases_reference_one_line_default_scores(curvelanes, case, message):
    root, _ = curvelanes
    case_dir = root / "crash_cases" / case
    with pytest.raises(ValueError, match=message) as info:
        evaluate_curvelanes_dirs(case_dir / "pred", case_dir / "valid", compat="reference")
    assert "\n" not in str(info.value)
    result = evaluate_curvelanes_dirs(case_dir / "pred", case_dir / "valid", per_image=True)
    assert result["pooled"]["gt_num"] >= 1


def test_repeated_points_are_merged_in_the_default_mode():
    gt = torch.tensor([[[[1000.0, 1439.0], [1100.0, 1000.0], [1200.0, 700.0]]]])
    repeated = torch.tensor([[[[1000.0, 1439.0], [1100.0, 1000.0], [1100.0, 1000.0], [1200.0, 700.0]]]])
    size = torch.tensor([[2560.0, 1440.0]])
    assert curvelanes_counts(repeated, gt, image_size=size) == curvelanes_counts(gt, gt, image_size=size)
    with pytest.raises(ValueError, match="NaN"):
        curvelanes_counts(repeated, gt, image_size=size, compat="reference")


def test_scores_filter_strictly_and_keep_unscored_lanes():
    gt = torch.tensor([[[[1000.0, 1439.0], [1200.0, 700.0]]]]).expand(1, 3, 2, 2).clone()
    gt[0, 1, :, 0] += 500
    gt[0, 2, :, 0] += 1000
    scores = torch.tensor([[0.5, torch.nan, 0.7]], dtype=torch.float64)
    m = curvelanes_matches(gt, gt, image_size=torch.tensor([[2560.0, 1440.0]]), scores=scores,
                           score_thresholds=(0.4, 0.5, 0.9))  # fmt: skip
    assert m["num_pred"].tolist() == [[3, 2, 1]]  # 0.5 is not > 0.5; the unscored lane always counts
    assert m["hits"].tolist() == [[3, 2, 1]]


def test_predictions_in_their_own_resolution():
    gt = torch.tensor([[[[1000.0, 1439.0], [1200.0, 700.0]]]])
    half = gt / 2
    size = torch.tensor([[2560.0, 1440.0]])
    m = curvelanes_matches(half, gt, image_size=size, preds_size=size / 2)
    assert m["hits"].tolist() == [[1]]


def test_image_sizes_from_jpeg_headers_then_json_then_the_option(tmp_path):
    cv2 = pytest.importorskip("cv2")
    (tmp_path / "images").mkdir()
    cv2.imwrite(str(tmp_path / "images" / "a.jpg"), np.zeros((20, 30, 3), dtype=np.uint8))
    assert jpeg_size(tmp_path / "images" / "a.jpg") == (30, 20)
    (tmp_path / "image_sizes.json").write_text(json.dumps({"b": {"width": 1570, "height": 660}}))
    sizes = curvelanes_image_sizes(tmp_path, ["a", "b", "c"], (1280.0, 720.0))
    assert sizes == {"a": (30.0, 20.0), "b": (1570.0, 660.0), "c": (1280.0, 720.0)}
    with pytest.raises(ValueError, match="--image-size"):
        curvelanes_image_sizes(tmp_path, ["c"])


def test_bad_prediction_file_is_one_line(tmp_path):
    path = tmp_path / "a.lines.json"
    path.write_text(json.dumps({"Lines": [{"score": "high", "points": []}]}))
    with pytest.raises(ValueError, match="score"):
        read_curvelanes_pred(path)
    path.write_text(json.dumps({"Lines": [[{"x": 1}]]}))
    with pytest.raises(ValueError, match="lane point"):
        read_curvelanes_pred(path)


def test_max_f1_takes_the_best_threshold():
    metric = CurveLanesMetrics(score_thresholds=(0.1, 0.9))
    gt = torch.tensor([[[[1000.0, 1439.0], [1200.0, 700.0]]]])
    preds = torch.cat([gt, gt + torch.tensor([600.0, 0.0])], 1)
    metric.update(preds, gt, image_size=torch.tensor([[2560.0, 1440.0]]), scores=torch.tensor([[0.95, 0.5]]))
    out = metric.compute()
    assert out["f1"].item() == 1.0  # at 0.5: the false lane is dropped
    assert out["max_f1"].item() == 1.0


# ------------------------------------------------------------------------------------------- UFLDv2's C++ variant


def test_ufldv2_variant_equals_the_cpp_tool(curvelanes):
    root, expected = curvelanes
    want = expected["ufldv2_cpp_variant"]
    for compat in ("reference", "default"):
        got = evaluate_curvelanes_dirs(
            root / "cases" / "pred", root / "cases" / "valid", protocol="ufldv2", compat=compat, per_image=True
        )
        for key in ("tp", "fp", "fn", "precision", "recall", "f1"):
            assert got["ufldv2"][key] == want["pooled"][key], (compat, key)
        frames = {name: frame["ufldv2"] for name, frame in got["per_frame"].items()}
        assert frames == want["frames"]
        # the one frame the C++ rules score differently from the vega metric at score > 0.5
        (differs,) = want["frames_differing_from_condlanenet_metric_at_0.5"]
        assert frames[differs]["tp"] != got["per_frame"][differs]["hit"]


def test_ufldv2_sorts_gt_by_y_and_reads_through_float_factors():
    from drivemetrics.lane.curvelanes_scoring import ufldv2_counts

    size = np.array([[2560.0, 1440.0]])
    gt = np.array([[1000.0, 1439.0], [1100.0, 1000.0], [1300.0, 600.0]])
    pred = gt + np.array([40.0, 0.0])  # 3.5 px at 224 / 2560: IoU below 0.5 with a 5 px line
    folded = gt[[0, 2, 1]]  # the GT's points out of order: sorted by y it is the lane, as given it folds back
    assert ufldv2_counts([[folded]], size, [[gt]], size).tolist() == [[1, 0, 0]]
    assert ufldv2_counts([[gt]], size, [[folded]], size).tolist() == [[0, 1, 1]]  # predictions are not sorted
    assert ufldv2_counts([[gt]], size, [[pred]], size).tolist() == [[0, 1, 1]]
    # a GT lane without points (an empty line of the converter) is a lane: never matched, one FN
    assert ufldv2_counts([[gt]], size, [[gt]], size, empty_gt=[1]).tolist() == [[1, 0, 1]]
    # the frame is scaled to 2560 x 1440 first: a 1280 x 720 frame scores as the same lanes at half the coordinates
    half = np.array([[1280.0, 720.0]])
    assert ufldv2_counts([[gt / 2]], half, [[gt]], size).tolist() == [[1, 0, 0]]


def test_protocol_is_checked(curvelanes):
    root, _ = curvelanes
    with pytest.raises(ValueError, match="protocol"):
        evaluate_curvelanes_dirs(root / "cases" / "pred", root / "cases" / "valid", protocol="ufld")  # type: ignore[arg-type]


def test_device_cpu_equals_numpy(curvelanes):
    from drivemetrics.lane.curvelanes_scoring import mask_ious

    rng = np.random.default_rng(0)
    a, c = (rng.random((4, 300)) < 0.3).astype(np.uint8), (rng.random((5, 300)) < 0.3).astype(np.uint8)
    c[4] = 0  # an empty drawing
    assert np.array_equal(mask_ious(a, c, device=torch.device("cpu")), mask_ious(a, c))
    root, _ = curvelanes
    args = (root / "cases" / "pred", root / "cases" / "valid")
    assert evaluate_curvelanes_dirs(*args, device="cpu", per_image=True) == evaluate_curvelanes_dirs(
        *args, per_image=True
    )
