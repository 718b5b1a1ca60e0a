"""Kernels of vectorised HD-map AP (MapTR, Argoverse 2 challenge): per-class Chamfer AP at 0.5 / 1.0 / 1.5 m.

Every frame holds predicted polylines with a class label and a confidence, and GT polylines with a class label.
Per class and frame, predictions and GT are resampled along arc length, compared by symmetric Chamfer distance and
matched greedily by descending confidence; the matches of all frames are pooled per class into a VOC "area" AP per
threshold. The protocol (:mod:`drivemetrics.vectormap.protocol`) decides resampling, prefilter, matching rule,
precision dtypes and the AP of a class without GT. All frames and classes are processed at once on the inputs'
device: polylines are regrouped into ``(B, C, K, P, D)`` (frame, class, instance, point, coordinate).

Inputs of a batch of ``B`` frames, ``(preds, target)``, each a dict of batched tensors (padding polylines have
length 0):

- ``preds``: ``points (B, N, P, D)`` in metres, ``labels (B, N)`` class ids in the protocol's ``class_names``
  order, ``scores (B, N)``, optionally ``lengths (B, N)``;
- ``target``: ``points (B, M, Q, D)``, ``labels (B, M)``, optionally ``lengths (B, M)``;

or each a list of ``B`` per-frame dicts, torchmetrics' detection convention (as ``MeanAveragePrecision``):
``points (M, Q, D)``, ``labels (M,)``, ``scores (M,)`` (preds), optionally ``lengths (M,)``; frames may differ in
``M`` and ``Q``. A list is padded once into the batched form (:func:`_batch_frames`), with the same numbers.

This module needs neither torchmetrics nor the Metric classes (:mod:`drivemetrics.vectormap.map_ap`), so that
``map-eval`` does not import them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import torch
from torch import Tensor

from drivemetrics._internal import arrays
from drivemetrics._internal.validation import check_coordinates_within_limit, check_values
from drivemetrics.polyline import (
    arc_length,
    average_precision_area,
    chamfer_distance_pairs,
    check_polylines,
    greedy_match,
    pooled_precision_recall,
    resample_by_count,
    resample_by_spacing,
)
from drivemetrics.vectormap.buffer import buffers_intersect
from drivemetrics.vectormap.protocol import MapProtocol, ProtocolName, get_protocol

__all__ = ["vector_map_ap", "vector_map_ap_from_matches", "vector_map_matches"]


def _group_by_class(points: Tensor, lengths: Tensor, labels: Tensor, num_classes: int) -> tuple[Tensor, Tensor, Tensor]:
    """Regroup ``(B, N, P, D)`` into ``(B, C, K, P, D)`` by label; returns points, lengths, source index (-1 = none)."""
    batch = lengths.shape[0]
    valid = lengths > 0
    onehot = (labels.unsqueeze(-1) == torch.arange(num_classes, device=labels.device)) & valid.unsqueeze(-1)
    position = onehot.long().cumsum(1) - 1  # (B, N, C)
    size = int(onehot.sum(1).max()) if onehot.numel() else 0
    source = torch.full((batch, num_classes, max(size, 0)), -1, dtype=torch.long, device=lengths.device)
    b, n, c = onehot.nonzero(as_tuple=True)
    source[b, c, position[b, n, c]] = n
    safe = source.clamp_min(0)
    rows = torch.arange(batch, device=lengths.device)[:, None]
    flat = safe.reshape(batch, source.shape[1] * source.shape[2])  # explicit sizes: empty batches and frames work
    grouped = points[rows, flat].reshape(*source.shape, *points.shape[-2:])  # row copies
    grouped_lengths = torch.where(source >= 0, lengths.gather(1, flat).reshape(source.shape), 0)
    return grouped, grouped_lengths, source


def _resample_by_spacing_in_chunks(
    points: Tensor, lengths: Tensor, spacing: float, chunk: int = 1024
) -> tuple[Tensor, Tensor]:
    """:func:`resample_by_spacing` of ``(L, P, D)`` lines, the same tensors, with less padding work: lines sorted by
    arc length, ``chunk`` at a time (each chunk only as wide as its longest line), longest first (so a too long line
    raises the same error); each line is then padded with its last sample, the point at its full length, which is
    what one call puts in every slot beyond a line's count."""
    if points.shape[0] <= chunk:
        return resample_by_spacing(points, lengths, spacing=spacing, validate_args=False)
    order = torch.argsort(arc_length(points, lengths), descending=True, stable=True)
    pieces = [
        (index, *resample_by_spacing(points[index], lengths[index], spacing=spacing, validate_args=False))
        for index in order.split(chunk)
    ]
    width = pieces[0][1].shape[1]
    samples = points.new_empty(points.shape[0], width, points.shape[-1])
    counts = torch.empty_like(lengths)
    for index, part, part_counts in pieces:
        samples[index] = torch.cat([part, part[:, -1:].expand(-1, width - part.shape[1], -1)], 1)
        counts[index] = part_counts
    return samples, counts


