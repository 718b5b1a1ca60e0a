"""Kernels on paired polylines written once for numpy arrays and torch tensors (see
:mod:`drivemetrics._internal.arrays`): the Chamfer distances of pairs without gradient, and the closing-point rule.

Given numpy arrays they compute with numpy and never import torch (the ``openlanev2-eval`` command's CPU path); given
tensors, with torch on their device (:mod:`drivemetrics.polyline.chamfer`, the Metric classes); both give the same
bits: point distances are scipy's ``cdist`` values (squared differences summed coordinate by coordinate, correctly
rounded root), means are sequential sums.
"""

from __future__ import annotations

from typing import Any

from drivemetrics._internal import arrays as xp

__all__ = ["drop_closing_point", "nearest_distances", "paired_chamfer_means"]

Array = Any  # numpy.ndarray or torch.Tensor


def drop_closing_point(points: Array, lengths: Array, min_points: int = 3) -> Array:
    """Lengths with the last point dropped where a polyline is closed (last point == first point, exactly).

    Only polylines of ``min_points`` or more points are changed (default 3: a 2-point "ring" stays a segment;
    OpenLane-V2 drops the closing point of any closed line: ``min_points=2``).

    >>> import torch
    >>> from drivemetrics.polyline import drop_closing_point
    >>> ring = torch.tensor([[[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 0.0]],
    ...                      [[0.0, 0.0], [1.0, 0.0], [2.0, 0.0], [9.0, 9.0]]])
    >>> drop_closing_point(ring, torch.tensor([4, 3]))
    tensor([3, 3])
    >>> drop_closing_point(ring.numpy(), ring.new_tensor([4, 3]).long().numpy())
    array([3, 3])
    >>> drop_closing_point(torch.zeros(1, 2, 2), torch.tensor([2]), min_points=2)
    tensor([1])
    """
    last_index = (lengths - 1).clip(min=0)
    index = xp.broadcast_to(last_index[..., None, None], (*lengths.shape, 1, points.shape[-1]))
    last = xp.gather(points, -2, index)[..., 0, :]
    closed = (points[..., 0, :] == last).all(-1) & (lengths >= max(min_points, 2))
    return lengths - xp.astype_like(closed, lengths)


def nearest_distances(a: Array, a_mask: Array, b: Array, b_mask: Array, pairs_per_step: int) -> tuple[Array, Array]:
    """Nearest distances ``A -> B (K, Pa)`` and ``B -> A (K, Pb)`` of pairs ``a (K, Pa, D)``, ``b (K, Pb, D)``.

    The values of scipy's ``cdist`` (squared differences summed coordinate by coordinate, correctly rounded root;
    ``torch.cdist`` gives the same in 2-D, and can be 1 ulp off in 3-D), without a root per point pair: the
    minimum is taken on squared distances, then the root of the minima only (the root is monotone). Vectorised
    along the points, ``pairs_per_step`` pairs at a time so that the squared-distance block stays in cache. No
    gradient. Entries of padding points (``mask`` false) are meaningless.
    """
    if a.shape[0] == 0:
        return xp.full((0, a.shape[1]), 0.0, like=a), xp.full((0, b.shape[1]), 0.0, like=b)
    forward, backward = [], []
    # padding points moved to +-(largest float): their squared distance to any valid point overflows to inf, so they
    # never win a minimum of a valid point (which has at least one valid partner), with no mask pass per block; the
    # minima of padding points themselves are discarded by the caller
    big = xp.largest_float(a, b)
    if not bool(a_mask.all()):  # one host read per call, not per step
        a = xp.where(a_mask[..., None], a, big)
    if not bool(b_mask.all()):
        b = xp.where(b_mask[..., None], b, -big)
    with xp.overflow_allowed():  # the padding's squares overflow to inf, by design
        for start in range(0, a.shape[0], pairs_per_step):
            s = slice(start, start + pairs_per_step)
            delta = a[s, :, 0, None] - b[s, None, :, 0]  # (k, Pa, Pb)
            squared = delta * delta
            for d in range(1, a.shape[-1]):
                delta = a[s, :, d, None] - b[s, None, :, d]
                delta *= delta
                squared += delta
            forward.append(xp.amin(squared, -1))
            backward.append(xp.amin(squared, -2))
    return xp.sqrt(xp.cat(forward)), xp.sqrt(xp.cat(backward))


def paired_chamfer_means(
    a: Array, a_lengths: Array, b: Array, b_lengths: Array, pairs_per_step: int | None = None
) -> tuple[Array, Array]:
    """Directional Chamfer means ``A -> B`` and ``B -> A`` ``(K,)`` of pairs ``a (K, Pa, D)``, ``b (K, Pb, D)``
    with ``a_lengths`` / ``b_lengths`` ``(K,)`` valid points (each >= 1), no gradient.

    Args:
        pairs_per_step: pairs whose point distances are held at once (default: about ``2 ** 17`` point pairs).

    Examples:
        >>> import numpy as np
        >>> from drivemetrics.polyline.pairs import paired_chamfer_means
        >>> a, b = np.array([[[0.0, 0.0], [1.0, 0.0]]]), np.array([[[0.0, 1.0], [1.0, 1.0], [2.0, 1.0]]])
        >>> [x.round(4).tolist() for x in paired_chamfer_means(a, np.array([2]), b, np.array([3]))]
        [[1.0], [1.1381]]
    """
    if pairs_per_step is None:
        pairs_per_step = max(1, (1 << 17) // max(1, a.shape[1] * b.shape[1]))
    a_mask = xp.arange(a.shape[1], like=a_lengths) < a_lengths[:, None]
    b_mask = xp.arange(b.shape[1], like=b_lengths) < b_lengths[:, None]
    a_to_b, b_to_a = nearest_distances(a, a_mask, b, b_mask, pairs_per_step)
    # sequential sums (cumsum): the same value whatever padding a batch or chunk adds (trailing zeros add nothing)
    a_to_b = xp.where(a_mask, a_to_b, 0.0).cumsum(-1)[..., -1] / a_lengths.clip(min=1)
    b_to_a = xp.where(b_mask, b_to_a, 0.0).cumsum(-1)[..., -1] / b_lengths.clip(min=1)
    return a_to_b, b_to_a
