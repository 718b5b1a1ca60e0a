"""The corridor on the real KITTI-ROAD ego-lane ground truth um_lane_000000, warped to BEV by the devkit's rules."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image

from drivemetrics.geometry.bev import BevGrid
from drivemetrics.road.corridor import driving_corridor_scores, fit_driving_corridor


def _read_calib(path):
    values = {}
    for line in path.read_text().splitlines():
        if ":" in line:
            key, rest = line.split(":", 1)
            values[key.strip()] = np.array(rest.split(), float)
    return values


def _bev_lane(root, grid):
    """Devkit BEV warp (reference notes section 2.3): nearest pixel by truncation with a 1-based offset."""
    calib = _read_calib(root / "calib" / "um_000000.txt")
    r0 = np.eye(4)
    r0[:3, :3] = calib["R0_rect"].reshape(3, 3)
    cam_to_road = np.eye(4)
    cam_to_road[:3] = calib["Tr_cam_to_road"].reshape(3, 4)
    homography = (calib["P2"].reshape(3, 4) @ r0 @ np.linalg.inv(cam_to_road))[:, [0, 2, 3]]
    xs, zs = (t.numpy().astype(np.float64) for t in grid.cell_centers(torch.float32))
    uvw = homography @ np.stack([xs.ravel(), zs.ravel(), np.ones(xs.size)])
    u, v = uvw[0] / uvw[2], uvw[1] / uvw[2]
    image = np.array(Image.open(root / "gt_image_2" / "um_lane_000000.png").convert("RGB"))
    height, width = image.shape[:2]
    seen = (v >= 1) & (v <= height) & (u >= 1) & (u <= width)
    bev = np.zeros((xs.size, 3), np.uint8)
    bev[seen] = image[v[seen].astype(np.uint32) - 1, u[seen].astype(np.uint32) - 1]
    bev = bev.reshape(*grid.shape, 3)
    return torch.from_numpy(bev[..., 2] > 0)[None], torch.from_numpy(bev[..., 0] > 0)[None]  # lane, valid


def test_real_ego_lane_gt_as_confidence_scores_perfectly_and_shifts_hurt(fixtures_dir):
    root = fixtures_dir / "kitti_road" / "training"
    if not (root / "gt_image_2" / "um_lane_000000.png").is_file():
        pytest.skip("um_lane_000000 fixture absent")
    grid = BevGrid()
    lane, valid = _bev_lane(root, grid)
    assert lane.sum().item() == 41984  # magenta BEV cells listed in the reference notes (section 7)
    fit = fit_driving_corridor(lane.float(), valid, threshold=0.5)
    assert fit.length.item() > 40.0  # follows the lane to the far edge
    scores = driving_corridor_scores(lane.float(), lane, valid=valid, threshold=0.5)
    assert all(value.item() == 1.0 for value in scores.values())
    shifted = driving_corridor_scores(torch.roll(lane.float(), 10, dims=2), lane, valid=valid, threshold=0.5)  # 0.5 m
    for d in (20, 30, 40):
        assert shifted[f"precision_lat_{d}m"].item() < 0.9
        assert shifted[f"hitrate_{d}m"].item() == 0.0


def test_kitti_corridor_table_from_result_pngs(fixtures_dir, tmp_path):
    """Result PNG = the ego-lane GT (255 on the lane): Table IV is all 100 %; an empty result scores 0."""
    from drivemetrics.road.evaluate import format_corridor_table, kitti_corridor_table
    from drivemetrics.road.io import gt_masks, read_gt_png, write_png

    root = fixtures_dir / "kitti_road" / "training"
    if not (root / "gt_image_2" / "um_lane_000000.png").is_file():
        pytest.skip("um_lane_000000 fixture absent")
    lane, _ = gt_masks(read_gt_png(root / "gt_image_2" / "um_lane_000000.png"))
    write_png(tmp_path / "good" / "um_lane_000000.png", lane.to(torch.uint8) * 255)
    write_png(tmp_path / "empty" / "um_lane_000000.png", torch.zeros_like(lane, dtype=torch.uint8))
    table = kitti_corridor_table(root.parent, tmp_path / "good", threshold=1 / 255)
    assert {k: v for k, v in table.items() if k != "mean_length"} == dict.fromkeys(table.keys() - {"mean_length"}, 1.0)
    assert "100.0%" in format_corridor_table(table)
    empty = kitti_corridor_table(root.parent, tmp_path / "empty", threshold=0.5)
    assert empty["hitrate_20m"] == 0.0
    assert empty["mean_length"] == 0.0
    with pytest.raises(FileNotFoundError, match="missing"):
        kitti_corridor_table(root.parent, tmp_path / "nothing", threshold=0.5)
