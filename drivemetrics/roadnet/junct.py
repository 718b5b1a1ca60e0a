"""RoadTracer's junction metric JUNCT (Bastani et al., CVPR 2018): F_correct and F_error.

A junction is a node with >= 3 neighbours. Junctions are grouped into clusters: taking junctions in node order,
each junction not yet clustered becomes a cluster center and collects the unclustered junctions within Euclidean
distance ``cluster_radius`` that are reachable within graph distance ``2 * cluster_radius``. A cluster's
*out-angles* are the directions, seen from its center, of the points reached by following every road leaving the
cluster for ``angle_distance`` (or up to the road's end / next junction when shorter).

Each GT cluster (in order) takes the best unused predicted cluster within ``match_radius`` whose score
``correct - error > 0``, best meaning the largest ``correct - error - distance / match_radius``, where ``correct``
is the fraction of GT out-angles with a predicted out-angle within 90 degrees and ``error`` the fraction of
predicted out-angles with no GT out-angle within 90 degrees. Then

- F_correct = sum of ``correct`` over matched GT clusters / number of GT clusters,
- F_error = (sum of ``error`` over matched predicted clusters + number of unmatched predicted clusters) /
  number of predicted clusters.

Defaults are those of ``junction_metric.go`` run by its ``main`` (constants 50 / 65 / 65 px times ``Scale: 1.7``).
Clusters whose center lies outside ``bounds`` are ignored (the Go ``main`` uses the region shrunk by 300 px).

Predicted junctions are clustered around their nearest GT cluster (Go's ``GetIntersectionClustersWithContext``:
the predicted junction closest to a GT cluster center becomes a center and keeps the junctions of that GT cluster
reachable within ``3 * cluster_radius``; the others stay alone); ``context=False`` clusters them like the GT.
Difference from the Go code, on purpose: a GT junction joins at most one cluster (Go may add an already
clustered junction to a later cluster too). The Go file prints the two scores but not the final
formula; the one above is the RoadTracer paper's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import networkx as nx
import numpy as np
import torch
from scipy.sparse.csgraph import dijkstra
from scipy.spatial import cKDTree
from torch import Tensor

from drivemetrics._internal.metric import MetricFamily, ScalarMetric, add_config_state
from drivemetrics._internal.validation import check_graph
from drivemetrics.graph.geometry import (
    CHUNK,
    graph_arrays,
    graph_pairs,
    index_in_group,
    length_csgraph,
    result_tensors,
    road_chains,
    validate_graph,
)

__all__ = [
    "ANGLE_DISTANCE",
    "CLUSTER_RADIUS",
    "MATCH_RADIUS",
    "SCALE",
    "JUNCTResult",
    "JunctionClusters",
    "JunctionFCorrect",
    "JunctionFError",
    "JunctionMetrics",
    "junct",
    "junct_scores",
    "junction_clusters",
]

SCALE = 1.7
CLUSTER_RADIUS = 50 * SCALE
ANGLE_DISTANCE = 65 * SCALE
MATCH_RADIUS = 65 * SCALE


@dataclass(frozen=True)
class JUNCTResult:
    """F_correct, F_error and the summed scores / cluster counts behind them."""

    f_correct: float
    f_error: float
    correct_score: float
    n_gt: int
    error_score: float
    n_pred: int


@dataclass(frozen=True)
class JunctionClusters:
    """Junction clusters of a graph: ``centers`` ``(C, 2)`` and out-angles ``(C, A)`` in radians (NaN padded)."""

    centers: np.ndarray
    angles: np.ndarray


def junct_scores(correct_score: float, n_gt: int, error_score: float, n_pred: int) -> tuple[float, float]:
    """``(f_correct, f_error)``; f_correct is NaN without GT junctions, f_error 0 without predicted ones."""
    f_correct = correct_score / n_gt if n_gt else float("nan")
    f_error = error_score / n_pred if n_pred else 0.0
    return float(f_correct), float(f_error)


def _greedy_assignment(
    cs: object, pos: np.ndarray, junction_rows: np.ndarray, cluster_radius: float
) -> tuple[np.ndarray, list[int]]:
    """Go's ``GetIntersectionClusters``: node-order greedy clusters; returns (cluster of each row, center rows)."""
    cluster_of = np.full(len(pos), -1, dtype=np.int64)
    centers: list[int] = []
    for lo in range(0, len(junction_rows), CHUNK):
        rows = junction_rows[lo : lo + CHUNK]
        near = np.isfinite(dijkstra(cs, directed=False, indices=rows, limit=2 * cluster_radius))[:, junction_rows]
        near &= np.linalg.norm(pos[junction_rows][None, :, :] - pos[rows][:, None, :], axis=2) < cluster_radius
        for k, row in enumerate(rows):  # greedy in node order: sequential by nature
            if cluster_of[row] >= 0:
                continue
            members = junction_rows[near[k]]
            cluster_of[members[cluster_of[members] < 0]] = len(centers)
            centers.append(int(row))
    return cluster_of, centers


