"""A per-point lane loss weighted by how much each point moves the controller (CAPO-style):
:func:`control_sensitivity_weights`, :func:`control_weighted_loss` and :class:`ControlWeightedLoss`.

CAPO (McAllister et al., ICRA 2022) weights a perception loss by how much the controller's action changes when
the prediction replaces the ground truth. Here the weight of a lane point is the sensitivity of PSLD to that
point, measured at the ground-truth lines: ``s_i = (1 / Tp) max_t |d dev_t / d u_i|``, the PSLD of a 1-pixel
shift of point ``i`` alone (``dev_t`` the signed PSLD deviations, :func:`drivemetrics.lane.psld.psld_deviations`,
``u_i`` the point's column). The weights are computed once from the labels (frozen, no gradient), smoothed along
the rows (``smoothing`` passes of a ``[1, 2, 1] / 4`` filter), normalised to mean 1 over the frame's present
points and floored at ``floor`` (then renormalised), so that every point keeps some weight and the few
high-leverage rows (where the controller's path fit looks) get more. The loss is the weighted mean of a smoothed
per-point L1 (pixels) between predicted and ground-truth points.

Use it instead of (or beside) a plain per-point L1 when a detector feeds a lateral controller: it is as cheap as
an L1 at train time (the weights come with the labels, compute them once per training frame).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from drivemetrics._internal.precision import float32_if_half
from drivemetrics._internal.validation import check_finite, check_tensor
from drivemetrics.lane.control import LateralController
from drivemetrics.lane.geometry import center_from_image_lanes
from drivemetrics.lane.loss_inputs import LossReduction, check_lane_points, check_reduction, reduce_frames
from drivemetrics.lane.psld_rollout import psld_deviations

__all__ = ["ControlWeightedLoss", "control_sensitivity_weights", "control_weighted_loss"]


def control_sensitivity_weights(
    target: Tensor,
    center: Tensor,
    *,
    speed: Tensor | float,
    image_from_road: Tensor,
    z_samples: Tensor,
    horizon_frames: int = 10,
    controller: LateralController | None = None,
    smoothing: int = 2,
    floor: float = 0.1,
    validate_args: bool = True,
) -> Tensor:
    """Frozen control-sensitivity weights ``(B, 2, N)`` of ground-truth lane points (module docstring).

    Args:
        target: ``(B, 2, N, 2)`` ground-truth ego-left / ego-right points, pixels (NaN = absent).
        center: ``(B, M)`` ground-truth lane-center profile at ``z_samples`` (metres): the road of the rollouts.
        speed: ``(B,)`` or float, m/s.
        image_from_road: ``(3, 3)`` or ``(B, 3, 3)``.
        z_samples: ``(M,)`` metres.
        horizon_frames, controller: as :func:`~drivemetrics.lane.psld.psld`.
        smoothing: passes of the ``[1, 2, 1] / 4`` filter along the rows (0: none).
        floor: smallest weight relative to the frame's mean (in ``[0, 1]``).
        validate_args: refuse a NaN or infinite ``center`` or homography (a read-back); shapes are always checked.

    Returns:
        ``(B, 2, N)`` weights with mean 1 over each frame's present points, 0 at absent points; no gradient.

    Examples:
        >>> import torch
        >>> from drivemetrics.functional import control_sensitivity_weights
        >>> from drivemetrics.synthetic.lane_clips import make_lane_clips
        >>> clips = make_lane_clips(1, 2, seed=0)
        >>> lanes = clips.lanes_image[0, :, [1, 2]]  # (T, 2, N) columns of the ego lines
        >>> points = torch.stack([lanes, clips.h_samples.expand_as(lanes)], -1)  # (T, 2, N, 2)
        >>> w = control_sensitivity_weights(points, clips.center_road[0], speed=clips.speed[0],
        ...                                 image_from_road=clips.image_from_road, z_samples=clips.z_samples)
        >>> w.shape, bool(w.max() > 2 * w[w > 0].min())  # a few rows matter much more than others
        (torch.Size([2, 2, 21]), True)
    """
    check_lane_points(target, target, image_from_road, False)  # NaN marks an absent GT point
    check_tensor(center, "center")
    if center.ndim != 2 or center.shape[0] != target.shape[0]:
        raise ValueError(f"`center` must have shape {target.shape[0]} x M, got {tuple(center.shape)}")
    if validate_args:
        check_finite(center, "center")
        check_finite(image_from_road, "image_from_road")
    if int(smoothing) != smoothing or smoothing < 0:
        raise ValueError(f"`smoothing` must be an integer >= 0, got {smoothing}")
    if not 0 <= floor <= 1:
        raise ValueError(f"`floor` must lie in [0, 1], got {floor}")
    present = torch.isfinite(target).all(-1) & (torch.nan_to_num(target[..., 0], nan=-1.0) >= 0)
    with torch.enable_grad():
        points = target.detach().clone().requires_grad_()
        profile = center_from_image_lanes(points, image_from_road.detach(), z_samples.to(target))
        dev = psld_deviations(profile, center.detach().to(profile), speed=speed, z_samples=z_samples.to(target),
                              horizon_frames=horizon_frames, controller=controller, validate_args=False)  # fmt: skip
        sens = torch.zeros_like(target[..., 0])
        for t in range(horizon_frames):  # |d dev_t / d u| per step; PSLD of a 1-px shift = max over steps / Tp
            (grad,) = torch.autograd.grad(dev[:, t].sum(), points, retain_graph=t + 1 < horizon_frames)
            sens = torch.maximum(sens, torch.nan_to_num(grad[..., 0]).abs())
    sens = torch.where(present, sens / horizon_frames, torch.zeros_like(sens)).detach()
    kernel = torch.tensor([[[0.25, 0.5, 0.25]]], dtype=sens.dtype, device=sens.device)
    mask = present.to(sens.dtype)
    flat, flat_mask = sens.flatten(0, 1)[:, None], mask.flatten(0, 1)[:, None]
    for _ in range(int(smoothing)):  # masked smoothing: absent points neither give nor take weight
        flat = F.conv1d(F.pad(flat * flat_mask, (1, 1), mode="replicate"), kernel)
        norm = F.conv1d(F.pad(flat_mask, (1, 1), mode="replicate"), kernel)
        flat = torch.where(norm > 0, flat / norm.clamp_min(1e-12), torch.zeros_like(flat)) * flat_mask
    sens = flat[:, 0].view_as(sens)

    def normalise(x: Tensor) -> Tensor:
        mean = (x * mask).sum((1, 2), keepdim=True) / mask.sum((1, 2), keepdim=True).clamp_min(1)
        return torch.where(mean > 0, x / mean.clamp_min(1e-300), mask)

    return normalise(normalise(sens).clamp_min(floor)) * mask


def control_weighted_loss(
    preds: Tensor,
    target: Tensor,
    *,
    weights: Tensor,
    eps: float = 0.5,
    reduction: LossReduction = "mean",
    validate_args: bool = True,
) -> Tensor:
    """Weighted mean of the per-point smoothed L1 (pixels) between predicted and ground-truth lane points.

    Args:
        preds: ``(B, 2, N, 2)`` predicted ego-left / ego-right points, pixels.
        target: ``(B, 2, N, 2)`` ground truth paired by index (NaN = absent).
        weights: ``(B, 2, N)`` non-negative point weights (:func:`control_sensitivity_weights`).
        eps: smoothing of the point distance, pixels (``sqrt(d^2 + eps^2) - eps``).
        reduction: ``"mean"`` / ``"sum"`` over frames or ``"none"``.
        validate_args: check values (finite predictions, finite non-negative weights): host syncs.

    Examples:
        >>> import torch
        >>> from drivemetrics.functional import control_weighted_loss
        >>> target = torch.tensor([[[[100.0, 60.0], [90.0, 80.0]], [[150.0, 60.0], [160.0, 80.0]]]])
        >>> preds = target + torch.tensor([2.0, 0.0])  # every point 2 px to the right
        >>> weights = torch.tensor([[[1.0, 3.0], [1.0, 3.0]]])
        >>> control_weighted_loss(preds, target, weights=weights, eps=0.0)
        tensor(2.)
    """
    check_lane_points(preds, target, None, validate_args)
    check_reduction(reduction)
    check_tensor(weights, "weights")
    if weights.shape != preds.shape[:3]:
        raise ValueError(f"`weights` must have shape {tuple(preds.shape[:3])}, got {tuple(weights.shape)}")
    if not eps >= 0:
        raise ValueError(f"`eps` must be >= 0 pixels, got {eps}")
    if validate_args:
        check_finite(weights, "weights")
        if bool((weights < 0).any()):
            raise ValueError("`weights` must be >= 0")
    preds, target = float32_if_half(preds), float32_if_half(target)  # half inputs compute in float32
    present = torch.isfinite(target).all(-1) & (torch.nan_to_num(target[..., 0], nan=-1.0) >= 0)
    safe = torch.where(present[..., None], target, preds.detach())
    diff = preds - safe
    dist = torch.linalg.vector_norm(diff, dim=-1) if eps == 0 else ((diff * diff).sum(-1) + eps * eps).sqrt() - eps
    w = torch.where(present, weights.to(preds), torch.zeros_like(dist))
    per_frame = (w * dist).sum((1, 2)) / w.sum((1, 2)).clamp_min(1e-12)
    return reduce_frames(per_frame, reduction)


class ControlWeightedLoss(nn.Module):
    """CAPO-style per-point lane loss: a point L1 weighted by the controller's sensitivity to each point.

    ``forward(preds, target, weights=...)`` as :func:`control_weighted_loss`; compute ``weights`` once per training
    frame with :func:`control_sensitivity_weights` (or :meth:`sensitivity`, with this loss's options) and keep
    them with the labels.

    Examples:
        >>> import torch
        >>> from drivemetrics.lane import ControlWeightedLoss
        >>> target = torch.tensor([[[[100.0, 60.0], [90.0, 80.0]], [[150.0, 60.0], [160.0, 80.0]]]])
        >>> preds = (target + torch.tensor([2.0, 0.0])).requires_grad_()
        >>> loss = ControlWeightedLoss(eps=0.0)(preds, target, weights=torch.tensor([[[1.0, 3.0], [1.0, 3.0]]]))
        >>> loss.backward()
        >>> preds.grad[0, 0, :, 0]  # the heavier row gets 3x the gradient
        tensor([0.1250, 0.3750])
    """

    def __init__(
        self,
        *,
        eps: float = 0.5,
        horizon_frames: int = 10,
        controller: LateralController | None = None,
        smoothing: int = 2,
        floor: float = 0.1,
        reduction: LossReduction = "mean",
        validate_args: bool = True,
    ) -> None:
        super().__init__()
        if not eps >= 0:
            raise ValueError(f"`eps` must be >= 0 pixels, got {eps}")
        if int(horizon_frames) != horizon_frames or horizon_frames < 1:
            raise ValueError(f"`horizon_frames` must be an integer >= 1, got {horizon_frames}")
        if int(smoothing) != smoothing or smoothing < 0:
            raise ValueError(f"`smoothing` must be an integer >= 0, got {smoothing}")
        if not 0 <= floor <= 1:
            raise ValueError(f"`floor` must lie in [0, 1], got {floor}")
        check_reduction(reduction)
        self.eps = float(eps)
        self.horizon_frames = int(horizon_frames)
        self.controller = controller
        self.smoothing = int(smoothing)
        self.floor = float(floor)
        self.reduction = reduction
        self.validate_args = bool(validate_args)

    def sensitivity(
        self, target: Tensor, center: Tensor, *, speed: Tensor | float, image_from_road: Tensor, z_samples: Tensor
    ) -> Tensor:
        """:func:`control_sensitivity_weights` with this loss's horizon, controller, smoothing and floor."""
        return control_sensitivity_weights(
            target,
            center,
            speed=speed,
            image_from_road=image_from_road,
            z_samples=z_samples,
            horizon_frames=self.horizon_frames,
            controller=self.controller,
            smoothing=self.smoothing,
            floor=self.floor,
            validate_args=self.validate_args,
        )

    def forward(self, preds: Tensor, target: Tensor, *, weights: Tensor) -> Tensor:
        """The weighted point loss, pixels."""
        return control_weighted_loss(
            preds, target, weights=weights, eps=self.eps, reduction=self.reduction, validate_args=self.validate_args
        )
