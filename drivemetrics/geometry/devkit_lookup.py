"""The KITTI-ROAD devkit's image -> BEV lookup table on numpy arrays, without torch.

``road-eval --space bev`` on the CPU warps every frame with this table: the same cells and pixels as
:func:`~drivemetrics.geometry.warp.warp_image_to_bev` with ``mode="devkit"`` (the devkit's
``BirdsEyeView.compute``: float32 cell centers from ``numpy.arange``, projected in float64 by the calibration's
road homography ``P2 * R0_rect * inv(Tr_cam_to_road)``; a cell is valid iff ``1 <= u <= W`` and ``1 <= v <= H``
and takes pixel ``(floor(v) - 1, floor(u) - 1)``). The homography is checked as
:func:`~drivemetrics.geometry.homography.check_road_homography` does (finite, not singular, the horizon outside
the grid), each failure a ``ValueError`` naming the calibration file.
"""

from __future__ import annotations

import functools
import math
from pathlib import Path
from typing import NamedTuple

import numpy as np

from drivemetrics.geometry.bev import BevGrid
from drivemetrics.geometry.calib import ROAD_CALIB_KEYS, read_kitti_calib_arrays

__all__ = ["DevkitLookup", "devkit_lookup", "image_from_road_array", "warp_planes_to_bev"]


def _pad_to_4x4(m: np.ndarray) -> np.ndarray:
    out = np.zeros((4, 4), dtype=np.float64)
    out[:3, : m.shape[1]] = m
    out[3, 3] = 1.0
    return out


def image_from_road_array(calib_path: str | Path) -> np.ndarray:
    """The road-plane homography ``P2 * R0_rect * inv(Tr_cam_to_road)`` (columns X, Z, 1), float64 ``(3, 3)``, of a
    KITTI-ROAD calibration file; every failure (a missing key, a singular matrix) a ``ValueError`` naming it.

    Examples:
        >>> import tempfile
        >>> from pathlib import Path
        >>> from drivemetrics.geometry.devkit_lookup import image_from_road_array
        >>> road = "1 0 0 0 0 1 0 1.65 0 0 1 0"  # camera 1.65 m above the road
        >>> path = Path(tempfile.mkdtemp()) / "um_000000.txt"
        >>> _ = path.write_text(f"P2: 1 0 0 0 0 1 0 0 0 0 1 0\\nR0_rect: 1 0 0 0 1 0 0 0 1\\nTr_cam_to_road: {road}\\n")
        >>> image_from_road_array(path).tolist()
        [[1.0, 0.0, 0.0], [0.0, 0.0, -1.65], [0.0, 1.0, 0.0]]
    """
    calib = read_kitti_calib_arrays(calib_path, ROAD_CALIB_KEYS)
    try:
        with np.errstate(all="ignore"):
            cam_from_road = np.linalg.inv(_pad_to_4x4(calib["Tr_cam_to_road"]))
            homography = (calib["P2"] @ _pad_to_4x4(calib["R0_rect"]) @ cam_from_road)[:, [0, 2, 3]]
    except np.linalg.LinAlgError:
        raise ValueError(f"{calib_path}: Tr_cam_to_road is singular") from None
    if not np.isfinite(homography).all() or abs(float(np.linalg.det(homography))) < 1e-12:
        raise ValueError(f"{calib_path}: the road-plane homography P2 * R0_rect * inv(Tr_cam_to_road) is singular")
    return homography


def _check_homography(homography: np.ndarray, grid: BevGrid, source: str) -> None:
    """:func:`~drivemetrics.geometry.homography.check_road_homography`'s value checks on a float64 ``(3, 3)``."""
    sv = np.linalg.svd(homography, compute_uv=False)
    ratio = sv[-1] / max(sv[0], np.finfo(np.float64).tiny)
    if ratio <= 100 * np.finfo(np.float64).eps:
        raise ValueError(f"{source}: the road homography is singular or nearly so (singular value ratio {ratio:.3g})")
    x = np.array([grid.x_min, grid.x_max, grid.x_min, grid.x_max])
    z = np.array([grid.z_min, grid.z_min, grid.z_max, grid.z_max])
    w = homography[2, 0] * x + homography[2, 1] * z + homography[2, 2]
    if w.min() <= 0 <= w.max():
        raise ValueError(
            f"{source}: the horizon (w = 0) lies inside the BEV grid x [{grid.x_min}, {grid.x_max}] m, "
            f"z [{grid.z_min}, {grid.z_max}] m (w at the grid corners: {w.tolist()}); part of the grid is behind "
            "the camera"
        )


def _numpy_arange(start: float, stop: float, step: float, count: int) -> np.ndarray:
    """``numpy.arange(start, stop, step)`` as float32 (the devkit's cast), checked to hold ``count`` values."""
    expected = math.ceil((stop - start) / step)
    if expected != count:
        raise ValueError(
            f"the devkit's arange({start}, {stop}, {step}) gives {expected} values, the grid needs {count}"
        )
    delta = (start + step) - start
    return (start + np.arange(count, dtype=np.float64) * delta).astype(np.float32)


