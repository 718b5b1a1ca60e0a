"""OpenLane (v1) 3D lane kernels: equal to the official evaluator on its fixture (compat reference), equal to a
plain per-frame numpy loop on random frames, batched == one by one, and one test per default-mode fix that fails
under the official rule."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from drivemetrics.lane3d import assignment, pairs, resample
from drivemetrics.lane3d import openlane as ol
from drivemetrics.lane3d.evaluate import evaluate_openlane3d_frames, pack_lanes
from drivemetrics.lane3d.io import Lane3DFrame, read_openlane_gt, read_openlane_pred, read_test_list

Y = np.arange(3.0, 103.0)


# ----------------------------------------------------------------------------------------------------------------
# a plain numpy loop, one frame at a time, written from the rules of the fixture README (not from the kernels)


def _interp(lane: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    order = np.argsort(lane[:, 1], kind="mergesort")
    y, x, z = lane[order, 1], lane[order, 0], lane[order, 2]
    idx = np.clip(np.searchsorted(y, Y), 1, len(y) - 1)
    lo, hi = idx - 1, idx
    with np.errstate(divide="ignore", invalid="ignore"):
        xs = (x[hi] - x[lo]) / (y[hi] - y[lo]) * (Y - y[lo]) + x[lo]
        zs = (z[hi] - z[lo]) / (y[hi] - y[lo]) * (Y - y[lo]) + z[lo]
    return xs, zs


def _prepare(lanes: list[np.ndarray], categories: list[int], visibility: list[np.ndarray] | None):
    out = []
    for k, lane in enumerate(lanes):
        if visibility is not None:
            lane = lane[visibility[k] > 0]
        if lane.shape[0] < 2 or not (lane[0, 1] < 102 and lane[-1, 1] > 3):
            continue
        keep = (lane[:, 1] > 0) & (lane[:, 1] < 200) & (lane[:, 0] > -10) & (lane[:, 0] < 10)
        lane = lane[keep]
        if lane.shape[0] < 2:
            continue
        xs, zs = _interp(lane)
        vis = (xs >= -10) & (xs <= 10) & (lane[:, 1].min() <= Y) & (lane[:, 1].max() >= Y)
        if vis.sum() > 1:
            out.append((xs, zs, vis, categories[k]))
    return out


def _frame_loop(pred, pred_cat, gt, gt_cat, gt_vis):
    """``(r, p, c, n_gt, n_pred, n_match, errors)`` of one frame, the evaluator's way (integer cost, gate after)."""
    from scipy.optimize import linear_sum_assignment

    g, p = _prepare(gt, gt_cat, gt_vis), _prepare(pred, pred_cat, None)
    cost = np.zeros((len(g), len(p)))
    match = np.zeros((len(g), len(p)))
    errors = np.zeros((len(g), len(p), 4))
    for i, (gx, gz, gv, _) in enumerate(g):
        for j, (px, pz, pv, _) in enumerate(p):
            dx, dz = np.abs(gx - px), np.abs(gz - pz)
            both, neither = gv & pv, ~gv & ~pv
            d = np.sqrt(dx**2 + dz**2)
            d[neither] = 0
            d[~both & ~neither] = 1.5
            total = d.sum()
            cost[i, j] = 1 if 0 < total < 1 else int(total)
            match[i, j] = (both & (d < 1.5)).sum()
            for e, (values, part) in enumerate(
                [(dx, slice(0, 38)), (dx, slice(38, 100)), (dz, slice(0, 38)), (dz, slice(38, 100))]
            ):
                n = both[part].sum()
                with np.errstate(invalid="ignore"):  # NaN x 0 = NaN, as in the tool
                    errors[i, j, e] = (values[part] * both[part]).sum() / n if n else -1
    r = pc = c = m = 0
    errs = []
    if len(g) and len(p):
        for i, j in zip(*linear_sum_assignment(cost), strict=True):
            if cost[i, j] >= 150:
                continue
            m += 1
            r += match[i, j] / g[i][2].sum() >= 0.75
            pc += match[i, j] / p[j][2].sum() >= 0.75
            c += p[j][3] == g[i][3] or (p[j][3] == 20 and g[i][3] == 21)
            errs.append(errors[i, j])
    return [r, pc, c, len(g), len(p), m], errs


