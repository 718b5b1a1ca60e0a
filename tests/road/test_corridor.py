"""Driving corridor (Fritsch et al. 2013): rasterisation, search behaviour, scores, metric, bad input.

There is no reference implementation; these tests are the oracle. Lanes are drawn along known single-track paths
with an independent numpy point-in-element test (offset from the arc and arc-length position of every cell center).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import fields, replace

import numpy as np
import pytest
import torch

from drivemetrics.geometry.bev import BevGrid
from drivemetrics.road.corridor import (
    DrivingCorridorMetrics,
    _element_rows,
    _element_spans,
    _paint_spans,
    _span_sums,
    corridor_curves,
    corridor_row_statistics,
    driving_corridor_scores,
    fit_driving_corridor,
)
from drivemetrics.road.corridor_config import DEFAULT_CONFIG_PATH, CorridorConfig, load_corridor_config
from drivemetrics.road.evaluate import corridor_table, format_corridor_table

GRID = BevGrid()
CFG = CorridorConfig()
L = CFG.wheelbase


# ----------------------------------------------------------------------------------------------------------------
# independent numpy geometry


def element_mask_np(x0, z0, h0, rho, arc, width, xs, zs):
    """Cells (centers xs, zs) of the constant-steering element from pose (x0, z0, h0), wheel angle rho, arc length.

    Point test: local coordinates (a right, f forward); offset n from the arc solves k n^2 - 2 n = k |p|^2 - 2 a,
    arc position s = atan2(k f, 1 - k a) / k (the straight limit is n = a, s = f).
    """
    k = math.tan(rho) / L
    dx, dz = xs - x0, zs - z0
    a = dx * math.cos(h0) - dz * math.sin(h0)
    f = dx * math.sin(h0) + dz * math.cos(h0)
    if k == 0:
        n, s = a, f
    else:
        m = k * (a * a + f * f) - 2 * a
        n = -m / (1 + np.sqrt(np.maximum(1 + k * m, 0)))
        s = np.arctan2(k * f, 1 - k * a) / k
    return (np.abs(n) <= width / 2) & (s >= 0) & (s < arc)


def step_pose(x, z, h, rho, arc):
    """Exact end pose after an arc of length ``arc`` at wheel angle ``rho`` (independent of the library)."""
    k = math.tan(rho) / L
    if k == 0:
        return x + arc * math.sin(h), z + arc * math.cos(h), h
    theta = k * arc
    lat, fwd = (1 - math.cos(theta)) / k, math.sin(theta) / k
    return x + lat * math.cos(h) + fwd * math.sin(h), z - lat * math.sin(h) + fwd * math.cos(h), h + theta


def lane_np(pieces, width, grid=GRID, start=(0.0, 6.0, 0.0), piece_len=1e9):
    """Boolean H x W lane of ``width`` along a single-track path given as [(wheel angle, length m), ...].

    Each constant-steering piece is one exact annular sector (turns below pi), unless split by ``piece_len``.
    """
    xs, zs = (t.numpy().astype(np.float64) for t in grid.cell_centers(torch.float64))
    mask = np.zeros(grid.shape, bool)
    x, z, h = start
    for rho, length in pieces:
        n = max(1, round(length / piece_len))
        for _ in range(n):
            mask |= element_mask_np(x, z, h, rho, length / n, width, xs, zs)
            x, z, h = step_pose(x, z, h, rho, length / n)
    return mask, (x, z, h)


def straight_lane(width=3.5, z_end=44.0, x_shift=0.0, grid=GRID):
    xs, zs = grid.cell_centers()
    return ((xs - x_shift).abs() <= width / 2) & (zs <= z_end)


def stats_at(scores, d):
    return (scores[f"precision_lat_{d}m"].item(), scores[f"f1_long_{d}m"].item(), scores[f"hitrate_{d}m"].item())


# ----------------------------------------------------------------------------------------------------------------
# config


def test_config_file_matches_dataclass_defaults():
    assert load_corridor_config(DEFAULT_CONFIG_PATH) == CorridorConfig()
    assert CFG.wheel_angles == (0.0, -0.05, 0.05, -0.1, 0.1)
    assert (CFG.speed, CFG.dt, CFG.steps_per_stage, CFG.width, CFG.det_min) == (10.0, 0.05, 6, 2.2, 0.5)
    assert {f.name for f in fields(CorridorConfig)} >= {"min_distance", "min_overlap", "distances"}


def test_config_overrides_and_unknown_key(tmp_path):
    assert load_corridor_config(curvatures_per_side=3).wheel_angles[-1] == pytest.approx(0.15)
    bad = tmp_path / "c.toml"
    bad.write_text("[vehicle]\nspeeed = 3.0\n")
    with pytest.raises(KeyError, match="speeed"):
        load_corridor_config(bad)
    with pytest.raises(FileNotFoundError):
        load_corridor_config(tmp_path / "missing.toml")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"speed": 0.0},
        {"width": -1.0},
        {"det_min": 1.0},
        {"steps_per_stage": 0},
        {"curvatures_per_side": 40},  # 40 * 0.05 rad > pi / 2
        {"wheel_angle_step": 0.7, "curvatures_per_side": 2},  # turn radius below W / 2
        {"distances": (5.0,)},  # before min_distance
        {"min_overlap": 0.0},
        {"dt": float("nan")},
    ],
)
def test_config_rejects_bad_values(kwargs):
    with pytest.raises(ValueError, match="must"):
        CorridorConfig(**kwargs)


# ----------------------------------------------------------------------------------------------------------------
# rasterisation


def test_element_spans_match_point_test_including_outside_cells():
    """Random elements (any heading, partly outside the grid): span areas and masks equal the brute-force test."""
    grid = BevGrid(x_min=-4.0, x_max=4.0, z_min=6.0, z_max=14.0, resolution=0.05)
    rng = np.random.default_rng(0)
    n = 60
    rhos = rng.choice([0.0, 0.05, -0.05, 0.1, -0.1, 0.3, -0.3], n)
    poses = np.stack([rng.uniform(-5, 5, n), rng.uniform(5, 15, n), rng.uniform(-math.pi, math.pi, n)], 1)
    arcs = CFG.speed * CFG.dt * CFG.steps_per_stage * np.cos(rhos)
    ends = np.array([step_pose(*p, r, a) for p, r, a in zip(poses, rhos, arcs, strict=True)])
    start = torch.tensor(poses)[None]
    end = torch.tensor(ends)[None]
    k = torch.tensor(np.tan(rhos) / L)[None]
    R_max = 1 / np.abs(np.tan(0.3) / L)
    bulge = (R_max + 1.1) * (1 - math.cos(3.0 / R_max / 2)) + 1e-4
    first, num_rows = _element_rows(start, end, CFG.width, bulge, grid)
    spans = _element_spans(start, end, k, CFG.width, grid, first, num_rows)
    ones = torch.nn.functional.pad(torch.ones(1, *grid.shape, dtype=torch.float64).cumsum(-1), (1, 0)).flatten()
    area, (inside,) = _span_sums(*spans, (ones,), torch.tensor([0]), grid)
    painted = _paint_spans(*spans, torch.ones(1, n, dtype=torch.bool), grid)[0].numpy()
    # extended lattice: 7 m margin left, right and near; rows beyond the far edge are cut off
    m = 140
    j = np.arange(-m, grid.cols + m)
    i = np.arange(0, grid.rows + m)
    xs, zs = np.meshgrid(grid.x_min + (j + 0.5) * grid.resolution, grid.z_max - (i + 0.5) * grid.resolution)
    union = np.zeros(grid.shape, bool)
    two_span_rows = 0
    for e in range(n):
        cells = element_mask_np(*poses[e], rhos[e], arcs[e], CFG.width, xs, zs)
        assert area[0, e].item() == cells.sum(), e
        in_grid = cells[: grid.rows, m : m + grid.cols]
        assert inside[0, e].item() == in_grid.sum(), e
        union |= in_grid
        two_span_rows += int((np.diff(cells.astype(int), axis=1) == 1).sum(1).max() > 1)
    assert (painted == union).all()
    assert area.sum() > 0


def test_two_span_rows_of_a_sideways_turn():
    """A tight turn driving sideways: rows cross the inner hole, giving two spans per row; still exact."""
    grid = BevGrid(x_min=-3.0, x_max=3.0, z_min=6.0, z_max=12.0, resolution=0.05)
    rho, arc = 0.6, 6.0  # R = 3.96 m, turning 1.5 rad
    pose = (-2.0, 9.5, math.pi / 2 - 0.75)
    end = step_pose(*pose, rho, arc)
    k = torch.tensor([[math.tan(rho) / L]], dtype=torch.float64)
    start_t, end_t = torch.tensor([pose], dtype=torch.float64)[None], torch.tensor([end], dtype=torch.float64)[None]
    first, num_rows = _element_rows(start_t, end_t, 2.2, 4.0, grid)
    spans = _element_spans(start_t, end_t, k, 2.2, grid, first, num_rows)
    assert ((spans[2] > spans[1]).all(-1)).any()  # some row really has two spans
    xs, zs = (t.numpy() for t in grid.cell_centers(torch.float64))
    expected = element_mask_np(*pose, rho, arc, 2.2, xs, zs)
    painted = _paint_spans(*spans, torch.ones(1, 1, dtype=torch.bool), grid)[0].numpy()
    assert (painted == expected).all()


def test_fit_mask_is_the_union_of_its_elements():
    lane, _ = lane_np([(0.05, 12.0), (0.0, 25.0)], 3.5)
    fit = fit_driving_corridor(torch.from_numpy(lane).float()[None], threshold=0.5)
    n = fit.num_stages.item()
    assert n >= 8
    xs, zs = (t.numpy() for t in GRID.cell_centers(torch.float64))
    S = CFG.steps_per_stage
    union = np.zeros(GRID.shape, bool)
    path = fit.path[0].double().numpy()
    for stage in range(n):
        rho = fit.wheel_angles[0, stage].item()
        arc = CFG.speed * CFG.dt * S * math.cos(rho)
        union |= element_mask_np(*path[stage * S], rho, arc, CFG.width, xs, zs)
        # the path poses follow the single-track model
        np.testing.assert_allclose(path[(stage + 1) * S], step_pose(*path[stage * S], rho, arc), atol=2e-4)
    assert (fit.mask[0].numpy() == union).all()
    assert torch.isnan(fit.path[0, n * S + 1 :]).all()
    assert torch.isnan(fit.wheel_angles[0, n:]).all()
    assert fit.length[0].item() == pytest.approx(sum(3.0 * math.cos(r) for r in fit.wheel_angles[0, :n].tolist()))
    # boundaries lie W / 2 across the heading
    width = (fit.right[0, : n * S + 1] - fit.left[0, : n * S + 1]).norm(dim=-1)
    torch.testing.assert_close(width, torch.full_like(width, CFG.width))


# ----------------------------------------------------------------------------------------------------------------
# behaviour on oracle lanes


def test_lane_along_a_known_path_is_followed_with_perfect_scores():
    lane, (x_end, z_end, _) = lane_np([(0.05, 15.0), (0.0, 15.0)], 3.5)
    assert 33 < z_end < 37
    assert abs(x_end) < 7
    conf = torch.from_numpy(lane).float()[None]
    target = torch.from_numpy(lane)[None]
    scores = driving_corridor_scores(conf, target, threshold=0.5, config=replace(CFG, distances=(20.0, 30.0, 40.0)))
    assert stats_at(scores, 20) == (1.0, 1.0, 1.0)
    assert stats_at(scores, 30) == (1.0, 1.0, 1.0)
    assert scores["hitrate_40m"].item() == 0.0  # the lane ends near 35 m
    curves = corridor_curves(corridor_row_statistics(fit_driving_corridor(conf, threshold=0.5).mask, target, grid=GRID))
    z = curves["z"]
    assert (curves["hitrate"][z < z_end - 1.5] == 1).all()
    assert (curves["hitrate"][z > z_end] == 0).all()


def test_s_curve_needs_the_multi_stage_search():
    # curvature between the primitives' (0.05 and 0.1 rad): following it needs switching manoeuvres
    pieces = [(0.075, 10.0), (-0.075, 10.0), (0.0, 12.0)]
    lane, (x_end, z_end, h_end) = lane_np(pieces, 3.5)
    assert abs(h_end) < 1e-9
    assert 2.5 < x_end < 3.0
    assert z_end > 37
    target = torch.from_numpy(lane)[None]
    config = replace(CFG, distances=(20.0, 30.0))
    fit = fit_driving_corridor(target.float(), threshold=0.5, config=config)
    stages = fit.num_stages.item()
    angles = fit.wheel_angles[0, :stages]
    assert angles.max() > 0.09
    assert angles.min() < -0.09
    scores = driving_corridor_scores(target.float(), target, threshold=0.5, config=config)
    # followed to 30 m; with a flat (binary) map every corridor inside the lane ties, so it may graze the edge
    assert stats_at(scores, 30)[1:] == (1.0, 1.0)
    assert stats_at(scores, 30)[0] > 0.99
    # any single constant-steering hypothesis (one primitive repeated) leaves the lane before 30 m
    xs, zs = (t.numpy() for t in GRID.cell_centers(torch.float64))
    for rho in CFG.wheel_angles:
        arc = 3.0 * math.cos(rho)
        mask, pose = np.zeros(GRID.shape, bool), (0.0, 6.0, 0.0)
        for _ in range(14):
            mask |= element_mask_np(*pose, rho, arc, CFG.width, xs, zs)
            pose = step_pose(*pose, rho, arc)
        stats = corridor_row_statistics(torch.from_numpy(mask)[None], target)
        rows_to_30 = int((stats["z"] <= 30).sum())
        assert stats["hit_rows"][rows_to_30 - 1].item() == 0, rho


def test_sideways_shift_lowers_precision_and_hitrate_monotonically():
    curved, _ = lane_np([(0.05, 12.0), (0.0, 30.0)], 3.5)
    targets = torch.stack([straight_lane(), torch.from_numpy(curved)])
    _xs, _ = GRID.cell_centers()
    results = []
    for shift in (0.0, 0.4, 0.8, 1.2, 1.6, 2.0):
        cells = round(shift / GRID.resolution)
        conf = torch.roll(targets.float(), cells, dims=2)
        conf[..., :cells] = 0
        results.append(stats_at(driving_corridor_scores(conf, targets, threshold=0.5), 30))
    precision = [r[0] for r in results]
    hitrate = [r[2] for r in results]
    assert all(a >= b for a, b in itertools.pairwise(precision))
    assert all(a >= b for a, b in itertools.pairwise(hitrate))
    assert precision[0] == 1.0
    assert hitrate[0] == 1.0
    assert precision[-1] < 0.6
    assert hitrate[-1] == 0.0


def test_small_hole_does_not_end_the_corridor_but_a_long_gap_does():
    xs, zs = GRID.cell_centers()
    lane = straight_lane(z_end=46.0)
    hole = lane & ((xs**2 + (zs - 20.0) ** 2) > 0.6**2)
    gap = lane & ((zs < 20.0) | (zs > 25.0))
    fits = fit_driving_corridor(torch.stack([lane, hole, gap]).float(), threshold=0.5)
    far = [zs[m].max().item() if m.any() else 0.0 for m in fits.mask]
    assert far[0] > 45.9
    assert far[1] > 45.9
    assert 18.0 < far[2] < 21.6  # ends at the gap (the last admissible element is at most half in it)
    assert fits.num_stages[0] == fits.num_stages[1]


def test_no_detection_gives_an_empty_corridor_and_zero_scores():
    target = straight_lane()[None]
    conf = torch.zeros(1, *GRID.shape)
    fit = fit_driving_corridor(conf, threshold=0.5)
    assert fit.num_stages.item() == 0
    assert not fit.mask.any()
    assert fit.length.item() == 0
    assert fit.fitness.item() == 0
    assert torch.isnan(fit.path[0, 1:]).all()
    scores = driving_corridor_scores(conf, target, threshold=0.5)
    assert all(v.item() == 0.0 for v in scores.values())


def test_leaving_the_valid_area_counts_as_no_detection():
    lane = straight_lane(z_end=46.0)
    _, zs = GRID.cell_centers()
    valid = zs < 25.0  # camera sees only up to 25 m
    fit = fit_driving_corridor(lane.float()[None], valid[None], threshold=0.5)
    far = zs[fit.mask[0]].max().item()
    assert 22.0 < far < 26.6


def test_start_pose_and_lateral_borders():
    # the corridor leaving the grid sideways stops: a lane that runs out of the grid to the right
    lane, _ = lane_np([(0.1, 16.0), (0.0, 30.0)], 3.5)
    fit = fit_driving_corridor(torch.from_numpy(lane).float()[None], threshold=0.5)
    xs, _ = GRID.cell_centers()
    assert xs[fit.mask[0]].max() < GRID.x_max
    lateral_end = fit.path[0, fit.num_stages.item() * CFG.steps_per_stage, 0].item()
    assert lateral_end < GRID.x_max
    # a start pose outside the grid is an error; a shifted start is honoured
    with pytest.raises(ValueError, match="start pose"):
        fit_driving_corridor(torch.zeros(1, *GRID.shape), threshold=0.5, config=replace(CFG, start_x=12.0))
    with pytest.raises(ValueError, match="start pose"):
        fit_driving_corridor(torch.zeros(1, *GRID.shape), threshold=0.5, config=replace(CFG, start_z=50.0))
    # a start heading: a lane drawn along a path that starts turned by 0.2 rad is followed
    turned, _ = lane_np([(0.0, 30.0)], 3.5, start=(0.0, 6.0, 0.2))
    turned_t = torch.from_numpy(turned)[None]
    config = replace(CFG, start_heading=0.2, distances=(20.0, 30.0))
    assert stats_at(driving_corridor_scores(turned_t.float(), turned_t, threshold=0.5, config=config), 30) == (
        1.0,
        1.0,
        1.0,
    )
    shifted = straight_lane(x_shift=-3.0)[None].float()
    fit = fit_driving_corridor(shifted, threshold=0.5, config=replace(CFG, start_x=-3.0, start_z=8.0))
    assert fit.path[0, 0].tolist() == [-3.0, 8.0, 0.0]
    assert fit.num_stages.item() >= 10


def test_mean_of_gt_prior_corridor_ends_where_the_prior_drops_below_threshold():
    """A baseline prior (mean of GT lanes of various curvatures) is confident only near the vehicle."""
    lanes = [lane_np([(rho, 45.0)], 3.5)[0] for rho in np.linspace(-0.1, 0.1, 9)]
    prior = torch.from_numpy(np.mean(lanes, 0)).float()
    threshold = 0.6
    fit = fit_driving_corridor(prior[None], threshold=threshold)
    _xs, zs = GRID.cell_centers()
    far = zs[fit.mask[0]].max().item()
    # width of the confident region per row, along the straight ahead
    wide = ((prior >= threshold).sum(1).float() * GRID.resolution).flip(0)  # near to far
    z_rows = zs[:, 0].flip(0)
    narrower_than_half = z_rows[wide < CFG.width / 2].min().item()
    narrower_than_full = z_rows[wide < CFG.width].min().item()
    assert narrower_than_full - 0.5 < far < narrower_than_half + 3.0
    assert far < 40.0


@pytest.mark.slow
def test_mean_of_gt_baseline_on_synthetic_scenes_stops_where_the_prior_thins_out():
    """The KITTI-style baseline (mean of GT ego lanes) on the library's synthetic scenes."""
    from drivemetrics.synthetic import ego_lane_scenes, mean_gt_prior

    _, scene = ego_lane_scenes(12, torch.Generator().manual_seed(0), detector=None)
    prior = mean_gt_prior(scene.lane)
    _, zs = GRID.cell_centers()
    z_rows = zs[:, 0].flip(0)  # near to far
    for threshold in (0.5, 0.6):
        fit = fit_driving_corridor(prior[None], threshold=threshold)
        far = zs[fit.mask[0]].max().item()
        wide = ((prior >= threshold).sum(1).float() * GRID.resolution).flip(0)
        narrower_than_full = z_rows[wide < CFG.width].min().item() if (wide < CFG.width).any() else GRID.z_max
        narrower_than_half = z_rows[wide < CFG.width / 2].min().item() if (wide < CFG.width / 2).any() else GRID.z_max
        assert narrower_than_full - 0.5 < far < narrower_than_half + 3.0, threshold


