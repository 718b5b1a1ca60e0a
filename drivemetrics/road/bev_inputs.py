"""Road pixel inputs (prediction, ground truth, valid mask) in the BEV: shared by the pixel metrics and the soft
F-measure loss (a helper module: it defines no Metric)."""

from __future__ import annotations

from typing import Literal

import torch
from torch import Tensor

from drivemetrics._internal.validation import check_same_shape, check_tensor
from drivemetrics.geometry.bev import BevGrid

__all__ = ["SPACES", "Space", "as_batch", "pixel_inputs_to_bev"]

#: Where road pixels are scored: the camera image or the bird's-eye view.
Space = Literal["perspective", "bev"]
SPACES: tuple[Space, ...] = ("perspective", "bev")


def as_batch(x: Tensor, name: str) -> Tensor:
    """``x`` as ``(B, H, W)``: an ``(H, W)`` map gets a batch of one; other ranks raise ``ValueError``."""
    if x.ndim == 2:
        return x.unsqueeze(0)
    if x.ndim != 3:
        raise ValueError(f"`{name}` must have shape B x H x W (or H x W), got {tuple(x.shape)}")
    return x


def pixel_inputs_to_bev(
    preds: Tensor,
    target: Tensor,
    valid: Tensor | None,
    image_from_road: Tensor,
    grid: BevGrid | None = None,
    mode: str = "devkit",
    validate_args: bool = True,
) -> tuple[Tensor, Tensor, Tensor]:
    """Warp a perspective prediction, its ground truth and valid mask to the BEV grid, for BEV evaluation.

    Args:
        preds: ``(B, H, W)`` (or ``(H, W)``) confidences, float in [0, 1] or ``uint8``.
        target: same shape, binary road ground truth.
        valid: optional same-shape binary mask of evaluated pixels.
        image_from_road: ``(B, 3, 3)`` (one per frame) or ``(3, 3)`` road -> image homographies
            (:func:`drivemetrics.geometry.image_from_road`); float64 for bit-exact devkit lookups.
        grid: the BEV grid (default: the KITTI-ROAD grid, 800 x 400 cells of 0.05 m).
        mode: ``"devkit"`` (the devkit's nearest-pixel lookup, bit for bit; uint8 stays uint8), ``"nearest"``, or
            ``"bilinear"`` (confidences interpolated, differentiable; ``target`` and ``valid`` use the nearest
            pixel, since labels must not be blended).
        validate_args: check the homographies (invertible, horizon outside the grid; host syncs); ``False``
            skips these checks.

    Returns:
        ``(preds_bev, target_bev, valid_bev)``, each ``(B, rows, cols)``; ``valid_bev`` (bool) is the warped valid
        mask AND the cells that see the image (the devkit's warped GT is black, i.e. "don't care", there).
    """
    from drivemetrics.geometry.warp import warp_image_to_bev

    check_tensor(image_from_road, "image_from_road")
    preds = as_batch(check_tensor(preds, "preds"), "preds")
    target = as_batch(check_tensor(target, "target"), "target")
    check_same_shape(preds, "preds", target, "target")
    if valid is not None:
        valid = as_batch(check_tensor(valid, "valid"), "valid")
        check_same_shape(preds, "preds", valid, "valid")
    label_mode = "nearest" if mode == "bilinear" else mode
    if mode == "bilinear" and not preds.is_floating_point():
        preds = preds.float() / 255.0 if preds.dtype == torch.uint8 else preds.float()
    preds_bev, seen = warp_image_to_bev(
        preds.unsqueeze(1), image_from_road, grid, mode=mode, validate_args=validate_args
    )
    labels = target.bool() if valid is None else torch.stack([target.bool(), valid.bool()], 1)
    labels = labels if labels.ndim == 4 else labels.unsqueeze(1)
    labels_bev, labels_seen = warp_image_to_bev(
        labels, image_from_road, grid, mode=label_mode, validate_args=validate_args
    )
    valid_bev = seen & labels_seen
    if valid is not None:
        valid_bev = valid_bev & labels_bev[:, 1]
    return preds_bev[:, 0], labels_bev[:, 0], valid_bev