def _random_frame(rng: np.random.Generator):
    """Ground-frame lanes: smooth curves, 2-point lanes, lanes out of range, reversed, hidden stretches."""

    def lane() -> np.ndarray:
        n = int(rng.choice([2, 3, 8, 20]))
        y0 = rng.uniform(-20, 90)
        y = np.sort(y0 + rng.uniform(0, 80, n)) if n > 2 else np.array([y0, y0 + rng.uniform(5, 60)])
        x = rng.uniform(-12, 12) + rng.uniform(-0.05, 0.05) * (y - y0) + 0.002 * (y - y0) ** 2 * rng.uniform(-1, 1)
        z = rng.uniform(-0.5, 0.5) + 0.01 * (y - y0) * rng.uniform(-1, 1)
        pts = np.stack([x, y, z], 1)
        if n > 2 and rng.random() < 0.15:  # a repeated y: resampled to NaN / inf beyond the lane's end
            pts[1, 1] = pts[0, 1]
            pts[1, 0] += 0.3
        return pts[::-1].copy() if rng.random() < 0.1 else pts

    n_gt, n_pred = int(rng.integers(0, 5)), int(rng.integers(0, 5))
    gt = [lane() for _ in range(n_gt)]
    vis = [(rng.random(len(l)) > 0.2).astype(float) for l in gt]
    pred = []
    for k in range(n_pred):
        if k < n_gt and rng.random() < 0.7:
            pred.append(gt[k] + rng.normal(0, rng.choice([0.05, 0.5, 1.5]), gt[k].shape))
        else:
            pred.append(lane())
    cats = [20, 21, 1, 2]
    gt_cat = [int(rng.choice(cats)) for _ in gt]
    pred_cat = [int(rng.choice(cats)) for _ in pred]
    return pred, pred_cat, gt, gt_cat, vis


def _pack(frames):
    pred, pred_len = pack_lanes([f[0] for f in frames])
    gt, gt_len = pack_lanes([f[2] for f in frames])
    vis = torch.zeros(gt.shape[:3], dtype=torch.float64)
    pc = torch.zeros(pred.shape[:2], dtype=torch.long)
    gc = torch.zeros(gt.shape[:2], dtype=torch.long)
    for b, f in enumerate(frames):
        for k, v in enumerate(f[4]):
            vis[b, k, : len(v)] = torch.from_numpy(v)
        pc[b, : len(f[1])] = torch.tensor(f[1], dtype=torch.long)
        gc[b, : len(f[3])] = torch.tensor(f[3], dtype=torch.long)
    preds = {"points": pred, "labels": pc, "lengths": pred_len}
    return preds, {"points": gt, "labels": gc, "lengths": gt_len, "visibility": vis}


def test_reference_kernels_equal_a_per_frame_numpy_loop():
    rng = np.random.default_rng(0)
    frames = [_random_frame(rng) for _ in range(80)]
    out = ol.openlane3d_matches(*_pack(frames), compat="reference")
    fb = out["pairs"][:, 0]
    assert out["pair_errors"].isnan().any()  # the tool's NaN errors (repeated y) are reproduced, then skipped
    assert (out["counts"][:, 3] == 0).any()
    assert (out["counts"][:, 4] == 0).any()
    assert out["counts"][:, 5].sum() > 30  # and plenty of pairs
    for b, frame in enumerate(frames):
        counts, errors = _frame_loop(*frame)
        assert out["counts"][b].tolist() == counts, b
        got = out["pair_errors"][fb == b].numpy()
        np.testing.assert_allclose(np.sort(got, 0), np.sort(np.array(errors).reshape(-1, 4), 0), atol=1e-9)


@pytest.mark.parametrize("compat", ["reference", "default"])
def test_batched_equals_one_by_one(compat):
    rng = np.random.default_rng(1)
    frames = [_random_frame(rng) for _ in range(16)]
    batched = ol.openlane3d_matches(*_pack(frames), compat=compat)
    for b, frame in enumerate(frames):
        single = ol.openlane3d_matches(*_pack([frame]), compat=compat)
        assert batched["counts"][b].tolist() == single["counts"][0].tolist()
        torch.testing.assert_close(batched["error_sums"][b], single["error_sums"][0], rtol=0, atol=1e-12)


