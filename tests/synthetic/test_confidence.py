"""Synthetic detectors: each error model does what it claims, determinism, bad input."""

from __future__ import annotations

import pytest
import torch

from drivemetrics.geometry import BevGrid
from drivemetrics.synthetic import (
    DETECTOR_PRESETS,
    DetectorModel,
    default_image_from_road,
    ego_lane_scenes,
    make_road,
    render_bev,
    render_perspective,
    sample_detector,
    sample_road_geometry,
    synthetic_scenes,
)

GRID = BevGrid(x_min=-10, x_max=10, z_min=6, z_max=46, resolution=0.1)  # 400 x 200 cells
STRAIGHT = make_road([(100.0, 0.0, 0.0)], lane_width=3.5, lanes_left=1, lanes_right=0, shoulder=0.25)


def _conf_at(geometry, detector, x, z):
    """Confidence of a detector at road points ``x, z`` (``B x N``)."""
    coords = geometry.coordinates(x, z)
    return detector.confidence(geometry, coords, x, z, torch.ones_like(x, dtype=torch.bool))


def _transition_width(conf_row: torch.Tensor) -> int:
    """Cells of a BEV row whose confidence is undecided (between 0.1 and 0.9)."""
    return int(((conf_row > 0.1) & (conf_row < 0.9)).sum())


def test_far_range_blur_widens_the_boundary_with_distance():
    gen = torch.Generator().manual_seed(0)
    sharp = sample_detector(DetectorModel(noise=0.0), STRAIGHT, gen)
    blurry = sample_detector(DetectorModel(noise=0.0, blur_start=10.0, blur_growth=0.1), STRAIGHT, gen)
    near_row, far_row = GRID.rows - 40, 40  # z = 10 m and z = 42 m
    c_sharp = render_bev(STRAIGHT, GRID, image_size=None, detector=sharp).confidence[0]
    c_blurry = render_bev(STRAIGHT, GRID, image_size=None, detector=blurry).confidence[0]
    assert _transition_width(c_sharp[near_row]) == _transition_width(c_sharp[far_row])
    assert _transition_width(c_blurry[near_row]) == _transition_width(c_sharp[near_row])
    assert _transition_width(c_blurry[far_row]) > 5 * _transition_width(c_blurry[near_row])
    # the blurred map stays a monotone function of the distance to the edge in every row (no shift of the edge)
    edge_col = int((2.0 - GRID.x_min) / GRID.resolution)  # right road edge at x = 1.75 + 0.25
    assert c_blurry[far_row, edge_col - 1] > 0.5 > c_blurry[far_row, edge_col + 1]


def test_far_range_fade_relaxes_to_the_fade_level():
    det = sample_detector(DetectorModel(noise=0.0, fade_start=20.0, fade_length=5.0, fade_level=0.4), STRAIGHT)
    x = torch.tensor([[0.0, 9.0, 0.0, 9.0]])
    z = torch.tensor([[10.0, 10.0, 60.0, 60.0]])
    p = _conf_at(STRAIGHT, det, x, z)[0]
    assert p[0] > 0.95
    assert p[1] < 0.05  # road center and off-road near: unaffected
    assert p[2:].sub(0.4).abs().max() < 0.01  # 8 e-folding lengths later: ~ the fade level


def test_sidewalk_false_positives_appear_on_sidewalks_only():
    det = sample_detector(DetectorModel(sidewalk_fp=0.8, noise=0.0), STRAIGHT, torch.Generator().manual_seed(1))
    scene = render_bev(STRAIGHT, GRID, image_size=None, detector=det)
    conf, road, sidewalk = scene.confidence[0], scene.road[0], scene.sidewalk[0]
    assert conf[sidewalk].min() > 0.8 * 0.7
    false_pos = (conf > 0.5) & ~road
    assert false_pos.any()
    margin = STRAIGHT.edge_distance(scene.coords, "road")[0]
    assert (sidewalk | (margin > -0.3))[false_pos].all()  # every FP is on a sidewalk or right at the road edge
    clean = sample_detector(DetectorModel(noise=0.0), STRAIGHT)
    conf_clean = render_bev(STRAIGHT, GRID, image_size=None, detector=clean).confidence[0]
    assert conf_clean[sidewalk & (margin < -0.5)].max() < 0.05


def test_shadows_darken_the_road_under_them():
    model = DetectorModel(noise=0.0, shadows=3, shadow_strength=0.6, shadow_radius=(1.0, 1.5))
    det = sample_detector(model, STRAIGHT, torch.Generator().manual_seed(2))
    centers = det.shadows[0]
    x, z = centers[:, 0][None], centers[:, 1][None]
    coords = STRAIGHT.coordinates(x, z)
    on_road_inside = (STRAIGHT.edge_distance(coords, "road") > 0.6)[0]
    assert on_road_inside.any()
    p = _conf_at(STRAIGHT, det, x, z)[0]
    no_shadow = sample_detector(DetectorModel(noise=0.0), STRAIGHT)
    p_ref = _conf_at(STRAIGHT, no_shadow, x, z)[0]
    # at a disc center the soft disc is ~1: confidence drops by the shadow strength
    torch.testing.assert_close(p[on_road_inside], p_ref[on_road_inside] * 0.4, atol=0.02, rtol=0)


