from pathlib import Path

import numpy as np
import pytest
import torch
from kornia.geometry.transform import warp_perspective
from PIL import Image

from drivemetrics.geometry import (
    BevGrid,
    bev_sample_pixels,
    devkit_cell_centers,
    image_from_bev_cell,
    image_from_road,
    road_from_bev_cell,
    warp_bev_to_image,
    warp_image_to_bev,
)

FRAMES = ["um_000000", "umm_000000", "uu_000000", "uu_000093"]


# ------------------------------------------------------------------------------------------ independent oracles


def numpy_tr33(calib_path):
    """The devkit's Tr33 = P2 R0 inv(Tr_cam_to_road) [:, (0, 2, 3)], from the text with numpy only."""
    values = {}
    for line in Path(calib_path).read_text().splitlines():
        if ":" in line:
            key, rest = line.split(":")
            values[key.strip()] = np.array(rest.split(), dtype="f8")
    P2 = values["P2"].reshape(3, 4)
    R0 = np.eye(4)
    R0[:3, :3] = values["R0_rect"].reshape(3, 3)
    Tr = np.eye(4)
    Tr[:3, :] = values["Tr_cam_to_road"].reshape(3, 4)
    return (P2 @ R0 @ np.linalg.inv(Tr))[:, [0, 2, 3]]


def numpy_devkit_forward(image, tr33):
    """The devkit's BirdsEyeView.compute rules (kitti_road.md 2.3), as a numpy lookup table."""
    h, w = image.shape[:2]
    x_vec = np.arange(-10 + 0.025, 10, 0.05)
    z_vec = np.arange(46 - 0.025, 6, -0.05)
    xm, zm = np.meshgrid(x_vec, z_vec)
    xm, zm = xm.astype("f4"), zm.astype("f4")
    pts = np.stack([xm.ravel(), zm.ravel(), np.ones(xm.size, "f4")])
    proj = tr33 @ pts
    u, v = proj[0] / proj[2], proj[1] / proj[2]
    ok = (v >= 1) & (u >= 1) & (v <= h) & (u <= w)
    out = np.zeros((800 * 400, *image.shape[2:]), image.dtype)
    out[ok] = image[v[ok].astype("u4") - 1, u[ok].astype("u4") - 1]
    return out.reshape((800, 400, *image.shape[2:])), ok.reshape(800, 400)


def numpy_devkit_reverse(bev, tr33, size):
    """The devkit's BirdsEyeView.compute_reverse rules (kitti_road.md 2.4)."""
    h, w = size
    y_im, x_im = np.mgrid[1 : h + 1, 1 : w + 1]
    xz = np.linalg.inv(tr33) @ np.stack([x_im.ravel(), y_im.ravel(), np.ones(h * w)])
    X, Z = xz[0] / xz[2], xz[1] / xz[2]
    xi = np.round((X + 10) / 0.05)
    zi = np.round(800 - (Z - 6) / 0.05)
    ok = (xi >= 1) & (xi <= 400) & (zi >= 1) & (zi <= 800)
    out = np.zeros((h * w, *bev.shape[2:]), bev.dtype)
    out[ok] = bev[zi[ok].astype(int) - 1, xi[ok].astype(int) - 1]
    return out.reshape((h, w, *bev.shape[2:])), ok.reshape(h, w)


def small_camera(dtype=torch.float64):
    """A tiny camera for a 6 x 8 image seeing the grid x [-1, 1], z [2, 4] at 0.5 m: u = 4 x / z + 3.7,
    v = 6 / z + 0.3; every cell center falls well inside the image and off integer coordinates."""
    P2 = torch.tensor([[4.0, 0, 3.7, 0], [0, 4.0, 0.3, 0], [0, 0, 1, 0]], dtype=dtype)
    Tr = torch.tensor([[1.0, 0, 0, 0], [0, 1, 0, -1.5], [0, 0, 1, 0]], dtype=dtype)
    return image_from_road(P2, torch.eye(3, dtype=dtype), Tr)


SMALL_GRID = BevGrid(x_min=-1.0, x_max=1.0, z_min=2.0, z_max=4.0, resolution=0.5)


def identity_setup(height=5, width=7):
    """A grid whose cells coincide with the pixels of a height x width image (cell (i, j) <-> pixel (i, j))."""
    grid = BevGrid(x_min=0.0, x_max=float(width), z_min=1.0, z_max=1.0 + height, resolution=1.0)
    return grid, torch.linalg.inv(road_from_bev_cell(grid))


