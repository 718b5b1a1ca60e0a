"""OPT-J: the junction metric of Citraro, Koziński and Fua (ECCV 2020), "Towards Reliable Evaluation of Road Network
Reconstructions".

Features are the control nodes of each graph (junctions, degree >= 3, and endpoints, degree 1). Each ground-truth
control node is matched to a predicted control node, or to a point on a predicted edge (snapped and inserted as a
node of degree 2), within ``d_max``, with cost ``distance + alpha * |deg_gt - deg_pred|``. Predicted control nodes left
unmatched are then matched the other way, into the ground truth. Every pair scores ``tp += min(deg_gt, deg_pred)``,
``pp += deg_pred``, ``ap += deg_gt`` (an unmatched node counts degree 0 on the other side):
``precision = tp / pp``, ``recall = tp / ap``.

Matching: ``matching="optimal"`` (default) solves each direction as a maximum-cardinality, minimum-cost one-to-one
assignment (``scipy.optimize.linear_sum_assignment`` on independent groups), and a ground-truth node matched in the
first direction is not matched again in the second. ``matching="greedy"`` reproduces the released code: nodes are
taken in graph order, each picks its cheapest unused candidate among its ``candidates_k = 5`` nearest, and in the
second direction already matched ground-truth nodes may be matched again.

``compat="reference"`` gives the numbers of the released code (``junction_based/junction_new_metric.py``): greedy
matching, nodes at identical positions are not merged (so a crop made with ``crop(..., compat="reference")`` keeps
its node order, which the greedy pass follows), and an empty prediction scores ``tp = pp = ap = 0``. On the Vancouver
fixture it gives the released ``tp``, ``pp`` and ``ap`` exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import networkx as nx
import numpy as np
from scipy.spatial import cKDTree
from torch import Tensor

from drivemetrics._internal.compat import Compat
from drivemetrics._internal.metric import ScalarMetric, add_config_state
from drivemetrics._internal.validation import check_graph
from drivemetrics.graph.geometry import (
    PointMatching,
    check_compat,
    control_nodes,
    f1_from,
    graph_pairs,
    max_matching_min_cost,
    result_tensors,
    safe_ratio,
    snap_points,
    validate_graph,
)
from drivemetrics.roadnet._metric import GraphMetric, tensor_ratios

__all__ = ["OptJF1Score", "OptJMetrics", "OptJPrecision", "OptJRecall", "OptJResult", "opt_j"]


@dataclass(frozen=True)
class OptJResult:
    """OPT-J counts of one tile (sum them over tiles, then compute the ratios)."""

    tp: int
    pp: int
    ap: int

    @property
    def precision(self) -> float:
        return safe_ratio(self.tp, self.pp)

    @property
    def recall(self) -> float:
        return safe_ratio(self.tp, self.ap)

    @property
    def f1(self) -> float:
        return f1_from(self.precision, self.recall)

    def as_dict(self) -> dict[str, float]:
        """Counts and ``precision`` / ``recall`` / ``f1``."""
        return {**asdict(self), "precision": self.precision, "recall": self.recall, "f1": self.f1}


def _match_into(
    src: nx.Graph,
    src_nodes: list,
    dst: nx.Graph,
    excluded: set,
    d_max: float,
    alpha: float,
    existing_dist: float,
    matching: str,
    candidates_k: int,
) -> tuple[dict, nx.Graph]:
    """Match ``src_nodes`` of ``src`` into ``dst`` (control nodes or snapped points). Returns (matches, dst_snapped)."""
    if not src_nodes:
        return {}, dst
    pts = np.array([src.nodes[n]["pos"] for n in src_nodes], dtype=np.float64)
    dst_snap, corr = snap_points(dst, pts, d_max, existing_dist)
    snapped = {c for c in corr if c is not None}
    cand = [n for n in dst_snap.nodes if (n in snapped or dst_snap.degree(n) != 2) and n not in excluded]
    cand = [n for n in cand if dst_snap.degree(n) > 0]
    if not cand:
        return {}, dst_snap
    cand_pos = np.array([dst_snap.nodes[n]["pos"] for n in cand], dtype=np.float64)
    cand_deg = np.array([dst_snap.degree(n) for n in cand], dtype=np.float64)
    src_deg = np.array([src.degree(n) for n in src_nodes], dtype=np.float64)
    tree = cKDTree(cand_pos)
    if matching == "greedy":
        k = min(candidates_k, len(cand))
        dist, idx = tree.query(pts, k=k)
        dist, idx = dist.reshape(len(pts), k), idx.reshape(len(pts), k)
        cost = dist + alpha * np.abs(src_deg[:, None] - cand_deg[idx])
        seen: set[int] = set()
        matches = {}
        for i in range(len(pts)):
            best, best_cost = -1, np.inf
            for j in range(k):
                c = int(idx[i, j])
                if dist[i, j] <= d_max and cost[i, j] < best_cost and c not in seen:
                    best, best_cost = c, cost[i, j]
            if best >= 0:
                seen.add(best)
                matches[src_nodes[i]] = cand[best]
        return matches, dst_snap
    pairs = cKDTree(pts).sparse_distance_matrix(tree, d_max, output_type="ndarray")
    s_idx, c_idx, dist = pairs["i"].astype(np.int64), pairs["j"].astype(np.int64), pairs["v"]
    cost = dist + alpha * np.abs(src_deg[s_idx] - cand_deg[c_idx])
    rows, cols = max_matching_min_cost(s_idx, c_idx, cost, len(pts), len(cand))
    return {src_nodes[i]: cand[j] for i, j in zip(rows.tolist(), cols.tolist(), strict=True)}, dst_snap


def opt_j(
    preds: nx.Graph,
    target: nx.Graph,
    *,
    d_max: float = 25.0,
    alpha: float = 100.0,
    existing_dist: float = 1.0,
    matching: PointMatching | None = None,
    candidates_k: int = 5,
    compat: Compat = "default",
    validate_args: bool = True,
) -> dict[str, Tensor]:
    """OPT-J junction precision / recall of a predicted road graph against the ground truth.

    Args:
        preds: predicted graph (undirected networkx graph, nodes with ``pos``). May be empty.
        target: ground-truth graph; must have at least one edge.
        d_max: matching radius (``th_snap`` of the released code), units of ``pos`` (default 25 px).
        alpha: weight of the degree difference in the matching cost ``distance + alpha * |deg_gt - deg_pred|``
            (the released code's form; the paper writes the weight on the distance instead).
        existing_dist: when snapping a node onto an edge, reuse an edge end closer than this (``th_existing``, 1 px).
        matching: ``"optimal"`` (the default, assignment) or ``"greedy"`` (the released code's order); ``None``
            picks ``"optimal"``, or ``"greedy"`` with ``compat="reference"``.
        candidates_k: number of nearest candidates inspected per node in greedy mode (5 in the released code).
        compat: ``"default"`` or ``"reference"``: the released code's numbers (greedy matching, no merging of
            nodes at identical positions, an empty prediction scores all zeros).
        validate_args: check that both are networkx graphs whose nodes carry a finite
            ``pos`` within ``max_abs_coordinate`` (the graph readers' limit); ``False`` skips it.

    Returns:
        ``dict[str, Tensor]``: int64 counts ``tp``, ``pp``, ``ap`` and float64 ``precision``, ``recall``, ``f1``.
        An empty prediction gives ``tp = pp = 0`` and ``ap`` = the summed ground-truth degrees (the released code
        reports ``ap = 0``, which would drop the tile from a summed recall).

    Examples:
        >>> import networkx as nx, numpy as np
        >>> from drivemetrics.functional import opt_j
        >>> pos = lambda *xy: {n: np.array(p, dtype=float) for n, p in enumerate(xy)}  # node -> (x, y), pixels
        >>> gt, pred = nx.star_graph(4), nx.star_graph(3)  # a crossing; the prediction lacks an arm, 2 px off
        >>> nx.set_node_attributes(gt, pos((0, 0), (-400, 0), (400, 0), (0, -400), (0, 400)), "pos")
        >>> nx.set_node_attributes(pred, pos((2, 2), (-400, 2), (400, 2), (2, -400)), "pos")
        >>> {k: round(v.item(), 4) for k, v in opt_j(pred, gt).items()}
        {'tp': 6, 'pp': 6, 'ap': 8, 'precision': 1.0, 'recall': 0.75, 'f1': 0.8571}
    """
    if validate_args:
        check_graph(preds, "preds")
        check_graph(target, "target")
    reference = check_compat(compat)
    if matching is None:
        matching = "greedy" if reference else "optimal"
    if matching not in ("optimal", "greedy"):
        raise ValueError(f"`matching` must be 'optimal' or 'greedy', got {matching!r}")
    if reference and matching != "greedy":
        raise ValueError("compat='reference' uses the released greedy matching; leave `matching` unset")
    if not d_max > 0:
        raise ValueError(f"`d_max` must be > 0, got {d_max}")
    if candidates_k < 1:
        raise ValueError(f"`candidates_k` must be >= 1, got {candidates_k}")
    gt = validate_graph(target, "target", allow_empty=False, merge_duplicates=not reference)
    pred = validate_graph(preds, "preds", merge_duplicates=not reference)
    gt_ctrl = control_nodes(gt)
    if pred.number_of_edges() == 0:
        return result_tensors(OptJResult(0, 0, 0 if reference else int(sum(gt.degree(n) for n in gt_ctrl))))
    common = {"d_max": d_max, "alpha": alpha, "existing_dist": existing_dist, "matching": matching}
    m_gt, pred_snap = _match_into(gt, gt_ctrl, pred, set(), candidates_k=candidates_k, **common)
    matched_pred = set(m_gt.values())
    rest = [n for n in control_nodes(pred) if n not in matched_pred]
    excluded = set(m_gt) if matching == "optimal" else set()
    m_pred, gt_snap = _match_into(pred, rest, gt, excluded, candidates_k=candidates_k, **common)
    tp = pp = ap = 0
    for n in gt_ctrl:
        d_gt = gt.degree(n)
        d_pr = pred_snap.degree(m_gt[n]) if n in m_gt else 0
        tp, pp, ap = tp + min(d_gt, d_pr), pp + d_pr, ap + d_gt
    for n in rest:
        d_pr = pred.degree(n)
        d_gt = gt_snap.degree(m_pred[n]) if n in m_pred else 0
        tp, pp, ap = tp + min(d_gt, d_pr), pp + d_pr, ap + d_gt
    return result_tensors(OptJResult(int(tp), int(pp), int(ap)))


class OptJMetrics(GraphMetric):
    """OPT-J junction precision / recall / F1 summed over tiles (see :func:`~drivemetrics.roadnet.opt_j.opt_j`).

    Examples:
        >>> import networkx as nx
        >>> from drivemetrics.roadnet import OptJMetrics
        >>> g = nx.Graph([(0, 1), (1, 2), (1, 3)])
        >>> nx.set_node_attributes(g, {0: (0.0, 0.0), 1: (50.0, 0.0), 2: (100.0, 0.0), 3: (50.0, 50.0)}, "pos")
        >>> metric = OptJMetrics()
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
        matching: PointMatching | None = None,
        compat: Compat = "default",
        validate_args: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.validate_args = bool(validate_args)
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
        add_config_state(self, ("OptJMetrics", sorted(self.options.items())))

    def update(self, preds: nx.Graph | Sequence[nx.Graph], target: nx.Graph | Sequence[nx.Graph]) -> None:
        """Add the counts of one tile or of a sequence of tiles."""
        for pred, gt in graph_pairs(preds, target):
            res = opt_j(pred, gt, **self.options, validate_args=self.validate_args)
            self.tp = self.tp + res["tp"]
            self.pp = self.pp + res["pp"]
            self.ap = self.ap + res["ap"]

    def compute(self) -> dict[str, Tensor]:
        return tensor_ratios(self.tp, self.pp, self.ap)


class OptJPrecision(ScalarMetric, OptJMetrics):
    """OPT-J junction precision, counts summed over tiles (arguments as :class:`OptJMetrics`).

    Examples:
        >>> from drivemetrics.roadnet import OptJPrecision, roadnet_example_inputs
        >>> OptJPrecision()(**roadnet_example_inputs())
        tensor(1., dtype=torch.float64)
    """

    key = "precision"


class OptJRecall(ScalarMetric, OptJMetrics):
    """OPT-J junction recall, counts summed over tiles (arguments as :class:`OptJMetrics`).

    Examples:
        >>> from drivemetrics.roadnet import OptJRecall, roadnet_example_inputs
        >>> OptJRecall()(**roadnet_example_inputs())
        tensor(0.7500, dtype=torch.float64)
    """

    key = "recall"


class OptJF1Score(ScalarMetric, OptJMetrics):
    """OPT-J junction F1, counts summed over tiles (arguments as :class:`OptJMetrics`).

    Examples:
        >>> from drivemetrics.roadnet import OptJF1Score, roadnet_example_inputs
        >>> OptJF1Score()(**roadnet_example_inputs())
        tensor(0.8571, dtype=torch.float64)
    """

    key = "f1"
