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
guarantee.
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["greedy_match", "greedy_match_index", "nearest_target", "score_rank"]


def score_rank(scores: Tensor, valid: Tensor | None = None, *, validate_args: bool = True) -> Tensor:
    """``(..., P)`` rank of each prediction in its frame by descending score (0 = best), ties in input order.

    Invalid predictions rank after all valid ones.

    Examples:
        >>> score_rank(torch.tensor([0.2, 0.9, 0.2, 0.5]))
        tensor([2, 0, 3, 1])
    """
    key = scores.detach()
    if valid is not None:
        key = torch.where(valid, key, torch.full_like(key, -torch.inf))
    order = torch.sort(key, dim=-1, descending=True, stable=True).indices
    rank = torch.empty_like(order)
    rank.scatter_(-1, order, torch.arange(order.shape[-1], device=order.device).expand_as(order).contiguous())
    return rank


def nearest_target(
    distances: Tensor, target_valid: Tensor | None = None, *, validate_args: bool = True
) -> tuple[Tensor, Tensor]:
    """Each prediction's nearest valid target: ``(index (..., P), distance (..., P))``.

    Args:
        distances: ``(..., P, G)`` prediction-to-target distances (``inf`` = can never match).
        target_valid: ``(..., G)`` bool, valid targets (default all).
        validate_args: check the inputs' values (reads back from the device); ``False`` skips those checks.

    Returns:
        The index of the first target with the smallest distance (0 and ``inf`` when there is none).

    Examples:
        >>> nearest_target(torch.tensor([[2.0, 1.0, 1.0], [5.0, 7.0, 9.0]]))
        (tensor([1, 0]), tensor([1., 5.]))
    """
    if target_valid is not None:
        distances = torch.where(target_valid.unsqueeze(-2), distances, torch.full_like(distances, torch.inf))
    if distances.shape[-1] == 0:
        shape = distances.shape[:-1]
        return (
            torch.zeros(shape, dtype=torch.long, device=distances.device),
            torch.full(shape, torch.inf, dtype=distances.dtype, device=distances.device),
        )
    # argmin is documented to return the first minimum's index (torch.min's index is any one of them)
    index = distances.detach().argmin(-1)
    return index, distances.detach().gather(-1, index.unsqueeze(-1)).squeeze(-1)


