"""Input checks shared by every domain: each raises ``ValueError`` / ``TypeError`` naming the argument."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from drivemetrics._internal import arrays

__all__ = ["check_binary", "check_finite", "check_probability", "check_same_shape", "check_shape", "check_tensor"]


def check_tensor(x: object, name: str) -> Tensor:
    """Raise ``TypeError`` unless ``x`` is a tensor; return it."""
    if not arrays.is_tensor(x):
        raise TypeError(f"`{name}` must be a torch.Tensor, got {type(x).__name__}")
    return x


def check_shape(x: Tensor, name: str, shape: Sequence[int | str | None]) -> None:
    """Check ``x.shape`` against a spec: ints must match, ``None`` / strings (symbolic names) match anything.

    Example: ``check_shape(H, "homography", ("B", 3, 3))``.
    """
    check_tensor(x, name)
    spec = tuple(shape)
    if x.ndim != len(spec) or any(isinstance(s, int) and s != d for s, d in zip(spec, x.shape, strict=True)):
        want = " x ".join(str(s) for s in spec)
        raise ValueError(f"`{name}` must have shape {want}, got {tuple(x.shape)}")


def check_same_shape(a: Tensor, a_name: str, b: Tensor, b_name: str) -> None:
    """Raise ``ValueError`` unless ``a`` and ``b`` have the same shape."""
    if a.shape != b.shape:
        raise ValueError(
            f"`{a_name}` and `{b_name}` must have the same shape, got {tuple(a.shape)} and {tuple(b.shape)}"
        )


def check_finite(x: Tensor, name: str) -> None:
    """Raise ``ValueError`` if a floating tensor holds NaN or +-inf."""
    if x.is_floating_point() and not bool(torch.isfinite(x).all()):
        raise ValueError(f"`{name}` contains NaN or infinite values")


def check_probability(x: Tensor, name: str) -> None:
    """Raise ``ValueError`` unless a floating tensor is finite and inside [0, 1].

    Integer tensors are not checked here (``uint8`` confidence maps use 0..255 by convention).
    """
    check_finite(x, name)
    if x.is_floating_point() and x.numel() and (bool((x < 0).any()) or bool((x > 1).any())):
        raise ValueError(
            f"`{name}` must hold probabilities in [0, 1] (got min {x.min().item():.4g}, max {x.max().item():.4g}); "
            "pass `from_logits=True` for raw scores"
        )


def check_binary(x: Tensor, name: str) -> None:
    """Raise ``ValueError`` unless ``x`` holds only 0 and 1 (bool or numeric)."""
    if x.dtype == torch.bool:
        return
    if not bool(((x == 0) | (x == 1)).all()):
        raise ValueError(f"`{name}` must be binary (0 / 1 or bool)")
