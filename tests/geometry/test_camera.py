"""Tests of drivemetrics.geometry.camera: road-plane homographies, horizon, shifted-view synthesis."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from drivemetrics.geometry.camera import (
    homography_from_correspondences,
    horizon_row,
    image_from_road_homography,
    image_to_road,
    intrinsic_matrix,
    normalize_image_from_road,
    road_to_camera_rotation,
    road_to_image,
    shifted_view_homography,
    synthesize_shifted_view,
    view_road_mask,
)

FX, FY, CX, CY = 700.0, 710.0, 620.0, 190.0


def _numpy_project(X, Z, height, pitch, yaw, roll):
    """Independent pinhole projection: rotate the camera explicitly with numpy, project (X, 0, Z)."""
    # Camera axes expressed in the road frame, built by turning the axes step by step.
    right, down, forward = np.eye(3)
    # yaw about the road's down axis: forward turns towards +X
    cy, sy = math.cos(yaw), math.sin(yaw)
    forward, right = cy * forward + sy * right, cy * right - sy * forward
    # pitch about the camera's right axis: forward tilts down
    cp, sp = math.cos(pitch), math.sin(pitch)
    forward, down = cp * forward + sp * down, cp * down - sp * forward
    # roll about the optical axis: right tilts down
    cr, sr = math.cos(roll), math.sin(roll)
    right, down = cr * right + sr * down, cr * down - sr * right
    rel = np.array([X, 0.0, Z]) - np.array([0.0, -height, 0.0])
    xc, yc, zc = rel @ right, rel @ down, rel @ forward
    return FX * xc / zc + CX, FY * yc / zc + CY


@pytest.mark.parametrize(("pitch", "yaw", "roll"), [(0.0, 0.0, 0.0), (0.03, -0.02, 0.01), (0.1, 0.05, -0.04)])
def test_homography_matches_independent_projection(pitch, yaw, roll):
    K = intrinsic_matrix(FX, FY, CX, CY).double()
    H = image_from_road_homography(K, 1.65, pitch, yaw, roll)
    pts = torch.tensor([[0.0, 10.0], [2.5, 20.0], [-1.8, 6.0], [4.0, 45.0]], dtype=torch.float64)
    uv = road_to_image(H, pts)
    for (X, Z), (u, v) in zip(pts.tolist(), uv.tolist(), strict=True):
        eu, ev = _numpy_project(X, Z, 1.65, pitch, yaw, roll)
        assert u == pytest.approx(eu, abs=1e-9)
        assert v == pytest.approx(ev, abs=1e-9)


def test_rotation_is_orthonormal_and_batched():
    pitch = torch.tensor([0.0, 0.1, -0.2], dtype=torch.float64)
    R = road_to_camera_rotation(pitch, 0.3, 0.05)
    assert R.shape == (3, 3, 3)
    eye = torch.eye(3, dtype=torch.float64).expand(3, 3, 3)
    assert torch.allclose(R @ R.transpose(1, 2), eye, atol=1e-12)
    assert torch.allclose(torch.linalg.det(R), torch.ones(3, dtype=torch.float64))


def test_horizon_pitch_yaw_roll():
    K = intrinsic_matrix(FX, FY, CX, CY).double()
    # Pitching down by p raises the horizon to cy - fy tan(p).
    H = image_from_road_homography(K, 1.5, pitch=0.05)
    assert float(horizon_row(H, CX)) == pytest.approx(CY - FY * math.tan(0.05), abs=1e-9)
    # Roll r tilts the horizon by -tan(r) rows per column (rises to the right for r > 0).
    H = image_from_road_homography(K, 1.5, roll=0.02)
    slope = float(horizon_row(H, CX + 100.0) - horizon_row(H, CX)) / 100.0
    assert slope == pytest.approx(-math.tan(0.02) * FY / FX, rel=1e-9)
    # Yaw y: the far point straight ahead moves to u = cx - fx tan(y) (camera turned right sees the road left).
    H = image_from_road_homography(K, 1.5, yaw=0.04)
    u_far = road_to_image(H, torch.tensor([[0.0, 1e7]], dtype=torch.float64))[0, 0]
    assert float(u_far) == pytest.approx(CX - FX * math.tan(0.04), abs=1e-3)


def test_round_trip_and_sky():
    K = intrinsic_matrix(FX, FY, CX, CY).double()
    H = image_from_road_homography(K, 1.65, 0.02, 0.01, 0.005)
    pts = torch.rand(50, 2, dtype=torch.float64) * torch.tensor([20.0, 70.0]) + torch.tensor([-10.0, 3.0])
    back, on_road = image_to_road(H, road_to_image(H, pts))
    assert bool(on_road.all())
    assert torch.allclose(back, pts, atol=1e-8)
    sky = torch.tensor([[CX, 10.0], [100.0, 50.0]], dtype=torch.float64)
    _, on_road = image_to_road(H, sky)
    assert not bool(on_road.any())
    behind = road_to_image(H, torch.tensor([[0.0, -5.0]], dtype=torch.float64))
    assert bool(torch.isnan(behind).all())


def test_correspondences_reproduce_pinhole():
    K = intrinsic_matrix(FX, FY, CX, CY).double()
    H = image_from_road_homography(K, 1.6, 0.03, 0.0, 0.0)[None]
    road = torch.tensor([[[-2.0, 8.0], [2.0, 8.0], [-2.0, 30.0], [2.0, 30.0]]], dtype=torch.float64)
    H_fit = homography_from_correspondences(road_to_image(H, road), road)
    test = torch.tensor([[[0.5, 12.0], [-3.0, 50.0]]], dtype=torch.float64)
    assert torch.allclose(road_to_image(H_fit, test), road_to_image(H, test), atol=1e-6)
    assert torch.allclose(image_to_road(H_fit, road_to_image(H, test))[0], test, atol=1e-6)


def test_normalize_fixes_sign_and_scale():
    K = intrinsic_matrix(FX, FY, CX, CY).double()
    H = image_from_road_homography(K, 1.6, 0.03)
    Hn = normalize_image_from_road(-250.0 * H)
    assert float(Hn.abs().max()) == pytest.approx(1.0)
    assert torch.allclose(
        road_to_image(Hn, torch.tensor([[1.0, 9.0]], dtype=torch.float64)),
        road_to_image(H, torch.tensor([[1.0, 9.0]], dtype=torch.float64)),
    )
    with pytest.raises(ValueError, match="singular"):
        normalize_image_from_road(torch.zeros(3, 3))
    with pytest.raises(ValueError, match="image_from_road"):
        normalize_image_from_road(torch.eye(4))


def test_bad_inputs():
    K = intrinsic_matrix(FX, FY, CX, CY)
    with pytest.raises(ValueError, match="camera_height"):
        image_from_road_homography(K, 0.0)
    with pytest.raises(ValueError, match="intrinsics"):
        image_from_road_homography(K[:2], 1.5)
    bad = K.clone()
    bad[0, 0] = float("nan")
    with pytest.raises(ValueError, match="NaN"):
        image_from_road_homography(bad, 1.5)
    with pytest.raises(ValueError, match="road_points"):
        homography_from_correspondences(torch.zeros(1, 4, 2), torch.zeros(1, 3, 2))


def test_gradcheck_homography_and_backprojection():
    K = intrinsic_matrix(FX, FY, CX, CY).double()
    angles = torch.tensor([0.03, 0.01, -0.02], dtype=torch.float64, requires_grad=True)
    height = torch.tensor(1.6, dtype=torch.float64, requires_grad=True)
    uv = torch.tensor([[600.0, 250.0], [800.0, 300.0]], dtype=torch.float64, requires_grad=True)

    def fn(a, h, pix):
        return image_to_road(image_from_road_homography(K, h, a[0], a[1], a[2]), pix)[0]

    assert torch.autograd.gradcheck(fn, (angles, height, uv))


def _render(H, height, width, offset_x=0.0, yaw=0.0):
    """Painted lines at road X = -1.8 and +1.8 m (0.3 m wide) seen from a camera at lateral offset / yaw."""
    v, u = torch.meshgrid(
        torch.arange(height, dtype=torch.float64), torch.arange(width, dtype=torch.float64), indexing="ij"
    )
    xz, on_road = image_to_road(H, torch.stack([u, v], -1).reshape(-1, 2))
    # camera frame -> road frame of the recording (camera moved by offset_x, turned by yaw)
    X = math.cos(yaw) * xz[:, 0] + math.sin(yaw) * xz[:, 1] + offset_x
    paint = ((X + 1.8).abs() < 0.15) | ((X - 1.8).abs() < 0.15)
    value = torch.where(on_road & paint & (xz[:, 1] < 60), 1.0, 0.2).double()
    return value.reshape(1, 1, height, width)


def test_synthesized_view_matches_rendering(device):
    K = intrinsic_matrix(120.0, 120.0, 80.0, 30.0).double()
    H = image_from_road_homography(K, 1.5, pitch=0.05).to(device)
    recorded = _render(H.cpu(), 96, 160).to(device)
    same = synthesize_shifted_view(recorded, H, 0.0, 0.0)
    assert torch.allclose(same, recorded, atol=1e-6)
    for dx, psi in [(0.5, 0.0), (-0.3, 0.02)]:
        synth = synthesize_shifted_view(recorded, H, dx, psi)
        direct = _render(H.cpu(), 96, 160, dx, psi).to(device)
        # Road rows below the horizon (whose source lies inside the recorded image) agree except on the one or two
        # pixels per row where a line edge is resampled; the unshifted recording differs far more.
        rows = slice(40, 75)
        mismatch = ((synth - direct)[..., rows, :].abs() > 0.4).double().mean()
        assert float(mismatch) < 0.015
        assert float(((recorded - direct)[..., rows, :].abs() > 0.4).double().mean()) > 3 * float(mismatch)
    # Pixels above the horizon are kept from the recorded frame.
    sky = synthesize_shifted_view(torch.rand(1, 3, 96, 160, dtype=torch.float64, device=device), H, 0.4, 0.03)
    assert sky.shape == (1, 3, 96, 160)


def test_view_road_mask_is_the_road_closer_than_max_distance():
    K = intrinsic_matrix(120.0, 120.0, 80.0, 30.0).double()
    H = image_from_road_homography(K, 1.5, pitch=0.05)
    mask = view_road_mask(H, (96, 160), max_distance=40.0)
    assert mask.shape == (1, 1, 96, 160)
    # Independent check per pixel: back-project a few pixels by hand through the inverse homography.
    inv = torch.linalg.inv(H)
    for u, v in [(80, 95), (10, 60), (150, 40), (80, 20), (80, 33)]:
        x, z, w = (inv @ torch.tensor([u, v, 1.0], dtype=torch.float64)).tolist()
        expected = w * H[2].abs().max().item() > 1e-9 and math.hypot(x / w, z / w) < 40.0
        assert bool(mask[0, 0, v, u]) == expected, (u, v)
    assert mask[0, 0, 95].all()
    assert not mask[0, 0, 0].any()
    # A precomputed mask gives bit-identical views.
    images = torch.rand(2, 3, 96, 160, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    dx, psi = torch.tensor([0.4, -0.2], dtype=torch.float64), torch.tensor([0.01, -0.02], dtype=torch.float64)
    plain = synthesize_shifted_view(images, H, dx, psi, max_distance=40.0)
    given = synthesize_shifted_view(images, H, dx, psi, max_distance=40.0, road_mask=mask)
    assert torch.equal(plain, given)


def test_shifted_view_homography_moves_road_points():
    K = intrinsic_matrix(FX, FY, CX, CY).double()
    H = image_from_road_homography(K, 1.6, 0.03)
    M = shifted_view_homography(H, 0.5, 0.0)
    # A road point at X = 0.5 seen from a camera moved 0.5 m right appears straight ahead (X' = 0).
    uv = road_to_image(H, torch.tensor([[0.5, 15.0]], dtype=torch.float64))
    hom = torch.cat([uv, torch.ones(1, 1, dtype=torch.float64)], -1) @ M.T
    moved = hom[:, :2] / hom[:, 2:]
    expected = road_to_image(H, torch.tensor([[0.0, 15.0]], dtype=torch.float64))
    assert torch.allclose(moved, expected, atol=1e-8)


def test_kitti_calibration_horizon_and_road(fixtures_dir):
    """Real data: the KITTI-ROAD um_000000 road-plane homography puts every ground-truth road pixel below the
    horizon and back-projects them in front of the camera, within the road's plausible extent."""
    from PIL import Image

    base = fixtures_dir / "kitti_road" / "training"
    calib = {}
    for line in (base / "calib" / "um_000000.txt").read_text().splitlines():
        key, _, values = line.partition(":")
        if values.strip():
            calib[key] = np.array([float(v) for v in values.split()])
    P2 = calib["P2"].reshape(3, 4)
    R0 = np.eye(4)
    R0[:3, :3] = calib["R0_rect"].reshape(3, 3)
    cam_to_road = np.vstack([calib["Tr_cam_to_road"].reshape(3, 4), [0, 0, 0, 1]])
    road_xz1 = np.array([[1, 0, 0], [0, 0, 0], [0, 1, 0], [0, 0, 1]], dtype=float)  # (X, Z, 1) -> (X, 0, Z, 1)
    H = normalize_image_from_road(torch.from_numpy(P2 @ R0 @ np.linalg.inv(cam_to_road) @ road_xz1))
    gt = np.array(Image.open(base / "gt_image_2" / "um_road_000000.png"))
    rows, cols = np.nonzero(gt[..., 2] > 0)
    assert rows.size > 1000
    uv = torch.from_numpy(np.stack([cols, rows], -1).astype(np.float64))
    horizon = horizon_row(H, uv[:, 0])
    assert bool((uv[:, 1] > horizon).all())
    xz, on_road = image_to_road(H, uv)
    assert bool(on_road.all())
    assert float(xz[:, 1].min()) > 3.0  # nothing closer than the bonnet
    assert float(xz[:, 0].abs().max()) < 30.0