def _resample_lines(points: Tensor, lengths: Tensor, proto: MapProtocol) -> tuple[Tensor, Tensor, Tensor]:
    """Resample the present polylines of ``(..., N, P, D)`` as the protocol says, stored once and flat.

    Returns ``(lines (L, S, D), counts (L,), line (..., N))``: the ``L`` present lines' samples (each padded with
    its last sample), their sample counts, and each slot's row in ``lines`` (-1 for an absent slot). Padding slots
    cost nothing, and no ``(..., N, S, D)`` tensor (mostly padding for fixed-spacing samples) is made.
    """
    present = lengths > 0
    flat_points, flat_lengths = points[present], lengths[present]  # (L, P, D), (L,)
    if proto.resample == "count":
        if flat_points.shape[0]:
            # 1024 lines at a time: the temporaries stay in cache (3x faster than all lines at once, same values)
            samples = torch.cat(
                [
                    resample_by_count(
                        flat_points[start : start + 1024],
                        flat_lengths[start : start + 1024],
                        num_samples=proto.num_samples,
                        validate_args=False,
                    )
                    for start in range(0, flat_points.shape[0], 1024)
                ]
            )
        else:
            samples = points.new_zeros(0, proto.num_samples, points.shape[-1])
        counts = torch.full_like(flat_lengths, proto.num_samples)
    else:
        samples, counts = _resample_by_spacing_in_chunks(flat_points, flat_lengths, proto.spacing)
    line = torch.full(lengths.shape, -1, dtype=torch.long, device=lengths.device)
    line[present] = torch.arange(samples.shape[0], device=lengths.device)
    return samples, counts, line


def _check_inputs(
    name: str, points: Tensor, lengths: Tensor | None, labels: Tensor, num_classes: int, check_values: bool = True
) -> Tensor:
    if lengths is None:
        if not arrays.is_tensor(points) or points.ndim != 4:
            raise ValueError(f"`{name}` must have shape (B, N, P, D), got {getattr(points, 'shape', type(points))}")
        lengths = torch.full(points.shape[:2], points.shape[2], dtype=torch.long, device=points.device)
    check_polylines(points, lengths, name, check_values=check_values)
    if points.ndim != 4:
        raise ValueError(f"`{name}` must have shape (B, N, P, D), got {tuple(points.shape)}")
    if labels.shape != lengths.shape or labels.is_floating_point():
        raise ValueError(f'`{name}["labels"]` must be integer class ids of shape {tuple(lengths.shape)}')
    used = labels[lengths > 0]
    if check_values and used.numel() and (int(used.min()) < 0 or int(used.max()) >= num_classes):
        raise ValueError(
            f'`{name}["labels"]` must lie in [0, {num_classes - 1}], got {int(used.min())}..{int(used.max())}'
        )
    if not torch.isfinite(points).all():
        raise ValueError(f"`{name}` holds NaN or infinite coordinates")
    if check_values:  # the map readers' limit on the lines' points (padding points are not read)
        valid = torch.arange(points.shape[-2], device=points.device) < lengths.to(points.device)[..., None]
        check_coordinates_within_limit(points[valid], f'{name}["points"]', limit="max_map_coordinate")
    return lengths


