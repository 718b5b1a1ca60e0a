"""The devkit's BEV lookup table on numpy (geometry.devkit_lookup) against the tensor warp's devkit mode."""

import subprocess
import sys

import numpy as np
import pytest
import torch

from drivemetrics.geometry import BevGrid, bev_sample_pixels, warp_image_to_bev
from drivemetrics.geometry.devkit_lookup import devkit_lookup, image_from_road_array, warp_planes_to_bev
from drivemetrics.geometry.homography import image_from_road_calib_file

CALIBS = ["um_000000", "umm_000000", "uu_000000", "uu_000093"]
SMALL = BevGrid(x_min=-4.0, x_max=4.0, z_min=6.0, z_max=14.0, resolution=0.5)


@pytest.mark.parametrize("name", CALIBS)
@pytest.mark.parametrize("grid", [BevGrid(), SMALL], ids=["kitti", "small"])
def test_lookup_and_warp_equal_the_tensor_devkit_mode(fixtures_dir, name, grid):
    calib = fixtures_dir / "kitti_road/training/calib" / f"{name}.txt"
    if not calib.is_file():
        pytest.skip("kitti_road fixtures absent")
    homography = image_from_road_array(calib)
    expected_h = image_from_road_calib_file(calib).numpy()
    np.testing.assert_allclose(homography, expected_h, rtol=1e-14, atol=1e-12)  # LAPACK / BLAS: last bits apart
    lookup = devkit_lookup(homography, (375, 1242), grid)
    row, col, valid = bev_sample_pixels(torch.from_numpy(expected_h), (375, 1242), grid, mode="devkit")
    np.testing.assert_array_equal(lookup.valid, valid[0].numpy())
    flat = (row[0] * 1242 + col[0]).numpy()[valid[0].numpy()]
    np.testing.assert_array_equal(lookup.pixels.reshape(grid.shape)[lookup.valid], flat)
    image = np.random.default_rng(0).integers(0, 256, (3, 375, 1242), dtype=np.uint8)
    warped = warp_planes_to_bev(image, lookup)
    expected, _ = warp_image_to_bev(torch.from_numpy(image)[None], torch.from_numpy(expected_h), grid, mode="devkit")
    np.testing.assert_array_equal(warped, expected[0].numpy())


def test_bad_homographies_are_one_line_errors_naming_the_source(tmp_path):
    h = np.array([[720.0, 620.0, 0.0], [0.0, 190.0, 1188.0], [0.0, 1.0, 0.0]])
    with pytest.raises(ValueError, match=r"calib\.txt: the road homography is singular"):
        devkit_lookup(np.zeros((3, 3)) + np.eye(3) * [1, 1, 0], (375, 1242), source="calib.txt")
    with pytest.raises(ValueError, match=r"calib\.txt: the horizon"):
        devkit_lookup(h @ np.array([[1.0, 0, 0], [0, 1, -20.0], [0, 0, 1]]), (375, 1242), source="calib.txt")
    with pytest.raises(ValueError, match="finite 3 x 3"):
        devkit_lookup(np.full((3, 3), np.nan), (375, 1242))
    calib = tmp_path / "um_000000.txt"
    calib.write_text("P2: 1 0 0 0 0 1 0 0 0 0 1 0\nR0_rect: 1 0 0 0 1 0 0 0 1\n")
    with pytest.raises(ValueError, match=r"missing calibration key.*Tr_cam_to_road"):
        image_from_road_array(calib)
    calib.write_text(
        "P2: 1 0 0 0 0 1 0 0 0 0 1 0\nR0_rect: 1 0 0 0 1 0 0 0 1\nTr_cam_to_road: 1 0 0 0 0 0 0 0 0 0 1 0\n"
    )
    with pytest.raises(ValueError, match=r"um_000000\.txt: .*singular"):
        image_from_road_array(calib)


def test_the_lookup_imports_no_torch():
    code = "import sys, drivemetrics.geometry.devkit_lookup, drivemetrics.road.evaluate; print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