# ----------------------------------------------------------------------------------------------------------------
# scores on hand-computed masks


def test_row_statistics_hand_computed():
    grid = BevGrid(x_min=-2.0, x_max=2.0, z_min=8.0, z_max=12.0, resolution=0.5)  # 8 x 8, rows z 11.75..8.25
    corridor = torch.zeros(1, 8, 8, dtype=torch.bool)
    target = torch.zeros(1, 8, 8, dtype=torch.bool)
    # near to far rows scored from z >= 9: rows 5 (9.25), 4, 3, 2, 1, 0 (11.75)
    target[0, :, 2:6] = True  # GT 2 m wide on every row
    corridor[0, 5, 2:6] = True  # 4 TP cells: overlap 2.0 m -> row TP
    corridor[0, 4, 3:7] = True  # 3 TP + 1 FP: overlap 1.5 m -> row FP
    corridor[0, 3, 2:6] = True  # row TP
    corridor[0, 1, 0:2] = True  # 2 FP cells, no overlap -> row FP; row 2 has no corridor -> FN; row 0 FN
    stats = corridor_row_statistics(corridor, target, grid=grid, min_distance=9.0, min_overlap=2.0)
    assert stats["z"].tolist() == [9.25, 9.75, 10.25, 10.75, 11.25, 11.75]
    assert stats["tp_cells"].tolist() == [4, 3, 4, 0, 0, 0]
    assert stats["fp_cells"].tolist() == [0, 1, 0, 0, 2, 0]
    assert stats["row_tp"].tolist() == [1, 0, 1, 0, 0, 0]
    assert stats["row_fp"].tolist() == [0, 1, 0, 0, 1, 0]
    assert stats["row_fn"].tolist() == [0, 0, 0, 1, 0, 1]
    assert stats["hit_rows"].tolist() == [1, 0, 0, 0, 0, 0]
    curves = corridor_curves(stats)
    torch.testing.assert_close(curves["precision_lat"][2], torch.tensor(11 / 12, dtype=torch.float64))
    # up to 11.75 m: TP 2, FP 2, FN 2 -> F1 = 4 / 8
    torch.testing.assert_close(curves["f1_long"][-1], torch.tensor(0.5, dtype=torch.float64))
    assert curves["hitrate"].tolist() == [1, 0, 0, 0, 0, 0]
    # invalid cells are don't-care: hiding the FP cell of row 4 makes it a row TP? no: overlap stays 1.5 m
    valid = torch.ones(1, 8, 8, dtype=torch.bool)
    valid[0, 4, 6] = False
    stats = corridor_row_statistics(corridor, target, valid=valid, grid=grid, min_distance=9.0, min_overlap=1.5)
    assert stats["fp_cells"].tolist()[1] == 0
    assert stats["row_tp"].tolist()[:3] == [1, 1, 1]
    assert stats["hit_rows"].tolist() == [1, 1, 1, 0, 0, 0]


