"""Batched warps between the camera image and the bird's-eye view (BEV) of the road plane.

Conventions: images are ``(B, C, H, W)``; image pixel ``(u, v)`` = (column, row) with pixel centers at integers
(KITTI's 0-based convention, the one of ``P2``); BEV cells follow :class:`BevGrid` (row 0 far, column 0 left,
values at cell centers). The homography ``image_from_road`` (``(B, 3, 3)`` or ``(3, 3)``, see
:func:`drivemetrics.geometry.image_from_road`) maps road points ``(X, Z, 1)`` to image pixels.

Modes:

- ``"bilinear"``: differentiable; gradients reach the input and ``image_from_road``. Sampling uses
  ``torch.nn.functional.grid_sample`` with ``align_corners=True`` on coordinates normalised by
  ``kornia.geometry.conversions.normalize_pixel_coordinates``; a cell is valid when its center falls on the
  image (``-0.5 <= u <= W - 0.5`` and the same for ``v``); samples within half a pixel of the border use the
  border pixel. Invalid cells are 0.
- ``"nearest"``: the nearest pixel in the 0-based convention (``round(u), round(v)``), any dtype.
- ``"devkit"``: the KITTI-ROAD devkit (``BirdsEyeView.compute`` / ``compute_reverse``) bit for bit, any
  dtype; see :func:`warp_image_to_bev` and :func:`warp_bev_to_image`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Literal

import torch
import torch.nn.functional as F
from torch import Tensor

from drivemetrics._internal.validation import check_shape
from drivemetrics.geometry.bev import BevGrid
from drivemetrics.geometry.homography import check_road_homography, grid_side

WarpMode = Literal["bilinear", "nearest", "devkit"]
WARP_MODES: tuple[str, ...] = ("bilinear", "nearest", "devkit")

__all__ = [
    "WARP_MODES",
    "WarpMode",
    "bev_sample_pixels",
    "devkit_cell_centers",
    "warp_bev_to_image",
    "warp_image_to_bev",
]


# --------------------------------------------------------------------------------------------------- checks


def _check_inputs(
    x: Tensor, name: str, image_from_road: Tensor, grid: BevGrid, mode: str, validate_args: bool
) -> Tensor:
    """Validate a ``(B, C, H, W)`` input, the mode and the homographies; return homographies ``(B, 3, 3)``."""
    if mode not in WARP_MODES:
        raise ValueError(f"`mode` must be one of {', '.join(WARP_MODES)}, got {mode!r}")
    check_shape(x, name, ("B", "C", "H", "W"))
    if mode == "bilinear" and not x.is_floating_point():
        raise TypeError(
            f"`{name}` must be floating for mode='bilinear', got {x.dtype}; use .float() or mode='nearest'/'devkit'"
        )
    if not isinstance(grid, BevGrid):
        raise TypeError(f"`grid` must be a BevGrid, got {type(grid).__name__}")
    h = check_road_homography(image_from_road, grid, check_values=validate_args)
    if h.shape[0] not in (1, x.shape[0]):
        raise ValueError(
            f"`image_from_road` must hold 1 or B = {x.shape[0]} homographies (one per `{name}` sample), "
            f"got {h.shape[0]}"
        )
    if h.device != x.device:
        raise ValueError(f"`image_from_road` is on {h.device} but `{name}` is on {x.device}")
    return h.expand(x.shape[0], 3, 3)


def _coord_dtype(x: Tensor) -> torch.dtype:
    """Dtype of the bilinear sampling coordinates: the input's, at least float32."""
    return torch.promote_types(x.dtype, torch.float32)


# -------------------------------------------------------------------------------------------------- devkit grid


def _numpy_arange(
    start: float, stop: float, step: float, count: int, dtype: torch.dtype, device: torch.device
) -> Tensor:
    """``numpy.arange(start, stop, step)`` value for value (numpy fills ``start + i * ((start + step) - start)``)."""
    expected = math.ceil((stop - start) / step)
    if expected != count:
        raise ValueError(
            f"the devkit's arange({start}, {stop}, {step}) gives {expected} values, the grid needs {count}"
        )
    delta = (start + step) - start
    i = torch.arange(count, dtype=torch.float64, device=device)
    return (start + i * delta).to(dtype)


