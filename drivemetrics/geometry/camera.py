"""Pinhole camera over the road plane: image <-> road homographies, horizon, and shifted-view synthesis.

Road frame (KITTI-ROAD convention): X right, Y down, Z forward, metres; the road is the plane Y = 0 and the camera
center sits at ``(0, -camera_height, 0)`` (straight above the origin). A road point is written ``(X, Z)``; its
homogeneous form is ``(X, Z, 1)``. Pixels are ``(u, v)`` = (column, row), origin at the top-left pixel center.

The central object is the ``image_from_road`` homography ``H`` (``(..., 3, 3)``): ``s (u, v, 1) = H (X, Z, 1)``
with ``s`` > 0 the depth of the point in front of the camera. It can be built from intrinsics and extrinsics
(:func:`image_from_road_homography`), taken from a KITTI calibration (any 3 x 3 matrix in this convention,
:func:`normalize_image_from_road`), or fitted to four point pairs (:func:`homography_from_correspondences`).
Everything is batched over leading dimensions, device-agnostic and differentiable.
"""

from __future__ import annotations

import torch
from torch import Tensor

from drivemetrics._internal import arrays
from drivemetrics._internal.validation import check_finite, check_shape, check_tensor
from drivemetrics.geometry.pose import road_from_world

__all__ = [
    "apply_homography",
    "homography_from_correspondences",
    "horizon_row",
    "image_from_road_homography",
    "image_to_road",
    "intrinsic_matrix",
    "normalize_image_from_road",
    "road_to_camera_rotation",
    "road_to_image",
    "shifted_view_homography",
    "synthesize_shifted_view",
    "view_road_mask",
]


def _as_tensor(value: Tensor | float, like: Tensor | None = None) -> Tensor:
    if arrays.is_tensor(value):
        return value if like is None else value.to(dtype=like.dtype, device=like.device)
    if like is None:
        return torch.tensor(float(value), dtype=torch.get_default_dtype())
    return torch.tensor(float(value), dtype=like.dtype, device=like.device)


def intrinsic_matrix(fx: Tensor | float, fy: Tensor | float, cx: Tensor | float, cy: Tensor | float) -> Tensor:
    """Pinhole intrinsics ``K = [[fx, 0, cx], [0, fy, cy], [0, 0, 1]]`` (pixels), shape ``(..., 3, 3)``.

    Tensor arguments broadcast against each other (e.g. one focal length per batch element).

    Examples:
        >>> from drivemetrics.geometry import intrinsic_matrix
        >>> intrinsic_matrix(720.0, 720.0, 620.0, 190.0).tolist()
        [[720.0, 0.0, 620.0], [0.0, 720.0, 190.0], [0.0, 0.0, 1.0]]
    """
    ref = next((a for a in (fx, fy, cx, cy) if arrays.is_tensor(a)), None)
    fx_t, fy_t, cx_t, cy_t = torch.broadcast_tensors(*(_as_tensor(a, ref) for a in (fx, fy, cx, cy)))
    zero, one = torch.zeros_like(fx_t), torch.ones_like(fx_t)
    rows = [
        torch.stack([fx_t, zero, cx_t], -1),
        torch.stack([zero, fy_t, cy_t], -1),
        torch.stack([zero, zero, one], -1),
    ]
    return torch.stack(rows, -2)


def road_to_camera_rotation(
    pitch: Tensor | float = 0.0, yaw: Tensor | float = 0.0, roll: Tensor | float = 0.0, like: Tensor | None = None
) -> Tensor:
    """Rotation ``R`` (``..., 3, 3``) taking road-frame directions to camera-frame directions (radians).

    Camera frame: x right, y down, z along the optical axis (OpenCV). With all angles zero the camera axes are the
    road axes. ``pitch`` > 0 tilts the optical axis down towards the road, ``yaw`` > 0 turns it right (towards +X),
    ``roll`` > 0 turns the camera clockwise about its optical axis as seen from behind (the image x axis tilts
    down). The camera is first yawed, then pitched about its own x axis, then rolled: ``R = Rz(roll) Rx(pitch)
    Ry(yaw)`` with the signs above.

    Examples:
        >>> import torch
        >>> from drivemetrics.geometry import road_to_camera_rotation
        >>> torch.equal(road_to_camera_rotation(), torch.eye(3))
        True
        >>> tuple(road_to_camera_rotation(pitch=torch.zeros(4)).shape)
        (4, 3, 3)
    """
    ref = like if like is not None else next((a for a in (pitch, yaw, roll) if arrays.is_tensor(a)), None)
    p, y, r = torch.broadcast_tensors(*(_as_tensor(a, ref) for a in (pitch, yaw, roll)))
    zero, one = torch.zeros_like(p), torch.ones_like(p)
    cp, sp, cy, sy, cr, sr = torch.cos(p), torch.sin(p), torch.cos(y), torch.sin(y), torch.cos(r), torch.sin(r)

    def mat(rows: list[list[Tensor]]) -> Tensor:
        return torch.stack([torch.stack(row, -1) for row in rows], -2)

    # Each matrix maps coordinates in the parent frame to coordinates in the rotated frame (rows = new axes).
    r_yaw = mat([[cy, zero, -sy], [zero, one, zero], [sy, zero, cy]])
    r_pitch = mat([[one, zero, zero], [zero, cp, -sp], [zero, sp, cp]])
    r_roll = mat([[cr, sr, zero], [-sr, cr, zero], [zero, zero, one]])
    return r_roll @ r_pitch @ r_yaw


