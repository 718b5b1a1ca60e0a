"""OPT-P: the path metric of Citraro, Koziński and Fua (ECCV 2020).

Recall: the ground truth is decomposed into edge-disjoint paths; every path is resampled into segments no longer
than ``segment_length`` and aligned to the prediction with a Viterbi (min-sum) pass over candidate positions: every
path vertex is either unmatched or snapped to a point of a predicted edge within ``d_snap`` (unary cost: squared
distance), and a transition between consecutive vertices is free when the two snapped points are connected in the
prediction inside the corridor of predicted nodes within ``corridor`` of that path segment, otherwise it costs
``segment_length^2 * penalty_factor``. Maximal runs of free transitions are the aligned pieces ``s`` of path ``pi``; the
path scores ``sum(l(s)^2) / l(pi)^2`` and the matched part of the prediction is removed before the next path (so one
predicted road cannot explain two ground-truth roads). Recall is the mean over paths; precision is the same with the
roles swapped; F1 their harmonic mean.

Differences from the released code (``path_based/path_connectivity_metric.py``), chosen for speed and determinism:

- The random path decomposition takes a ``seed`` (the released code uses the unseeded ``random`` module, and its
  result moves by several F1 points from run to run). Each path is a random walk from a random end node over unused
  edges, stopping where it cannot continue without repeating a node.
- The graph being matched into is densified once at ``spacing`` (5 px) instead of inserting the projections as new
  nodes; snapped points are exact projections onto those short edges, and the matched parts are removed at the
  resolution ``spacing`` (the released code: ``th_existing`` = 10 px).
- Candidates per path vertex are the local distance minima along each nearby road (one per road and side), the
  ``max_candidates`` closest kept; connectivity is tested inside the corridor without the 5-hop cut-off.
- Paths left when the other graph has no edges any more score 0 (the released code stops and leaves them out of the
  mean); an empty prediction scores precision 0 and recall 0 (the released code returns 1 and NaN).
"""

from __future__ import annotations

import heapq
from dataclasses import asdict, dataclass

import networkx as nx
import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from scipy.spatial import cKDTree

from drivemetrics.graph.geometry import SegmentIndex, densify_arrays, graph_arrays, validate_graph
from drivemetrics.graph.opt_j import f1_from

__all__ = ["OptPResult", "decompose_into_paths", "opt_p", "path_alignment"]


@dataclass(frozen=True)
class OptPResult:
    """OPT-P of one tile: precision / recall are means over the paths of each graph."""

    precision: float
    recall: float
    n_paths_pred: int
    n_paths_target: int
    n_connected_target: int
    n_interruptions_target: int

    @property
    def f1(self) -> float:
        return f1_from(self.precision, self.recall)

    def as_dict(self) -> dict[str, float]:
        """All fields and ``f1``."""
        return {**asdict(self), "f1": self.f1}


def decompose_into_paths(graph: nx.Graph, seed: int | np.random.Generator | None = 0) -> list[list]:
    """Decompose ``graph`` into edge-disjoint simple paths (node-id lists of >= 2 nodes) covering every edge.

    Repeatedly start at a random node of degree 1 among unused edges (any node with unused edges when none is left)
    and walk to a random unvisited neighbour over unused edges until stuck; closed loops come out as open paths.
    Equal seeds give equal decompositions. The input is not modified.
    """
    rng = np.random.default_rng(seed)
    adj = {n: set(graph.adj[n]) - {n} for n in graph.nodes}
    order = list(graph.nodes)
    ends = [n for n in order if len(adj[n]) == 1]
    cursor = 0  # nodes with unused edges are found by scanning `order` once
    paths: list[list] = []
    while True:
        start = None
        while ends:  # lazy deletion: entries may be stale
            k = int(rng.integers(len(ends)))
            ends[k], ends[-1] = ends[-1], ends[k]
            n = ends.pop()
            if len(adj[n]) == 1:
                start = n
                break
        if start is None:
            while cursor < len(order) and not adj[order[cursor]]:
                cursor += 1
            if cursor == len(order):
                return paths
            start = order[cursor]
        path = [start]
        on_path = {start}
        node = start
        while True:
            options = [m for m in adj[node] if m not in on_path]
            closing = not options
            if closing:  # stuck: close a loop with one last edge back onto the path, if there is one
                options = sorted(adj[node]) if len(path) > 2 else []
                if not options:
                    break
            nxt = options[int(rng.integers(len(options)))] if len(options) > 1 else options[0]
            adj[node].discard(nxt)
            adj[nxt].discard(node)
            for q in (node, nxt):
                if len(adj[q]) == 1:
                    ends.append(q)
            path.append(nxt)
            if closing:
                break
            on_path.add(nxt)
            node = nxt
        if len(path) >= 2:
            paths.append(path)


