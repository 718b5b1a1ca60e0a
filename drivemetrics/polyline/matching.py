"""Greedy matching of predictions to targets by descending confidence, per frame, at several thresholds at once.

Two rules:

- ``fallback=False`` (MapTR, the CVPR 2023 Argoverse 2 challenge, OpenLane-V2): every prediction's nearest target
  (smallest distance, first target on an exact tie) is fixed once, independent of the threshold. Predictions are
  visited in descending score; one is a true positive if its distance passes the threshold and its nearest target
  is still free (it then takes it); otherwise it is a false positive, even if another free target is close enough.
  Vectorised without a loop: a prediction is a TP exactly when it passes the threshold and no higher-ranked
  prediction with the same nearest target passes it.
- ``fallback=True`` (the usual detection definition): each prediction takes the nearest target that is still free
  and passes the threshold. Sequential in the rank (one step per prediction slot), vectorised over frames and
  thresholds.

Ties between scores are broken by input order (stable sort), which the references' unstable ``argsort`` does not
guarantee. Written once for torch tensors (any device) and numpy arrays (no torch import: the dataset commands' CPU
path) with :mod:`drivemetrics._internal.arrays`; both give the same results.
"""

from __future__ import annotations

import math
import operator
from typing import Any

from drivemetrics._internal import arrays as xp
from drivemetrics._internal.validation import check_values

__all__ = ["greedy_match", "greedy_match_index", "nearest_target", "score_rank"]

Tensor = Any  # a torch.Tensor, or a numpy array


def score_rank(scores: Tensor, valid: Tensor | None = None, *, validate_args: bool = True) -> Tensor:
    """``(..., P)`` rank of each prediction in its frame by descending score (0 = best), ties in input order.

    Invalid predictions rank after all valid ones.

    ``validate_args`` refuses NaN scores (a read-back).

    Examples:
        >>> import torch
        >>> from drivemetrics.polyline import score_rank
        >>> score_rank(torch.tensor([0.2, 0.9, 0.2, 0.5]))
        tensor([2, 0, 3, 1])
    """
    if validate_args:
        check_values(scores, "scores", finite=False, what="scores")
    key = xp.detach(scores)
    if valid is not None:
        key = xp.where(valid, key, -math.inf)
    return xp.inverse_permutation(xp.stable_descending_order(key, -1))


def nearest_target(
    distances: Tensor, target_valid: Tensor | None = None, *, validate_args: bool = True
) -> tuple[Tensor, Tensor]:
    """Each prediction's nearest valid target: ``(index (..., P), distance (..., P))``.

    Args:
        distances: ``(..., P, G)`` prediction-to-target distances (``inf`` = can never match).
        target_valid: ``(..., G)`` bool, valid targets (default all).
        validate_args: refuse NaN or negative distances (``inf`` is allowed; a read-back); ``False`` skips it.

    Returns:
        The index of the first target with the smallest distance (0 and ``inf`` when there is none).

    Examples:
        >>> import torch
        >>> from drivemetrics.polyline import nearest_target
        >>> nearest_target(torch.tensor([[2.0, 1.0, 1.0], [5.0, 7.0, 9.0]]))
        (tensor([1, 0]), tensor([1., 5.]))
    """
    if validate_args:
        check_values(distances, "distances", low=0.0, finite=False, what="distances")
    if target_valid is not None:
        distances = xp.where(target_valid[..., None, :], distances, math.inf)
    if distances.shape[-1] == 0:
        shape = distances.shape[:-1]
        return xp.full(shape, 0, like=distances, dtype="int64"), xp.full(shape, math.inf, like=distances)
    # argmin returns the first minimum's index (torch documents it; torch.min's index is any one of them)
    distances = xp.detach(distances)
    index = distances.argmin(-1)
    return index, xp.gather(distances, -1, index[..., None])[..., 0]


