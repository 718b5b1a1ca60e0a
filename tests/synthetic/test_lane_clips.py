from __future__ import annotations

import math

import pytest
import torch

from drivemetrics.synthetic.lane_clips import (
    NOISE_MODELS,
    LaneCamera,
    LaneNoise,
    NoisyLaneDetector,
    PaintedLineDetector,
    detections_from_gt,
    make_lane_clips,
    perturb_road_lanes,
    road_lanes_to_image,
)


@pytest.fixture(scope="module")
def clips():
    return make_lane_clips(batch=3, frames=4, seed=5)


def test_shapes_ranges_and_determinism(clips):
    assert clips.images.shape == (3, 4, 1, 128, 256)
    assert clips.images.min() >= 0
    assert clips.images.max() <= 1
    assert clips.lanes_image.shape == (3, 4, 4, clips.h_samples.numel())
    assert clips.lanes_road.shape == (3, 4, 4, clips.z_samples.numel())
    assert ((clips.speed > 20) & (clips.speed < 30)).all()
    again = make_lane_clips(batch=3, frames=4, seed=5)
    assert torch.equal(again.images, clips.images)
    torch.testing.assert_close(again.lanes_image, clips.lanes_image, equal_nan=True, rtol=0, atol=0)
    other = make_lane_clips(batch=3, frames=4, seed=6)
    assert not torch.equal(other.images, clips.images)
    rgb = make_lane_clips(batch=1, frames=1, seed=5, channels=3)
    assert rgb.images.shape == (1, 1, 3, 128, 256)


def _pinhole_u(camera, x_lat, v):
    """Column of road point at lateral x_lat on image row v, by hand (pitch only, camera above the origin)."""
    cp, sp = math.cos(camera.pitch), math.sin(camera.pitch)
    a = (v - camera.cy) / camera.focal
    z = camera.camera_height * (cp - a * sp) / (a * cp + sp)
    return camera.focal * x_lat / (sp * camera.camera_height + cp * z) + camera.cx, z


def test_straight_road_geometry_by_hand():
    clips = make_lane_clips(batch=2, frames=3, seed=1, max_curvature=0.0, max_wander=0.0)
    w = clips.lane_width
    expected = torch.stack([-1.5 * w, -0.5 * w, 0.5 * w, 1.5 * w], -1)  # B x L
    torch.testing.assert_close(clips.lanes_road, expected[:, None, :, None].expand_as(clips.lanes_road))
    camera = LaneCamera()
    for b in range(2):
        for lane in range(4):
            for k, v in enumerate(clips.h_samples.tolist()):
                u, z = _pinhole_u(camera, float(expected[b, lane]), v)
                got = float(clips.lanes_image[b, 0, lane, k])
                if 0 <= u <= camera.width - 1 and z <= 60:
                    assert got == pytest.approx(u, abs=1e-6)
                else:
                    assert math.isnan(got)
    # poses: straight along +z at constant speed
    dz = clips.poses[:, 1:, 1] - clips.poses[:, :-1, 1]
    torch.testing.assert_close(dz, (clips.speed * clips.dt)[:, None].expand_as(dz))


def test_curvature_sign_and_lateral_offset(clips):
    center = clips.center_road  # B x T x M
    z = clips.z_samples
    # near the car the ego lane center is at minus the vehicle's lateral offset (heading error is small)
    near = center[..., 0] + clips.lateral_offset
    assert near.abs().max() < 0.1
    # second derivative of the center profile ~ road curvature (right turn: positive)
    k0 = clips.curvature[:, 0]
    second = (center[..., 12] - 2 * center[..., 10] + center[..., 8]) / (z[12] - z[10]) ** 2
    torch.testing.assert_close(second.mean(1), k0, atol=2e-4, rtol=0.2)


def test_painted_lines_are_bright_at_gt_positions(clips):
    rows = clips.h_samples.long()
    gt = clips.lanes_image[:, :, 1]  # ego-left
    ok = ~torch.isnan(gt)
    cols = gt.nan_to_num().round().long()
    values = clips.images[:, :, 0][..., rows, :].gather(-1, cols[..., None])[..., 0]
    assert (values[ok] > 0.6).float().mean() > 0.95