# ------------------------------------------------------------------------------------------------------- tests


def test_identity_warp(device):
    grid, h = identity_setup()
    image = torch.rand(2, 3, 5, 7, dtype=torch.float64, device=device)
    h = h.to(device)
    for mode in ("bilinear", "nearest"):
        bev, valid = warp_image_to_bev(image, h, grid, mode=mode)
        assert valid.all()
        torch.testing.assert_close(bev, image, rtol=0, atol=1e-12)
        back, valid_back = warp_bev_to_image(bev, h, (5, 7), grid, mode=mode)
        assert valid_back.all()
        torch.testing.assert_close(back, image, rtol=0, atol=1e-12)


def test_identity_devkit_shifts_by_one_pixel(device):
    # the devkit reads the 0-based coordinate u as 1-based: cell (i, j) samples pixel (i - 1, j - 1)
    grid, h = identity_setup()
    image = torch.arange(35, dtype=torch.uint8, device=device).reshape(1, 1, 5, 7) + 1
    bev, valid = warp_image_to_bev(image, h.to(device), grid, mode="devkit")
    assert bev.dtype == torch.uint8
    expect = torch.zeros_like(image)
    expect[..., 1:, 1:] = image[..., :-1, :-1]
    assert torch.equal(bev, expect)
    assert torch.equal(valid[0], expect[0, 0] > 0)


def test_bilinear_on_linear_ramp_is_exact():
    h = small_camera()
    vv, uu = torch.meshgrid(
        torch.arange(6.0, dtype=torch.float64), torch.arange(8.0, dtype=torch.float64), indexing="ij"
    )
    image = (0.3 * uu - 0.7 * vv + 2.0).reshape(1, 1, 6, 8)
    bev, valid = warp_image_to_bev(image, h, SMALL_GRID)
    assert valid.all()
    x, z = SMALL_GRID.cell_centers(torch.float64)
    u, v = 4 * x / z + 3.7, 6 / z + 0.3  # the hand projection of small_camera
    torch.testing.assert_close(bev[0, 0], 0.3 * u - 0.7 * v + 2.0, rtol=0, atol=1e-12)


def test_inverse_bilinear_on_linear_ramp_is_exact():
    # camera: u = 16 x / z + 15.3, v = 24 / z + 1.1 on a 16 x 32 image
    P2 = torch.tensor([[16.0, 0, 15.3, 0], [0, 16.0, 1.1, 0], [0, 0, 1, 0]], dtype=torch.float64)
    Tr = torch.tensor([[1.0, 0, 0, 0], [0, 1, 0, -1.5], [0, 0, 1, 0]], dtype=torch.float64)
    h = image_from_road(P2, torch.eye(3, dtype=torch.float64), Tr)
    rows, cols = SMALL_GRID.shape
    r, c = torch.meshgrid(
        torch.arange(rows, dtype=torch.float64), torch.arange(cols, dtype=torch.float64), indexing="ij"
    )
    bev = (1.5 * c + 0.25 * r - 1.0).reshape(1, 1, rows, cols)
    image, valid = warp_bev_to_image(bev, h, (16, 32), SMALL_GRID)
    # hand back-projection of pixel (u, v): z = 24 / (v - 1.1), x = (u - 15.3) z / 16
    vv, uu = torch.meshgrid(
        torch.arange(16.0, dtype=torch.float64), torch.arange(32.0, dtype=torch.float64), indexing="ij"
    )
    z = 24 / (vv - 1.1)
    x = (uu - 15.3) * z / 16
    row, col = SMALL_GRID.cell_from_metric(x, z)
    seen = (vv > 1.1) & (row >= -0.5) & (row <= rows - 0.5) & (col >= -0.5) & (col <= cols - 0.5)
    assert torch.equal(valid[0], seen)
    assert (image[0, 0][~seen] == 0).all()
    # bilinear interpolation of a linear function is exact between cell centers (the border half-cells clamp)
    inner = (vv > 1.1) & (row >= 0) & (row <= rows - 1) & (col >= 0) & (col <= cols - 1)
    assert inner.sum() >= 20
    torch.testing.assert_close(image[0, 0][inner], (1.5 * col + 0.25 * row - 1.0)[inner], rtol=0, atol=1e-12)


