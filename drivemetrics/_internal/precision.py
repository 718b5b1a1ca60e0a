"""Half precision in the losses: one rule, one helper.

A loss given ``float16`` / ``bfloat16`` inputs (a mixed-precision training step) computes in ``float32`` and returns
a ``float32`` loss, as autocast runs ``torch.nn`` losses; the gradient reaching the input has the input's dtype.
Sums over an image overflow ``float16`` (largest value 65504), ``cdist`` and the Hungarian assignment have no half
kernels, and the vehicle rollouts of PSLD lose centimetres in 8 mantissa bits: upcasting once at the loss's entry is
the one way that is right for all of them.
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["HALF_DTYPES", "float32_if_half"]

#: The floating dtypes a loss computes in ``float32`` instead.
HALF_DTYPES = (torch.float16, torch.bfloat16)


def float32_if_half(x: Tensor) -> Tensor:
    """``x`` as ``float32`` when it is ``float16`` / ``bfloat16`` (differentiable), else ``x`` itself.

    Examples:
        >>> import torch
        >>> from drivemetrics._internal.precision import float32_if_half
        >>> float32_if_half(torch.ones(2, dtype=torch.bfloat16)).dtype, float32_if_half(torch.ones(2)).dtype
        (torch.float32, torch.float32)
    """
    return x.float() if getattr(x, "dtype", None) in HALF_DTYPES else x  # a non-tensor: the caller's check names it
