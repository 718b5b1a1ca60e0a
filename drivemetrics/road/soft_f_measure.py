"""Soft F-measure: a differentiable surrogate of the KITTI-ROAD F-measure, usable as a training loss.

Soft counts replace the hard ones: with road probabilities ``p``, ground truth ``y`` and valid mask ``v``,
``TP = sum p y v``, ``FP = sum p (1 - y) v``, ``FN = sum (1 - p) y v``, and

    F_beta = ((1 + beta^2) TP + s) / ((1 + beta^2) TP + beta^2 FN + FP + s)

with a smoothing constant ``s`` (default 1 pixel). For binary ``p`` it is the hard F-measure (up to ``s``).
"""

from __future__ import annotations

import math
import warnings
from typing import Literal

import torch
from torch import Tensor, nn

from drivemetrics._internal.validation import (
    check_binary,
    check_finite,
    check_probability,
    check_same_shape,
    check_tensor,
)
from drivemetrics.geometry.bev import BevGrid
from drivemetrics.road.bev_inputs import SPACES, Space

__all__ = ["SoftFMeasureLoss", "soft_f_measure"]

SoftFReduction = Literal["mean", "sum", "none", "pooled"]
_REDUCTIONS: tuple[SoftFReduction, ...] = ("mean", "sum", "none", "pooled")


def _squeeze_channel(x: Tensor, name: str) -> Tensor:
    """``(B, 1, H, W)`` -> ``(B, H, W)``; ``(H, W)`` -> ``(1, H, W)``; ``(B, H, W)`` unchanged."""
    if x.ndim == 4 and x.shape[1] == 1:
        return x[:, 0]
    if x.ndim == 2:
        return x.unsqueeze(0)
    if x.ndim != 3:
        raise ValueError(f"`{name}` must have shape B x H x W or B x 1 x H x W, got {tuple(x.shape)}")
    return x


def _check_args(beta: float, smooth: float) -> None:
    if not (isinstance(beta, (int, float)) and math.isfinite(beta) and beta > 0):
        raise ValueError(f"`beta` must be a finite number > 0, got {beta!r}")
    if not (isinstance(smooth, (int, float)) and math.isfinite(smooth) and smooth >= 0):
        raise ValueError(f"`smooth` must be a finite number >= 0, got {smooth!r}")


def soft_f_measure(
    preds: Tensor,
    target: Tensor,
    *,
    valid: Tensor | None = None,
    beta: float = 1.0,
    from_logits: bool = False,
    smooth: float = 1.0,
    pooled: bool = False,
    validate_args: bool = True,
) -> Tensor:
    """Soft ``F_beta`` of road probability maps, per image or pooled over the batch (differentiable).

    Args:
        preds: ``(B, H, W)`` or ``(B, 1, H, W)`` floating road probabilities in [0, 1], or raw scores with
            ``from_logits=True`` (a sigmoid is applied; never inferred from the values).
        target: same shape, binary road ground truth.
        valid: optional same-shape binary mask; pixels where it is 0 contribute nothing (and get no gradient).
        beta: recall weight of the F-measure.
        from_logits: ``preds`` are logits.
        smooth: added to numerator and denominator (pixels); with ``smooth > 0`` an image without road whose
            prediction is empty scores 1. With ``smooth = 0`` such an image has an undefined F: it is set to 0
            and a warning is given.
        pooled: sum the soft counts over the batch and return one F (like the pooled metric) instead of one per
            image.
        validate_args: check values (costs a device-to-host sync).

    Returns:
        ``B`` soft F values (or a scalar when ``pooled``), in ``preds``' dtype (float32 for float16 / bfloat16
        inputs, whose sums over an image would overflow).

    Examples:
        >>> import torch
        >>> from drivemetrics.functional import soft_f_measure
        >>> target = torch.zeros(1, 4, 4, dtype=torch.bool); target[:, 2:] = True  # (B, H, W): road in the lower half
        >>> preds = torch.where(target, 200, 30).to(torch.uint8)  # uint8 confidences, p = v / 255
        >>> soft_f_measure(target.float(), target)  # (B,) soft F1 of a perfect prediction
        tensor([1.])
        >>> soft_f_measure(torch.full((1, 4, 4), 0.5), target)
        tensor([0.5294])
    """
    _check_args(beta, smooth)
    check_tensor(preds, "preds")
    check_tensor(target, "target")
    if not preds.is_floating_point():
        raise TypeError(f"`preds` must be a floating tensor (probabilities or logits), got {preds.dtype}")
    preds = _squeeze_channel(preds, "preds")
    target = _squeeze_channel(target, "target")
    check_same_shape(preds, "preds", target, "target")
    if valid is not None:
        check_tensor(valid, "valid")
        valid = _squeeze_channel(valid, "valid")
        check_same_shape(preds, "preds", valid, "valid")
    if validate_args:
        if from_logits:
            check_finite(preds, "preds")
        else:
            check_probability(preds, "preds")
        check_binary(target, "target")
        if valid is not None:
            check_binary(valid, "valid")
    if preds.dtype in (torch.float16, torch.bfloat16):  # sums over an image overflow float16 (max 65504)
        preds = preds.float()
    probs = torch.sigmoid(preds) if from_logits else preds
    y = target.to(probs.dtype)
    weight = torch.ones_like(y) if valid is None else valid.to(probs.dtype)
    dims = (0, 1, 2) if pooled else (1, 2)
    tp = (probs * y * weight).sum(dims)
    fp = (probs * (1 - y) * weight).sum(dims)
    fn = ((1 - probs) * y * weight).sum(dims)
    beta2 = float(beta) ** 2
    numerator = (1 + beta2) * tp + smooth
    denominator = (1 + beta2) * tp + beta2 * fn + fp + smooth
    if smooth == 0:
        undefined = denominator == 0
        if bool(undefined.any()):
            warnings.warn(
                "soft F-measure with smooth=0: an image has no ground-truth road and no predicted road in its valid "
                "area, its F is undefined and set to 0",
                RuntimeWarning,
                stacklevel=2,
            )
        denominator = torch.where(undefined, torch.ones_like(denominator), denominator)
    return numerator / denominator