def test_pixels_above_horizon_are_invalid():
    # the top image rows (v < 0.3, above the horizon of small_camera) back-project behind the camera; with a grid
    # that starts close, their mirrored road points would otherwise land on it
    h = small_camera()
    grid = BevGrid(x_min=-20.0, x_max=20.0, z_min=0.5, z_max=40.5, resolution=0.5)
    bev = torch.ones(1, 1, *grid.shape, dtype=torch.float64)
    image, valid = warp_bev_to_image(bev, h, (6, 8), grid)
    assert not valid[0, 0].any()  # row 0: v = 0 < 0.3, above the horizon
    assert valid[0, 1:].all()
    assert torch.equal(image[0, 0] > 0, valid[0])


def test_matches_kornia_warp_perspective_inside():
    h = small_camera(torch.float32)
    image = torch.rand(2, 3, 6, 8)
    bev, valid = warp_image_to_bev(image, h, SMALL_GRID)
    bev_from_image = torch.linalg.inv(image_from_bev_cell(h, SMALL_GRID))
    ref = warp_perspective(image, bev_from_image.expand(2, 3, 3), SMALL_GRID.shape, align_corners=True)
    assert valid.all()
    torch.testing.assert_close(bev, ref, rtol=1e-4, atol=1e-5)


def test_batch_equals_single_and_shared_homography(device):
    h1 = small_camera().to(device)
    h2 = h1.clone()
    h2[0, 2] += 0.4  # shift u by 0.4 px
    image = torch.rand(2, 2, 6, 8, dtype=torch.float64, device=device)
    for mode in ("bilinear", "nearest", "devkit"):
        bev, valid = warp_image_to_bev(image, torch.stack([h1, h2]), SMALL_GRID, mode=mode)
        for i, h in enumerate((h1, h2)):
            one, one_valid = warp_image_to_bev(image[i : i + 1], h, SMALL_GRID, mode=mode)
            torch.testing.assert_close(bev[i : i + 1], one)
            assert torch.equal(valid[i : i + 1], one_valid)
        shared, _ = warp_image_to_bev(image, h1, SMALL_GRID, mode=mode)
        torch.testing.assert_close(shared[0], bev[0])


def test_gradcheck_forward_image_and_homography():
    h = small_camera().reshape(1, 3, 3).clone().requires_grad_(True)
    image = torch.rand(1, 2, 6, 8, dtype=torch.float64, requires_grad=True)

    def fn(img, hom):
        return warp_image_to_bev(img, hom, SMALL_GRID)[0]

    assert torch.autograd.gradcheck(fn, (image, h))


def test_gradcheck_inverse_bev_and_homography():
    h = small_camera().reshape(1, 3, 3).clone().requires_grad_(True)
    bev = torch.rand(1, 2, *SMALL_GRID.shape, dtype=torch.float64, requires_grad=True)

    def fn(b, hom):
        return warp_bev_to_image(b, hom, (6, 8), SMALL_GRID)[0]

    out = fn(bev, h)
    assert out.abs().sum() > 0
    assert torch.autograd.gradcheck(fn, (bev, h))


def test_gradient_reaches_homography_built_from_calibration():
    P2 = torch.tensor([[4.0, 0, 3.7, 0], [0, 4.0, 0.3, 0], [0, 0, 1, 0]], dtype=torch.float64, requires_grad=True)
    Tr = torch.tensor([[1.0, 0, 0, 0], [0, 1, 0, -1.5], [0, 0, 1, 0]], dtype=torch.float64, requires_grad=True)
    image = torch.rand(1, 1, 6, 8, dtype=torch.float64)
    bev, _ = warp_image_to_bev(image, image_from_road(P2, torch.eye(3, dtype=torch.float64), Tr), SMALL_GRID)
    bev.sum().backward()
    assert P2.grad.abs().sum() > 0
    assert Tr.grad.abs().sum() > 0


def test_nearest_and_devkit_keep_dtype():
    h = small_camera()
    for dtype in (torch.uint8, torch.bool, torch.int32, torch.float32):
        image = (torch.rand(1, 1, 6, 8) > 0.5).to(dtype)
        for mode in ("nearest", "devkit"):
            assert warp_image_to_bev(image, h, SMALL_GRID, mode=mode)[0].dtype == dtype


