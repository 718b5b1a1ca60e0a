"""The packed-lane kernels of the file evaluation (resampling without padding, the camera-to-ground transform of
packed points, the errors of the counted pairs, the host-array helpers) against plain per-lane / per-frame numpy
loops written from the fixture README's rules, and their torch branch (other devices) against their numpy branch
(the CPU)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from drivemetrics._internal import arrays
from drivemetrics.lane3d import openlane as ol
from drivemetrics.lane3d import pairs, resample
from drivemetrics.lane3d.evaluate import _camera_to_ground, _frames_to_lanes, evaluate_openlane3d_frames
from drivemetrics.lane3d.io import Lane3DFrame
from tests.lane3d.test_openlane import Y, _frame_loop, _interp, _random_frame


def _lane_loop(lane: np.ndarray, visibility: np.ndarray | None, order_free: bool):
    """``(kept, x, z, visible)`` of one lane, the evaluator's rules one step at a time."""
    if visibility is not None:
        lane = lane[visibility > 0]
    if lane.shape[0] < 2:
        return False, None, None, None
    first, last = (lane[:, 1].min(), lane[:, 1].max()) if order_free else (lane[0, 1], lane[-1, 1])
    if not (first < 102 and last > 3):
        return False, None, None, None
    lane = lane[(lane[:, 1] > 0) & (lane[:, 1] < 200) & (lane[:, 0] > -10) & (lane[:, 0] < 10)]
    if lane.shape[0] < 2:
        return False, None, None, None
    with np.errstate(all="ignore"):
        xs, zs = _interp(lane)
        visible = (np.abs(xs) <= 10) & (lane[:, 1].min() <= Y) & (lane[:, 1].max() >= Y)
    if visible.sum() < 2:
        return False, None, None, None
    return True, xs, zs, visible


def _random_lanes(seed: int, count: int):
    rng = np.random.default_rng(seed)
    lanes, visibility = [], []
    while len(lanes) < count:
        pred, _, gt, _, vis = _random_frame(rng)
        lanes += gt + pred
        visibility += vis + [(rng.random(len(p)) > 0.2).astype(float) for p in pred]
    lanes.append(np.array([[0.0, 50.0, 0.0]]))  # one point
    visibility.append(np.ones(1))
    lanes.append(np.array([[0.0, 5.0, 0.0], [0.0, 60.0, 0.0]]))  # two points, the second hidden
    visibility.append(np.array([1.0, 0.0]))
    lanes.append(np.array([[12.0, 5.0, 0.0], [13.0, 60.0, 0.0]]))  # outside |x| < 10
    visibility.append(np.ones(2))
    lanes.append(np.array([[0.0, 150.0, 0.0], [0.0, 190.0, 0.0]]))  # beyond y = 102 m
    visibility.append(np.ones(2))
    return lanes, visibility


def _packed(lanes: list[np.ndarray], visibility: list[np.ndarray] | None) -> resample.OpenLane3DLanes:
    count = len(lanes)
    return resample.OpenLane3DLanes(
        torch.from_numpy(np.concatenate(lanes)),
        torch.tensor([len(lane) for lane in lanes]),
        torch.zeros(count, dtype=torch.long),
        torch.arange(count),
        torch.ones(count, dtype=torch.long),
        None if visibility is None else torch.from_numpy(np.concatenate(visibility)),
    )


def _same(got: torch.Tensor, want: np.ndarray) -> bool:
    got_np = got.numpy()
    return bool(((got_np == want) | (np.isnan(got_np) & np.isnan(want))).all())


@pytest.mark.parametrize("order_free", [False, True])
@pytest.mark.parametrize("use_visibility", [False, True])
def test_packed_resampling_equals_a_per_lane_numpy_loop(order_free, use_visibility):
    lanes, visibility = _random_lanes(0, 300)
    out = resample.resample_lanes(_packed(lanes, visibility), use_visibility, order_free)
    kept_lanes = 0
    for k, lane in enumerate(lanes):
        kept, xs, zs, visible = _lane_loop(lane, visibility[k] if use_visibility else None, order_free)
        assert bool(out["kept"][k]) == kept, k
        if not kept:
            assert not out["visible"][k].any(), k
            continue
        kept_lanes += 1
        assert out["visible"][k].numpy().tolist() == visible.tolist(), k
        assert _same(out["x"][k], xs), k  # bit for bit interp1d's formula, NaN where it gives NaN
        assert _same(out["z"][k], zs), k
    assert 50 < kept_lanes < len(lanes) - 20  # both kinds, plenty of each


