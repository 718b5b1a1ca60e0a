"""Map-AP matching on numpy arrays with every line stored once, back to back: the ``map-eval`` command's CPU path.

The lines of many samples are kept flat: ``points (N, D)`` with ``counts (L,)`` points per line (line ``i`` holds
rows ``offsets[i]:offsets[i + 1]``), each line's sample index, class id and score. Every step runs on this layout
without padding lines to a common length and without torch (``map-eval`` never imports it):

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
- :func:`ap_from_rows`: the pooled AP per class and threshold, class APs and mAP.

The values are those of :func:`~drivemetrics.vectormap.scoring.vector_map_matches` and
:func:`~drivemetrics.vectormap.scoring.vector_map_ap_from_matches` (the torch path of the Metric classes), which
the tests compare: the same IEEE operations in the same order (segment lengths ``sqrt(dx * dx + dy * dy)``, sums in
order, point distances as scipy's ``cdist``, sequential Chamfer means). Protocols with MapTR's buffer prefilter are
not handled here (the command runs them on the torch path).

Examples:
    >>> from drivemetrics.vectormap.protocol import get_protocol
    >>> from drivemetrics.vectormap.flat import FlatLines
    >>> import numpy as np
    >>> from drivemetrics.vectormap.flat import match_flat
    >>> from drivemetrics.vectormap.flat import resample_lines
    >>> proto = get_protocol("av2-cvpr23")
    >>> gt = FlatLines(np.array([[0.0, 0.0], [0.0, 10.0]]), np.array([2]), np.array([0]), np.array([1]))
    >>> pred = FlatLines(gt.points + [0.7, 0.0], np.array([2]), np.array([0]), np.array([1]), np.array([0.9]))
    >>> rows, num_targets = match_flat(resample_lines(pred, proto), resample_lines(gt, proto), proto)
    >>> rows.tolist(), num_targets.tolist()
    ([[0.9, 1.0, 0.0, 1.0, 1.0]], [0, 1, 0])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

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

#: point pairs (squared distances) computed at once in :func:`bounded_chamfer`: the block stays in the CPU cache
POINT_PAIRS_PER_STEP = 1 << 18
#: lines resampled at once in :func:`resample_flat`
LINES_PER_STEP = 4096


@dataclass
class FlatLines:
    """Lines of many samples stored back to back.

    Attributes:
        points: ``(N, D)`` float64 points (metres), line after line.
        counts: ``(L,)`` int64 points per line (each >= 1).
        sample: ``(L,)`` int64 index of each line's sample.
        labels: ``(L,)`` int64 class id of each line (the protocol's ``class_names`` order).
        scores: ``(L,)`` float64 confidences (predictions; empty for GT).
        tokens: the samples' tokens (``sample`` indexes them).

    Examples:
        >>> from drivemetrics.vectormap.flat import FlatLines
        >>> import numpy as np
        >>> lines = FlatLines(np.zeros((5, 2)), np.array([2, 3]), np.array([0, 0]), np.array([1, 2]), tokens=["a"])
        >>> lines.offsets.tolist(), lines.take(np.array([1])).counts.tolist(), lines.lines(0, 1).points.shape
        ([0, 2, 5], [3], (2, 2))
    """

    points: np.ndarray
    counts: np.ndarray
    sample: np.ndarray
    labels: np.ndarray
    scores: np.ndarray = field(default_factory=lambda: np.zeros(0))
    tokens: list[str] = field(default_factory=list)

    @property
    def offsets(self) -> np.ndarray:
        """``(L + 1,)`` first row of each line, then the row count."""
        return _offsets(self.counts)

    def lines(self, start: int, stop: int) -> FlatLines:
        """The consecutive lines ``start:stop`` (views, no copy)."""
        offsets = self.offsets
        scores = self.scores[start:stop] if self.scores.size else self.scores
        return FlatLines(
            self.points[offsets[start] : offsets[stop]],
            self.counts[start:stop],
            self.sample[start:stop],
            self.labels[start:stop],
            scores,
            self.tokens,
        )

    def take(self, lines: np.ndarray) -> FlatLines:
        """The lines ``lines`` (indices, in that order) as a new :class:`FlatLines` (same tokens)."""
        offsets = self.offsets
        counts = self.counts[lines]
        rows = np.repeat(offsets[lines] - np.cumsum(counts) + counts, counts) + np.arange(int(counts.sum()))
        scores = self.scores[lines] if self.scores.size else self.scores
        return FlatLines(self.points[rows], counts, self.sample[lines], self.labels[lines], scores, self.tokens)


def flatten_samples(samples: Sequence[Any], class_names: Sequence[str], dims: int, with_scores: bool) -> FlatLines:
    """:class:`~drivemetrics.vectormap.io.MapSample` objects as :class:`FlatLines` (the first ``dims`` coordinates).

    Raises ``ValueError`` naming the sample for a line with fewer coordinates or a class not in ``class_names``.

    Examples:
        >>> from drivemetrics.vectormap.io import MapSample
        >>> import numpy as np
        >>> from drivemetrics.vectormap.flat import flatten_samples
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


def _offsets(counts: np.ndarray) -> np.ndarray:
    """``(L + 1,)`` int64 first row of each of ``L`` consecutive runs of ``counts`` rows, then the row count."""
    out = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=out[1:])
    return out


