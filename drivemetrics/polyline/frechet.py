"""Discrete Frechet distances between polylines, batched over all pairs, and their soft (log-sum-exp) variant.

The discrete Frechet distance of two point sequences ``a`` (``n`` points) and ``b`` (``m`` points) is the
smallest, over all monotone couplings of their indices, of the largest point-to-point distance along the
coupling (Eiter and Mannila, 1994). It is the value ``F[n - 1, m - 1]`` of the dynamic programme

``F[i, j] = max(d(a_i, b_j), min(F[i - 1, j], F[i - 1, j - 1], F[i, j - 1]))``.

Every cell depends only on cells of the previous two anti-diagonals (``i + j`` constant), so the kernels here
run one step per anti-diagonal (``n + m - 1`` steps) and compute each step for every pair of a batch at once, on
the inputs' device; memory is ``O(pairs x n)``, never ``O(pairs x n x m)``. Polylines are padded to a common
number of points and carry their true lengths; padding never reaches a result, because a cell only depends on
cells with smaller indices.

The soft variant replaces ``min`` by ``-gamma * logsumexp(-x / gamma)`` and ``max`` by
``gamma * logsumexp(x / gamma)``; it is smooth everywhere and tends to the discrete Frechet distance as
``gamma -> 0`` (the error is at most ``gamma * log(3)`` per min and ``gamma * log(2)`` per max along the path).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from drivemetrics._internal import arrays
from drivemetrics.polyline.bounded_frechet import MAX_ELEMENTS, bounded_frechet_distance_pairs
from drivemetrics.polyline.bounded_frechet import norms as _norms

__all__ = [
    "bounded_frechet_distance_pairs",
    "frechet_distance_matrix",
    "frechet_distance_pairs",
    "soft_frechet_distance_pairs",
]


def _check_polylines(points: Tensor, lengths: Tensor | None, name: str, check_values: bool = True) -> Tensor:
    if not arrays.is_tensor(points):
        raise TypeError(f"`{name}` must be a torch.Tensor, got {type(points).__name__}")
    if points.ndim < 2:
        raise ValueError(f"`{name}` must have shape (..., N, D), got {tuple(points.shape)}")
    if points.shape[-2] < 1:
        raise ValueError(f"`{name}` must have at least one point per polyline, got shape {tuple(points.shape)}")
    size = points.shape[-2]
    if lengths is None:
        return torch.full(points.shape[:-2], size, dtype=torch.long, device=points.device)
    lengths = torch.as_tensor(lengths, device=points.device).long()
    if lengths.shape != points.shape[:-2]:
        raise ValueError(
            f"`{name}_lengths` must have shape {tuple(points.shape[:-2])} (one length per polyline), "
            f"got {tuple(lengths.shape)}"
        )
    if check_values and lengths.numel() and (int(lengths.min()) < 1 or int(lengths.max()) > size):
        raise ValueError(f"`{name}_lengths` must lie in [1, {size}] (the padded number of points)")
    return lengths


def _zero_padding(points: Tensor, lengths: Tensor) -> Tensor:
    """Padding points set to 0, so that no NaN or inf in them reaches a gradient."""
    valid = torch.arange(points.shape[-2], device=points.device) < lengths[..., None]
    return torch.where(valid[..., None], points, torch.zeros((), dtype=points.dtype, device=points.device))


def _frechet_dp(a: Tensor, b: Tensor, a_len: Tensor, b_len: Tensor, gamma: float | None) -> Tensor:
    """Anti-diagonal dynamic programme for K pairs: ``a`` (K, n, D), ``b`` (K, m, D) -> (K,)."""
    k, n, _ = a.shape
    m = b.shape[1]
    if gamma is None and k > 0:
        # hard kernel: all point distances of a chunk at once (exact per-pair norms, no matmul expansion)
        step = max(1, MAX_ELEMENTS // (n * m * a.shape[-1]))
        if k > step:
            return torch.cat(
                [
                    _frechet_dp(a[s : s + step], b[s : s + step], a_len[s : s + step], b_len[s : s + step], None)
                    for s in range(0, k, step)
                ]
            )
        return _frechet_dp_from_distances(_norms(a[:, :, None] - b[:, None]), a_len, b_len)
    m = b.shape[1]
    if k == 0:
        return a.new_zeros(0)
    rows = torch.arange(n, device=a.device)
    inf = torch.tensor(float("inf"), dtype=a.dtype, device=a.device)
    # previous two anti-diagonals, indexed by the row i of each cell (cells outside the grid hold +inf)
    prev1 = torch.full((k, n), float("inf"), dtype=a.dtype, device=a.device)
    prev2 = prev1
    target_step = a_len + b_len - 2  # the anti-diagonal holding F[a_len - 1, b_len - 1]
    result = a.new_zeros(k)
    inf_col = inf.expand(k, 1)
    for step in range(n + m - 1):
        cols = step - rows
        inside = (cols >= 0) & (cols < m)
        b_points = b[:, cols.clamp(0, m - 1)]  # (K, n, D): b_{step - i} for every row i
        diff = a - b_points
        dist = torch.sqrt((diff * diff).sum(-1) + (0.0 if gamma is None else 1e-12))
        if step == 0:
            current = torch.where(inside, dist, inf)
        else:
            up = torch.cat([inf_col, prev1[:, :-1]], dim=1)  # F[i - 1, j]
            left = prev1  # F[i, j - 1]
            diag = torch.cat([inf_col, prev2[:, :-1]], dim=1)  # F[i - 1, j - 1]
            if gamma is None:
                best = torch.minimum(torch.minimum(up, left), diag)
                current = torch.maximum(dist, best)
            else:
                stacked = torch.stack([up, left, diag])
                best = -gamma * torch.logsumexp(-stacked / gamma, dim=0)
                # keep +inf out of the smooth max so that outside cells stay +inf without NaN gradients
                finite_best = torch.where(torch.isfinite(best), best, dist)
                smooth = gamma * torch.logaddexp(dist / gamma, finite_best / gamma)
                current = torch.where(torch.isfinite(best), smooth, dist)
            current = torch.where(inside, current, inf)
        picked = current.gather(1, (a_len - 1).clamp(min=0)[:, None])[:, 0]
        result = torch.where(target_step == step, picked, result)
        prev2, prev1 = prev1, current
    return result


def _frechet_dp_from_distances(full: Tensor, a_len: Tensor, b_len: Tensor) -> Tensor:
    """The hard programme on precomputed point distances ``full`` (K, n, m)."""
    k, n, m = full.shape
    rows = torch.arange(n, device=full.device)
    inf = torch.tensor(float("inf"), dtype=full.dtype, device=full.device)
    inf_col = inf.expand(k, 1)
    prev1 = torch.full((k, n), float("inf"), dtype=full.dtype, device=full.device)
    prev2 = prev1
    target_step = a_len + b_len - 2
    last_row = (a_len - 1).clamp(min=0)[:, None]
    result = full.new_zeros(k)
    flat = full.reshape(k, n * m)
    for step in range(n + m - 1):
        cols = step - rows
        inside = (cols >= 0) & (cols < m)
        dist = flat[:, rows * m + cols.clamp(0, m - 1)]
        if step == 0:
            current = torch.where(inside, dist, inf)
        else:
            up = torch.cat([inf_col, prev1[:, :-1]], dim=1)
            diag = torch.cat([inf_col, prev2[:, :-1]], dim=1)
            current = torch.where(inside, torch.maximum(dist, torch.minimum(torch.minimum(up, prev1), diag)), inf)
        result = torch.where(target_step == step, current.gather(1, last_row)[:, 0], result)
        prev2, prev1 = prev1, current
    return result


def _pairs(
    a: Tensor, b: Tensor, a_lengths: Tensor | None, b_lengths: Tensor | None, gamma: float | None, validate_args: bool
) -> Tensor:
    a_len = _check_polylines(a, a_lengths, "a", validate_args)
    b_len = _check_polylines(b, b_lengths, "b", validate_args)
    if a.shape[:-2] != b.shape[:-2] or a.shape[-1] != b.shape[-1]:
        raise ValueError(
            f"`a` and `b` must have shapes (..., N, D) and (..., M, D) with the same leading dimensions and D, "
            f"got {tuple(a.shape)} and {tuple(b.shape)}"
        )
    lead = a.shape[:-2]
    a = _zero_padding(a, a_len).reshape(-1, *a.shape[-2:])
    b = _zero_padding(b, b_len).reshape(-1, *b.shape[-2:])
    out = _frechet_dp(a, b, a_len.reshape(-1), b_len.reshape(-1), gamma)
    return out.reshape(lead)


def frechet_distance_pairs(
    a: Tensor,
    b: Tensor,
    a_lengths: Tensor | None = None,
    b_lengths: Tensor | None = None,
    *,
    validate_args: bool = True,
) -> Tensor:
    """Discrete Frechet distance of each pair ``(a[k], b[k])`` of padded polylines.

    Args:
        a: polylines, shape ``(..., N, D)`` (any unit; the result has the same unit, e.g. metres).
        b: polylines, shape ``(..., M, D)``, same leading dimensions and ``D`` as ``a``.
        a_lengths: number of valid points of each polyline of ``a``, shape ``(...)``, values in ``[1, N]``;
            ``None``: all ``N`` points. Points past a length are ignored.
        b_lengths: the same for ``b``.
        validate_args: check the inputs' values (reads back from the device); ``False`` skips those checks.

    Returns:
        Distances, shape ``(...)``, in ``a``'s dtype; differentiable almost everywhere (a subgradient).

    Examples:
        >>> import torch
        >>> from drivemetrics.polyline import frechet_distance_pairs
        >>> a = torch.tensor([[[0.0, 0.0], [1.0, 0.0], [2.0, 0.0]]])
        >>> b = torch.tensor([[[0.0, 1.0], [2.0, 1.0], [9.0, 9.0]]])
        >>> frechet_distance_pairs(a, b, b_lengths=torch.tensor([2]))
        tensor([1.4142])
    """
    return _pairs(a, b, a_lengths, b_lengths, None, validate_args)


def soft_frechet_distance_pairs(
    a: Tensor,
    b: Tensor,
    a_lengths: Tensor | None = None,
    b_lengths: Tensor | None = None,
    *,
    gamma: float = 0.1,
    validate_args: bool = True,
) -> Tensor:
    """Soft discrete Frechet distance (log-sum-exp min and max with temperature ``gamma``), smooth in the points.

    Same arguments and shapes as :func:`frechet_distance_pairs`; ``gamma`` (> 0, in the points' unit) sets the
    smoothing: the result differs from the discrete Frechet distance by at most
    ``gamma * (N + M) * log(3)``, and tends to it as ``gamma -> 0``.

    Examples:
        >>> import torch
        >>> from drivemetrics.polyline import soft_frechet_distance_pairs
        >>> a = torch.tensor([[[0.0, 0.0], [1.0, 0.0]]])
        >>> b = torch.tensor([[[0.0, 1.0], [1.0, 1.0]]])
        >>> round(float(soft_frechet_distance_pairs(a, b, gamma=0.01)), 2)
        1.01
    """
    if not gamma > 0:
        raise ValueError(f"`gamma` must be > 0, got {gamma}")
    return _pairs(a, b, a_lengths, b_lengths, float(gamma), validate_args)


def frechet_distance_matrix(
    preds: Tensor,
    preds_lengths: Tensor | None,
    target: Tensor,
    target_lengths: Tensor | None,
    *,
    chunk_pairs: int = 65536,
    validate_args: bool = True,
) -> Tensor:
    """Discrete Frechet distances between every prediction and every target polyline of each frame.

    Same call signature and layout as :func:`drivemetrics.polyline.chamfer.chamfer_distance_matrix`.

    Args:
        preds: ``(..., Na, Pa, D)`` predicted polylines (metres), padded; leading dims are batch dims (frames).
        preds_lengths: ``(..., Na)`` valid point counts (0 = absent line); ``None``: all ``Pa``.
        target: ``(..., Nb, Pb, D)`` target polylines, same leading dims.
        target_lengths: ``(..., Nb)``; ``None``: all ``Pb``.
        chunk_pairs: pairs computed at once (bounds memory to about ``(chunk_pairs, Pb)`` values).
        validate_args: check the inputs' values (reads back from the device); ``False`` skips those checks.

    Returns:
        ``(..., Na, Nb)`` distances (metres), ``inf`` for pairs with an absent line (the devkit layout, GT rows,
        is its transpose).

    Examples:
        >>> import torch
        >>> from drivemetrics.polyline import frechet_distance_matrix
        >>> preds = torch.tensor([[[[0.0, 1.0], [1.0, 1.0]]]])  # (1, 1, 2, 2)
        >>> target = torch.tensor([[[[0.0, 0.0], [1.0, 0.0]], [[0.0, 5.0], [1.0, 5.0]]]])  # (1, 2, 2, 2)
        >>> frechet_distance_matrix(preds, None, target, None)
        tensor([[[1., 4.]]])
    """
    if not arrays.is_tensor(preds) or not arrays.is_tensor(target):
        raise TypeError("`preds` and `target` must be torch.Tensors")
    if preds.ndim < 3 or target.ndim != preds.ndim or preds.shape[:-3] != target.shape[:-3]:
        raise ValueError(
            f"`preds` and `target` must have shapes (..., Na, Pa, D) and (..., Nb, Pb, D) with the same leading "
            f"dims, got {tuple(preds.shape)} and {tuple(target.shape)}"
        )
    if preds.shape[-1] != target.shape[-1]:
        raise ValueError(f"`preds` and `target` must have the same D, got {preds.shape[-1]} and {target.shape[-1]}")
    lead = preds.shape[:-3]
    num_a, pa, dim = preds.shape[-3:]
    num_b, pb = target.shape[-3], target.shape[-2]
    a_len = _lengths(preds, preds_lengths, "preds", validate_args)
    b_len = _lengths(target, target_lengths, "target", validate_args)
    frames = math.prod(lead)
    a = _zero_padding(preds, a_len.clamp(min=1)).reshape(frames, num_a, pa, dim)
    b = _zero_padding(target, b_len.clamp(min=1)).reshape(frames, num_b, pb, dim)
    a = a[:, :, None].expand(frames, num_a, num_b, pa, dim).reshape(-1, pa, dim)
    b = b[:, None].expand(frames, num_a, num_b, pb, dim).reshape(-1, pb, dim)
    a_l = a_len.reshape(frames, num_a)[:, :, None].expand(frames, num_a, num_b).reshape(-1)
    b_l = b_len.reshape(frames, num_b)[:, None].expand(frames, num_a, num_b).reshape(-1)
    step = max(1, chunk_pairs)
    # the target in the rows of the programme (its length bounds the memory)
    out = [
        _frechet_dp(
            b[s : s + step], a[s : s + step], b_l[s : s + step].clamp(min=1), a_l[s : s + step].clamp(min=1), None
        )
        for s in range(0, a.shape[0], step)
    ]
    flat = torch.cat(out) if out else preds.new_zeros(0)
    flat = torch.where((a_l == 0) | (b_l == 0), torch.full_like(flat, torch.inf), flat)
    return flat.reshape(*lead, num_a, num_b)


def _lengths(points: Tensor, lengths: Tensor | None, name: str, check_values: bool = True) -> Tensor:
    """Lengths as int64 on the points' device, 0 allowed (absent line), checked against the padded size."""
    size = points.shape[-2]
    if lengths is None:
        return torch.full(points.shape[:-2], size, dtype=torch.long, device=points.device)
    lengths = torch.as_tensor(lengths, device=points.device).long()
    if lengths.shape != points.shape[:-2]:
        raise ValueError(f"`{name}_lengths` must have shape {tuple(points.shape[:-2])}, got {tuple(lengths.shape)}")
    if check_values and lengths.numel() and (int(lengths.min()) < 0 or int(lengths.max()) > size):
        raise ValueError(f"`{name}_lengths` must lie in [0, {size}] (the padded number of points)")
    return lengths
