"""Batched warps between the camera image and the bird's-eye view (BEV) of the road plane.

Conventions: images are ``B x C x H x W``; image pixel ``(u, v)`` = (column, row) with pixel centres at integers
(KITTI's 0-based convention, the one of ``P2``); BEV cells follow :class:`BevGrid` (row 0 far, column 0 left,
values at cell centres). The homography ``image_from_road`` (``B x 3 x 3`` or ``3 x 3``, see
:func:`drivemetrics.geometry.image_from_road`) maps road points ``(X, Z, 1)`` to image pixels.

Modes:

- ``"bilinear"``: differentiable; gradients reach the input and ``image_from_road``. Sampling uses
  ``torch.nn.functional.grid_sample`` with ``align_corners=True`` on coordinates normalised by
  ``kornia.geometry.conversions.normalize_pixel_coordinates``; a cell is valid when its centre falls on the
  image (``-0.5 <= u <= W - 0.5`` and the same for ``v``); samples within half a pixel of the border use the
  border pixel. Invalid cells are 0.
- ``"nearest"``: the nearest pixel in the 0-based convention (``round(u), round(v)``), any dtype.
- ``"devkit"``: the KITTI-ROAD devkit (``BirdsEyeView.compute`` / ``compute_reverse``) bit for bit, any
  dtype; see :func:`warp_image_to_bev` and :func:`warp_bev_to_image`.
"""

from __future__ import annotations

import math
from typing import Literal

import torch
import torch.nn.functional as F
from kornia.geometry.conversions import normalize_pixel_coordinates
from torch import Tensor

from drivemetrics._validation import check_shape
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


def _check_inputs(x: Tensor, name: str, image_from_road: Tensor, grid: BevGrid, mode: str) -> Tensor:
    """Validate a ``B x C x H x W`` input, the mode and the homographies; return homographies ``B x 3 x 3``."""
    if mode not in WARP_MODES:
        raise ValueError(f"`mode` must be one of {', '.join(WARP_MODES)}, got {mode!r}")
    check_shape(x, name, ("B", "C", "H", "W"))
    if mode == "bilinear" and not x.is_floating_point():
        raise TypeError(
            f"`{name}` must be floating for mode='bilinear', got {x.dtype}; use .float() or mode='nearest'/'devkit'"
        )
    if not isinstance(grid, BevGrid):
        raise TypeError(f"`grid` must be a BevGrid, got {type(grid).__name__}")
    h = check_road_homography(image_from_road, grid)
    if h.shape[0] not in (1, x.shape[0]):
        raise ValueError(
            f"`image_from_road` must hold 1 or B = {x.shape[0]} homographies (one per `{name}` sample), "
            f"got {h.shape[0]}"
        )
    if h.device != x.device:
        raise ValueError(f"`image_from_road` is on {h.device} but `{name}` is on {x.device}")
    return h.expand(x.shape[0], 3, 3)


def _coord_dtype(x: Tensor, h: Tensor) -> torch.dtype:
    """Dtype for coordinates: the homography's, promoted with a floating input's."""
    return torch.promote_types(h.dtype, x.dtype) if x.is_floating_point() else h.dtype


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
    """Cell-centre meshes ``(X, Z)``, ``rows x cols``, exactly as the devkit builds them.

    The devkit uses ``numpy.arange(x_min + res / 2, x_max, res)`` and ``numpy.arange(z_max - res / 2, z_min,
    -res)`` in float64 and casts the meshes to float32 before projecting; the values returned here are those
    float32 numbers (as float32 tensors).
    """
    device = torch.device(device) if device is not None else None
    r = grid.resolution
    x = _numpy_arange(grid.x_min + r / 2, grid.x_max, r, grid.cols, torch.float32, device)
    z = _numpy_arange(grid.z_max - r / 2, grid.z_min, -r, grid.rows, torch.float32, device)
    zz, xx = torch.meshgrid(z, x, indexing="ij")
    return xx, zz