def _batch_frames(frames: Sequence[Mapping[str, Tensor]], name: str) -> dict[str, Tensor]:
    """Per-frame dicts (torchmetrics' detection convention) padded into one dict of batched tensors.

    Args:
        frames: ``B`` dicts with the same keys: ``points (M_b, Q_b, D)``, ``labels (M_b,)`` and, where present,
            ``scores (M_b,)`` and ``lengths (M_b,)`` (valid points per line; absent: all ``Q_b``).
        name: the argument's name, for errors.

    Returns:
        ``points (B, M, Q, D)`` zero-padded to the largest ``M_b`` and ``Q_b``, ``lengths (B, M)`` (0 marks a
        padding line), ``labels (B, M)`` and ``scores (B, M)`` where the frames have them.
    """
    if not frames:
        raise ValueError(f"`{name}` is an empty list; give at least one frame (a frame may hold no polylines)")
    keys = set(frames[0]) if isinstance(frames[0], Mapping) else set()
    for b, frame in enumerate(frames):
        if not isinstance(frame, Mapping):
            raise TypeError(f"`{name}[{b}]` must be a dict of one frame's tensors, got {type(frame).__name__}")
        if set(frame) != keys:
            raise ValueError(f"`{name}[{b}]` has keys {sorted(frame)}, `{name}[0]` has {sorted(keys)}; they must agree")
        points = frame.get("points")
        if not arrays.is_tensor(points) or points.ndim != 3:
            raise ValueError(
                f'`{name}[{b}]["points"]` must be a tensor of shape (M, Q, D), got {getattr(points, "shape", points)}'
            )
        for key in keys - {"points"}:
            value = frame[key]
            if not arrays.is_tensor(value) or value.shape != points.shape[:1]:
                shape = getattr(value, "shape", type(value).__name__)
                raise ValueError(f'`{name}[{b}]["{key}"]` must be a tensor of shape ({points.shape[0]},), got {shape}')
    dims = {frame["points"].shape[2] for frame in frames}
    if len(dims) > 1:
        raise ValueError(f"the frames of `{name}` must share D (coordinates per point), got {sorted(dims)}")
    first = frames[0]["points"]
    most = max(frame["points"].shape[0] for frame in frames)
    longest = max(max(frame["points"].shape[1] for frame in frames), 1)
    out = {"points": first.new_zeros(len(frames), most, longest, dims.pop())}
    out["lengths"] = torch.zeros(len(frames), most, dtype=torch.long, device=first.device)
    for key in keys - {"points", "lengths"}:  # labels, scores: each frame's dtype kept (a float label is an error)
        out[key] = frames[0][key].new_zeros(len(frames), most)
    for b, frame in enumerate(frames):  # one copy per frame, not per line or point
        count, length = frame["points"].shape[:2]
        out["points"][b, :count, :length] = frame["points"]
        out["lengths"][b, :count] = frame.get("lengths", length)
        for key in keys - {"points", "lengths"}:
            if frame[key].dtype != out[key].dtype:
                raise ValueError(f'`{name}[{b}]["{key}"]` is {frame[key].dtype}, `{name}[0]` {out[key].dtype}')
            out[key][b, :count] = frame[key]
    return out


def _unpack(
    batch: Mapping[str, Tensor] | Sequence[Mapping[str, Tensor]], name: str, with_scores: bool
) -> tuple[Tensor, Tensor | None, Tensor, Tensor | None]:
    """``(points, lengths or None, labels, scores or None)`` of a container; a missing key names ``name``."""
    if isinstance(batch, (list, tuple)):
        batch = _batch_frames(batch, name)
    if not isinstance(batch, Mapping):
        raise TypeError(
            f"`{name}` must be a dict of batched tensors or a list of per-frame dicts, got {type(batch).__name__}"
        )
    needed = ("points", "labels", "scores") if with_scores else ("points", "labels")
    missing = [key for key in needed if key not in batch]
    if missing:
        raise ValueError(f"`{name}` lacks {missing} (keys: points, labels{', scores' if with_scores else ''}, lengths)")
    return batch["points"], batch.get("lengths"), batch["labels"], batch.get("scores") if with_scores else None