def devkit_cell_centers(grid: BevGrid, device: torch.device | str | None = None) -> tuple[Tensor, Tensor]:
    """Cell-center meshes ``(X, Z)``, ``(rows, cols)``, exactly as the devkit builds them.

    The devkit uses ``numpy.arange(x_min + res / 2, x_max, res)`` and ``numpy.arange(z_max - res / 2, z_min,
    -res)`` in float64 and casts the meshes to float32 before projecting; the values returned here are those
    float32 numbers (as float32 tensors).

    Examples:
        >>> from drivemetrics.geometry import BevGrid, devkit_cell_centers
        >>> X, Z = devkit_cell_centers(BevGrid(x_min=-2.0, x_max=2.0, z_min=6.0, z_max=10.0, resolution=1.0))
        >>> X[0].tolist(), Z[:, 0].tolist()  # row 0 is the far edge
        ([-1.5, -0.5, 0.5, 1.5], [9.5, 8.5, 7.5, 6.5])
    """
    device = torch.device(device) if device is not None else None
    r = grid.resolution
    x = _numpy_arange(grid.x_min + r / 2, grid.x_max, r, grid.cols, torch.float32, device)
    z = _numpy_arange(grid.z_max - r / 2, grid.z_min, -r, grid.rows, torch.float32, device)
    zz, xx = torch.meshgrid(z, x, indexing="ij")
    return xx, zz


@functools.lru_cache(maxsize=8)
def _devkit_points(grid: BevGrid, device: torch.device) -> Tensor:
    """``(3, N)`` float64 homogeneous devkit cell centers ``(X, Z, 1)`` (cached per grid and device)."""
    x, z = devkit_cell_centers(grid, device)
    x, z = x.reshape(-1).to(torch.float64), z.reshape(-1).to(torch.float64)
    return torch.stack((x, z, torch.ones_like(x)))


def _project(h: Tensor, x: Tensor, z: Tensor) -> Tensor:
    """Homogeneous images ``(B, 3, N)`` of road points ``(x, z)`` (any shape, ``N`` values) under ``(B, 3, 3)``."""
    x, z = x.reshape(-1).to(h.dtype), z.reshape(-1).to(h.dtype)
    return torch.matmul(h, torch.stack((x, z, torch.ones_like(x))))