def _cumulative_lengths(points: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Segment lengths ``(S,)`` of all lines (line after line), their running sums within each line (summed in
    order, as GEOS and :func:`~drivemetrics.polyline.arc_length` do) and each line's first segment ``(L,)``."""
    offsets = _offsets(counts)
    segments = np.maximum(counts - 1, 0)
    last_point = np.zeros(points.shape[0], dtype=bool)
    last_point[offsets[1:][counts > 0] - 1] = True
    start_point = np.flatnonzero(~last_point)  # every point but a line's last starts a segment
    delta = points[start_point + 1] - points[start_point]
    squared = delta[:, 0] * delta[:, 0]
    for d in range(1, points.shape[1]):
        squared = squared + delta[:, d] * delta[:, d]
    lengths = np.sqrt(squared)
    first_segment = np.cumsum(segments) - segments
    running = lengths.copy()
    if segments.size:
        # step k adds segment k of every line that has one: Python steps = the longest line, work = all segments
        order = np.argsort(-segments, kind="stable")
        firsts, longest = first_segment[order], int(segments.max())
        with_more = np.bincount(segments, minlength=longest + 1)[::-1].cumsum()[::-1]  # lines with >= k segments
        for k in range(1, longest):
            index = firsts[: int(with_more[k + 1])] + k
            running[index] += running[index - 1]
    return lengths, running, first_segment


def _grid(proto: MapProtocol, total: np.ndarray, line: np.ndarray, step: np.ndarray) -> np.ndarray:
    """Position of inner sample ``step`` (0-based) of each ``line``: ``spacing + step * delta`` (numpy's arange)
    or ``(step + 1) * (length / (n - 1))`` (numpy's linspace)."""
    if proto.resample == "spacing":
        delta = (proto.spacing + proto.spacing) - proto.spacing
        return proto.spacing + step.astype(np.float64) * delta
    return (step + 1).astype(np.float64) * (total[line] / (proto.num_samples - 1))


def resample_flat(
    points: np.ndarray, counts: np.ndarray, proto: MapProtocol, max_samples: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The protocol's resampling of flat lines (see :class:`FlatLines`): ``(samples (M, D), sample counts (L,))``.

    ``"spacing"``: positions ``0``, ``spacing + i * delta`` for ``i < ceil((length - spacing) / spacing)`` and the
    length (:func:`~drivemetrics.polyline.resample_by_spacing`); ``"count"``: ``num_samples`` positions
    ``i * (length / (n - 1))``, the last one the length (:func:`~drivemetrics.polyline.resample_by_count`). Each
    point as GEOS' ``interpolate``: the segment whose running end first exceeds the position, then
    ``p0 + t * (p1 - p0)``. Every line needs at least one point. A line needing more than ``max_samples`` samples
    (default: the limit ``max_map_line_points`` of :mod:`drivemetrics._internal.limits`, so that the cost follows
    the input's points, never the length its coordinates describe) raises ``ValueError`` before any is made.

    Examples:
        >>> from drivemetrics.vectormap.protocol import get_protocol
        >>> import numpy as np
        >>> from drivemetrics.vectormap.flat import resample_flat
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
    offsets = _offsets(counts)
    parts = [
        _resample_step(points[offsets[start] : offsets[stop]], counts[start:stop], proto, max_samples)
        for start, stop in zip(
            range(0, len(counts), LINES_PER_STEP),
            [*range(LINES_PER_STEP, len(counts), LINES_PER_STEP), len(counts)],
            strict=True,
        )
    ]
    return np.concatenate([part[0] for part in parts]), np.concatenate([part[1] for part in parts])


def _resample_step(
    points: np.ndarray, counts: np.ndarray, proto: MapProtocol, max_samples: int
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`resample_flat` of one step of lines."""
    num_lines = len(counts)
    lengths, running, first_segment = _cumulative_lengths(points, counts)
    segments = np.maximum(counts - 1, 0)
    total = np.zeros(num_lines)
    has = segments > 0
    total[has] = running[first_segment[has] + segments[has] - 1]
    if proto.resample == "spacing":
        inner = np.maximum(np.ceil((total - proto.spacing) / proto.spacing), 0).astype(np.int64)
        largest = int(inner.max()) + 2 if num_lines else 2
        if largest > max_samples:
            line = int(np.argmax(total))
            raise ValueError(
                f"line {line}: {float(total[line]):.6g} m long, it resamples to {largest:,} points at "
                f"{proto.spacing} m, more than max_map_line_points={max_samples:,} "
                f"({how_to_raise('max_map_line_points')})"
            )
    else:
        if proto.num_samples < 2:
            raise ValueError(f"`num_samples` must be >= 2, got {proto.num_samples}")
        inner = np.full(num_lines, proto.num_samples - 2, dtype=np.int64)
    # inner samples below each segment's running end, counted per segment (estimated, then checked exactly)
    segment_line = np.repeat(np.arange(num_lines), segments)
    ends = running
    limit = inner[segment_line]
    if proto.resample == "spacing":
        delta = (proto.spacing + proto.spacing) - proto.spacing
        estimate = np.ceil((ends - proto.spacing) / delta)
    else:
        step = total[segment_line] / (proto.num_samples - 1)
        with np.errstate(divide="ignore", invalid="ignore"):
            estimate = np.where(step > 0, np.ceil(ends / np.where(step > 0, step, 1.0)) - 1, 0.0)
    below = np.clip(np.nan_to_num(estimate), 0, limit).astype(np.int64)
    for _ in range(64):  # each count is off by one at most; the loop ends after a pass or two
        lower = (below > 0) & (_grid(proto, total, segment_line, below - 1) >= ends)
        higher = (below < limit) & (_grid(proto, total, segment_line, below) < ends)
        if not (lower.any() or higher.any()):
            break
        below = below - lower + higher
    # sample layout: the start, the inner samples, the end
    sample_counts = inner + 2
    sample_offsets = _offsets(sample_counts)
    num_samples = int(sample_offsets[-1])
    sample_line = np.repeat(np.arange(num_lines), sample_counts)
    slot = np.arange(num_samples) - sample_offsets[:-1][sample_line]
    is_last = slot == sample_counts[sample_line] - 1
    is_inner = (slot > 0) & ~is_last
    position = np.zeros(num_samples)
    inner_rows = np.flatnonzero(is_inner)
    position[inner_rows] = _grid(proto, total, sample_line[inner_rows], slot[inner_rows] - 1)
    position[is_last] = total
    # segment of each sample = segments whose running end is <= its position
    segment = np.zeros(num_samples, dtype=np.int64)
    segment[is_last] = segments  # the end: past the last segment
    segment[sample_offsets[:-1]] = np.bincount(segment_line[ends <= 0], minlength=num_lines)
    # an inner sample s of a line lies past every segment that has <= s inner samples below its end
    counted = below < limit
    bins = np.bincount(sample_offsets[:-1][segment_line[counted]] + 1 + below[counted], minlength=num_samples + 1)
    passed = np.cumsum(bins[:num_samples])
    passed -= np.repeat(passed[sample_offsets[:-1]], sample_counts)  # cumulative count within the line
    segment[inner_rows] = passed[inner_rows]
    # interpolate p0 + t * (p1 - p0) coordinate by coordinate; at or past the end: the last point
    at_end = segment >= segments[sample_line]
    point_offsets = _offsets(counts)
    first_point = point_offsets[:-1][sample_line] + np.where(at_end, counts[sample_line] - 1, segment)
    fraction: np.ndarray = np.zeros(num_samples)
    if len(lengths):
        index = np.minimum(first_segment[sample_line] + segment, len(lengths) - 1)  # past the end: unused
        start = np.where(segment > 0, running.take(np.maximum(index - 1, 0)), 0.0)
        length = lengths.take(index)
        moving = ~at_end & (length > 0)
        fraction = np.where(moving, (position - start) / np.where(moving, length, 1.0), 0.0)
    next_point = np.where(at_end, first_point, first_point + 1)
    samples = np.empty((num_samples, points.shape[1]))
    for d in range(points.shape[1]):
        coordinate = np.ascontiguousarray(points[:, d])
        p0, p1 = coordinate.take(first_point), coordinate.take(next_point)
        samples[:, d] = np.where(at_end, p0, p0 + fraction * (p1 - p0))
    return samples, sample_counts


def resample_lines(lines: FlatLines, proto: MapProtocol) -> FlatLines:
    """``lines`` with their points replaced by the protocol's samples (:func:`resample_flat`).

    Examples:
        >>> from drivemetrics.vectormap.protocol import get_protocol
        >>> from drivemetrics.vectormap.flat import FlatLines
        >>> import numpy as np
        >>> from drivemetrics.vectormap.flat import resample_lines
        >>> line = FlatLines(np.array([[0.0, 0.0], [0.0, 1.0]]), np.array([2]), np.array([0]), np.array([0]))
        >>> resample_lines(line, get_protocol("av2-cvpr23")).counts.tolist()
        [5]
    """
    samples, counts = resample_flat(lines.points, lines.counts, proto)
    return replace(lines, points=samples, counts=counts)


def candidate_pairs(preds: FlatLines, target: FlatLines, num_classes: int) -> tuple[np.ndarray, np.ndarray]:
    """``(prediction line, GT line)`` index pairs of the same sample and class: predictions in order, each with the
    GT lines of its sample and class in their order.

    Examples:
        >>> from drivemetrics.vectormap.flat import candidate_pairs
        >>> from drivemetrics.vectormap.flat import FlatLines
        >>> import numpy as np
        >>> def lines(samples, labels):
        ...     return FlatLines(np.zeros((2 * len(samples), 2)), np.full(len(samples), 2), np.array(samples),
        ...                      np.array(labels))
        >>> candidate_pairs(lines([0, 0, 1], [1, 2, 1]), lines([0, 1, 0, 0], [1, 1, 1, 0]), 3)
        (array([0, 0, 2]), array([0, 2, 1]))
    """
    gt_key = target.sample * num_classes + target.labels
    gt_order = np.argsort(gt_key, kind="stable")
    sorted_keys = gt_key[gt_order]
    pred_key = preds.sample * num_classes + preds.labels
    low = np.searchsorted(sorted_keys, pred_key, side="left")
    many = np.searchsorted(sorted_keys, pred_key, side="right") - low
    pred_index = np.repeat(np.arange(len(pred_key)), many)
    first = np.cumsum(many) - many
    gt_index = gt_order[np.repeat(low - first, many) + np.arange(int(many.sum()))]
    return pred_index, gt_index


def _boxes(lines: FlatLines) -> tuple[np.ndarray, np.ndarray]:
    """Each line's bounding box ``(low (L, D), high (L, D))``."""
    if not len(lines.counts):
        return np.zeros((0, lines.points.shape[1])), np.zeros((0, lines.points.shape[1]))
    starts = lines.offsets[:-1]
    return np.minimum.reduceat(lines.points, starts, axis=0), np.maximum.reduceat(lines.points, starts, axis=0)


def _padded(planes: np.ndarray, offsets: np.ndarray, counts: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """``(D, K, width)`` coordinates of the lines starting at ``offsets (K,)`` with ``counts (K,)`` points in the
    coordinate planes ``planes (D, N)``, each line padded with its last point, and the ``(K, width)`` mask."""
    slot = np.arange(width)
    mask = slot < counts[:, None]
    rows = offsets[:, None] + np.minimum(slot, counts[:, None] - 1)
    return planes[:, rows], mask


def _mean_distance_to_box(points: np.ndarray, mask: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """``(K,)`` mean distance of the valid points of ``points (D, K, P)`` to the boxes ``low``, ``high`` ``(K, D)``
    (a lower bound of the directional Chamfer mean towards any line inside the box)."""
    squared = np.zeros(points.shape[1:])
    for d in range(points.shape[0]):
        gap = np.maximum(np.maximum(low[:, d, None] - points[d], points[d] - high[:, d, None]), 0.0)
        squared += gap * gap
    return np.where(mask, np.sqrt(squared), 0.0).sum(1) / mask.sum(1)


def _chamfer_of_group(
    a: np.ndarray, a_mask: np.ndarray, b: np.ndarray, b_mask: np.ndarray, buffers: tuple[np.ndarray, np.ndarray]
) -> np.ndarray:
    """``(K,)`` symmetric Chamfer distances of the lines ``a (D, K, Pa)`` and ``b (D, K, Pb)`` (coordinate planes;
    padding repeats a line's last point, so it never changes a nearest distance, and is left out of the means).
    Nearest points are found on squared distances (summed coordinate by coordinate, as scipy's ``cdist``), rooted
    once per point."""
    k = a.shape[1]
    squared, delta = buffers[0][:k], buffers[1][:k]
    np.subtract(a[0][:, :, None], b[0][:, None, :], out=squared)
    np.multiply(squared, squared, out=squared)
    for d in range(1, a.shape[0]):
        np.subtract(a[d][:, :, None], b[d][:, None, :], out=delta)
        np.multiply(delta, delta, out=delta)
        np.add(squared, delta, out=squared)
    # sequential sums (cumsum): the same value whatever padding a group adds (trailing zeros add nothing)
    forward = np.where(a_mask, np.sqrt(squared.min(2)), 0.0).cumsum(1)[:, -1] / a_mask.sum(1)
    backward = np.where(b_mask, np.sqrt(squared.min(1)), 0.0).cumsum(1)[:, -1] / b_mask.sum(1)
    return (forward + backward) / 2


def bounded_chamfer(
    preds: FlatLines, target: FlatLines, pred_line: np.ndarray, gt_line: np.ndarray, reach: float
) -> np.ndarray:
    """``(K,)`` symmetric Chamfer distances of the pairs ``(preds[pred_line[k]], target[gt_line[k]])``, exact for
    every pair within ``reach``; ``inf`` where a lower bound proves a distance above it.

    Bounds, cheapest first: the distance between the two bounding boxes, then the mean of both lines' point
    distances to the other line's box (each point is at least that far from every point of the other line). The
    pairs left are grouped by their lines' sample counts (in steps of 8), each group padded to its longest lines
    and computed :data:`POINT_PAIRS_PER_STEP` point pairs at a time in two buffers allocated once.

    Examples:
        >>> from drivemetrics.vectormap.flat import FlatLines
        >>> import numpy as np
        >>> from drivemetrics.vectormap.flat import bounded_chamfer
        >>> line = FlatLines(np.array([[0.0, 0.0], [0.0, 1.0]]), np.array([2]), np.array([0]), np.array([0]))
        >>> far = FlatLines(line.points + [0.0, 9.0], np.array([2]), np.array([0]), np.array([0]))
        >>> shifted = FlatLines(line.points + [0.5, 0.0], np.array([2]), np.array([0]), np.array([0]))
        >>> bounded_chamfer(line, far, np.array([0]), np.array([0]), 1.5).tolist()
        [inf]
        >>> bounded_chamfer(line, shifted, np.array([0]), np.array([0]), 1.5).tolist()
        [0.5]
    """
    out = np.full(len(pred_line), np.inf)
    limit = reach * (1 + 1e-9) + 1e-9  # the bounds' own rounding never drops a pair within reach
    a_low, a_high = _boxes(preds)
    b_low, b_high = _boxes(target)
    gap = np.maximum(b_low[gt_line] - a_high[pred_line], 0.0) + np.maximum(a_low[pred_line] - b_high[gt_line], 0.0)
    kept = np.flatnonzero(np.sqrt((gap * gap).sum(-1)) <= limit)
    if not len(kept):
        return out
    a_planes, b_planes = np.ascontiguousarray(preds.points.T), np.ascontiguousarray(target.points.T)
    a_offsets, b_offsets = preds.offsets, target.offsets
    a_counts, b_counts = preds.counts[pred_line[kept]], target.counts[gt_line[kept]]
    key = (a_counts + 7) // 8 * (int(b_counts.max()) // 8 + 2) + (b_counts + 7) // 8
    order = np.argsort(key, kind="stable")
    most = int(((a_counts + 7) // 8 * 8 * ((b_counts + 7) // 8 * 8)).max())  # a group's widest pair (bound)
    shared = (np.empty(max(POINT_PAIRS_PER_STEP, most)), np.empty(max(POINT_PAIRS_PER_STEP, most)))
    for group in np.split(kept[order], np.flatnonzero(np.diff(key[order])) + 1):
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
            if near.all():
                out[chosen] = _chamfer_of_group(a, a_mask, b, b_mask, buffers)
            elif near.any():
                out[chosen[near]] = _chamfer_of_group(a[:, near], a_mask[near], b[:, near], b_mask[near], buffers)
    return out


def match_flat(
    preds: FlatLines, target: FlatLines, proto: MapProtocol, thresholds: Sequence[float] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Match resampled predictions to resampled GT lines (both :func:`resample_lines`; samples shared by index).

    Predictions of fewer than ``proto.min_pred_points`` input points must already be left out. Each prediction's
    nearest GT line of its sample and class (the first on a tie) is its candidate; visited by descending score
    (ties in input order), it is a true positive at a threshold when its distance is within it (inclusive) and no
    earlier prediction took that GT there (the references' rule; the protocol must have ``fallback=False``).

    Returns:
        ``rows (P, 2 + T)`` float64 ``(score, class id, true-positive flags)`` of the predictions in order, and
        ``num_targets (C,)`` GT lines per class.
    """
    if proto.fallback or proto.buffer_prefilter is not None:
        raise ValueError(f"protocol {proto.name!r}: the flat path implements the references' rule only")
    thresholds = tuple(float(t) for t in (proto.thresholds if thresholds is None else thresholds))
    num_classes = len(proto.class_names)
    nearest_gt, nearest_distance = nearest_targets(preds, target, num_classes, max(thresholds))
    true_positive = greedy_flags(preds.scores, nearest_gt, nearest_distance, thresholds)
    rows = np.concatenate(
        [preds.scores[:, None], preds.labels[:, None].astype(np.float64), true_positive.astype(np.float64)], 1
    )
    return rows, np.bincount(target.labels, minlength=num_classes).astype(np.int64)


def nearest_targets(
    preds: FlatLines, target: FlatLines, num_classes: int, reach: float
) -> tuple[np.ndarray, np.ndarray]:
    """Each prediction's nearest GT line of its sample and class (``-1`` where none lies within ``reach``; the
    first on a tie, the references' argmin) and its Chamfer distance (``inf`` where none): ``(P,)`` int64 and
    ``(P,)`` float64.

    Examples:
        >>> import numpy as np
        >>> from drivemetrics.vectormap.flat import FlatLines, nearest_targets
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
    nearest_distance = np.full(num_preds, np.inf)
    nearest_gt = np.full(num_preds, -1, dtype=np.int64)
    finite = np.isfinite(distance)
    if finite.any():
        order = np.lexsort((np.arange(len(distance)), distance, pred_index))
        order = order[finite[order]]
        first = np.ones(len(order), dtype=bool)
        first[1:] = pred_index[order][1:] != pred_index[order][:-1]
        best = order[first]
        nearest_distance[pred_index[best]] = distance[best]
        nearest_gt[pred_index[best]] = gt_index[best]
    return nearest_gt, nearest_distance


def greedy_flags(
    scores: np.ndarray, nearest_gt: np.ndarray, nearest_distance: np.ndarray, thresholds: Sequence[float]
) -> np.ndarray:
    """``(P, T)`` true-positive flags of the references' greedy rule: visited by descending score (ties in input
    order), a prediction is a true positive at a threshold when its nearest GT (:func:`nearest_targets`) lies
    within it (inclusive) and no earlier prediction took that GT there.

    Examples:
        >>> import numpy as np
        >>> from drivemetrics.vectormap.flat import greedy_flags
        >>> greedy_flags(np.array([0.5, 0.9]), np.array([0, 0]), np.array([0.2, 0.8]), (0.5, 1.0)).tolist()
        [[True, False], [False, True]]
    """
    num_preds = len(scores)
    # a prediction is a true positive at t when within t and first within t among those sharing its nearest GT
    visit = np.lexsort((np.arange(num_preds), -scores, nearest_gt))
    group_start = np.ones(num_preds, dtype=bool)
    group_start[1:] = nearest_gt[visit][1:] != nearest_gt[visit][:-1]
    group = np.cumsum(group_start) - 1
    true_positive = np.zeros((num_preds, len(thresholds)), dtype=bool)
    for t, threshold in enumerate(thresholds):
        within = (nearest_distance[visit] <= threshold) & (nearest_gt[visit] >= 0)
        count = np.cumsum(within)
        before_group = np.concatenate([[0], count])[np.flatnonzero(group_start)][group]
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
        >>> from drivemetrics.vectormap.flat import ap_from_rows
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