def _resample_path(points: np.ndarray, segment_length: float) -> np.ndarray:
    """Bisect every polyline segment until no piece is longer than ``segment_length`` (as the released code)."""
    seg = np.linalg.norm(np.diff(points, axis=0), axis=1)
    ratio = np.maximum(seg / segment_length, 1.0)
    pieces = np.power(2, np.ceil(np.log2(ratio) - 1e-12)).astype(np.int64)
    starts = np.repeat(points[:-1], pieces, axis=0)
    delta = np.repeat(np.diff(points, axis=0) / pieces[:, None], pieces, axis=0)
    k = np.arange(int(pieces.sum())) - np.repeat(np.cumsum(pieces) - pieces, pieces)
    return np.concatenate([starts + k[:, None] * delta, points[-1:]])


class _MatchTarget:
    """The graph paths are aligned to: densified edges with an alive mask (matched parts get removed)."""

    def __init__(self, graph: nx.Graph, spacing: float) -> None:
        arrays = graph_arrays(graph)
        self.pos, self.edges, _ = densify_arrays(arrays.pos, arrays.edges, spacing)
        m = len(self.pos)
        self.n_nodes = m
        self.alive = np.ones(len(self.edges), dtype=bool)
        self.degree = np.bincount(self.edges.reshape(-1), minlength=m)
        self.length = np.linalg.norm(self.pos[self.edges[:, 1]] - self.pos[self.edges[:, 0]], axis=1)
        self.index = SegmentIndex(self.pos, self.edges, piece_length=spacing)
        self.node_tree = cKDTree(self.pos) if m else None
        ends = np.concatenate([self.edges[:, 0], self.edges[:, 1]])
        self.inc_order = np.argsort(ends, kind="stable")  # incidence lists (CSR)
        self.inc_start = np.concatenate([[0], np.cumsum(np.bincount(ends, minlength=m))])
        self.inc_edge = self.inc_order % max(len(self.edges), 1)
        self.edge_id = {(int(u), int(v)): k for k, (u, v) in enumerate(self.edges.tolist())}
        self.edge_id.update({(v, u): k for (u, v), k in list(self.edge_id.items())})

    @property
    def n_alive(self) -> int:
        return int(self.alive.sum())

    def remove(self, edge_ids: np.ndarray) -> None:
        edge_ids = np.unique(np.asarray(edge_ids, dtype=np.int64))
        edge_ids = edge_ids[self.alive[edge_ids]]
        self.alive[edge_ids] = False
        np.subtract.at(self.degree, self.edges[edge_ids].reshape(-1), 1)


@dataclass
class _PathScore:
    score: float
    connected: bool
    interruptions: int