# ----------------------------------------------------------------------------------------------------------------
# batching, devices, metric, table


def _mixed_batch():
    curved, _ = lane_np([(0.05, 12.0), (-0.05, 12.0), (0.0, 20.0)], 3.5)
    targets = torch.stack([straight_lane(), torch.from_numpy(curved), straight_lane(x_shift=1.0)])
    g = torch.Generator().manual_seed(0)
    conf = (0.75 * targets.float() + 0.35 * torch.rand(targets.shape, generator=g)).clamp(0, 1)
    conf[2, 300:360] = 0.1  # a gap in the third frame
    conf[1] = torch.roll(conf[1], 10, dims=1)
    return conf, targets


def test_batched_equals_frame_by_frame():
    conf, _targets = _mixed_batch()
    batch = fit_driving_corridor(conf, threshold=0.5)
    for i in range(conf.shape[0]):
        single = fit_driving_corridor(conf[i : i + 1], threshold=0.5)
        for name in single._fields:
            torch.testing.assert_close(getattr(batch, name)[i : i + 1], getattr(single, name), equal_nan=True)
    assert len(set(batch.num_stages.tolist())) > 1  # frames stop at different stages


def test_uint8_confidence_equals_float():
    conf, _ = _mixed_batch()
    as_u8 = (conf * 255).round().to(torch.uint8)
    a = fit_driving_corridor(as_u8, threshold=0.5)
    b = fit_driving_corridor(as_u8.float() / 255, threshold=0.5)
    assert torch.equal(a.mask, b.mask)


