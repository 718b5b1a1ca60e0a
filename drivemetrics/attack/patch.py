"""A dirt patch lying on the road: its placement in the camera image, compositing, and budget projection.

The patch is a texture of ``(rows, cols)`` cells of ``cell`` metres, fixed in the world: a rectangle of the road
plane given in the road frame of an *anchor* pose (the first recorded frame of a clip), ``start`` metres ahead,
centered ``lateral`` metres to the right (:class:`PatchSpec`). Texture row 0 is the far end, column 0 the left
edge; cell ``(row, col)`` has its center at ``X = lateral - width / 2 + (col + 0.5) cell``,
``Z = start + length - (row + 0.5) cell``.

For a camera at pose ``p`` (world ``(x, z, heading)``, :mod:`drivemetrics.geometry.pose`) the texture -> image
homography is ``image_from_road @ road_from_world(p) @ world_from_road(anchor) @ road_from_texture``; the texture
is warped into the image with ``kornia.geometry.transform.warp_perspective`` (bilinear, differentiable w.r.t. the
texture) and only pixels below the horizon (whose ray meets the road in front of the camera) are touched.

Dirt only darkens: the texture is a non-negative *darkening* ``delta`` subtracted from the road surface under the
patch (the recorded road's own colour is the base colour, so lane markings under the patch stay visible, darkened
by the same dirt). A zero perturbation leaves the frames bit-identical. :func:`project_perturbation` enforces
``0 <= delta <= linf`` and optionally a top-k cell mask and an L2 budget.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import kornia.geometry.transform as kgt
import torch
from torch import Tensor

from drivemetrics._internal.validation import check_finite, check_shape, check_tensor
from drivemetrics.geometry.camera import road_to_image
from drivemetrics.geometry.pose import road_from_world, world_from_road

__all__ = [
    "PatchSpec",
    "check_image_size",
    "composite_patch",
    "image_from_texture",
    "project_perturbation",
    "road_pixel_mask",
]


#: Most cells a patch texture may have (the default 24 x 3.6 m patch at 5 cm has 34,560).
MAX_TEXTURE_CELLS = 2**24


@dataclass(frozen=True)
class PatchSpec:
    """Geometry of the road patch, metres (defaults: 3.6 m wide x 24 m long, 7 m ahead, 0.05 m cells).

    Attributes:
        width: extent along X (lateral).
        length: extent along Z (forward).
        start: distance from the anchor pose to the near edge.
        lateral: X of the patch center line in the anchor's road frame (right positive).
        cell: texture cell size.

    Examples:
        >>> from drivemetrics.attack import PatchSpec
        >>> PatchSpec(width=3.6, length=12.0, cell=0.2).shape  # (rows, cols) of the texture
        (60, 18)
    """

    width: float = 3.6
    length: float = 24.0
    start: float = 7.0
    lateral: float = 0.0
    cell: float = 0.05

    def __post_init__(self) -> None:
        for key in ("width", "length", "cell"):
            if not (getattr(self, key) > 0 and math.isfinite(getattr(self, key))):
                raise ValueError(f"PatchSpec `{key}` must be finite and > 0 metres, got {getattr(self, key)}")
        cells = round(self.length / self.cell) * round(self.width / self.cell)
        if cells > MAX_TEXTURE_CELLS:
            raise ValueError(
                f"PatchSpec `cell` {self.cell} m gives a texture of {cells:.3g} cells for {self.length} x {self.width} "
                f"m, more than {MAX_TEXTURE_CELLS:,} (use cells of a few centimetres)"
            )
        if not (math.isfinite(self.start) and math.isfinite(self.lateral)):
            raise ValueError(f"PatchSpec `start` and `lateral` must be finite, got {self.start}, {self.lateral}")

    @property
    def shape(self) -> tuple[int, int]:
        """``(rows, cols)`` of the texture."""
        return max(1, round(self.length / self.cell)), max(1, round(self.width / self.cell))

    def road_from_texture(self, dtype: torch.dtype = torch.float64, device: torch.device | str | None = None) -> Tensor:
        """``(3, 3)`` affine map from texture pixel coordinates ``(col, row, 1)`` to anchor road ``(X, Z, 1)``."""
        rows, cols = self.shape
        sx, sz = self.width / cols, self.length / rows
        x0 = self.lateral - self.width / 2 + 0.5 * sx
        z0 = self.start + self.length - 0.5 * sz
        return torch.tensor([[sx, 0.0, x0], [0.0, -sz, z0], [0.0, 0.0, 1.0]], dtype=dtype, device=device)

    def corners(self, dtype: torch.dtype = torch.float64, device: torch.device | str | None = None) -> Tensor:
        """``(4, 2)`` road corners ``(X, Z)`` in the anchor frame: near-left, near-right, far-right, far-left."""
        x0, x1 = self.lateral - self.width / 2, self.lateral + self.width / 2
        z0, z1 = self.start, self.start + self.length
        return torch.tensor([[x0, z0], [x1, z0], [x1, z1], [x0, z1]], dtype=dtype, device=device)


def image_from_texture(
    image_from_road: Tensor, poses: Tensor, anchor: Tensor, spec: PatchSpec, shift: Tensor | None = None
) -> Tensor:
    """Texture -> image homographies ``(..., 3, 3)`` for cameras at world ``poses`` (module docstring).

    Args:
        image_from_road: ``(3, 3)`` or ``(..., 3, 3)`` camera homography (broadcast against the poses).
        poses: ``(..., 3)`` world poses ``(x, z, heading)`` of the camera.
        anchor: ``(..., 3)`` world pose whose road frame the patch is given in.
        spec: the patch geometry.
        shift: optional ``(..., 2)`` displacement ``(dX, dZ)`` of the patch in the anchor frame, metres (EOT).

    Examples:
        >>> import torch
        >>> from drivemetrics.geometry import image_from_road_homography, intrinsic_matrix
        >>> H = image_from_road_homography(intrinsic_matrix(100.0, 100.0, 63.5, 26.0), camera_height=1.5)
        >>> from drivemetrics.attack import PatchSpec, image_from_texture
        >>> pose = torch.zeros(3)  # camera at the anchor: (x, z, heading)
        >>> tuple(image_from_texture(H, pose, pose, PatchSpec(length=12.0, start=5.0, cell=0.2)).shape)
        (3, 3)
    """
    dtype = torch.float64
    hom = image_from_road.to(dtype)
    placement = world_from_road(anchor.to(dtype))
    if shift is not None:
        move = torch.zeros(*shift.shape[:-1], 3, 3, dtype=dtype, device=shift.device)
        move[..., 0, 0] = move[..., 1, 1] = move[..., 2, 2] = 1.0
        move[..., :2, 2] = shift.to(dtype)
        placement = placement @ move
    texture = spec.road_from_texture(dtype, hom.device)
    return hom @ road_from_world(poses.to(dtype)) @ placement @ texture


def road_pixel_mask(image_from_road: Tensor, image_size: tuple[int, int]) -> Tensor:
    """Boolean ``(..., H, W)``: pixels whose ray meets the road plane in front of the camera (below the horizon).

    Motion on the road plane does not move the horizon, so one mask serves every pose of a camera.

    Examples:
        >>> from drivemetrics.geometry import image_from_road_homography, intrinsic_matrix
        >>> H = image_from_road_homography(intrinsic_matrix(100.0, 100.0, 63.5, 26.0), camera_height=1.5)
        >>> from drivemetrics.attack import road_pixel_mask
        >>> mask = road_pixel_mask(H, (64, 128))
        >>> tuple(mask.shape), mask[0, 0].item(), mask[-1, 0].item()  # top row: sky; bottom row: road
        ((64, 128), False, True)
    """
    height, width = image_size
    inv = torch.linalg.inv(image_from_road.to(torch.float64))
    # Homogeneous w of road_from_image (u, v, 1): positive (in H's sign convention) for road pixels.
    v, u = torch.meshgrid(
        torch.arange(height, dtype=torch.float64, device=inv.device),
        torch.arange(width, dtype=torch.float64, device=inv.device),
        indexing="ij",
    )
    w = inv[..., 2, 0, None, None] * u + inv[..., 2, 1, None, None] * v + inv[..., 2, 2, None, None]
    scale = image_from_road.to(torch.float64)[..., 2, :].abs().amax(-1)[..., None, None]
    return w * scale > 1e-9


def check_image_size(image_from_road: Tensor, image_size: tuple[int, int]) -> None:
    """Raise ``ValueError`` if the road straight ahead (10 m and 30 m) does not project inside the image.

    Catches images of another size than the homography was made for (e.g. a 1280 x 720 calibration on
    256 x 128 frames).

    Examples:
        >>> from drivemetrics.geometry import image_from_road_homography, intrinsic_matrix
        >>> H = image_from_road_homography(intrinsic_matrix(100.0, 100.0, 63.5, 26.0), camera_height=1.5)
        >>> from drivemetrics.attack import check_image_size
        >>> check_image_size(H, (64, 128))  # fine: returns None
        >>> try:
        ...     check_image_size(H, (16, 32))
        ... except ValueError as error:
        ...     print(str(error)[:44])
        image size 16 x 32 does not match `image_fro
    """
    height, width = image_size
    ahead = torch.tensor([[0.0, 10.0], [0.0, 30.0]], dtype=torch.float64, device=image_from_road.device)
    uv = road_to_image(image_from_road.to(torch.float64), ahead)
    inside = torch.isfinite(uv).all(-1) & (uv[..., 0] >= -0.5) & (uv[..., 0] <= width - 0.5)
    inside &= (uv[..., 1] >= -0.5) & (uv[..., 1] <= height - 0.5)
    if not bool(inside.all()):
        raise ValueError(
            f"image size {height} x {width} does not match `image_from_road`: the road 10 m and 30 m straight ahead "
            f"project to {uv.reshape(-1, 2).tolist()[:2]} (u, v) pixels, outside the image"
        )


def composite_patch(
    images: Tensor,
    perturbation: Tensor,
    image_from_texture: Tensor,
    road_mask: Tensor | None = None,
    lower: float | None = 0.0,
    validate_args: bool = True,
) -> tuple[Tensor, Tensor]:
    """Darken the road under the patch: ``out = images - mask * warp(perturbation)``.

    Args:
        images: ``(N, C, H, W)`` float frames.
        perturbation: ``(N, C', rows, cols)`` or ``(1, C', rows, cols)`` non-negative darkening (``C'`` = 1 or C),
            in image units.
        image_from_texture: ``(N, 3, 3)`` texture -> image homographies (:func:`image_from_texture`).
        road_mask: optional boolean ``(H, W)`` or ``(N, H, W)`` pixels that may be touched
            (:func:`road_pixel_mask`); without it points behind the camera could be mirrored above the horizon.
        lower: darkened values are clamped from below to this (default 0, the darkest image value); None: no
            clamp. Frames already above it are returned bit-identical where the perturbation is 0.
        validate_args: refuse a non-finite ``image_from_texture`` (a host sync; ``False`` skips it).

    Returns:
        ``(patched, coverage)``: ``(N, C, H, W)`` frames and ``(N, 1, H, W)`` patch coverage in [0, 1]
        (differentiable w.r.t. ``perturbation``).

    Examples:
        >>> import torch
        >>> from drivemetrics.geometry import image_from_road_homography, intrinsic_matrix
        >>> H = image_from_road_homography(intrinsic_matrix(100.0, 100.0, 63.5, 26.0), camera_height=1.5)
        >>> from drivemetrics.attack import PatchSpec, composite_patch, image_from_texture
        >>> spec = PatchSpec(length=12.0, start=5.0, cell=0.2)
        >>> to_image = image_from_texture(H, torch.zeros(3), torch.zeros(3), spec)
        >>> out, mask = composite_patch(torch.ones(1, 3, 64, 128), torch.full((1, 1, *spec.shape), 0.2), to_image)
        >>> tuple(out.shape), round(out.min().item(), 2), round(out.max().item(), 2)  # darkened by 0.2 under the patch
        ((1, 3, 64, 128), 0.8, 1.0)
    """
    check_shape(images, "images", ("N", "C", "H", "W"))
    check_tensor(perturbation, "perturbation")
    if perturbation.ndim != 4 or perturbation.shape[0] not in (1, images.shape[0]):
        raise ValueError(
            f"`perturbation` must have shape ({images.shape[0]} or 1) x C x rows x cols, "
            f"got {tuple(perturbation.shape)}"
        )
    if perturbation.shape[1] not in (1, images.shape[1]):
        raise ValueError(f"`perturbation` must have 1 or {images.shape[1]} channels, got {perturbation.shape[1]}")
    if validate_args:
        check_finite(image_from_texture, "image_from_texture")
    n, _, height, width = images.shape
    warp = image_from_texture.to(images.dtype).expand(n, 3, 3)
    texture = perturbation.to(images.dtype).expand(n, -1, -1, -1)
    stacked = torch.cat([texture, torch.ones_like(texture[:, :1])], 1)
    warped = kgt.warp_perspective(stacked, warp, (height, width), align_corners=True)
    coverage = warped[:, -1:].clamp(0, 1)
    darkening = warped[:, :-1]  # bilinear sums of zeros are exact zeros: a zero texture changes nothing
    if road_mask is not None:
        keep = road_mask.to(images.device).reshape(-1, 1, height, width)
        coverage = coverage * keep
        darkening = darkening * keep
    out = images - darkening
    if lower is not None:
        out = torch.maximum(out, images.clamp(max=lower))  # never below `lower`, nor below an already darker pixel
    return out, coverage


def project_perturbation(
    perturbation: Tensor, linf: float, l2: float | None = None, top_k: int | None = None
) -> Tensor:
    """Project darkening perturbations ``(B, C, rows, cols)`` onto the budget, one patch per leading index.

    ``0 <= delta <= linf`` (darken only, L-infinity budget); then, if ``top_k``, only the ``top_k`` cells with the
    largest darkening (summed over channels) are kept; then, if ``l2``, the patch is scaled down to
    ``||delta||_2 <= l2``. Each step keeps the earlier constraints, so the result satisfies all of them.

    Examples:
        >>> import torch
        >>> from drivemetrics.attack import project_perturbation
        >>> delta = torch.tensor([[[[-0.1, 0.25, 0.5]]]])
        >>> [round(x, 2) for x in project_perturbation(delta, linf=0.3).flatten().tolist()]  # darken only, <= linf
        [0.0, 0.25, 0.3]
        >>> [round(x, 2) for x in project_perturbation(delta, linf=0.3, top_k=1).flatten().tolist()]
        [0.0, 0.0, 0.3]
    """
    check_tensor(perturbation, "perturbation")
    if perturbation.ndim != 4:
        raise ValueError(f"`perturbation` must have shape B x C x rows x cols, got {tuple(perturbation.shape)}")
    check_budget(linf, l2, top_k)
    check_finite(perturbation, "perturbation")
    delta = perturbation.clamp(0.0, float(linf))
    if top_k is not None:
        rows, cols = delta.shape[-2:]
        score = delta.sum(1).reshape(delta.shape[0], -1)
        k = min(int(top_k), rows * cols)
        order = score.argsort(dim=-1, descending=True, stable=True)
        keep = torch.zeros_like(score, dtype=torch.bool).scatter_(1, order[:, :k], True)
        delta = delta * keep.reshape(delta.shape[0], 1, rows, cols)
    if l2 is not None:
        norm = delta.flatten(1).norm(dim=1).reshape(-1, 1, 1, 1)
        delta = delta * torch.where(norm > l2, l2 / norm.clamp_min(1e-30), torch.ones_like(norm))
    return delta


def check_budget(linf: float, l2: float | None = None, top_k: int | None = None) -> None:
    """Raise ``ValueError`` for a negative or non-finite budget.

    Examples:
        >>> from drivemetrics.attack.patch import check_budget
        >>> check_budget(0.3, l2=1.0, top_k=10)  # fine: returns None
        >>> try:
        ...     check_budget(-0.1)
        ... except ValueError as error:
        ...     print("ValueError")
        ValueError
    """
    if not (isinstance(linf, (int, float)) and math.isfinite(linf) and linf >= 0):
        raise ValueError(f"`linf` budget must be a finite number >= 0 (image units), got {linf!r}")
    if l2 is not None and not (math.isfinite(l2) and l2 >= 0):
        raise ValueError(f"`l2` budget must be a finite number >= 0 or None, got {l2!r}")
    if top_k is not None and (int(top_k) != top_k or top_k < 0):
        raise ValueError(f"`top_k` must be a non-negative integer number of cells or None, got {top_k!r}")