def greedy_match(
    distances: Tensor,
    scores: Tensor,
    thresholds: Tensor | float | list[float],
    preds_valid: Tensor | None = None,
    target_valid: Tensor | None = None,
    inclusive: bool = True,
    fallback: bool = False,
    *,
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
        validate_args: check the inputs' values (reads back from the device); ``False`` skips those checks.

    Returns:
        ``(..., P, T)`` bool, ``True`` for a true positive.

    Examples:
        >>> distances = torch.tensor([[0.3, 0.4], [0.2, 0.45]])  # 2 predictions x 2 targets
        >>> greedy_match(distances, torch.tensor([0.9, 0.8]), [0.5])[..., 0]
        tensor([ True, False])
        >>> greedy_match(distances, torch.tensor([0.9, 0.8]), [0.5], fallback=True)[..., 0]
        tensor([True, True])
    """
    thresholds_t = torch.as_tensor(thresholds, dtype=distances.dtype, device=distances.device).reshape(-1)
    num_preds, num_targets = distances.shape[-2], distances.shape[-1]
    if preds_valid is None:
        preds_valid = torch.ones(distances.shape[:-1], dtype=torch.bool, device=distances.device)
    if target_valid is None:
        target_valid = torch.ones((*distances.shape[:-2], num_targets), dtype=torch.bool, device=distances.device)
    distances = distances.detach()
    distances = torch.where(target_valid.unsqueeze(-2), distances, torch.full_like(distances, torch.inf))
    passes_fn = torch.le if inclusive else torch.lt
    rank = score_rank(scores, preds_valid)
    if not fallback:
        index, nearest = nearest_target(distances)
        passes = passes_fn(nearest.unsqueeze(-1), thresholds_t) & preds_valid.unsqueeze(-1)  # (..., P, T)
        if num_targets == 0:
            return passes
        # per (frame, target, threshold): the best rank among passing predictions pointing at it
        big = torch.full_like(rank, num_preds)
        rank_t = torch.where(passes, rank.unsqueeze(-1), big.unsqueeze(-1))  # (..., P, T)
        index_t = index.unsqueeze(-1).expand_as(rank_t)
        best = torch.full(
            (*distances.shape[:-2], num_targets, thresholds_t.numel()), num_preds, dtype=rank.dtype, device=rank.device
        )
        best = best.scatter_reduce(-2, index_t, rank_t, reduce="amin")
        return passes & (rank_t == best.gather(-2, index_t))
    lead = distances.shape[:-2]
    if num_targets == 0 or num_preds == 0:
        return torch.zeros((*lead, num_preds, thresholds_t.numel()), dtype=torch.bool, device=distances.device)
    flat = distances.reshape(-1, num_preds, num_targets)
    order = torch.argsort(rank.reshape(-1, num_preds), dim=-1)
    valid_flat = preds_valid.reshape(-1, num_preds)
    frames, num_thr = flat.shape[0], thresholds_t.numel()
    taken = torch.zeros(frames, num_thr, num_targets, dtype=torch.bool, device=distances.device)
    tp = torch.zeros(frames, num_preds, num_thr, dtype=torch.bool, device=distances.device)
    frame_index = torch.arange(frames, device=distances.device)
    for step in range(num_preds):
        pred = order[:, step]
        row = flat[frame_index, pred]  # (F, G)
        ok = passes_fn(row.unsqueeze(1), thresholds_t[:, None]) & ~taken  # (F, T, G)
        candidate = torch.where(ok, row.unsqueeze(1).expand_as(ok), torch.full_like(ok, torch.inf, dtype=row.dtype))
        choice = candidate.argmin(-1)  # (F, T)
        hit = ok.gather(-1, choice.unsqueeze(-1)).squeeze(-1) & valid_flat[frame_index, pred].unsqueeze(-1)
        taken.scatter_(-1, choice.unsqueeze(-1), hit.unsqueeze(-1) | taken.gather(-1, choice.unsqueeze(-1)))
        tp[frame_index, pred] = hit
    return tp.reshape(*lead, num_preds, num_thr)


def greedy_match_index(
    distances: Tensor,
    scores: Tensor,
    thresholds: Tensor | float | list[float],
    preds_valid: Tensor | None = None,
    target_valid: Tensor | None = None,
    inclusive: bool = True,
    fallback: bool = False,
    *,
    validate_args: bool = True,
) -> Tensor:
    """:func:`greedy_match` that also says which target each true positive took (topology scores need it).

    Same arguments and rules as :func:`greedy_match`.

    Returns:
        ``(..., P, T)`` long: the index of the matched target, ``-1`` for a false positive or padding.

    >>> distances = torch.tensor([[0.3, 0.4], [0.2, 0.45]])  # 2 predictions x 2 targets
    >>> greedy_match_index(distances, torch.tensor([0.9, 0.8]), [0.5])[..., 0]
    tensor([ 0, -1])
    >>> greedy_match_index(distances, torch.tensor([0.9, 0.8]), [0.5], fallback=True)[..., 0]
    tensor([0, 1])
    """
    thresholds_t = torch.as_tensor(thresholds, dtype=distances.dtype, device=distances.device).reshape(-1)
    num_preds, num_targets = distances.shape[-2], distances.shape[-1]
    lead = distances.shape[:-2]
    if not fallback:
        tp = greedy_match(distances, scores, thresholds_t, preds_valid, target_valid, inclusive, fallback=False)
        if num_targets == 0:
            return torch.full(tp.shape, -1, dtype=torch.long, device=distances.device)
        masked = distances.detach()
        if target_valid is not None:
            masked = torch.where(target_valid.unsqueeze(-2), masked, torch.full_like(masked, torch.inf))
        index, _ = nearest_target(masked)
        return torch.where(tp, index.unsqueeze(-1), torch.full_like(index.unsqueeze(-1), -1))
    if preds_valid is None:
        preds_valid = torch.ones(distances.shape[:-1], dtype=torch.bool, device=distances.device)
    num_thr = thresholds_t.numel()
    match = torch.full((*lead, num_preds, num_thr), -1, dtype=torch.long, device=distances.device)
    if num_targets == 0 or num_preds == 0:
        return match
    distances = distances.detach()
    if target_valid is not None:
        distances = torch.where(target_valid.unsqueeze(-2), distances, torch.full_like(distances, torch.inf))
    passes_fn = torch.le if inclusive else torch.lt
    rank = score_rank(scores, preds_valid)
    flat = distances.reshape(-1, num_preds, num_targets)
    order = torch.argsort(rank.reshape(-1, num_preds), dim=-1)
    valid_flat = preds_valid.reshape(-1, num_preds)
    frames = flat.shape[0]
    taken = torch.zeros(frames, num_thr, num_targets, dtype=torch.bool, device=distances.device)
    match = match.reshape(frames, num_preds, num_thr)
    frame_index = torch.arange(frames, device=distances.device)
    for step in range(num_preds):
        pred = order[:, step]
        row = flat[frame_index, pred]  # (F, G)
        ok = passes_fn(row.unsqueeze(1), thresholds_t[:, None]) & ~taken  # (F, T, G)
        candidate = torch.where(ok, row.unsqueeze(1).expand_as(ok), torch.full_like(ok, torch.inf, dtype=row.dtype))
        choice = candidate.argmin(-1)  # (F, T)
        hit = ok.gather(-1, choice.unsqueeze(-1)).squeeze(-1) & valid_flat[frame_index, pred].unsqueeze(-1)
        taken.scatter_(-1, choice.unsqueeze(-1), hit.unsqueeze(-1) | taken.gather(-1, choice.unsqueeze(-1)))
        match[frame_index, pred] = torch.where(hit, choice, torch.full_like(choice, -1))
    return match.reshape(*lead, num_preds, num_thr)
