"""Lane lines from the image to the road plane, resampled at fixed longitudinal distances; the lane center.

Road frame: X right, Z forward, metres (origin on the road below the camera). A lane line is a set of points;
a *profile* is the lateral position ``X`` of a line (or of the lane center) sampled at fixed longitudinal
distances ``z_samples`` (``(M,)``, metres, increasing).

Extrapolation (documented behaviour, :func:`resample_lane`): outside the Z range of its valid points a line is
continued along its first / last segment (``"linear"``, default) or held at its end value (``"constant"``, what
ld-metric does). A line with fewer than 2 valid points is *missing*; :func:`lane_center` then offsets the other
line by half a lane width, and raises if both ego lines are missing.
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import Tensor

from drivemetrics._internal.validation import check_finite, check_shape, check_tensor
from drivemetrics.geometry.camera import image_to_road

__all__ = [
    "DEFAULT_LANE_WIDTH",
    "DEFAULT_Z_SAMPLES",
    "center_from_image_lanes",
    "center_from_polynomials",
    "default_z_samples",
    "image_lanes_to_road",
    "lane_center",
    "lane_slot_mask",
    "resample_lane",
    "soft_argmax_rows",
]

DEFAULT_LANE_WIDTH = 3.6
"""Metres; ld-metric places each ego line 1.8 m from the path."""

Extrapolation = Literal["linear", "constant"]


def _check_points(points: Tensor, name: str) -> None:
    check_tensor(points, name)
    if points.ndim < 2 or points.shape[-1] != 2:
        raise ValueError(f"`{name}` must have shape ... x N x 2, got {tuple(points.shape)}")
    if not points.is_floating_point():
        raise ValueError(f"`{name}` must be a floating tensor, got {points.dtype}")


def image_lanes_to_road(
    points_uv: Tensor, image_from_road: Tensor, valid: Tensor | None = None, max_distance: float = 80.0
) -> tuple[Tensor, Tensor]:
    """Back-project lane points from pixels to the road plane.

    Args:
        points_uv: ``(..., N, 2)`` pixels ``(u, v)``. Without ``valid``, non-finite points (NaN, or TuSimple's
            negative ``u``) are treated as absent.
        image_from_road: ``(..., 3, 3)`` homography (broadcast over the lane dimensions).
        valid: optional boolean ``(..., N)``; then valid points must be finite.
        max_distance: points whose road position is farther than this (metres) or at/above the horizon are
            marked invalid (near the horizon one pixel spans many metres).

    Returns:
        ``(points_xz, valid)``: ``(..., N, 2)`` metres and the updated boolean mask ``(..., N)``.
    """
    _check_points(points_uv, "points_uv")
    if valid is None:
        valid = torch.isfinite(points_uv).all(-1) & (points_uv[..., 0] >= 0)
    else:
        if valid.shape != points_uv.shape[:-1]:
            raise ValueError(f"`valid` must have shape {tuple(points_uv.shape[:-1])}, got {tuple(valid.shape)}")
        check_finite(points_uv[valid], "points_uv (valid points)")
    safe_uv = torch.where(valid[..., None], points_uv, torch.zeros_like(points_uv))
    hom = image_from_road
    while hom.ndim - 2 < safe_uv.ndim - 2:
        hom = hom.unsqueeze(-3)
    xz, on_road = image_to_road(hom, safe_uv)
    ok = valid & on_road & (xz[..., 1] > 0) & (xz[..., 1] <= max_distance)
    return xz, ok


def resample_lane(
    points_xz: Tensor,
    z_samples: Tensor,
    valid: Tensor | None = None,
    extrapolation: Extrapolation = "linear",
) -> tuple[Tensor, Tensor]:
    """Lateral positions ``X`` of lane lines at fixed longitudinal distances, by piecewise-linear interpolation.

    Points need not be ordered (they are sorted by Z); duplicate Z values are allowed. Differentiable with respect
    to the point coordinates. Vectorised: no Python loop over lanes, points or samples.

    Args:
        points_xz: ``(..., N, 2)`` road points ``(X, Z)`` metres.
        z_samples: ``(M,)`` longitudinal distances, metres.
        valid: optional boolean ``(..., N)``; default: finite points.
        extrapolation: ``"linear"`` (continue the end segments) or ``"constant"`` (hold the end values).

    Returns:
        ``(profile, present)``: ``(..., M)`` lateral positions and a boolean ``(...)`` that is False for lines
        with fewer than 2 valid points (their profile is 0).
    """
    _check_points(points_xz, "points_xz")
    if extrapolation not in ("linear", "constant"):
        raise ValueError(f"`extrapolation` must be 'linear' or 'constant', got {extrapolation!r}")
    if valid is None:
        valid = torch.isfinite(points_xz).all(-1)
    elif valid.shape != points_xz.shape[:-1]:
        raise ValueError(f"`valid` must have shape {tuple(points_xz.shape[:-1])}, got {tuple(valid.shape)}")
    z_q = z_samples.to(points_xz)
    safe = torch.where(valid[..., None], points_xz, torch.zeros_like(points_xz))
    key = torch.where(valid, safe[..., 1], torch.full_like(safe[..., 1], float("inf")))
    key_sorted, order = key.sort(dim=-1)
    x_sorted = safe[..., 0].gather(-1, order)
    z_sorted = safe[..., 1].gather(-1, order)
    n_valid = valid.sum(-1)
    present = n_valid >= 2
    last = (n_valid - 1).clamp(min=1)
    lead = key_sorted.shape[:-1]
    queries = z_q.expand(*lead, z_q.shape[-1]).contiguous()
    if extrapolation == "constant":
        first_z = z_sorted[..., :1]
        last_z = z_sorted.gather(-1, last[..., None])
        queries = torch.minimum(torch.maximum(queries, first_z), last_z)
    hi = torch.searchsorted(key_sorted.contiguous(), queries.detach())
    hi = torch.minimum(hi.clamp(min=1), last[..., None])
    lo = hi - 1
    z_lo, z_hi = z_sorted.gather(-1, lo), z_sorted.gather(-1, hi)
    x_lo, x_hi = x_sorted.gather(-1, lo), x_sorted.gather(-1, hi)
    dz = z_hi - z_lo
    flat = dz.abs() <= 1e-9
    t = (queries - z_lo) / torch.where(flat, torch.ones_like(dz), dz)
    t = torch.where(flat, torch.full_like(t, 0.5), t)
    profile = x_lo + t * (x_hi - x_lo)
    profile = torch.where(present[..., None], profile, torch.zeros_like(profile))
    return profile, present


def lane_center(
    left: Tensor,
    right: Tensor,
    left_present: Tensor | None = None,
    right_present: Tensor | None = None,
    lane_width: float = DEFAULT_LANE_WIDTH,
) -> Tensor:
    """Lane-center profile from the ego-left and ego-right line profiles (``(..., M)``, metres).

    Both present: the midpoint. One missing: the other line shifted by ``lane_width / 2`` towards the lane
    (left line + w/2, right line - w/2). Both missing: ``ValueError`` naming the frames.
    """
    check_tensor(left, "left")
    check_tensor(right, "right")
    if left.shape != right.shape:
        raise ValueError(f"`left` and `right` must have the same shape, got {tuple(left.shape)}, {tuple(right.shape)}")
    lead = left.shape[:-1]
    lp = torch.ones(lead, dtype=torch.bool, device=left.device) if left_present is None else left_present
    rp = torch.ones(lead, dtype=torch.bool, device=left.device) if right_present is None else right_present
    neither = ~(lp | rp)
    if bool(neither.any()):
        bad = torch.nonzero(neither).tolist()[:10]
        raise ValueError(
            f"both ego lane lines are missing (fewer than 2 valid points each) at batch index(es) {bad}; "
            "a lane center cannot be formed"
        )
    half = lane_width / 2
    both = (left + right) / 2
    only_left = left + half
    only_right = right - half
    out = torch.where(lp[..., None], torch.where(rp[..., None], both, only_left), only_right)
    check_finite(out, "lane center")
    return out


def center_from_image_lanes(
    lanes_uv: Tensor,
    image_from_road: Tensor,
    z_samples: Tensor,
    valid: Tensor | None = None,
    lane_width: float = DEFAULT_LANE_WIDTH,
    extrapolation: Extrapolation = "linear",
    max_distance: float = 80.0,
) -> Tensor:
    """Lane-center profile ``(B, M)`` from ego-left / ego-right lines in the image.

    Args:
        lanes_uv: ``(B, 2, N, 2)`` pixels, lane 0 = ego-left, lane 1 = ego-right; NaN / negative u = absent.
        image_from_road: ``(B, 3, 3)`` or ``(3, 3)``.
        z_samples: ``(M,)`` metres.
        valid: optional ``(B, 2, N)`` boolean.
    """
    _check_points(lanes_uv, "lanes_uv")
    if lanes_uv.ndim != 4 or lanes_uv.shape[1] != 2:
        raise ValueError(f"`lanes_uv` must have shape B x 2 x N x 2 (ego-left, ego-right), got {tuple(lanes_uv.shape)}")
    hom = image_from_road.to(lanes_uv)
    if hom.ndim == 3:
        hom = hom[:, None]
    xz, ok = image_lanes_to_road(lanes_uv, hom, valid, max_distance)
    profiles, present = resample_lane(xz, z_samples, ok, extrapolation)
    return lane_center(profiles[:, 0], profiles[:, 1], present[:, 0], present[:, 1], lane_width)


def soft_argmax_rows(scores: Tensor, temperature: float = 1.0, from_logits: bool = True) -> Tensor:
    """Expected column of each row of a row-wise lane map (differentiable soft-argmax).

    Args:
        scores: ``(..., R, W)`` per-row scores over ``W`` columns (logits, or probabilities with
            ``from_logits=False``).
        temperature: softmax temperature for logits.

    Returns:
        ``(..., R)`` column coordinate ``u`` in pixels (0 = first column center).
    """
    check_tensor(scores, "scores")
    check_finite(scores, "scores")
    cols = torch.arange(scores.shape[-1], dtype=scores.dtype, device=scores.device)
    if from_logits:
        weights = torch.softmax(scores / temperature, dim=-1)
    else:
        if bool((scores < 0).any()):
            raise ValueError("`scores` must be non-negative probabilities when from_logits=False")
        weights = scores / scores.sum(-1, keepdim=True).clamp_min(torch.finfo(scores.dtype).tiny)
    return (weights * cols).sum(-1)


def center_from_polynomials(coefficients: Tensor, z_samples: Tensor) -> Tensor:
    """Lane-center profile ``(B, M)`` from road-frame polynomials ``X = sum_k c_k Z^k`` of the two ego lines.

    Args:
        coefficients: ``(B, 2, K)`` (lane 0 ego-left, lane 1 ego-right; ``c_0`` first), metres.
        z_samples: ``(M,)`` metres.
    """
    check_tensor(coefficients, "coefficients")
    if coefficients.ndim != 3 or coefficients.shape[1] != 2:
        raise ValueError(f"`coefficients` must have shape B x 2 x K, got {tuple(coefficients.shape)}")
    check_finite(coefficients, "coefficients")
    powers = z_samples.to(coefficients)[:, None] ** torch.arange(coefficients.shape[-1], device=coefficients.device)
    lines = coefficients @ powers.T  # (B, 2, M)
    return lines.mean(1)


DEFAULT_Z_SAMPLES = (0.0, 100.0, 1.0)
"""Default longitudinal sampling (start, stop, step) in metres: 0, 1, ..., 100 m."""


def default_z_samples(dtype: torch.dtype | None = None, device: torch.device | str | None = None) -> Tensor:
    """The default ``z_samples``: 0 to 100 m every metre, ``(101,)``."""
    start, stop, step = DEFAULT_Z_SAMPLES
    return torch.arange(start, stop + step / 2, step, dtype=dtype or torch.get_default_dtype(), device=device)


def lane_slot_mask(lanes: Tensor, lane_mask: Tensor | None = None, name: str = "lanes") -> Tensor:
    """Which lane slots of ``lanes`` ``(B, L, N)`` are real lanes, ``(B, L)`` bool.

    ``lane_mask`` (``(B, L)``) when given, else the slots with at least one finite value (an all-NaN slot is
    padding). ``name`` names the argument in the error message of a wrongly shaped mask.

    Examples:
        >>> import torch
        >>> from drivemetrics.lane.geometry import lane_slot_mask
        >>> lanes = torch.tensor([[[1.0, 2.0], [float("nan"), float("nan")]]])
        >>> lane_slot_mask(lanes).tolist()
        [[True, False]]
    """
    if lane_mask is None:
        return torch.isfinite(lanes).any(dim=-1)
    check_shape(lane_mask, f"{name}_mask", lanes.shape[:2])
    return lane_mask.to(device=lanes.device, dtype=torch.bool)