def _dehomogenise(p: Tensor, side: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """``(p0 / p2, p1 / p2, in_front)`` of ``(B, 3, N)`` points; ``in_front``: ``p2`` has the sign ``side`` (``B``)."""
    w = p[:, 2]
    in_front = w * side.unsqueeze(1) > 0
    w = torch.where(in_front, w, torch.ones_like(w))  # keeps the quotients finite where invalid
    return p[:, 0] / w, p[:, 1] / w, in_front


# -------------------------------------------------------------------------------------------------- sampling


def _gather(src: Tensor, flat_index: Tensor, valid: Tensor, out_hw: tuple[int, int]) -> Tensor:
    """``src[b, :, i]`` (``src`` flattened over H x W) for in-range long ``(B, N)`` indices; invalid -> 0."""
    b, c, h, w = src.shape
    values = src.reshape(b, c, h * w).gather(2, flat_index.unsqueeze(1).expand(b, c, flat_index.shape[1]))
    values = values.masked_fill(~valid.unsqueeze(1), 0)
    return values.reshape(b, c, *out_hw)


def _nearest_index(u: Tensor, v: Tensor, height: int, width: int) -> tuple[Tensor, Tensor]:
    """Flat index of pixel ``(round(v), round(u))`` and the mask of points on the image (``-0.5 .. W - 0.5``)."""
    valid = (u >= -0.5) & (u <= width - 0.5) & (v >= -0.5) & (v <= height - 0.5)
    col = torch.round(u).clamp_(0, width - 1)
    row = torch.round(v).clamp_(0, height - 1)
    return (row.mul_(width).add_(col)).long(), valid


def _sample_bilinear(
    src: Tensor, u: Tensor, v: Tensor, in_front: Tensor, out_hw: tuple[int, int]
) -> tuple[Tensor, Tensor]:
    """Bilinear samples of ``src`` (``(B, C, H, W)``) at pixel-center coordinates ``(u, v)`` (``(B, N)``).

    Points off the image (``-0.5 .. W - 0.5``) or not ``in_front`` give 0; within half a pixel of the border the
    border pixel is used (``grid_sample`` with ``padding_mode="border"``, ``align_corners=True``).
    """
    b, _, h, w = src.shape
    valid = in_front & (u >= -0.5) & (u <= w - 0.5) & (v >= -0.5) & (v <= h - 0.5)
    from kornia.geometry.conversions import normalize_pixel_coordinates  # kornia takes ~1 s to import

    grid = normalize_pixel_coordinates(torch.stack((u, v), dim=-1), h, w).to(src.dtype).reshape(b, *out_hw, 2)
    values = F.grid_sample(src, grid, mode="bilinear", padding_mode="border", align_corners=True)
    values = values.masked_fill(~valid.reshape(b, 1, *out_hw), 0)
    return values, valid.reshape(b, *out_hw)


#: On the CPU, frames are warped in chunks of at most this many output points (about 1.5 KITTI BEV frames),
#: so that the float64 temporaries stay in cache; on other devices the whole batch goes at once.
CPU_CHUNK_POINTS = 1 << 19


def _in_chunks(
    fn: Callable[..., tuple[Tensor, Tensor]], x: Tensor, h: Tensor, points_per_frame: int, **kwargs: object
) -> tuple[Tensor, Tensor]:
    """``fn(x, h, **kwargs)``, on the CPU split over chunks of the batch (results concatenated)."""
    b = x.shape[0]
    chunk = max(1, CPU_CHUNK_POINTS // max(points_per_frame, 1)) if x.device.type == "cpu" else b
    if chunk >= b:
        return fn(x, h, **kwargs)
    parts = [fn(x[i : i + chunk], h[i : i + chunk], **kwargs) for i in range(0, b, chunk)]
    return torch.cat([p[0] for p in parts]), torch.cat([p[1] for p in parts])


# ------------------------------------------------------------------------------------------------- public API


def bev_sample_pixels(
    image_from_road: Tensor, image_size: tuple[int, int], grid: BevGrid | None = None, mode: WarpMode = "devkit"
) -> tuple[Tensor, Tensor, Tensor]:
    """The image pixel each BEV cell samples in ``"nearest"`` or ``"devkit"`` mode (the lookup table).

    Args:
        image_from_road: ``(B, 3, 3)`` or ``(3, 3)`` road -> image homographies.
        image_size: ``(H, W)`` of the image, pixels.
        grid: the BEV grid (default: the KITTI-ROAD grid).
        mode: ``"devkit"`` (``(floor(v) - 1, floor(u) - 1)``) or ``"nearest"`` (``(round(v), round(u))``).

    Returns:
        ``(row, col, valid)``, each ``(B, rows, cols)``; ``row`` / ``col`` are long image indices, meaningful
        where ``valid`` (elsewhere -1).

    Examples:
        >>> from drivemetrics.geometry import image_from_road_homography, intrinsic_matrix
        >>> H = image_from_road_homography(intrinsic_matrix(720.0, 720.0, 620.0, 190.0), camera_height=1.65)
        >>> from drivemetrics.geometry import BevGrid, bev_sample_pixels
        >>> grid = BevGrid(x_min=-2.0, x_max=2.0, z_min=6.0, z_max=10.0, resolution=1.0)
        >>> u, v, inside = bev_sample_pixels(H, (375, 1242), grid)
        >>> tuple(u.shape), inside.all().item()
        ((1, 4, 4), True)
    """
    grid = BevGrid() if grid is None else grid
    if mode not in ("devkit", "nearest"):
        raise ValueError(f"`mode` must be 'devkit' or 'nearest' for a pixel lookup, got {mode!r}")
    h = check_road_homography(image_from_road, grid)
    height, width = _check_size(image_size)
    flat, valid = _forward_index((height, width), h, grid, mode)
    shape = (h.shape[0], *grid.shape)
    row = torch.where(valid, flat // width, -1).reshape(shape)
    col = torch.where(valid, flat % width, -1).reshape(shape)
    return row, col, valid.reshape(shape)


def _check_size(image_size: tuple[int, int]) -> tuple[int, int]:
    if (
        len(image_size) != 2
        or not all(isinstance(s, int) and not isinstance(s, bool) for s in image_size)
        or min(image_size) < 1
    ):
        raise ValueError(f"`image_size` must be (H, W) with positive integers, got {image_size!r}")
    return int(image_size[0]), int(image_size[1])


def _forward_index(image_size: tuple[int, int], h: Tensor, grid: BevGrid, mode: str) -> tuple[Tensor, Tensor]:
    """Flat image index (long, in range) and validity, each ``(B, N)``, for the nearest / devkit image -> BEV warps."""
    height, width = image_size
    if mode == "devkit":
        p = torch.matmul(h.to(torch.float64), _devkit_points(grid, h.device))  # float32 centers, in float64
        u, v = p[:, 0] / p[:, 2], p[:, 1] / p[:, 2]
        valid = (v >= 1) & (u >= 1) & (v <= height) & (u <= width)
        row = v.clamp_(1, height).floor_().sub_(1)  # (floor(v) - 1, floor(u) - 1) where valid
        col = u.clamp_(1, width).floor_().sub_(1)
        return row.mul_(width).add_(col).long(), valid
    x, z = grid.cell_centers(torch.float64, h.device)
    p = _project(h, x, z)
    return _nearest_index(p[:, 0] / p[:, 2], p[:, 1] / p[:, 2], height, width)


def warp_image_to_bev(
    image: Tensor,
    image_from_road: Tensor,
    grid: BevGrid | None = None,
    mode: WarpMode = "bilinear",
    validate_args: bool = True,
) -> tuple[Tensor, Tensor]:
    """Warp camera images to the bird's-eye view of the road plane.

    Each BEV cell center ``(X, Z)`` is projected with ``image_from_road`` and the image is sampled there.

    ``mode="devkit"`` reproduces the KITTI-ROAD devkit's ``BirdsEyeView.compute`` bit for bit: cell centers
    from ``numpy.arange`` cast to float32, projected in float64; a cell is valid iff ``1 <= u <= W`` and
    ``1 <= v <= H``; it takes pixel ``(floor(v) - 1, floor(u) - 1)`` (the devkit treats the 0-based ``P2``
    coordinates as 1-based, so it samples 1 to 2 pixels up-left of the nearest pixel); unseen cells are 0; the
    dtype is kept. Pass the float64 homography from the calibration file for exact agreement. The projection
    is one float64 matrix product, as in the devkit (``numpy.dot``); like the devkit's own output, it could
    differ in the last bit between BLAS libraries, which moves a cell only if ``u`` or ``v`` lies within about
    1e-13 pixel of an integer (verified identical to a numpy transcription on the KITTI-ROAD fixture frames).

    Args:
        image: ``(B, C, H, W)`` (floating for ``"bilinear"``; any dtype for ``"nearest"`` / ``"devkit"``).
        image_from_road: ``(B, 3, 3)`` (one per sample), ``(1, 3, 3)`` or ``(3, 3)`` (shared) road -> image
            homographies.
        grid: the BEV grid (default: the KITTI-ROAD grid, 800 x 400 cells of 0.05 m).
        mode: ``"bilinear"`` (differentiable), ``"nearest"`` or ``"devkit"``.
        validate_args: check the homographies' values (finite, not singular, horizon outside the grid); these
            checks synchronise with the device, turn them off in training loops once the inputs are known good.

    Returns:
        ``(bev, valid)``: ``bev`` is ``(B, C, rows, cols)`` in the input's dtype (0 where invalid); ``valid``
        is a bool ``(B, rows, cols)`` mask of the cells that see the image.

    Raises:
        ValueError: bad shapes, unknown mode, singular homography, or the horizon inside the grid.
        TypeError: a wrong dtype.

    Examples:
        >>> import torch
        >>> from drivemetrics.geometry import image_from_road_homography, intrinsic_matrix
        >>> H = image_from_road_homography(intrinsic_matrix(720.0, 720.0, 620.0, 190.0), camera_height=1.65)
        >>> from drivemetrics.geometry import BevGrid, warp_image_to_bev
        >>> grid = BevGrid(x_min=-2.0, x_max=2.0, z_min=6.0, z_max=10.0, resolution=1.0)
        >>> bev, valid = warp_image_to_bev(torch.rand(1, 3, 375, 1242), H, grid)
        >>> tuple(bev.shape), tuple(valid.shape), valid.all().item()
        ((1, 3, 4, 4), (1, 4, 4), True)
    """
    grid = BevGrid() if grid is None else grid
    h = _check_inputs(image, "image", image_from_road, grid, mode, validate_args)
    return _in_chunks(_image_to_bev, image, h, grid.rows * grid.cols, grid=grid, mode=mode)


def _image_to_bev(image: Tensor, h: Tensor, grid: BevGrid, mode: str) -> tuple[Tensor, Tensor]:
    """:func:`warp_image_to_bev` on checked inputs (``h`` is ``(B, 3, 3)``)."""
    out_hw = grid.shape
    if mode in ("devkit", "nearest"):
        flat, valid = _forward_index((image.shape[-2], image.shape[-1]), h, grid, mode)
        return _gather(image, flat, valid, out_hw), valid.reshape(image.shape[0], *out_hw)
    x, z = grid.cell_centers(torch.float64, image.device)
    p = _project(h.to(_coord_dtype(image)), x, z)
    u, v, in_front = _dehomogenise(p, grid_side(h, grid))
    return _sample_bilinear(image, u, v, in_front, out_hw)


def warp_bev_to_image(
    bev: Tensor,
    image_from_road: Tensor,
    image_size: tuple[int, int],
    grid: BevGrid | None = None,
    mode: WarpMode = "bilinear",
    validate_args: bool = True,
) -> tuple[Tensor, Tensor]:
    """Warp bird's-eye views back into the camera image (the inverse of :func:`warp_image_to_bev`).

    Each image pixel center is back-projected onto the road plane with ``inv(image_from_road)`` and the BEV is
    sampled at that road point; pixels above the horizon and pixels whose road point lies outside the grid
    are invalid (0).

    ``mode="devkit"`` reproduces the devkit's ``BirdsEyeView.compute_reverse`` bit for bit: it back-projects the
    1-based pixel ``(x_im, y_im)`` (i.e. 0-based ``(u, v) = (x_im, y_im)``, not ``x_im - 1``), rounds
    ``Xi = round((X - x_min) / res)``, ``Zi = round(rows - (Z - z_min) / res)`` (half to even), keeps
    ``1 <= Xi <= cols``, ``1 <= Zi <= rows`` and writes ``bev[Zi - 1, Xi - 1]`` into pixel
    ``(y_im - 1, x_im - 1)``. It is not the exact inverse of the devkit's forward lookup: the forward warp
    floors, this one rounds, and neither uses the 0-based pixel / cell-center convention, so a forward and
    reverse devkit round trip moves content by about one pixel.

    Args:
        bev: ``(B, C, rows, cols)`` on ``grid`` (floating for ``"bilinear"``).
        image_from_road: ``(B, 3, 3)``, ``(1, 3, 3)`` or ``(3, 3)`` road -> image homographies.
        image_size: ``(H, W)`` of the output image, pixels.
        grid: the BEV grid of ``bev`` (default: the KITTI-ROAD grid).
        mode: ``"bilinear"`` (differentiable w.r.t. ``bev`` and ``image_from_road``), ``"nearest"`` or
            ``"devkit"``.
        validate_args: as in :func:`warp_image_to_bev`.

    Returns:
        ``(image, valid)``: ``image`` is ``(B, C, H, W)`` in ``bev``'s dtype; ``valid`` a bool ``(B, H, W)``
        mask of the pixels that see the grid.

    Examples:
        >>> import torch
        >>> from drivemetrics.geometry import image_from_road_homography, intrinsic_matrix
        >>> H = image_from_road_homography(intrinsic_matrix(720.0, 720.0, 620.0, 190.0), camera_height=1.65)
        >>> from drivemetrics.geometry import BevGrid, warp_bev_to_image
        >>> grid = BevGrid(x_min=-2.0, x_max=2.0, z_min=6.0, z_max=10.0, resolution=1.0)
        >>> image, valid = warp_bev_to_image(torch.ones(1, 1, 4, 4), H, (375, 1242), grid)
        >>> tuple(image.shape), tuple(valid.shape), valid[0, -1, 620].item()  # bottom centre: on the grid
        ((1, 1, 375, 1242), (1, 375, 1242), True)
    """
    grid = BevGrid() if grid is None else grid
    h = _check_inputs(bev, "bev", image_from_road, grid, mode, validate_args)
    if tuple(bev.shape[-2:]) != grid.shape:
        raise ValueError(f"`bev` must be B x C x {grid.rows} x {grid.cols} to match `grid`, got {tuple(bev.shape)}")
    height, width = _check_size(image_size)
    return _in_chunks(_bev_to_image, bev, h, height * width, image_size=(height, width), grid=grid, mode=mode)


def _bev_to_image(
    bev: Tensor, h: Tensor, image_size: tuple[int, int], grid: BevGrid, mode: str
) -> tuple[Tensor, Tensor]:
    """:func:`warp_bev_to_image` on checked inputs (``h`` is ``(B, 3, 3)``)."""
    height, width = image_size
    b = bev.shape[0]
    dtype = torch.float64 if mode in ("devkit", "nearest") else _coord_dtype(bev)
    road_from_image = torch.linalg.inv(h.to(dtype))
    v_im, u_im = torch.meshgrid(
        torch.arange(height, dtype=dtype, device=bev.device),
        torch.arange(width, dtype=dtype, device=bev.device),
        indexing="ij",
    )
    if mode == "devkit":
        p = _project(road_from_image, u_im + 1, v_im + 1)  # the devkit's 1-based pixel coordinates
        x, z = p[:, 0] / p[:, 2], p[:, 1] / p[:, 2]
        col_1 = torch.round((x - grid.x_min) / grid.resolution).nan_to_num_(0.0)
        row_1 = torch.round(grid.rows - (z - grid.z_min) / grid.resolution).nan_to_num_(0.0)
        valid = (col_1 >= 1) & (col_1 <= grid.cols) & (row_1 >= 1) & (row_1 <= grid.rows)
        flat = (row_1.clamp_(1, grid.rows) - 1).mul_(grid.cols).add_(col_1.clamp_(1, grid.cols) - 1).long()
        return _gather(bev, flat, valid, (height, width)), valid.reshape(b, height, width)
    # a pixel sees the road iff its back-projection lies on the grid's side of the camera
    p = _project(road_from_image, u_im, v_im)
    x, z, in_front = _dehomogenise(p, grid_side(h, grid))
    row, col = grid.cell_from_metric(x, z)
    if mode == "nearest":
        flat, valid = _nearest_index(col, row, grid.rows, grid.cols)
        valid &= in_front
        return _gather(bev, flat, valid, (height, width)), valid.reshape(b, height, width)
    return _sample_bilinear(bev, col, row, in_front, (height, width))
