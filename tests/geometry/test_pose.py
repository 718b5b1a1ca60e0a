import math

import pytest
import torch

from drivemetrics.geometry.pose import compose_pose, relative_pose, road_from_world, world_from_road


def test_relative_pose_of_known_points():
    # reference at (1, 2) facing +X (heading 90 deg): its right axis is world -Z, its forward axis world +X
    ref = torch.tensor([1.0, 2.0, math.pi / 2], dtype=torch.float64)
    pose = torch.tensor([4.0, 1.0, math.pi / 2 + 0.1], dtype=torch.float64)
    rel = relative_pose(pose, ref)
    assert torch.allclose(rel, torch.tensor([1.0, 3.0, 0.1], dtype=torch.float64))


def test_matrices_are_inverse_and_match_relative_pose():
    gen = torch.Generator().manual_seed(0)
    poses = torch.randn(5, 3, generator=gen, dtype=torch.float64)
    points = torch.randn(5, 3, generator=gen, dtype=torch.float64)
    eye = torch.eye(3, dtype=torch.float64).expand(5, 3, 3)
    assert torch.allclose(road_from_world(poses) @ world_from_road(poses), eye)
    mapped = road_from_world(poses) @ torch.cat([points[:, :2], torch.ones(5, 1, dtype=torch.float64)], 1)[..., None]
    assert torch.allclose(mapped[:, :2, 0], relative_pose(points, poses)[:, :2])


def test_bad_pose_shape():
    with pytest.raises(ValueError, match="pose"):
        road_from_world(torch.zeros(4, 2))


def test_compose_pose_inverts_relative_pose():
    gen = torch.Generator().manual_seed(1)
    reference = 10 * torch.randn(50, 3, generator=gen, dtype=torch.float64)  # headings up to several turns
    offset = 5 * torch.randn(50, 3, generator=gen, dtype=torch.float64)
    composed = compose_pose(reference, offset)
    assert composed.dtype == torch.float64
    assert torch.allclose(relative_pose(composed, reference), offset, rtol=0, atol=1e-12)
    pose = 10 * torch.randn(50, 3, generator=gen, dtype=torch.float64)
    assert torch.allclose(compose_pose(reference, relative_pose(pose, reference)), pose, rtol=0, atol=1e-12)
    # broadcast: one reference, many offsets
    assert torch.allclose(compose_pose(reference[0], offset), compose_pose(reference[:1].expand(50, 3), offset))


def test_compose_pose_of_known_offset():
    # reference at (1, 2) facing +X: 1 m right is world -Z, 3 m ahead is world +X
    ref = torch.tensor([1.0, 2.0, math.pi / 2], dtype=torch.float64)
    out = compose_pose(ref, torch.tensor([1.0, 3.0, 0.1], dtype=torch.float64))
    assert torch.allclose(out, torch.tensor([4.0, 1.0, math.pi / 2 + 0.1], dtype=torch.float64))
    with pytest.raises(ValueError, match="offset"):
        compose_pose(ref, torch.zeros(2))
