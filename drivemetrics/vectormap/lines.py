"""Map-AP matching with every line stored once, back to back: the one kernel of ``map-eval`` and of the map
Metric classes, written once with :mod:`drivemetrics._internal.arrays` for numpy arrays and torch tensors alike.

Given numpy arrays it computes with numpy and never imports torch (``map-eval``'s CPU path, e.g. ``--protocol
av2-cvpr23``); given tensors it computes on their device (:func:`~drivemetrics.vectormap.scoring.vector_map_matches`,
which the Metric classes and ``map-eval``'s tensor path call; CPU tensors are handed over as numpy views, where
numpy's loops are faster). Both give the same bits.

The lines of many samples are kept flat: ``points (N, D)`` with ``counts (L,)`` points per line (line ``i`` holds
rows ``offsets[i]:offsets[i + 1]``), each line's sample index, class id and score. Every step runs on this layout
without padding lines to a common length:

- :func:`resample_flat`: the protocol's resampling (fixed count or fixed spacing) of all lines in one pass: each
  line's cumulative length is summed in order, and the segment holding each sample is found by counting, per
  segment end, the sample positions below it (positions are computed the way :func:`numpy.arange` / ``linspace``
  give them, and each count is checked against the exact positions);
- :func:`candidate_pairs`: the (prediction, GT) pairs of the same sample and class;
- :func:`bounded_chamfer`: their symmetric Chamfer distances, exact for every pair that can lie within ``reach``
  (the largest threshold); pairs whose bounding boxes, or whose points' mean distance to the other line's box,
  already exceed it get ``inf`` unread; nearest points are taken on squared distances and rooted once per point;
- :func:`match_flat`: the protocol's greedy matching (each prediction's nearest GT, first on a tie; visited by
  descending score), one row ``(score, class id, true positive at each threshold)`` per kept prediction;
- :func:`ap_from_rows`: the pooled AP per class and threshold, class APs and mAP (numpy: the pooled rows are few).

The values are those of the references (the tests compare them with plain loops over GEOS-style resampling and
scipy's ``cdist``): the same IEEE operations in the same order (segment lengths ``sqrt(dx * dx + dy * dy)``, sums in
order, point distances as scipy's ``cdist``, sequential Chamfer means). MapTR's buffer prefilter and the fall-back
rule are applied by :func:`~drivemetrics.vectormap.scoring.vector_map_matches` on the distances of
:func:`bounded_chamfer`.

Examples:
    >>> from drivemetrics.vectormap.protocol import get_protocol
    >>> from drivemetrics.vectormap.lines import FlatLines
    >>> import numpy as np
    >>> from drivemetrics.vectormap.lines import match_flat
    >>> from drivemetrics.vectormap.lines import resample_lines
    >>> proto = get_protocol("av2-cvpr23")
    >>> gt = FlatLines(np.array([[0.0, 0.0], [0.0, 10.0]]), np.array([2]), np.array([0]), np.array([1]))
    >>> pred = FlatLines(gt.points + [0.7, 0.0], np.array([2]), np.array([0]), np.array([1]), np.array([0.9]))
    >>> rows, num_targets = match_flat(resample_lines(pred, proto), resample_lines(gt, proto), proto)
    >>> rows.tolist(), num_targets.tolist()
    ([[0.9, 1.0, 0.0, 1.0, 1.0]], [0, 1, 0])

    The same kernel on tensors (any device; here the CPU), the same numbers:

    >>> import torch
    >>> on_torch = [resample_lines(lines.apply(torch.from_numpy), proto) for lines in (pred, gt)]
    >>> rows, num_targets = match_flat(*on_torch, proto)
    >>> rows.tolist(), num_targets.tolist()
    ([[0.9, 1.0, 0.0, 1.0, 1.0]], [0, 1, 0])
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from drivemetrics._internal import arrays as xp
from drivemetrics._internal.limits import get_limits, how_to_raise
from drivemetrics.polyline.average_precision import pooled_precision_recall
from drivemetrics.vectormap.protocol import MapProtocol

__all__ = [
    "FlatLines",
    "ap_from_rows",
    "bounded_chamfer",
    "candidate_pairs",
    "flatten_samples",
    "greedy_flags",
    "match_flat",
    "nearest_targets",
    "resample_flat",
    "resample_lines",
]

Array = Any  # numpy.ndarray or torch.Tensor (see drivemetrics._internal.arrays)

#: point pairs (squared distances) computed at once in :func:`bounded_chamfer`: the block stays in the CPU cache
POINT_PAIRS_PER_STEP = 1 << 18
#: lines resampled at once in :func:`resample_flat`
LINES_PER_STEP = 4096


@dataclass
class FlatLines:
    """Lines of many samples stored back to back (numpy arrays, or torch tensors on one device).

    Attributes:
        points: ``(N, D)`` float64 points (metres), line after line.
        counts: ``(L,)`` int64 points per line (each >= 1).
        sample: ``(L,)`` int64 index of each line's sample.
        labels: ``(L,)`` int64 class id of each line (the protocol's ``class_names`` order).
        scores: ``(L,)`` float64 confidences (predictions; empty for GT).
        tokens: the samples' tokens (``sample`` indexes them).

    Examples:
        >>> from drivemetrics.vectormap.lines import FlatLines
        >>> import numpy as np
        >>> lines = FlatLines(np.zeros((5, 2)), np.array([2, 3]), np.array([0, 0]), np.array([1, 2]), tokens=["a"])
        >>> lines.offsets.tolist(), lines.take(np.array([1])).counts.tolist(), lines.lines(0, 1).points.shape
        ([0, 2, 5], [3], (2, 2))
    """

    points: Array
    counts: Array
    sample: Array
    labels: Array
    scores: Array = field(default_factory=lambda: np.zeros(0))
    tokens: list[str] = field(default_factory=list)

    @property
    def offsets(self) -> Array:
        """``(L + 1,)`` first row of each line, then the row count."""
        return _offsets(self.counts)

    def lines(self, start: int, stop: int) -> FlatLines:
        """The consecutive lines ``start:stop`` (views, no copy)."""
        offsets = self.offsets
        scores = self.scores[start:stop] if len(self.scores) else self.scores
        return FlatLines(
            self.points[int(offsets[start]) : int(offsets[stop])],
            self.counts[start:stop],
            self.sample[start:stop],
            self.labels[start:stop],
            scores,
            self.tokens,
        )

    def apply(self, fn: Callable[[Array], Array]) -> FlatLines:
        """``fn`` applied to every array (e.g. ``torch.from_numpy``, or a move to a device); the same tokens."""
        arrays = (self.points, self.counts, self.sample, self.labels, self.scores)
        return FlatLines(*(fn(x) for x in arrays), self.tokens)

    def take(self, lines: Array) -> FlatLines:
        """The lines ``lines`` (indices, in that order) as a new :class:`FlatLines` (same tokens)."""
        offsets = self.offsets
        counts = self.counts[lines]
        rows = xp.repeat(offsets[lines] - counts.cumsum(0) + counts, counts) + xp.arange(int(counts.sum()), counts)
        scores = self.scores[lines] if len(self.scores) else self.scores
        return FlatLines(self.points[rows], counts, self.sample[lines], self.labels[lines], scores, self.tokens)


def flatten_samples(samples: Sequence[Any], class_names: Sequence[str], dims: int, with_scores: bool) -> FlatLines:
    """:class:`~drivemetrics.vectormap.io.MapSample` objects as :class:`FlatLines` (the first ``dims`` coordinates).

    Raises ``ValueError`` naming the sample for a line with fewer coordinates or a class not in ``class_names``.

    Examples:
        >>> from drivemetrics.vectormap.io import MapSample
        >>> import numpy as np
        >>> from drivemetrics.vectormap.lines import flatten_samples
        >>> sample = MapSample("a", [np.zeros((2, 3)), np.ones((4, 3))], ["divider", "boundary"], [0.5, 0.7])
        >>> lines = flatten_samples([sample], ("ped_crossing", "divider", "boundary"), 2, with_scores=True)
        >>> lines.points.shape, lines.counts.tolist(), lines.labels.tolist(), lines.scores.tolist()
        ((6, 2), [2, 4], [1, 2], [0.5, 0.7])
    """
    index = {name: i for i, name in enumerate(class_names)}
    lines = [line for sample in samples for line in sample.points]
    counts = np.array([len(line) for line in lines], dtype=np.int64)
    per_sample = np.array([len(sample.points) for sample in samples], dtype=np.int64)
    labels = np.array([index.get(name, -1) for sample in samples for name in sample.labels], dtype=np.int64)
    if len(labels) != len(lines):
        raise ValueError("every line of a sample needs one class name")
    line_dims = np.array([line.shape[1] for line in lines], dtype=np.int64)
    bad = np.flatnonzero((line_dims < dims) | (labels < 0))
    if bad.size:
        first = int(bad[0])
        k = int(np.searchsorted(np.cumsum(per_sample), first, side="right"))
        n = first - int(per_sample[:k].sum())
        if line_dims[first] < dims:
            raise ValueError(
                f"sample {samples[k].token}: line {n} has {int(line_dims[first])} coordinates, need {dims}"
            )
        raise ValueError(
            f"sample {samples[k].token}: line {n} has class {samples[k].labels[n]!r}, not one of {class_names}"
        )
    if lines:
        same = bool((line_dims == dims).all())
        points = np.concatenate(lines if same else [line[:, :dims] for line in lines]).astype(np.float64, copy=False)
    else:
        points = np.zeros((0, dims))
    scores: np.ndarray = np.zeros(0)
    if with_scores:
        scores = np.array([score for sample in samples for score in sample.scores], dtype=np.float64)
    sample_of = np.repeat(np.arange(len(samples), dtype=np.int64), per_sample)
    return FlatLines(points, counts, sample_of, labels, scores, [sample.token for sample in samples])


def _offsets(counts: Array) -> Array:
    """``(L + 1,)`` int64 first row of each of ``L`` consecutive runs of ``counts`` rows, then the row count."""
    return xp.cat([xp.full(1, 0, like=counts, dtype="int64"), xp.astype(counts, "int64").cumsum(0)])


def _cumulative_lengths(points: Array, counts: Array) -> tuple[Array, Array, Array]:
    """Segment lengths ``(S,)`` of all lines (line after line), their running sums within each line (summed in
    order, as GEOS and :func:`~drivemetrics.polyline.arc_length` do) and each line's first segment ``(L,)``."""
    offsets = _offsets(counts)
    segments = xp.clamp_min(counts - 1, 0)
    last_point = xp.full(points.shape[0], False, like=counts, dtype="bool")
    last_point[offsets[1:][counts > 0] - 1] = True
    start_point = xp.flatnonzero(~last_point)  # every point but a line's last starts a segment
    delta = points[start_point + 1] - points[start_point]
    squared = delta[:, 0] * delta[:, 0]
    for d in range(1, points.shape[1]):
        squared = squared + delta[:, d] * delta[:, d]
    lengths = xp.sqrt(squared)
    first_segment = segments.cumsum(0) - segments
    running = xp.copy(lengths)
    if len(segments):
        # step k adds segment k of every line that has one: Python steps = the longest line, work = all segments
        order = xp.stable_argsort(-segments)
        firsts, longest = first_segment[order], int(segments.max())
        per_length = xp.bincount(segments, longest + 1)
        with_more = (len(segments) - (per_length.cumsum(0) - per_length)).tolist()  # lines with >= k segments
        for k in range(1, longest):
            index = firsts[: with_more[k + 1]] + k
            running[index] += running[index - 1]
    return lengths, running, first_segment


def _grid(proto: MapProtocol, total: Array, line: Array, step: Array) -> Array:
    """Position of inner sample ``step`` (0-based) of each ``line``: ``spacing + step * delta`` (numpy's arange)
    or ``(step + 1) * (length / (n - 1))`` (numpy's linspace)."""
    if proto.resample == "spacing":
        delta = (proto.spacing + proto.spacing) - proto.spacing
        return proto.spacing + xp.astype(step, "float64") * delta
    return xp.astype(step + 1, "float64") * (total[line] / (proto.num_samples - 1))


def resample_flat(
    points: Array, counts: Array, proto: MapProtocol, max_samples: int | None = None
) -> tuple[Array, Array]:
    """The protocol's resampling of flat lines (see :class:`FlatLines`): ``(samples (M, D), sample counts (L,))``.

    ``"spacing"``: positions ``0``, ``spacing + i * delta`` for ``i < ceil((length - spacing) / spacing)`` and the
    length (:func:`~drivemetrics.polyline.resample_by_spacing`); ``"count"``: ``num_samples`` positions
    ``i * (length / (n - 1))``, the last one the length (:func:`~drivemetrics.polyline.resample_by_count`). Each
    point as GEOS' ``interpolate``: the segment whose running end first exceeds the position, then
    ``p0 + t * (p1 - p0)``. Every line needs at least one point. A line needing more than ``max_samples`` samples
    (default: the limit ``max_map_line_points`` of :mod:`drivemetrics._internal.limits`, so that the cost follows
    the input's points, never the length its coordinates describe) raises ``ValueError`` before any is made.
    numpy arrays or tensors (float64 points, int64 counts).

    Examples:
        >>> from drivemetrics.vectormap.protocol import get_protocol
        >>> import numpy as np
        >>> from drivemetrics.vectormap.lines import resample_flat
        >>> line = np.array([[0.0, 0.0], [1.0, 0.0]])
        >>> samples, counts = resample_flat(line, np.array([2]), get_protocol("av2-cvpr23"))
        >>> samples[:, 0].tolist(), counts.tolist()
        ([0.0, 0.3, 0.6, 0.8999999999999999, 1.0], [5])
    """
    if max_samples is None:
        max_samples = get_limits().max_map_line_points
    if max_samples < 2:
        raise ValueError(f"`max_samples` must be >= 2, got {max_samples}")
    if len(counts) <= LINES_PER_STEP:
        return _resample_step(points, counts, proto, max_samples)
    # a few thousand lines at a time: the temporaries stay small and are reused (one pass over every line at once
    # costs twice as much, mostly in fresh memory)
    offsets = _offsets(counts).tolist()
    parts = [
        _resample_step(points[offsets[start] : offsets[stop]], counts[start:stop], proto, max_samples)
        for start, stop in zip(
            range(0, len(counts), LINES_PER_STEP),
            [*range(LINES_PER_STEP, len(counts), LINES_PER_STEP), len(counts)],
            strict=True,
        )
    ]
    return xp.cat([part[0] for part in parts]), xp.cat([part[1] for part in parts])


def _inner_counts(proto: MapProtocol, total: Array, max_samples: int) -> Array:
    """``(L,)`` inner samples of each line (all but its two ends); raises for a line needing more than
    ``max_samples`` samples."""
    if proto.resample == "count":
        if proto.num_samples < 2:
            raise ValueError(f"`num_samples` must be >= 2, got {proto.num_samples}")
        return xp.full(len(total), proto.num_samples - 2, like=total, dtype="int64")
    inner = xp.astype(xp.clamp_min(xp.ceil((total - proto.spacing) / proto.spacing), 0), "int64")
    largest = int(inner.max()) + 2 if len(total) else 2
    if largest > max_samples:
        line = int(total.argmax())
        raise ValueError(
            f"line {line}: {float(total[line]):.6g} m long, it resamples to {largest:,} points at "
            f"{proto.spacing} m, more than max_map_line_points={max_samples:,} "
            f"({how_to_raise('max_map_line_points')})"
        )
    return inner


def _samples_below(proto: MapProtocol, total: Array, ends: Array, segment_line: Array, limit: Array) -> Array:
    """Inner samples below each segment's running end ``ends`` (at most ``limit``), counted per segment: estimated,
    then checked against the exact positions."""
    if proto.resample == "spacing":
        delta = (proto.spacing + proto.spacing) - proto.spacing
        estimate = xp.ceil((ends - proto.spacing) / delta)
    else:
        step = total[segment_line] / (proto.num_samples - 1)
        estimate = xp.where(step > 0, xp.ceil(ends / xp.where(step > 0, step, 1.0)) - 1, 0.0)
    below = xp.astype(xp.minimum(xp.clamp_min(xp.nan_to_num(estimate), 0), xp.astype(limit, "float64")), "int64")
    for _ in range(64):  # each count is off by one at most; the loop ends after a pass or two
        lower = (below > 0) & (_grid(proto, total, segment_line, below - 1) >= ends)
        higher = (below < limit) & (_grid(proto, total, segment_line, below) < ends)
        if not bool(lower.any() or higher.any()):
            break
        below = below - xp.astype(lower, "int64") + xp.astype(higher, "int64")
    return below


def _resample_step(points: Array, counts: Array, proto: MapProtocol, max_samples: int) -> tuple[Array, Array]:
    """:func:`resample_flat` of one step of lines."""
    num_lines = len(counts)
    lengths, running, first_segment = _cumulative_lengths(points, counts)
    segments = xp.clamp_min(counts - 1, 0)
    total = xp.full(num_lines, 0.0, like=points)
    has = segments > 0
    total[has] = running[first_segment[has] + segments[has] - 1]
    inner = _inner_counts(proto, total, max_samples)
    segment_line = xp.repeat(xp.arange(num_lines, counts), segments)
    below = _samples_below(proto, total, running, segment_line, inner[segment_line])
    # sample layout: the start, the inner samples, the end
    sample_counts = inner + 2
    sample_offsets = _offsets(sample_counts)
    num_samples = int(sample_offsets[-1])
    sample_line = xp.repeat(xp.arange(num_lines, counts), sample_counts)
    slot = xp.arange(num_samples, counts) - sample_offsets[:-1][sample_line]
    is_last = slot == sample_counts[sample_line] - 1
    is_inner = (slot > 0) & ~is_last
    position = xp.full(num_samples, 0.0, like=points)
    inner_rows = xp.flatnonzero(is_inner)
    position[inner_rows] = _grid(proto, total, sample_line[inner_rows], slot[inner_rows] - 1)
    position[is_last] = total
    # segment of each sample = segments whose running end is <= its position
    segment = xp.full(num_samples, 0, like=counts, dtype="int64")
    segment[is_last] = segments  # the end: past the last segment
    segment[sample_offsets[:-1]] = xp.bincount(segment_line[running <= 0], num_lines)
    # an inner sample s of a line lies past every segment that has <= s inner samples below its end
    counted = below < inner[segment_line]
    bins = xp.bincount(sample_offsets[:-1][segment_line[counted]] + 1 + below[counted], num_samples + 1)
    passed = bins[:num_samples].cumsum(0)
    passed -= xp.repeat(passed[sample_offsets[:-1]], sample_counts)  # cumulative count within the line
    segment[inner_rows] = passed[inner_rows]
    return _interpolate(points, counts, lengths, running, first_segment, sample_line, segment, position), sample_counts


def _interpolate(
    points: Array,
    counts: Array,
    lengths: Array,
    running: Array,
    first_segment: Array,
    sample_line: Array,
    segment: Array,
    position: Array,
) -> Array:
    """The samples ``(M, D)`` at ``position`` on segment ``segment`` of line ``sample_line``: ``p0 + t * (p1 - p0)``
    coordinate by coordinate; at or past the line's end: its last point."""
    segments = xp.clamp_min(counts - 1, 0)
    at_end = segment >= segments[sample_line]
    point_offsets = _offsets(counts)
    first_point = point_offsets[:-1][sample_line] + xp.where(at_end, counts[sample_line] - 1, segment)
    fraction = xp.full(len(segment), 0.0, like=points)
    if len(lengths):
        index = (first_segment[sample_line] + segment).clip(max=len(lengths) - 1)  # past the end: unused
        start = xp.where(segment > 0, running.take((index - 1).clip(min=0)), 0.0)
        length = lengths.take(index)
        moving = ~at_end & (length > 0)
        fraction = xp.where(moving, (position - start) / xp.where(moving, length, 1.0), 0.0)
    next_point = xp.where(at_end, first_point, first_point + 1)
    columns = []
    for d in range(points.shape[1]):
        coordinate = xp.contiguous(points[:, d])
        p0, p1 = coordinate.take(first_point), coordinate.take(next_point)
        columns.append(xp.where(at_end, p0, p0 + fraction * (p1 - p0)))
    if not columns:
        return xp.full((len(segment), 0), 0.0, like=points)
    return xp.stack(columns, 1)


def resample_lines(lines: FlatLines, proto: MapProtocol) -> FlatLines:
    """``lines`` with their points replaced by the protocol's samples (:func:`resample_flat`).

    Examples:
        >>> from drivemetrics.vectormap.protocol import get_protocol
        >>> from drivemetrics.vectormap.lines import FlatLines
        >>> import numpy as np
        >>> from drivemetrics.vectormap.lines import resample_lines
        >>> line = FlatLines(np.array([[0.0, 0.0], [0.0, 1.0]]), np.array([2]), np.array([0]), np.array([0]))
        >>> resample_lines(line, get_protocol("av2-cvpr23")).counts.tolist()
        [5]
    """
    samples, counts = resample_flat(lines.points, lines.counts, proto)
    return replace(lines, points=samples, counts=counts)


def candidate_pairs(preds: FlatLines, target: FlatLines, num_classes: int) -> tuple[Array, Array]:
    """``(prediction line, GT line)`` index pairs of the same sample and class: predictions in order, each with the
    GT lines of its sample and class in their order.

    Examples:
        >>> from drivemetrics.vectormap.lines import candidate_pairs
        >>> from drivemetrics.vectormap.lines import FlatLines
        >>> import numpy as np
        >>> def lines(samples, labels):
        ...     return FlatLines(np.zeros((2 * len(samples), 2)), np.full(len(samples), 2), np.array(samples),
        ...                      np.array(labels))
        >>> candidate_pairs(lines([0, 0, 1], [1, 2, 1]), lines([0, 1, 0, 0], [1, 1, 1, 0]), 3)
        (array([0, 0, 2]), array([0, 2, 1]))
    """
    gt_key = target.sample * num_classes + target.labels
    gt_order = xp.stable_argsort(gt_key)
    sorted_keys = gt_key[gt_order]
    pred_key = preds.sample * num_classes + preds.labels
    low = xp.searchsorted(sorted_keys, pred_key)
    many = xp.searchsorted(sorted_keys, pred_key, right=True) - low
    pred_index = xp.repeat(xp.arange(len(pred_key), pred_key), many)
    first = many.cumsum(0) - many
    gt_index = gt_order[xp.repeat(low - first, many) + xp.arange(int(many.sum()), many)]
    return pred_index, gt_index


def _boxes(lines: FlatLines) -> tuple[Array, Array]:
    """Each line's bounding box ``(low (L, D), high (L, D))``."""
    if not len(lines.counts):
        empty = xp.full((0, lines.points.shape[1]), 0.0, like=lines.points)
        return empty, empty
    starts = lines.offsets[:-1]
    return (
        xp.segment_reduce(lines.points, "min", starts, lines.counts),
        xp.segment_reduce(lines.points, "max", starts, lines.counts),
    )


def _padded(planes: Array, offsets: Array, counts: Array, width: int) -> tuple[Array, Array]:
    """``(D, K, width)`` coordinates of the lines starting at ``offsets (K,)`` with ``counts (K,)`` points in the
    coordinate planes ``planes (D, N)``, each line padded with its last point, and the ``(K, width)`` mask."""
    slot = xp.arange(width, counts)[None, :]
    mask = slot < counts[:, None]
    rows = offsets[:, None] + xp.minimum(slot, counts[:, None] - 1)
    return planes[:, rows], mask


def _mean_distance_to_box(points: Array, mask: Array, low: Array, high: Array) -> Array:
    """``(K,)`` mean distance of the valid points of ``points (D, K, P)`` to the boxes ``low``, ``high`` ``(K, D)``
    (a lower bound of the directional Chamfer mean towards any line inside the box)."""
    squared = xp.full(points.shape[1:], 0.0, like=points)
    for d in range(points.shape[0]):
        gap = xp.clamp_min(xp.maximum(low[:, d, None] - points[d], points[d] - high[:, d, None]), 0.0)
        squared += gap * gap
    return xp.where(mask, xp.sqrt(squared), 0.0).sum(1) / mask.sum(1)


def _chamfer_of_group(a: Array, a_mask: Array, b: Array, b_mask: Array, buffers: tuple[Array, Array]) -> Array:
    """``(K,)`` symmetric Chamfer distances of the lines ``a (D, K, Pa)`` and ``b (D, K, Pb)`` (coordinate planes;
    padding repeats a line's last point, so it never changes a nearest distance, and is left out of the means).
    Nearest distances: :func:`~drivemetrics._internal.arrays.nearest_distances` (scipy's ``cdist`` values)."""
    k = a.shape[1]
    forward, backward = xp.nearest_distances(a, b, buffers[0][:k], buffers[1][:k])
    # sequential sums (cumsum): the same value whatever padding a group adds (trailing zeros add nothing)
    forward = xp.where(a_mask, forward, 0.0).cumsum(1)[:, -1] / a_mask.sum(1)
    backward = xp.where(b_mask, backward, 0.0).cumsum(1)[:, -1] / b_mask.sum(1)
    return (forward + backward) / 2


def bounded_chamfer(preds: FlatLines, target: FlatLines, pred_line: Array, gt_line: Array, reach: float) -> Array:
    """``(K,)`` symmetric Chamfer distances of the pairs ``(preds[pred_line[k]], target[gt_line[k]])``, exact for
    every pair within ``reach``; ``inf`` where a lower bound proves a distance above it.

    Bounds, cheapest first: the distance between the two bounding boxes, then the mean of both lines' point
    distances to the other line's box (each point is at least that far from every point of the other line). The
    pairs left are grouped by their lines' sample counts (in steps of 8), each group padded to its longest lines
    and computed :data:`POINT_PAIRS_PER_STEP` point pairs at a time in two buffers allocated once.

    Examples:
        >>> from drivemetrics.vectormap.lines import FlatLines
        >>> import numpy as np
        >>> from drivemetrics.vectormap.lines import bounded_chamfer
        >>> line = FlatLines(np.array([[0.0, 0.0], [0.0, 1.0]]), np.array([2]), np.array([0]), np.array([0]))
        >>> far = FlatLines(line.points + [0.0, 9.0], np.array([2]), np.array([0]), np.array([0]))
        >>> shifted = FlatLines(line.points + [0.5, 0.0], np.array([2]), np.array([0]), np.array([0]))
        >>> bounded_chamfer(line, far, np.array([0]), np.array([0]), 1.5).tolist()
        [inf]
        >>> bounded_chamfer(line, shifted, np.array([0]), np.array([0]), 1.5).tolist()
        [0.5]
    """
    out = xp.full(len(pred_line), np.inf, like=preds.points)
    limit = reach * (1 + 1e-9) + 1e-9  # the bounds' own rounding never drops a pair within reach
    a_low, a_high = _boxes(preds)
    b_low, b_high = _boxes(target)
    gap = xp.clamp_min(b_low[gt_line] - a_high[pred_line], 0.0) + xp.clamp_min(a_low[pred_line] - b_high[gt_line], 0.0)
    kept = xp.flatnonzero(xp.sqrt((gap * gap).sum(-1)) <= limit)
    if not len(kept):
        return out
    a_planes, b_planes = xp.transpose(preds.points, (1, 0)), xp.transpose(target.points, (1, 0))
    a_offsets, b_offsets = preds.offsets, target.offsets
    a_counts, b_counts = preds.counts[pred_line[kept]], target.counts[gt_line[kept]]
    key = (a_counts + 7) // 8 * (int(b_counts.max()) // 8 + 2) + (b_counts + 7) // 8
    order = xp.stable_argsort(key)
    most = int(((a_counts + 7) // 8 * 8 * ((b_counts + 7) // 8 * 8)).max())  # a group's widest pair (bound)
    shared = tuple(xp.full(max(POINT_PAIRS_PER_STEP, most), 0.0, like=preds.points) for _ in range(2))
    sorted_key, kept = key[order], kept[order]
    bounds = [0, *(xp.flatnonzero(sorted_key[1:] != sorted_key[:-1]) + 1).tolist(), len(kept)]
    for group in (kept[first:last] for first, last in itertools.pairwise(bounds)):
        i_all, j_all = pred_line[group], gt_line[group]
        width_a, width_b = int(preds.counts[i_all].max()), int(target.counts[j_all].max())
        per_step = max(1, POINT_PAIRS_PER_STEP // (width_a * width_b))
        size = min(per_step, len(group)) * width_a * width_b
        buffers = (shared[0][:size].reshape(-1, width_a, width_b), shared[1][:size].reshape(-1, width_a, width_b))
        for start in range(0, len(group), per_step):
            chosen, i, j = (
                group[start : start + per_step],
                i_all[start : start + per_step],
                j_all[start : start + per_step],
            )
            a, a_mask = _padded(a_planes, a_offsets[i], preds.counts[i], width_a)
            b, b_mask = _padded(b_planes, b_offsets[j], target.counts[j], width_b)
            bound = (
                _mean_distance_to_box(a, a_mask, b_low[j], b_high[j])
                + _mean_distance_to_box(b, b_mask, a_low[i], a_high[i])
            ) / 2
            near = bound <= limit
            if bool(near.all()):
                out[chosen] = _chamfer_of_group(a, a_mask, b, b_mask, buffers)
            elif bool(near.any()):
                out[chosen[near]] = _chamfer_of_group(a[:, near], a_mask[near], b[:, near], b_mask[near], buffers)
    return out


def match_flat(
    preds: FlatLines, target: FlatLines, proto: MapProtocol, thresholds: Sequence[float] | None = None
) -> tuple[Array, Array]:
    """Match resampled predictions to resampled GT lines (both :func:`resample_lines`; samples shared by index).

    Predictions of fewer than ``proto.min_pred_points`` input points must already be left out. Each prediction's
    nearest GT line of its sample and class (the first on a tie) is its candidate; visited by descending score
    (ties in input order), it is a true positive at a threshold when its distance is within it (inclusive) and no
    earlier prediction took that GT there (the references' rule; the protocol must have ``fallback=False``).

    Returns:
        ``rows (P, 2 + T)`` float64 ``(score, class id, true-positive flags)`` of the predictions in order, and
        ``num_targets (C,)`` GT lines per class.

    Examples:
        >>> from drivemetrics.vectormap.protocol import get_protocol
        >>> from drivemetrics.vectormap.lines import FlatLines
        >>> import numpy as np
        >>> from drivemetrics.vectormap.lines import match_flat
        >>> from drivemetrics.vectormap.lines import resample_lines
        >>> proto = get_protocol("av2-cvpr23")
        >>> gt = FlatLines(np.array([[0.0, 0.0], [0.0, 10.0]]), np.array([2]), np.array([0]), np.array([1]))
        >>> pred = FlatLines(gt.points + [0.7, 0.0], np.array([2]), np.array([0]), np.array([1]), np.array([0.9]))
        >>> rows, num_targets = match_flat(resample_lines(pred, proto), resample_lines(gt, proto), proto)
        >>> rows.tolist(), num_targets.tolist()
        ([[0.9, 1.0, 0.0, 1.0, 1.0]], [0, 1, 0])
    """
    if proto.fallback or proto.buffer_prefilter is not None:
        raise ValueError(f"protocol {proto.name!r}: the flat path implements the references' rule only")
    thresholds = tuple(float(t) for t in (proto.thresholds if thresholds is None else thresholds))
    num_classes = len(proto.class_names)
    nearest_gt, nearest_distance = nearest_targets(preds, target, num_classes, max(thresholds))
    true_positive = greedy_flags(preds.scores, nearest_gt, nearest_distance, thresholds)
    columns = [preds.scores[:, None], preds.labels[:, None], true_positive]
    rows = xp.cat([xp.astype(column, "float64") for column in columns], 1)
    return rows, xp.bincount(target.labels, num_classes)


def _first_of_runs(keys: Array) -> Array:
    """``(K,)`` bool: where a run of equal ``keys`` starts."""
    first = xp.full(len(keys), True, like=keys, dtype="bool")
    first[1:] = keys[1:] != keys[:-1]
    return first


def nearest_targets(preds: FlatLines, target: FlatLines, num_classes: int, reach: float) -> tuple[Array, Array]:
    """Each prediction's nearest GT line of its sample and class (``-1`` where none lies within ``reach``; the
    first on a tie, the references' argmin) and its Chamfer distance (``inf`` where none): ``(P,)`` int64 and
    ``(P,)`` float64.

    Examples:
        >>> import numpy as np
        >>> from drivemetrics.vectormap.lines import FlatLines, nearest_targets
        >>> gt = FlatLines(np.array([[0.0, 0.0], [0.0, 10.0]]), np.array([2]), np.array([0]), np.array([1]))
        >>> pred = FlatLines(gt.points + [0.7, 0.0], np.array([2]), np.array([0]), np.array([1]), np.array([0.9]))
        >>> nearest_targets(pred, gt, 3, 1.5)
        (array([0]), array([0.7]))
    """
    pred_index, gt_index = candidate_pairs(preds, target, num_classes)
    distance = bounded_chamfer(preds, target, pred_index, gt_index, reach)
    num_preds = len(preds.counts)
    # nearest GT of each prediction: pairs come prediction by prediction, GT lines in order, so the first minimum
    # of each prediction's run is the reference's argmin
    nearest_distance = xp.full(num_preds, np.inf, like=preds.points)
    nearest_gt = xp.full(num_preds, -1, like=preds.counts, dtype="int64")
    finite = xp.flatnonzero(distance < np.inf)
    if len(finite):
        order = finite[xp.stable_argsort(distance[finite])]  # by distance, then pair (stable), then prediction
        order = order[xp.stable_argsort(pred_index[order])]
        best = order[_first_of_runs(pred_index[order])]
        nearest_distance[pred_index[best]] = distance[best]
        nearest_gt[pred_index[best]] = gt_index[best]
    return nearest_gt, nearest_distance


def greedy_flags(scores: Array, nearest_gt: Array, nearest_distance: Array, thresholds: Sequence[float]) -> Array:
    """``(P, T)`` true-positive flags of the references' greedy rule: visited by descending score (ties in input
    order), a prediction is a true positive at a threshold when its nearest GT (:func:`nearest_targets`) lies
    within it (inclusive) and no earlier prediction took that GT there.

    Examples:
        >>> import numpy as np
        >>> from drivemetrics.vectormap.lines import greedy_flags
        >>> greedy_flags(np.array([0.5, 0.9]), np.array([0, 0]), np.array([0.2, 0.8]), (0.5, 1.0)).tolist()
        [[True, False], [False, True]]
    """
    num_preds = len(scores)
    # a prediction is a true positive at t when within t and first within t among those sharing its nearest GT
    visit = xp.stable_descending_order(scores)
    visit = visit[xp.stable_argsort(nearest_gt[visit])]  # by nearest GT, then descending score, then input order
    group_start = _first_of_runs(nearest_gt[visit])
    group = group_start.cumsum(0) - 1
    starts = xp.flatnonzero(group_start)
    true_positive = xp.full((num_preds, len(thresholds)), False, like=nearest_gt, dtype="bool")
    for t, threshold in enumerate(thresholds):
        within = (nearest_distance[visit] <= threshold) & (nearest_gt[visit] >= 0)
        count = within.cumsum(0)
        before_group = xp.cat([xp.full(1, 0, like=count, dtype="int64"), count])[starts][group]
        true_positive[visit, t] = within & (count - before_group == 1)
    return true_positive


def _area_ap(precision: np.ndarray, recall: np.ndarray, dtype: str) -> float:
    """VOC "area" AP of one curve as the references compute it: precision made monotone from the right, then the
    step terms at the recall changes only, summed by ``numpy.sum`` in ``dtype`` (MapTR: float32, stored as such)."""
    zero, one = np.zeros(1, dtype), np.ones(1, dtype)
    mrec = np.concatenate([zero, recall.astype(dtype), one])
    mpre = np.maximum.accumulate(np.concatenate([zero, precision.astype(dtype), zero])[::-1])[::-1]
    changes = np.flatnonzero(mrec[1:] != mrec[:-1])
    return float(np.sum((mrec[changes + 1] - mrec[changes]) * mpre[changes + 1]))


def ap_from_rows(rows: np.ndarray, num_targets: np.ndarray, proto: MapProtocol) -> dict[str, np.ndarray]:
    """Pool matched rows ``(S, 2 + T)`` (:func:`match_flat`) into ``ap_per_threshold (C, T)``, ``ap (C,)``,
    ``map`` (scalar), ``num_preds (C,)``: the values of
    :func:`~drivemetrics.vectormap.scoring.vector_map_ap_from_matches` (ties in score ordered by content).

    Examples:
        >>> from drivemetrics.vectormap.protocol import get_protocol
        >>> import numpy as np
        >>> from drivemetrics.vectormap.lines import ap_from_rows
        >>> rows = np.array([[0.9, 1.0, 1.0, 1.0, 1.0], [0.8, 1.0, 0.0, 0.0, 1.0]])  # score, class, 3 flags
        >>> out = ap_from_rows(rows, np.array([0, 2, 0]), get_protocol("av2-cvpr23"))
        >>> out["ap_per_threshold"][1].tolist(), out["num_preds"].tolist()
        ([0.5, 0.5, 1.0], [0, 2, 0])
    """
    num_classes, num_thresholds = len(proto.class_names), rows.shape[1] - 2
    flags = rows[:, 2:] > 0.5
    # content order: fewer true-positive thresholds first, then by the flags; the score sort below is stable
    keys = [flags[:, t] for t in reversed(range(num_thresholds))] + [flags.sum(1)]
    order = np.lexsort(keys) if len(rows) else np.zeros(0, dtype=np.int64)
    scores, labels, flags = rows[order, 0], rows[order, 1].astype(np.int64), flags[order]
    ap = np.zeros((num_classes, num_thresholds))
    num_preds = np.zeros(num_classes, dtype=np.int64)
    curve_dtype = "float32" if proto.float32_curve else "float64"
    for c in range(num_classes):
        chosen = labels == c
        num_preds[c] = int(chosen.sum())
        precision, recall = pooled_precision_recall(
            scores[chosen],
            np.ascontiguousarray(flags[chosen].T),
            int(num_targets[c]),
            precision_dtype=curve_dtype,
            recall_dtype=curve_dtype,
            validate_args=False,
        )
        ap[c] = [_area_ap(p, r, curve_dtype) for p, r in zip(precision, recall, strict=True)]
        if int(num_targets[c]) == 0 and proto.empty_class_ap == "nan":
            ap[c] = np.nan
    class_ap = ap.mean(-1)
    if proto.empty_class_ap == "nan":
        mean_ap = np.nanmean(class_ap) if not np.isnan(class_ap).all() else np.nan
    else:
        mean_ap = class_ap.mean()
    return {
        "map": np.asarray(mean_ap, dtype=np.float64),
        "ap": class_ap,
        "ap_per_threshold": ap,
        "num_preds": num_preds,
    }