def _align_path(
    points: np.ndarray,
    target: _MatchTarget,
    d_snap: float,
    corridor: float,
    penalty_factor: float,
    max_candidates: int,
) -> _PathScore:
    """Align one path polyline ``points`` ``(n, 2)`` (already resampled) to ``target``; remove the matched part."""
    n_v = len(points)
    seg_len = np.linalg.norm(np.diff(points, axis=0), axis=1)
    total = float(seg_len.sum())
    if n_v < 2 or total <= 0:
        return _PathScore(0.0, False, 0)
    K = max_candidates
    m = target.n_nodes
    # ---- candidates: projections on alive edges within d_snap, local minima along each road only
    vi, e, t, d = target.index.within(points, d_snap)
    keep = target.alive[e] & (d < d_snap)
    vi, e, t, d = vi[keep], e[keep], t[keep], d[keep]
    clamp_node = np.where(t <= 0, target.edges[e, 0], np.where(t >= 1, target.edges[e, 1], -1))
    clamped = clamp_node >= 0
    if clamped.any():
        key = vi[clamped] * m + clamp_node[clamped]
        uniq, first, counts = np.unique(key, return_index=True, return_counts=True)
        is_min = counts == target.degree[uniq % m]
        ok = np.zeros(len(key), dtype=bool)
        ok[first[is_min]] = True
        keep = np.ones(len(vi), dtype=bool)
        keep[np.flatnonzero(clamped)] = ok
        vi, e, d, clamp_node = vi[keep], e[keep], d[keep], clamp_node[keep]
    rank = np.arange(len(vi)) - np.searchsorted(vi, vi, side="left")
    keep = rank < K
    vi, e, d, rank, clamp_node = vi[keep], e[keep], d[keep], rank[keep], clamp_node[keep]
    # a candidate is a node of the target (foot clamped to it) or a point inside one of its short edges
    cand_e = np.full((n_v, K), -1, dtype=np.int64)
    cand_node = np.full((n_v, K), -1, dtype=np.int64)
    unary = np.full((n_v, K + 1), np.inf)
    unary[:, 0] = 0.0
    cand_e[vi, rank] = np.where(clamp_node >= 0, -2, e)  # -2: node candidate
    cand_node[vi, rank] = clamp_node
    unary[vi, rank + 1] = d**2
    # ---- corridor components per segment
    n_seg = n_v - 1
    a, b = points[:-1], points[1:]
    lists = target.node_tree.query_ball_point(0.5 * (a + b), corridor + 0.5 * seg_len)
    counts = np.fromiter((len(x) for x in lists), dtype=np.int64, count=n_seg)
    c_seg = np.repeat(np.arange(n_seg), counts)
    c_node = np.fromiter((j for x in lists for j in x), dtype=np.int64, count=int(counts.sum()))
    ab = b[c_seg] - a[c_seg]
    den = np.maximum(np.einsum("ij,ij->i", ab, ab), 1e-12)
    tt = np.clip(np.einsum("ij,ij->i", target.pos[c_node] - a[c_seg], ab) / den, 0, 1)
    near = np.linalg.norm(target.pos[c_node] - (a[c_seg] + tt[:, None] * ab), axis=1) < corridor
    near &= target.degree[c_node] > 0
    keys = np.unique(c_seg[near] * m + c_node[near])
    n_pairs = len(keys)
    p_seg, p_node = keys // m, keys % m
    # block edges: alive incident edges whose other end is in the same segment's corridor
    deg_all = target.inc_start[p_node + 1] - target.inc_start[p_node]
    rep = np.repeat(np.arange(n_pairs), deg_all)
    offs = np.arange(int(deg_all.sum())) - np.repeat(np.cumsum(deg_all) - deg_all, deg_all)
    inc = target.inc_edge[target.inc_start[p_node][rep] + offs]
    other = np.where(target.edges[inc, 0] == p_node[rep], target.edges[inc, 1], target.edges[inc, 0])
    okey = p_seg[rep] * m + other
    pos_in = np.minimum(np.searchsorted(keys, okey), max(n_pairs - 1, 0))
    okk = target.alive[inc] & (keys[pos_in] == okey) if n_pairs else np.zeros(0, dtype=bool)
    bi, bj, be = rep[okk], pos_in[okk], inc[okk]
    block = coo_matrix((target.length[be] + 1e-9, (bi, bj)), shape=(n_pairs, n_pairs)).tocsr()
    _, label = connected_components(block, directed=False) if n_pairs else (0, np.empty(0, dtype=np.int64))

    def lookup(seg: np.ndarray, cand: np.ndarray, cand_nodes: np.ndarray) -> np.ndarray:
        """Corridor pair index (-1 if none) for segment ``seg`` of each candidate: its node, or an end of its edge."""
        out = np.full(cand.shape, -1, dtype=np.int64)
        if not n_pairs:
            return out
        ce = np.maximum(cand, 0)
        for node, valid in (
            (target.edges[ce, 1], cand >= 0),
            (target.edges[ce, 0], cand >= 0),
            (cand_nodes, cand_nodes >= 0),
        ):
            k = seg[:, None] * m + node
            p = np.minimum(np.searchsorted(keys, k), n_pairs - 1)
            out = np.where(valid & (keys[p] == k), p, out)
        return out

    seg_ids = np.arange(n_seg)
    prev_pair = lookup(seg_ids, cand_e[:-1], cand_node[:-1])
    curr_pair = lookup(seg_ids, cand_e[1:], cand_node[1:])
    prev_lab = np.where(prev_pair >= 0, label[np.maximum(prev_pair, 0)] if n_pairs else -1, -1)
    curr_lab = np.where(curr_pair >= 0, label[np.maximum(curr_pair, 0)] if n_pairs else -1, -1)
    same_edge = (cand_e[:-1, :, None] == cand_e[1:, None, :]) & (cand_e[:-1, :, None] >= 0)
    same_comp = (prev_lab[:, :, None] == curr_lab[:, None, :]) & (prev_lab[:, :, None] >= 0)
    allowed = np.zeros((n_seg, K + 1, K + 1), dtype=bool)
    allowed[:, 1:, 1:] = same_edge | same_comp
    penalty = seg_len**2 * penalty_factor
    # ---- Viterbi (min-sum) over the chain
    cost = unary[0].copy()
    back = np.empty((n_seg, K + 1), dtype=np.int64)
    for i in range(n_seg):
        total_cost = cost[:, None] + np.where(allowed[i], 0.0, penalty[i])
        back[i] = np.argmin(total_cost, axis=0)
        cost = total_cost[back[i], np.arange(K + 1)] + unary[i + 1]
    states = np.empty(n_v, dtype=np.int64)
    states[-1] = int(np.argmin(cost))
    for i in range(n_seg - 1, -1, -1):
        states[i] = back[i, states[i + 1]]
    chosen = allowed[seg_ids, states[:-1], states[1:]]
    # ---- score: squared lengths of maximal aligned runs
    padded = np.concatenate([[False], chosen, [False]])
    starts = np.flatnonzero(~padded[:-1] & padded[1:])
    stops = np.flatnonzero(padded[:-1] & ~padded[1:])
    csum = np.concatenate([[0.0], np.cumsum(seg_len)])
    pieces = csum[stops] - csum[starts]
    score = float((pieces**2).sum() / total**2)
    gaps = np.concatenate([[False], ~chosen, [False]])
    interruptions = int(np.count_nonzero(~gaps[:-1] & gaps[1:]))
    # ---- remove the matched part: edges under interior feet and the corridor path between the feet
    sel = np.flatnonzero(chosen)
    if len(sel):
        ea = cand_e[sel, states[sel] - 1]
        eb = cand_e[sel + 1, states[sel + 1] - 1]
        removed = [ea[ea >= 0], eb[eb >= 0]]
        need = (ea != eb) | (ea < 0)
        src = prev_pair[sel, states[sel] - 1][need]
        dst = curr_pair[sel, states[sel + 1] - 1][need]
        removed.append(_corridor_paths(block, src, dst, p_node, target))
        target.remove(np.concatenate(removed))
    return _PathScore(score, bool(chosen.all()), interruptions)