def _buffer_prefilter(
    distances: Tensor,
    pred_lines: Tensor,
    pred_counts: Tensor,
    pred_line: Tensor,
    gt_lines: Tensor,
    gt_counts: Tensor,
    gt_line: Tensor,
    buffer: float,
    reach: float,
) -> None:
    """Set to ``inf`` (in place) the pairs of ``distances (B, C, K, L)`` whose buffers of ``buffer`` metres miss
    (lines, counts and slot rows as :func:`_resample_lines` gives them).

    A rejected pair changes a result only if it is a prediction's nearest GT within ``reach`` (the largest
    threshold): those are tested; where one is rejected the next nearest becomes the candidate (repeat until none
    is rejected).
    """
    tested = torch.zeros_like(distances, dtype=torch.bool)
    while True:
        nearest_value, nearest_index = distances.min(-1)
        candidate = torch.zeros_like(tested)
        candidate.scatter_(-1, nearest_index.unsqueeze(-1), (nearest_value <= reach).unsqueeze(-1))
        candidate &= ~tested
        if not bool(candidate.any()):
            break
        tested |= candidate
        b, c, k, g = candidate.nonzero(as_tuple=True)
        i, j = pred_line[b, c, k], gt_line[b, c, g]
        meet = buffers_intersect(
            pred_lines[i], pred_counts[i], gt_lines[j], gt_counts[j], distance=buffer, validate_args=False
        )
        distances[b[~meet], c[~meet], k[~meet], g[~meet]] = torch.inf


def _distance_matrix(
    pred_lines: Tensor,
    pred_counts: Tensor,
    pred_line: Tensor,
    gt_lines: Tensor,
    gt_counts: Tensor,
    gt_line: Tensor,
    proto: MapProtocol,
    reach: float,
) -> Tensor:
    """``(B, C, K, L)`` Chamfer distances of every prediction to every GT line of its frame and class (lines as
    :func:`_resample_lines` gives them); pairs provably farther than ``reach`` (the largest threshold) never match:
    not computed (inf), see ``max_distance``; then the protocol's buffer prefilter."""
    b, c, k, g = ((pred_line >= 0)[..., :, None] & (gt_line >= 0)[..., None, :]).nonzero(as_tuple=True)
    pair_distances = chamfer_distance_pairs(
        pred_lines,
        pred_counts,
        gt_lines,
        gt_counts,
        pred_line[b, c, k],
        gt_line[b, c, g],
        max_distance=reach,
        validate_args=False,
    )
    distances = torch.full(
        (*pred_line.shape, gt_line.shape[-1]), torch.inf, dtype=pred_lines.dtype, device=pred_lines.device
    )
    distances[b, c, k, g] = pair_distances
    if proto.buffer_prefilter is not None and distances.numel() and distances.shape[-1]:
        _buffer_prefilter(
            distances, pred_lines, pred_counts, pred_line, gt_lines, gt_counts, gt_line, proto.buffer_prefilter, reach
        )
    return distances


