"""Road geometry and GT rendering: hand-computed geometry, BEV <-> perspective consistency, determinism."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from drivemetrics.geometry import BevGrid
from drivemetrics.synthetic import (
    KITTI_IMAGE_SIZE,
    Centerline,
    Profile,
    RoadGeometry,
    baseline_prior,
    default_image_from_road,
    kitti_gt_image,
    make_road,
    mean_gt_prior,
    render_bev,
    render_perspective,
    road_points_from_pixels,
    sample_road_geometry,
)

SMALL_GRID = BevGrid(x_min=-10, x_max=10, z_min=6, z_max=46, resolution=0.2)  # 200 x 100 cells


# --- profiles -----------------------------------------------------------------------------------------------


def test_profile_interpolates_linearly_steps_and_holds_ends():
    p = Profile(torch.tensor([[10.0, 20.0, 20.0, 30.0]]), torch.tensor([[1.0, 3.0, 5.0, 4.0]]))
    s = torch.tensor([[0.0, 10.0, 15.0, 19.99, 20.0, 25.0, 30.0, 99.0]])
    expected = torch.tensor([[1.0, 1.0, 2.0, 2.998, 5.0, 4.5, 4.0, 4.0]])
    torch.testing.assert_close(p(s), expected, atol=1e-5, rtol=0)


def test_profile_constant_and_ramp():
    c = Profile.constant([1.5, -2.0], batch_size=2)
    torch.testing.assert_close(c(torch.tensor([[0.0, 50.0], [3.0, 7.0]])), torch.tensor([[1.5, 1.5], [-2.0, -2.0]]))
    r = Profile.ramp(10.0, 20.0, 2.0, 1.0)
    torch.testing.assert_close(r(torch.tensor([[5.0, 12.5, 25.0]])), torch.tensor([[2.0, 1.75, 1.0]]))


def test_profile_bad_input():
    with pytest.raises(ValueError, match="non-decreasing"):
        Profile(torch.tensor([[2.0, 1.0]]), torch.tensor([[0.0, 0.0]]))
    with pytest.raises(ValueError, match="B x K"):
        Profile(torch.tensor([1.0]), torch.tensor([1.0]))
    with pytest.raises(ValueError, match="value"):
        Profile.constant([1.0, 2.0, 3.0], batch_size=2)
    with pytest.raises(ValueError, match="finite"):
        Profile.constant(float("nan"))


# --- centerline -----------------------------------------------------------------------------------------------


def test_straight_centerline_points_and_heading():
    heading = 0.1
    c = Centerline.from_segments([(50.0, 0.0, 0.0)], start_x=1.0, start_heading=heading, dtype=torch.float64)
    s = torch.tensor([[0.0, 7.5, 30.0]], dtype=torch.float64)
    x, z, th = c.points(s)
    torch.testing.assert_close(x, 1.0 + s * math.sin(heading))
    torch.testing.assert_close(z, s * math.cos(heading))
    torch.testing.assert_close(th, torch.full_like(s, heading))


@pytest.mark.parametrize("kappa", [1 / 40, -1 / 25])
def test_constant_curvature_centerline_is_a_circle(kappa):
    c = Centerline.from_segments([(35.0, kappa, kappa)], dtype=torch.float64)
    s = torch.linspace(0, 35, 15, dtype=torch.float64)[None]
    x, z, th = c.points(s)
    radius = 1 / kappa  # center of curvature at (radius, 0): to the right for kappa > 0
    phi = s * kappa
    torch.testing.assert_close(x, radius * (1 - torch.cos(phi)), atol=1e-9, rtol=0)
    torch.testing.assert_close(z, radius * torch.sin(phi), atol=1e-9, rtol=0)
    torch.testing.assert_close(th, phi, atol=1e-12, rtol=0)


def test_clothoid_heading_and_position_against_numeric_integration():
    k0, k1, length = 0.0, 0.03, 40.0
    c = Centerline.from_segments([(10.0, 0.0, 0.0), (length, k0, k1)], dtype=torch.float64)
    s_fine = np.linspace(0, 50, 500_001)
    t = np.clip(s_fine - 10, 0, None)
    theta = k0 * t + (k1 - k0) * t**2 / (2 * length)
    ds = s_fine[1] - s_fine[0]
    x_ref = np.concatenate([[0], np.cumsum((np.sin(theta[1:]) + np.sin(theta[:-1])) / 2 * ds)])
    z_ref = np.concatenate([[0], np.cumsum((np.cos(theta[1:]) + np.cos(theta[:-1])) / 2 * ds)])
    idx = np.array([0, 100_000, 250_000, 400_000, 500_000])
    x, z, th = c.points(torch.tensor(s_fine[idx])[None])
    np.testing.assert_allclose(th[0].numpy(), theta[idx], atol=1e-12)
    np.testing.assert_allclose(x[0].numpy(), x_ref[idx], atol=2e-4)
    np.testing.assert_allclose(z[0].numpy(), z_ref[idx], atol=2e-4)


def test_centerline_bad_input():
    with pytest.raises(ValueError, match="segment_lengths"):
        Centerline.from_segments([(-1.0, 0.0, 0.0)])
    with pytest.raises(ValueError, match="NaN"):
        Centerline.from_segments([(10.0, float("nan"), 0.0)])
    with pytest.raises(ValueError, match="at least one"):
        Centerline.from_segments([])


# --- projection onto the centerline ----------------------------------------------------------------------------


def test_straight_road_lateral_offset_hand_computed():
    heading = 0.2
    road = make_road([(100.0, 0.0, 0.0)], start_x=0.5, start_heading=heading, dtype=torch.float64)
    x = torch.tensor([[0.5, 3.0, -4.0, 10.0]], dtype=torch.float64)
    z = torch.tensor([[10.0, 20.0, 30.0, 40.0]], dtype=torch.float64)
    # signed distance to the line through (0.5, 0) with direction (sin h, cos h), + right
    expected_d = (x - 0.5) * math.cos(heading) - z * math.sin(heading)
    expected_s = (x - 0.5) * math.sin(heading) + z * math.cos(heading)
    c = road.coordinates(x, z)
    torch.testing.assert_close(c.d, expected_d, atol=1e-9, rtol=0)
    torch.testing.assert_close(c.s, expected_s, atol=1e-9, rtol=0)
    assert c.on_centerline.all()
    torch.testing.assert_close(road.lateral_offset(x, z), expected_d, atol=1e-9, rtol=0)


@pytest.mark.parametrize("kappa", [1 / 50, -1 / 30])
def test_constant_curvature_offsets_match_circle_formula(kappa):
    road = make_road([(40.0, kappa, kappa)], dtype=torch.float64)
    gen = torch.Generator().manual_seed(0)
    arc = torch.rand(1, 200, generator=gen, dtype=torch.float64) * 40
    offset = (torch.rand(1, 200, generator=gen, dtype=torch.float64) - 0.5) * 12
    radius = 1 / kappa  # signed; the center of curvature is (radius, 0)
    theta = kappa * arc
    # centerline point (R (1 - cos theta), R sin theta), right normal (cos theta, -sin theta)
    x = radius * (1 - torch.cos(theta)) + offset * torch.cos(theta)
    z = radius * torch.sin(theta) - offset * torch.sin(theta)
    c = road.coordinates(x, z)
    center_dist = torch.sqrt((x - radius) ** 2 + z**2)
    torch.testing.assert_close(c.d, math.copysign(1, kappa) * (abs(radius) - center_dist), atol=1e-8, rtol=0)
    torch.testing.assert_close(c.d, offset, atol=1e-8, rtol=0)
    torch.testing.assert_close(c.s, arc, atol=1e-8, rtol=0)
    assert c.on_centerline.all()


def _numpy_centerline(lengths, k_start, k_end, x0, heading0, step=0.01):
    """Independent oracle: integrate the curvature profile with the trapezoid rule on a fine grid."""
    s = np.arange(0, lengths.sum() + step / 2, step)
    ends = np.cumsum(lengths)
    seg = np.minimum(np.searchsorted(ends, s, side="right"), len(lengths) - 1)
    local = s - (ends[seg] - lengths[seg])
    kappa = k_start[seg] + (k_end[seg] - k_start[seg]) * local / np.maximum(lengths[seg], 1e-12)
    theta = heading0 + np.concatenate([[0], np.cumsum((kappa[1:] + kappa[:-1]) / 2 * step)])
    x = x0 + np.concatenate([[0], np.cumsum((np.sin(theta[1:]) + np.sin(theta[:-1])) / 2 * step)])
    z = np.concatenate([[0], np.cumsum((np.cos(theta[1:]) + np.cos(theta[:-1])) / 2 * step)])
    return s, x, z, theta


def test_random_roads_projection_matches_brute_force_nearest_point():
    geo = sample_road_geometry(4, torch.Generator().manual_seed(11), dtype=torch.float64)
    gen = torch.Generator().manual_seed(1)
    px = (torch.rand(4, 300, generator=gen, dtype=torch.float64) - 0.5) * 24
    pz = 6 + torch.rand(4, 300, generator=gen, dtype=torch.float64) * 40
    coords = geo.coordinates(px, pz)
    c = geo.centerline
    for b in range(4):
        s, x, z, theta = _numpy_centerline(
            c.segment_lengths[b].numpy(),
            c.curvature_start[b].numpy(),
            c.curvature_end[b].numpy(),
            c.start_x[b].item(),
            c.start_heading[b].item(),
        )
        dist2 = (px[b].numpy()[:, None] - x[None]) ** 2 + (pz[b].numpy()[:, None] - z[None]) ** 2
        i = dist2.argmin(1)
        d_ref = (px[b].numpy() - x[i]) * np.cos(theta[i]) - (pz[b].numpy() - z[i]) * np.sin(theta[i])
        interior = (i > 0) & (i < len(s) - 1)
        on = coords.on_centerline[b].numpy()
        assert (on == interior).mean() > 0.99
        both = on & interior
        assert both.sum() > 100
        np.testing.assert_allclose(coords.d[b].numpy()[both], d_ref[both], atol=2e-3)
        np.testing.assert_allclose(coords.s[b].numpy()[both], s[i][both], atol=6e-3)


def test_points_at_round_trips_through_coordinates():
    road = make_road([(10.0, 0.0, 0.0), (30.0, 1 / 40, 1 / 40), (30.0, -1 / 40, -1 / 40)], dtype=torch.float64)
    s = torch.tensor([[5.0, 20.0, 35.0, 55.0]], dtype=torch.float64)
    d = torch.tensor([[-2.0, 1.75, -1.75, 3.0]], dtype=torch.float64)
    x, z = road.points_at(s, d)
    c = road.coordinates(x, z)
    torch.testing.assert_close(c.s, s, atol=1e-9, rtol=0)
    torch.testing.assert_close(c.d, d, atol=1e-9, rtol=0)
    # on the straight start: hand-computed
    assert x[0, 0].item() == pytest.approx(-2.0)
    assert z[0, 0].item() == pytest.approx(5.0)


def test_points_behind_start_or_beyond_end_are_off_the_centerline():
    road = make_road([(30.0, 0.0, 0.0)], dtype=torch.float64)
    c = road.coordinates(torch.tensor([[0.0, 1.0, 0.0]]), torch.tensor([[-2.0, 15.0, 31.0]]))
    assert c.on_centerline.tolist() == [[False, True, False]]
    assert torch.isnan(road.lateral_offset(torch.tensor([[0.0]]), torch.tensor([[-2.0]]))).all()


def test_backwards_road_raises():
    road = make_road([(80.0, 1 / 40, 1 / 40)])  # turns by 2 rad: leaves the forward half-plane
    with pytest.raises(ValueError, match="forward"):
        road.coordinates(torch.zeros(1, 1), torch.ones(1, 1))


# --- membership ------------------------------------------------------------------------------------------------


def test_straight_road_bev_masks_match_hand_computed_boundaries():
    road = make_road([(100.0, 0.0, 0.0)], lane_width=3.5, lanes_left=1, lanes_right=0, shoulder=0.25, start_x=0.5)
    scene = render_bev(road, SMALL_GRID, image_size=None)
    x, _ = SMALL_GRID.cell_centers(torch.float64)
    # road: [0.5 - 1.75 - 3.5 - 0.25, 0.5 + 1.75 + 0.25]; ego lane: 0.5 +- 1.75; sidewalk 2 m beyond each edge
    road_ref = (x >= 0.5 - 5.5) & (x <= 0.5 + 2.0)
    lane_ref = (x >= 0.5 - 1.75) & (x <= 0.5 + 1.75)
    side_ref = ((x >= -7.0) & (x < -5.0)) | ((x > 2.5) & (x <= 4.5))
    assert torch.equal(scene.road[0], road_ref)
    assert torch.equal(scene.lane[0], lane_ref)
    assert torch.equal(scene.sidewalk[0], side_ref)
    assert scene.valid.all()


def test_narrowing_lane_widths():
    road = make_road([(100.0, 0.0, 0.0)], lane_width=3.5, narrowing=(15.0, 25.0, 2.5), dtype=torch.float64)
    z = torch.tensor([10.0, 20.0, 30.0], dtype=torch.float64)
    x = torch.linspace(-3, 3, 6001, dtype=torch.float64)
    xx, zz = torch.meshgrid(x, z, indexing="xy")
    c = road.coordinates(xx[None], zz[None])
    width = road.lane_mask(c)[0].sum(1).double() * (x[1] - x[0])
    torch.testing.assert_close(width, torch.tensor([3.5, 3.0, 2.5], dtype=torch.float64), atol=2e-3, rtol=0)


def test_constant_curvature_road_mask_matches_annulus():
    kappa = 1 / 60
    road = make_road([(70.0, kappa, kappa)], lane_width=3.0, lanes_left=0, lanes_right=0, shoulder=0.0)
    scene = render_bev(road, SMALL_GRID, image_size=None)
    x, z = SMALL_GRID.cell_centers(torch.float64)
    dist = torch.sqrt((x - 60) ** 2 + z**2)
    angle = torch.atan2(z, 60 - x)
    ref = (dist >= 58.5) & (dist <= 61.5) & (angle >= 0) & (angle <= 70 * kappa)
    # cells within float32 rounding of the boundary may differ
    near_edge = ((dist - 58.5).abs() < 1e-3) | ((dist - 61.5).abs() < 1e-3)
    assert torch.equal(scene.road[0][~near_edge], ref[~near_edge])
    assert ref.sum() > 1000


# --- camera and perspective -----------------------------------------------------------------------------------


def test_embedded_camera_reproduces_devkit_check_points():
    h = default_image_from_road()
    for (x, z), (u, v) in [((0.025, 25.975), (612.489, 222.544)), ((-9.975, 45.975), (453.354, 205.338))]:
        uvw = h @ torch.tensor([x, z, 1.0], dtype=torch.float64)
        assert uvw[0].item() / uvw[2].item() == pytest.approx(u, abs=1e-3)
        assert uvw[1].item() / uvw[2].item() == pytest.approx(v, abs=1e-3)


def test_bev_valid_area_is_the_camera_view():
    road = make_road()
    scene = render_bev(road)  # KITTI grid and camera
    valid = scene.valid[0]
    assert valid.shape == (800, 400)
    # devkit check points (kitti_road.md section 7): near corners outside the image, far ones inside
    assert not valid[799, 200]
    assert not valid[799, 399]
    assert valid[400, 200]
    assert valid[0, 0]
    assert valid[0, 399]
    # the devkit's LUT has 307,362 valid cells with its 1-based rule; ours uses pixel edges: within 0.1 %
    assert abs(int(valid.sum()) - 307_362) < 320


def test_road_points_from_pixels_round_trip_and_horizon():
    x, z, on_ground = road_points_from_pixels()
    h = default_image_from_road()
    assert on_ground[0, -1].all()
    assert not on_ground[0, 0].any()
    pts = torch.stack([x[0][on_ground[0]], z[0][on_ground[0]], torch.ones(int(on_ground.sum()))], -1).double()
    uvw = pts @ h.T
    v, u = torch.nonzero(on_ground[0], as_tuple=True)
    torch.testing.assert_close(uvw[:, 0] / uvw[:, 2], u.double(), atol=1e-6, rtol=0)
    torch.testing.assert_close(uvw[:, 1] / uvw[:, 2], v.double(), atol=1e-6, rtol=0)
    assert (z[on_ground] > 0).all()


def test_perspective_pixels_above_horizon_are_valid_non_road():
    scene = render_perspective(make_road(), image_size=KITTI_IMAGE_SIZE)
    above = ~scene.on_ground
    assert above.any()
    assert not scene.road[above].any()
    assert scene.valid[above].all()


def test_bev_road_cells_project_onto_perspective_road_pixels():
    gen = torch.Generator().manual_seed(7)
    roads = sample_road_geometry(3, gen, dtype=torch.float64)
    bev = render_bev(roads, SMALL_GRID)
    per = render_perspective(roads)
    h = default_image_from_road()
    x, z = SMALL_GRID.cell_centers(torch.float64)
    uvw = torch.stack([x, z, torch.ones_like(x)], -1) @ h.T
    col = (uvw[..., 0] / uvw[..., 2]).round().long()
    row = (uvw[..., 1] / uvw[..., 2]).round().long()
    margin = roads.edge_distance(bev.coords, "road")
    for b in range(3):
        seen = bev.valid[b]
        r, c = row[seen], col[seen]
        persp_road = per.road[b][r, c]
        m = margin[b][seen]
        # a pixel's ground footprint is < 0.5 m laterally in this range: away from the edges both views agree
        assert persp_road[m > 0.5].all()
        assert not persp_road[m < -0.5].any()
        assert (persp_road == bev.road[b][seen]).float().mean() > 0.97


# --- batching, determinism, devices ----------------------------------------------------------------------------


def test_generator_is_deterministic_per_seed():
    a = sample_road_geometry(4, torch.Generator().manual_seed(3))
    b = sample_road_geometry(4, torch.Generator().manual_seed(3))
    c = sample_road_geometry(4, torch.Generator().manual_seed(4))
    ra, rb, rc = (render_bev(g, SMALL_GRID) for g in (a, b, c))
    assert torch.equal(ra.road, rb.road)
    assert torch.equal(ra.lane, rb.lane)
    assert torch.equal(a.centerline.curvature_start, b.centerline.curvature_start)
    assert not torch.equal(ra.road, rc.road)


def test_generator_covers_the_kinds_and_keeps_heading_forward():
    geo = sample_road_geometry(64, torch.Generator().manual_seed(0), narrowing_probability=0.5)
    s = torch.linspace(0, 150, 301).expand(64, 301)
    heading = geo.centerline.heading(s)
    assert heading.abs().max() < 1.3
    kappa = geo.centerline.curvature(s)
    assert (kappa.abs().amax(1) == 0).any()  # straight roads
    assert ((kappa.amax(1) > 0) & (kappa.amin(1) < 0)).any()  # S-curves
    lane_width = geo.lane_right(s) - geo.lane_left(s)
    assert (lane_width[:, 0] - lane_width[:, -1] > 0.3).any()  # narrowing lanes
    road = render_bev(geo[:8], SMALL_GRID)
    assert road.lane.any(2).any(1).all()


def test_batched_rendering_equals_per_scene_rendering():
    geo = sample_road_geometry(3, torch.Generator().manual_seed(1))
    batched = render_bev(geo, SMALL_GRID)
    for i in range(3):
        single = render_bev(geo[i], SMALL_GRID)
        assert torch.equal(single.road[0], batched.road[i])
        assert torch.equal(single.lane[0], batched.lane[i])


def test_cat_and_getitem_round_trip():
    a = make_road([(50.0, 0.0, 0.0)])
    b = make_road([(20.0, 0.0, 0.01), (40.0, 0.01, 0.01)], narrowing=(10.0, 20.0, 3.0))
    both = RoadGeometry.cat([a, b])
    assert both.batch_size == 2
    r_both = render_bev(both, SMALL_GRID, image_size=None)
    assert torch.equal(r_both.road[1], render_bev(b, SMALL_GRID, image_size=None).road[0])
    assert torch.equal(render_bev(both[0], SMALL_GRID, image_size=None).road[0], r_both.road[0])


def _quarter_camera() -> torch.Tensor:
    """The KITTI camera at a quarter of the resolution (u and v divided by 4)."""
    return torch.diag(torch.tensor([0.25, 0.25, 1.0], dtype=torch.float64)) @ default_image_from_road()


def test_rendering_on_device_matches_cpu(device):
    geo = sample_road_geometry(2, torch.Generator().manual_seed(5))
    ref = render_perspective(geo, _quarter_camera(), image_size=(94, 311))
    out = render_perspective(geo.to(device), _quarter_camera().to(device), image_size=(94, 311))
    assert out.road.device.type == device.type
    assert ref.road.any()
    assert (out.road.cpu() == ref.road).float().mean() > 0.999


# --- GT encodings and the prior --------------------------------------------------------------------------------


def test_kitti_gt_image_colours():
    target = torch.tensor([[[True, False, True]]])
    valid = torch.tensor([[[True, True, False]]])
    rgb = kitti_gt_image(target, valid)
    assert rgb.dtype == torch.uint8
    assert rgb.shape == (1, 3, 1, 3)
    assert rgb[0, :, 0, 0].tolist() == [255, 0, 255]  # magenta road
    assert rgb[0, :, 0, 1].tolist() == [255, 0, 0]  # red valid non-road
    assert rgb[0, :, 0, 2].tolist() == [0, 0, 0]  # black don't care
    with pytest.raises(ValueError, match="valid"):
        kitti_gt_image(target, valid[..., :2])


def test_mean_gt_prior_hand_computed():
    masks = torch.tensor([[[1, 0], [1, 1]], [[1, 0], [0, 1]], [[0, 0], [1, 1]], [[1, 1], [0, 1]]], dtype=torch.bool)
    torch.testing.assert_close(mean_gt_prior(masks), torch.tensor([[0.75, 0.25], [0.5, 1.0]]))
    valid = torch.ones_like(masks)
    valid[0, 0, 0] = False
    torch.testing.assert_close(mean_gt_prior(masks, valid)[0, 0], torch.tensor(2 / 3))
    with pytest.raises(ValueError, match="N x H x W"):
        mean_gt_prior(masks[0])


def test_baseline_prior_peaks_on_the_ego_lane_and_decays_with_distance():
    prior = baseline_prior(24, torch.Generator().manual_seed(0), grid=SMALL_GRID, chunk=12)
    assert prior.shape == SMALL_GRID.shape
    assert prior.min() >= 0
    assert prior.max() <= 1
    center = SMALL_GRID.cols // 2
    near, far = prior[-5, center - 2 : center + 2].mean(), prior[5, center - 2 : center + 2].mean()
    assert near > 0.9
    assert far < near
    assert prior[-5, 0] < 0.1  # 10 m to the left: never the ego lane


# --- bad input -------------------------------------------------------------------------------------------------


def test_render_bad_input():
    road = make_road()
    with pytest.raises(ValueError, match="image_from_road"):
        render_perspective(road, image_from_road=torch.eye(4))
    with pytest.raises(TypeError, match="image_from_road"):
        render_bev(road, image_from_road=np.eye(3))
    with pytest.raises(ValueError, match="image_size"):
        render_perspective(road, image_size=(0, 10))
    with pytest.raises(ValueError, match="kind"):
        render_bev(road, SMALL_GRID).target("sidewalk")
    with pytest.raises(ValueError, match="kinds"):
        sample_road_geometry(2, kinds=["zigzag"])
    with pytest.raises(ValueError, match="batch_size"):
        sample_road_geometry(0)
    with pytest.raises(ValueError, match="narrowing"):
        make_road(narrowing=(20.0, 10.0, 3.0))
