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
from collections.abc import Sequence

import torch
from torch import Tensor

__all__ = [
    "bounded_frechet_distance_pairs",
    "frechet_distance_matrix",
    "frechet_distance_pairs",
    "soft_frechet_distance_pairs",
]


def _check_polylines(points: Tensor, lengths: Tensor | None, name: str, check_values: bool = True) -> Tensor:
    if not isinstance(points, Tensor):
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


#: Point-pair distances precomputed at once by the hard kernel (larger batches are split).
_MAX_ELEMENTS = 1 << 24


def _frechet_dp(a: Tensor, b: Tensor, a_len: Tensor, b_len: Tensor, gamma: float | None) -> Tensor:
    """Anti-diagonal dynamic programme for K pairs: ``a`` (K, n, D), ``b`` (K, m, D) -> (K,)."""
    k, n, _ = a.shape
    m = b.shape[1]
    if gamma is None and k > 0:
        # hard kernel: all point distances of a chunk at once (exact per-pair norms, no matmul expansion)
        step = max(1, _MAX_ELEMENTS // (n * m * a.shape[-1]))
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
        >>> preds = torch.tensor([[[[0.0, 1.0], [1.0, 1.0]]]])  # (1, 1, 2, 2)
        >>> target = torch.tensor([[[[0.0, 0.0], [1.0, 0.0]], [[0.0, 5.0], [1.0, 5.0]]]])  # (1, 2, 2, 2)
        >>> frechet_distance_matrix(preds, None, target, None)
        tensor([[[1., 4.]]])
    """
    if not isinstance(preds, Tensor) or not isinstance(target, Tensor):
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


def bounded_frechet_distance_pairs(
    a: Tensor,
    b: Tensor,
    a_lengths: Tensor | None = None,
    b_lengths: Tensor | None = None,
    max_distance: float | Tensor | None = None,
    check_every: int = 8,
    band_widths: tuple[int, ...] = (2, 8, 24),
    *,
    validate_args: bool = True,
) -> Tensor:
    """:func:`frechet_distance_pairs` without gradient, faster, and exact only up to ``max_distance``.

    First the programme runs on narrow bands around each pair's proportional coupling (``band_widths``), in band
    coordinates; a band value is kept where it is proven exact (every cell just outside the band is at least the
    band value, so no coupling can leave the band below it; or the value equals the distance of the first or last
    points, which every coupling holds). Close lines sampled alike are decided there, at a few percent of the
    grid's cost; the other pairs get the whole programme on the valid cells of each anti-diagonal. With
    ``max_distance``, a pair is dropped as soon as it provably exceeds it: its start or end points, or one line's
    farthest point from the other's bounding box, are farther apart, or two consecutive anti-diagonals hold no cell
    ``<= max_distance`` (every monotone coupling crosses one of them); dropped pairs get ``inf``. Every distance
    ``<= max_distance`` is exact (equal to :func:`frechet_distance_pairs`, bit for bit); a larger one is exact or
    ``inf``, so matching with thresholds up to ``max_distance`` is unchanged.

    Args:
        a: ``(K, N, D)`` polylines (metres); ``a_lengths`` ``(K,)`` in ``[1, N]`` (default all ``N``).
        b: ``(K, M, D)``; ``b_lengths`` ``(K,)``.
        max_distance: bound (metres), one for all pairs or ``(K,)``; ``None``: every distance exact.
        check_every: anti-diagonals between two prunings of the batch.
        band_widths: half widths (points) of the bands tried first, around the proportional coupling of each pair;
            a band value is kept only where the cells just outside the band prove it exact (close lines with
            similar sampling need a narrow band), the other pairs go on to the next band and then to the whole
            programme. ``()``: the whole programme only. The result does not depend on it.
        validate_args: check the inputs' values (reads back from the device); ``False`` skips those checks.

    Returns:
        ``(K,)`` distances.

    >>> a = torch.tensor([[[0.0, 0.0], [1.0, 0.0], [2.0, 0.0]], [[0.0, 0.0], [1.0, 0.0], [2.0, 0.0]]])
    >>> b = torch.tensor([[[0.0, 1.0], [2.0, 1.0], [9.0, 9.0]], [[0.0, 5.0], [2.0, 5.0], [9.0, 9.0]]])
    >>> bounded_frechet_distance_pairs(a, b, b_lengths=torch.tensor([2, 2]), max_distance=2.0)
    tensor([1.4142,    inf])
    """
    if a.ndim != 3 or b.ndim != 3 or a.shape[0] != b.shape[0] or a.shape[-1] != b.shape[-1]:
        raise ValueError(f"`a` and `b` must be (K, N, D) and (K, M, D), got {tuple(a.shape)} and {tuple(b.shape)}")
    a_len = _check_polylines(a, a_lengths, "a", validate_args)
    b_len = _check_polylines(b, b_lengths, "b", validate_args)
    a = _zero_padding(a.detach(), a_len)
    b = _zero_padding(b.detach(), b_len)
    k, n, m = a.shape[0], a.shape[1], b.shape[1]
    result = torch.full((k,), torch.inf, dtype=a.dtype, device=a.device)
    if k == 0:
        return result
    alive = torch.arange(k, device=a.device)
    bound = None
    if max_distance is not None:
        bound = torch.as_tensor(max_distance, dtype=a.dtype, device=a.device).expand(k)
        start_gap = _norms(a[:, 0] - b[:, 0])  # the module's one point distance: the same bits as the cells
        end_gap = _norms(a[alive, a_len - 1] - b[alive, b_len - 1])
        alive = alive[torch.maximum(start_gap, end_gap) <= bound]
        if alive.numel():
            alive = alive[_box_lower_bound(a[alive], a_len[alive], b[alive], b_len[alive]) <= bound[alive]]
    # first a narrow band around the proportional coupling (exact where it proves itself), then a wider one, then
    # the full programme for the rest
    for half_width in band_widths:
        if alive.numel() == 0 or half_width < 1 or 2 * half_width + 1 >= min(n, m):
            break
        chunk = max(1, _MAX_ELEMENTS // (max(n, m) * (2 * half_width + 1) * 4))
        undecided = []
        for s in range(0, alive.numel(), chunk):
            part = alive[s : s + chunk]
            limit = None if bound is None else bound[part]
            values, decided = _band_frechet(a[part], b[part], a_len[part], b_len[part], half_width, limit)
            result[part[decided]] = values[decided]
            undecided.append(part[~decided])
        alive = torch.cat(undecided)
    step = max(1, _MAX_ELEMENTS // (n * m * a.shape[-1]))
    for s in range(0, alive.numel(), step):
        part = alive[s : s + step]
        full = _norms(a[part][:, :, None] - b[part][:, None])
        limit = None if bound is None else bound[part]
        result[part] = _banded_dp(full.reshape(part.numel(), n * m), n, m, a_len[part], b_len[part], limit, check_every)
    return result


def _norms(diff: Tensor) -> Tensor:
    """Euclidean norms over the last dimension, squares summed in coordinate order.

    The one point distance of this module (the hard programmes, the bands and the bounds all use it, so that every
    path gives the same bits); it differs from ``torch.cdist`` / scipy by an ulp at most.
    """
    return _norms_of(diff.unbind(-1))


def _norms_of(coordinates: Sequence[Tensor]) -> Tensor:
    """:func:`_norms` of differences given coordinate by coordinate (same shapes): the one summation rule."""
    total = coordinates[0] * coordinates[0]
    for diff in coordinates[1:]:
        total = total + diff * diff
    return total.sqrt()


def _band_frechet(
    a: Tensor, b: Tensor, a_len: Tensor, b_len: Tensor, half_width: int, bound: Tensor | None
) -> tuple[Tensor, Tensor]:
    """The programme restricted to a band around the proportional coupling, with a proof of exactness.

    Each pair is oriented so that ``a`` has at least as many points as ``b`` (the distance is symmetric); row ``i``
    of the band holds at most ``2 * half_width + 1`` columns around ``c(i) = floor(i (m - 1) / (n - 1))``
    (clipped to the grid). Band couplings are couplings, so the band value ``V`` bounds the distance from above.
    ``V`` is exact if every cell just outside the band is ``>= V`` (the band edges rise by at most one column per
    row, so a monotone path has to step on such a cell to leave the band), or if ``V`` equals the distance of the
    first or of the last points (every coupling holds both pairs). If the cells outside and ``V`` are all above
    ``bound``, so is the distance.

    Returns:
        ``(values (K,), decided (K,))``: where ``decided``, the value is exact, or ``inf`` when it exceeds ``bound``.
    """
    swap = b_len > a_len
    size = max(a.shape[1], b.shape[1])
    a = torch.nn.functional.pad(a, (0, 0, 0, size - a.shape[1]))
    b = torch.nn.functional.pad(b, (0, 0, 0, size - b.shape[1]))
    a, b = torch.where(swap[:, None, None], b, a), torch.where(swap[:, None, None], a, b)
    n, m = torch.where(swap, b_len, a_len), torch.where(swap, a_len, b_len)
    # pair-last layout: (points, K) per coordinate, so that every step of the programme reads contiguous rows
    a_t = a.permute(2, 1, 0).contiguous()  # (D, L, K)
    b_t = b.permute(2, 1, 0).contiguous()
    rows = torch.arange(size, device=a.device)[:, None]
    width = 2 * half_width + 1
    center = (rows * (m - 1)) // (n - 1).clamp(min=1)  # (L, K)
    high = torch.minimum(center + half_width, m - 1)
    low = torch.minimum((center - half_width).clamp(min=0), (high - width + 1).clamp(min=0))
    values = _band_programme(a_t, b_t, n, low, high, width)
    outside = torch.minimum(
        torch.where((low >= 1) & (rows < n), _row_distances(a_t, b_t, (low - 1).clamp(min=0)), torch.inf).amin(0),
        torch.where(
            (high <= m - 2) & (rows < n), _row_distances(a_t, b_t, (high + 1).clamp(max=size - 1)), torch.inf
        ).amin(0),
    )
    first_pair = _row_distances(a_t[:, :1], b_t, torch.zeros_like(m)[None])[0]
    last_pair = _row_distances(a_t.gather(1, (n - 1)[None, None].expand(a_t.shape[0], 1, -1)), b_t, (m - 1)[None])[0]
    decided = (outside >= values) | (values <= torch.maximum(first_pair, last_pair))
    if bound is not None:
        above = (outside > bound) & (values > bound)
        decided |= above
        values = torch.where(above | (values > bound), torch.inf, values)
    return values, decided


def _row_distances(a_t: Tensor, b_t: Tensor, cols: Tensor) -> Tensor:
    """``|a[i] - b[cols[i]]|`` of every pair, ``a_t`` / ``b_t`` ``(D, L, K)``, ``cols`` ``(R, K)`` -> ``(R, K)``
    (``a_t`` holds ``R`` rows)."""
    return _norms_of([a_t[axis, : cols.shape[0]] - b_t[axis].gather(0, cols) for axis in range(a_t.shape[0])])


def _band_programme(a_t: Tensor, b_t: Tensor, n: Tensor, low: Tensor, high: Tensor, width: int) -> Tensor:
    """The band value ``(K,)`` of each pair; cell ``(i, k)`` of the band is column ``low[i] + k``.

    The programme runs over the wavefronts ``t = 2 i + k``: a cell depends on cells of the three previous
    wavefronts only (``(i, k - 1)``; ``(i - 1, .)`` one or two back depending on whether ``low`` rises at ``i``),
    and every wavefront is the same strided slice of the band for all pairs.
    """
    size, k = low.shape
    offsets = torch.arange(width, device=low.device)[None, :, None]
    cols = low[:, None] + offsets  # (L, W, K)
    valid = (cols <= high[:, None]) & (torch.arange(size, device=low.device)[:, None, None] < n)
    index = cols.clamp(max=size - 1).reshape(size * width, k)
    dist = _norms_of(
        [a_t[axis][:, None] - b_t[axis].gather(0, index).reshape(size, width, k) for axis in range(a_t.shape[0])]
    )
    flat = torch.where(valid, dist, torch.inf).reshape(size * width, k)
    rises = torch.cat([torch.zeros_like(low[:1]), low[1:] - low[:-1]]) == 1  # (L, K)
    # F of the last four wavefronts by row (row -1 at slot 0, always +inf)
    buffers = [torch.full((size + 2, k), torch.inf, dtype=a_t.dtype, device=a_t.device) for _ in range(4)]
    last_row = n - 1
    target = 2 * last_row + (high.gather(0, last_row[None])[0] - low.gather(0, last_row[None])[0])
    values = torch.full((k,), torch.inf, dtype=a_t.dtype, device=a_t.device)
    for t in range(int(target.max()) + 1 if k else 0):
        first, last = max(0, (t - width + 2) // 2), min(size - 1, t // 2)  # rows with 0 <= t - 2 i < width
        cur, p1, p2, p3 = (buffers[(t - j) % 4] for j in range(4))
        d = flat[first * (width - 2) + t : last * (width - 2) + t + 1 : width - 2]
        if t == 0:
            current = d
        else:
            rise = rises[first : last + 1]
            up = torch.where(rise, p1[first : last + 1], p2[first : last + 1])
            diag = torch.where(rise, p2[first : last + 1], p3[first : last + 1])
            current = torch.maximum(d, torch.minimum(torch.minimum(up, p1[first + 1 : last + 2]), diag))
        cur[first + 1 : last + 2] = current
        cur[first] = torch.inf  # guards: the rows next to the wavefront read +inf, not an older wavefront
        cur[last + 2] = torch.inf
        done = target == t
        if bool(done.any()):
            values = torch.where(done, cur.gather(0, (last_row + 1)[None])[0], values)
    return values


def _box_lower_bound(a: Tensor, a_len: Tensor, b: Tensor, b_len: Tensor) -> Tensor:
    """``(K,)`` lower bound of the discrete Frechet distance: the farthest point of either line from the other's
    bounding box (every point is coupled with some point of the other line, which lies in its box)."""
    out = []
    for p, p_len, q, q_len in ((a, a_len, b, b_len), (b, b_len, a, a_len)):
        valid = torch.arange(q.shape[1], device=q.device) < q_len[:, None]
        low = torch.where(valid[..., None], q, torch.inf).amin(1)
        high = torch.where(valid[..., None], q, -torch.inf).amax(1)
        gap = (low[:, None] - p).clamp(min=0) + (p - high[:, None]).clamp(min=0)  # per coordinate <= |p - q_j|
        dist = _norms(gap)  # the cells' formula: a rounding never lifts the bound above a cell's distance
        own = torch.arange(p.shape[1], device=p.device) < p_len[:, None]
        out.append(torch.where(own, dist, 0.0).amax(1))
    return torch.maximum(out[0], out[1])


def _banded_dp(
    flat: Tensor, n: int, m: int, a_len: Tensor, b_len: Tensor, bound: Tensor | None, check_every: int
) -> Tensor:
    """The hard programme on the valid band of each anti-diagonal; ``flat`` (K, n * m) point distances."""
    k = flat.shape[0]
    device = flat.device
    result = torch.full((k,), torch.inf, dtype=flat.dtype, device=device)
    ids = torch.arange(k, device=device)  # rows of ``flat`` still in the programme
    target = a_len + b_len - 2  # the anti-diagonal holding F[a_len - 1, b_len - 1]
    # three rotating anti-diagonal buffers; row i lives in column i + 1, column 0 is the +inf border; cells never
    # written stay +inf, and stale cells of older diagonals are never read
    buffers = [torch.full((k, n + 1), torch.inf, dtype=flat.dtype, device=device) for _ in range(3)]
    for diag in range(n + m - 1):
        lo, hi = max(0, diag - m + 1), min(n - 1, diag)
        cells = torch.arange(lo, hi + 1, device=device) * (m - 1) + diag  # flat index of (i, diag - i)
        dist = flat[ids[:, None], cells[None, :]]
        current, prev1, prev2 = buffers[diag % 3], buffers[(diag - 1) % 3], buffers[(diag - 2) % 3]
        if diag == 0:
            current[:, 1:2] = dist
        else:
            up_left = torch.minimum(prev1[:, lo : hi + 1], prev1[:, lo + 1 : hi + 2])
            current[:, lo + 1 : hi + 2] = torch.maximum(dist, torch.minimum(up_left, prev2[:, lo : hi + 1]))
        done = target[ids] == diag
        if bool(done.any()):
            rows = done.nonzero()[:, 0]
            result[ids[rows]] = current[rows, a_len[ids[rows]]]
        if diag % check_every == check_every - 1:
            keep = target[ids] > diag
            if bound is not None:
                prev_lo, prev_hi = max(0, diag - m), min(n - 1, diag - 1)
                low = torch.minimum(current[:, lo + 1 : hi + 2].amin(1), prev1[:, prev_lo + 1 : prev_hi + 2].amin(1))
                keep &= low <= bound[ids]
            if not bool(keep.all()):
                index = keep.nonzero()[:, 0]
                ids = ids[index]
                buffers = [buf[index] for buf in buffers]
                if ids.numel() == 0:
                    break
    return result
