"""Differentiable polyline losses for training map heads: symmetric Chamfer, or MapTR's permutation-invariant
point-to-point distance (the minimum over the point orders that describe the same GT element).

Predictions and GT come as already-assigned pairs (after a Hungarian or other assignment): ``preds[b, n]`` is
compared with ``target[b, n]``. A GT polyline is *closed* when its first and last points coincide (a pedestrian
crossing ring); its equivalent orders are every cyclic shift of the ring in both directions; an open polyline's are
the two directions.
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import Tensor, nn

from drivemetrics._internal.precision import float32_if_half
from drivemetrics.polyline import chamfer_distance, check_polylines

__all__ = ["MapChamferLoss", "map_chamfer_loss"]

LossMode = Literal["chamfer", "permuted"]
Reduction = Literal["mean", "sum", "none"]


def _safe_norm(delta: Tensor) -> Tensor:
    squared = (delta * delta).sum(-1)
    positive = squared > 0
    return torch.where(positive, squared, torch.ones_like(squared)).sqrt() * positive


def _orders(num_points: int, closed: Tensor) -> tuple[Tensor, Tensor]:
    """Index tables ``(O, P)`` of the equivalent orders and a mask ``(..., O)`` of which apply to each line."""
    index = torch.arange(num_points, device=closed.device)
    ring = num_points - 1
    orders = [index, index.flip(0)]  # open: forward, reversed
    if ring >= 2:
        for shift in range(ring):
            shifted = torch.cat([(index[:ring] + shift) % ring, ((index[:1] + shift) % ring)])
            orders.append(shifted)
            orders.append(shifted.flip(0))
    table = torch.stack(orders)  # (O, P)
    is_ring_order = torch.zeros(table.shape[0], dtype=torch.bool, device=closed.device)
    is_ring_order[2:] = True
    applies = torch.where(closed.unsqueeze(-1), is_ring_order, ~is_ring_order)
    return table, applies


def map_chamfer_loss(
    preds: Tensor,
    target: Tensor,
    *,
    target_lengths: Tensor | None = None,
    mode: LossMode = "chamfer",
    point_distance: Literal["l2", "l1"] = "l2",
    reduction: Reduction = "mean",
    validate_args: bool = True,
) -> Tensor:
    """Loss between assigned predicted and GT polylines (metres), differentiable in ``preds``.

    Args:
        preds: ``(B, N, P, D)`` predicted polylines (all ``P`` points valid, as map heads output them).
        target: ``(B, N, Q, D)`` GT polylines; for ``mode="permuted"`` ``Q == P`` (GT resampled to ``P`` points).
        target_lengths: ``(B, N)`` valid GT point counts, 0 for a pair to ignore (default: all ``Q``). With
            ``mode="permuted"`` a line is either full (``P``) or ignored (0).
        mode: ``"chamfer"``: symmetric mean Chamfer distance (order-free); ``"permuted"``: the mean point-to-point
            distance minimised over the GT's equivalent orders (MapTR).
        point_distance: ``"l2"`` Euclidean or ``"l1"`` (MapTR's point loss) for ``"permuted"``.
        reduction: ``"mean"`` over the valid pairs, ``"sum"``, or ``"none"`` (``(B, N)``, 0 for ignored pairs).
        validate_args: check the inputs' values (reads back from the device); ``False`` skips those checks.

    Returns:
        The loss (metres); ``float32`` for ``float16`` / ``bfloat16`` inputs (computed in ``float32``), else
        ``preds``' dtype.

    Examples:
        >>> import torch
        >>> from drivemetrics.functional import map_chamfer_loss
        >>> target = torch.tensor([[[[0.0, 0.0], [1.0, 0.0], [2.0, 0.0]]]])
        >>> preds = target.flip(2) + torch.tensor([0.0, 0.5])  # reversed order, shifted 0.5 m
        >>> map_chamfer_loss(preds, target, mode="permuted")
        tensor(0.5000)
        >>> map_chamfer_loss(preds, target)
        tensor(0.5000)
    """
    preds, target = float32_if_half(preds), float32_if_half(target)
    if mode not in ("chamfer", "permuted"):
        raise ValueError(f"`mode` must be 'chamfer' or 'permuted', got {mode!r}")
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"`reduction` must be 'mean', 'sum' or 'none', got {reduction!r}")
    if point_distance not in ("l2", "l1"):
        raise ValueError(f"`point_distance` must be 'l2' or 'l1', got {point_distance!r}")
    if target_lengths is None:
        target_lengths = torch.full(target.shape[:-2], target.shape[-2], dtype=torch.long, device=target.device)
    preds_lengths = torch.full(preds.shape[:-2], preds.shape[-2], dtype=torch.long, device=preds.device)
    check_polylines(preds, preds_lengths, "preds", check_values=validate_args)
    check_polylines(target, target_lengths, "target", check_values=validate_args)
    if preds.shape[:-2] != target.shape[:-2] or preds.shape[-1] != target.shape[-1]:
        raise ValueError(f"`preds` {tuple(preds.shape)} and `target` {tuple(target.shape)} must pair up (B, N, ., D)")
    valid = target_lengths > 0
    if mode == "chamfer":
        value = chamfer_distance(
            preds, torch.where(valid, preds_lengths, 0), target, target_lengths, validate_args=validate_args
        )
    else:
        num_points = preds.shape[-2]
        if target.shape[-2] != num_points or (validate_args and bool(((target_lengths != num_points) & valid).any())):
            raise ValueError("mode='permuted' needs GT with exactly as many points as the predictions (or length 0)")
        closed = (target[..., 0, :] == target[..., -1, :]).all(-1) & (num_points >= 3)
        table, applies = _orders(num_points, closed)
        ordered = target[..., table, :]  # (B, N, O, P, D)
        delta = preds.unsqueeze(-3) - ordered
        per_point = _safe_norm(delta) if point_distance == "l2" else delta.abs().sum(-1)
        per_order = per_point.mean(-1)  # (B, N, O)
        per_order = torch.where(applies, per_order, torch.full_like(per_order, torch.inf))
        value = per_order.amin(-1)
    value = torch.where(valid, value, torch.zeros_like(value))
    if reduction == "none":
        return value
    if reduction == "sum":
        return value.sum()
    return value.sum() / valid.sum().clamp_min(1)


class MapChamferLoss(nn.Module):
    """:func:`map_chamfer_loss` as a module.

    Args:
        mode: ``"chamfer"`` or ``"permuted"``.
        point_distance: ``"l2"`` or ``"l1"`` (``"permuted"`` only).
        reduction: ``"mean"``, ``"sum"`` or ``"none"``.
        validate_args: check the inputs' values (reads back from the device); ``False`` skips those checks.

    Examples:
        >>> from drivemetrics.vectormap import MapChamferLoss
        >>> import torch
        >>> loss = MapChamferLoss(mode="permuted")
        >>> ring = torch.tensor([[[[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 0.0]]]])
        >>> rotated = torch.tensor([[[[1.0, 0.0], [1.0, 1.0], [0.0, 0.0], [1.0, 0.0]]]])  # another start point
        >>> loss(rotated, ring)
        tensor(0.)
    """

    def __init__(
        self,
        mode: LossMode = "chamfer",
        point_distance: Literal["l2", "l1"] = "l2",
        reduction: Reduction = "mean",
        validate_args: bool = True,
    ) -> None:
        super().__init__()
        self.validate_args = bool(validate_args)
        self.mode: LossMode = mode
        self.point_distance: Literal["l2", "l1"] = point_distance
        self.reduction: Reduction = reduction

    def forward(self, preds: Tensor, target: Tensor, *, target_lengths: Tensor | None = None) -> Tensor:
        """The loss of ``preds (B, N, P, D)`` against ``target (B, N, Q, D)``."""
        return map_chamfer_loss(
            preds,
            target,
            target_lengths=target_lengths,
            mode=self.mode,
            point_distance=self.point_distance,
            reduction=self.reduction,
            validate_args=self.validate_args,
        )