class SoftFMeasureLoss(nn.Module):
    """``1 - soft F_beta`` (see :func:`soft_f_measure`), optionally measured in the bird's-eye view.

    Args:
        beta: recall weight of the F-measure (KITTI: 1).
        from_logits: ``preds`` are logits (a sigmoid is applied).
        smooth: smoothing constant in pixels (see :func:`soft_f_measure`).
        reduction: ``"mean"`` / ``"sum"`` / ``"none"`` over per-image losses, or ``"pooled"``: one loss from the
            soft counts summed over the batch.
        space: ``"perspective"`` or ``"bev"``: the probabilities are warped to ``grid`` with the differentiable
            bilinear warp (target and valid with the nearest pixel; cells that do not see the image are ignored),
            so the loss weighs the road plane uniformly instead of the image.
        grid: the BEV grid (default: the KITTI-ROAD grid).
        validate_args: check values in ``forward``.

    ``forward(preds, target, valid=None, homography=None)``: ``preds`` ``(B, H, W)`` or ``(B, 1, H, W)``;
    ``homography`` ``(B, 3, 3)`` image-from-road (``space="bev"`` only). Returns a scalar (or ``B`` values).

    Examples:
        >>> import torch
        >>> from drivemetrics.road import SoftFMeasureLoss
        >>> loss_fn = SoftFMeasureLoss(from_logits=True)
        >>> logits = torch.zeros(2, 1, 8, 8, requires_grad=True)
        >>> target = torch.zeros(2, 1, 8, 8); target[..., 4:, :] = 1
        >>> loss = loss_fn(logits, target)
        >>> loss.backward()
    """

    def __init__(
        self,
        beta: float = 1.0,
        from_logits: bool = False,
        smooth: float = 1.0,
        reduction: SoftFReduction = "mean",
        space: Space = "perspective",
        grid: BevGrid | None = None,
        validate_args: bool = True,
    ) -> None:
        super().__init__()
        _check_args(beta, smooth)
        if reduction not in _REDUCTIONS:
            raise ValueError(f"`reduction` must be one of {_REDUCTIONS}, got {reduction!r}")
        if space not in SPACES:
            raise ValueError(f"`space` must be one of {SPACES}, got {space!r}")
        if grid is not None and not isinstance(grid, BevGrid):
            raise TypeError(f"`grid` must be a BevGrid, got {type(grid).__name__}")
        self.beta = float(beta)
        self.from_logits = bool(from_logits)
        self.smooth = float(smooth)
        self.reduction = reduction
        self.space = space
        self.grid = BevGrid() if grid is None and space == "bev" else grid
        self.validate_args = bool(validate_args)

    def forward(
        self, preds: Tensor, target: Tensor, *, valid: Tensor | None = None, homography: Tensor | None = None
    ) -> Tensor:
        """The loss (shapes in the class docstring)."""
        from_logits = self.from_logits
        validate_args = self.validate_args
        if self.space == "bev":
            if homography is None:
                raise ValueError("space='bev' needs `homography` (B x 3 x 3 image-from-road) in forward()")
            from drivemetrics.road.bev_inputs import pixel_inputs_to_bev

            check_tensor(preds, "preds")
            if not preds.is_floating_point():
                raise TypeError(f"`preds` must be a floating tensor (probabilities or logits), got {preds.dtype}")
            target = _squeeze_channel(check_tensor(target, "target"), "target")
            valid = None if valid is None else _squeeze_channel(check_tensor(valid, "valid"), "valid")
            if self.validate_args:
                (check_finite if from_logits else check_probability)(preds, "preds")
                check_binary(target, "target")
                if valid is not None:
                    check_binary(valid, "valid")
            if preds.dtype in (torch.float16, torch.bfloat16):
                preds = preds.float()
            probs = _squeeze_channel(torch.sigmoid(preds) if from_logits else preds, "preds")
            preds, target, valid = pixel_inputs_to_bev(
                probs, target, valid, homography, self.grid, mode="bilinear", validate_args=self.validate_args
            )
            from_logits = False
            validate_args = False  # checked before the warp
        elif homography is not None:
            raise ValueError("`homography` is only used with space='bev'")
        f = soft_f_measure(
            preds,
            target,
            valid=valid,
            beta=self.beta,
            from_logits=from_logits,
            smooth=self.smooth,
            pooled=self.reduction == "pooled",
            validate_args=validate_args,
        )
        loss = 1 - f
        if self.reduction == "mean":
            return loss.mean()
        if self.reduction == "sum":
            return loss.sum()
        return loss
