"""Planar vehicle poses on the road: world <-> vehicle road-frame transforms and relative poses.

A pose is ``(x, z, heading)`` (``..., 3``): the position of the vehicle's reference point (the point on the road
below the camera) in a world road frame (X right, Z forward, metres) and its heading in radians from +Z towards
+X. The vehicle's own road frame has its origin at that point, +Z along the heading and +X to its right (the frame
of :mod:`drivemetrics.geometry.camera`). Everything here is batched over leading dimensions and differentiable.
"""

from __future__ import annotations

import torch
from torch import Tensor

from drivemetrics._internal.validation import check_tensor

__all__ = ["compose_pose", "relative_pose", "road_from_world", "world_from_road"]


def _check_pose(pose: Tensor, name: str) -> None:
    check_tensor(pose, name)
    if pose.ndim < 1 or pose.shape[-1] != 3:
        raise ValueError(f"`{name}` must have shape ... x 3 (x, z, heading), got {tuple(pose.shape)}")


def road_from_world(pose: Tensor) -> Tensor:
    """``(..., 3, 3)`` matrix taking homogeneous world road points ``(X, Z, 1)`` into the road frame of ``pose``.

    ``X' = cos(h) (X - x) - sin(h) (Z - z)``, ``Z' = sin(h) (X - x) + cos(h) (Z - z)``.

    Examples:
        >>> import torch
        >>> from drivemetrics.geometry import road_from_world
        >>> (road_from_world(torch.tensor([1.0, 2.0, 0.0])) + 0.0).tolist()  # a translation when yaw is 0
        [[1.0, 0.0, -1.0], [0.0, 1.0, -2.0], [0.0, 0.0, 1.0]]
    """
    _check_pose(pose, "pose")
    x, z, h = pose.unbind(-1)
    c, s = torch.cos(h), torch.sin(h)
    zero, one = torch.zeros_like(c), torch.ones_like(c)
    rows = [
        torch.stack([c, -s, -c * x + s * z], -1),
        torch.stack([s, c, -s * x - c * z], -1),
        torch.stack([zero, zero, one], -1),
    ]
    return torch.stack(rows, -2)


def world_from_road(pose: Tensor) -> Tensor:
    """``(..., 3, 3)`` inverse of :func:`road_from_world`: vehicle road frame -> world road frame.

    Examples:
        >>> import torch
        >>> from drivemetrics.geometry import road_from_world, world_from_road
        >>> pose = torch.tensor([1.0, 2.0, 0.5], dtype=torch.float64)
        >>> (world_from_road(pose) @ road_from_world(pose)).allclose(torch.eye(3, dtype=torch.float64))
        True
    """
    _check_pose(pose, "pose")
    x, z, h = pose.unbind(-1)
    c, s = torch.cos(h), torch.sin(h)
    zero, one = torch.zeros_like(c), torch.ones_like(c)
    rows = [
        torch.stack([c, s, x], -1),
        torch.stack([-s, c, z], -1),
        torch.stack([zero, zero, one], -1),
    ]
    return torch.stack(rows, -2)


def relative_pose(pose: Tensor, reference: Tensor) -> Tensor:
    """``pose`` expressed in the road frame of ``reference`` (both ``(..., 3)``, broadcast).

    Returns:
        ``(..., 3)``: ``(lateral, longitudinal, yaw)`` = the position of ``pose`` along the reference's X (right)
        and Z (forward) axes, metres, and ``pose``'s heading minus the reference heading, radians (not wrapped).

    Examples:
        >>> import torch
        >>> from drivemetrics.geometry import relative_pose
        >>> reference = torch.tensor([0.0, 0.0, 0.0])
        >>> relative_pose(torch.tensor([1.0, 2.0, 0.5]), reference).tolist()  # (X, Z, yaw)
        [1.0, 2.0, 0.5]
        >>> relative_pose(reference, reference).tolist()
        [0.0, 0.0, 0.0]
    """
    _check_pose(pose, "pose")
    _check_pose(reference, "reference")
    c, s = torch.cos(reference[..., 2]), torch.sin(reference[..., 2])
    dx, dz = pose[..., 0] - reference[..., 0], pose[..., 1] - reference[..., 1]
    return torch.stack([c * dx - s * dz, s * dx + c * dz, pose[..., 2] - reference[..., 2]], -1)


def compose_pose(reference: Tensor, offset: Tensor) -> Tensor:
    """World pose ``(..., 3)`` of ``offset`` given in the road frame of ``reference`` (both ``(..., 3)``, broadcast).

    ``offset`` is ``(lateral, longitudinal, yaw)``: metres along the reference's X (right) and Z (forward) axes and
    radians added to its heading (not wrapped). The inverse of :func:`relative_pose`:
    ``relative_pose(compose_pose(reference, offset), reference) == offset``.

    Examples:
        >>> import torch
        >>> from drivemetrics.geometry import compose_pose
        >>> compose_pose(torch.tensor([1.0, 2.0, 0.0]), torch.tensor([0.5, 3.0, 0.0])).tolist()
        [1.5, 5.0, 0.0]
    """
    _check_pose(reference, "reference")
    _check_pose(offset, "offset")
    c, s = torch.cos(reference[..., 2]), torch.sin(reference[..., 2])
    lateral, longitudinal, yaw = offset.unbind(-1)
    x = reference[..., 0] + (c * lateral + s * longitudinal)
    z = reference[..., 1] + (c * longitudinal - s * lateral)
    return torch.stack([x, z, reference[..., 2] + yaw], -1)