def image_from_road_homography(
    intrinsics: Tensor,
    camera_height: Tensor | float,
    pitch: Tensor | float = 0.0,
    yaw: Tensor | float = 0.0,
    roll: Tensor | float = 0.0,
) -> Tensor:
    """The ``image_from_road`` homography of a pinhole camera ``camera_height`` metres above the road origin.

    ``H = K [r1, r3, h r2]`` where ``r_i`` are the columns of :func:`road_to_camera_rotation`; a road point
    ``(X, 0, Z)`` seen from the camera center ``(0, -h, 0)`` has camera coordinates ``X r1 + Z r3 + h r2``.

    Args:
        intrinsics: ``K``, shape ``(..., 3, 3)`` (pixels).
        camera_height: height of the camera center above the road, metres (> 0).
        pitch, yaw, roll: camera angles in radians, see :func:`road_to_camera_rotation`.

    Returns:
        ``H`` of shape ``(..., 3, 3)`` (batch shape broadcast over all arguments).

    Examples:
        >>> from drivemetrics.geometry import image_from_road_homography, intrinsic_matrix
        >>> H = image_from_road_homography(intrinsic_matrix(720.0, 720.0, 620.0, 190.0), camera_height=1.65)
        >>> tuple(H.shape)
        (3, 3)
        >>> [round(x, 1) for x in (H @ H.new_tensor([0.0, 20.0, 1.0])).tolist()]  # 20 m ahead, homogeneous
        [12400.0, 4988.0, 20.0]
    """
    _check_mat(intrinsics, "intrinsics")
    h = _as_tensor(camera_height, intrinsics)
    if bool((h <= 0).any()):
        raise ValueError(f"`camera_height` must be > 0 metres, got {h}")
    rot = road_to_camera_rotation(pitch, yaw, roll, like=intrinsics)
    cols = torch.stack([rot[..., :, 0], rot[..., :, 2], rot[..., :, 1] * h[..., None]], -1)
    return intrinsics @ cols


def _check_mat(matrix: Tensor, name: str) -> None:
    check_tensor(matrix, name)
    if matrix.ndim < 2 or matrix.shape[-2:] != (3, 3):
        raise ValueError(f"`{name}` must have shape ... x 3 x 3, got {tuple(matrix.shape)}")
    check_finite(matrix, name)


def normalize_image_from_road(matrix: Tensor, reference_point: tuple[float, float] = (0.0, 20.0)) -> Tensor:
    """Validate an ``image_from_road`` matrix (e.g. from a KITTI calibration) and fix its scale and sign.

    The homography is scaled so that its largest absolute entry is 1 and signed so that the homogeneous depth of
    ``reference_point`` (``(X, Z)`` metres, default 20 m straight ahead) is positive, which is what
    :func:`image_to_road` and :func:`horizon_row` rely on to tell road pixels from sky pixels.

    Args:
        matrix: ``(..., 3, 3)`` mapping road ``(X, Z, 1)`` to pixels ``(u, v, 1)``.
        reference_point: a road point known to be in front of the camera.

    Examples:
        >>> from drivemetrics.geometry import image_from_road_homography, intrinsic_matrix
        >>> H = image_from_road_homography(intrinsic_matrix(720.0, 720.0, 620.0, 190.0), camera_height=1.65)
        >>> from drivemetrics.geometry import normalize_image_from_road
        >>> normalize_image_from_road(-2.0 * H).allclose(normalize_image_from_road(H))  # scale and sign fixed
        True
    """
    _check_mat(matrix, "image_from_road")
    if bool((torch.linalg.det(matrix.double()).abs() <= 1e-12 * matrix.abs().amax((-2, -1)).double() ** 3).any()):
        raise ValueError("`image_from_road` is singular (the road plane must not contain the camera center)")
    scale = matrix.abs().amax(dim=(-2, -1), keepdim=True)
    depth = matrix[..., 2, 0] * reference_point[0] + matrix[..., 2, 1] * reference_point[1] + matrix[..., 2, 2]
    sign = torch.where(depth < 0, -1.0, 1.0).to(matrix.dtype)[..., None, None]
    return matrix * sign / scale


