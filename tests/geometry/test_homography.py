import numpy as np
import pytest
import torch

from drivemetrics.geometry import (
    BevGrid,
    check_road_homography,
    image_from_bev_cell,
    image_from_road,
    image_from_road_calib,
    read_kitti_calib,
    road_from_bev_cell,
)

# kitti_road.md section 2.1: the devkit's Tr33 for training um_000000
DEVKIT_TR33_UM_000000 = [
    [721.407369, 609.673644, -120.951608],
    [-11.0854977, 177.699737, 1101.14431],
    [-7.4394341e-05, 0.999977409, -0.28684557],
]


def simple_camera(f=700.0, cx=600.0, cy=170.0, height=1.6, dtype=torch.float64):
    """P2 = K [I | 0], R0 = I, camera 'height' metres above the road (road Y down, so at road Y = -height)."""
    P2 = torch.zeros(3, 4, dtype=dtype)
    P2[:, :3] = torch.tensor([[f, 0, cx], [0, f, cy], [0, 0, 1]], dtype=dtype)
    R0 = torch.eye(3, dtype=dtype)
    Tr = torch.zeros(3, 4, dtype=dtype)
    Tr[:, :3] = torch.eye(3, dtype=dtype)
    Tr[1, 3] = -height
    return P2, R0, Tr


def test_real_calibration_matches_devkit_matrix(fixtures_dir):
    calib = read_kitti_calib(fixtures_dir / "kitti_road/training/calib/um_000000.txt")
    h = image_from_road_calib(calib)
    assert h.dtype == torch.float64
    np.testing.assert_allclose(h.numpy(), np.array(DEVKIT_TR33_UM_000000), rtol=2e-8, atol=1e-12)


def test_simple_camera_hand_projection():
    f, cx, cy, height = 700.0, 600.0, 170.0, 1.6
    h = image_from_road(*simple_camera(f, cx, cy, height))
    x, z = 2.0, 20.0
    p = h @ torch.tensor([x, z, 1.0], dtype=torch.float64)
    # a road point (x, 0, z) is at camera (x, height, z): u = f x / z + cx, v = f height / z + cy
    assert (p[0] / p[2]).item() == pytest.approx(f * x / z + cx, rel=1e-12)
    assert (p[1] / p[2]).item() == pytest.approx(f * height / z + cy, rel=1e-12)
    assert p[2].item() == pytest.approx(z)


def test_batched_and_broadcast():
    P2, R0, Tr = simple_camera()
    Tr2 = Tr.clone()
    Tr2[1, 3] = -2.0
    batch = image_from_road(P2, R0, torch.stack([Tr, Tr2]))
    assert batch.shape == (2, 3, 3)
    torch.testing.assert_close(batch[1], image_from_road(P2, R0, Tr2))


def test_gradcheck_all_inputs():
    P2, R0, Tr = simple_camera(f=7.0, cx=6.0, cy=1.7)
    R0 = R0 + 0.01 * torch.arange(9, dtype=torch.float64).reshape(3, 3)
    Tr = Tr + 0.01 * torch.arange(12, dtype=torch.float64).reshape(3, 4)
    inputs = tuple(t.clone().requires_grad_(True) for t in (P2, R0, Tr))
    assert torch.autograd.gradcheck(image_from_road, inputs)


def test_bad_inputs():
    P2, R0, Tr = simple_camera()
    with pytest.raises(ValueError, match=r"`P2` must have shape ... x 3 x 4"):
        image_from_road(P2[:, :3], R0, Tr)
    with pytest.raises(ValueError, match=r"`R0_rect` must have shape ... x 3 x 3"):
        image_from_road(P2, Tr, Tr)
    with pytest.raises(ValueError, match=r"`Tr_cam_to_road` contains NaN"):
        image_from_road(P2, R0, Tr * float("nan"))
    with pytest.raises(TypeError, match=r"`P2` must be a floating tensor"):
        image_from_road(P2.long(), R0, Tr)
    with pytest.raises(KeyError, match=r"Tr_cam_to_road"):
        image_from_road_calib({"P2": P2, "R0_rect": R0})


def test_image_from_bev_cell_composes_with_grid():
    grid = BevGrid()
    h = image_from_road(*simple_camera())
    row = torch.tensor([0.0, 400.0, 799.0, 12.5])
    col = torch.tensor([0.0, 200.0, 399.0, 7.25])
    x, z = grid.metric_from_cell(row.double(), col.double())
    expect = h @ torch.stack([x, z, torch.ones_like(x)])
    got = image_from_bev_cell(h, grid) @ torch.stack([col, row, torch.ones_like(col)]).double()
    torch.testing.assert_close(got, expect)
    # the affine alone: cell (0, 0) is the far-left center (-9.975, 45.975)
    xz1 = road_from_bev_cell(grid) @ torch.tensor([0.0, 0.0, 1.0], dtype=torch.float64)
    torch.testing.assert_close(xz1, torch.tensor([-9.975, 45.975, 1.0], dtype=torch.float64))


def test_check_accepts_real_and_sign_flipped():
    h = image_from_road(*simple_camera())
    assert check_road_homography(h, BevGrid()).shape == (1, 3, 3)
    assert check_road_homography(-torch.stack([h, h]), BevGrid()).shape == (2, 3, 3)


def test_check_singular():
    h = image_from_road(*simple_camera())
    singular = h.clone()
    singular[2] = singular[0] + singular[1]
    with pytest.raises(ValueError, match=r"`image_from_road`\[1\] is singular"):
        check_road_homography(torch.stack([h, singular]), BevGrid())


def test_check_horizon_inside_grid():
    # w = Z - 20: the horizon line Z = 20 m crosses the default grid (Z in [6, 46])
    h = torch.tensor([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, 1.0, -20.0]], dtype=torch.float64)
    with pytest.raises(ValueError, match=r"horizon \(w = 0\) lies inside the BEV grid"):
        check_road_homography(h, BevGrid())
    # the same matrix is fine for a grid beyond Z = 20 m
    check_road_homography(h, BevGrid(z_min=21.0, z_max=41.0))


@pytest.mark.parametrize(
    ("h", "err", "match"),
    [
        (torch.eye(3).reshape(1, 1, 3, 3), ValueError, r"must have shape B x 3 x 3"),
        (torch.eye(4), ValueError, r"must have shape B x 3 x 3"),
        (torch.eye(3, dtype=torch.long), TypeError, r"floating"),
        (torch.full((3, 3), float("inf")), ValueError, r"NaN or infinite"),
        ([[1.0, 0, 0], [0, 1, 0], [0, 0, 1]], TypeError, r"must be a torch.Tensor"),
    ],
)
def test_check_bad_shapes(h, err, match):
    with pytest.raises(err, match=match):
        check_road_homography(h, BevGrid())