def test_two_point_lane_resampling_is_linear_with_extrapolation_inside_its_range():
    lane = torch.tensor([[[[1.0, 10.0, 0.0], [3.0, 20.0, 1.0]]]], dtype=torch.float64)
    out = ol.openlane3d_resample(lane)
    visible = out["visible"][0, 0]
    assert visible.nonzero().flatten().tolist() == list(range(7, 18))  # y = 10 .. 20
    assert out["x"][0, 0, 7 + 5].item() == pytest.approx(2.0)
    assert out["z"][0, 0, 7 + 5].item() == pytest.approx(0.5)


def test_gt_to_ground_drops_the_camera_offset_as_the_evaluator():
    extrinsic = torch.eye(4, dtype=torch.float64)
    extrinsic[:3, 3] = torch.tensor([1.5, -0.3, 2.1], dtype=torch.float64)
    points = torch.tensor([[[[20.0, -2.0, -2.1]]]], dtype=torch.float64)  # camera: 20 m ahead, 2 m right
    assert ol.openlane3d_gt_to_ground(points, extrinsic[None]).tolist() == [[[[2.0, 20.0, 0.0]]]]


# ----------------------------------------------------------------------------------------------------------------
# the official fixture


def _fixture(fixtures_dir: Path) -> Path:
    path = fixtures_dir / "openlane3d"
    if not (path / "expected.json").is_file():
        pytest.skip("openlane3d fixtures absent")
    return path


def _frames(path: Path):
    lines = read_test_list(path / "cases" / "test_list.txt")
    gt = [read_openlane_gt(path / "cases" / "gt" / line.replace("jpg", "json")) for line in lines]
    pred = [read_openlane_pred(path / "cases" / "pred" / line.replace("jpg", "json")) for line in lines]
    return gt, pred


def test_reference_equals_the_official_evaluator_on_the_fixture(fixtures_dir):
    path = _fixture(fixtures_dir)
    expected = json.loads((path / "expected.json").read_text())
    out = evaluate_openlane3d_frames(*_frames(path), compat="reference")
    for key, value in expected["metrics"].items():
        if key.startswith("n_"):
            assert out["metrics"][key] == value, key
        else:
            assert out["metrics"][key] == pytest.approx(value, abs=1e-6), key
    for got, want in zip(out["per_frame"], expected["per_frame"], strict=True):
        assert got["file_path"] == want["file_path"]
        for key in ("r_lane", "p_lane", "c_lane", "cnt_gt", "cnt_pred", "match_num"):
            assert got[key] == want[key], (want["index"], key)
        for key in pairs.ERROR_NAMES:
            np.testing.assert_allclose(sorted(got[key]), sorted(want[key]), atol=1e-9)


def _run(gt, pred, fixes):
    """The fixture scored with a chosen set of fixes (through the private switch of the kernels)."""
    import drivemetrics.lane3d.evaluate as ev

    return ev._report([f.file_path for f in pred], ev._score_frames(gt, pred, frozenset(fixes), "cpu", 256, False))


def _changed_frames(a, b):
    keys = ("r_lane", "p_lane", "c_lane", "cnt_gt", "cnt_pred", "match_num", *pairs.ERROR_NAMES)
    return [
        i
        for i, (x, y) in enumerate(zip(a["per_frame"], b["per_frame"], strict=True))
        if any(x[k] != y[k] for k in keys)
    ]


def test_each_default_fix_changes_exactly_the_frames_documented(fixtures_dir):
    """The measured effects quoted on the docs page (docs/pages/lane3d.md)."""
    gt, pred = _frames(_fixture(fixtures_dir))
    official = _run(gt, pred, ())
    assert _changed_frames(official, _run(gt, pred, {"curb"})) == [7]
    assert _changed_frames(official, _run(gt, pred, {"float_cost"})) == [6]
    assert _changed_frames(official, _run(gt, pred, {"gate_first"})) == [25]
    assert _changed_frames(official, _run(gt, pred, {"dont_care"})) == [12, 13, 20, 22, 25, 26, 32, 35, 51, 57]
    assert _changed_frames(official, _run(gt, pred, {"order_free"})) == [5, 12]
    default = evaluate_openlane3d_frames(gt, pred)["metrics"]
    assert default["n_precision_hits"] == 123
    assert default["n_pred"] == 186
    assert default["n_category_correct"] == 115
    assert default["n_recall_hits"] == 83
    assert default["F_score"] == pytest.approx(0.573378, abs=1e-6)


