"""Ragged sets of polylines as padded tensors: ``points (..., N, P, D)`` plus ``lengths (..., N)``.

A frame holds ``N`` polylines of up to ``P`` points in ``D`` = 2 or 3 coordinates (metres). ``lengths[..., n]`` is
the number of valid points of polyline ``n``; points at index ``>= lengths`` are padding (any value, never read),
and a polyline with ``lengths == 0`` is an absent (padding) polyline. Every kernel of :mod:`drivemetrics.polyline`
takes this pair.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from drivemetrics._internal import arrays
from drivemetrics.polyline.pairs import drop_closing_point

__all__ = ["check_polylines", "drop_closing_point", "pad_polylines", "point_mask", "unpad_polylines"]


def check_polylines(points: Tensor, lengths: Tensor, name: str = "points", *, check_values: bool = True) -> None:
    """Raise a one-line ``ValueError`` / ``TypeError`` when ``(points, lengths)`` is not a padded polyline set.

    Types and shapes are always checked; the lengths' range (a read back from the device) only with ``check_values``.

    Examples:
        >>> from drivemetrics.polyline import check_polylines
        >>> import torch
        >>> check_polylines(torch.zeros(2, 4, 2), torch.tensor([4, 2]))
        >>> check_polylines(torch.zeros(2, 4, 2), torch.tensor([5, 2]))
        Traceback (most recent call last):
        ...
        ValueError: `points_lengths` must lie in [0, 4] (the padded point count), got values in [2, 5]
    """
    if not arrays.is_tensor(points) or not points.is_floating_point():
        raise TypeError(f"`{name}` must be a floating-point tensor (..., N, P, D)")
    if points.ndim < 3 or points.shape[-1] not in (2, 3):
        raise ValueError(f"`{name}` must have shape (..., N, P, D) with D = 2 or 3, got {tuple(points.shape)}")
    if not arrays.is_tensor(lengths) or lengths.is_floating_point() or lengths.is_complex():
        raise TypeError(f"`{name}_lengths` must be an integer tensor (..., N)")
    if lengths.shape != points.shape[:-2]:
        raise ValueError(f"`{name}_lengths` must have shape {tuple(points.shape[:-2])}, got {tuple(lengths.shape)}")
    if check_values and lengths.numel() and (int(lengths.min()) < 0 or int(lengths.max()) > points.shape[-2]):
        raise ValueError(
            f"`{name}_lengths` must lie in [0, {points.shape[-2]}] (the padded point count), "
            f"got values in [{int(lengths.min())}, {int(lengths.max())}]"
        )


def point_mask(lengths: Tensor, num_points: int) -> Tensor:
    """``(..., N, P)`` bool: which padded points are valid.

    Examples:
        >>> from drivemetrics.polyline import point_mask
        >>> import torch
        >>> point_mask(torch.tensor([3, 1]), 4)
        tensor([[ True,  True,  True, False],
                [ True, False, False, False]])
    """
    return torch.arange(num_points, device=lengths.device) < lengths.unsqueeze(-1)


def pad_polylines(
    polylines: Sequence[Tensor], num_points: int | None = None, dtype: torch.dtype | None = None
) -> tuple[Tensor, Tensor]:
    """Stack a list of ``(P_i, D)`` polylines into ``points (N, P, D)`` (zero padding) and ``lengths (N,)``.

    Args:
        polylines: ``N`` tensors of shape ``(P_i, D)``, all with the same ``D``.
        num_points: padded point count ``P`` (default: the longest polyline).
        dtype: dtype of ``points`` (default: the promoted dtype of the inputs, at least float32).

    Examples:
        >>> from drivemetrics.polyline import pad_polylines
        >>> import torch
        >>> points, lengths = pad_polylines([torch.tensor([[0.0, 0.0], [1.0, 0.0]]), torch.tensor([[2.0, 2.0]])])
        >>> points.shape, lengths
        (torch.Size([2, 2, 2]), tensor([2, 1]))
    """
    if len(polylines) == 0:
        return torch.zeros(0, num_points or 0, 2, dtype=dtype or torch.float32), torch.zeros(0, dtype=torch.long)
    dims = {int(p.shape[-1]) for p in polylines}
    if any(p.ndim != 2 for p in polylines) or len(dims) != 1:
        raise ValueError("`polylines` must be tensors of shape (P_i, D) with one D for all")
    lengths = torch.tensor([int(p.shape[0]) for p in polylines], dtype=torch.long, device=polylines[0].device)
    size = int(lengths.max()) if num_points is None else num_points
    if int(lengths.max()) > size:
        raise ValueError(f"a polyline has {int(lengths.max())} points, more than `num_points` = {size}")
    if dtype is None:
        dtype = torch.promote_types(polylines[0].dtype, torch.float32)
        for p in polylines[1:]:
            dtype = torch.promote_types(dtype, p.dtype)
    points = torch.zeros(len(polylines), size, dims.pop(), dtype=dtype, device=polylines[0].device)
    for index, polyline in enumerate(polylines):
        points[index, : polyline.shape[0]] = polyline.to(dtype)
    return points, lengths


def unpad_polylines(points: Tensor, lengths: Tensor) -> list[Tensor]:
    """The inverse of :func:`pad_polylines` for ``points (N, P, D)``: a list of ``(lengths[n], D)`` tensors.

    Examples:
        >>> from drivemetrics.polyline import unpad_polylines
        >>> import torch
        >>> [p.shape for p in unpad_polylines(torch.zeros(2, 3, 2), torch.tensor([3, 1]))]
        [torch.Size([3, 2]), torch.Size([1, 2])]
    """
    return [points[n, : int(length)] for n, length in enumerate(lengths.tolist())]