def test_nearest_picks_rounded_pixel():
    h = small_camera()
    image = torch.arange(48, dtype=torch.int64).reshape(1, 1, 6, 8)
    bev, _ = warp_image_to_bev(image, h, SMALL_GRID, mode="nearest")
    x, z = SMALL_GRID.cell_centers(torch.float64)
    u, v = 4 * x / z + 3.7, 6 / z + 0.3
    expect = torch.round(v).long() * 8 + torch.round(u).long()
    assert torch.equal(bev[0, 0], expect)
    row, col, _valid = bev_sample_pixels(h, (6, 8), SMALL_GRID, mode="nearest")
    assert torch.equal(row[0] * 8 + col[0], expect)


@pytest.mark.parametrize(
    ("kwargs", "err", "match"),
    [
        ({"mode": "cubic"}, ValueError, r"`mode` must be one of bilinear, nearest, devkit"),
        ({"image": torch.zeros(1, 6, 8)}, ValueError, r"`image` must have shape B x C x H x W"),
        ({"image": torch.zeros(1, 1, 6, 8, dtype=torch.uint8)}, TypeError, r"floating for mode='bilinear'"),
        ({"image_from_road": torch.eye(3).expand(3, 3, 3)}, ValueError, r"must hold 1 or B = 2 homographies"),
        ({"grid": (0, 1)}, TypeError, r"`grid` must be a BevGrid"),
    ],
)
def test_forward_errors(kwargs, err, match):
    args = {"image": torch.zeros(2, 1, 6, 8), "image_from_road": small_camera(), "grid": SMALL_GRID}
    args.update(kwargs)
    with pytest.raises(err, match=match):
        warp_image_to_bev(**args)


def test_inverse_errors():
    h = small_camera()
    with pytest.raises(ValueError, match=r"`bev` must be B x C x 4 x 4 to match `grid`"):
        warp_bev_to_image(torch.zeros(1, 1, 5, 4), h, (6, 8), SMALL_GRID)
    with pytest.raises(ValueError, match=r"`image_size` must be \(H, W\)"):
        warp_bev_to_image(torch.zeros(1, 1, 4, 4), h, (6, 0), SMALL_GRID)
    with pytest.raises(ValueError, match=r"horizon"):
        warp_bev_to_image(
            torch.zeros(1, 1, 800, 400),
            small_camera() * 0 + torch.tensor([[1.0, 0, 0], [0, 0, 1], [0, 1, -20]]),
            (6, 8),
        )


def test_devkit_cell_centers_are_numpy_arange_float32():
    x, z = devkit_cell_centers(BevGrid())
    assert x.dtype == torch.float32
    np.testing.assert_array_equal(x[0].numpy(), np.arange(-10 + 0.025, 10, 0.05).astype("f4"))
    np.testing.assert_array_equal(z[:, 0].numpy(), np.arange(46 - 0.025, 6, -0.05).astype("f4"))


# ------------------------------------------------------------------------------------------------ real fixtures


def load_gt(fixtures_dir, name):
    return np.asarray(Image.open(fixtures_dir / f"kitti_road/training/gt_image_2/{name}.png").convert("RGB"))


def test_devkit_check_points_um_000000(fixtures_dir):
    from drivemetrics.geometry import image_from_road_calib, read_kitti_calib

    h = image_from_road_calib(read_kitti_calib(fixtures_dir / "kitti_road/training/calib/um_000000.txt"))
    row, col, valid = bev_sample_pixels(h, (375, 1242))
    # kitti_road.md section 7: BEV (row, col) -> sampled pixel (floor(v) - 1, floor(u) - 1) or invalid
    table = {(799, 200): None, (400, 200): (221, 611), (0, 0): (204, 452), (0, 399): (199, 767), (799, 399): None}
    for (r, c), pixel in table.items():
        if pixel is None:
            assert not valid[0, r, c]
        else:
            assert valid[0, r, c]
            assert (row[0, r, c].item(), col[0, r, c].item()) == pixel
    assert int(valid.sum()) == 307362


# kitti_road.md section 7: BEV GT colour counts (black, red, magenta) from the devkit
BEV_GT_COUNTS = {
    "um_road_000000": (12638, 224560, 82802),
    "umm_road_000000": (13025, 145411, 161564),
    "uu_road_000000": (13632, 209669, 96699),
    "uu_road_000093": (13060, 189228, 117712),
    "um_lane_000000": (12638, 265378, 41984),
}