def _context_assignment(
    cs: object, pos: np.ndarray, junction_rows: np.ndarray, context: np.ndarray, cluster_radius: float
) -> tuple[np.ndarray, list[int]]:
    """Go's ``GetIntersectionClustersWithContext``.

    Junctions go to their nearest context center; per context center the junction closest to it becomes the cluster
    center and keeps the junctions reachable within ``3 * cluster_radius`` along the graph; the others become
    single-junction clusters.
    """
    dist, group = cKDTree(context).query(pos[junction_rows])
    order = np.lexsort((dist, group))  # per group, closest first
    rows, group = junction_rows[order], group[order]
    first = np.r_[True, group[1:] != group[:-1]]
    best_row = rows[first]  # one per used context center
    group_index = np.cumsum(first) - 1  # which best each junction belongs to
    reach = np.zeros(len(rows), dtype=bool)
    for lo in range(0, len(best_row), CHUNK):
        d = dijkstra(cs, directed=False, indices=best_row[lo : lo + CHUNK], limit=3 * cluster_radius)
        in_chunk = (group_index >= lo) & (group_index < lo + CHUNK)
        reach[in_chunk] = np.isfinite(d[group_index[in_chunk] - lo, rows[in_chunk]])
    cluster_of = np.full(len(pos), -1, dtype=np.int64)
    cluster_of[rows[reach]] = group_index[reach]
    singles = rows[~reach]
    cluster_of[singles] = len(best_row) + np.arange(len(singles))
    return cluster_of, [*best_row.tolist(), *singles.tolist()]


