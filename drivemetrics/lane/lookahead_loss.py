"""Lane center, heading and width on the road over a look-ahead window: :func:`lookahead_lane_loss` and
:class:`LookaheadLaneLoss`.

What a lateral controller consumes is the lane center and its heading a short time ahead (openpilot's MPC and
the PSLD / E2E-LD controller look 0.5 s to 2.5 s ahead), and what keeps a detection usable when one line is lost is
the lane width. This loss measures exactly those, in metres on the road plane, at the ground-truth rows whose
distance lies in the window ``[window[0] * v, window[1] * v]`` (``v`` the frame's speed; soft edges of
``softness`` metres):

* center: ``|c_pred - c_gt|`` with ``c = (x_left + x_right) / 2`` per row;
* heading: ``heading_length * |atan(dc_pred / dz) - atan(dc_gt / dz)|`` between consecutive rows (radians scaled
  to metres of offset ``heading_length`` ahead);
* width: ``|w_pred - w_gt|`` with ``w = x_right - x_left`` per row. Its gradient pushes the two lines of a row in
  opposite directions, which PSLD cannot do (the controller only sees the center, so PSLD's gradient is the same
  for both lines).

|.| is smoothed (``sqrt(d^2 + eps^2) - eps``, ``eps`` metres). Per frame the three terms are weighted averages over
the window's rows (rows where both ground-truth lines are present), combined with ``weights``; a frame with no such
row contributes 0. Use it beside a detector's own loss when the detector drives a controller: it spends the
gradient on the distances the controller uses instead of on every pixel alike.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from drivemetrics._internal.precision import float32_if_half
from drivemetrics.lane.loss_inputs import (
    LossReduction,
    check_lane_points,
    check_reduction,
    check_speed,
    reduce_frames,
    road_points,
    smooth_abs,
)

__all__ = ["LookaheadLaneLoss", "lookahead_lane_loss"]


def _check_options(window: tuple[float, float], weights: tuple[float, float, float], softness: float,
                   heading_length: float, eps: float) -> None:  # fmt: skip
    if len(window) != 2 or not 0 <= window[0] < window[1]:
        raise ValueError(f"`window` must be (start, end) seconds with 0 <= start < end, got {window}")
    if len(weights) != 3 or any(not w >= 0 for w in weights) or sum(weights) <= 0:
        raise ValueError(f"`weights` must be 3 non-negative (center, heading, width) weights, not all 0, got {weights}")
    if not softness > 0:
        raise ValueError(f"`softness` must be > 0 metres, got {softness}")
    if not heading_length > 0:
        raise ValueError(f"`heading_length` must be > 0 metres, got {heading_length}")
    if not eps >= 0:
        raise ValueError(f"`eps` must be >= 0 metres, got {eps}")


def lookahead_lane_loss(
    preds: Tensor,
    target: Tensor,
    *,
    image_from_road: Tensor,
    speed: Tensor | float,
    window: tuple[float, float] = (0.5, 2.0),
    weights: tuple[float, float, float] = (1.0, 1.0, 1.0),
    heading_length: float = 10.0,
    softness: float = 2.0,
    eps: float = 0.01,
    reduction: LossReduction = "mean",
    validate_args: bool = True,
) -> Tensor:
    """Center, heading and width errors (metres) of the ego lane over a look-ahead window (module docstring).

    Args:
        preds: ``(B, 2, N, 2)`` predicted ego-left / ego-right points, pixels ``(u, v)``.
        target: ``(B, 2, N, 2)`` ground-truth points paired by index with ``preds`` (NaN = absent).
        image_from_road: ``(3, 3)`` or ``(B, 3, 3)`` homography of the road plane.
        speed: ``(B,)`` or float, m/s: the window is ``[window[0] * speed, window[1] * speed]`` metres ahead.
        window: seconds of travel (default 0.5 s to 2 s).
        weights: ``(center, heading, width)`` weights of the three terms.
        heading_length: metres that turn a heading error (radians) into an offset.
        softness: metres over which the window's edges fade (a sigmoid).
        eps: smoothing of |.|, metres.
        reduction: ``"mean"`` / ``"sum"`` over frames or ``"none"`` (``(B,)``).
        validate_args: check values (finite predictions and homography, speed in (0, 350] m/s): host syncs;
            ``False`` skips them (shapes and options are always checked).

    Examples:
        >>> import torch
        >>> from drivemetrics.functional import lookahead_lane_loss
        >>> from drivemetrics.synthetic.lane_clips import LaneCamera
        >>> H = LaneCamera().image_from_road()
        >>> rows = torch.linspace(60.0, 120.0, 16, dtype=torch.float64)
        >>> left = torch.stack([128 - 1.8 * (rows - 52) * 0.9, rows], -1)  # (N, 2) pixels
        >>> right = torch.stack([128 + 1.8 * (rows - 52) * 0.9, rows], -1)
        >>> target = torch.stack([left, right])[None]  # (1, 2, N, 2)
        >>> wider = target.clone()
        >>> wider[:, 1, :, 0] += 0.2 * (rows - 52)  # the right line drifts outwards
        >>> round(float(lookahead_lane_loss(target, target, image_from_road=H, speed=20.0)), 6)
        0.0
        >>> float(lookahead_lane_loss(wider, target, image_from_road=H, speed=20.0)) > 0
        True
    """
    check_lane_points(preds, target, image_from_road, validate_args)
    _check_options(window, weights, softness, heading_length, eps)
    check_reduction(reduction)
    preds, target = float32_if_half(preds), float32_if_half(target)  # half inputs compute in float32
    v = check_speed(speed, preds, validate_args)
    xz_p, ok_p = road_points(preds, image_from_road)
    xz_g, ok_g = road_points(target, image_from_road)
    both = ok_g.all(1) & ok_p.all(1)  # (B, N): rows with both lines
    z = xz_g[..., 1].mean(1).detach()  # (B, N) row distance
    start, end = (window[0] * v)[:, None], (window[1] * v)[:, None]
    w = torch.sigmoid((z - start) / softness) * torch.sigmoid((end - z) / softness)
    w = torch.where(both, w, torch.zeros_like(w))
    c_p, c_g = xz_p[..., 0].mean(1), xz_g[..., 0].mean(1)  # (B, N) centers
    wd_p = xz_p[:, 1, :, 0] - xz_p[:, 0, :, 0]
    wd_g = xz_g[:, 1, :, 0] - xz_g[:, 0, :, 0]
    norm = w.sum(-1).clamp_min(1e-9)
    center = (w * smooth_abs(c_p - c_g, eps)).sum(-1) / norm
    width = (w * smooth_abs(wd_p - wd_g, eps)).sum(-1) / norm
    # heading between consecutive rows (each center's own distances), pairs weighted by both rows' weights
    zp = xz_p[..., 1].mean(1)
    dz_p, dz_g = zp[:, 1:] - zp[:, :-1], z[:, 1:] - z[:, :-1]
    pair = torch.sqrt(w[:, 1:] * w[:, :-1]) * (dz_g.abs() > 1e-3) * (dz_p.abs() > 1e-3)
    safe_p = torch.where(pair > 0, dz_p, torch.ones_like(dz_p))
    safe_g = torch.where(pair > 0, dz_g, torch.ones_like(dz_g))
    psi_p = torch.atan((c_p[:, 1:] - c_p[:, :-1]) / safe_p)
    psi_g = torch.atan((c_g[:, 1:] - c_g[:, :-1]) / safe_g)
    heading = (pair * smooth_abs(heading_length * (psi_p - psi_g), eps)).sum(-1) / pair.sum(-1).clamp_min(1e-9)
    per_frame = weights[0] * center + weights[1] * heading + weights[2] * width
    return reduce_frames(per_frame, reduction)


class LookaheadLaneLoss(nn.Module):
    """Center, heading and width of the ego lane on the road over a look-ahead window, as a training loss.

    Arguments as :func:`lookahead_lane_loss` (keyword-only options here, the inputs in ``forward``); a value in
    metres, 0 for a perfect detection. Use it beside the detector's own loss when the detector feeds a lateral
    controller; the width term gives the two lines of a row opposite gradients.

    Examples:
        >>> import torch
        >>> from drivemetrics.lane import LookaheadLaneLoss
        >>> from drivemetrics.synthetic.lane_clips import LaneCamera
        >>> rows = torch.linspace(60.0, 120.0, 16, dtype=torch.float64)
        >>> lines = [torch.stack([128 + s * 1.6 * (rows - 52), rows], -1) for s in (-1, 1)]
        >>> target = torch.stack(lines)[None]  # (1, 2, N, 2) pixels
        >>> preds = (target + torch.tensor([3.0, 0.0], dtype=torch.float64)).requires_grad_()
        >>> loss = LookaheadLaneLoss()(preds, target, image_from_road=LaneCamera().image_from_road(), speed=20.0)
        >>> loss.backward()
        >>> bool(preds.grad[..., 0].sum() > 0)  # pushes both lines back to the left
        True
    """

    def __init__(
        self,
        *,
        window: tuple[float, float] = (0.5, 2.0),
        weights: tuple[float, float, float] = (1.0, 1.0, 1.0),
        heading_length: float = 10.0,
        softness: float = 2.0,
        eps: float = 0.01,
        reduction: LossReduction = "mean",
        validate_args: bool = True,
    ) -> None:
        super().__init__()
        self.window = (float(window[0]), float(window[1]))
        self.weights = (float(weights[0]), float(weights[1]), float(weights[2])) if len(weights) == 3 else weights
        _check_options(self.window, self.weights, softness, heading_length, eps)
        check_reduction(reduction)
        self.heading_length = float(heading_length)
        self.softness = float(softness)
        self.eps = float(eps)
        self.reduction = reduction
        self.validate_args = bool(validate_args)

    def forward(self, preds: Tensor, target: Tensor, *, image_from_road: Tensor, speed: Tensor | float) -> Tensor:
        """The loss of predicted ego lines ``(B, 2, N, 2)`` against the ground truth, metres."""
        return lookahead_lane_loss(
            preds,
            target,
            image_from_road=image_from_road,
            speed=speed,
            window=self.window,
            weights=self.weights,
            heading_length=self.heading_length,
            softness=self.softness,
            eps=self.eps,
            reduction=self.reduction,
            validate_args=self.validate_args,
        )
