"""Exact box overlaps as the KITTI object evaluation defines them: 2D, bird's-eye view (rotated) and 3D.

Every function works element-wise on broadcastable batches, so ``f(a[:, None], b[None])`` gives the ``(N, M)``
matrix and ``f(a[i], b[j])`` a list of pairs. The rotated footprints are intersected by Sutherland-Hodgman clipping
of one convex quadrilateral by the other's four edges, in the inputs' dtype (use float64: the official C++ works
in double precision); the area is exact up to rounding, also for identical, touching and nested boxes, which the
float32 CUDA kernel of the Python ports gets wrong. A degenerate (zero-area: a point or a segment) footprint
intersects nothing: its zero-length edges would clip nothing away, so the area is set to 0 (the official C++, with
boost, gives 0 too); every intersection is also capped at the smaller of the two areas (volumes in 3D), so it is
symmetric up to rounding and an IoU never exceeds 1.

Box layouts (the label file's fields):

- 2D ``(..., 4)``: ``x1, y1, x2, y2`` pixels.
- BEV ``(..., 5)``: ``x, z, l, w, ry`` (center in the camera's ground plane, length, width, yaw). The footprint's
  corners are ``(x, z) + R @ (+-l/2, +-w/2)`` with ``R = [[cos ry, sin ry], [-sin ry, cos ry]]``, as the C++
  ``toPolygon``.
- 3D ``(..., 7)``: ``x, y, z, h, w, l, ry``, ``y`` the bottom face (camera y points down): the box spans
  ``[y - h, y]`` vertically.

``criterion``: ``-1`` IoU (intersection over union), ``0`` intersection over the first box (the C++ uses it with
the detection first for DontCare regions), ``1`` intersection over the second box. A zero denominator gives 0.

Every function takes numpy arrays or torch tensors (any device) and returns the same kind: the code is written once
with :mod:`drivemetrics._internal.arrays`, so ``kitti-object-eval`` computes its overlaps on numpy without importing
torch, and the Metric classes and the functional API keep working on tensors (autograd included).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from drivemetrics._internal import arrays as xp
from drivemetrics._internal.validation import check_coordinates_within_limit

if TYPE_CHECKING:
    import numpy as np
    import torch

__all__ = [
    "bev_box_corners",
    "bev_intersection_area",
    "bev_overlap",
    "box2d_overlap",
    "box3d_overlap",
    "convex_polygon_intersection_area",
    "polygon_area",
]

#: A torch tensor or a numpy array: each function returns the kind it is given.
Tensor = TypeVar("Tensor", "torch.Tensor", "np.ndarray")


def _safe_divide(num: Tensor, den: Tensor) -> Tensor:
    """``num / den`` where ``den > 0``, else 0 (no NaN, and no NaN gradient through the masked branch)."""
    positive = den > 0
    return xp.where(positive, num / xp.where(positive, den, 1.0), 0.0)


def _ratio(inter: Tensor, size_a: Tensor, size_b: Tensor, criterion: int) -> Tensor:
    if criterion == -1:
        return _safe_divide(inter, size_a + size_b - inter)
    if criterion == 0:
        return _safe_divide(inter, size_a)
    if criterion == 1:
        return _safe_divide(inter, size_b)
    raise ValueError(f"`criterion` must be -1 (IoU), 0 (over the first box) or 1 (over the second), got {criterion!r}")


def _check_last(box: Tensor, size: int, name: str, values: bool = False) -> None:
    """Shape ``(..., size)``; with ``values`` (``validate_args``) also finite values within ``max_abs_coordinate``."""
    if box.shape[-1] != size:
        raise ValueError(f"`{name}` must be ... x {size}, got {tuple(box.shape)}")
    if values:
        check_coordinates_within_limit(box, name)


def box2d_overlap(boxes_a: Tensor, boxes_b: Tensor, *, criterion: int = -1, validate_args: bool = True) -> Tensor:
    """2D overlap of ``... x 4`` boxes (C++ ``imageBoxOverlap``: no +1 pixel, 0 unless the boxes intersect).

    ``validate_args`` refuses NaN, infinite or huge (beyond ``max_abs_coordinate``) box values (a read-back).

    Examples:
        >>> import torch
        >>> from drivemetrics.functional import box2d_overlap
        >>> box2d_overlap(torch.tensor([0.0, 0.0, 2.0, 2.0]), torch.tensor([1.0, 0.0, 3.0, 2.0]))  # x1, y1, x2, y2
        tensor(0.3333)
    """
    _check_last(boxes_a, 4, "boxes_a", validate_args)
    _check_last(boxes_b, 4, "boxes_b", validate_args)
    w = xp.minimum(boxes_a[..., 2], boxes_b[..., 2]) - xp.maximum(boxes_a[..., 0], boxes_b[..., 0])
    h = xp.minimum(boxes_a[..., 3], boxes_b[..., 3]) - xp.maximum(boxes_a[..., 1], boxes_b[..., 1])
    hit = (w > 0) & (h > 0)
    inter = xp.where(hit, w * h, 0.0)
    area_a = (boxes_a[..., 2] - boxes_a[..., 0]) * (boxes_a[..., 3] - boxes_a[..., 1])
    area_b = (boxes_b[..., 2] - boxes_b[..., 0]) * (boxes_b[..., 3] - boxes_b[..., 1])
    return xp.where(hit, _ratio(inter, area_a, area_b, criterion), 0.0)


def bev_box_corners(boxes: Tensor) -> Tensor:
    """Footprint corners ``(..., 4, 2)`` of BEV boxes ``(..., 5)`` (``x, z, l, w, ry``), counter-clockwise in the
    ``(x, z)`` axes (positive signed area); negative sizes are taken by absolute value."""
    _check_last(boxes, 5, "boxes")
    half_l = abs(boxes[..., 2])[..., None] / 2
    half_w = abs(boxes[..., 3])[..., None] / 2
    signs_l = xp.as_values([1.0, -1.0, -1.0, 1.0], like=boxes)
    signs_w = xp.as_values([1.0, 1.0, -1.0, -1.0], like=boxes)
    local_x, local_z = half_l * signs_l, half_w * signs_w
    cos, sin = xp.cos(boxes[..., 4])[..., None], xp.sin(boxes[..., 4])[..., None]
    x = cos * local_x + sin * local_z + boxes[..., 0:1]
    z = -sin * local_x + cos * local_z + boxes[..., 1:2]
    return xp.stack([x, z], axis=-1)


def polygon_area(points: Tensor, count: Tensor | None = None) -> Tensor:
    """Signed shoelace area of polygons ``(..., K, 2)`` (the first ``count`` vertices of each; default all K)."""
    if count is not None:
        keep = xp.arange(points.shape[-2], like=points) < count[..., None]
        points = xp.where(keep[..., None], points, points[..., :1, :])  # padding with vertex 0 adds no area
    nxt = xp.roll(points, -1, axis=-2)
    cross = points[..., 0] * nxt[..., 1] - points[..., 1] * nxt[..., 0]
    return cross.sum(-1) / 2


def _clip_by_half_plane(points: Tensor, count: Tensor, start: Tensor, end: Tensor) -> tuple[Tensor, Tensor]:
    """One Sutherland-Hodgman step: keep the part of each polygon left of (or on) the line ``start -> end``.

    ``points``: ``(P, K, 2)`` (first ``count`` valid), ``start`` / ``end``: ``(P, 2)``. Returns the clipped
    polygons ``P x K' x 2`` and their vertex counts.
    """
    n, size = points.shape[0], points.shape[1]
    rows = xp.arange(n, like=count)
    valid = xp.arange(size, like=count) < count[:, None]
    last = count - 1  # its successor is vertex 0 (with no vertex left, -1 names an unused slot)
    nxt = xp.roll(points, -1, axis=1)
    nxt[rows, last] = points[:, 0]
    edge = (end - start)[:, None, :]
    rel = points - start[:, None, :]
    dist = edge[..., 0] * rel[..., 1] - edge[..., 1] * rel[..., 0]  # > 0: left of the edge (inside)
    dist_nxt = xp.roll(dist, -1, axis=1)
    dist_nxt[rows, last] = dist[:, 0]
    inside, inside_nxt = dist >= 0, dist_nxt >= 0
    crossing = valid & (inside != inside_nxt)
    denom = xp.where(crossing, dist - dist_nxt, 1.0)
    cut = points + (nxt - points) * (dist / denom)[..., None]
    keep_nxt = valid & inside_nxt
    # for each edge i -> i+1: [the crossing point, the end vertex], in polygon order; the kept ones move to the
    # front of their row, in order (a row-major boolean selection keeps the order)
    candidates = xp.stack([cut, nxt], axis=2).reshape(n, 2 * size, 2)
    keep = xp.stack([crossing, keep_nxt], axis=2).reshape(n, 2 * size)
    new_count = keep.sum(1)
    width = max(int(new_count.max()), 1) if n else 1
    out = xp.full((n, width, 2), 0.0, like=points)
    out[xp.broadcast_to(rows[:, None], keep.shape)[keep], (keep.cumsum(1) - 1)[keep]] = candidates[keep]
    return out, new_count


def _broadcast_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """NumPy broadcasting of two shapes (``torch.broadcast_shapes`` imports torch.fx on first use, ~2 s)."""
    size = max(len(a), len(b))
    a, b = (1,) * (size - len(a)) + a, (1,) * (size - len(b)) + b
    out = []
    for i, j in zip(a, b, strict=True):
        if i != j and 1 not in (i, j):
            raise ValueError(f"shapes {a} and {b} do not broadcast")
        out.append(j if i == 1 else i)
    return tuple(out)


def convex_polygon_intersection_area(poly_a: Tensor, poly_b: Tensor) -> Tensor:
    """Area of the intersection of convex polygons ``(..., Ka, 2)`` and ``(..., Kb, 2)`` (both counter-clockwise).

    Clips ``poly_a`` by each edge of ``poly_b`` (Sutherland-Hodgman), in the inputs' dtype. Coordinates are taken
    relative to ``poly_b``'s first vertex to keep the rounding small far from the origin. The result is 0 if either
    polygon has a non-positive shoelace area, and at most the smaller area.
    """
    shape: tuple[int, ...] = _broadcast_shape(tuple(poly_a.shape[:-2]), tuple(poly_b.shape[:-2]))
    a = xp.broadcast_to(poly_a, (*shape, *poly_a.shape[-2:])).reshape(-1, poly_a.shape[-2], 2)
    b = xp.broadcast_to(poly_b, (*shape, *poly_b.shape[-2:])).reshape(-1, poly_b.shape[-2], 2)
    if a.shape[0] == 0:
        return xp.full(shape, 0.0, like=poly_a)
    origin = b[:, :1, :]
    points, b = a - origin, b - origin
    # a zero-length edge of poly_b keeps every point: a zero-area poly_b (e.g. a point) would clip nothing away
    smaller = xp.minimum(polygon_area(points), polygon_area(b))
    count = xp.full(points.shape[0], points.shape[1], like=points, dtype="int64")
    for k in range(b.shape[1]):
        points, count = _clip_by_half_plane(points, count, b[:, k], b[:, (k + 1) % b.shape[1]])
    area = _cap(polygon_area(points, count), smaller)
    return area.reshape(shape)


def _cap(inter: Tensor, smaller: Tensor) -> Tensor:
    """``inter`` clamped to ``[0, smaller]``, and 0 where ``smaller`` (the smaller area / volume) is not positive."""
    capped = xp.minimum(xp.clamp_min(inter, 0.0), smaller)
    return xp.where(smaller > 0, capped, 0.0)


def bev_intersection_area(boxes_a: Tensor, boxes_b: Tensor) -> Tensor:
    """Intersection area (m^2) of the rotated footprints of BEV boxes ``(..., 5)`` and ``(..., 5)``: 0 if either
    box has ``l * w == 0``, never more than the smaller ``|l * w|``."""
    inter = convex_polygon_intersection_area(bev_box_corners(boxes_a), bev_box_corners(boxes_b))
    area_a = abs(boxes_a[..., 2] * boxes_a[..., 3])
    area_b = abs(boxes_b[..., 2] * boxes_b[..., 3])
    return _cap(inter, xp.minimum(area_a, area_b))


def bev_overlap(boxes_a: Tensor, boxes_b: Tensor, *, criterion: int = -1, validate_args: bool = True) -> Tensor:
    """Bird's-eye-view overlap of rotated boxes ``... x 5`` (C++ ``groundBoxOverlap``).

    ``validate_args`` refuses NaN, infinite or huge (beyond ``max_abs_coordinate``) box values (a read-back).

    Examples:
        >>> import torch
        >>> from drivemetrics.functional import bev_overlap
        >>> box = torch.tensor([0.0, 10.0, 4.0, 2.0, 0.0])  # x, z, l, w, ry
        >>> bev_overlap(box, box + torch.tensor([1.0, 0.0, 0.0, 0.0, 0.0]))
        tensor(0.6000)
    """
    _check_last(boxes_a, 5, "boxes_a", validate_args)
    _check_last(boxes_b, 5, "boxes_b", validate_args)
    inter = bev_intersection_area(boxes_a, boxes_b)
    area_a = abs(boxes_a[..., 2] * boxes_a[..., 3])
    area_b = abs(boxes_b[..., 2] * boxes_b[..., 3])
    return _ratio(inter, area_a, area_b, criterion)


def box3d_from_bev_area(boxes_a: Tensor, boxes_b: Tensor, bev_inter: Tensor, criterion: int = -1) -> Tensor:
    """3D overlap of boxes ``(..., 7)`` given their BEV intersection area (C++ ``box3DOverlap``):
    ``inter = bev_inter * max(0, min(y_a, y_b) - max(y_a - h_a, y_b - h_b))``, volumes ``h * w * l``."""
    height = xp.minimum(boxes_a[..., 1], boxes_b[..., 1]) - xp.maximum(
        boxes_a[..., 1] - boxes_a[..., 3], boxes_b[..., 1] - boxes_b[..., 3]
    )
    vol_a = abs(boxes_a[..., 3] * boxes_a[..., 4] * boxes_a[..., 5])
    vol_b = abs(boxes_b[..., 3] * boxes_b[..., 4] * boxes_b[..., 5])
    inter = _cap(bev_inter * height, xp.minimum(vol_a, vol_b))
    return _ratio(inter, vol_a, vol_b, criterion)


def box3d_to_bev(boxes: Tensor) -> Tensor:
    """``(..., 7)`` (``x, y, z, h, w, l, ry``) -> ``(..., 5)`` (``x, z, l, w, ry``)."""
    return boxes[..., [0, 2, 5, 4, 6]]


def box3d_overlap(boxes_a: Tensor, boxes_b: Tensor, *, criterion: int = -1, validate_args: bool = True) -> Tensor:
    """3D overlap of boxes ``... x 7`` (``x, y, z, h, w, l, ry``): the BEV intersection area times the vertical
    overlap, over the union volume (criterion -1), as the official C++ ``box3DOverlap``.

    ``validate_args`` refuses NaN, infinite or huge (beyond ``max_abs_coordinate``) box values (a read-back).

    Examples:
        >>> import torch
        >>> from drivemetrics.functional import box3d_overlap
        >>> box = torch.tensor([0.0, 1.0, 10.0, 1.5, 2.0, 4.0, 0.0])  # x, y, z, h, w, l, ry
        >>> box3d_overlap(box, box)
        tensor(1.)
    """
    _check_last(boxes_a, 7, "boxes_a", validate_args)
    _check_last(boxes_b, 7, "boxes_b", validate_args)
    inter = bev_intersection_area(box3d_to_bev(boxes_a), box3d_to_bev(boxes_b))
    return box3d_from_bev_area(boxes_a, boxes_b, inter, criterion)