def test_potholes_punch_holes_into_the_ego_lane_confidence():
    model = DetectorModel(target="lane", noise=0.0, potholes=4, pothole_radius=(0.5, 0.8))
    geo = sample_road_geometry(3, torch.Generator().manual_seed(3))
    det = sample_detector(model, geo, torch.Generator().manual_seed(4))
    x, z = det.potholes[..., 0], det.potholes[..., 1]
    coords = geo.coordinates(x, z)
    assert geo.lane_mask(coords).all()  # holes lie inside the GT ego lane
    assert _conf_at(geo, det, x, z).max() < 0.1
    _, scene = ego_lane_scenes(2, torch.Generator().manual_seed(0), grid=GRID)
    holes = scene.lane & (scene.confidence < 0.2) & scene.valid
    assert holes.any()


def test_off_target_false_positives_for_lane_detectors():
    det = sample_detector(DetectorModel(target="lane", noise=0.0, off_target_fp=0.3), STRAIGHT)
    x = torch.tensor([[0.0, -3.5, 6.0]])  # ego lane, the lane on the left, off-road
    z = torch.full_like(x, 20.0)
    p = _conf_at(STRAIGHT, det, x, z)[0]
    assert p[0] > 0.95
    assert 0.3 * 0.7 <= p[1] <= 0.3
    assert p[2] < 0.05


def test_boundary_bias_moves_the_half_confidence_edge():
    det = sample_detector(DetectorModel(noise=0.0, boundary_bias=0.5), STRAIGHT)
    x = torch.tensor([[2.0 + 0.45, 2.0 + 0.55]])  # right road edge at x = 2.0
    p = _conf_at(STRAIGHT, det, x, torch.full_like(x, 20.0))[0]
    assert p[0] > 0.5 > p[1]


def test_detectors_are_deterministic_per_seed_and_in_range():
    geo = sample_road_geometry(2, torch.Generator().manual_seed(0))
    maps = []
    for seed in (5, 5, 6):
        det = sample_detector("shadowed", geo, torch.Generator().manual_seed(seed))
        quarter = torch.diag(torch.tensor([0.25, 0.25, 1.0], dtype=torch.float64)) @ default_image_from_road()
        maps.append(render_perspective(geo, quarter, image_size=(94, 311), detector=det).confidence)
    assert torch.equal(maps[0], maps[1])
    assert not torch.equal(maps[0], maps[2])
    assert maps[0].min() >= 0
    assert maps[0].max() <= 1


def test_perspective_and_bev_confidences_agree_on_shared_points():
    geo = sample_road_geometry(1, torch.Generator().manual_seed(8))
    det = sample_detector("good", geo, torch.Generator().manual_seed(9))
    per = render_perspective(geo, detector=det)
    ground = per.on_ground[0] & (per.z[0] > 6) & (per.z[0] < 46) & (per.x[0].abs() < 10)
    x, z = per.x[0][ground][None], per.z[0][ground][None]
    torch.testing.assert_close(per.confidence[0][ground][None], _conf_at(geo, det, x, z), atol=1e-5, rtol=0)
    assert (per.confidence[0][~per.on_ground[0]] == det.model.low).all()


def test_synthetic_scenes_on_device(device):
    _, ref = synthetic_scenes(2, torch.Generator().manual_seed(0), detector="good", grid=GRID)
    _, out = synthetic_scenes(2, torch.Generator().manual_seed(0), detector="good", grid=GRID, device=device)
    assert out.confidence.device.type == device.type
    torch.testing.assert_close(out.confidence.cpu(), ref.confidence, atol=1e-3, rtol=0)


def test_ego_lane_scenes_in_perspective():
    quarter = torch.diag(torch.tensor([0.25, 0.25, 1.0], dtype=torch.float64)) @ default_image_from_road()
    _, scene = ego_lane_scenes(
        3, torch.Generator().manual_seed(0), space="perspective", image_from_road=quarter, image_size=(94, 311)
    )
    assert scene.lane.shape == scene.confidence.shape == (3, 94, 311)
    assert scene.lane.any(2).any(1).all()
    assert not (scene.lane & ~scene.road).any()  # the ego lane lies on the road
    assert scene.confidence[scene.lane].mean() > 0.8
    assert scene.confidence[~scene.road].mean() < 0.1


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"target": "sky"}, "target"),
        ({"high": 0.2, "low": 0.5}, "low"),
        ({"edge_softness": 0.0}, "edge_softness"),
        ({"sidewalk_fp": 1.5}, "sidewalk_fp"),
        ({"shadows": -1}, "shadows"),
        ({"pothole_radius": (1.0, 0.5)}, "pothole_radius"),
    ],
)
def test_detector_model_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        DetectorModel(**kwargs)


def test_unknown_preset_and_wrong_target():
    with pytest.raises(ValueError, match="preset"):
        sample_detector("psychic", STRAIGHT)
    with pytest.raises(ValueError, match="target='lane'"):
        ego_lane_scenes(1, detector=DETECTOR_PRESETS["good"])
    with pytest.raises(ValueError, match="space"):
        synthetic_scenes(1, space="3d")
