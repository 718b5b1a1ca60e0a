"""The bounded, banded discrete Frechet distance of polyline pairs, for numpy arrays and torch tensors alike.

:func:`bounded_frechet_distance_pairs` is written once with :mod:`drivemetrics._internal.arrays`: given numpy
arrays it computes with numpy and never imports torch (the ``openlanev2-eval`` command's CPU path), given tensors it
computes with torch on their device (the Metric classes, the GPU); both give the same bits. The point distance of
this module (:func:`norms`: squares summed in coordinate order, correctly rounded root) is also the one of the
other Frechet kernels in :mod:`drivemetrics.polyline.frechet`, so every path agrees bit for bit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from drivemetrics._internal import arrays as xp

__all__ = ["MAX_ELEMENTS", "bounded_frechet_distance_pairs", "norms", "norms_of"]

Array = Any  # numpy.ndarray or torch.Tensor

#: Point-pair distances precomputed at once by the hard programmes (larger batches are split).
MAX_ELEMENTS = 1 << 24
_INF = math.inf


def norms(diff: Array) -> Array:
    """Euclidean norms over the last dimension, squares summed in coordinate order, correctly rounded root.

    The one point distance of the Frechet kernels (the hard programmes, the bands and the bounds all use it, so that
    every path gives the same bits); it differs from ``torch.cdist`` by an ulp at most.
    """
    return norms_of([diff[..., axis] for axis in range(diff.shape[-1])])


def norms_of(coordinates: Sequence[Array]) -> Array:
    """:func:`norms` of differences given coordinate by coordinate (same shapes): the one summation rule."""
    total = coordinates[0] * coordinates[0]
    for diff in coordinates[1:]:
        total = total + diff * diff
    return xp.sqrt(total)


def _check_pairs(points: Array, lengths: Array | None, name: str, check_values: bool) -> Array:
    """The lengths ``(K,)`` of ``points`` ``(K, N, D)`` as int64 (all ``N`` when ``None``), checked."""
    if not xp.is_array(points):
        raise TypeError(f"`{name}` must be a torch.Tensor or a numpy array, got {type(points).__name__}")
    if points.shape[-2] < 1:
        raise ValueError(f"`{name}` must have at least one point per polyline, got shape {tuple(points.shape)}")
    size = points.shape[-2]
    if lengths is None:
        return xp.full(points.shape[:-2], size, like=points, dtype="int64")
    lengths = xp.as_index(lengths, like=points)
    if tuple(lengths.shape) != tuple(points.shape[:-2]):
        raise ValueError(
            f"`{name}_lengths` must have shape {tuple(points.shape[:-2])} (one length per polyline), "
            f"got {tuple(lengths.shape)}"
        )
    if check_values and len(lengths) and (int(lengths.min()) < 1 or int(lengths.max()) > size):
        raise ValueError(f"`{name}_lengths` must lie in [1, {size}] (the padded number of points)")
    return lengths


def _zero_padding(points: Array, lengths: Array) -> Array:
    """Padding points set to 0 (no NaN or inf in them reaches a bound)."""
    valid = xp.arange(points.shape[-2], like=lengths) < lengths[..., None]
    return xp.where(valid[..., None], points, 0.0)


def bounded_frechet_distance_pairs(
    a: Array,
    b: Array,
    a_lengths: Array | None = None,
    b_lengths: Array | None = None,
    *,
    max_distance: float | Array | None = None,
    check_every: int = 8,
    band_widths: tuple[int, ...] = (2, 8, 24),
    validate_args: bool = True,
) -> Array:
    """:func:`~drivemetrics.polyline.frechet.frechet_distance_pairs` without gradient, faster, and exact only up to
    ``max_distance``; numpy arrays in, numpy out (no torch), tensors in, tensors out (their device).

    First the programme runs on narrow bands around each pair's proportional coupling (``band_widths``), in band
    coordinates; a band value is kept where it is proven exact (every cell just outside the band is at least the
    band value, so no coupling can leave the band below it; or the value equals the distance of the first or last
    points, which every coupling holds). Close lines sampled alike are decided there, at a few percent of the
    grid's cost; the other pairs get the whole programme on the valid cells of each anti-diagonal. With
    ``max_distance``, a pair is dropped as soon as it provably exceeds it: its start or end points, or one line's
    farthest point from the other's bounding box, are farther apart, or two consecutive anti-diagonals hold no cell
    ``<= max_distance`` (every monotone coupling crosses one of them); dropped pairs get ``inf``. Every distance
    ``<= max_distance`` is exact (equal to :func:`~drivemetrics.polyline.frechet.frechet_distance_pairs`, bit for
    bit); a larger one is exact or ``inf``, so matching with thresholds up to ``max_distance`` is unchanged.

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

    >>> import torch
    >>> from drivemetrics.polyline import bounded_frechet_distance_pairs
    >>> a = torch.tensor([[[0.0, 0.0], [1.0, 0.0], [2.0, 0.0]], [[0.0, 0.0], [1.0, 0.0], [2.0, 0.0]]])
    >>> b = torch.tensor([[[0.0, 1.0], [2.0, 1.0], [9.0, 9.0]], [[0.0, 5.0], [2.0, 5.0], [9.0, 9.0]]])
    >>> bounded_frechet_distance_pairs(a, b, b_lengths=torch.tensor([2, 2]), max_distance=2.0)
    tensor([1.4142,    inf])
    >>> bounded_frechet_distance_pairs(a.numpy(), b.numpy(), b_lengths=[2, 2], max_distance=2.0)
    array([1.4142135,       inf], dtype=float32)
    """
    if a.ndim != 3 or b.ndim != 3 or a.shape[0] != b.shape[0] or a.shape[-1] != b.shape[-1]:
        raise ValueError(f"`a` and `b` must be (K, N, D) and (K, M, D), got {tuple(a.shape)} and {tuple(b.shape)}")
    a_len = _check_pairs(a, a_lengths, "a", validate_args)
    b_len = _check_pairs(b, b_lengths, "b", validate_args)
    a, b = xp.detach(a), xp.detach(b)
    a = _zero_padding(a, a_len)
    b = _zero_padding(b, b_len)
    k, n, m = a.shape[0], a.shape[1], b.shape[1]
    result = xp.full(k, _INF, like=a)
    if k == 0:
        return result
    alive = xp.arange(k, like=a_len)
    bound = None
    if max_distance is not None:
        bound = xp.broadcast_to(xp.as_values(max_distance, like=a), (k,))
        start_gap = norms(a[:, 0] - b[:, 0])  # the module's one point distance: the same bits as the cells
        end_gap = norms(a[alive, a_len - 1] - b[alive, b_len - 1])
        alive = alive[xp.maximum(start_gap, end_gap) <= bound]
        if len(alive):
            alive = alive[_box_lower_bound(a[alive], a_len[alive], b[alive], b_len[alive]) <= bound[alive]]
    # first a narrow band around the proportional coupling (exact where it proves itself), then a wider one, then
    # the full programme for the rest
    for half_width in band_widths:
        if len(alive) == 0 or half_width < 1 or 2 * half_width + 1 >= min(n, m):
            break
        chunk = max(1, MAX_ELEMENTS // (max(n, m) * (2 * half_width + 1) * 4))
        undecided = []
        for s in range(0, len(alive), chunk):
            part = alive[s : s + chunk]
            limit = None if bound is None else bound[part]
            values, decided = _band_frechet(a[part], b[part], a_len[part], b_len[part], half_width, limit)
            result[part[decided]] = values[decided]
            undecided.append(part[~decided])
        alive = xp.cat(undecided)
    step = max(1, MAX_ELEMENTS // (n * m * a.shape[-1]))
    for s in range(0, len(alive), step):
        part = alive[s : s + step]
        full = norms(a[part][:, :, None] - b[part][:, None])
        limit = None if bound is None else bound[part]
        result[part] = _banded_dp(full.reshape(len(part), n * m), n, m, a_len[part], b_len[part], limit, check_every)
    return result


def _band_frechet(
    a: Array, b: Array, a_len: Array, b_len: Array, half_width: int, bound: Array | None
) -> tuple[Array, Array]:
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
    a = xp.pad_rows(a, size)
    b = xp.pad_rows(b, size)
    a, b = xp.where(swap[:, None, None], b, a), xp.where(swap[:, None, None], a, b)
    n, m = xp.where(swap, b_len, a_len), xp.where(swap, a_len, b_len)
    # pair-last layout: (points, K) per coordinate, so that every step of the programme reads contiguous rows
    a_t = xp.transpose(a, (2, 1, 0))  # (D, L, K)
    b_t = xp.transpose(b, (2, 1, 0))
    rows = xp.arange(size, like=n)[:, None]
    width = 2 * half_width + 1
    center = (rows * (m - 1)) // (n - 1).clip(min=1)  # (L, K)
    high = xp.minimum(center + half_width, m - 1)
    low = xp.minimum((center - half_width).clip(min=0), (high - width + 1).clip(min=0))
    values = _band_programme(a_t, b_t, n, low, high, width)
    below = xp.where((low >= 1) & (rows < n), _row_distances(a_t, b_t, (low - 1).clip(min=0)), _INF)
    above_edge = xp.where((high <= m - 2) & (rows < n), _row_distances(a_t, b_t, (high + 1).clip(max=size - 1)), _INF)
    outside = xp.minimum(xp.amin(below, 0), xp.amin(above_edge, 0))
    first_pair = _row_distances(a_t[:, :1], b_t, (m * 0)[None])[0]
    last_rows = xp.gather(a_t, 1, xp.broadcast_to((n - 1)[None, None], (a_t.shape[0], 1, len(n))))
    last_pair = _row_distances(last_rows, b_t, (m - 1)[None])[0]
    decided = (outside >= values) | (values <= xp.maximum(first_pair, last_pair))
    if bound is not None:
        above = (outside > bound) & (values > bound)
        decided = decided | above
        values = xp.where(above | (values > bound), _INF, values)
    return values, decided


def _row_distances(a_t: Array, b_t: Array, cols: Array) -> Array:
    """``|a[i] - b[cols[i]]|`` of every pair, ``a_t`` / ``b_t`` ``(D, L, K)``, ``cols`` ``(R, K)`` -> ``(R, K)``
    (``a_t`` holds ``R`` rows)."""
    return norms_of([a_t[axis, : cols.shape[0]] - xp.gather(b_t[axis], 0, cols) for axis in range(a_t.shape[0])])


def _band_programme(a_t: Array, b_t: Array, n: Array, low: Array, high: Array, width: int) -> Array:
    """The band value ``(K,)`` of each pair; cell ``(i, k)`` of the band is column ``low[i] + k``.

    The programme runs over the wavefronts ``t = 2 i + k``: a cell depends on cells of the three previous
    wavefronts only (``(i, k - 1)``; ``(i - 1, .)`` one or two back depending on whether ``low`` rises at ``i``),
    and every wavefront is the same strided slice of the band for all pairs.
    """
    size, k = low.shape
    offsets = xp.arange(width, like=low)[None, :, None]
    cols = low[:, None] + offsets  # (L, W, K)
    valid = (cols <= high[:, None]) & (xp.arange(size, like=low)[:, None, None] < n)
    index = cols.clip(max=size - 1).reshape(size * width, k)
    dist = norms_of(
        [a_t[axis][:, None] - xp.gather(b_t[axis], 0, index).reshape(size, width, k) for axis in range(a_t.shape[0])]
    )
    flat = xp.where(valid, dist, _INF).reshape(size * width, k)
    rises = xp.cat([low[:1] * 0, low[1:] - low[:-1]]) == 1  # (L, K)
    # F of the last four wavefronts by row (row -1 at slot 0, always +inf)
    buffers = [xp.full((size + 2, k), _INF, like=a_t) for _ in range(4)]
    last_row = n - 1
    target = 2 * last_row + (xp.gather(high, 0, last_row[None])[0] - xp.gather(low, 0, last_row[None])[0])
    values = xp.full(k, _INF, like=a_t)
    for t in range(int(target.max()) + 1 if k else 0):
        first, last = max(0, (t - width + 2) // 2), min(size - 1, t // 2)  # rows with 0 <= t - 2 i < width
        cur, p1, p2, p3 = (buffers[(t - j) % 4] for j in range(4))
        d = flat[first * (width - 2) + t : last * (width - 2) + t + 1 : width - 2]
        if t == 0:
            current = d
        else:
            rise = rises[first : last + 1]
            up = xp.where(rise, p1[first : last + 1], p2[first : last + 1])
            diag = xp.where(rise, p2[first : last + 1], p3[first : last + 1])
            current = xp.maximum(d, xp.minimum(xp.minimum(up, p1[first + 1 : last + 2]), diag))
        cur[first + 1 : last + 2] = current
        cur[first] = _INF  # guards: the rows next to the wavefront read +inf, not an older wavefront
        cur[last + 2] = _INF
        done = target == t
        if bool(done.any()):
            values = xp.where(done, xp.gather(cur, 0, (last_row + 1)[None])[0], values)
    return values


def _box_lower_bound(a: Array, a_len: Array, b: Array, b_len: Array) -> Array:
    """``(K,)`` lower bound of the discrete Frechet distance: the farthest point of either line from the other's
    bounding box (every point is coupled with some point of the other line, which lies in its box)."""
    out = []
    for p, p_len, q, q_len in ((a, a_len, b, b_len), (b, b_len, a, a_len)):
        valid = xp.arange(q.shape[1], like=q_len) < q_len[:, None]
        low = xp.amin(xp.where(valid[..., None], q, _INF), 1)
        high = xp.amax(xp.where(valid[..., None], q, -_INF), 1)
        gap = (low[:, None] - p).clip(min=0) + (p - high[:, None]).clip(min=0)  # per coordinate <= |p - q_j|
        dist = norms(gap)  # the cells' formula: a rounding never lifts the bound above a cell's distance
        own = xp.arange(p.shape[1], like=p_len) < p_len[:, None]
        out.append(xp.amax(xp.where(own, dist, 0.0), 1))
    return xp.maximum(out[0], out[1])


def _banded_dp(flat: Array, n: int, m: int, a_len: Array, b_len: Array, bound: Array | None, check_every: int) -> Array:
    """The hard programme on the valid band of each anti-diagonal; ``flat`` (K, n * m) point distances."""
    k = flat.shape[0]
    result = xp.full(k, _INF, like=flat)
    ids = xp.arange(k, like=a_len)  # rows of ``flat`` still in the programme
    target = a_len + b_len - 2  # the anti-diagonal holding F[a_len - 1, b_len - 1]
    # three rotating anti-diagonal buffers; row i lives in column i + 1, column 0 is the +inf border; cells never
    # written stay +inf, and stale cells of older diagonals are never read
    buffers = [xp.full((k, n + 1), _INF, like=flat) for _ in range(3)]
    for diag in range(n + m - 1):
        lo, hi = max(0, diag - m + 1), min(n - 1, diag)
        cells = (xp.arange(hi - lo + 1, like=a_len) + lo) * (m - 1) + diag  # flat index of (i, diag - i)
        dist = flat[ids[:, None], cells[None, :]]
        current, prev1, prev2 = buffers[diag % 3], buffers[(diag - 1) % 3], buffers[(diag - 2) % 3]
        if diag == 0:
            current[:, 1:2] = dist
        else:
            up_left = xp.minimum(prev1[:, lo : hi + 1], prev1[:, lo + 1 : hi + 2])
            current[:, lo + 1 : hi + 2] = xp.maximum(dist, xp.minimum(up_left, prev2[:, lo : hi + 1]))
        done = target[ids] == diag
        if bool(done.any()):
            rows = xp.flatnonzero(done)
            result[ids[rows]] = current[rows, a_len[ids[rows]]]
        if diag % check_every == check_every - 1:
            keep = target[ids] > diag
            if bound is not None:
                prev_lo, prev_hi = max(0, diag - m), min(n - 1, diag - 1)
                low = xp.minimum(
                    xp.amin(current[:, lo + 1 : hi + 2], 1), xp.amin(prev1[:, prev_lo + 1 : prev_hi + 2], 1)
                )
                keep = keep & (low <= bound[ids])
            if not bool(keep.all()):
                index = xp.flatnonzero(keep)
                ids = ids[index]
                buffers = [buf[index] for buf in buffers]
                if len(ids) == 0:
                    break
    return result