def test_detector_reads_back_ego_lines(clips):
    detector = PaintedLineDetector(clips.h_samples)
    points = detector(clips.images.flatten(0, 1))
    found = detector.detect_x(clips.images.flatten(0, 1))
    torch.testing.assert_close(points[..., 0], found, equal_nan=True)
    torch.testing.assert_close(
        points[..., 1][~torch.isnan(found)], clips.h_samples.float().expand_as(found)[~torch.isnan(found)]
    )
    gt = clips.lanes_image[:, :, 1:3].flatten(0, 1)
    err = (found.double() - gt).abs()
    assert torch.nanmedian(err) < 0.5
    assert torch.isnan(found).float().mean() < 0.05
    with pytest.raises(ValueError, match="images"):
        detector(clips.images)


def test_noise_models():
    z = torch.tensor([0.0, 10.0, 20.0], dtype=torch.float64)
    lanes = torch.zeros(1, 2, 1, 3, dtype=torch.float64)
    out = perturb_road_lanes(lanes, z, LaneNoise(lateral_bias=0.3, curvature_error=0.01))
    torch.testing.assert_close(out[0, 0, 0], torch.tensor([0.3, 0.3 + 0.5, 0.3 + 2.0], dtype=torch.float64))
    short = perturb_road_lanes(lanes, z, LaneNoise(max_range=15.0))
    assert torch.isnan(short[..., 2]).all()
    assert not torch.isnan(short[..., :2]).any()
    heading = perturb_road_lanes(lanes, z, LaneNoise(heading_error=math.atan(0.1)))
    torch.testing.assert_close(heading[0, 0, 0], torch.tensor([0.0, 1.0, 2.0], dtype=torch.float64))
    per_clip = perturb_road_lanes(lanes, z, LaneNoise(lateral_bias=torch.tensor([[0.1, -0.1]])))
    assert per_clip[0, 1, 0, 0] == pytest.approx(-0.1)
    assert set(NOISE_MODELS) >= {"accurate", "short range 15 m"}


def test_road_lanes_to_image_drops_missing(clips):
    noisy = perturb_road_lanes(clips.lanes_road, clips.z_samples, LaneNoise(max_range=15.0))
    img = road_lanes_to_image(noisy, clips.z_samples, clips.image_from_road, clips.h_samples, 256)
    _, z_row = _pinhole_u(LaneCamera(), 0.0, float(clips.h_samples[0]))
    assert z_row > 15  # the top row is beyond the range, so missing
    assert torch.isnan(img[..., 0]).all()
    with pytest.raises(ValueError, match="lanes_road"):
        road_lanes_to_image(noisy[..., :3], clips.z_samples, clips.image_from_road, clips.h_samples, 256)


def test_bad_arguments():
    with pytest.raises(ValueError, match="channels"):
        make_lane_clips(batch=1, frames=1, channels=2)
    with pytest.raises(ValueError, match="batch"):
        make_lane_clips(batch=0)


def test_noisy_detector_bias_in_road_frame(clips):
    from drivemetrics.geometry.camera import image_to_road

    base = PaintedLineDetector(clips.h_samples)
    images = clips.images[:, 0]
    clean = base(images).double()
    bias = torch.tensor([0.0, 0.5, -0.5], dtype=torch.float64)
    noisy = NoisyLaneDetector(base, LaneNoise(lateral_bias=bias), clips.image_from_road)(images).double()
    ok = ~torch.isnan(clean[..., 0])
    xz_clean, _ = image_to_road(clips.image_from_road, clean.nan_to_num())
    xz_noisy, _ = image_to_road(clips.image_from_road, noisy.nan_to_num())
    shift = (xz_noisy[..., 0] - xz_clean[..., 0])[ok]
    expected = bias[:, None, None].expand_as(ok)[ok]
    torch.testing.assert_close(shift, expected, atol=1e-3, rtol=0)
    short = NoisyLaneDetector(base, LaneNoise(max_range=10.0), clips.image_from_road)(images).double()
    xz_short, _ = image_to_road(clips.image_from_road, clean.nan_to_num())
    assert torch.isnan(short[..., 0][ok & (xz_short[..., 1] > 10.0)]).all()


def test_detections_from_gt(clips):
    road, image = detections_from_gt(clips, LaneNoise())
    torch.testing.assert_close(road, clips.lanes_road)
    # with no noise the projected detections agree with the GT image lanes wherever both exist (< 0.2 px:
    # the GT is interpolated from a finer distance grid)
    both = ~torch.isnan(image) & ~torch.isnan(clips.lanes_image)
    assert both.float().mean() > 0.5
    assert (image - clips.lanes_image)[both].abs().max() < 0.2
    _, biased = detections_from_gt(clips, LaneNoise(lateral_bias=0.5))
    ego_right = biased[:, :, 2] - clips.lanes_image[:, :, 2]
    assert (ego_right[~torch.isnan(ego_right)] > 0).all()  # moved right in the image
