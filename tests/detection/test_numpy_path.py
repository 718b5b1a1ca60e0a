"""The numpy path (``device=None``: the ``kitti-object-eval`` command, no torch) equals the torch path (tensors on a
device) for the box kernels and the whole evaluation; the lone-pair shortcut and the greedy matching of crowded
components both agree with the per-frame port of the C++."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from drivemetrics.detection.box_iou import (
    bev_box_corners,
    bev_intersection_area,
    bev_overlap,
    box2d_overlap,
    box3d_overlap,
    convex_polygon_intersection_area,
    polygon_area,
)
from drivemetrics.detection.io import KittiObjects, read_kitti_object_folder
from drivemetrics.detection.kitti_object import DIFFICULTIES, evaluate_kitti_objects
from tests.detection import kitti_oracle


@pytest.fixture(scope="module")
def labels(fixtures_dir) -> list[KittiObjects]:
    path = fixtures_dir / "kitti_object" / "label_2"
    if not path.is_dir():
        pytest.skip("kitti_object fixtures absent")
    return list(read_kitti_object_folder(path).values())


def _random_boxes(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``(n, 7)`` 3D boxes around 20 pairs of centres (many overlapping), some of zero size, and their partners."""
    a = np.c_[rng.uniform(-3, 3, (n, 3)), rng.uniform(0, 4, (n, 3)), rng.uniform(-np.pi, np.pi, n)]
    b = a + np.c_[rng.normal(0, 0.8, (n, 3)), rng.normal(0, 0.5, (n, 3)), rng.normal(0, 0.6, n)]
    a[:5, 4] = 0.0  # zero width: no area
    b[5:10] = a[5:10]  # identical boxes
    return a, b


@pytest.mark.parametrize("criterion", [-1, 0, 1])
def test_box_kernels_give_the_same_values_on_numpy_and_torch(criterion):
    a, b = _random_boxes(np.random.default_rng(criterion + 5), 400)
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    boxes_2d = np.c_[a[:, 0] * 50, a[:, 2] * 50, a[:, 0] * 50 + a[:, 4] * 40, a[:, 2] * 50 + a[:, 3] * 30]
    other_2d = boxes_2d + np.random.default_rng(1).normal(0, 20, boxes_2d.shape)
    pairs = [
        (box2d_overlap, boxes_2d, other_2d),
        (bev_overlap, a[:, [0, 2, 5, 4, 6]], b[:, [0, 2, 5, 4, 6]]),
        (box3d_overlap, a, b),
    ]
    for kernel, x, y in pairs:
        on_numpy = kernel(x, y, criterion=criterion)
        on_torch = kernel(torch.from_numpy(x), torch.from_numpy(y), criterion=criterion)
        assert isinstance(on_numpy, np.ndarray)
        assert on_numpy.dtype == np.float64
        assert 0 < (on_numpy > 0).mean() < 1  # some pairs overlap, some do not
        np.testing.assert_allclose(on_numpy, on_torch.numpy(), rtol=1e-12, atol=1e-14, err_msg=kernel.__name__)
    # the pieces, and a broadcast (N, M) matrix
    bev_a, bev_b = a[:, [0, 2, 5, 4, 6]], b[:, [0, 2, 5, 4, 6]]
    # cos / sin are not IEEE-exact: numpy and torch may differ in the last bit (arrays.cos), which depends on the CPU
    np.testing.assert_allclose(
        bev_box_corners(bev_a), bev_box_corners(ta[:, [0, 2, 5, 4, 6]]).numpy(), rtol=1e-15, atol=1e-15
    )
    corners_a, corners_b = bev_box_corners(bev_a), bev_box_corners(bev_b)
    np.testing.assert_allclose(polygon_area(corners_a), polygon_area(torch.from_numpy(corners_a)).numpy(), rtol=1e-14)
    matrix = convex_polygon_intersection_area(corners_a[:30, None], corners_b[None, :40])
    assert matrix.shape == (30, 40)
    want = convex_polygon_intersection_area(torch.from_numpy(corners_a[:30, None]), torch.from_numpy(corners_b[None]))
    np.testing.assert_allclose(matrix, want[:, :40].numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(
        bev_intersection_area(bev_a, bev_b),
        bev_intersection_area(torch.from_numpy(bev_a), tb[:, [0, 2, 5, 4, 6]]).numpy(),
        rtol=1e-12,
        atol=1e-14,
    )


def _assert_same_results(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for cls in a:
        assert a[cls].keys() == b[cls].keys()
        for metric in a[cls]:
            for d in DIFFICULTIES:
                got, want = np.array(a[cls][metric][d]["curve"]), np.array(b[cls][metric][d]["curve"])
                np.testing.assert_allclose(got, want, rtol=0, atol=1e-12, err_msg=f"{cls} {metric} {d}")


def test_evaluation_on_numpy_equals_the_torch_device_path_and_imports_no_torch_itself(labels):
    gts = labels[:120]
    dets = kitti_oracle.jitter_detections(gts, seed=4)
    on_numpy = evaluate_kitti_objects(dets, gts, only_detected=False)
    on_torch = evaluate_kitti_objects(dets, gts, only_detected=False, device="cpu")
    _assert_same_results(on_numpy, on_torch)
    assert on_numpy["car"]["3d"]["moderate"]["ap_r40"] > 0.1  # a meaningful case


def _crowded(gts: list[KittiObjects], seed: int) -> list[KittiObjects]:
    """Every jittered detection twice more, shifted a little, with other scores (ties included): most GTs have
    several candidates and most detections several GTs, so the greedy matching decides nearly every pair."""
    rng = np.random.default_rng(seed)
    out = []
    for frame in kitti_oracle.jitter_detections(gts, seed=seed):
        values = frame.to_array()
        copies = [values]
        for _ in range(2):
            copy = values.copy()
            copy[:, 3:7] += rng.normal(0, 3, (len(copy), 4))  # 2D box
            copy[:, 10:13] += rng.normal(0, 0.3, (len(copy), 3))  # location
            copy[:, 14] = np.round(rng.uniform(0, 1, len(copy)), 1)  # coarse scores: ties
            copies.append(copy)
        out.append(KittiObjects.from_array(frame.type * 3, np.concatenate(copies)))
    return out


def test_crowded_components_match_the_per_frame_port_and_the_torch_path(labels):
    gts = labels[200:240]
    dets = _crowded(gts, seed=7)
    result = evaluate_kitti_objects(dets, gts, only_detected=False)
    expected = kitti_oracle.evaluate(gts, dets)
    for cls in ("car", "pedestrian", "cyclist"):
        for metric in ("2d", "aos", "bev", "3d"):
            got = np.array([result[cls][metric][d]["curve"] for d in DIFFICULTIES])
            np.testing.assert_allclose(got, np.array(expected[cls][metric]), rtol=0, atol=1e-12, equal_nan=True)
    _assert_same_results(result, evaluate_kitti_objects(dets, gts, only_detected=False, device="cpu"))