def homography_from_correspondences(image_points: Tensor, road_points: Tensor) -> Tensor:
    """The ``image_from_road`` homography from four point pairs (kornia's DLT), batched.

    Args:
        image_points: ``(B, 4, 2)`` pixels ``(u, v)``.
        road_points: ``(B, 4, 2)`` road points ``(X, Z)`` metres, in front of the camera, no three collinear.

    Returns:
        ``(B, 3, 3)`` normalised as in :func:`normalize_image_from_road` (depth of the first point positive).

    Examples:
        >>> import torch
        >>> from drivemetrics.geometry import homography_from_correspondences
        >>> road = torch.tensor([[[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]]])
        >>> homography_from_correspondences(2 * road, road).round(decimals=3).tolist()  # pixels = 2 x metres
        [[[2.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 1.0]]]
    """
    check_shape(image_points, "image_points", ("B", 4, 2))
    check_shape(road_points, "road_points", ("B", 4, 2))
    check_finite(image_points, "image_points")
    check_finite(road_points, "road_points")
    import kornia.geometry.transform as kgt  # kornia takes ~1 s to import

    hom = kgt.get_perspective_transform(road_points, image_points.to(road_points.dtype))
    first = road_points[:, 0]
    depth = hom[:, 2, 0] * first[:, 0] + hom[:, 2, 1] * first[:, 1] + hom[:, 2, 2]
    sign = torch.where(depth < 0, -1.0, 1.0).to(hom.dtype)[:, None, None]
    return hom * sign


def apply_homography(matrix: Tensor, points: Tensor) -> tuple[Tensor, Tensor]:
    """Apply ``matrix`` (``(..., 3, 3)``) to ``points`` (``(..., N, 2)``); returns ``(mapped, w)``.

    ``mapped`` is ``(..., N, 2)`` after the homogeneous divide, ``w`` (``(..., N)``) the homogeneous coordinate
    before it (its sign tells whether the point is in front of the camera when mapping road -> image).

    Examples:
        >>> import torch
        >>> from drivemetrics.geometry import apply_homography
        >>> mapped, w = apply_homography(2 * torch.eye(3), torch.tensor([[1.0, 2.0]]))
        >>> mapped.tolist(), w.tolist()
        ([[1.0, 2.0]], [2.0])
    """
    hom = torch.cat([points, torch.ones_like(points[..., :1])], -1)
    out = hom @ matrix.transpose(-1, -2)
    w = out[..., 2]
    return out[..., :2] / w[..., None], w


def road_to_image(image_from_road: Tensor, points_xz: Tensor) -> Tensor:
    """Project road points ``(..., N, 2)`` (``(X, Z)`` metres) to pixels ``(..., N, 2)`` (``(u, v)``).

    Points behind the camera (non-positive depth) become NaN.

    Examples:
        >>> import torch
        >>> from drivemetrics.geometry import image_from_road_homography, intrinsic_matrix
        >>> H = image_from_road_homography(intrinsic_matrix(720.0, 720.0, 620.0, 190.0), camera_height=1.65)
        >>> from drivemetrics.geometry import road_to_image
        >>> [round(c, 1) for c in road_to_image(H, torch.tensor([[0.0, 20.0]]))[0].tolist()]  # 20 m straight ahead
        [620.0, 249.4]
    """
    uv, w = apply_homography(image_from_road, points_xz)
    return torch.where((w > 0)[..., None], uv, torch.full_like(uv, float("nan")))