#: Cell centers per matrix product: OpenBLAS multiplies a 3 x 3 by a 3 x N matrix in one thread below about
#: 29,000 columns; one product over the whole grid starts its threads, which on a busy machine cost 6x the CPU time
#: (measured: 6.7 ms against 1.0 ms for the KITTI grid). Each column is computed the same way either way.
PROJECT_CHUNK = 16384


@functools.lru_cache(maxsize=4)
def _devkit_points(grid: BevGrid) -> tuple[np.ndarray, ...]:
    """``(3, n)`` float64 homogeneous devkit cell centers ``(X, Z, 1)`` (float32 values), in contiguous chunks of
    :data:`PROJECT_CHUNK` columns (read-only, cached)."""
    r = grid.resolution
    x = _numpy_arange(grid.x_min + r / 2, grid.x_max, r, grid.cols)
    z = _numpy_arange(grid.z_max - r / 2, grid.z_min, -r, grid.rows)
    zz, xx = np.meshgrid(z, x, indexing="ij")
    points = np.stack((xx.ravel(), zz.ravel(), np.ones(xx.size, dtype=np.float32))).astype(np.float64)
    chunks = tuple(np.ascontiguousarray(points[:, i : i + PROJECT_CHUNK]) for i in range(0, xx.size, PROJECT_CHUNK))
    for chunk in chunks:
        chunk.flags.writeable = False
    return chunks


def _project(homography: np.ndarray, grid: BevGrid) -> np.ndarray:
    """``homography @ points`` ``(3, N)`` of the devkit cell centers: float64 matrix products, as the devkit's
    ``numpy.dot``, chunk by chunk."""
    chunks = _devkit_points(grid)
    out = np.empty((3, grid.rows * grid.cols), dtype=np.float64)
    for i, chunk in enumerate(chunks):
        np.matmul(homography, chunk, out=out[:, i * PROJECT_CHUNK : i * PROJECT_CHUNK + chunk.shape[1]])
    return out


class DevkitLookup(NamedTuple):
    """Where each BEV cell samples the image: ``pixels`` (``intp`` ``(rows * cols,)``, the flat image index
    ``row * W + col`` of every cell, clamped into the image where the cell is not valid) and ``valid`` (bool
    ``(rows, cols)``)."""

    pixels: np.ndarray
    valid: np.ndarray


def devkit_lookup(
    homography: np.ndarray, image_size: tuple[int, ...], grid: BevGrid | None = None, source: str = "homography"
) -> DevkitLookup:
    """The devkit's lookup table of a float64 ``(3, 3)`` road homography for ``(H, W)`` images (see the module).

    ``source`` names the homography (its calibration file) in errors.

    Examples:
        >>> import numpy as np
        >>> from drivemetrics.geometry import BevGrid
        >>> from drivemetrics.geometry.devkit_lookup import devkit_lookup
        >>> h = np.array([[720.0, 620.0 * 1.0, 0.0], [0.0, 190.0, 720.0 * 1.65], [0.0, 1.0, 0.0]])
        >>> lookup = devkit_lookup(h, (375, 1242), BevGrid(x_min=-2.0, x_max=2.0, z_min=6.0, z_max=10.0))
        >>> lookup.valid.shape, lookup.pixels.shape  # one image pixel per cell
        ((80, 80), (6400,))
    """
    grid = BevGrid() if grid is None else grid
    homography = np.asarray(homography, dtype=np.float64)
    if homography.shape != (3, 3) or not np.isfinite(homography).all():
        raise ValueError(f"{source}: the road homography must be a finite 3 x 3 matrix")
    _check_homography(homography, grid, source)
    if len(image_size) != 2 or min(image_size) < 1:
        raise ValueError(f"`image_size` must be (H, W) with positive integers, got {image_size!r}")
    height, width = image_size
    p = _project(homography, grid)
    u, v = p[0] / p[2], p[1] / p[2]
    valid = (v >= 1) & (u >= 1) & (v <= height) & (u <= width)
    row, col = v, u  # (floor(v) - 1, floor(u) - 1) where valid, clamped into the image elsewhere
    for values, top in ((row, height), (col, width)):
        np.maximum(values, 1, out=values)
        np.minimum(values, top, out=values)
        np.floor(values, out=values)
        values -= 1
    row *= width
    row += col
    return DevkitLookup(row.astype(np.intp), valid.reshape(grid.shape))


def warp_planes_to_bev(planes: np.ndarray, lookup: DevkitLookup) -> np.ndarray:
    """``planes`` ``(C, H, W)`` warped by ``lookup``: ``(C, rows, cols)``, same dtype, 0 at the cells the camera does
    not see (the devkit's ``BirdsEyeView.transformImage2BEV``).

    Examples:
        >>> import numpy as np
        >>> from drivemetrics.geometry.devkit_lookup import DevkitLookup, warp_planes_to_bev
        >>> lookup = DevkitLookup(np.array([3, 0, 1]), np.array([[True, False, True]]))
        >>> warp_planes_to_bev(np.arange(4, dtype=np.uint8).reshape(1, 2, 2), lookup).tolist()
        [[[3, 0, 1]]]
    """
    out = np.take(planes.reshape(planes.shape[0], -1), lookup.pixels, axis=1)
    out *= lookup.valid.reshape(-1)
    return out.reshape(planes.shape[0], *lookup.valid.shape)