def test_metric_accumulates_like_the_functional_and_table():
    conf, targets = _mixed_batch()
    metric = DrivingCorridorMetrics(threshold=0.5)
    metric.update(conf[:2], targets[:2])
    metric.update(conf[:0], targets[:0])  # a batch without frames (e.g. none with a lane ground truth) adds nothing
    metric.update(conf[2:], targets[2:])
    result = metric.compute()
    expected = driving_corridor_scores(conf, targets, threshold=0.5)
    for key, value in expected.items():
        torch.testing.assert_close(result[key], value)
    assert 0 < result["mean_length"].item() <= 46
    table = corridor_table(list(conf), list(targets), threshold=0.5, batch_size=2)
    assert table == pytest.approx({k: float(v) for k, v in result.items()})
    text = format_corridor_table(table)
    assert "Precision_lat" in text
    assert "Hitrate" in text
    assert "40 m" in text
    curves = metric.compute_curves()
    assert curves["z"].shape == curves["hitrate"].shape
    assert curves["z"][0] >= 9.0
    assert metric.state_dict() == {}
    metric.reset()
    assert metric.frames.item() == 0


@pytest.mark.gpu
def test_cpu_and_gpu_agree():
    conf, targets = _mixed_batch()
    conf = conf.double()  # float64 geometry and sums: CPU and GPU differ only by summation order (~1e-13)
    cpu = fit_driving_corridor(conf, threshold=0.5)
    gpu = fit_driving_corridor(conf.cuda(), threshold=0.5)
    assert torch.equal(cpu.num_stages, gpu.num_stages.cpu())
    assert (cpu.mask != gpu.mask.cpu()).sum() <= 10  # float ties at cell boundaries only
    metric = DrivingCorridorMetrics(threshold=0.5).cuda()
    metric.update(conf.cuda(), targets.cuda())
    for key, value in driving_corridor_scores(conf, targets, threshold=0.5).items():
        assert abs(metric.compute()[key].item() - value.item()) < 1e-3


