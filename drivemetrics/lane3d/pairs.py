"""OpenLane (v1) 3D lanes, step 2 of the evaluator: the GT x prediction pair terms of resampled lanes, the pair cost
(point distance where both samples are visible, 1.5 m where one is), the matched samples and the mean x / z errors
near and far, for a full ``(B, G, P)`` matrix or a flat list of pairs by index.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch
from torch import Tensor

from drivemetrics._internal import arrays
from drivemetrics.polyline.lane_fscore import DIST_THRESHOLD, tool_integer_cost

__all__ = [
    "CLOSE_SAMPLES",
    "flat_pair_cost",
    "flat_pair_details",
    "near_pairs",
    "pair_cost",
    "pair_details",
    "pair_index",
    "pair_terms",
]


#: Samples with y <= 40 m count as close (the first 38), the others as far.
CLOSE_SAMPLES = 38


#: Names of the four errors, in the order of the ``errors`` arrays.
ERROR_NAMES = ("x_error_close", "x_error_far", "z_error_close", "z_error_far")


class _PairTerms(NamedTuple):
    """Per-sample terms of GT x prediction pairs: visibility of each side, both, signed x / z differences and the
    point distance, ``(..., 100)``."""

    gt_visible: Tensor
    pred_visible: Tensor
    both: Tensor
    dx: Tensor
    dz: Tensor
    dist: Tensor


def pair_terms(target: dict[str, Tensor], preds: dict[str, Tensor], preds_care: Tensor | None) -> _PairTerms:
    gv = target["visible"][:, :, None]
    pv = preds["visible"][:, None] if preds_care is None else preds_care
    pv = pv[:, None] if pv.ndim == 3 else pv
    dx = target["x"][:, :, None] - preds["x"][:, None]
    dz = target["z"][:, :, None] - preds["z"][:, None]
    return _PairTerms(gv, pv, gv & pv, dx, dz, torch.sqrt(dx * dx + dz * dz))


def pair_cost(terms: _PairTerms, reference: bool) -> Tensor:
    """The pair cost: the distance summed over the samples both lanes show, 1.5 m per sample only one shows."""
    both = terms.both
    one_sided = terms.gt_visible.sum(-1) + terms.pred_visible.sum(-1) - 2 * both.sum(-1)
    cost = torch.where(both, terms.dist, 0.0).sum(-1) + DIST_THRESHOLD * one_sided  # 0 where neither is visible
    if reference:
        cost = tool_integer_cost(cost)
    return cost


#: Pairs costed together by :func:`flat_pair_cost`: their ``(K, 100)`` float64 terms stay in the CPU's cache.
PAIR_CHUNK = 1024


def flat_pair_cost(
    target: dict[str, Tensor], preds: dict[str, Tensor], gt: Tensor, pred: Tensor, care: Tensor | None, reference: bool
) -> Tensor:
    """:func:`pair_cost` of the pairs ``(gt[k], pred[k])`` of resampled lanes ``(M, 100)``, ``(K,)`` float64.

    The same operations value for value (so the same bits), in chunks of :data:`PAIR_CHUNK` pairs, in place, with
    each lane's visible samples counted once instead of once per pair. ``care``: ``(K, 100)`` predicted samples that
    count (default: the visible ones)."""
    gt_count = target["visible"].sum(-1, dtype=torch.int32)  # (a sum of bools as int64 is several times slower)
    pred_count = preds["visible"].sum(-1, dtype=torch.int32) if care is None else None
    cost = torch.empty(gt.shape[0], dtype=torch.float64, device=gt.device)
    for start in range(0, gt.shape[0], PAIR_CHUNK):
        gi, pj = gt[start : start + PAIR_CHUNK], pred[start : start + PAIR_CHUNK]
        pv = preds["visible"].index_select(0, pj) if care is None else care[start : start + PAIR_CHUNK]
        both = target["visible"].index_select(0, gi).logical_and_(pv)
        dx = target["x"].index_select(0, gi).sub_(preds["x"].index_select(0, pj))
        dz = target["z"].index_select(0, gi).sub_(preds["z"].index_select(0, pj))
        dist = _sqrt_(dx.mul_(dx).add_(dz.mul_(dz))).masked_fill_(~both, 0.0)
        n_both = both.sum(-1, dtype=torch.int32)
        n_pred = pred_count.index_select(0, pj) if care is None else pv.sum(-1, dtype=torch.int32)
        one_sided = gt_count.index_select(0, gi) + n_pred - 2 * n_both
        cost[start : start + PAIR_CHUNK] = dist.sum(-1) + DIST_THRESHOLD * one_sided
    if reference:
        cost = tool_integer_cost(cost)
    return cost


def _sqrt_(values: Tensor) -> Tensor:
    """In-place correctly rounded square root (numpy's on the CPU, as the tool: torch's vectorised one can be 1 ulp
    off, see :func:`drivemetrics._internal.arrays.sqrt`, and is slower)."""
    if values.device.type == "cpu" and not values.requires_grad:
        np.sqrt(values.numpy(), out=values.numpy())
        return values
    return values.sqrt_()


def pair_details(terms: _PairTerms, reference: bool) -> tuple[Tensor, Tensor]:
    """Matched samples (both visible, closer than 1.5 m) and the four mean errors of pairs, ``-1`` without samples."""
    both = terms.both
    num_match = (both & (terms.dist < DIST_THRESHOLD)).sum(-1)
    errors = []
    close = both[..., :CLOSE_SAMPLES].sum(-1)
    counts = [close, both.sum(-1) - close]
    for values in (terms.dx.abs(), terms.dz.abs()):
        # the tool multiplies by the mask: a non-finite value at a sample either lane does not show (a lane with
        # repeated y resamples to NaN / inf beyond its ends) makes the error NaN, and the pooled means skip it
        values = values * both if reference else torch.where(both, values, 0.0)
        for n, part in zip(counts, (values[..., :CLOSE_SAMPLES], values[..., CLOSE_SAMPLES:]), strict=True):
            errors.append(torch.where(n > 0, part.sum(-1) / n.clamp(min=1), -1.0))
    return num_match, torch.stack(errors, -1)


def flat_pair_details(
    target: dict[str, Tensor], preds: dict[str, Tensor], gt: Tensor, pred: Tensor, care: Tensor | None, reference: bool
) -> tuple[Tensor, Tensor]:
    """:func:`pair_details` of the pairs ``(gt[k], pred[k])`` of resampled lanes ``(M, 100)``: matched samples
    ``(K,)`` long and the four mean errors ``(K, 4)`` float64 (``-1`` without samples). ``care``: ``(K, 100)``
    predicted samples that count (default: the visible ones). On the CPU in numpy, whose sums are the tool's (bit
    for bit its errors)."""
    g = {key: arrays.host(target[key]) for key in ("x", "z", "visible")}
    p = {key: arrays.host(preds[key]) for key in ("x", "z", "visible")}
    gi, pj = arrays.host(gt), arrays.host(pred)
    both = g["visible"][gi] & (p["visible"][pj] if care is None else arrays.host(care))
    with arrays.overflow_allowed():  # lanes with a repeated y: NaN / inf beyond their ends, as in the tool
        dx = abs(g["x"][gi] - p["x"][pj])
        dz = abs(g["z"][gi] - p["z"][pj])
        num_match = (both & (arrays.sqrt(dx * dx + dz * dz) < DIST_THRESHOLD)).sum(-1)
        counts = [both[:, :CLOSE_SAMPLES].sum(-1), both[:, CLOSE_SAMPLES:].sum(-1)]
        errors = []
        for values in (dx, dz):
            # the tool multiplies by the mask: a non-finite value at a sample either lane does not show makes the
            # error NaN, and the pooled means skip it
            values = values * both if reference else arrays.where(both, values, 0.0)
            for n, part in zip(counts, (values[:, :CLOSE_SAMPLES], values[:, CLOSE_SAMPLES:]), strict=True):
                mean = part.sum(-1) / arrays.where(n > 0, n, 1)
                errors.append(arrays.where(n > 0, mean, -1.0)[:, None])
    return arrays.from_host(num_match, gt.device).long(), arrays.from_host(arrays.cat(errors, 1), gt.device)


def pair_index(
    gt_frame: Tensor, gt_mask: Tensor, pred_frame: Tensor, pred_mask: Tensor, batch: int
) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor, Tensor]:
    """Every (GT lane, predicted lane) pair of the same frame among the masked lanes, frame-major, then GT-major.

    Returns ``gt`` ``(K,)`` and ``pred`` ``(K,)`` lane indices, ``frame`` ``(K,)``, and per frame ``(B,)`` the
    first pair, the GT lanes and the predicted lanes that take part."""
    device = gt_frame.device
    gt_sel = gt_mask.nonzero()[:, 0]
    pred_sel = pred_mask.nonzero()[:, 0]
    n_gt = torch.bincount(gt_frame[gt_sel], minlength=batch)
    n_pred = torch.bincount(pred_frame[pred_sel], minlength=batch)
    n_pairs = n_gt * n_pred
    first = torch.cumsum(n_pairs, 0) - n_pairs
    frame = torch.repeat_interleave(torch.arange(batch, device=device), n_pairs)
    local = torch.arange(frame.shape[0], device=device) - first[frame]
    cols = n_pred[frame]
    gt = gt_sel[(torch.cumsum(n_gt, 0) - n_gt)[frame] + torch.div(local, cols.clamp(min=1), rounding_mode="floor")]
    pred = pred_sel[(torch.cumsum(n_pred, 0) - n_pred)[frame] + local % cols.clamp(min=1)]
    return gt, pred, frame, first, n_gt, n_pred


def near_pairs(target: dict[str, Tensor], preds: dict[str, Tensor], gt: Tensor, pred: Tensor) -> Tensor:
    """``(K, 100)``: whether the samples of GT lane ``gt[k]`` and predicted lane ``pred[k]`` lie within 1.5 m."""
    dx = target["x"][gt] - preds["x"][pred]
    dz = target["z"][gt] - preds["z"][pred]
    return torch.sqrt(dx**2 + dz**2) < DIST_THRESHOLD