def test_fix_curb_symmetric():
    """A predicted right curb on a left curb counts as correct, as the reverse does (the tool: only 20 on 21)."""
    lane = torch.tensor([[[[0.0, 3.0, 0.0], [0.0, 52.0, 0.0]]]])
    for pred_cat, gt_cat in ((20, 21), (21, 20)):
        default = ol.openlane3d_matches(
            {"points": lane, "labels": torch.tensor([[pred_cat]])}, {"points": lane, "labels": torch.tensor([[gt_cat]])}
        )
        assert default["counts"][0, 2].item() == 1
    reference = ol.openlane3d_matches(
        {"points": lane, "labels": torch.tensor([[21]])},
        {"points": lane, "labels": torch.tensor([[20]])},
        compat="reference",
    )
    assert reference["counts"][0, 2].item() == 0
    other = ol.openlane3d_matches(
        {"points": lane, "labels": torch.tensor([[20]])}, {"points": lane, "labels": torch.tensor([[1]])}
    )
    assert other["counts"][0, 2].item() == 0  # a curb is not a lane marking


def test_fix_float_cost_picks_the_closer_assignment(fixtures_dir):
    """Frame 6: the truncated costs tie two assignments apart; the float cost chooses the closer one."""
    gt, pred = _frames(_fixture(fixtures_dir))
    frame = [gt[6]], [pred[6]]
    official = _run(*frame, ())["per_frame"][0]
    fixed = _run(*frame, {"float_cost"})["per_frame"][0]
    total = lambda row: sum(row["x_error_close"]) + sum(row["x_error_far"])  # noqa: E731
    assert total(fixed) < total(official)


def test_fix_gate_before_the_assignment():
    """Pairs costing 150 or more take no part: the tool's maximum-cardinality assignment keeps (10 + 160) over
    two valid pairs (100 + 100), then drops the 160 pair: one match instead of two."""
    cost = np.array([[10.0, 100.0], [100.0, 160.0]])
    rows, cols = assignment._assign(cost, cost < 150)
    assert sorted(zip(rows.tolist(), cols.tolist(), strict=True)) == [(0, 1), (1, 0)]
    rows, cols = assignment._assign(cost, None)  # the tool
    assert sorted(zip(rows.tolist(), cols.tolist(), strict=True)) == [(0, 0), (1, 1)]


def test_fix_dont_care_a_copy_of_the_gt_scores_one(fixtures_dir):
    """Every annotated point of every GT lane (visible or not), moved to the ground frame, as the prediction."""
    gt, _ = _frames(_fixture(fixtures_dir))
    copies = []
    for frame in gt:
        extrinsic = torch.from_numpy(frame.extrinsic)[None]
        lanes = [
            ol.openlane3d_gt_to_ground(torch.from_numpy(p)[None, None], extrinsic)[0, 0].numpy() for p in frame.points
        ]
        copies.append(Lane3DFrame(frame.file_path, lanes, list(frame.categories)))
    default = evaluate_openlane3d_frames(gt, copies)["metrics"]
    assert default["F_score"] == 1.0
    assert default["category_accuracy"] == 1.0
    reference = evaluate_openlane3d_frames(gt, copies, "reference")["metrics"]
    assert reference["precision"] < 0.6  # 103 / 173 (OpenLane #54)


