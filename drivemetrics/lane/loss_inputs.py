"""Shared input handling of the driving-oriented lane losses (defines no Metric, no loss).

The losses take the two ego lines as image points ``(B, 2, N, 2)`` pixels ``(u, v)`` (line 0 ego-left, line 1
ego-right; points paired by index between prediction and ground truth, e.g. the rows of a row-wise detector) and
the camera homography ``image_from_road`` (``(3, 3)`` or ``(B, 3, 3)``). NaN (or negative ``u``) marks an absent
ground-truth point. The helpers here check those inputs and back-project them onto the road plane (X right,
Z forward, metres) without a host synchronisation, so the losses compile as one graph with ``validate_args=False``.
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import Tensor

from drivemetrics._internal.validation import check_finite, check_tensor
from drivemetrics.geometry.camera import image_to_road

__all__ = ["LossReduction", "check_lane_points", "check_speed", "reduce_frames", "road_points", "smooth_abs"]

#: How a lane loss reduces its per-frame values: their mean, their sum, or none (one value per frame).
LossReduction = Literal["mean", "sum", "none"]

#: Largest speed accepted, m/s (as PSLD): a larger one is a unit error.
MAX_SPEED = 350.0


def check_lane_points(
    preds: Tensor, target: Tensor, image_from_road: Tensor | None, validate_args: bool
) -> None:  # fmt: skip
    """Shapes and dtypes always (no host sync); with ``validate_args`` also finite predictions and homography."""
    for name, value in (("preds", preds), ("target", target)):
        check_tensor(value, name)
        if value.ndim != 4 or value.shape[1] != 2 or value.shape[-1] != 2:
            raise ValueError(
                f"`{name}` must have shape B x 2 x N x 2 (ego-left / ego-right points), got {tuple(value.shape)}"
            )
        if not value.is_floating_point():
            raise ValueError(f"`{name}` must be a floating tensor, got {value.dtype}")
    if preds.shape != target.shape:
        raise ValueError(
            f"`preds` and `target` must have the same shape, got {tuple(preds.shape)}, {tuple(target.shape)}"
        )
    if preds.shape[0] == 0 or preds.shape[2] == 0:
        raise ValueError(f"`preds` is empty, shape {tuple(preds.shape)}")
    if image_from_road is not None:
        check_tensor(image_from_road, "image_from_road")
        if image_from_road.shape not in ((3, 3), (preds.shape[0], 3, 3)):
            raise ValueError(
                f"`image_from_road` must have shape 3 x 3 or {preds.shape[0]} "
                f"x 3 x 3, got {tuple(image_from_road.shape)}"
            )
    if validate_args:
        check_finite(preds, "preds")
        if image_from_road is not None:
            check_finite(image_from_road, "image_from_road")


def check_speed(speed: Tensor | float, like: Tensor, validate_args: bool) -> Tensor:
    """``speed`` as a ``(B,)`` tensor; with ``validate_args`` it must be finite and in (0, 350] m/s."""
    v = torch.as_tensor(speed, dtype=like.dtype, device=like.device)
    if v.ndim > 1 or (v.ndim == 1 and v.shape[0] not in (1, like.shape[0])):
        raise ValueError(f"`speed` must be a float or have shape ({like.shape[0]},), got {tuple(v.shape)}")
    if validate_args:
        check_finite(v, "speed")
        if bool(((v <= 0) | (v > MAX_SPEED)).any()):
            raise ValueError(
                f"`speed` must lie in (0, {MAX_SPEED:g}] m/s for every frame, got {v.min():.4g} to {v.max():.4g}"
            )
    return v.expand(like.shape[0])


def road_points(points_uv: Tensor, image_from_road: Tensor, max_distance: float = 80.0) -> tuple[Tensor, Tensor]:
    """Image points ``(B, 2, N, 2)`` -> road points ``(B, 2, N, 2)`` ``(X, Z)`` metres and a mask ``(B, 2, N)``.

    Absent points (NaN or negative ``u``), points at or above the horizon and points farther than
    ``max_distance`` are masked; masked entries hold finite values (zeros in, so no NaN reaches a gradient).
    """
    present = torch.isfinite(points_uv).all(-1) & (torch.nan_to_num(points_uv[..., 0], nan=-1.0) >= 0)
    safe = torch.where(present[..., None], points_uv, torch.zeros_like(points_uv))
    hom = image_from_road.to(points_uv)
    hom = hom[:, None, None] if hom.ndim == 3 else hom
    xz, on_road = image_to_road(hom, safe[..., None, :])
    xz, on_road = xz[..., 0, :], on_road[..., 0]
    ok = present & on_road & (xz[..., 1] > 0) & (xz[..., 1] <= max_distance)
    return torch.where(ok[..., None], xz, torch.zeros_like(xz)), ok


def smooth_abs(x: Tensor, eps: float) -> Tensor:
    """``sqrt(x^2 + eps^2) - eps``: |x| with a smooth minimum (``eps = 0``: the plain |x|)."""
    return (x * x + eps * eps).sqrt() - eps if eps > 0 else x.abs()


def reduce_frames(values: Tensor, reduction: str) -> Tensor:
    """Mean, sum or none of per-frame values ``(B,)``."""
    if reduction == "mean":
        return values.mean()
    if reduction == "sum":
        return values.sum()
    return values


def check_reduction(reduction: str) -> None:
    """``ValueError`` unless ``reduction`` is ``"mean"``, ``"sum"`` or ``"none"``."""
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"`reduction` must be 'mean', 'sum' or 'none', got {reduction!r}")
