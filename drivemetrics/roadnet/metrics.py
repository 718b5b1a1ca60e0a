"""``torchmetrics.Metric`` wrappers of the graph metrics: per-tile counts accumulated in sum-reduced states.

``update(preds, target)`` takes one graph pair or two equal-length sequences of graphs (one pair per tile). The
aggregation follows the paper's protocol (``examples/compute_scores_roadtracer.py`` of the released code):

- :class:`OptJ`: ``tp``, ``pp``, ``ap`` summed over tiles, then precision / recall / F1.
- :class:`OptP`: mean of per-tile precision and mean of per-tile recall, then the F1 of the two means.
- :class:`OptG`: predicted / ground-truth / spurious / missing counts summed over tiles, then the ratios.

Every class takes ``compat="reference"`` (the released code's numbers, see each functional). ``compute()`` returns a
dict of scalar tensors ``{"precision", "recall", "f1"}``. The states are tensors, so the
metrics sync across processes (DDP) like any torchmetrics metric. Graph metrics are not differentiable.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import networkx as nx
import torch
from torch import Tensor
from torchmetrics import Metric

from drivemetrics._metric import plot_metric
from drivemetrics.roadnet.geometry import check_compat
from drivemetrics.roadnet.opt_g import opt_g
from drivemetrics.roadnet.opt_j import opt_j
from drivemetrics.roadnet.opt_p import opt_p

__all__ = ["OptG", "OptJ", "OptP", "graph_pairs"]


def graph_pairs(preds: nx.Graph | Sequence[nx.Graph], target: nx.Graph | Sequence[nx.Graph]) -> list[tuple]:
    """``[(pred, target), ...]`` from one graph pair or two sequences of the same length."""
    if isinstance(preds, nx.Graph) and isinstance(target, nx.Graph):
        return [(preds, target)]
    if isinstance(preds, nx.Graph) or isinstance(target, nx.Graph):
        raise TypeError("`preds` and `target` must both be graphs or both be sequences of graphs")
    preds, target = list(preds), list(target)
    if len(preds) != len(target):
        raise ValueError(f"`preds` and `target` must hold as many graphs, got {len(preds)} and {len(target)}")
    return list(zip(preds, target, strict=True))


def _ratios(tp: Tensor, pred_total: Tensor, gt_total: Tensor) -> dict[str, Tensor]:
    precision = torch.where(pred_total > 0, tp / pred_total.clamp(min=1), torch.zeros_like(tp))
    recall = torch.where(gt_total > 0, tp / gt_total.clamp(min=1), torch.zeros_like(tp))
    return {"precision": precision, "recall": recall, "f1": _f1(precision, recall)}


def _f1(precision: Tensor, recall: Tensor) -> Tensor:
    total = precision + recall
    return torch.where(total > 0, 2 * precision * recall / total.clamp(min=1e-300), torch.zeros_like(total))


class _GraphMetric(Metric):
    is_differentiable = False
    higher_is_better = True
    full_state_update = False
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0

    def _add_sum(self, name: str) -> None:
        self.add_state(name, default=torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="sum")

    def plot(self, val: dict[str, Tensor] | Sequence[dict[str, Tensor]] | None = None, ax: Any = None) -> Any:
        """Plot the scores (or their sequence over epochs) with matplotlib; returns ``(fig, ax)``."""
        return plot_metric(self, val, ax)


class OptJ(_GraphMetric):
    """OPT-J junction precision / recall / F1 summed over tiles (see :func:`~drivemetrics.roadnet.opt_j.opt_j`).

    Example:
        >>> import networkx as nx
        >>> g = nx.Graph([(0, 1), (1, 2), (1, 3)])
        >>> nx.set_node_attributes(g, {0: (0.0, 0.0), 1: (50.0, 0.0), 2: (100.0, 0.0), 3: (50.0, 50.0)}, "pos")
        >>> metric = OptJ()
        >>> metric.update(g, g)
        >>> float(metric.compute()["f1"])
        1.0
    """

    tp: Tensor
    pp: Tensor
    ap: Tensor

    def __init__(
        self,
        *,
        d_max: float = 25.0,
        alpha: float = 100.0,
        existing_dist: float = 1.0,
        matching: str | None = None,
        compat: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        check_compat(compat)
        self.options = {
            "d_max": d_max,
            "alpha": alpha,
            "existing_dist": existing_dist,
            "matching": matching,
            "compat": compat,
        }
        for name in ("tp", "pp", "ap"):
            self._add_sum(name)

    def update(self, preds: nx.Graph | Sequence[nx.Graph], target: nx.Graph | Sequence[nx.Graph]) -> None:
        """Add the counts of one tile or of a sequence of tiles."""
        for pred, gt in graph_pairs(preds, target):
            res = opt_j(pred, gt, **self.options)
            self.tp += res.tp
            self.pp += res.pp
            self.ap += res.ap

    def compute(self) -> dict[str, Tensor]:
        return _ratios(self.tp, self.pp, self.ap)


class OptP(_GraphMetric):
    """OPT-P: mean per-tile path precision and recall, F1 of the means (see :func:`~drivemetrics.roadnet.opt_p.opt_p`)."""

    sum_precision: Tensor
    sum_recall: Tensor
    n_tiles: Tensor

    def __init__(
        self,
        *,
        d_snap: float = 25.0,
        segment_length: float = 25.0,
        corridor: float = 25.0,
        max_candidates: int = 8,
        spacing: float = 5.0,
        n_decompositions: int = 1,
        seed: int | None = 0,
        compat: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        check_compat(compat)
        self.options = {
            "compat": compat,
            "n_decompositions": n_decompositions,
            "d_snap": d_snap,
            "segment_length": segment_length,
            "corridor": corridor,
            "max_candidates": max_candidates,
            "spacing": spacing,
            "seed": seed,
        }
        for name in ("sum_precision", "sum_recall", "n_tiles"):
            self._add_sum(name)

    def update(self, preds: nx.Graph | Sequence[nx.Graph], target: nx.Graph | Sequence[nx.Graph]) -> None:
        """Add the precision and recall of one tile or of a sequence of tiles."""
        for pred, gt in graph_pairs(preds, target):
            res = opt_p(pred, gt, **self.options)
            self.sum_precision += res.precision
            self.sum_recall += res.recall
            self.n_tiles += 1

    def compute(self) -> dict[str, Tensor]:
        n = self.n_tiles.clamp(min=1)
        precision, recall = self.sum_precision / n, self.sum_recall / n
        return {"precision": precision, "recall": recall, "f1": _f1(precision, recall)}


class OptG(_GraphMetric):
    """OPT-G precision / recall / F1 from counts summed over tiles (see :func:`~drivemetrics.roadnet.opt_g.opt_g`)."""

    n_pred: Tensor
    n_gt: Tensor
    n_spurious: Tensor
    n_missing: Tensor

    def __init__(
        self,
        *,
        n_samples: int = 1000,
        radius: float = 300.0,
        d_match: float = 25.0,
        spacing: float = 10.0,
        matching: str | None = None,
        seed: int | None = 0,
        compat: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        check_compat(compat)
        self.options = {
            "compat": compat,
            "n_samples": n_samples,
            "radius": radius,
            "d_match": d_match,
            "spacing": spacing,
            "matching": matching,
            "seed": seed,
        }
        for name in ("n_pred", "n_gt", "n_spurious", "n_missing"):
            self._add_sum(name)

    def update(self, preds: nx.Graph | Sequence[nx.Graph], target: nx.Graph | Sequence[nx.Graph]) -> None:
        """Add the counts of one tile or of a sequence of tiles."""
        for pred, gt in graph_pairs(preds, target):
            res = opt_g(pred, gt, **self.options)
            self.n_pred += res.n_pred
            self.n_gt += res.n_gt
            self.n_spurious += res.n_spurious
            self.n_missing += res.n_missing

    def compute(self) -> dict[str, Tensor]:
        out = _ratios(self.n_pred - self.n_spurious, self.n_pred, self.n_gt)
        out["recall"] = torch.where(
            self.n_gt > 0, (self.n_gt - self.n_missing) / self.n_gt.clamp(min=1), torch.zeros_like(self.n_gt)
        )
        out["f1"] = _f1(out["precision"], out["recall"])
        return out