def _corridor_paths(block: object, src: np.ndarray, dst: np.ndarray, p_node: np.ndarray, target: _MatchTarget) -> list:
    """Edge ids on shortest corridor paths between pair nodes ``src[k]`` and ``dst[k]`` (Dijkstra on tiny blocks)."""
    out: list[int] = []
    if not len(src):
        return np.empty(0, dtype=np.int64)
    indptr, indices, data = block.indptr, block.indices, block.data
    for s, g in zip(src.tolist(), dst.tolist(), strict=True):
        if s < 0 or g < 0 or s == g:
            continue
        dist = {s: 0.0}
        prev = {}
        heap = [(0.0, s)]
        while heap:
            du, u = heapq.heappop(heap)
            if u == g:
                break
            if du > dist.get(u, np.inf):
                continue
            for k in range(indptr[u], indptr[u + 1]):
                v, dv = int(indices[k]), du + float(data[k])
                if dv < dist.get(v, np.inf):
                    dist[v] = dv
                    prev[v] = u
                    heapq.heappush(heap, (dv, v))
        if g not in prev:
            continue
        v = g
        while v != s:
            u = prev[v]
            out.append(target.edge_id[(int(p_node[u]), int(p_node[v]))])
            v = u
    return np.asarray(out, dtype=np.int64)