@pytest.mark.parametrize("gt_name", list(BEV_GT_COUNTS))
def test_devkit_forward_bit_exact_on_real_frames(fixtures_dir, gt_name):
    cat, _, idx = gt_name.split("_")
    frame = f"{cat}_{idx}"
    tr33 = numpy_tr33(fixtures_dir / f"kitti_road/training/calib/{frame}.txt")
    gt = load_gt(fixtures_dir, gt_name)
    expect, expect_valid = numpy_devkit_forward(gt, tr33)

    from drivemetrics.geometry import image_from_road_calib, read_kitti_calib

    h = image_from_road_calib(read_kitti_calib(fixtures_dir / f"kitti_road/training/calib/{frame}.txt"))
    image = torch.from_numpy(gt.copy()).permute(2, 0, 1).unsqueeze(0)
    bev, valid = warp_image_to_bev(image, h, mode="devkit")
    np.testing.assert_array_equal(bev[0].permute(1, 2, 0).numpy(), expect)
    np.testing.assert_array_equal(valid[0].numpy(), expect_valid)
    black, red, magenta = BEV_GT_COUNTS[gt_name]
    pixels = bev[0].permute(1, 2, 0).reshape(-1, 3)
    assert int(((pixels[:, 0] == 255) & (pixels[:, 2] == 255)).sum()) == magenta
    assert int(((pixels[:, 0] == 255) & (pixels[:, 2] == 0)).sum()) == red
    assert int((pixels.sum(1) == 0).sum()) == black  # unseen cells included


def test_devkit_reverse_bit_exact_on_real_frame(fixtures_dir):
    from drivemetrics.geometry import image_from_road_calib, read_kitti_calib

    tr33 = numpy_tr33(fixtures_dir / "kitti_road/training/calib/um_000000.txt")
    gen = np.random.default_rng(0)
    bev = gen.integers(0, 256, size=(800, 400), dtype=np.uint8)
    expect, expect_valid = numpy_devkit_reverse(bev, tr33, (375, 1242))
    h = image_from_road_calib(read_kitti_calib(fixtures_dir / "kitti_road/training/calib/um_000000.txt"))
    image, valid = warp_bev_to_image(torch.from_numpy(bev)[None, None], h, (375, 1242), mode="devkit")
    np.testing.assert_array_equal(valid[0].numpy(), expect_valid)
    np.testing.assert_array_equal(image[0, 0].numpy(), expect)
    assert int(valid.sum()) == 179509  # kitti_road.md section 2.4


def test_bilinear_and_devkit_agree_up_to_the_devkit_offset(fixtures_dir):
    # on a smooth image the devkit's (floor - 1) lookup equals nearest sampling at (u - 1, v - 1) up to a pixel
    from drivemetrics.geometry import image_from_road_calib, read_kitti_calib

    h = image_from_road_calib(read_kitti_calib(fixtures_dir / "kitti_road/training/calib/um_000000.txt"))
    vv, uu = torch.meshgrid(torch.arange(375.0), torch.arange(1242.0), indexing="ij")
    image = torch.stack([uu, vv])[None].double()  # channel 0 holds u, channel 1 holds v
    devkit, dvalid = warp_image_to_bev(image, h, mode="devkit")
    bilinear, bvalid = warp_image_to_bev(image, h, mode="bilinear")
    both = dvalid & bvalid
    col_shift = (bilinear - devkit)[0, 0][both[0]]
    row_shift = (bilinear - devkit)[0, 1][both[0]]
    # bilinear samples at (u, v); the devkit takes pixel (floor(u) - 1, floor(v) - 1): 1 to 2 px left and up
    assert col_shift.min() >= 1 - 1e-9
    assert col_shift.max() <= 2 + 1e-9
    assert row_shift.min() >= 1 - 1e-9
    assert row_shift.max() <= 2 + 1e-9
    assert abs(col_shift.mean().item() - 1.5) < 0.05


def test_validate_args_false_skips_value_checks_only():
    h = small_camera()
    image = torch.rand(1, 1, 6, 8, dtype=torch.float64)
    for mode in ("bilinear", "devkit"):
        checked = warp_image_to_bev(image, h, SMALL_GRID, mode=mode)
        unchecked = warp_image_to_bev(image, h, SMALL_GRID, mode=mode, validate_args=False)
        torch.testing.assert_close(checked[0], unchecked[0], rtol=0, atol=0)
    horizon = torch.tensor([[1.0, 0, 0], [0, 0, 1], [0, 1, -3]], dtype=torch.float64)  # w = 0 at z = 3 m
    with pytest.raises(ValueError, match="horizon"):
        warp_image_to_bev(image, horizon, SMALL_GRID)
    warp_image_to_bev(image, horizon, SMALL_GRID, validate_args=False)  # the caller's responsibility
    with pytest.raises(ValueError, match=r"must have shape B x 3 x 3"):  # shapes are always checked
        warp_image_to_bev(image, torch.eye(4), SMALL_GRID, validate_args=False)


