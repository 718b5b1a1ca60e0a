"""Per-line IoU on the road plane with a tolerance that grows with distance: :func:`bev_line_iou_loss` and
:class:`BEVLineIoULoss`.

CLRNet's line IoU widens every lane point into a segment of fixed pixel radius along its row and compares the
segments of a predicted and a ground-truth line row by row. In the image a fixed radius means centimetres near
the car and metres far away; here the points are first back-projected onto the road plane (metres) and the radius
is ``radius + radius_growth * Z`` (a tolerance that grows with the distance ``Z`` of the ground-truth point, as a
controller's sensitivity falls). Per line::

    LIoU = sum_i w_i (2 r_i - |x_i - x_gt,i|) / sum_i w_i (2 r_i + |x_i - x_gt,i|)
    w_i = 1 + near_weight * exp(-Z_i / near_distance)

over the rows where the ground truth is present (the overlap may go negative, so a far-off line still has a
gradient), and the loss is ``1 - LIoU`` averaged over the present lines of a frame. Use it as a scale-aware,
bounded alternative to a point L1 that spends its gradient on the near range.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from drivemetrics._internal.precision import float32_if_half
from drivemetrics.lane.loss_inputs import (
    LossReduction,
    check_lane_points,
    check_reduction,
    reduce_frames,
    road_points,
)

__all__ = ["BEVLineIoULoss", "bev_line_iou_loss"]


def _check_options(radius: float, radius_growth: float, near_weight: float, near_distance: float) -> None:
    if not radius > 0:
        raise ValueError(f"`radius` must be > 0 metres, got {radius}")
    if not radius_growth >= 0:
        raise ValueError(f"`radius_growth` must be >= 0 (metres per metre), got {radius_growth}")
    if not near_weight >= 0:
        raise ValueError(f"`near_weight` must be >= 0, got {near_weight}")
    if not near_distance > 0:
        raise ValueError(f"`near_distance` must be > 0 metres, got {near_distance}")


def bev_line_iou_loss(
    preds: Tensor,
    target: Tensor,
    *,
    image_from_road: Tensor,
    radius: float = 0.15,
    radius_growth: float = 0.01,
    near_weight: float = 1.0,
    near_distance: float = 15.0,
    reduction: LossReduction = "mean",
    validate_args: bool = True,
) -> Tensor:
    """``1 - LIoU`` of the ego lines on the road plane (module docstring), in ``[0, 2)``.

    Args:
        preds: ``(B, 2, N, 2)`` predicted ego-left / ego-right points, pixels.
        target: ``(B, 2, N, 2)`` ground truth paired by index (NaN = absent).
        image_from_road: ``(3, 3)`` or ``(B, 3, 3)``.
        radius: half-width of a point's segment at distance 0, metres.
        radius_growth: growth of the half-width per metre of distance.
        near_weight, near_distance: the near-range row weight ``1 + near_weight exp(-Z / near_distance)``.
        reduction: over frames.
        validate_args: check values (finite predictions and homography): host syncs.

    Examples:
        >>> import torch
        >>> from drivemetrics.functional import bev_line_iou_loss
        >>> from drivemetrics.synthetic.lane_clips import LaneCamera
        >>> rows = torch.linspace(60.0, 120.0, 16, dtype=torch.float64)
        >>> lines = [torch.stack([128 + s * 1.6 * (rows - 52), rows], -1) for s in (-1, 1)]
        >>> target = torch.stack(lines)[None]  # (1, 2, N, 2) pixels
        >>> H = LaneCamera().image_from_road()
        >>> float(bev_line_iou_loss(target, target, image_from_road=H))
        0.0
        >>> shifted = target + torch.tensor([4.0, 0.0], dtype=torch.float64)
        >>> 0 < float(bev_line_iou_loss(shifted, target, image_from_road=H)) < 2
        True
    """
    check_lane_points(preds, target, image_from_road, validate_args)
    _check_options(radius, radius_growth, near_weight, near_distance)
    check_reduction(reduction)
    preds, target = float32_if_half(preds), float32_if_half(target)  # half inputs compute in float32
    xz_p, ok_p = road_points(preds, image_from_road)
    xz_g, ok_g = road_points(target, image_from_road)
    ok = ok_g & ok_p
    z = xz_g[..., 1].detach()
    r = radius + radius_growth * z
    w = torch.where(ok, 1 + near_weight * torch.exp(-z / near_distance), torch.zeros_like(z))
    gap = (xz_p[..., 0] - xz_g[..., 0]).abs()
    overlap = (w * (2 * r - gap)).sum(-1)
    union = (w * (2 * r + gap)).sum(-1)
    line_present = ok.any(-1)
    iou = torch.where(line_present, overlap / union.clamp_min(1e-12), torch.ones_like(overlap))
    lines = line_present.sum(-1)
    per_frame = ((1 - iou) * line_present).sum(-1) / lines.clamp_min(1)
    return reduce_frames(per_frame, reduction)


class BEVLineIoULoss(nn.Module):
    """Per-line IoU of the ego lines on the road plane, tolerance growing with distance, near rows weighted.

    Arguments as :func:`bev_line_iou_loss` (keyword-only options here, the inputs in ``forward``).

    Examples:
        >>> import torch
        >>> from drivemetrics.lane import BEVLineIoULoss
        >>> from drivemetrics.synthetic.lane_clips import LaneCamera
        >>> rows = torch.linspace(60.0, 120.0, 16, dtype=torch.float64)
        >>> lines = [torch.stack([128 + s * 1.6 * (rows - 52), rows], -1) for s in (-1, 1)]
        >>> target = torch.stack(lines)[None]  # (1, 2, N, 2) pixels
        >>> preds = (target + torch.tensor([-3.0, 0.0], dtype=torch.float64)).requires_grad_()
        >>> BEVLineIoULoss()(preds, target, image_from_road=LaneCamera().image_from_road()).backward()
        >>> bool((preds.grad[..., 0] < 0).all())  # every point is pushed back to the right
        True
    """

    def __init__(
        self,
        *,
        radius: float = 0.15,
        radius_growth: float = 0.01,
        near_weight: float = 1.0,
        near_distance: float = 15.0,
        reduction: LossReduction = "mean",
        validate_args: bool = True,
    ) -> None:
        super().__init__()
        _check_options(radius, radius_growth, near_weight, near_distance)
        check_reduction(reduction)
        self.radius = float(radius)
        self.radius_growth = float(radius_growth)
        self.near_weight = float(near_weight)
        self.near_distance = float(near_distance)
        self.reduction = reduction
        self.validate_args = bool(validate_args)

    def forward(self, preds: Tensor, target: Tensor, *, image_from_road: Tensor) -> Tensor:
        """``1 - LIoU`` of predicted ego lines ``(B, 2, N, 2)`` against the ground truth."""
        return bev_line_iou_loss(
            preds,
            target,
            image_from_road=image_from_road,
            radius=self.radius,
            radius_growth=self.radius_growth,
            near_weight=self.near_weight,
            near_distance=self.near_distance,
            reduction=self.reduction,
            validate_args=self.validate_args,
        )
