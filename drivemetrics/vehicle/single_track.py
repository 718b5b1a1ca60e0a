"""Exact constant-steering step of the single-track (bicycle) model, batched and differentiable."""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["single_track_step"]


def single_track_step(
    x: Tensor,
    z: Tensor,
    heading: Tensor,
    speed: Tensor | float,
    wheel_angle: Tensor | float,
    dt: float,
    wheelbase: float,
) -> tuple[Tensor, Tensor, Tensor]:
    """Advance poses by one step of duration ``dt`` at constant speed and front-wheel angle.

    Plane frame: ``x`` lateral (right), ``z`` forward, metres; ``heading`` in radians from the +z axis towards +x
    (0 drives along +z, positive turns right). The model of Fritsch et al. (2013): yaw rate
    ``w = (v / L) sin(rho)``, radius ``R = L / tan(rho)``, ``theta = w dt``; in the vehicle frame the displacement is
    ``(R (1 - cos theta), R sin theta)`` (lateral, forward), rotated by the heading; ``heading += theta``.
    It is evaluated through the arc length ``s = R theta = v cos(rho) dt`` with ``sin(theta)/theta`` and
    ``(1 - cos theta)/theta`` written as sinc terms, so ``rho = 0`` is the exact straight limit (no division by
    zero) and gradients are finite everywhere.

    Args:
        x, z, heading: pose tensors of any broadcastable shape (metres, metres, radians).
        speed: speed ``v`` in m/s (tensor or float).
        wheel_angle: front-wheel angle ``rho`` in radians, ``|rho| < pi / 2``.
        dt: step duration in seconds.
        wheelbase: ``L`` in metres.

    Returns:
        The new ``(x, z, heading)``.
    """
    if not wheelbase > 0:
        raise ValueError(f"`wheelbase` must be > 0 metres, got {wheelbase}")
    rho = torch.as_tensor(wheel_angle, dtype=heading.dtype, device=heading.device)
    v = torch.as_tensor(speed, dtype=heading.dtype, device=heading.device)
    theta = v / wheelbase * torch.sin(rho) * dt
    s = v * torch.cos(rho) * dt
    forward = s * torch.sinc(theta / torch.pi)
    lateral = s * 0.5 * theta * torch.sinc(theta / (2 * torch.pi)) ** 2
    cos_h, sin_h = torch.cos(heading), torch.sin(heading)
    new_x = x + lateral * cos_h + forward * sin_h
    new_z = z - lateral * sin_h + forward * cos_h
    return new_x, new_z, heading + theta