def test_inverse_nearest_picks_rounded_cell():
    P2 = torch.tensor([[16.0, 0, 15.37, 0], [0, 16.0, 1.1, 0], [0, 0, 1, 0]], dtype=torch.float64)
    Tr = torch.tensor([[1.0, 0, 0, 0], [0, 1, 0, -1.5], [0, 0, 1, 0]], dtype=torch.float64)
    h = image_from_road(P2, torch.eye(3, dtype=torch.float64), Tr)
    rows, cols = SMALL_GRID.shape
    bev = torch.arange(rows * cols, dtype=torch.int64).reshape(1, 1, rows, cols) + 1
    # (cx = 15.37 keeps every back-projection off the rounding ties)
    image, valid = warp_bev_to_image(bev, h, (16, 32), SMALL_GRID, mode="nearest")
    vv, uu = torch.meshgrid(
        torch.arange(16.0, dtype=torch.float64), torch.arange(32.0, dtype=torch.float64), indexing="ij"
    )
    z = 24 / (vv - 1.1)
    x = (uu - 15.37) * z / 16
    row, col = SMALL_GRID.cell_from_metric(x, z)
    seen = (vv > 1.1) & (row >= -0.5) & (row <= rows - 0.5) & (col >= -0.5) & (col <= cols - 0.5)
    assert torch.equal(valid[0], seen)
    expect = torch.where(seen, torch.round(row).clamp(0, rows - 1) * cols + torch.round(col).clamp(0, cols - 1) + 1, 0)
    assert torch.equal(image[0, 0], expect.long())


def test_bev_sample_pixels_errors():
    with pytest.raises(ValueError, match=r"'devkit' or 'nearest' for a pixel lookup"):
        bev_sample_pixels(small_camera(), (6, 8), SMALL_GRID, mode="bilinear")
    with pytest.raises(ValueError, match=r"`image_size` must be \(H, W\)"):
        bev_sample_pixels(small_camera(), (6.0, 8), SMALL_GRID)


def test_devkit_check_points_on_device(fixtures_dir, device):
    from drivemetrics.geometry import image_from_road_calib, read_kitti_calib

    h = image_from_road_calib(read_kitti_calib(fixtures_dir / "kitti_road/training/calib/um_000000.txt")).to(device)
    row, col, valid = bev_sample_pixels(h, (375, 1242))
    assert row.device.type == device.type
    assert (row[0, 400, 200].item(), col[0, 400, 200].item()) == (221, 611)
    assert (row[0, 0, 0].item(), col[0, 0, 0].item()) == (204, 452)
    assert (row[0, 0, 399].item(), col[0, 0, 399].item()) == (199, 767)
    assert int(valid.sum()) == 307362


def test_cpu_chunking_gives_the_same_result_and_gradients(monkeypatch):
    import drivemetrics.geometry.warp as warp_module

    h1 = small_camera()
    h2 = h1.clone()
    h2[0, 2] += 0.3
    hs = torch.stack([h1, h2, h1]).requires_grad_(True)
    image = torch.rand(3, 2, 6, 8, dtype=torch.float64, requires_grad=True)
    whole = [warp_image_to_bev(image, hs, SMALL_GRID, mode=m) for m in ("bilinear", "devkit")]
    back_whole = warp_bev_to_image(whole[0][0], hs, (6, 8), SMALL_GRID)
    grads_whole = torch.autograd.grad(whole[0][0].sum() + back_whole[0].sum(), (image, hs))
    monkeypatch.setattr(warp_module, "CPU_CHUNK_POINTS", 16)  # one frame per chunk (4 x 4 cells)
    chunked = [warp_image_to_bev(image, hs, SMALL_GRID, mode=m) for m in ("bilinear", "devkit")]
    back_chunked = warp_bev_to_image(chunked[0][0], hs, (6, 8), SMALL_GRID)
    grads_chunked = torch.autograd.grad(chunked[0][0].sum() + back_chunked[0].sum(), (image, hs))
    for (a, va), (b, vb) in zip([*whole, back_whole], [*chunked, back_chunked], strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
        assert torch.equal(va, vb)
    for a, b in zip(grads_whole, grads_chunked, strict=True):
        torch.testing.assert_close(a, b)