def test_packed_resampling_of_no_lane_and_of_lanes_without_a_valid_point():
    empty = resample.resample_lanes(
        _packed([np.zeros((1, 3))], None)._replace(
            points=torch.zeros(0, 3, dtype=torch.float64),
            lengths=torch.zeros(0, dtype=torch.long),
            frame=torch.zeros(0, dtype=torch.long),
            index=torch.zeros(0, dtype=torch.long),
            labels=torch.zeros(0, dtype=torch.long),
        ),
        True,
        False,
    )
    assert empty["x"].shape == (0, 100)
    assert empty["kept"].shape == (0,)
    lanes = [np.array([[0.0, 5.0, 0.0], [0.0, 60.0, 0.0]])] * 2
    hidden = resample.resample_lanes(_packed(lanes, [np.zeros(2), np.zeros(2)]), True, False)
    assert not hidden["kept"].any()
    assert hidden["kept"].shape == (2,)


def test_camera_to_ground_of_packed_points_equals_the_padded_kernel():
    rng = np.random.default_rng(3)
    frames = 5
    extrinsic = np.tile(np.eye(4), (frames, 1, 1))
    for b in range(frames):
        angles = rng.uniform(-0.3, 0.3, 3)
        rx = np.array(
            [[1, 0, 0], [0, np.cos(angles[0]), -np.sin(angles[0])], [0, np.sin(angles[0]), np.cos(angles[0])]]
        )
        rz = np.array(
            [[np.cos(angles[2]), -np.sin(angles[2]), 0], [np.sin(angles[2]), np.cos(angles[2]), 0], [0, 0, 1]]
        )
        extrinsic[b, :3, :3] = rz @ rx
        extrinsic[b, :3, 3] = rng.uniform(-2, 2, 3)
    per_frame = rng.integers(0, 40, frames)
    points = rng.uniform(-50, 50, (int(per_frame.sum()), 3))
    got = _camera_to_ground(np.ascontiguousarray(points.T), extrinsic, per_frame).T
    frame_of_point = np.repeat(np.arange(frames), per_frame)
    want = ol.openlane3d_gt_to_ground(
        torch.from_numpy(points)[:, None, None], torch.from_numpy(extrinsic)[frame_of_point]
    )[:, 0, 0].numpy()
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


def _camera_frames(frames):
    """The random ground-frame frames as the readers give them: annotations in the camera frame (extrinsic with a
    height of 1.7 m and an identity rotation, so that the transform is exact), predictions in the ground frame."""
    extrinsic = np.eye(4)
    extrinsic[:3, 3] = [1.5, 0.2, 1.7]
    gt, preds = [], []
    for k, (pred, pred_cat, lanes, gt_cat, vis) in enumerate(frames):
        camera = [np.stack([lane[:, 1], -lane[:, 0], lane[:, 2] - 1.7], 1) for lane in lanes]
        gt.append(Lane3DFrame(f"{k}.jpg", camera, list(gt_cat), list(vis), extrinsic))
        preds.append(Lane3DFrame(f"{k}.jpg", list(pred), list(pred_cat)))
    return gt, preds


@pytest.mark.parametrize("batch_size", [1, 7, 256])
def test_file_evaluation_equals_a_per_frame_numpy_loop(batch_size):
    rng = np.random.default_rng(5)
    frames = [_random_frame(rng) for _ in range(60)]
    frames[3] = ([], [], [], [], [])  # an empty frame
    frames[4] = (frames[4][0], frames[4][1], [], [], [])  # no annotation
    frames[5] = ([], [], frames[5][2], frames[5][3], frames[5][4])  # no prediction
    gt, preds = _camera_frames(frames)
    out = evaluate_openlane3d_frames(gt, preds, "reference", batch_size=batch_size)
    for k, frame in enumerate(frames):
        counts, errors = _frame_loop(*frame)
        row = out["per_frame"][k]
        assert [row[key] for key in ("r_lane", "p_lane", "c_lane", "cnt_gt", "cnt_pred", "match_num")] == counts, k
        got = np.array([row[key] for key in pairs.ERROR_NAMES], dtype=float).T.reshape(-1, 4)
        np.testing.assert_allclose(np.sort(got, 0), np.sort(np.array(errors).reshape(-1, 4), 0), atol=1e-9)
    assert out["metrics"]["n_gt"] > 50
    assert out["per_frame"][3]["cnt_gt"] == out["per_frame"][3]["cnt_pred"] == 0


