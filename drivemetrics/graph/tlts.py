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
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import networkx as nx
import numpy as np
import torch
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import dijkstra
from scipy.spatial import cKDTree
from torch import Tensor
from torchmetrics import Metric

from drivemetrics._metric import plot_metric
from drivemetrics.graph.geometry import densify_arrays, graph_arrays, validate_graph
from drivemetrics.graph.metrics import graph_pairs

CHUNK = 64  # Dijkstra sources per batch (memory: CHUNK x nodes float64)


def length_csgraph(pos: np.ndarray, edges: np.ndarray) -> csr_matrix:
    """Symmetric sparse adjacency ``N x N`` weighted by Euclidean edge length (for scipy.sparse.csgraph)."""
    n = len(pos)
    if len(edges) == 0:
        return csr_matrix((n, n))
    w = np.maximum(np.linalg.norm(pos[edges[:, 1]] - pos[edges[:, 0]], axis=1), 1e-9)
    rows = np.concatenate([edges[:, 0], edges[:, 1]])
    cols = np.concatenate([edges[:, 1], edges[:, 0]])
    return csr_matrix((np.concatenate([w, w]), (rows, cols)), shape=(n, n))


def dense_arrays(graph: nx.Graph, spacing: float) -> tuple[np.ndarray, np.ndarray]:
    """Node positions and edges of ``graph`` densified so that no edge exceeds ``spacing``."""
    arrays = graph_arrays(graph)
    pos, edges, _ = densify_arrays(arrays.pos, arrays.edges, spacing)
    return pos, edges


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


def tlts(
    preds: nx.Graph,
    target: nx.Graph,
    max_node_dist: float = 25.0,
    perc_length: float = 0.05,
    n_paths: int = 1000,
    seed: int = 0,
) -> TLTSResult:
    """Too-long / too-short fractions of ``n_paths`` random GT shortest paths.

    Args:
        preds: predicted graph (node ``pos`` in pixels); may be empty (all paths infeasible).
        target: ground-truth graph; must have an edge.
        max_node_dist: snapping radius of path ends onto the prediction (px); graphs are densified to
            ``max_node_dist // 3``.
        perc_length: relative length tolerance of a correct path.
        n_paths: number of sampled paths.
        seed: seed of the path sampling.
    """
    if not max_node_dist > 0 or not perc_length >= 0 or n_paths < 1:
        raise ValueError(
            f"need max_node_dist > 0, perc_length >= 0, n_paths >= 1; got {max_node_dist}, {perc_length}, {n_paths}"
        )
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
        return _result([0, 0, 0, n_paths])
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
    return _result([int(correct.sum()), int(too_long.sum()), int(too_short.sum()), int((~feasible).sum())])


class TooLongTooShort(Metric):
    """Accumulates TLTS path counts over tiles (sum-reduced); ``compute`` returns the four fractions.

    ``update(preds, target)`` takes two graphs or two sequences of graphs. Fractions are pooled over all paths of
    all tiles (the released protocol averages per-tile fractions instead; with equal ``n_paths`` per tile the two
    agree).
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
        **kwargs: object,
    ) -> None:
        super().__init__(**kwargs)
        self.options = {"max_node_dist": max_node_dist, "perc_length": perc_length, "n_paths": n_paths, "seed": seed}
        for name in ("n_correct", "n_too_long", "n_too_short", "n_infeasible"):
            self.add_state(name, default=torch.tensor(0, dtype=torch.long), dist_reduce_fx="sum")

    def update(self, preds: nx.Graph | Sequence[nx.Graph], target: nx.Graph | Sequence[nx.Graph]) -> None:
        """Add one graph pair or a batch of pairs."""
        for p, t in graph_pairs(preds, target):
            r = tlts(p, t, **self.options)
            self.n_correct += r.n_correct
            self.n_too_long += r.n_too_long
            self.n_too_short += r.n_too_short
            self.n_infeasible += r.n_infeasible

    def compute(self) -> dict[str, Tensor]:
        """Fractions of correct, too long, too short and infeasible paths."""
        r = _result([int(x.item()) for x in (self.n_correct, self.n_too_long, self.n_too_short, self.n_infeasible)])
        return {k: torch.tensor(getattr(r, k)) for k in ("correct", "too_long", "too_short", "infeasible")}

    def plot(self, val: dict[str, Tensor] | Sequence[dict[str, Tensor]] | None = None, ax: Any = None) -> Any:
        """Plot the scores (or their sequence over epochs) with matplotlib; returns ``(fig, ax)``."""
        return plot_metric(self, val, ax)
