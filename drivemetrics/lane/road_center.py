"""Expected road center: the differentiable lateral position of the detected lanes (DRP-attack objective).

Sato & Chen (CVPR 2022) attack lane detectors of three families with one objective, the expected horizontal
position of the detected lanes in the image, normalised so that 0 is the left edge, 1 the right edge and 0.5 the
image center; ``loss = mean(1 - center)`` pushes the lanes (and the car's path) right, ``mean(center)`` left.

* segmentation / row-wise classification (their eq. 3): per lane and row, the expected column under the softmax
  over columns (or grid cells), :func:`expected_center_from_maps`;
* curve fitting (eq. 4): polynomial lanes ``x(y)`` of the confident lanes, averaged over rows,
  :func:`expected_center_from_polynomials`;
* anchor-based (eq. 5): per row, the confidence-weighted mean x of all anchor proposals,
  :func:`expected_center_from_anchors`.

Column ``w`` of ``W`` is at ``(w + 0.5) / W`` (pixel centers, so a uniform distribution gives exactly 0.5); the
reference code uses ``w / W`` (SCNN) or ``(k + 1) / G`` (UltraFast), constant offsets of half a cell that do not
change gradients.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import torch
from torch import Tensor

from drivemetrics._internal.precision import float32_if_half
from drivemetrics._internal.validation import check_finite, check_shape, check_tensor

__all__ = [
    "expected_center_from_anchors",
    "expected_center_from_maps",
    "expected_center_from_polynomials",
    "road_center_attack_loss",
]


def _select_lanes(x: Tensor, lanes: Sequence[int] | None, name: str) -> Tensor:
    if lanes is None:
        return x
    index = list(lanes)
    if not index or any(not 0 <= i < x.shape[1] for i in index):
        raise ValueError(f"`lanes` must be non-empty indices into the {x.shape[1]} lanes of `{name}`, got {index}")
    return x[:, index]


def expected_center_from_maps(
    maps: Tensor,
    *,
    lanes: Sequence[int] | None = None,
    from_logits: bool = True,
    no_lane_cell: bool = False,
    validate_args: bool = True,
) -> Tensor:
    """Expected road center from per-lane row-wise scores (segmentation maps or row-anchor classifiers).

    For every lane ``l`` and row ``h``: ``x(l, h) = sum_w p(l, h, w) (w + 0.5) / W`` with ``p`` the softmax of the
    scores over the ``W`` columns; the center is the mean of ``x`` over the chosen lanes and all rows.

    Args:
        maps: ``(B, L, H, W)`` scores: per-lane segmentation logits (SCNN: the left/right ego-lane channels) or
            row-anchor classification logits (UltraFast: ``H`` row anchors x ``W`` grid cells).
        lanes: lane indices to use (default all), e.g. ``(1, 2)`` for the ego lanes of a 4-lane model.
        from_logits: softmax over columns (default); False takes non-negative scores normalised per row.
        no_lane_cell: the last column is a "no lane" class (UltraFast) and is excluded before the softmax.
        validate_args: check values (finite, non-negative with positive row sums when ``from_logits=False``);
            each check synchronises with the device and breaks a ``torch.compile`` graph,
            so pass ``False`` in a compiled or GPU attack loop once the inputs are known to be valid (the
            shapes are still checked).

    Returns:
        ``B`` centers in [0, 1] (differentiable w.r.t. ``maps``).

    Examples:
        >>> import torch
        >>> from drivemetrics.functional import expected_center_from_maps
        >>> maps = torch.zeros(1, 2, 3, 4); maps[..., 1] = 10.0  # (B, L, H, W): both lanes in column 1 of 4
        >>> expected_center_from_maps(maps)
        tensor([0.3750])
    """
    check_tensor(maps, "maps")
    check_shape(maps, "maps", ("B", "L", "H", "W"))
    if validate_args:
        check_finite(maps, "maps")
    maps = _select_lanes(maps, lanes, "maps")
    if no_lane_cell:
        if maps.shape[-1] < 2:
            raise ValueError("`maps` needs at least 2 columns when `no_lane_cell=True`")
        maps = maps[..., :-1]
    if maps.shape[-1] == 0 or maps.shape[-2] == 0:
        raise ValueError(f"`maps` must have at least one row and one column, got {tuple(maps.shape)}")
    if from_logits:
        prob = torch.softmax(maps, dim=-1)
    else:
        if validate_args and bool((maps < 0).any()):
            raise ValueError("`maps` must be non-negative when `from_logits=False`")
        mass = maps.sum(dim=-1, keepdim=True)
        if validate_args and bool((mass <= 0).any()):
            raise ValueError("`maps` has a row with zero total score; pass logits with `from_logits=True`")
        prob = maps / mass
    width = prob.shape[-1]
    position = (torch.arange(width, device=maps.device, dtype=prob.dtype) + 0.5) / width
    return (prob * position).sum(-1).mean(dim=(1, 2))


def expected_center_from_polynomials(
    coefficients: Tensor,
    confidence: Tensor | None = None,
    *,
    y: Tensor | None = None,
    conf_threshold: float = 0.5,
    validate_args: bool = True,
) -> Tensor:
    """Expected road center of polynomial lanes (PolyLaneNet style): mean x of the confident lanes over rows.

    Each lane is ``x(y) = c_0 y^D + ... + c_D`` (highest power first, like ``numpy.polyval``), x and y normalised
    by the image width and height. The coefficients of the lanes with ``confidence >= conf_threshold`` are averaged
    (equivalently their x values), and the mean over ``y`` is returned. An image without a confident lane uses all
    its lanes (instead of the reference's empty mean, NaN).

    Args:
        coefficients: ``(B, L, (D + 1))`` polynomial coefficients.
        confidence: optional ``(B, L)`` lane confidences in [0, 1] (default: all lanes used).
        y: ``R`` normalised rows (default ``0.40, 0.41, ..., 0.99``, the lower 60 % of the image).
        conf_threshold: confidence needed to use a lane.
        validate_args: check values (finite); each check synchronises with the device and breaks a
            ``torch.compile`` graph,
            so pass ``False`` in a compiled or GPU attack loop once the inputs are known to be valid (the
            shapes are still checked).

    Returns:
        ``B`` centers (differentiable w.r.t. ``coefficients``; the hard selection has no gradient w.r.t.
        ``confidence``).

    Examples:
        >>> import torch
        >>> from drivemetrics.functional import expected_center_from_polynomials
        >>> coefficients = torch.tensor([[[0.0, 0.45], [0.0, 0.65]]])  # (B, L, D + 1): vertical lanes at 0.45, 0.65
        >>> expected_center_from_polynomials(coefficients)
        tensor([0.5500])
    """
    check_tensor(coefficients, "coefficients")
    check_shape(coefficients, "coefficients", ("B", "L", "D+1"))
    if validate_args:
        check_finite(coefficients, "coefficients")
    if coefficients.shape[1] == 0 or coefficients.shape[2] == 0:
        raise ValueError(f"`coefficients` needs at least one lane and one coefficient, got {tuple(coefficients.shape)}")
    if y is None:
        y = torch.arange(40, 100, device=coefficients.device, dtype=coefficients.dtype) / 100
    check_tensor(y, "y")
    check_shape(y, "y", ("R",))
    if validate_args:
        check_finite(y, "y")
    if y.numel() == 0:
        raise ValueError("`y` must hold at least one row")
    y = y.to(device=coefficients.device, dtype=coefficients.dtype)
    degree = coefficients.shape[-1] - 1
    powers = y[:, None] ** torch.arange(degree, -1, -1, device=y.device, dtype=y.dtype)  # R x (D+1)
    x = coefficients @ powers.T  # B x L x R
    if confidence is None:
        weight = torch.ones(coefficients.shape[:2], dtype=x.dtype, device=x.device)
    else:
        check_shape(confidence, "confidence", coefficients.shape[:2])
        if validate_args:
            check_finite(confidence, "confidence")
        keep = confidence.to(x.device) >= conf_threshold
        keep = torch.where(keep.any(dim=1, keepdim=True), keep, torch.ones_like(keep))
        weight = keep.to(x.dtype)
    lane_mean = x.mean(-1)  # B x L
    return (weight * lane_mean).sum(1) / weight.sum(1)


def expected_center_from_anchors(
    xs: Tensor,
    confidence: Tensor,
    *,
    image_width: float | None = None,
    offsets: Tensor | None = None,
    validate_args: bool = True,
) -> Tensor:
    """Expected road center of anchor proposals (LaneATT style): confidence-weighted mean x per row, then mean.

    ``center = mean_r (sum_a c_a x_{a,r} / sum_a c_a)`` over all proposals (no NMS, so it stays differentiable).

    Args:
        xs: ``(B, A, R)`` x positions of every proposal at ``R`` rows (anchor x plus predicted offset), normalised
            to [0, 1] or in pixels when ``image_width`` is given.
        confidence: ``(B, A)`` proposal probabilities (LaneATT: softmax of the class scores, lane class), > 0 sum.
        image_width: divide ``xs`` by this width (pixels); None when ``xs`` is already normalised.
        offsets: optional ``(B, A, R)`` predicted offsets added to ``xs`` (then ``xs`` are the anchors' own x
            positions), same units.
        validate_args: check values (finite, ``confidence`` non-negative with a positive sum); each check
            synchronises with the device and breaks a ``torch.compile`` graph,
            so pass ``False`` in a compiled or GPU attack loop once the inputs are known to be valid (the
            shapes are still checked).

    Returns:
        ``B`` centers (differentiable w.r.t. ``xs``, ``offsets`` and ``confidence``).

    Examples:
        >>> import torch
        >>> from drivemetrics.functional import expected_center_from_anchors
        >>> xs = torch.tensor([[[0.4, 0.4], [0.6, 0.6]]])  # (B, A, R): two proposals at x = 0.4 and 0.6
        >>> expected_center_from_anchors(xs, torch.tensor([[0.5, 0.5]]))
        tensor([0.5000])
    """
    check_tensor(xs, "xs")
    check_shape(xs, "xs", ("B", "A", "R"))
    if offsets is not None:
        check_shape(offsets, "offsets", tuple(xs.shape))
        if validate_args:
            check_finite(offsets, "offsets")
        xs = xs + offsets
    check_shape(confidence, "confidence", xs.shape[:2])
    if xs.shape[1] == 0 or xs.shape[2] == 0:
        raise ValueError(f"`xs` needs at least one proposal and one row, got {tuple(xs.shape)}")
    if validate_args:
        check_finite(xs, "xs")
        check_finite(confidence, "confidence")
        if bool((confidence < 0).any()) or bool((confidence.sum(1) <= 0).any()):
            raise ValueError("`confidence` must be non-negative with a positive sum per image")
    if image_width is not None:
        if not image_width > 0:
            raise ValueError(f"`image_width` must be > 0 pixels, got {image_width}")
        xs = xs / image_width
    weighted = (confidence[..., None] * xs).sum(1) / confidence.sum(1, keepdim=True)  # B x R
    return weighted.mean(-1)


def road_center_attack_loss(
    center: Tensor, direction: Literal["right", "left"] = "right", *, validate_args: bool = True
) -> Tensor:
    """Attack loss on expected road centers ``B``: ``mean(1 - center)`` pushes right, ``mean(center)`` left.

    ``validate_args`` refuses NaN or infinite centers (a read-back).
    ``float16`` / ``bfloat16`` centers give a ``float32`` loss (computed in ``float32``).

    Examples:
        >>> import torch
        >>> from drivemetrics.functional import road_center_attack_loss
        >>> road_center_attack_loss(torch.tensor([0.5, 0.7])), road_center_attack_loss(torch.tensor([0.5, 0.7]), "left")
        (tensor(0.4000), tensor(0.6000))
    """
    if direction not in ("right", "left"):
        raise ValueError(f"`direction` must be 'right' or 'left', got {direction!r}")
    if validate_args:
        check_finite(center, "center")
    center = float32_if_half(center)
    if direction == "right":
        return (1 - center).mean()
    if direction == "left":
        return center.mean()
    raise ValueError(f"`direction` must be 'right' or 'left', got {direction!r}")