def greedy_match(
    distances: Tensor,
    scores: Tensor,
    *,
    thresholds: Tensor | float | list[float],
    preds_valid: Tensor | None = None,
    target_valid: Tensor | None = None,
    inclusive: bool = True,
    fallback: bool = False,
    validate_args: bool = True,
) -> Tensor:
    """True-positive flags of greedy matching by descending score, per frame and threshold.

    Args:
        distances: ``(..., P, G)`` prediction-to-target distances (metres; ``inf`` = never matches, e.g. a
            prefilter's rejection).
        scores: ``(..., P)`` confidences.
        thresholds: ``(T,)`` distance thresholds (metres) or one float.
        preds_valid: ``(..., P)`` bool, padding predictions are ``False`` (their flags are ``False``).
        target_valid: ``(..., G)`` bool, padding targets are ``False``.
        inclusive: a distance equal to the threshold passes (``<=``; MapTR, CVPR 2023) or not (``<``; OpenLane-V2).
        fallback: ``False``: nearest target only, no fall-back (the references); ``True``: nearest free target
            that passes.
        validate_args: refuse NaN or negative distances and thresholds, NaN scores and scores not
            ``(..., P)`` like the distances (a read-back); ``False`` skips those checks.

    Returns:
        ``(..., P, T)`` bool, ``True`` for a true positive.

    Examples:
        >>> import torch
        >>> from drivemetrics.polyline import greedy_match
        >>> distances = torch.tensor([[0.3, 0.4], [0.2, 0.45]])  # 2 predictions x 2 targets
        >>> greedy_match(distances, torch.tensor([0.9, 0.8]), thresholds=[0.5])[..., 0]
        tensor([ True, False])
        >>> greedy_match(distances, torch.tensor([0.9, 0.8]), thresholds=[0.5], fallback=True)[..., 0]
        tensor([True, True])
    """
    if validate_args:
        _check_match_inputs(distances, scores, thresholds)
    if fallback:
        return (
            greedy_match_index(
                distances,
                scores,
                thresholds=thresholds,
                preds_valid=preds_valid,
                target_valid=target_valid,
                inclusive=inclusive,
                fallback=True,
                validate_args=False,
            )
            >= 0
        )
    thresholds_t = xp.as_values(thresholds, like=distances).reshape(-1)
    num_preds, num_targets = distances.shape[-2], distances.shape[-1]
    lead = distances.shape[:-2]
    if preds_valid is None:
        preds_valid = xp.full(distances.shape[:-1], True, like=distances, dtype="bool")
    distances = xp.detach(distances)
    if target_valid is not None:
        distances = xp.where(target_valid[..., None, :], distances, math.inf)
    passes_fn = operator.le if inclusive else operator.lt
    rank = score_rank(scores, preds_valid, validate_args=False)
    index, nearest = nearest_target(distances, validate_args=False)
    passes = passes_fn(nearest[..., None], thresholds_t) & preds_valid[..., None]  # (..., P, T)
    if num_targets == 0:
        return passes
    # per (frame, target, threshold): the best rank among passing predictions pointing at it
    rank_t = xp.where(passes, rank[..., None], num_preds)  # (..., P, T)
    index_t = xp.broadcast_to(index[..., None], rank_t.shape)
    frames, num_thr = math.prod(lead), thresholds_t.shape[0]
    best = xp.full((frames, num_targets, num_thr), num_preds, like=rank)
    index_3 = xp.contiguous(index_t).reshape(frames, num_preds, num_thr)
    best = xp.scatter_amin(best, index_3, xp.contiguous(rank_t).reshape(frames, num_preds, num_thr))
    return passes & (rank_t == xp.gather(best, -2, index_3).reshape(rank_t.shape))


