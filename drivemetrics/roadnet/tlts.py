"""Too-long / too-short (TLTS) path metric (Wegner et al., CVPR 2013), as released by Citraro et al.

Pairs of ground-truth points are drawn at random; the shortest GT path between them is compared with the
shortest predicted path between the predicted points nearest to them (within ``max_node_dist``). A path is
*correct* when the relative length difference is within ``perc_length`` (5 %), *too short* / *too long* outside
it, and *infeasible* when an end point has no predicted node nearby or the predicted ends are not connected.

Both graphs are densified to ``max_node_dist // 3`` px first (as the released code does). Shortest paths are
length-weighted Dijkstra paths (scipy), computed for all sampled paths at once in chunks.

Differences from the released code (documented, on purpose):

- the released code takes the *hop-count* shortest path (``nx.shortest_path`` without weight) and then measures
  its length; we use the geometrically shortest path, which is what the metric means;
- end points are drawn uniformly over the densified GT nodes (uniform along the roads) with a seeded generator;
  the released sampler only accepts nodes far from other nodes (``uniform_node_sampling``) and its result is
  seeded only through numpy;
- the target of each path is drawn uniformly among the GT nodes connected to the source, so no draw is wasted on
  disconnected pairs; exactly ``n_paths`` paths are scored (the released loop scores ``n_paths + 1``).

``compat="reference"`` runs the released procedure: no merging of nodes at identical positions, isolated nodes kept
(a path end snapped to an isolated predicted node is infeasible), oversampling with ``round(L / spacing)`` pieces
per edge, both end points drawn independently with the released sampler (nodes next to empty areas; a pair that is
equal or not connected is drawn again), hop-count shortest paths in both graphs (their lengths measured afterwards),
and fractions over ``n_paths + 1`` paths; an empty prediction gives infeasible = 1. Random choices use one seeded
generator (the released distribution, not its draws).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import networkx as nx
import numpy as np
import torch
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import dijkstra
from scipy.spatial import cKDTree
from torch import Tensor

from drivemetrics._internal.compat import Compat
from drivemetrics._internal.metric import MetricFamily, ScalarMetric, add_config_state
from drivemetrics._internal.validation import check_graph
from drivemetrics.graph.geometry import (
    CHUNK,
    check_compat,
    dense_arrays,
    graph_arrays,
    graph_pairs,
    length_csgraph,
    result_tensors,
    validate_graph,
)

__all__ = ["TLTSAccuracy", "TLTSMetrics", "TLTSResult", "hop_path_lengths", "path_lengths", "tlts"]


def path_lengths(csgraph: csr_matrix, sources: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Shortest-path length from ``sources[k]`` to ``targets[k]`` (``inf`` when not connected), chunked Dijkstra."""
    out = np.full(len(sources), np.inf)
    uniq, inverse = np.unique(sources, return_inverse=True)
    for lo in range(0, len(uniq), CHUNK):
        chunk = uniq[lo : lo + CHUNK]
        dist = dijkstra(csgraph, directed=False, indices=chunk)
        rows = np.flatnonzero((inverse >= lo) & (inverse < lo + len(chunk)))
        out[rows] = dist[inverse[rows] - lo, targets[rows]]
    return out


@dataclass(frozen=True)
class TLTSResult:
    """Fractions of sampled paths (they sum to 1) and the counts behind them."""

    correct: float
    too_long: float
    too_short: float
    infeasible: float
    n_correct: int
    n_too_long: int
    n_too_short: int
    n_infeasible: int


def _result(counts: Sequence[int]) -> TLTSResult:
    total = sum(counts)
    fractions = [c / total if total else 0.0 for c in counts]
    return TLTSResult(*fractions, *(int(c) for c in counts))


