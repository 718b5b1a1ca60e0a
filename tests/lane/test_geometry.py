"""Tests of drivemetrics.lane.geometry: image -> road, resampling, extrapolation, lane center."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from drivemetrics.geometry.camera import image_from_road_homography, intrinsic_matrix, road_to_image
from drivemetrics.lane.geometry import (
    center_from_image_lanes,
    center_from_polynomials,
    image_lanes_to_road,
    lane_center,
    resample_lane,
    soft_argmax_rows,
)

Z = torch.arange(0.0, 61.0, 5.0, dtype=torch.float64)


def _homography():
    return image_from_road_homography(intrinsic_matrix(700.0, 700.0, 620.0, 190.0).double(), 1.6, pitch=0.03)


def test_resample_matches_numpy_interp_inside_range():
    gen = torch.Generator().manual_seed(0)
    z = torch.rand(4, 9, generator=gen, dtype=torch.float64) * 50 + 5
    x = torch.randn(4, 9, generator=gen, dtype=torch.float64)
    profile, present = resample_lane(torch.stack([x, z], -1), Z)
    assert bool(present.all())
    for b in range(4):
        order = np.argsort(z[b].numpy())
        zs, xs = z[b].numpy()[order], x[b].numpy()[order]
        inside = (Z.numpy() >= zs[0]) & (Z.numpy() <= zs[-1])
        np.testing.assert_allclose(profile[b].numpy()[inside], np.interp(Z.numpy(), zs, xs)[inside], atol=1e-12)
        # linear extrapolation continues the end segments
        below = Z.numpy() < zs[0]
        slope = (xs[1] - xs[0]) / (zs[1] - zs[0])
        np.testing.assert_allclose(profile[b].numpy()[below], xs[0] + slope * (Z.numpy()[below] - zs[0]), atol=1e-9)


def test_constant_extrapolation_and_invalid_points():
    pts = torch.tensor([[[1.0, 10.0], [2.0, 20.0], [float("nan"), float("nan")], [9.0, 30.0]]], dtype=torch.float64)
    valid = torch.tensor([[True, True, False, False]])
    profile, present = resample_lane(pts, Z, valid, extrapolation="constant")
    assert bool(present.all())
    expected = np.clip(np.interp(Z.numpy(), [10, 20], [1, 2]), 1, 2)
    np.testing.assert_allclose(profile[0].numpy(), expected, atol=1e-12)
    # NaN points are absent by default
    profile2, _ = resample_lane(pts[:, :3], Z, extrapolation="constant")
    assert torch.allclose(profile2, profile)


def test_short_line_is_missing_and_center_offsets():
    one_point = torch.tensor([[[1.0, 10.0], [float("nan"), float("nan")]]], dtype=torch.float64)
    _, present = resample_lane(one_point, Z)
    assert not bool(present.any())
    left = torch.full((2, Z.numel()), -1.7, dtype=torch.float64)
    right = torch.full((2, Z.numel()), 1.9, dtype=torch.float64)
    both = lane_center(left, right)
    assert torch.allclose(both, torch.full_like(both, 0.1))
    lp, rp = torch.tensor([True, False]), torch.tensor([False, True])
    center = lane_center(left, right, lp, rp, lane_width=3.6)
    assert torch.allclose(center[0], torch.full_like(center[0], 0.1))  # only left: -1.7 + 1.8
    assert torch.allclose(center[1], torch.full_like(center[1], 0.1))  # only right: 1.9 - 1.8
    with pytest.raises(ValueError, match="both ego lane lines are missing"):
        lane_center(left, right, torch.tensor([True, False]), torch.tensor([True, False]))


def test_image_round_trip_to_center(device):
    H = _homography().to(device)
    z_img = torch.linspace(8.0, 50.0, 12, dtype=torch.float64, device=device)
    left = torch.stack([-1.7 + 0.002 * z_img**1.5, z_img], -1)
    right = torch.stack([1.9 + 0.002 * z_img**1.5, z_img], -1)
    lanes_uv = road_to_image(H, torch.stack([left, right])[None])
    center = center_from_image_lanes(lanes_uv, H, Z.to(device))
    z = Z.to(device)
    inside = (z >= 8) & (z <= 50)
    expected = 0.1 + 0.002 * z**1.5
    assert torch.allclose(center[0][inside], expected[inside], atol=2e-3)  # piecewise-linear between 12 samples


def test_image_lanes_out_of_range_marked_invalid():
    H = _homography()
    uv = torch.tensor([[[620.0, 100.0], [620.0, 300.0], [-2.0, 300.0]]], dtype=torch.float64)
    _, ok = image_lanes_to_road(uv, H)
    assert ok.tolist() == [[False, True, False]]  # above the horizon; valid; TuSimple's -2 = absent


def test_soft_argmax_rows():
    scores = torch.full((1, 3, 10), -50.0, dtype=torch.float64)
    scores[0, 0, 2] = scores[0, 1, 7] = scores[0, 2, 4] = 50.0
    assert torch.allclose(soft_argmax_rows(scores), torch.tensor([[2.0, 7.0, 4.0]], dtype=torch.float64))
    probs = torch.zeros(1, 1, 4, dtype=torch.float64)
    probs[..., 1] = probs[..., 3] = 0.5
    assert float(soft_argmax_rows(probs, from_logits=False)) == pytest.approx(2.0)
    with pytest.raises(ValueError, match="scores"):
        soft_argmax_rows(-probs - 1, from_logits=False)


def test_center_from_polynomials():
    coeffs = torch.tensor([[[-1.8, 0.01, 1e-4], [1.8, 0.01, 1e-4]]], dtype=torch.float64)
    center = center_from_polynomials(coeffs, Z)
    np.testing.assert_allclose(center[0].numpy(), 0.01 * Z.numpy() + 1e-4 * Z.numpy() ** 2, atol=1e-12)


def test_bad_inputs():
    with pytest.raises(ValueError, match="points_xz"):
        resample_lane(torch.zeros(3, 3), Z)
    with pytest.raises(ValueError, match="extrapolation"):
        resample_lane(torch.zeros(1, 3, 2), Z, extrapolation="cubic")
    with pytest.raises(ValueError, match="lanes_uv"):
        center_from_image_lanes(torch.zeros(1, 3, 4, 2), _homography(), Z)
    uv = torch.full((1, 2, 3, 2), float("nan"), dtype=torch.float64)
    with pytest.raises(ValueError, match="points_uv"):
        image_lanes_to_road(uv, _homography(), valid=torch.ones(1, 2, 3, dtype=torch.bool))


def test_gradcheck_resample_and_image_center():
    pts = torch.tensor([[[0.3, 9.0], [0.5, 21.0], [0.2, 14.0], [0.9, 33.0]]], dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda p: resample_lane(p, Z)[0], (pts,))
    H = _homography()
    z_img = torch.tensor([10.0, 20.0, 35.0], dtype=torch.float64)
    lines = torch.stack([torch.stack([-1.8 + 0 * z_img, z_img], -1), torch.stack([1.8 + 0 * z_img, z_img], -1)])
    uv = road_to_image(H, lines)[None].detach().requires_grad_()
    assert torch.autograd.gradcheck(lambda p: center_from_image_lanes(p, H, Z), (uv,))


def test_kitti_ego_lane_width(fixtures_dir):
    """Real data: KITTI-ROAD um_lane_000000 (ego-lane ground truth) mapped to the road through the frame's
    calibration gives a lane 2.5-4.5 m wide, with the camera inside it."""
    from PIL import Image

    from drivemetrics.geometry.camera import normalize_image_from_road

    base = fixtures_dir / "kitti_road" / "training"
    calib = {}
    for line in (base / "calib" / "um_000000.txt").read_text().splitlines():
        key, _, values = line.partition(":")
        if values.strip():
            calib[key] = np.array([float(v) for v in values.split()])
    R0 = np.eye(4)
    R0[:3, :3] = calib["R0_rect"].reshape(3, 3)
    cam_to_road = np.vstack([calib["Tr_cam_to_road"].reshape(3, 4), [0, 0, 0, 1]])
    xz1 = np.array([[1, 0, 0], [0, 0, 0], [0, 1, 0], [0, 0, 1]], dtype=float)
    H = normalize_image_from_road(torch.from_numpy(calib["P2"].reshape(3, 4) @ R0 @ np.linalg.inv(cam_to_road) @ xz1))
    mask = np.array(Image.open(base / "gt_image_2" / "um_lane_000000.png"))[..., 2] > 0
    rows = np.array([r for r in range(200, mask.shape[0], 5) if mask[r].any()])
    assert rows.size > 10
    left = np.array([np.nonzero(mask[r])[0].min() for r in rows], dtype=float)
    right = np.array([np.nonzero(mask[r])[0].max() for r in rows], dtype=float)
    lanes = torch.from_numpy(np.stack([np.stack([left, rows], -1), np.stack([right, rows], -1)]))[None]
    xz, ok = image_lanes_to_road(lanes, H)
    z = torch.arange(8.0, 20.0, 1.0, dtype=torch.float64)
    profiles, present = resample_lane(xz, z, ok)
    assert bool(present.all())
    width = profiles[0, 1] - profiles[0, 0]
    assert bool(((width > 2.5) & (width < 4.5)).all()), width
    assert bool(((profiles[0, 0] < 0) & (profiles[0, 1] > 0)).all())