def greedy_match_index(
    distances: Tensor,
    scores: Tensor,
    *,
    thresholds: Tensor | float | list[float],
    preds_valid: Tensor | None = None,
    target_valid: Tensor | None = None,
    inclusive: bool = True,
    fallback: bool = False,
    validate_args: bool = True,
) -> Tensor:
    """:func:`greedy_match` that also says which target each true positive took (topology scores need it).

    Same arguments and rules as :func:`greedy_match`.

    Returns:
        ``(..., P, T)`` long: the index of the matched target, ``-1`` for a false positive or padding.

    >>> import torch
    >>> from drivemetrics.polyline import greedy_match_index
    >>> distances = torch.tensor([[0.3, 0.4], [0.2, 0.45]])  # 2 predictions x 2 targets
    >>> greedy_match_index(distances, torch.tensor([0.9, 0.8]), thresholds=[0.5])[..., 0]
    tensor([ 0, -1])
    >>> greedy_match_index(distances, torch.tensor([0.9, 0.8]), thresholds=[0.5], fallback=True)[..., 0]
    tensor([0, 1])
    >>> scores = torch.tensor([0.9, 0.8])
    >>> greedy_match_index(distances.numpy(), scores.numpy(), thresholds=[0.5], fallback=True)[..., 0]
    array([0, 1])
    """
    if validate_args:
        _check_match_inputs(distances, scores, thresholds)
    thresholds_t = xp.as_values(thresholds, like=distances).reshape(-1)
    num_preds, num_targets = distances.shape[-2], distances.shape[-1]
    lead = distances.shape[:-2]
    num_thr = thresholds_t.shape[0]
    if not fallback:
        tp = greedy_match(
            distances,
            scores,
            thresholds=thresholds_t,
            preds_valid=preds_valid,
            target_valid=target_valid,
            inclusive=inclusive,
            fallback=False,
            validate_args=False,
        )
        if num_targets == 0:
            return xp.full(tp.shape, -1, like=distances, dtype="int64")
        index, _ = nearest_target(xp.detach(distances), target_valid, validate_args=False)
        return xp.where(tp, index[..., None], -1)
    if preds_valid is None:
        preds_valid = xp.full(distances.shape[:-1], True, like=distances, dtype="bool")
    match = xp.full((*lead, num_preds, num_thr), -1, like=distances, dtype="int64")
    if num_targets == 0 or num_preds == 0:
        return match
    distances = xp.detach(distances)
    if target_valid is not None:
        distances = xp.where(target_valid[..., None, :], distances, math.inf)
    passes_fn = operator.le if inclusive else operator.lt
    rank = score_rank(scores, preds_valid, validate_args=False)
    flat = distances.reshape(-1, num_preds, num_targets)
    order = xp.inverse_permutation(rank.reshape(-1, num_preds))  # rank -> prediction
    valid_flat = preds_valid.reshape(-1, num_preds)
    frames = flat.shape[0]
    taken = xp.full((frames, num_thr, num_targets), False, like=distances, dtype="bool")
    match = match.reshape(frames, num_preds, num_thr)
    frame_index = xp.arange(frames, like=order)
    for step in range(num_preds):
        pred = order[:, step]
        row = flat[frame_index, pred]  # (F, G)
        ok = passes_fn(row[:, None], thresholds_t[:, None]) & ~taken  # (F, T, G)
        choice = xp.where(ok, row[:, None], math.inf).argmin(-1)  # (F, T)
        hit = xp.gather(ok, -1, choice[..., None])[..., 0] & valid_flat[frame_index, pred][:, None]
        xp.put_along_last(taken, choice[..., None], hit[..., None] | xp.gather(taken, -1, choice[..., None]))
        match[frame_index, pred] = xp.where(hit, choice, -1)
    return match.reshape(*lead, num_preds, num_thr)


def _check_match_inputs(distances: Tensor, scores: Tensor, thresholds: Tensor | float | list[float]) -> None:
    """``validate_args`` of the greedy matchings."""
    if tuple(scores.shape) != tuple(distances.shape[:-1]):
        raise ValueError(f"`scores` must be (..., P) = {tuple(distances.shape[:-1])}, got {tuple(scores.shape)}")
    check_values(distances, "distances", low=0.0, finite=False, what="distances")
    check_values(scores, "scores", finite=False, what="scores")
    check_values(xp.as_values(thresholds, like=distances), "thresholds", low=0.0, finite=False, what="thresholds")