def image_to_road(image_from_road: Tensor, points_uv: Tensor) -> tuple[Tensor, Tensor]:
    """Back-project pixels ``(..., N, 2)`` onto the road plane.

    Returns:
        ``(points_xz, on_road)``: road points ``(..., N, 2)`` in metres and a boolean ``(..., N)`` that is False
        for pixels at or above the horizon (their ray never meets the road in front of the camera). Off-road
        entries hold finite but meaningless values (not NaN, so gradients stay finite under masking).

    Examples:
        >>> import torch
        >>> from drivemetrics.geometry import image_from_road_homography, intrinsic_matrix
        >>> H = image_from_road_homography(intrinsic_matrix(720.0, 720.0, 620.0, 190.0), camera_height=1.65)
        >>> from drivemetrics.geometry import image_to_road
        >>> points, on_road = image_to_road(H, torch.tensor([[620.0, 249.4], [620.0, 100.0]]))
        >>> points[0].round(decimals=1).tolist(), on_road.tolist()  # the second pixel is above the horizon
        ([0.0, 20.0], [True, False])
    """
    road_from_image = torch.linalg.inv(image_from_road)
    hom = torch.cat([points_uv, torch.ones_like(points_uv[..., :1])], -1) @ road_from_image.transpose(-1, -2)
    w = hom[..., 2]
    # w = 1 / depth up to a positive scale (H's sign convention: depth > 0 in front); sky pixels have w <= 0.
    scale = image_from_road[..., 2:, :].abs().amax(-1)  # (..., 1), makes the threshold invariant to H's scale
    on_road = w * scale > 1e-9
    safe_w = torch.where(on_road, w, torch.ones_like(w))
    return hom[..., :2] / safe_w[..., None], on_road


def horizon_row(image_from_road: Tensor, u: Tensor | float) -> Tensor:
    """Image row ``v`` of the horizon (the vanishing line of the road plane) at column(s) ``u``.

    Rows with larger ``v`` (below the horizon) see the road. ``u`` broadcasts against the batch shape.

    Examples:
        >>> from drivemetrics.geometry import image_from_road_homography, intrinsic_matrix
        >>> H = image_from_road_homography(intrinsic_matrix(720.0, 720.0, 620.0, 190.0), camera_height=1.65)
        >>> from drivemetrics.geometry import horizon_row
        >>> round(horizon_row(H, 620.0).item(), 1)  # a level camera: the horizon is the principal row
        190.0
    """
    inv = torch.linalg.inv(image_from_road)
    u_t = _as_tensor(u, image_from_road)
    return -(inv[..., 2, 0] * u_t + inv[..., 2, 2]) / inv[..., 2, 1]


def view_road_mask(image_from_road: Tensor, image_size: tuple[int, int], max_distance: float = 120.0) -> Tensor:
    """Boolean ``(B, 1, H, W)`` (``(3, 3)`` input: ``B = 1``): pixels whose ray meets the road closer than
    ``max_distance`` metres, the pixels :func:`synthesize_shifted_view` re-projects (the same for every pose).

    Examples:
        >>> from drivemetrics.geometry import image_from_road_homography, intrinsic_matrix
        >>> H = image_from_road_homography(intrinsic_matrix(720.0, 720.0, 620.0, 190.0), camera_height=1.65)
        >>> from drivemetrics.geometry import view_road_mask
        >>> mask = view_road_mask(H, (375, 1242))
        >>> tuple(mask.shape), mask[0, 0, 0, 0].item(), mask[0, 0, -1, 0].item()  # sky row, bottom row
        ((1, 1, 375, 1242), False, True)
    """
    height, width = image_size
    hom = image_from_road.to(torch.float64).reshape(-1, 3, 3)
    v, u = torch.meshgrid(
        torch.arange(height, dtype=hom.dtype, device=hom.device),
        torch.arange(width, dtype=hom.dtype, device=hom.device),
        indexing="ij",
    )
    pixels = torch.stack([u, v], -1).reshape(1, -1, 2).expand(hom.shape[0], -1, -1)
    xz, on_road = image_to_road(hom, pixels)  # the moved camera has the same intrinsics w.r.t. its road frame
    near = on_road & (xz.norm(dim=-1) < max_distance)
    return near.reshape(hom.shape[0], 1, height, width)


