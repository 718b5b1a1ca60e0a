"""The KITTI-ROAD road-plane homography and checks for degenerate homographies.

Road frame (KITTI-ROAD): X right, Y down, Z forward, metres; the road is the plane Y = 0. The homography
``image_from_road`` maps road points ``(X, Z, 1)`` to homogeneous image pixels ``(u w, v w, w)``, where ``u`` is
the column and ``v`` the row in KITTI's 0-based pixel-center convention (the convention of ``P2``); ``w`` is the
depth of the point in front of the camera.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import torch
from torch import Tensor

from drivemetrics._internal.validation import check_finite, check_shape, check_tensor
from drivemetrics.geometry.bev import BevGrid
from drivemetrics.geometry.calib import ROAD_CALIB_KEYS

__all__ = [
    "check_road_homography",
    "grid_side",
    "horizon_depths",
    "image_from_bev_cell",
    "image_from_road",
    "image_from_road_calib",
    "image_from_road_calib_file",
    "road_from_bev_cell",
]


def _pad_to_4x4(m: Tensor) -> Tensor:
    """``(..., 3, 3)`` or ``(..., 3, 4)`` -> ``(..., 4, 4)`` with a last row ``[0 0 0 1]`` (zero-padded columns)."""
    out = torch.zeros(*m.shape[:-2], 4, 4, dtype=m.dtype, device=m.device)
    out[..., :3, : m.shape[-1]] = m
    out[..., 3, 3] = 1
    return out


def image_from_road(P2: Tensor, R0_rect: Tensor, Tr_cam_to_road: Tensor) -> Tensor:
    """Road-plane homography of the KITTI-ROAD devkit, ``P2 * R0_rect * inv(Tr_cam_to_road)``, columns X, Z, 1.

    Differentiable w.r.t. all three inputs; batched over leading dimensions (which broadcast).

    Args:
        P2: camera projection, ``(..., 3, 4)``.
        R0_rect: rectification rotation, ``(..., 3, 3)``.
        Tr_cam_to_road: rigid transform camera -> road frame, ``(..., 3, 4)`` (metres).

    Returns:
        ``(..., 3, 3)`` homography mapping road points ``(X, Z, 1)`` (metres, Y = 0) to image pixels
        ``(u w, v w, w)``.

    Examples:
        >>> import torch
        >>> from drivemetrics.geometry import image_from_road
        >>> P2 = torch.eye(3, 4, dtype=torch.float64)
        >>> Tr_cam_to_road = torch.eye(3, 4, dtype=torch.float64)
        >>> image_from_road(P2, torch.eye(3, dtype=torch.float64), Tr_cam_to_road).tolist()  # columns X, Z, 1
        [[1.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
    """
    for x, name, cols in ((P2, "P2", 4), (R0_rect, "R0_rect", 3), (Tr_cam_to_road, "Tr_cam_to_road", 4)):
        check_tensor(x, name)
        if x.ndim < 2 or tuple(x.shape[-2:]) != (3, cols):
            raise ValueError(f"`{name}` must have shape ... x 3 x {cols}, got {tuple(x.shape)}")
        if not x.is_floating_point():
            raise TypeError(f"`{name}` must be a floating tensor, got {x.dtype}")
        check_finite(x, name)
    cam_from_road = torch.linalg.inv(_pad_to_4x4(Tr_cam_to_road))
    image_from_road_3d = P2 @ _pad_to_4x4(R0_rect) @ cam_from_road  # ... x 3 x 4, columns X, Y, Z, 1
    return image_from_road_3d[..., [0, 2, 3]]


def image_from_road_calib(calib: Mapping[str, Tensor]) -> Tensor:
    """:func:`image_from_road` of a parsed KITTI-ROAD calibration (see ``read_kitti_calib``); ``(3, 3)``.

    Examples:
        >>> from drivemetrics.geometry import image_from_road_calib, parse_kitti_calib
        >>> identity = "1 0 0 0 0 1 0 0 0 0 1 0"
        >>> text = f"P2: {identity}\\nR0_rect: 1 0 0 0 1 0 0 0 1\\nTr_cam_to_road: {identity}\\n"
        >>> tuple(image_from_road_calib(parse_kitti_calib(text)).shape)
        (3, 3)
    """
    missing = [k for k in ROAD_CALIB_KEYS if k not in calib]
    if missing:
        raise KeyError(f"calibration lacks {', '.join(missing)} (needed for the road homography)")
    return image_from_road(calib["P2"], calib["R0_rect"], calib["Tr_cam_to_road"])


def image_from_road_calib_file(path: str | Path) -> Tensor:
    """:func:`image_from_road_calib` of a KITTI-ROAD calibration file; every failure (a missing key, NaN values, a
    singular ``Tr_cam_to_road`` or homography) is a ``ValueError`` naming the file.

    Examples:
        >>> import tempfile
        >>> from pathlib import Path
        >>> from drivemetrics.geometry.homography import image_from_road_calib_file
        >>> road = "1 0 0 0 0 1 0 1.65 0 0 1 0"  # camera 1.65 m above the road
        >>> path = Path(tempfile.mkdtemp()) / "um_000000.txt"
        >>> _ = path.write_text(f"P2: 1 0 0 0 0 1 0 0 0 0 1 0\\nR0_rect: 1 0 0 0 1 0 0 0 1\\nTr_cam_to_road: {road}\\n")
        >>> tuple(image_from_road_calib_file(path).shape)
        (3, 3)
    """
    from drivemetrics.geometry.calib import read_kitti_calib

    calib = read_kitti_calib(path)
    try:
        homography = image_from_road_calib(calib)
    except (ValueError, KeyError, RuntimeError) as err:  # torch.linalg.LinAlgError is a RuntimeError
        message = err.args[0] if isinstance(err, KeyError) and err.args else err
        raise ValueError(f"{path}: {message}") from None
    if not bool(torch.isfinite(homography).all()) or abs(float(torch.linalg.det(homography))) < 1e-12:
        raise ValueError(f"{path}: the road-plane homography P2 * R0_rect * inv(Tr_cam_to_road) is singular")
    return homography


def road_from_bev_cell(grid: BevGrid, dtype: torch.dtype = torch.float64, device: torch.device | None = None) -> Tensor:
    """Affine ``(3, 3)`` map from continuous BEV cell coordinates ``(col, row, 1)`` to road ``(X, Z, 1)`` (metres).

    Integer ``(col, row)`` are cell centers, as in :meth:`BevGrid.metric_from_cell`.

    Examples:
        >>> from drivemetrics.geometry import BevGrid, road_from_bev_cell
        >>> grid = BevGrid(x_min=-2.0, x_max=2.0, z_min=6.0, z_max=10.0, resolution=1.0)
        >>> road_from_bev_cell(grid).tolist()  # column 0 is X = -1.5 m, row 0 the far edge Z = 9.5 m
        [[1.0, 0.0, -1.5], [0.0, -1.0, 9.5], [0.0, 0.0, 1.0]]
    """
    r = grid.resolution
    return torch.tensor(
        [[r, 0.0, grid.x_min + 0.5 * r], [0.0, -r, grid.z_max - 0.5 * r], [0.0, 0.0, 1.0]], dtype=dtype, device=device
    )


def image_from_bev_cell(image_from_road: Tensor, grid: BevGrid) -> Tensor:
    """Homography from BEV cell coordinates ``(col, row, 1)`` to image pixels, ``(..., 3, 3)``.

    This is the source -> destination matrix ``kornia.geometry.transform.warp_perspective`` expects for a
    BEV -> image warp (its inverse does image -> BEV).

    Examples:
        >>> from drivemetrics.geometry import image_from_road_homography, intrinsic_matrix
        >>> H = image_from_road_homography(intrinsic_matrix(720.0, 720.0, 620.0, 190.0), camera_height=1.65)
        >>> from drivemetrics.geometry import BevGrid, image_from_bev_cell
        >>> tuple(image_from_bev_cell(H, BevGrid()).shape)
        (3, 3)
    """
    return image_from_road @ road_from_bev_cell(grid, image_from_road.dtype, image_from_road.device)


def check_road_homography(
    image_from_road: Tensor, grid: BevGrid, name: str = "image_from_road", check_values: bool = True
) -> Tensor:
    """Validate road -> image homographies for warps over ``grid``; return them as ``(B, 3, 3)``.

    A ``(3, 3)`` input becomes a batch of one. Checks: shape and floating dtype; with ``check_values`` also
    finite, not singular (relative smallest singular value above ``100 * eps`` of the dtype), and the horizon
    ``w = 0`` does not cross the grid (``w`` has one sign over the whole grid, i.e. every cell lies on one side
    of the camera). The value checks synchronise with the device; they run without gradients.

    Raises:
        ValueError: a bad shape or value, naming ``name`` and, for batches, the offending sample.
        TypeError: a tensor of the wrong type or dtype, naming ``name``.

    Examples:
        >>> from drivemetrics.geometry import image_from_road_homography, intrinsic_matrix
        >>> H = image_from_road_homography(intrinsic_matrix(720.0, 720.0, 620.0, 190.0), camera_height=1.65)
        >>> from drivemetrics.geometry import BevGrid, check_road_homography
        >>> tuple(check_road_homography(H, BevGrid()).shape)  # batched
        (1, 3, 3)
    """
    check_tensor(image_from_road, name)
    if image_from_road.ndim == 2:
        image_from_road = image_from_road.unsqueeze(0)
    check_shape(image_from_road, name, ("B", 3, 3))
    if not image_from_road.is_floating_point():
        raise TypeError(f"`{name}` must be a floating tensor, got {image_from_road.dtype}")
    if not check_values:
        return image_from_road
    check_finite(image_from_road, name)
    with torch.no_grad():
        h = image_from_road.detach().to(torch.float64)
        sv = torch.linalg.svdvals(h)
        ratio = sv[:, -1] / sv[:, 0].clamp_min(torch.finfo(torch.float64).tiny)
        limit = 100 * torch.finfo(image_from_road.dtype).eps
        bad = torch.nonzero(ratio <= limit).flatten()
        if bad.numel():
            i = int(bad[0])
            raise ValueError(
                f"`{name}`[{i}] is singular or nearly so (smallest / largest singular value {float(ratio[i]):.3g})"
            )
        w = horizon_depths(h, grid)
        crosses = (w.min(dim=1).values <= 0) & (w.max(dim=1).values >= 0)
        bad = torch.nonzero(crosses).flatten()
        if bad.numel():
            i = int(bad[0])
            raise ValueError(
                f"`{name}`[{i}]: the horizon (w = 0) lies inside the BEV grid x [{grid.x_min}, {grid.x_max}] m, "
                f"z [{grid.z_min}, {grid.z_max}] m (w at the grid corners: {w[i].tolist()}); part of the grid is "
                "behind the camera"
            )
    return image_from_road


def horizon_depths(image_from_road: Tensor, grid: BevGrid) -> Tensor:
    """Homogeneous ``w`` (depth) of the four outer corners of ``grid``, ``(B, 4)``.

    ``w`` is affine on the road plane, so its extremes over the grid are at these corners.

    Examples:
        >>> from drivemetrics.geometry import BevGrid, image_from_road_homography, intrinsic_matrix
        >>> H = image_from_road_homography(intrinsic_matrix(720.0, 720.0, 620.0, 190.0), camera_height=1.65)
        >>> from drivemetrics.geometry.homography import horizon_depths
        >>> depths = horizon_depths(H[None], BevGrid())  # (B, 3, 3)
        >>> tuple(depths.shape), bool((depths > 0).all())  # the whole grid lies in front of the camera
        ((1, 4), True)
    """
    x = torch.tensor([grid.x_min, grid.x_max, grid.x_min, grid.x_max], dtype=image_from_road.dtype)
    z = torch.tensor([grid.z_min, grid.z_min, grid.z_max, grid.z_max], dtype=image_from_road.dtype)
    x, z = x.to(image_from_road.device), z.to(image_from_road.device)
    h = image_from_road
    return h[:, 2, 0:1] * x + h[:, 2, 1:2] * z + h[:, 2, 2:3]


def grid_side(image_from_road: Tensor, grid: BevGrid) -> Tensor:
    """Sign (+1 / -1) of ``w`` over the grid for each homography, ``B``; valid after :func:`check_road_homography`.

    Examples:
        >>> from drivemetrics.geometry import BevGrid, image_from_road_homography, intrinsic_matrix
        >>> H = image_from_road_homography(intrinsic_matrix(720.0, 720.0, 620.0, 190.0), camera_height=1.65)
        >>> from drivemetrics.geometry.homography import grid_side
        >>> grid_side(H[None], BevGrid()).tolist()  # (B, 3, 3)
        [1.0]
    """
    with torch.no_grad():
        return torch.sign(horizon_depths(image_from_road.detach(), grid)[:, 0])