def test_frames_to_lanes_packs_points_as_coordinate_planes():
    frames = [Lane3DFrame("a.jpg", [np.arange(6.0).reshape(2, 3), np.zeros((0, 3))], [1, 2]), Lane3DFrame("b.jpg")]
    lanes = _frames_to_lanes(frames, False, "cpu")
    assert lanes.points.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    assert lanes.points.T.is_contiguous()  # the resampling reads the planes without a copy
    assert lanes.lengths.tolist() == [2]
    assert lanes.labels.tolist() == [1]


@pytest.mark.parametrize("compat", ["reference", "default"])
def test_torch_branch_of_the_host_kernels_equals_their_numpy_branch(monkeypatch, compat):
    """On another device the kernels run the same code on tensors; forcing that branch on the CPU must give the
    same counts and (up to the summation order) the same errors."""
    rng = np.random.default_rng(7)
    gt, preds = _camera_frames([_random_frame(rng) for _ in range(40)])
    numpy_branch = evaluate_openlane3d_frames(gt, preds, compat, batch_size=16)
    monkeypatch.setattr(arrays, "host", lambda tensor: tensor)
    torch_branch = evaluate_openlane3d_frames(gt, preds, compat, batch_size=16)
    for mine, theirs in zip(numpy_branch["per_frame"], torch_branch["per_frame"], strict=True):
        for key, value in mine.items():
            if isinstance(value, list):
                np.testing.assert_allclose(value, theirs[key], rtol=0, atol=1e-12)
            else:
                assert value == theirs[key]


def test_segment_helpers_on_tensors_equal_numpy():
    rng = np.random.default_rng(9)
    lengths = rng.integers(1, 6, 50)
    ends = np.cumsum(lengths)
    starts = ends - lengths
    mask = rng.random(int(ends[-1])) > 0.4
    values = rng.normal(size=int(ends[-1]))
    want = [np.count_nonzero(mask[s:e]) for s, e in zip(starts, ends, strict=True)]
    assert arrays.segment_count(mask, starts, ends).tolist() == want
    t = torch.from_numpy
    assert arrays.segment_count(t(mask), t(starts), t(ends)).tolist() == want
    want_min = [values[s:e].min() for s, e in zip(starts, ends, strict=True)]
    assert arrays.segment_min(values, starts, ends).tolist() == want_min
    assert arrays.segment_min(t(values), t(starts), t(ends)).tolist() == want_min
    for order_free in (False, True):
        y = rng.uniform(-10, 150, int(ends[-1]))
        np_out = resample._lane_in_range(y, starts, ends, mask, order_free)
        torch_out = resample._lane_in_range(t(y), t(starts), t(ends), t(mask), order_free)
        assert np_out.tolist() == torch_out.tolist()


def test_frames_are_scored_with_one_torch_thread_and_the_setting_is_restored(monkeypatch):
    """Many small kernels: intra-op threads only spin on a busy machine (5x the wall time measured at load 3)."""
    from drivemetrics.lane3d import evaluate

    seen = []
    score_batch = evaluate._score_batch
    monkeypatch.setattr(
        evaluate, "_score_batch", lambda *args: seen.append(torch.get_num_threads()) or score_batch(*args)
    )
    gt, preds = _camera_frames([_random_frame(np.random.default_rng(11)) for _ in range(3)])
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        evaluate_openlane3d_frames(gt, preds)
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
    assert seen == [1]


def test_inputs_that_require_a_gradient_are_scored():
    lane = torch.tensor([[[[0.0, 3.0, 0.0], [0.0, 52.0, 0.0]]]], dtype=torch.float64)
    preds = {"points": (lane + 0.2).requires_grad_(), "labels": torch.tensor([[1]])}
    out = ol.openlane3d_matches(preds, {"points": lane, "labels": torch.tensor([[1]])})
    assert out["counts"].tolist() == [[1, 1, 1, 1, 1, 1]]