def junction_clusters(
    graph: nx.Graph,
    cluster_radius: float = CLUSTER_RADIUS,
    angle_distance: float = ANGLE_DISTANCE,
    context: np.ndarray | None = None,
) -> JunctionClusters:
    """Cluster the junctions of a validated graph and measure their out-angles (see module doc).

    With ``context`` (``(C, 2)`` GT cluster centers), junctions are grouped around their nearest context center
    instead, as Go's ``GetIntersectionClustersWithContext`` does for the prediction.
    """
    arrays = graph_arrays(graph)
    pos = arrays.pos
    index = {n: i for i, n in enumerate(arrays.nodes)}
    degree = np.array([graph.degree(n) for n in arrays.nodes], dtype=np.int64)
    junction_rows = np.flatnonzero(degree >= 3)
    if len(junction_rows) == 0:
        return JunctionClusters(np.zeros((0, 2)), np.zeros((0, 0)))
    cs = length_csgraph(pos, arrays.edges)
    if context is not None and len(context):
        cluster_of, centers = _context_assignment(cs, pos, junction_rows, np.asarray(context), cluster_radius)
    else:
        cluster_of, centers = _greedy_assignment(cs, pos, junction_rows, cluster_radius)
    # one out-position per road end at a clustered junction
    chains = road_chains(graph)
    rows_of = [np.array([index[n] for n in c], dtype=np.int64) for c in chains]
    seg = [np.linalg.norm(np.diff(pos[r], axis=0), axis=1) for r in rows_of]
    length = np.array([s.sum() for s in seg])
    start = np.array([r[0] for r in rows_of])
    end = np.array([r[-1] for r in rows_of])
    internal = (cluster_of[start] >= 0) & (cluster_of[start] == cluster_of[end]) & (length <= angle_distance)
    # flattened polylines, so positions along every chain are one searchsorted
    offset = np.r_[0, np.cumsum([len(r) for r in rows_of])]
    flat_rows = np.concatenate(rows_of)
    cum = np.concatenate([np.r_[0.0, np.cumsum(s)] for s in seg])
    span = float(length.max()) + 1.0
    chain_id = np.repeat(np.arange(len(chains)), np.diff(offset))
    key = chain_id * span + cum
    ends_c, ends_at, ends_cluster = [], [], []
    for side, node in ((0, start), (1, end)):
        use = (cluster_of[node] >= 0) & ~internal
        c = np.flatnonzero(use)
        at = np.minimum(angle_distance, length[c])
        ends_c.append(c)
        ends_at.append(at if side == 0 else length[c] - at)
        ends_cluster.append(cluster_of[node[c]])
    c = np.concatenate(ends_c)
    at = np.concatenate(ends_at)
    cluster = np.concatenate(ends_cluster)
    k = np.searchsorted(key, c * span + at, side="right") - 1
    k = np.clip(k, offset[c], offset[c + 1] - 2)
    t = (at - cum[k]) / np.maximum(cum[k + 1] - cum[k], 1e-12)
    point = pos[flat_rows[k]] + np.clip(t, 0, 1)[:, None] * (pos[flat_rows[k + 1]] - pos[flat_rows[k]])
    centers = pos[np.array(centers)]
    vec = point - centers[cluster]
    angle = np.arctan2(vec[:, 1], vec[:, 0])
    order = np.argsort(cluster, kind="stable")
    cluster, angle = cluster[order], angle[order]
    counts = np.bincount(cluster, minlength=len(centers))
    angles = np.full((len(centers), max(int(counts.max(initial=0)), 1)), np.nan)
    slot = index_in_group(counts)
    angles[cluster, slot] = angle
    return JunctionClusters(centers, angles)