def hop_path_lengths(pos: np.ndarray, edges: np.ndarray, sources: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Euclidean length of a fewest-edges path from ``sources[k]`` to ``targets[k]`` (``inf`` when not connected).

    Breadth-first (unweighted) shortest paths with predecessors, chunked over the distinct sources; the length of the
    path found is then summed along it.
    """
    from scipy.sparse.csgraph import shortest_path

    out = np.full(len(sources), np.inf)
    if not len(sources):
        return out
    graph = length_csgraph(pos, edges)
    graph.data[:] = 1.0
    uniq, inverse = np.unique(sources, return_inverse=True)
    step = max(CHUNK, int(4e6 // max(len(pos), 1)))  # rows per batch: about 4e6 matrix cells
    for lo in range(0, len(uniq), step):
        chunk = uniq[lo : lo + step]
        hops, pred = shortest_path(graph, directed=False, unweighted=True, indices=chunk, return_predecessors=True)
        rows = np.flatnonzero((inverse >= lo) & (inverse < lo + len(chunk)))
        r = inverse[rows] - lo
        ok = np.isfinite(hops[r, targets[rows]])
        rows, r = rows[ok], r[ok]
        cur = targets[rows].copy()
        length = np.zeros(len(rows))
        active = pred[r, cur] >= 0
        while active.any():
            prev = pred[r[active], cur[active]]
            length[active] += np.linalg.norm(pos[cur[active]] - pos[prev], axis=1)
            cur[active] = prev
            active[active] = pred[r[active], prev] >= 0
        out[rows] = length
    return out


def _tlts_reference(
    preds: nx.Graph, target: nx.Graph, max_node_dist: float, perc_length: float, n_paths: int, seed: int | None
) -> TLTSResult:
    """The released ``toolong_tooshort``, see the module doc."""
    from scipy.sparse.csgraph import connected_components

    from drivemetrics.roadnet.reference import NodeSampler, oversample

    gt = validate_graph(target, "target", allow_empty=False, merge_duplicates=False, keep_isolated=True)
    pred = validate_graph(preds, "preds", merge_duplicates=False, keep_isolated=True)
    total = n_paths + 1
    if pred.number_of_edges() == 0:
        return _result([0, 0, 0, total])
    rng = np.random.default_rng(seed)
    spacing = max_node_dist // 3
    gt_arrays = graph_arrays(oversample(gt, spacing))
    pred_arrays = graph_arrays(oversample(pred, spacing))
    _, label = connected_components(length_csgraph(gt_arrays.pos, gt_arrays.edges), directed=False)
    sampler = NodeSampler(gt_arrays.pos, rng, max_node_dist)
    sources, targets = [], []
    draws = 0
    while len(sources) < total and draws < 100 * total:  # bounded (the released loop can run forever)
        draws += 1
        s, t = sampler.sample_index(), sampler.sample_index()
        if s != t and label[s] == label[t]:
            sources.append(s)
            targets.append(t)
    sources_a, targets_a = np.asarray(sources, dtype=np.int64), np.asarray(targets, dtype=np.int64)
    gt_len = hop_path_lengths(gt_arrays.pos, gt_arrays.edges, sources_a, targets_a)
    tree = cKDTree(pred_arrays.pos)
    d_s, p_s = tree.query(gt_arrays.pos[sources_a])
    d_t, p_t = tree.query(gt_arrays.pos[targets_a])
    snapped = (d_s < max_node_dist) & (d_t < max_node_dist)
    pred_len = np.full(len(sources_a), np.inf)
    pred_len[snapped] = hop_path_lengths(pred_arrays.pos, pred_arrays.edges, p_s[snapped], p_t[snapped])
    feasible = np.isfinite(pred_len)
    rel = (gt_len - pred_len) / gt_len
    too_short = feasible & (rel > perc_length)
    too_long = feasible & (rel < -perc_length)
    correct = feasible & ~too_short & ~too_long
    counts = [int(correct.sum()), int(too_long.sum()), int(too_short.sum()), int((~feasible).sum())]
    n = len(sources_a)
    return TLTSResult(*(c / n if n else 0.0 for c in counts), *counts)


def tlts(
    preds: nx.Graph,
    target: nx.Graph,
    *,
    max_node_dist: float = 25.0,
    perc_length: float = 0.05,
    n_paths: int = 1000,
    seed: int = 0,
    compat: Compat = "default",
    validate_args: bool = True,
) -> dict[str, Tensor]:
    """Too-long / too-short fractions of ``n_paths`` random GT shortest paths.

    Args:
        preds: predicted graph (node ``pos`` in pixels); may be empty (all paths infeasible).
        target: ground-truth graph; must have an edge.
        max_node_dist: snapping radius of path ends onto the prediction (px); graphs are densified to
            ``max_node_dist // 3``.
        perc_length: relative length tolerance of a correct path.
        n_paths: number of sampled paths. Cheap: at 1000, about 0.02 s per 14-node 512 px tile and 0.15 s per
            65-node 1024 px tile on one CPU thread (``benchmarks/graph_sampling_cost.py``); fewer paths cost less
            but each fraction's standard error, at most ``0.5 / sqrt(n_paths)``, grows (0.016 at 1000, 0.035 at 200).
        seed: seed of the path sampling.
        compat: ``"default"`` or ``"reference"``: the released procedure (see the module doc).
        validate_args: check that both are networkx graphs whose nodes carry a finite
            ``pos`` within ``max_abs_coordinate`` (the graph readers' limit); ``False`` skips it.

    Examples:
        >>> import networkx as nx
        >>> from drivemetrics.functional import tlts
        >>> g = nx.Graph([(0, 1), (1, 2), (1, 3)])
        >>> nx.set_node_attributes(g, {0: (0.0, 0.0), 1: (100.0, 0.0), 2: (200.0, 0.0), 3: (100.0, 100.0)}, "pos")
        >>> tlts(g, g, n_paths=20)["correct"]
        tensor(1., dtype=torch.float64)
    """
    if validate_args:
        check_graph(preds, "preds")
        check_graph(target, "target")
    if not max_node_dist > 0 or not perc_length >= 0 or n_paths < 1:
        raise ValueError(
            f"need max_node_dist > 0, perc_length >= 0, n_paths >= 1; got {max_node_dist}, {perc_length}, {n_paths}"
        )
    if check_compat(compat):
        return result_tensors(_tlts_reference(preds, target, max_node_dist, perc_length, n_paths, seed))
    gt = validate_graph(target, "target", allow_empty=False)
    pred = validate_graph(preds, "preds")
    spacing = max(max_node_dist // 3, 1.0)
    gt_pos, gt_edges = dense_arrays(gt, spacing)
    gt_cs = length_csgraph(gt_pos, gt_edges)
    rng = np.random.default_rng(seed)
    sources = np.sort(rng.integers(len(gt_pos), size=n_paths))
    u = rng.random(n_paths)
    targets = np.empty(n_paths, dtype=np.int64)
    gt_len = np.empty(n_paths)
    for lo in range(0, n_paths, CHUNK):
        src = sources[lo : lo + CHUNK]
        dist = dijkstra(gt_cs, directed=False, indices=src)
        reach = np.isfinite(dist)
        reach[np.arange(len(src)), src] = False
        count = reach.sum(1)  # >= 1: validated graphs have no isolated node
        k = np.floor(u[lo : lo + CHUNK] * count).astype(np.int64)
        tgt = (np.cumsum(reach, axis=1) > k[:, None]).argmax(axis=1)
        targets[lo : lo + CHUNK] = tgt
        gt_len[lo : lo + CHUNK] = dist[np.arange(len(src)), tgt]
    if pred.number_of_edges() == 0:
        return result_tensors(_result([0, 0, 0, n_paths]))
    pred_pos, pred_edges = dense_arrays(pred, spacing)
    tree = cKDTree(pred_pos)
    d_s, p_s = tree.query(gt_pos[sources])
    d_t, p_t = tree.query(gt_pos[targets])
    snapped = (d_s < max_node_dist) & (d_t < max_node_dist)
    pred_len = np.full(n_paths, np.inf)
    pred_len[snapped] = path_lengths(length_csgraph(pred_pos, pred_edges), p_s[snapped], p_t[snapped])
    feasible = np.isfinite(pred_len)
    rel = (gt_len - pred_len) / gt_len
    too_short = feasible & (rel > perc_length)
    too_long = feasible & (rel < -perc_length)
    correct = feasible & ~too_short & ~too_long
    return result_tensors(
        _result([int(correct.sum()), int(too_long.sum()), int(too_short.sum()), int((~feasible).sum())])
    )


class TLTSMetrics(MetricFamily):
    """Accumulates TLTS path counts over tiles (sum-reduced); ``compute`` returns the four fractions.

    ``update(preds, target)`` takes two graphs or two sequences of graphs. Fractions are pooled over all paths of
    all tiles (the released protocol averages per-tile fractions instead; with equal ``n_paths`` per tile the two
    agree). Cost: about 0.02 s (14 nodes) to 0.15 s (65 nodes) per tile at the default ``n_paths=1000``.

    Examples:
        >>> import networkx as nx, numpy as np
        >>> from drivemetrics.roadnet import TLTSMetrics
        >>> pos = lambda *xy: {n: np.array(p, dtype=float) for n, p in enumerate(xy)}  # node -> (x, y), pixels
        >>> gt, pred = nx.star_graph(4), nx.star_graph(3)  # a crossing; the prediction lacks an arm, 2 px off
        >>> nx.set_node_attributes(gt, pos((0, 0), (-400, 0), (400, 0), (0, -400), (0, 400)), "pos")
        >>> nx.set_node_attributes(pred, pos((2, 2), (-400, 2), (400, 2), (2, -400)), "pos")
        >>> metric = TLTSMetrics(n_paths=100)
        >>> metric.update(pred, gt)
        >>> {k: round(float(v), 4) for k, v in metric.compute().items()}
        {'correct': 0.51, 'too_long': 0.0, 'too_short': 0.03, 'infeasible': 0.46}
    """

    is_differentiable = False
    higher_is_better = True  # for ``correct``
    full_state_update = False
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0

    n_correct: Tensor
    n_too_long: Tensor
    n_too_short: Tensor
    n_infeasible: Tensor

    def __init__(
        self,
        max_node_dist: float = 25.0,
        perc_length: float = 0.05,
        n_paths: int = 1000,
        seed: int = 0,
        *,
        compat: Compat = "default",
        validate_args: bool = True,
        **kwargs: object,
    ) -> None:
        super().__init__(**kwargs)
        self.validate_args = bool(validate_args)
        check_compat(compat)
        if not (isinstance(n_paths, int) and n_paths >= 1):
            raise ValueError(f"`n_paths` must be an integer >= 1, got {n_paths!r}")
        self.options = {
            "max_node_dist": max_node_dist,
            "perc_length": perc_length,
            "n_paths": n_paths,
            "seed": seed,
            "compat": compat,
        }
        for name in ("n_correct", "n_too_long", "n_too_short", "n_infeasible"):
            self.add_state(name, default=torch.tensor(0, dtype=torch.long), dist_reduce_fx="sum")
        add_config_state(self, ("TLTSMetrics", sorted(self.options.items())))

    def update(self, preds: nx.Graph | Sequence[nx.Graph], target: nx.Graph | Sequence[nx.Graph]) -> None:
        """Add one graph pair or a batch of pairs."""
        for p, t in graph_pairs(preds, target):
            r = tlts(p, t, **self.options, validate_args=self.validate_args)
            self.n_correct = self.n_correct + r["n_correct"]
            self.n_too_long = self.n_too_long + r["n_too_long"]
            self.n_too_short = self.n_too_short + r["n_too_short"]
            self.n_infeasible = self.n_infeasible + r["n_infeasible"]

    def compute(self) -> dict[str, Tensor]:
        """Fractions of correct, too long, too short and infeasible paths."""
        r = _result([int(x.item()) for x in (self.n_correct, self.n_too_long, self.n_too_short, self.n_infeasible)])
        return {k: torch.tensor(getattr(r, k)) for k in ("correct", "too_long", "too_short", "infeasible")}


class TLTSAccuracy(ScalarMetric, TLTSMetrics):
    """TLTS fraction of correct paths (neither too long nor too short), pooled (arguments as :class:`TLTSMetrics`).

    Examples:
        >>> from drivemetrics.roadnet import TLTSAccuracy, roadnet_example_inputs
        >>> TLTSAccuracy(n_paths=100)(**roadnet_example_inputs())
        tensor(0.5100)
    """

    key = "correct"