def test_fix_dont_care_keeps_a_visible_only_prediction_perfect(fixtures_dir):
    """The prediction that stops where the GT turns invisible (what models output) still scores 1."""
    gt, _ = _frames(_fixture(fixtures_dir))
    copies = []
    for frame in gt:
        extrinsic = torch.from_numpy(frame.extrinsic)[None]
        lanes = []
        for p, v in zip(frame.points, frame.visibility or [], strict=True):
            ground = ol.openlane3d_gt_to_ground(torch.from_numpy(p)[None, None], extrinsic)[0, 0].numpy()
            lanes.append(ground[v > 0])
        copies.append(Lane3DFrame(frame.file_path, lanes, list(frame.categories)))
    for compat in ("default", "reference"):
        assert evaluate_openlane3d_frames(gt, copies, compat)["metrics"]["F_score"] == 1.0


def test_fix_order_free_a_lane_listed_far_to_near_is_evaluated():
    """The tool checks the first point (< 102 m) and the last (> 3 m) in file order: a lane listed far to near
    (here 110 m first, 2 m last) fails it and is dropped, though the resampling sorts by y anyway."""
    lane = torch.tensor([[[[0.0, 2.0, 0.0], [0.0, 110.0, 0.0]]]])
    reversed_lane = lane.flip(2)
    default = ol.openlane3d_matches(
        {"points": reversed_lane, "labels": torch.tensor([[1]])}, {"points": lane, "labels": torch.tensor([[1]])}
    )
    assert default["counts"][0].tolist() == [1, 1, 1, 1, 1, 1]
    reference = ol.openlane3d_matches(
        {"points": reversed_lane, "labels": torch.tensor([[1]])},
        {"points": lane, "labels": torch.tensor([[1]])},
        compat="reference",
    )
    assert reference["counts"][0].tolist() == [0, 0, 0, 1, 0, 0]


def test_repeated_y_gives_nan_errors_in_reference_and_finite_ones_by_default():
    """The tool multiplies errors by the both-visible mask, so a NaN beyond a lane's end (interp1d on a repeated
    y) makes the pair's error NaN, and the pooled mean skips the pair; the default mode ignores hidden samples."""
    lane = torch.tensor([[[[0.0, 20.0, 0.0], [0.0, 20.0, 0.0], [0.0, 60.0, 0.0]]]], dtype=torch.float64)
    target = torch.tensor([[[[0.0, 3.0, 0.0], [0.0, 90.0, 0.0]]]], dtype=torch.float64)
    cats = torch.tensor([[1]])
    reference = ol.openlane3d_matches(
        {"points": lane, "labels": cats}, {"points": target, "labels": cats}, compat="reference"
    )
    assert reference["pair_errors"][0, 0].isnan()  # close: samples 3 .. 19 m lie before the repeated y
    assert reference["error_counts"][0, 0].item() == 0
    default = ol.openlane3d_matches({"points": lane, "labels": cats}, {"points": target, "labels": cats})
    assert default["pair_errors"][0, 0].item() == pytest.approx(0.0)
    assert default["error_counts"][0, 0].item() == 1


def _packed(frame: list[int], lengths: list[int]) -> resample.OpenLane3DLanes:
    total = sum(lengths)
    points = torch.stack([torch.zeros(total), torch.linspace(3.0, 50.0, total), torch.zeros(total)], -1).double()
    m = len(lengths)
    return resample.OpenLane3DLanes(
        points, torch.tensor(lengths), torch.tensor(frame), torch.arange(m), torch.ones(m), None
    )


@pytest.mark.parametrize(
    ("frame", "lengths", "message"),
    [([0, 2], [2, 2], "frame"), ([1, 0], [2, 2], "frame"), ([0, 1], [2, 0], "lengths"), ([0], [2, 2], "frame")],
)
def test_packed_lanes_that_do_not_fit_are_refused_with_validate_args(frame, lengths, message):
    bad = (
        _packed(frame, lengths)
        if len(frame) == len(lengths)
        else _packed([0, 0], lengths)._replace(frame=torch.tensor(frame))
    )
    good = _packed([0, 1], [2, 2])
    with pytest.raises(ValueError, match=message):
        ol.openlane3d_lane_matches(bad, good, frames=2)
    with pytest.raises(ValueError, match=message):
        ol.openlane3d_lane_matches(good, bad, frames=2)
    assert ol.openlane3d_lane_matches(good, good, frames=2)["counts"].tolist() == [[1, 1, 1, 1, 1, 1]] * 2