def vector_map_matches(
    preds: Mapping[str, Tensor] | Sequence[Mapping[str, Tensor]],
    target: Mapping[str, Tensor] | Sequence[Mapping[str, Tensor]],
    *,
    protocol: ProtocolName | MapProtocol = "default",
    thresholds: Sequence[float] | None = None,
    validate_args: bool = True,
) -> dict[str, Tensor]:
    """Per-frame matching of a batch: each prediction's true-positive flag at each threshold.

    Args:
        preds: the predicted polylines of ``B`` frames, a dict of batched tensors (what
            :func:`~drivemetrics.vectormap.io.pack_samples` returns): ``points`` ``(B, N, P, D)`` (metres, ego
            frame), ``labels`` ``(B, N)`` class ids (the protocol's ``class_names`` order), ``scores`` ``(B, N)``
            confidences and optionally ``lengths`` ``(B, N)`` valid point counts (0 = padding; absent: all ``P``);
            or a list of ``B`` per-frame dicts with the same keys, ``points (N_b, P_b, D)``, ``labels (N_b,)``,
            ``scores (N_b,)``, ``lengths (N_b,)`` (torchmetrics' detection convention; same numbers).
        target: the GT polylines, the same keys but ``scores``: ``points`` ``(B, M, Q, D)``, ``labels`` ``(B, M)``,
            optionally ``lengths`` ``(B, M)``; or a list of ``B`` per-frame dicts.
        protocol: ``"default"``, ``"nuscenes-maptr"``, ``"av2-cvpr23"`` or a :class:`MapProtocol`.
        thresholds: Chamfer thresholds in metres (default: the protocol's, 0.5 / 1.0 / 1.5).
        validate_args: check the inputs' values (reads back from the device); ``False`` skips those checks.

    Returns:
        ``scores (S,)``, ``labels (S,)``, ``true_positive (S, T)`` for the ``S`` kept predictions in frame-major
        input order, ``num_kept (B,)`` kept predictions per frame (they split the ``S`` rows) and
        ``num_targets (C,)`` GT counts per class.

    Examples:
        >>> import torch
        >>> from drivemetrics.functional import vector_map_matches
        >>> line = torch.tensor([[[[0.0, 0.0], [0.0, 10.0]]]])  # one frame, one line
        >>> preds = {"points": line + 0.7, "labels": torch.tensor([[0]]), "scores": torch.tensor([[0.9]])}
        >>> out = vector_map_matches(preds, {"points": line, "labels": torch.tensor([[0]])})
        >>> out["true_positive"].tolist(), out["num_targets"].tolist()
        ([[False, True, True]], [1, 0, 0])
    """
    preds, preds_lengths, preds_labels, preds_scores = _unpack(preds, "preds", with_scores=True)
    target, target_lengths, target_labels, _ = _unpack(target, "target", with_scores=False)
    proto = get_protocol(protocol)
    num_classes = len(proto.class_names)
    thresholds_t = tuple(float(t) for t in (proto.thresholds if thresholds is None else thresholds))
    preds_lengths = _check_inputs("preds", preds, preds_lengths, preds_labels, num_classes, validate_args)
    target_lengths = _check_inputs("target", target, target_lengths, target_labels, num_classes, validate_args)
    if preds.shape[0] != target.shape[0]:
        raise ValueError(
            f"`preds` and `target` must hold the same frames, got B = {preds.shape[0]} and {target.shape[0]}"
        )
    if preds_scores.shape != preds_lengths.shape:
        raise ValueError(
            f'`preds["scores"]` must have shape {tuple(preds_lengths.shape)}, got {tuple(preds_scores.shape)}'
        )
    if validate_args:  # the map readers' rule: a score is a number in [0, 1] (padding lines are not read)
        check_values(preds_scores[preds_lengths > 0], 'preds["scores"]', low=0.0, high=1.0, what="scores")
    if proto.dims == "2d":
        if preds.shape[-1] != 2:
            raise ValueError(f"protocol {proto.name!r} evaluates 2-D polylines; `preds` has D = {preds.shape[-1]}")
        target = target[..., :2]
    elif preds.shape[-1] != target.shape[-1]:
        raise ValueError(f"`preds` has D = {preds.shape[-1]} and `target` D = {target.shape[-1]}; they must agree")
    short_target = (target_lengths > 0) & (target_lengths < 2)
    if short_target.any():
        b, m = short_target.nonzero()[0].tolist()
        raise ValueError(f"target polyline {m} of frame {b} has 1 point; a polyline needs 2 or more")
    kept = (preds_lengths >= proto.min_pred_points) & (preds_lengths > 0)
    preds_lengths = torch.where(kept, preds_lengths, torch.zeros_like(preds_lengths))
    dtype = torch.float64
    # regroup by class (the input points, fewer than the samples), then resample the present lines only (flat):
    # padding slots cost nothing
    pred_g, pred_gl, source = _group_by_class(preds.detach().to(dtype), preds_lengths, preds_labels, num_classes)
    gt_g, gt_gl, _ = _group_by_class(target.detach().to(dtype), target_lengths, target_labels, num_classes)
    pred_lines, pred_counts, pred_line = _resample_lines(pred_g, pred_gl, proto)
    gt_lines, gt_counts, gt_line = _resample_lines(gt_g, gt_gl, proto)
    distances = _distance_matrix(
        pred_lines, pred_counts, pred_line, gt_lines, gt_counts, gt_line, proto, max(thresholds_t)
    )
    scores_g = torch.where(
        source >= 0, preds_scores.detach().gather(1, source.clamp_min(0).flatten(1)).reshape(source.shape), 0
    )
    tp_g = greedy_match(
        distances,
        scores_g.to(dtype),
        thresholds=list(thresholds_t),
        preds_valid=pred_line >= 0,
        target_valid=gt_line >= 0,
        inclusive=True,
        fallback=proto.fallback,
        validate_args=False,
    )  # (B, C, K, T)
    batch, num = preds_lengths.shape
    tp = torch.zeros(batch, num, len(thresholds_t), dtype=torch.bool, device=preds.device)
    fb, fc, fk = (source >= 0).nonzero(as_tuple=True)
    tp[fb, source[fb, fc, fk]] = tp_g[fb, fc, fk]
    keep = preds_lengths > 0
    labels_all = torch.where(keep, preds_labels, 0)
    num_targets = torch.zeros(num_classes, dtype=torch.long, device=preds.device)
    num_targets.index_add_(
        0, target_labels[target_lengths > 0].long(), torch.ones_like(target_labels[target_lengths > 0]).long()
    )
    return {
        "scores": preds_scores.detach()[keep],
        "labels": labels_all[keep].long(),
        "true_positive": tp[keep],
        "num_kept": keep.sum(1),
        "num_targets": num_targets,
    }