def _project(h: Tensor, x: Tensor, z: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """``(u w, v w, w)`` of road points ``(x, z)`` (shape ``N``) under ``B x 3 x 3`` homographies; each ``B x N``."""
    x, z = x.reshape(1, -1), z.reshape(1, -1)
    rows = [h[:, i, 0:1] * x + h[:, i, 1:2] * z + h[:, i, 2:3] for i in range(3)]
    return rows[0], rows[1], rows[2]


# -------------------------------------------------------------------------------------------------- sampling


def _gather(src: Tensor, row: Tensor, col: Tensor, valid: Tensor, out_hw: tuple[int, int]) -> Tensor:
    """``src[b, :, row, col]`` for integer ``B x N`` indices (any values where invalid); invalid -> 0."""
    b, c, h, w = src.shape
    flat_index = torch.where(valid, row * w + col, torch.zeros_like(row))
    values = src.reshape(b, c, h * w).gather(2, flat_index.unsqueeze(1).expand(b, c, flat_index.shape[1]))
    values = torch.where(valid.unsqueeze(1), values, torch.zeros((), dtype=src.dtype, device=src.device))
    return values.reshape(b, c, *out_hw)


def _sample(
    src: Tensor, u: Tensor, v: Tensor, in_front: Tensor, out_hw: tuple[int, int], mode: str
) -> tuple[Tensor, Tensor]:
    """Sample ``src`` (``B x C x H x W``) at continuous pixel-centre coordinates ``(u, v)`` (``B x N``)."""
    b, _, h, w = src.shape
    valid = in_front & (u >= -0.5) & (u <= w - 0.5) & (v >= -0.5) & (v <= h - 0.5)
    if mode == "nearest":
        col = torch.round(torch.where(valid, u, 0)).long().clamp(0, w - 1)
        row = torch.round(torch.where(valid, v, 0)).long().clamp(0, h - 1)
        return _gather(src, row, col, valid, out_hw), valid.reshape(b, *out_hw)
    # bilinear; invalid coordinates are replaced before normalising so that no inf / NaN enters grid_sample
    uv = torch.stack((torch.where(valid, u, 0), torch.where(valid, v, 0)), dim=-1)
    grid = normalize_pixel_coordinates(uv, h, w).to(src.dtype).reshape(b, *out_hw, 2)
    values = F.grid_sample(src, grid, mode="bilinear", padding_mode="border", align_corners=True)
    values = values * valid.reshape(b, 1, *out_hw).to(src.dtype)
    return values, valid.reshape(b, *out_hw)


# ------------------------------------------------------------------------------------------------- public API


def bev_sample_pixels(
    image_from_road: Tensor, image_size: tuple[int, int], grid: BevGrid | None = None, mode: WarpMode = "devkit"
) -> tuple[Tensor, Tensor, Tensor]:
    """The image pixel each BEV cell samples in ``"nearest"`` or ``"devkit"`` mode (the lookup table).

    Args:
        image_from_road: ``B x 3 x 3`` or ``3 x 3`` road -> image homographies.
        image_size: ``(H, W)`` of the image, pixels.
        grid: the BEV grid (default: the KITTI-ROAD grid).
        mode: ``"devkit"`` (``(floor(v) - 1, floor(u) - 1)``) or ``"nearest"`` (``(round(v), round(u))``).

    Returns:
        ``(row, col, valid)``, each ``B x rows x cols``; ``row`` / ``col`` are long image indices, meaningful
        where ``valid`` (elsewhere -1).
    """
    grid = BevGrid() if grid is None else grid
    if mode not in ("devkit", "nearest"):
        raise ValueError(f"`mode` must be 'devkit' or 'nearest' for a pixel lookup, got {mode!r}")
    h = check_road_homography(image_from_road, grid)
    height, width = _check_size(image_size)
    row, col, valid = _forward_indices((height, width), h, grid, mode)
    shape = (h.shape[0], *grid.shape)
    row = torch.where(valid, row, -1).reshape(shape)
    col = torch.where(valid, col, -1).reshape(shape)
    return row, col, valid.reshape(shape)


def _check_size(image_size: tuple[int, int]) -> tuple[int, int]:
    if (
        len(image_size) != 2
        or not all(isinstance(s, int) and not isinstance(s, bool) for s in image_size)
        or min(image_size) < 1
    ):
        raise ValueError(f"`image_size` must be (H, W) with positive integers, got {image_size!r}")
    return int(image_size[0]), int(image_size[1])


def _forward_indices(image_size: tuple[int, int], h: Tensor, grid: BevGrid, mode: str) -> tuple[Tensor, Tensor, Tensor]:
    """Integer lookup ``(row, col, valid)``, each ``B x N``, for the nearest / devkit image -> BEV warps."""
    height, width = image_size
    if mode == "devkit":
        x, z = devkit_cell_centers(grid, h.device)
        uw, vw, w = _project(h.to(torch.float64), x.to(torch.float64), z.to(torch.float64))
        u, v = uw / w, vw / w
        valid = (v >= 1) & (u >= 1) & (v <= height) & (u <= width)
        row = torch.floor(torch.where(valid, v, 1)).long() - 1
        col = torch.floor(torch.where(valid, u, 1)).long() - 1
        return row, col, valid
    x, z = grid.cell_centers(h.dtype, h.device)
    uw, vw, w = _project(h, x, z)
    u, v = uw / w, vw / w
    valid = (u >= -0.5) & (u <= width - 0.5) & (v >= -0.5) & (v <= height - 0.5)
    col = torch.round(torch.where(valid, u, 0)).long().clamp(0, width - 1)
    row = torch.round(torch.where(valid, v, 0)).long().clamp(0, height - 1)
    return row, col, valid


def warp_image_to_bev(
    image: Tensor, image_from_road: Tensor, grid: BevGrid | None = None, mode: WarpMode = "bilinear"
) -> tuple[Tensor, Tensor]:
    """Warp camera images to the bird's-eye view of the road plane.

    Each BEV cell centre ``(X, Z)`` is projected with ``image_from_road`` and the image is sampled there.

    ``mode="devkit"`` reproduces the KITTI-ROAD devkit's ``BirdsEyeView.compute`` bit for bit: cell centres
    from ``numpy.arange`` cast to float32, projected in float64; a cell is valid iff ``1 <= u <= W`` and
    ``1 <= v <= H``; it takes pixel ``(floor(v) - 1, floor(u) - 1)`` (the devkit treats the 0-based ``P2``
    coordinates as 1-based, so it samples 1 to 2 pixels up-left of the nearest pixel); unseen cells are 0; the
    dtype is kept. Pass the float64 homography from the calibration file for exact agreement.

    Args:
        image: ``B x C x H x W`` (floating for ``"bilinear"``; any dtype for ``"nearest"`` / ``"devkit"``).
        image_from_road: ``B x 3 x 3`` (one per sample), ``1 x 3 x 3`` or ``3 x 3`` (shared) road -> image
            homographies.
        grid: the BEV grid (default: the KITTI-ROAD grid, 800 x 400 cells of 0.05 m).
        mode: ``"bilinear"`` (differentiable), ``"nearest"`` or ``"devkit"``.

    Returns:
        ``(bev, valid)``: ``bev`` is ``B x C x rows x cols`` in the input's dtype (0 where invalid); ``valid``
        is a bool ``B x rows x cols`` mask of the cells that see the image.

    Raises:
        ValueError / TypeError: bad shapes or dtypes, unknown mode, singular homography, or the horizon inside
        the grid.
    """
    grid = BevGrid() if grid is None else grid
    h = _check_inputs(image, "image", image_from_road, grid, mode)
    out_hw = grid.shape
    if mode in ("devkit", "nearest"):
        row, col, valid = _forward_indices(tuple(image.shape[-2:]), h, grid, mode)
        return _gather(image, row, col, valid, out_hw), valid.reshape(image.shape[0], *out_hw)
    dtype = _coord_dtype(image, h)
    h = h.to(dtype)
    x, z = grid.cell_centers(dtype, image.device)
    uw, vw, w = _project(h, x, z)
    side = grid_side(h, grid).unsqueeze(1)
    in_front = w * side > 0
    safe_w = torch.where(in_front, w, torch.ones_like(w))
    return _sample(image, uw / safe_w, vw / safe_w, in_front, out_hw, mode)


def warp_bev_to_image(
    bev: Tensor,
    image_from_road: Tensor,
    image_size: tuple[int, int],
    grid: BevGrid | None = None,
    mode: WarpMode = "bilinear",
) -> tuple[Tensor, Tensor]:
    """Warp bird's-eye views back into the camera image (the inverse of :func:`warp_image_to_bev`).

    Each image pixel centre is back-projected onto the road plane with ``inv(image_from_road)`` and the BEV is
    sampled at that road point; pixels above the horizon and pixels whose road point lies outside the grid
    are invalid (0).

    ``mode="devkit"`` reproduces the devkit's ``BirdsEyeView.compute_reverse`` bit for bit: it back-projects the
    1-based pixel ``(x_im, y_im)`` (i.e. 0-based ``(u, v) = (x_im, y_im)``, not ``x_im - 1``), rounds
    ``Xi = round((X - x_min) / res)``, ``Zi = round(rows - (Z - z_min) / res)`` (half to even), keeps
    ``1 <= Xi <= cols``, ``1 <= Zi <= rows`` and writes ``bev[Zi - 1, Xi - 1]`` into pixel
    ``(y_im - 1, x_im - 1)``. It is not the exact inverse of the devkit's forward lookup: the forward warp
    floors, this one rounds, and neither uses the 0-based pixel / cell-centre convention, so a forward and
    reverse devkit round trip moves content by about one pixel.

    Args:
        bev: ``B x C x rows x cols`` on ``grid`` (floating for ``"bilinear"``).
        image_from_road: ``B x 3 x 3``, ``1 x 3 x 3`` or ``3 x 3`` road -> image homographies.
        image_size: ``(H, W)`` of the output image, pixels.
        grid: the BEV grid of ``bev`` (default: the KITTI-ROAD grid).
        mode: ``"bilinear"`` (differentiable w.r.t. ``bev`` and ``image_from_road``), ``"nearest"`` or
            ``"devkit"``.

    Returns:
        ``(image, valid)``: ``image`` is ``B x C x H x W`` in ``bev``'s dtype; ``valid`` a bool ``B x H x W``
        mask of the pixels that see the grid.
    """
    grid = BevGrid() if grid is None else grid
    h = _check_inputs(bev, "bev", image_from_road, grid, mode)
    if tuple(bev.shape[-2:]) != grid.shape:
        raise ValueError(f"`bev` must be B x C x {grid.rows} x {grid.cols} to match `grid`, got {tuple(bev.shape)}")
    height, width = _check_size(image_size)
    b = bev.shape[0]
    dtype = torch.float64 if mode == "devkit" else _coord_dtype(bev, h)
    road_from_image = torch.linalg.inv(h.to(dtype))
    v_im, u_im = torch.meshgrid(
        torch.arange(height, dtype=dtype, device=bev.device),
        torch.arange(width, dtype=dtype, device=bev.device),
        indexing="ij",
    )
    if mode == "devkit":
        u_im, v_im = u_im + 1, v_im + 1  # the devkit's 1-based pixel coordinates
    xw, zw, w = _project(road_from_image, u_im, v_im)
    if mode == "devkit":
        x, z = xw / w, zw / w
        col_1 = torch.round((x - grid.x_min) / grid.resolution)
        row_1 = torch.round(grid.rows - (z - grid.z_min) / grid.resolution)
        valid = (col_1 >= 1) & (col_1 <= grid.cols) & (row_1 >= 1) & (row_1 <= grid.rows)
        col = torch.where(valid, col_1, 1).long() - 1
        row = torch.where(valid, row_1, 1).long() - 1
        return _gather(bev, row, col, valid, (height, width)), valid.reshape(b, height, width)
    # a pixel sees the road iff its back-projection lies on the grid's side of the camera
    side = grid_side(h, grid).unsqueeze(1)
    in_front = w * side > 0
    safe_w = torch.where(in_front, w, torch.ones_like(w))
    row, col = grid.cell_from_metric(xw / safe_w, zw / safe_w)
    return _sample(bev, col, row, in_front, (height, width), mode)