def test_device_fixture_runs(device):
    conf, targets = _mixed_batch()
    scores = driving_corridor_scores(conf.to(device), targets.to(device), threshold=0.5)
    assert all(v.device.type == device.type for v in scores.values())


# ----------------------------------------------------------------------------------------------------------------
# bad input


def test_bad_input_is_rejected_clearly():
    conf = torch.rand(1, *GRID.shape)
    target = straight_lane()[None]
    for threshold in (0.0, 1.5, -0.1):
        with pytest.raises(ValueError, match="threshold"):
            fit_driving_corridor(conf, threshold=threshold)
    with pytest.raises(ValueError, match="preds"):
        fit_driving_corridor(torch.rand(1, 10, 10), threshold=0.5)
    with pytest.raises(ValueError, match="preds"):
        fit_driving_corridor(conf * 2, threshold=0.5)
    nan = conf.clone()
    nan[0, 0, 0] = float("nan")
    with pytest.raises(ValueError, match="preds"):
        fit_driving_corridor(nan, threshold=0.5)
    with pytest.raises(TypeError, match="preds"):
        fit_driving_corridor(conf.numpy(), threshold=0.5)
    with pytest.raises(ValueError, match="valid"):
        fit_driving_corridor(conf, torch.full((1, *GRID.shape), 0.5), threshold=0.5)
    with pytest.raises(ValueError, match="target"):
        driving_corridor_scores(conf, torch.zeros_like(target), threshold=0.5)
    with pytest.raises(ValueError, match="target"):
        driving_corridor_scores(conf, target[:, :10], threshold=0.5)
    with pytest.raises(ValueError, match="threshold"):
        DrivingCorridorMetrics(threshold=2.0)
    with pytest.raises(ValueError, match="frames"):
        corridor_table(conf, torch.cat([target, target]), threshold=0.5)


def test_no_frame_scored_gives_nan_not_zero():
    """A metric that saw no frame has measured nothing: NaN, while frames without any corridor score 0."""
    import math

    from drivemetrics.road import DrivingCorridorHitRate, DrivingCorridorLateralPrecision, DrivingCorridorMetrics

    grid = BevGrid()
    with pytest.warns(UserWarning, match="before the ``update``"):
        assert math.isnan(DrivingCorridorHitRate(0.5, grid).compute().item())
    with pytest.warns(UserWarning, match="before the ``update``"):
        assert all(math.isnan(v.item()) for v in DrivingCorridorMetrics(0.5, grid).compute().values())
    metric = DrivingCorridorLateralPrecision(0.5, grid)
    lane = torch.zeros(1, *grid.shape, dtype=torch.bool)
    lane[..., 185:215] = True  # a straight ego lane, nothing detected
    metric.update(torch.zeros(1, *grid.shape), lane)
    assert metric.compute().item() == 0.0