def _float32_area_ap(precision: Tensor, recall: Tensor) -> Tensor:
    """MapTR's float32 VOC AP, bit for bit: float32 step terms at the recall changes, summed by numpy (pairwise).

    The terms are elementwise IEEE float32 operations (identical in torch); only the summation order is numpy's,
    so the few selected terms of each curve are summed with ``numpy.sum`` on the CPU.
    """
    zeros = torch.zeros((*recall.shape[:-1], 1), dtype=torch.float32, device=recall.device)
    mrec = torch.cat([zeros, recall.to(torch.float32), zeros + 1], -1)
    mpre = torch.cat([zeros, precision.to(torch.float32), zeros], -1).flip(-1).cummax(-1).values.flip(-1)
    terms = (mrec[..., 1:] - mrec[..., :-1]) * mpre[..., 1:]
    changes = mrec[..., 1:] != mrec[..., :-1]
    terms_np, changes_np = terms.cpu().numpy(), changes.cpu().numpy()
    values = [float(np.float32(np.sum(t[m]))) for t, m in zip(terms_np, changes_np, strict=True)]
    return torch.tensor(values, dtype=torch.float64)


def _content_order(scores: Tensor, labels: Tensor, true_positive: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """The matched predictions reordered so that equal scores are ordered by content, not by arrival.

    Rows with fewer true-positive thresholds come first, then by their flags (lexicographic); the score sort of
    :func:`~drivemetrics.polyline.pooled_precision_recall` is stable, so tied scores keep this order. Rows equal
    in score, class and flags are interchangeable: the AP no longer depends on the order of frames (one process
    or several, any sharding).
    """
    order = torch.arange(scores.shape[0], device=scores.device)
    flags = true_positive.long()
    for t in reversed(range(flags.shape[-1])):
        order = order[torch.sort(flags[order, t], stable=True).indices]
    order = order[torch.sort(flags[order].sum(-1), stable=True).indices]
    return scores[order], labels[order], true_positive[order]


def _check_matches(scores: Tensor, labels: Tensor, true_positive: Tensor, num_targets: Tensor, classes: int) -> None:
    """``validate_args`` of :func:`vector_map_ap_from_matches`: shapes that fit, scores in [0, 1], class ids in
    range, non-negative target counts."""
    count = scores.shape[0] if scores.ndim == 1 else -1
    if count < 0 or labels.shape != scores.shape or true_positive.ndim != 2 or true_positive.shape[0] != count:
        raise ValueError(
            f"`scores`, `labels` must be (S,) and `true_positive` (S, T), got {tuple(scores.shape)}, "
            f"{tuple(labels.shape)} and {tuple(true_positive.shape)}"
        )
    if tuple(num_targets.shape) != (classes,):
        raise ValueError(f"`num_targets` must be ({classes},), one count per class, got {tuple(num_targets.shape)}")
    check_values(scores, "scores", low=0.0, high=1.0, what="scores")
    check_values(labels, "labels", low=0, high=classes - 1, what="class ids")
    check_values(num_targets, "num_targets", low=0, what="counts")


def vector_map_ap_from_matches(
    scores: Tensor,
    labels: Tensor,
    true_positive: Tensor,
    num_targets: Tensor,
    *,
    protocol: ProtocolName | MapProtocol = "default",
    validate_args: bool = True,
) -> dict[str, Tensor]:
    """Pool matched predictions per class into AP per threshold, class AP and mAP.

    Args:
        scores: ``(S,)`` confidences of all matched predictions (any number of frames).
        labels: ``(S,)`` class ids.
        true_positive: ``(S, T)`` flags from :func:`vector_map_matches`.
        num_targets: ``(C,)`` GT counts.
        protocol: as in :func:`vector_map_matches` (dtypes and the AP of a class without GT).
        validate_args: check the shapes, scores in [0, 1], class ids and counts (a read-back); ``False``
            skips those checks.

    Returns:
        ``ap_per_threshold (C, T)``, ``ap (C,)`` (mean over thresholds), ``map`` (mean over classes; the default
        protocol skips classes without GT, whose AP is NaN), ``num_preds (C,)``, ``num_targets (C,)``; float64.

    Examples:
        >>> from drivemetrics.functional import vector_map_ap_from_matches
        >>> import torch
        >>> out = vector_map_ap_from_matches(torch.tensor([0.9, 0.8]), torch.tensor([0, 0]),
        ...                                  torch.tensor([[True], [False]]), torch.tensor([2, 0, 0]))
        >>> out["ap"].tolist()
        [0.5, nan, nan]
    """
    proto = get_protocol(protocol)
    num_classes = len(proto.class_names)
    if validate_args:
        _check_matches(scores, labels, true_positive, num_targets, num_classes)
    num_thresholds = true_positive.shape[-1]
    scores, labels, true_positive = _content_order(scores, labels, true_positive)
    ap = torch.zeros(num_classes, num_thresholds, dtype=torch.float64, device=scores.device)
    num_preds = torch.zeros(num_classes, dtype=torch.long, device=scores.device)
    curve_dtype = torch.float32 if proto.float32_curve else torch.float64
    for c in range(num_classes):
        chosen = labels == c
        num_preds[c] = chosen.sum()
        precision, recall = pooled_precision_recall(
            scores[chosen],
            true_positive[chosen].T,
            num_targets[c],
            precision_dtype=curve_dtype,
            recall_dtype=curve_dtype,
            validate_args=False,
        )
        if proto.float32_curve:
            ap[c] = _float32_area_ap(precision, recall).to(device=ap.device)
        else:
            ap[c] = average_precision_area(precision, recall, validate_args=False)
        if int(num_targets[c]) == 0 and proto.empty_class_ap == "nan":
            ap[c] = torch.nan
    class_ap = ap.mean(-1)
    mean_ap = class_ap.nanmean() if proto.empty_class_ap == "nan" else class_ap.mean()
    return {
        "map": mean_ap,
        "ap": class_ap,
        "ap_per_threshold": ap,
        "num_preds": num_preds,
        "num_targets": num_targets.to(scores.device),
    }


def vector_map_ap(
    preds: Mapping[str, Tensor] | Sequence[Mapping[str, Tensor]],
    target: Mapping[str, Tensor] | Sequence[Mapping[str, Tensor]],
    *,
    protocol: ProtocolName | MapProtocol = "default",
    thresholds: Sequence[float] | None = None,
    validate_args: bool = True,
) -> dict[str, Tensor]:
    """Vectorised-map Chamfer AP of a batch of frames (all frames pooled): :func:`vector_map_matches` then
    :func:`vector_map_ap_from_matches`.

    Args: see :func:`vector_map_matches`.

    Returns:
        ``map`` (scalar), ``ap (C,)``, ``ap_per_threshold (C, T)``, ``num_preds (C,)``, ``num_targets (C,)``.

    Examples:
        >>> import torch
        >>> from drivemetrics.functional import vector_map_ap
        >>> line = torch.tensor([[[[0.0, 0.0], [0.0, 10.0]]]])
        >>> preds = {"points": line + 0.7, "labels": torch.tensor([[0]]), "scores": torch.tensor([[0.9]])}
        >>> out = vector_map_ap(preds, {"points": line, "labels": torch.tensor([[0]])}, protocol="nuscenes-maptr")
        >>> out["ap_per_threshold"][0].tolist(), round(out["map"].item(), 4)
        ([0.0, 1.0, 1.0], 0.2222)
    """
    matches = vector_map_matches(preds, target, protocol=protocol, thresholds=thresholds, validate_args=validate_args)
    return vector_map_ap_from_matches(
        matches["scores"],
        matches["labels"],
        matches["true_positive"],
        matches["num_targets"],
        protocol=protocol,
        validate_args=False,
    )
