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
from typing import Any

import numpy as np
import torch
from torch import Tensor

from drivemetrics._internal import arrays
from drivemetrics._internal.validation import check_coordinates_within_limit, check_values
from drivemetrics.polyline import (
    average_precision_area,
    check_polylines,
    greedy_match,
    point_mask,
    pooled_precision_recall,
)
from drivemetrics.vectormap.buffer import buffers_intersect
from drivemetrics.vectormap.lines import (
    FlatLines,
    bounded_chamfer,
    candidate_pairs,
    greedy_flags,
    nearest_targets,
    resample_lines,
)
from drivemetrics.vectormap.protocol import MapProtocol, ProtocolName, get_protocol

__all__ = ["vector_map_ap", "vector_map_ap_from_matches", "vector_map_matches"]


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


def _flat_lines(points: Tensor, lengths: Tensor, labels: Tensor, scores: Tensor | None) -> FlatLines:
    """The present lines (``lengths > 0``) of ``(B, N, P, D)`` as :class:`FlatLines` (float64 points, frame-major,
    lines in input order), on the CPU as numpy views (numpy's loops are faster there), else on the device."""
    present = lengths > 0
    valid = point_mask(lengths, points.shape[-2]) & present[..., None]
    frame = present.nonzero()[:, 0]
    no_scores = points.new_zeros(0, dtype=torch.float64)
    lines = FlatLines(
        points.detach().to(torch.float64)[valid],
        lengths[present].long(),
        frame,
        labels[present].long(),
        no_scores if scores is None else scores.detach()[present].to(torch.float64),
    )
    return lines.apply(arrays.host)


def _slots(lines: FlatLines, num_classes: int) -> tuple[Tensor, Tensor]:
    """Each line's group ``sample * C + class`` and its rank within the group (input order): ``(L,)`` each."""
    group = lines.sample * num_classes + lines.labels
    order = torch.sort(group, stable=True).indices
    sorted_group = group[order]
    first = torch.ones_like(sorted_group, dtype=torch.bool)
    first[1:] = sorted_group[1:] != sorted_group[:-1]
    starts = torch.arange(group.shape[0], device=group.device)[first]
    run = first.long().cumsum(0) - 1
    slot = torch.empty_like(group)
    slot[order] = torch.arange(group.shape[0], device=group.device) - starts[run]
    return group, slot


def _padded_lines(lines: FlatLines) -> Tensor:
    """``(L, S, D)`` the lines padded to the longest with their last point."""
    width = max(1, int(lines.counts.max())) if lines.counts.numel() else 1
    slot = torch.arange(width, device=lines.counts.device)[None, :]
    rows = lines.offsets[:-1, None] + torch.minimum(slot, (lines.counts[:, None] - 1).clamp_min(0))
    return lines.points[rows]


def _dense_flags(
    preds: FlatLines, target: FlatLines, proto: MapProtocol, thresholds: tuple[float, ...], frames: int, device: Any
) -> Tensor:
    """``(P, T)`` true-positive flags of the resampled lines under the fall-back rule and / or MapTR's buffer
    prefilter: the distances of :func:`~drivemetrics.vectormap.lines.bounded_chamfer` laid out per frame and class
    ``(B, C, K, G)``, the prefilter, then :func:`~drivemetrics.polyline.greedy_match`."""
    num_classes, reach = len(proto.class_names), max(thresholds)
    pair_pred, pair_gt = candidate_pairs(preds, target, num_classes)
    distance = bounded_chamfer(preds, target, pair_pred, pair_gt, reach)
    preds, target = (lines.apply(lambda x: arrays.from_host(x, device)) for lines in (preds, target))
    pair_pred, pair_gt = arrays.from_host(pair_pred, device), arrays.from_host(pair_gt, device)
    distance = arrays.from_host(distance, device)
    pred_group, pred_slot = _slots(preds, num_classes)
    gt_group, gt_slot = _slots(target, num_classes)
    most_preds = int(pred_slot.max()) + 1 if pred_slot.numel() else 0
    most_gt = int(gt_slot.max()) + 1 if gt_slot.numel() else 0
    shape = (frames * num_classes, most_preds, most_gt)
    dense = torch.full(shape, torch.inf, dtype=torch.float64, device=device)
    dense[pred_group[pair_pred], pred_slot[pair_pred], gt_slot[pair_gt]] = distance
    pred_line = torch.full(shape[:2], -1, dtype=torch.long, device=device)
    pred_line[pred_group, pred_slot] = torch.arange(pred_group.shape[0], device=device)
    gt_line = torch.full((shape[0], most_gt), -1, dtype=torch.long, device=device)
    gt_line[gt_group, gt_slot] = torch.arange(gt_group.shape[0], device=device)
    if proto.buffer_prefilter is not None and dense.numel():
        _buffer_prefilter(
            dense.view(frames, num_classes, most_preds, most_gt),
            _padded_lines(preds),
            preds.counts,
            pred_line.view(frames, num_classes, most_preds),
            _padded_lines(target),
            target.counts,
            gt_line.view(frames, num_classes, most_gt),
            proto.buffer_prefilter,
            reach,
        )
    scores = torch.zeros(shape[:2], dtype=torch.float64, device=device)
    scores[pred_group, pred_slot] = preds.scores
    flags = greedy_match(
        dense,
        scores,
        thresholds=list(thresholds),
        preds_valid=pred_line >= 0,
        target_valid=gt_line >= 0,
        inclusive=True,
        fallback=proto.fallback,
        validate_args=False,
    )  # (B * C, K, T)
    return flags[pred_group, pred_slot]


def _match_lines(
    preds: FlatLines, target: FlatLines, proto: MapProtocol, thresholds: tuple[float, ...], frames: int, device: Any
) -> Tensor:
    """``(P, T)`` true-positive flags of the (unresampled) prediction lines against the GT lines of ``frames``
    frames (:func:`_flat_lines`), as a tensor on ``device``: the kernels of :mod:`drivemetrics.vectormap.lines`,
    the references' rule there, the fall-back rule or the buffer prefilter by :func:`_dense_flags`."""
    preds, target = resample_lines(preds, proto), resample_lines(target, proto)
    if proto.fallback or proto.buffer_prefilter is not None:
        return _dense_flags(preds, target, proto, thresholds, frames, device)
    nearest_gt, nearest_distance = nearest_targets(preds, target, len(proto.class_names), max(thresholds))
    return arrays.from_host(greedy_flags(preds.scores, nearest_gt, nearest_distance, thresholds), device)


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
    true_positive = _match_lines(
        _flat_lines(preds, preds_lengths, preds_labels, preds_scores),
        _flat_lines(target, target_lengths, target_labels, None),
        proto,
        thresholds_t,
        preds.shape[0],
        preds.device,
    )
    keep = preds_lengths > 0
    labels_all = torch.where(keep, preds_labels, 0)
    num_targets = torch.zeros(num_classes, dtype=torch.long, device=preds.device)
    num_targets.index_add_(
        0, target_labels[target_lengths > 0].long(), torch.ones_like(target_labels[target_lengths > 0]).long()
    )
    return {
        "scores": preds_scores.detach()[keep],
        "labels": labels_all[keep].long(),
        "true_positive": true_positive.reshape(-1, len(thresholds_t)),
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
