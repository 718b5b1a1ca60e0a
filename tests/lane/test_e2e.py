"""Tests of drivemetrics.lane.e2e on synthetic clips: painted lines rendered through the camera homography and a
detector that reads them back from the (synthesised) images."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from drivemetrics.geometry.camera import image_from_road_homography, image_to_road, intrinsic_matrix
from drivemetrics.lane.e2e import e2e_ld
from drivemetrics.lane.geometry import default_z_samples

HEIGHT, WIDTH = 96, 160
H = image_from_road_homography(intrinsic_matrix(120.0, 120.0, 80.0, 30.0).double(), 1.5, pitch=0.05)
ROWS = torch.arange(45, 96, 3)
Z = default_z_samples(torch.float64)


def _render_straight_road(batch):
    """Solid lines at X = -1.8 and +1.8 m on a straight road, seen from the lane center."""
    v, u = torch.meshgrid(
        torch.arange(HEIGHT, dtype=torch.float64), torch.arange(WIDTH, dtype=torch.float64), indexing="ij"
    )
    xz, on_road = image_to_road(H, torch.stack([u, v], -1).reshape(-1, 2))
    paint = ((xz[:, 0] + 1.8).abs() < 0.15) | ((xz[:, 0] - 1.8).abs() < 0.15)
    image = torch.where(on_road & paint & (xz[:, 1] < 60), 1.0, 0.2).double().reshape(1, 1, HEIGHT, WIDTH)
    return image.expand(batch, 1, HEIGHT, WIDTH)


def _detector(bias_px=0.0):
    """Reads the painted lines back: per row, the mean column of bright pixels left / right of the image center."""

    def detect(images):
        bright = (images[:, 0, ROWS] > 0.6).double()  # (N, R, W)
        u = torch.arange(WIDTH, dtype=torch.float64)
        left = (u < WIDTH / 2).double()
        u_left = (bright * left * u).sum(-1) / (bright * left).sum(-1)
        u_right = (bright * (1 - left) * u).sum(-1) / (bright * (1 - left)).sum(-1)
        rows = ROWS.double().expand_as(u_left)
        lanes = torch.stack([torch.stack([u_left, rows], -1), torch.stack([u_right, rows], -1)], 1)
        return lanes + torch.tensor([bias_px, 0.0], dtype=torch.float64)

    return detect


def _clip(batch=2, length=21):
    images = _render_straight_road(batch)[:, None].expand(batch, length, 1, HEIGHT, WIDTH)
    return images, torch.zeros(batch, length, Z.numel(), dtype=torch.float64)


def test_perfect_detector_scores_zero():
    images, target = _clip()
    value = e2e_ld(images, target, speed=25.0, detector=_detector(), image_from_road=H, frames=20)
    assert value.shape == (2,)
    assert float(value.abs().max()) < 1e-6


def test_biased_detector_deviates_and_is_symmetric():
    images, target = _clip()
    right = e2e_ld(
        images, target, speed=25.0, detector=_detector(3.0), image_from_road=H, frames=20, return_details=True
    )
    left = e2e_ld(
        images, target, speed=25.0, detector=_detector(-3.0), image_from_road=H, frames=20, return_details=True
    )
    assert float(right["e2e_ld"][0]) > 0.1
    assert torch.allclose(right["e2e_ld"], left["e2e_ld"], rtol=0.05)
    # A detection shifted right in the image moves the perceived lane right: the car drifts right (+X).
    assert float(right["deviation"][0, -1]) > 0
    assert float(left["deviation"][0, -1]) < 0
    # The closed loop feeds back: the synthesised view of the drifted car shows the lines moved, so the drift
    # settles instead of growing linearly (it is not an open-loop replay of the recorded frames).
    dev = right["deviation"][0].abs()
    assert float(dev[-1] - dev[-5]) < 0.5 * float(dev[9] - dev[5])
    assert right["poses"].shape == (2, 21, 3)


def test_batched_equals_per_clip():
    images, target = _clip(batch=2, length=11)
    speed = torch.tensor([[20.0] * 11, [28.0] * 11], dtype=torch.float64)
    both = e2e_ld(
        images, target, speed=speed, detector=_detector(2.0), image_from_road=H
    )  # default: every frame of the clip
    one = e2e_ld(images[1:], target[1:], speed=speed[1:], detector=_detector(2.0), image_from_road=H, frames=11)
    assert torch.allclose(both[1:], one)
    assert float(both[0]) != pytest.approx(float(both[1]))


def test_recorded_poses_curved_and_default_straight():
    images, target = _clip(batch=1, length=6)
    dt = 0.05
    z = torch.arange(6, dtype=torch.float64) * 25.0 * dt
    straight = torch.stack([torch.zeros(6), z, torch.zeros(6)], -1)[None].double()
    a = e2e_ld(
        images, target, speed=25.0, detector=_detector(2.0), image_from_road=H, recorded_poses=straight, frames=6
    )
    b = e2e_ld(images, target, speed=25.0, detector=_detector(2.0), image_from_road=H, frames=6)
    assert torch.allclose(a, b)
    # the same (straight-road) frames recorded while driving rotated by 30 degrees give the same deviation
    psi = math.radians(30.0)
    turned = torch.stack([z * math.sin(psi), z * math.cos(psi), torch.full((6,), psi, dtype=torch.float64)], -1)
    c = e2e_ld(
        images, target, speed=25.0, detector=_detector(2.0), image_from_road=H, recorded_poses=turned[None], frames=6
    )
    assert torch.allclose(a, c, atol=1e-9)


def test_bad_inputs():
    images, target = _clip(batch=1, length=4)
    with pytest.raises(ValueError, match="target"):
        e2e_ld(images, target[:, :3], speed=25.0, detector=_detector(), image_from_road=H, frames=4)
    with pytest.raises(ValueError, match="frames"):
        e2e_ld(
            images, target, speed=25.0, detector=_detector(), image_from_road=H, frames=5
        )  # more steps than the clip of 4
    with pytest.raises(ValueError, match="speed"):
        e2e_ld(images, target, speed=0.0, detector=_detector(), image_from_road=H, frames=4)
    with pytest.raises(ValueError, match="images"):
        e2e_ld(images[0], target, speed=25.0, detector=_detector(), image_from_road=H, frames=4)

    with pytest.raises(ValueError, match="detector"):
        e2e_ld(images, target, speed=25.0, detector=lambda im: torch.zeros(1, 3, 5, 2), image_from_road=H, frames=4)
    with pytest.raises(ValueError, match="image_from_road"):
        e2e_ld(images, target, speed=25.0, detector=_detector(), image_from_road=H[None].repeat(2, 1, 1), frames=4)

    def blind(images):
        return torch.full((images.shape[0], 2, 3, 2), float("nan"), dtype=torch.float64)

    with pytest.raises(ValueError, match="both ego lane lines are missing"):
        e2e_ld(images, target, speed=25.0, detector=blind, image_from_road=H, frames=4)


RADIUS = 400.0


def _curved_clip(length=21, speed=25.0):
    """A left-to-right curve (center X = Z^2 / 2R), recorded while driving on its center line; frames rendered from
    each recorded pose, ground-truth center profiles in each recorded vehicle frame."""
    s = torch.arange(length, dtype=torch.float64) * speed * 0.05
    poses = torch.stack([s**2 / (2 * RADIUS), s, torch.atan(s / RADIUS)], -1)
    v, u = torch.meshgrid(
        torch.arange(HEIGHT, dtype=torch.float64), torch.arange(WIDTH, dtype=torch.float64), indexing="ij"
    )
    xz, on_road = image_to_road(H, torch.stack([u, v], -1).reshape(-1, 2))
    frames, targets = [], []
    for x_r, z_r, h_r in poses.tolist():
        c, s_ = math.cos(h_r), math.sin(h_r)
        X = x_r + xz[:, 0] * c + xz[:, 1] * s_
        Zw = z_r - xz[:, 0] * s_ + xz[:, 1] * c
        center = Zw**2 / (2 * RADIUS)
        paint = ((X - center + 1.8).abs() < 0.15) | ((X - center - 1.8).abs() < 0.15)
        frames.append(torch.where(on_road & paint & (xz[:, 1] < 60), 1.0, 0.2).double().reshape(1, HEIGHT, WIDTH))
        # center line seen from the recorded pose, sampled at vehicle-frame distances Z
        zw = torch.linspace(z_r - 5, z_r + 150, 2000, dtype=torch.float64)
        xw = zw**2 / (2 * RADIUS)
        xv, zv = c * (xw - x_r) - s_ * (zw - z_r), s_ * (xw - x_r) + c * (zw - z_r)
        targets.append(torch.from_numpy(np.interp(Z.numpy(), zv.numpy(), xv.numpy())))
    return torch.stack(frames)[None], torch.stack(targets)[None], poses[None]


def _median_split_detector(bias_px=0.0):
    """Per row: bright columns left / right of their median (works when the lines cross the image center)."""

    def detect(images):
        bright = images[:, 0, ROWS] > 0.6
        u = torch.arange(WIDTH, dtype=torch.float64).expand_as(bright)
        split = torch.where(bright, u, torch.full_like(u, float("nan"))).nanmedian(-1, keepdim=True).values
        left, right = bright & (u < split), bright & (u > split)
        u_left = (u * left).sum(-1) / left.sum(-1)
        u_right = (u * right).sum(-1) / right.sum(-1)
        rows = ROWS.double().expand_as(u_left)
        lanes = torch.stack([torch.stack([u_left, rows], -1), torch.stack([u_right, rows], -1)], 1)
        return lanes + torch.tensor([bias_px, 0.0], dtype=torch.float64)

    return detect


def test_curved_road_with_recorded_poses():
    images, target, poses = _curved_clip()
    good = e2e_ld(
        images,
        target,
        speed=25.0,
        detector=_median_split_detector(),
        image_from_road=H,
        recorded_poses=poses,
        return_details=True,
    )
    bad = e2e_ld(
        images, target, speed=25.0, detector=_median_split_detector(4.0), image_from_road=H, recorded_poses=poses
    )
    # A detector reading the rendered lines back follows the curve almost like the ground truth (measured 0.029 m:
    # pixel quantisation, and its lines end ~25 m ahead, continued straight, while the ground truth keeps curving).
    assert float(good["e2e_ld"][0]) < 0.06
    assert float(bad[0]) > 5 * float(good["e2e_ld"][0]) + 0.05
    # and both loops actually went round the curve: heading gained about s / R
    assert float(good["reference_poses"][0, -1, 2]) == pytest.approx(float(poses[0, 20, 2]), abs=0.01)