def shifted_view_homography(
    image_from_road: Tensor,
    lateral_offset: Tensor | float,
    yaw_offset: Tensor | float,
    longitudinal_offset: Tensor | float = 0.0,
) -> Tensor:
    """Pixel homography from a recorded image to the view of a camera moved on the road plane.

    The new camera is the recorded one displaced by ``(lateral_offset, longitudinal_offset)`` metres (X, Z in the
    recorded road frame) and turned by ``yaw_offset`` radians (from +Z towards +X). Exact for points on the road
    plane: ``M = H G H^-1`` with ``G`` the rigid motion of road coordinates into the new vehicle frame.

    Returns:
        ``(..., 3, 3)`` source (recorded) -> destination (new view) pixel homography, as taken by
        ``kornia.geometry.transform.warp_perspective``.

    Examples:
        >>> import torch
        >>> from drivemetrics.geometry import image_from_road_homography, intrinsic_matrix
        >>> H = image_from_road_homography(intrinsic_matrix(720.0, 720.0, 620.0, 190.0), camera_height=1.65)
        >>> from drivemetrics.geometry import shifted_view_homography
        >>> shifted_view_homography(H, 0.0, 0.0).allclose(torch.eye(3))  # no motion: identity
        True
        >>> tuple(shifted_view_homography(H, torch.tensor([0.5, -0.5]), 0.0).shape)
        (2, 3, 3)
    """
    _check_mat(image_from_road, "image_from_road")
    dx = _as_tensor(lateral_offset, image_from_road)
    dz = _as_tensor(longitudinal_offset, image_from_road)
    psi = _as_tensor(yaw_offset, image_from_road)
    dx, dz, psi = torch.broadcast_tensors(dx, dz, psi)
    g = road_from_world(torch.stack([dx, dz, psi], -1))  # recorded road frame -> new vehicle road frame
    return image_from_road @ g @ torch.linalg.inv(image_from_road)


def synthesize_shifted_view(
    images: Tensor,
    image_from_road: Tensor,
    lateral_offset: Tensor | float,
    yaw_offset: Tensor | float,
    max_distance: float = 120.0,
    longitudinal_offset: Tensor | float = 0.0,
    road_mask: Tensor | None = None,
) -> Tensor:
    """Synthesise what the camera would see after a lateral shift and a yaw change, by warping through the road.

    Road pixels are re-projected exactly through the road plane (``kornia`` ``warp_perspective``, bilinear,
    ``align_corners=True``). Pixels whose ray does not meet the road within ``max_distance`` metres (sky, the
    horizon band, anything above the road) and pixels whose source falls outside the recorded image are **kept**
    from the recorded image: objects above the road are not re-projected (a documented approximation).

    Args:
        images: ``(B, C, H, W)`` recorded frames (float).
        image_from_road: ``(B, 3, 3)`` or ``(3, 3)``.
        lateral_offset: ``(B,)`` or float, metres (X, right positive).
        yaw_offset: ``(B,)`` or float, radians (towards +X positive).
        max_distance: road points farther than this (metres) count as sky.
        longitudinal_offset: ``(B,)`` or float, metres (Z, forward positive).
        road_mask: optional precomputed :func:`view_road_mask` of ``image_from_road`` and ``max_distance``
            (``(B, 1, H, W)`` or ``(1, 1, H, W)``): it does not depend on the pose, so loops over poses pass it once.

    Returns:
        ``(B, C, H, W)`` synthesised frames.

    Examples:
        >>> import torch
        >>> from drivemetrics.geometry import image_from_road_homography, intrinsic_matrix
        >>> H = image_from_road_homography(intrinsic_matrix(720.0, 720.0, 620.0, 190.0), camera_height=1.65)
        >>> from drivemetrics.geometry import synthesize_shifted_view
        >>> images = torch.rand(2, 3, 375, 1242)
        >>> tuple(synthesize_shifted_view(images, H, lateral_offset=torch.tensor([0.5, -0.5]), yaw_offset=0.0).shape)
        (2, 3, 375, 1242)
    """
    check_shape(images, "images", ("B", "C", "H", "W"))
    if not images.is_floating_point():
        raise ValueError(f"`images` must be a floating tensor, got {images.dtype}")
    batch, _, height, width = images.shape
    # The warp is composed in float64 (H G H^-1 loses ~1e-5 px in float32), then cast to the image dtype.
    hom = image_from_road.to(device=images.device, dtype=torch.float64).expand(batch, 3, 3)
    dx = _as_tensor(lateral_offset, hom).expand(batch)
    psi = _as_tensor(yaw_offset, hom).expand(batch)
    dz = _as_tensor(longitudinal_offset, hom).expand(batch)
    warp = shifted_view_homography(hom, dx, psi, dz).to(images.dtype)
    ones = torch.ones_like(images[:, :1])
    stacked = torch.cat([images, ones], 1)
    import kornia.geometry.transform as kgt

    warped = kgt.warp_perspective(stacked, warp, (height, width), align_corners=True)
    inside = warped[:, -1:] > 0.999
    if road_mask is None:
        road_mask = view_road_mask(hom, (height, width), max_distance)
    road = road_mask.to(images.device) & inside
    return torch.where(road, warped[:, :-1], images)
