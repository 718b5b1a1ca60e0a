"""A differentiable lane matching loss: soft discrete Frechet (or Chamfer) distance between predicted and
ground-truth lanes, with a Hungarian or a soft assignment; functional :func:`lane_matching_loss` and
:class:`LaneMatchingLoss`.

The DET_l of OpenLane-V2 counts a predicted lane as found when its (relaxed) discrete Frechet distance to a ground
truth lane is below 1, 2 or 3 m; the soft Frechet distance (log-sum-exp min / max with temperature ``gamma``,
:func:`drivemetrics.polyline.frechet.soft_frechet_distance_pairs`) is a smooth surrogate of that distance, so
lowering it for matched pairs raises DET_l.
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import Tensor, nn

from drivemetrics._internal.precision import float32_if_half
from drivemetrics._internal.validation import check_finite
from drivemetrics.polyline.frechet import soft_frechet_distance_pairs

__all__ = ["LaneMatchingLoss", "lane_matching_loss"]

Assignment = Literal["hungarian", "soft"]
Distance = Literal["frechet", "chamfer"]


def _pair_costs(
    preds: Tensor,
    target: Tensor,
    target_lengths: Tensor | None,
    distance: Distance,
    gamma: float,
    validate_args: bool = True,
) -> Tensor:
    """``(B, P, G)`` soft distances between every predicted and every ground-truth lane."""
    if validate_args:  # a NaN would reach the assignment (scipy: "matrix contains invalid numeric entries")
        check_finite(preds, "preds")
        check_finite(target, "target")
    batch, num_p, n, dim = preds.shape
    num_g, m = target.shape[1], target.shape[2]
    a = preds[:, :, None].expand(batch, num_p, num_g, n, dim)
    b = target[:, None].expand(batch, num_p, num_g, m, dim)
    b_len = None if target_lengths is None else target_lengths[:, None].expand(batch, num_p, num_g)
    if distance == "frechet":
        return soft_frechet_distance_pairs(a, b, None, b_len, gamma=gamma, validate_args=validate_args)
    # soft Chamfer: log-sum-exp nearest point in both directions, padded target points masked out
    d = torch.sqrt(((a[..., :, None, :] - b[..., None, :, :]) ** 2).sum(-1) + 1e-12)  # (B, P, G, n, m)
    if b_len is not None:
        valid = torch.arange(m, device=preds.device) < b_len[..., None]
        d_a = torch.where(valid[..., None, :], d, torch.inf)
        forward = -gamma * torch.logsumexp(-d_a / gamma, dim=-1)  # (B, P, G, n)
        backward = -gamma * torch.logsumexp(-d / gamma, dim=-2)  # (B, P, G, m)
        backward = torch.where(valid, backward, 0.0).sum(-1) / b_len.clamp(min=1)
        return (forward.mean(-1) + backward) / 2
    forward = -gamma * torch.logsumexp(-d / gamma, dim=-1)
    backward = -gamma * torch.logsumexp(-d / gamma, dim=-2)
    return (forward.mean(-1) + backward.mean(-1)) / 2


def lane_matching_loss(
    preds: Tensor,
    target: Tensor,
    *,
    target_lengths: Tensor | None = None,
    distance: Distance = "frechet",
    assignment: Assignment = "hungarian",
    gamma: float = 0.1,
    tau: float = 0.5,
    validate_args: bool = True,
) -> Tensor:
    """Mean soft distance between each ground-truth lane and its assigned prediction.

    Args:
        preds: predicted lanes ``(B, P, N, D)`` (metres), ``N`` points each, in driving order.
        target: ground-truth lanes ``(B, G, M, D)``, padded; ``target_lengths`` ``(B, G)`` valid points
            (0 = absent lane; ``None``: all ``M``).
        distance: ``"frechet"`` (soft discrete Frechet; point order matters) or ``"chamfer"`` (soft Chamfer).
        assignment: ``"hungarian"`` (one-to-one min-cost assignment of the detached costs,
            :func:`scipy.optimize.linear_sum_assignment`; a ground truth left without a prediction is left out) or
            ``"soft"`` (each ground truth takes a softmin-weighted mean over predictions, temperature ``tau``
            metres; smooth everywhere). ``"soft"`` with ``validate_args=False`` compiles with
            ``torch.compile(fullgraph=True)``; ``"hungarian"`` runs SciPy on the host, a graph break.
        gamma: soft min / max temperature of the distance (metres).
        tau: soft assignment temperature (metres).
        validate_args: check the inputs' values (reads back from the device); ``False`` skips those checks.

    Returns:
        Scalar loss (metres), 0 when there is no ground-truth lane; ``float32`` for ``float16`` / ``bfloat16``
        inputs (computed in ``float32``), else ``preds``' dtype.

    Examples:
        >>> import torch
        >>> from drivemetrics.functional import lane_matching_loss
        >>> target = torch.tensor([[[[0.0, 0.0], [5.0, 0.0], [10.0, 0.0]]]])
        >>> preds = (target + torch.tensor([0.0, 1.0])).requires_grad_(True)
        >>> loss = lane_matching_loss(preds, target, gamma=0.01)
        >>> round(loss.item(), 2)  # 1 m apart, plus the smoothing
        1.01
        >>> loss.backward()
        >>> preds.grad[0, 0, :, 1]  # the three tied point distances share the gradient
        tensor([0.3333, 0.3333, 0.3333])
    """
    if preds.ndim != 4 or target.ndim != 4 or preds.shape[0] != target.shape[0] or preds.shape[3] != target.shape[3]:
        raise ValueError(
            f"`preds` and `target` must have shapes (B, P, N, D) and (B, G, M, D), got {tuple(preds.shape)} and "
            f"{tuple(target.shape)}"
        )
    if distance not in ("frechet", "chamfer"):
        raise ValueError(f"`distance` must be 'frechet' or 'chamfer', got {distance!r}")
    if assignment not in ("hungarian", "soft"):
        raise ValueError(f"`assignment` must be 'hungarian' or 'soft', got {assignment!r}")
    if not (gamma > 0 and tau > 0):
        raise ValueError(f"`gamma` and `tau` must be > 0, got {gamma} and {tau}")
    preds, target = float32_if_half(preds), float32_if_half(target)
    batch, num_p = preds.shape[:2]
    num_g = target.shape[1]
    present = (
        torch.ones(batch, num_g, dtype=torch.bool, device=preds.device)
        if target_lengths is None
        else target_lengths > 0
    )
    if num_p == 0 or num_g == 0:  # shapes: known when compiling
        return preds.sum() * 0.0
    lengths = None if target_lengths is None else target_lengths.clamp(min=1)
    if assignment == "soft":  # no value read back: compiles with fullgraph=True
        cost = _pair_costs(preds, target, lengths, distance, gamma, validate_args)  # (B, P, G)
        weights = torch.softmax(-cost / tau, dim=1)
        per_gt = torch.where(present, (weights * cost).sum(1), 0.0)  # (B, G), absent lanes 0
        return per_gt.sum() / present.sum().clamp(min=1)
    if not bool(present.any()):
        return preds.sum() * 0.0
    cost = _pair_costs(preds, target, lengths, distance, gamma, validate_args)  # (B, P, G)
    from scipy.optimize import linear_sum_assignment

    picked = []
    for s in range(batch):
        cols = torch.nonzero(present[s])[:, 0]
        if cols.numel() == 0:
            continue
        rows_i, cols_i = linear_sum_assignment(cost[s][:, cols].detach().cpu().numpy())
        picked.append(cost[s, torch.as_tensor(rows_i, device=preds.device), cols[torch.as_tensor(cols_i)]])
    return torch.cat(picked).mean()


class LaneMatchingLoss(nn.Module):
    """:func:`lane_matching_loss` as a module (same arguments, fixed at construction).

    Examples:
        >>> from drivemetrics.lanetopology import LaneMatchingLoss
        >>> import torch
        >>> loss_fn = LaneMatchingLoss(assignment="soft", gamma=0.05)
        >>> target = torch.zeros(1, 2, 4, 3)
        >>> target[0, 1, :, 1] = 3.5
        >>> target[:, :, :, 0] = torch.arange(4.0)
        >>> float(loss_fn(target.clone(), target)) < 0.1
        True
    """

    def __init__(
        self,
        distance: Distance = "frechet",
        assignment: Assignment = "hungarian",
        gamma: float = 0.1,
        tau: float = 0.5,
        validate_args: bool = True,
    ) -> None:
        super().__init__()
        self.validate_args = bool(validate_args)
        self.distance: Distance = distance
        self.assignment: Assignment = assignment
        self.gamma = gamma
        self.tau = tau

    def forward(self, preds: Tensor, target: Tensor, *, target_lengths: Tensor | None = None) -> Tensor:
        """The loss of ``preds`` ``(B, P, N, D)`` against ``target`` ``(B, G, M, D)`` (metres)."""
        return lane_matching_loss(
            preds,
            target,
            target_lengths=target_lengths,
            distance=self.distance,
            assignment=self.assignment,
            gamma=self.gamma,
            tau=self.tau,
            validate_args=self.validate_args,
        )