def _pair_scores(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Go's ``isMatch`` for row-aligned angle sets ``a`` ``(P, A)`` and ``b`` ``(P, B)`` (NaN padded)."""
    diff = np.abs(a[:, :, None] - b[:, None, :])
    diff = np.where(diff > np.pi, 2 * np.pi - diff, diff)
    close = diff < np.pi / 2  # NaN compares False
    n_a, n_b = np.isfinite(a).sum(1), np.isfinite(b).sum(1)
    a_bad = (np.isfinite(a) & ~close.any(2)).sum(1)
    b_bad = (np.isfinite(b) & ~close.any(1)).sum(1)
    empty = (n_a == 0) | (n_b == 0)
    correct = np.where(empty, 0.0, 1.0 - a_bad / np.maximum(n_a, 1))
    error = np.where(empty, 1.0, b_bad / np.maximum(n_b, 1))
    return correct, error


def _inside(points: np.ndarray, bounds: tuple[float, float, float, float] | None) -> np.ndarray:
    if bounds is None:
        return np.ones(len(points), dtype=bool)
    x0, y0, x1, y1 = bounds
    return (points[:, 0] >= x0) & (points[:, 0] <= x1) & (points[:, 1] >= y0) & (points[:, 1] <= y1)


def junct(
    preds: nx.Graph,
    target: nx.Graph,
    *,
    cluster_radius: float = CLUSTER_RADIUS,
    angle_distance: float = ANGLE_DISTANCE,
    match_radius: float = MATCH_RADIUS,
    bounds: tuple[float, float, float, float] | None = None,
    context: bool = True,
    validate_args: bool = True,
) -> dict[str, Tensor]:
    """JUNCT scores of a predicted road graph against the ground truth (parameters in px, see module doc).

    Args:
        preds: predicted graph; may be empty (F_correct 0).
        target: ground-truth graph; must have an edge (F_correct is NaN when it has no junction).
        cluster_radius: junction clustering radius (85 px).
        angle_distance: distance followed along roads to measure out-angles (110.5 px).
        match_radius: GT / predicted cluster matching radius (110.5 px).
        bounds: ``(xmin, ymin, xmax, ymax)``; clusters centered outside are ignored (``None``: keep all).
        context: cluster predicted junctions around the GT clusters (Go's behaviour); ``False`` clusters them like
            the GT ones.
        validate_args: check that both are networkx graphs whose nodes carry a finite
            ``pos`` within ``max_abs_coordinate`` (the graph readers' limit); ``False`` skips it.

    Examples:
        >>> import networkx as nx
        >>> from drivemetrics.functional import junct
        >>> g = nx.Graph([(0, 1), (1, 2), (1, 3)])
        >>> nx.set_node_attributes(g, {0: (0.0, 0.0), 1: (100.0, 0.0), 2: (200.0, 0.0), 3: (100.0, 100.0)}, "pos")
        >>> junct(g, g)["f_correct"]
        tensor(1., dtype=torch.float64)
    """
    if validate_args:
        check_graph(preds, "preds")
        check_graph(target, "target")
    if not (cluster_radius > 0 and angle_distance > 0 and match_radius > 0):
        raise ValueError(
            f"radii must be > 0, got cluster {cluster_radius}, angle {angle_distance}, match {match_radius}"
        )
    gt = validate_graph(target, "target", allow_empty=False)
    pred = validate_graph(preds, "preds")
    g = junction_clusters(gt, cluster_radius, angle_distance)
    p = junction_clusters(pred, cluster_radius, angle_distance, context=g.centers if context else None)
    g_in, p_in = _inside(g.centers, bounds), _inside(p.centers, bounds)
    n_gt, n_pred = int(g_in.sum()), int(p_in.sum())
    correct_score, error_score = 0.0, 0.0
    used = np.zeros(len(p.centers), dtype=bool)
    if n_gt and len(p.centers):
        pairs = cKDTree(g.centers).sparse_distance_matrix(cKDTree(p.centers), match_radius, output_type="ndarray")
        gi, pj, dist = pairs["i"].astype(np.int64), pairs["j"].astype(np.int64), pairs["v"]
        correct, error = _pair_scores(g.angles[gi], p.angles[pj])
        score = correct - error
        keep = (score > 0) & g_in[gi]
        gi, pj, correct, error = gi[keep], pj[keep], correct[keep], error[keep]
        fscore = score[keep] - dist[keep] / match_radius
        order = np.lexsort((pj, -fscore, gi))  # per GT cluster, best first (ties: lowest index, like Go's loop)
        gi, pj, correct, error = gi[order], pj[order], correct[order], error[order]
        starts = np.searchsorted(gi, np.arange(len(g.centers) + 1))
        for cluster in np.unique(gi):  # greedy over GT clusters in order: sequential by nature
            for k in range(starts[cluster], starts[cluster + 1]):
                if not used[pj[k]]:
                    used[pj[k]] = True
                    correct_score += float(correct[k])
                    error_score += float(error[k])
                    break
    error_score += float((p_in & ~used).sum())
    return result_tensors(
        JUNCTResult(*junct_scores(correct_score, n_gt, error_score, n_pred), correct_score, n_gt, error_score, n_pred)
    )


class JunctionMetrics(MetricFamily):
    """Accumulates JUNCT scores and cluster counts over tiles (sum-reduced); ``compute`` gives F_correct, F_error.

    Examples:
        >>> import networkx as nx, numpy as np
        >>> from drivemetrics.roadnet import JunctionMetrics
        >>> pos = lambda *xy: {n: np.array(p, dtype=float) for n, p in enumerate(xy)}  # node -> (x, y), pixels
        >>> gt, pred = nx.star_graph(4), nx.star_graph(3)  # a crossing; the prediction lacks an arm, 2 px off
        >>> nx.set_node_attributes(gt, pos((0, 0), (-400, 0), (400, 0), (0, -400), (0, 400)), "pos")
        >>> nx.set_node_attributes(pred, pos((2, 2), (-400, 2), (400, 2), (2, -400)), "pos")
        >>> metric = JunctionMetrics()
        >>> metric.update(pred, gt)
        >>> {k: round(float(v), 4) for k, v in metric.compute().items()}
        {'f_correct': 0.75, 'f_error': 0.0}
    """

    is_differentiable = False
    higher_is_better = True  # for ``f_correct``
    full_state_update = False
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0

    correct_score: Tensor
    n_gt: Tensor
    error_score: Tensor
    n_pred: Tensor

    def __init__(
        self,
        cluster_radius: float = CLUSTER_RADIUS,
        angle_distance: float = ANGLE_DISTANCE,
        match_radius: float = MATCH_RADIUS,
        validate_args: bool = True,
        **kwargs: object,
    ) -> None:
        super().__init__(**kwargs)
        self.validate_args = bool(validate_args)
        self.options = {
            "cluster_radius": cluster_radius,
            "angle_distance": angle_distance,
            "match_radius": match_radius,
        }
        self.add_state("correct_score", default=torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("error_score", default=torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("n_gt", default=torch.tensor(0, dtype=torch.long), dist_reduce_fx="sum")
        self.add_state("n_pred", default=torch.tensor(0, dtype=torch.long), dist_reduce_fx="sum")
        add_config_state(self, ("JunctionMetrics", sorted(self.options.items())))

    def update(self, preds: nx.Graph | Sequence[nx.Graph], target: nx.Graph | Sequence[nx.Graph]) -> None:
        """Add one graph pair or a batch of pairs."""
        for p, t in graph_pairs(preds, target):
            r = junct(p, t, **self.options, validate_args=self.validate_args)
            self.correct_score = self.correct_score + r["correct_score"]
            self.error_score = self.error_score + r["error_score"]
            self.n_gt = self.n_gt + r["n_gt"]
            self.n_pred = self.n_pred + r["n_pred"]

    def compute(self) -> dict[str, Tensor]:
        """F_correct and F_error from the summed scores."""
        f_correct, f_error = junct_scores(
            float(self.correct_score), int(self.n_gt), float(self.error_score), int(self.n_pred)
        )
        return {"f_correct": torch.tensor(f_correct), "f_error": torch.tensor(f_error)}


class JunctionFCorrect(ScalarMetric, JunctionMetrics):
    """JUNCT ``F_correct`` (higher is better), scores summed over tiles (arguments as :class:`JunctionMetrics`).

    Examples:
        >>> from drivemetrics.roadnet import JunctionFCorrect, roadnet_example_inputs
        >>> JunctionFCorrect()(**roadnet_example_inputs())
        tensor(0.7500)
    """

    key = "f_correct"


class JunctionFError(ScalarMetric, JunctionMetrics):
    """JUNCT ``F_error`` (lower is better), scores summed over tiles (arguments as :class:`JunctionMetrics`).

    Examples:
        >>> from drivemetrics.roadnet import JunctionFError, roadnet_example_inputs
        >>> JunctionFError()(**roadnet_example_inputs())
        tensor(0.)
    """

    higher_is_better = False
    key = "f_error"