def path_alignment(
    paths_graph: nx.Graph,
    into_graph: nx.Graph,
    *,
    seed: int | np.random.Generator | None = 0,
    d_snap: float = 25.0,
    segment_length: float = 25.0,
    corridor: float = 25.0,
    penalty_factor: float = 10000.0,
    max_candidates: int = 8,
    spacing: float = 5.0,
) -> tuple[float, int, int, int]:
    """Mean path score of ``paths_graph``'s paths aligned into ``into_graph`` (both already validated).

    Returns ``(mean_score, n_paths, n_connected, n_interruptions)``; ``mean_score`` is 0 when there are no paths.
    """
    paths = decompose_into_paths(paths_graph, seed)
    if not paths:
        return 0.0, 0, 0, 0
    target = _MatchTarget(into_graph, spacing)
    pos = {n: paths_graph.nodes[n]["pos"] for n in paths_graph.nodes}
    scores, connected, interruptions = [], 0, 0
    for path in paths:
        points = _resample_path(np.array([pos[n] for n in path], dtype=np.float64), segment_length)
        if target.n_alive == 0:
            scores.append(0.0)
            interruptions += 1
            continue
        res = _align_path(points, target, d_snap, corridor, penalty_factor, max_candidates)
        scores.append(res.score)
        connected += res.connected
        interruptions += res.interruptions
    return float(np.mean(scores)), len(paths), connected, interruptions


def opt_p(
    preds: nx.Graph,
    target: nx.Graph,
    *,
    seed: int | None = 0,
    d_snap: float = 25.0,
    segment_length: float = 25.0,
    corridor: float = 25.0,
    penalty_factor: float = 10000.0,
    max_candidates: int = 8,
    spacing: float = 5.0,
) -> OptPResult:
    """OPT-P path precision / recall / F1 of a predicted road graph against the ground truth.

    Args:
        preds: predicted graph (nodes with ``pos``); may be empty (scores 0).
        target: ground-truth graph; must have at least one edge.
        seed: seed of the random path decompositions (equal seeds give equal results).
        d_snap: largest distance between a path vertex and its snapped point (``th_snap``, 25 px).
        segment_length: paths are bisected until no segment is longer than this (25 px).
        corridor: nodes within this distance of a path segment form the corridor used to test connectivity (25 px).
        penalty_factor: a broken transition costs ``segment_length^2 * penalty_factor`` (10000).
        max_candidates: snapped candidates kept per path vertex (the closest).
        spacing: resolution of the matched graph (its edges are split to this length), units of ``pos``.

    Returns:
        :class:`OptPResult` (``precision``, ``recall``, ``f1`` and path / interruption counts).
    """
    for name, value in (("d_snap", d_snap), ("segment_length", segment_length), ("corridor", corridor)):
        if not value > 0:
            raise ValueError(f"`{name}` must be > 0, got {value}")
    if max_candidates < 1:
        raise ValueError(f"`max_candidates` must be >= 1, got {max_candidates}")
    gt = validate_graph(target, "target", allow_empty=False)
    pred = validate_graph(preds, "preds")
    kwargs = {
        "d_snap": d_snap,
        "segment_length": segment_length,
        "corridor": corridor,
        "penalty_factor": penalty_factor,
        "max_candidates": max_candidates,
        "spacing": spacing,
    }
    rng = np.random.default_rng(seed)
    seeds = rng.integers(2**63 - 1, size=2)
    if pred.number_of_edges() == 0:
        n_gt = len(decompose_into_paths(gt, int(seeds[0])))
        return OptPResult(0.0, 0.0, 0, n_gt, 0, n_gt)
    recall, n_gt, n_conn, n_int = path_alignment(gt, pred, seed=int(seeds[0]), **kwargs)
    precision, n_pred, _, _ = path_alignment(pred, gt, seed=int(seeds[1]), **kwargs)
    return OptPResult(precision, recall, n_pred, n_gt, n_conn, n_int)
