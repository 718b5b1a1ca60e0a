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

- The random path decomposition (the same randomised depth-first search) takes a ``seed``; the released code uses
  the unseeded ``random`` module, and its result moves by several F1 points from run to run.
- The graph being matched into is densified once at ``spacing`` (5 px) instead of inserting the projections as new
  nodes; snapped points are exact projections onto those short edges, and the matched parts are removed at the
  resolution ``spacing`` (the released code: ``th_existing`` = 10 px).
- Candidates per path vertex are the local distance minima along each nearby road (one per road and side), the
  ``max_candidates`` closest kept; connectivity is tested inside the corridor without the 5-hop cut-off (it never
  changed a result in our comparisons).
- Removal: the released code deletes every edge of the corridor routes between consecutive snapped points, including
  detours (a route that runs from a road to a snapped point on a side road and back); here an edge crossed an even
  number of times is kept, so a side road is not cut where a turning path brushed it. No test compares single
  paths with the released code; what is tested is the ``compat="reference"`` mean below.
- Paths left when the other graph has no edges any more score 0 (the released code stops and leaves them out of the
  mean); an empty prediction scores precision 0 and recall 0 (the released code returns 1 and NaN).

``compat="reference"`` runs the released procedure itself, stage by stage (module
:mod:`drivemetrics.roadnet.opt_p_reference`): the released graph clean-up, its random path decomposition drawing from a
Python ``random.Random(seed)`` exactly where the released code calls ``random`` (so seed S gives what the released code
gives after ``random.seed(S)``), bisection, snapping by inserting nodes into the graph, corridor connectivity with the
5-hop cut-off, Viterbi, and the released removal of the matched routes (detours included); paths left once the other
graph is used up are dropped from the mean; an empty prediction gives precision 1 and recall NaN. Tested
(``tests/roadnet/test_metrics_delin.py``): on the 2048 px Vancouver window precision, recall and F1 equal the released
values of seeds 0, 1 and 2 (segmentation prediction, fixture) to 1e-9, and the RoadTracer prediction's seed 0-2 F1
lies in the released 0.668-0.694.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import networkx as nx
import numpy as np
from scipy.sparse import coo_matrix, csr_matrix
from scipy.sparse.csgraph import connected_components, dijkstra
from scipy.spatial import cKDTree
from torch import Tensor

from drivemetrics._internal.compat import Compat
from drivemetrics._internal.metric import ScalarMetric, add_config_state
from drivemetrics._internal.validation import check_graph
from drivemetrics.graph.geometry import (
    SegmentIndex,
    check_compat,
    densify_arrays,
    f1_from,
    graph_arrays,
    graph_pairs,
    index_in_group,
    result_tensors,
    validate_graph,
)
from drivemetrics.roadnet._metric import GraphMetric, tensor_f1

__all__ = [
    "OptPF1Score",
    "OptPMetrics",
    "OptPPrecision",
    "OptPRecall",
    "OptPResult",
    "decompose_into_paths",
    "opt_p",
    "path_alignment",
]


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


def _dfs_chain(adj: dict, start: object, rng: np.random.Generator) -> list:
    """Randomised depth-first search from ``start`` over the edges in ``adj`` for a simple path ending at a dead end
    (a node whose only edge is the one the path arrived by). Without one, the longest chain seen before a cycle
    was found (or ``[start]``)."""
    on_path = {start}
    closed: set = set()
    dead_edges: set = set()
    chain = [start]
    fallback = [start]
    while chain:
        n = chain[-1]
        if len(chain) > 1 and len(adj[n]) == 1:
            return chain
        options = [
            m for m in adj[n] if (n, m) not in dead_edges and m not in closed and (len(chain) < 2 or m != chain[-2])
        ]
        if options:
            m = options[int(rng.integers(len(options)))] if len(options) > 1 else options[0]
            if m in on_path:  # a cycle: remember the chain, do not enter m again from here
                if len(chain) > len(fallback):
                    fallback = chain.copy()
                dead_edges.update(((n, m), (m, n)))
            else:
                on_path.add(m)
                chain.append(m)
        else:  # backtrack
            if len(chain) > 1:
                dead_edges.update(((chain[-2], n), (n, chain[-2])))
            on_path.discard(n)
            closed.add(n)
            chain.pop()
    return fallback


def decompose_into_paths(graph: nx.Graph, seed: int | np.random.Generator | None = 0) -> list[list]:
    """Decompose ``graph`` into edge-disjoint simple paths (node-id lists of >= 2 nodes) covering every edge.

    As the released code: repeatedly take a random node of degree 1 among the unused edges (a random node with unused
    edges when there is none) and run a randomised depth-first search for a simple path from it to a dead end (or,
    in a component of cycles, the chain found before closing a cycle); remove its edges. Equal seeds give equal
    decompositions; the input is not modified.
    """
    rng = np.random.default_rng(seed)
    adj = {n: set(graph.adj[n]) - {n} for n in graph.nodes}
    ends = [n for n in graph.nodes if len(adj[n]) == 1]
    alive = [n for n in graph.nodes if adj[n]]
    paths: list[list] = []
    while True:
        start = None
        while ends and start is None:  # lazy deletion: entries may be stale
            k = int(rng.integers(len(ends)))
            ends[k], ends[-1] = ends[-1], ends[k]
            n = ends.pop()
            start = n if len(adj[n]) == 1 else None
        while alive and start is None:
            k = int(rng.integers(len(alive)))
            alive[k], alive[-1] = alive[-1], alive[k]
            n = alive.pop()
            if adj[n]:
                start = n
                alive.append(n)
        if start is None:
            return paths
        path = _dfs_chain(adj, start, rng)
        if len(path) < 2:  # cannot happen for a node with edges; guard against an endless loop
            path = [start, next(iter(adj[start]))]
        for u, v in itertools.pairwise(path):
            adj[u].discard(v)
            adj[v].discard(u)
            for q in (u, v):
                if len(adj[q]) == 1:
                    ends.append(q)
        paths.append(path)


def _resample_path(points: np.ndarray, segment_length: float) -> np.ndarray:
    """Bisect every polyline segment until no piece is longer than ``segment_length`` (as the released code)."""
    seg = np.linalg.norm(np.diff(points, axis=0), axis=1)
    ratio = np.maximum(seg / segment_length, 1.0)
    pieces = np.power(2, np.ceil(np.log2(ratio) - 1e-12)).astype(np.int64)
    starts = np.repeat(points[:-1], pieces, axis=0)
    delta = np.repeat(np.diff(points, axis=0) / pieces[:, None], pieces, axis=0)
    k = index_in_group(pieces)
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
    foot_all = target.pos[target.edges[e, 0]] + t[:, None] * (
        target.pos[target.edges[e, 1]] - target.pos[target.edges[e, 0]]
    )
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
        vi, e, d, clamp_node, foot_all = vi[keep], e[keep], d[keep], clamp_node[keep], foot_all[keep]
    rank = np.arange(len(vi)) - np.searchsorted(vi, vi, side="left")
    keep = rank < K
    vi, e, d, rank, clamp_node, foot_all = vi[keep], e[keep], d[keep], rank[keep], clamp_node[keep], foot_all[keep]
    # a candidate is a node of the target (foot clamped to it) or a point inside one of its short edges
    cand_e = np.full((n_v, K), -1, dtype=np.int64)
    cand_node = np.full((n_v, K), -1, dtype=np.int64)
    unary = np.full((n_v, K + 1), np.inf)
    unary[:, 0] = 0.0
    cand_e[vi, rank] = np.where(clamp_node >= 0, -2, e)  # -2: node candidate
    cand_node[vi, rank] = clamp_node
    vi_foot = np.zeros((n_v, K, 2))
    vi_foot[vi, rank] = foot_all
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
    offs = index_in_group(deg_all)
    inc = target.inc_edge[target.inc_start[p_node][rep] + offs]
    other = np.where(target.edges[inc, 0] == p_node[rep], target.edges[inc, 1], target.edges[inc, 0])
    okey = p_seg[rep] * m + other
    pos_in = np.minimum(np.searchsorted(keys, okey), max(n_pairs - 1, 0))
    okk = target.alive[inc] & (keys[pos_in] == okey) if n_pairs else np.zeros(0, dtype=bool)
    bi, bj, be = rep[okk], pos_in[okk], inc[okk]
    block = coo_matrix((target.length[be] + 1e-9, (bi, bj)), shape=(n_pairs, n_pairs)).tocsr()
    _, label = connected_components(block, directed=False) if n_pairs else (0, np.empty(0, dtype=np.int64))

    def lookup(seg: np.ndarray, nodes: np.ndarray) -> np.ndarray:
        """Corridor pair index of ``nodes`` (``(n_seg, K)``, -1 = none) in segment ``seg``'s corridor, -1 if absent."""
        if not n_pairs:
            return np.full(nodes.shape, -1, dtype=np.int64)
        k = seg[:, None] * m + nodes
        p = np.minimum(np.searchsorted(keys, k), n_pairs - 1)
        return np.where((nodes >= 0) & (keys[p] == k), p, -1)

    # attachments of every candidate to the corridor graph: its node, or the two ends of its short edge
    ce = np.maximum(cand_e, 0)
    end0 = np.where(cand_e >= 0, target.edges[ce, 0], cand_node)
    end1 = np.where(cand_e >= 0, target.edges[ce, 1], -1)
    seg_ids = np.arange(n_seg)
    prev_att = (lookup(seg_ids, end0[:-1]), lookup(seg_ids, end1[:-1]))
    curr_att = (lookup(seg_ids, end0[1:]), lookup(seg_ids, end1[1:]))

    def component(att: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        if not n_pairs:
            return np.full(att[0].shape, -1, dtype=np.int64)
        lab0 = np.where(att[0] >= 0, label[np.maximum(att[0], 0)], -1)
        return np.where(lab0 >= 0, lab0, np.where(att[1] >= 0, label[np.maximum(att[1], 0)], -1))

    prev_lab, curr_lab = component(prev_att), component(curr_att)
    same_edge = (cand_e[:-1, :, None] == cand_e[1:, None, :]) & (cand_e[:-1, :, None] >= 0)
    same_comp = (prev_lab[:, :, None] == curr_lab[:, None, :]) & (prev_lab[:, :, None] >= 0)
    allowed = np.zeros((n_seg, K + 1, K + 1), dtype=bool)
    allowed[:, 1:, 1:] = same_edge | same_comp
    penalty = seg_len**2 * penalty_factor
    # ---- Viterbi (min-sum) over the chain
    trans = np.where(allowed, 0.0, penalty[:, None, None])
    cost = unary[0].copy()
    back = np.empty((n_seg, K + 1), dtype=np.int64)
    for i in range(n_seg):
        total_cost = trans[i] + cost[:, None]
        back[i] = total_cost.argmin(axis=0)
        cost = total_cost.min(axis=0) + unary[i + 1]
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
    # ---- remove the matched part of the target: the corridor routes between consecutive feet. An edge crossed an
    # even number of times is a detour (the route went to a foot on a side road and came back) and stays; the short
    # edge under a foot goes only when the route enters it at one end and leaves at the other.
    sel = np.flatnonzero(chosen)
    if len(sel):
        st = states - 1
        rows = np.arange(n_v)
        slot = np.maximum(st, 0)
        e_ch = cand_e[rows, slot]
        foot_ch = vi_foot[rows, slot]
        ends_ch = target.edges[np.maximum(e_ch, 0)]
        d0 = np.where(e_ch >= 0, np.linalg.norm(target.pos[ends_ch[:, 0]] - foot_ch, axis=1), 0.0).tolist()
        d1 = np.where(e_ch >= 0, np.linalg.norm(target.pos[ends_ch[:, 1]] - foot_ch, axis=1), 0.0).tolist()
        # corridor attachments of the chosen candidates: segment i uses vertex i (prev) and vertex i + 1 (curr)
        pa0, pa1 = prev_att[0][seg_ids, slot[:-1]].tolist(), prev_att[1][seg_ids, slot[:-1]].tolist()
        ca0, ca1 = curr_att[0][seg_ids, slot[1:]].tolist(), curr_att[1][seg_ids, slot[1:]].tolist()
        e_list = e_ch.tolist()
        jobs = []
        for i in sel.tolist():
            ea, eb = e_list[i], e_list[i + 1]
            if ea >= 0 and ea == eb:
                continue  # both feet on one short edge
            src = [(p, d, end) for p, d, end in ((pa0[i], d0[i], 0), (pa1[i], d1[i], 1)) if p >= 0]
            dst = [(p, d, end) for p, d, end in ((ca0[i], d0[i + 1], 0), (ca1[i], d1[i + 1], 1)) if p >= 0]
            if ea < 0:
                src = [(p, 0.0, -1) for p, _, _ in src]
            if eb < 0:
                dst = [(p, 0.0, -1) for p, _, _ in dst]
            jobs.append((src, dst, ea, eb))
        route_edges, halves = _corridor_paths(block, jobs, p_node, target)
        edges_u, n_used = np.unique(route_edges, return_counts=True)
        half_u, n_half = np.unique(halves, return_counts=True)
        odd_half = half_u[n_half % 2 == 1]
        piece, n_odd = np.unique(odd_half // 2, return_counts=True)
        target.remove(np.concatenate([edges_u[n_used % 2 == 1], piece[n_odd == 2]]))
    return _PathScore(score, bool(chosen.all()), interruptions)


def _corridor_paths(block: object, jobs: list, p_node: np.ndarray, target: _MatchTarget) -> tuple[np.ndarray, ...]:
    """Shortest corridor route of every job ``(sources, goals, edge_a, edge_b)``; sources / goals list
    ``(corridor pair, distance to the foot, end)``.

    One ``scipy.sparse.csgraph.dijkstra`` call per chunk of jobs on the corridor block augmented with a virtual source
    and a virtual sink per job (linked to the attachments with the foot distances). Returns the edge ids on the
    routes (with repetition) and the half-edges crossed at the feet, coded ``2 * edge + end``.
    """
    jobs = [job for job in jobs if job[0] and job[1]]
    if not jobs:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    n_pairs = block.shape[0]
    n_jobs = len(jobs)
    src_rows, src_cols, src_w, dst_rows, dst_cols, dst_w = [], [], [], [], [], []
    for j, (sources, goals, _, _) in enumerate(jobs):
        for pair, d, _ in sources:
            src_rows.append(n_pairs + j)
            src_cols.append(pair)
            src_w.append(d + 1e-9)
        for pair, d, _ in goals:
            dst_rows.append(pair)
            dst_cols.append(n_pairs + n_jobs + j)
            dst_w.append(d + 1e-9)
    coo = block.tocoo()
    n_aug = n_pairs + 2 * n_jobs
    aug = csr_matrix(
        (
            np.concatenate([coo.data, src_w, dst_w]),
            (np.concatenate([coo.row, src_rows, dst_rows]), np.concatenate([coo.col, src_cols, dst_cols])),
        ),
        shape=(n_aug, n_aug),
    )
    out: list[int] = []
    halves: list[int] = []
    p_list = p_node.tolist()
    for lo in range(0, n_jobs, _DIJKSTRA_CHUNK):
        hi = min(lo + _DIJKSTRA_CHUNK, n_jobs)
        _, pred = dijkstra(aug, directed=True, indices=np.arange(n_pairs + lo, n_pairs + hi), return_predecessors=True)
        for j in range(lo, hi):
            sources, goals, edge_a, edge_b = jobs[j]
            row = pred[j - lo]
            sink = n_pairs + n_jobs + j
            v = int(row[sink])
            if v < 0:
                continue  # not connected (cannot happen for an allowed transition)
            if edge_b >= 0:
                halves.append(2 * edge_b + next(end for pair, _, end in goals if pair == v))
            u = int(row[v])
            while u < n_pairs:
                out.append(target.edge_id[(p_list[u], p_list[v])])
                v, u = u, int(row[u])
            if edge_a >= 0:
                halves.append(2 * edge_a + next(end for pair, _, end in sources if pair == v))
    return np.asarray(out, dtype=np.int64), np.asarray(halves, dtype=np.int64)


_DIJKSTRA_CHUNK = 64


def path_alignment(
    paths_graph: nx.Graph,
    into_graph: nx.Graph,
    *,
    seed: int | np.random.Generator | random.Random | None = 0,
    d_snap: float = 25.0,
    segment_length: float = 25.0,
    corridor: float = 25.0,
    penalty_factor: float = 10000.0,
    max_candidates: int = 8,
    spacing: float = 5.0,
    reference: bool = False,
) -> tuple[float, int, int, int]:
    """Mean path score of ``paths_graph``'s paths aligned into ``into_graph`` (both already validated).

    Returns ``(mean_score, n_paths, n_connected, n_interruptions)``; ``mean_score`` is 0 when there are no paths.
    ``reference``: once ``into_graph`` is used up, the remaining paths are left out of the mean (the released code).
    """
    if reference:  # the released alignment and removal, stage by stage
        from drivemetrics.roadnet.opt_p_reference import reference_path_alignment

        return reference_path_alignment(
            paths_graph,
            into_graph,
            seed=seed,
            th_snap=d_snap,
            segment_length=segment_length,
            corridor=corridor,
            penalty_factor=penalty_factor,
        )
    paths = decompose_into_paths(paths_graph, seed)
    if not paths:
        return 0.0, 0, 0, 0
    target = _MatchTarget(into_graph, spacing)
    pos = {n: paths_graph.nodes[n]["pos"] for n in paths_graph.nodes}
    scores, connected, interruptions = [], 0, 0
    for path in paths:
        points = _resample_path(np.array([pos[n] for n in path], dtype=np.float64), segment_length)
        if target.n_alive == 0:
            if reference:
                break
            scores.append(0.0)
            interruptions += 1
            continue
        res = _align_path(points, target, d_snap, corridor, penalty_factor, max_candidates)
        scores.append(res.score)
        connected += res.connected
        interruptions += res.interruptions
    mean = float(np.mean(scores)) if scores else 0.0
    return mean, len(paths), connected, interruptions


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
    n_decompositions: int = 1,
    compat: Compat = "default",
    validate_args: bool = True,
) -> dict[str, Tensor]:
    """OPT-P path precision / recall / F1 of a predicted road graph against the ground truth.

    Args:
        preds: predicted graph (nodes with ``pos``); may be empty (scores 0).
        target: ground-truth graph; must have at least one edge.
        seed: seed of the random path decompositions (equal seeds give equal results); with
            ``compat="reference"`` the seed of a ``random.Random``: the released result after ``random.seed(seed)``.
        d_snap: largest distance between a path vertex and its snapped point (``th_snap``, 25 px).
        segment_length: paths are bisected until no segment is longer than this (25 px).
        corridor: nodes within this distance of a path segment form the corridor used to test connectivity (25 px).
        penalty_factor: a broken transition costs ``segment_length^2 * penalty_factor`` (10000).
        max_candidates: snapped candidates kept per path vertex (the closest).
        spacing: resolution of the matched graph (its edges are split to this length), units of ``pos``.
        n_decompositions: average precision and recall over this many random path decompositions (1, as the paper;
            more reduces the run-to-run spread of the metric, about +-0.01 F1 per tile at 1). The cost is linear in
            it: at 1, about 0.02 s per 14-node 512 px tile and 0.14 s per 65-node 1024 px tile on one CPU thread
            (``benchmarks/graph_sampling_cost.py``).
        compat: ``"default"`` or ``"reference"``: the released code's choices (see the module doc).
        validate_args: check that both are networkx graphs whose nodes carry a finite
            ``pos`` within ``max_abs_coordinate`` (the graph readers' limit); ``False`` skips it.

    Returns:
        ``dict[str, Tensor]`` (float64 ``precision``, ``recall``, ``f1``; int64 path / interruption counts are
        summed over the decompositions).

    Examples:
        >>> import networkx as nx, numpy as np
        >>> from drivemetrics.functional import opt_p
        >>> pos = lambda *xy: {n: np.array(p, dtype=float) for n, p in enumerate(xy)}  # node -> (x, y), pixels
        >>> gt, pred = nx.star_graph(4), nx.star_graph(3)  # a crossing; the prediction lacks an arm, 2 px off
        >>> nx.set_node_attributes(gt, pos((0, 0), (-400, 0), (400, 0), (0, -400), (0, 400)), "pos")
        >>> nx.set_node_attributes(pred, pos((2, 2), (-400, 2), (400, 2), (2, -400)), "pos")
        >>> result = opt_p(pred, gt)  # also the path counts n_paths_pred, n_paths_target, ...
        >>> {k: round(result[k].item(), 4) for k in ("precision", "recall", "f1")}
        {'precision': 1.0, 'recall': 0.6411, 'f1': 0.7813}
    """
    if validate_args:
        check_graph(preds, "preds")
        check_graph(target, "target")
    for name, value in (("d_snap", d_snap), ("segment_length", segment_length), ("corridor", corridor)):
        if not value > 0:
            raise ValueError(f"`{name}` must be > 0, got {value}")
    if max_candidates < 1:
        raise ValueError(f"`max_candidates` must be >= 1, got {max_candidates}")
    if n_decompositions < 1:
        raise ValueError(f"`n_decompositions` must be >= 1, got {n_decompositions}")
    reference = check_compat(compat)
    gt = validate_graph(target, "target", allow_empty=False, merge_duplicates=not reference)
    pred = validate_graph(preds, "preds", merge_duplicates=not reference)
    kwargs = {
        "d_snap": d_snap,
        "segment_length": segment_length,
        "corridor": corridor,
        "penalty_factor": penalty_factor,
        "max_candidates": max_candidates,
        "spacing": spacing,
        "reference": reference,
    }
    rng = np.random.default_rng(seed)
    seeds = rng.integers(2**63 - 1, size=(n_decompositions, 2)).tolist()
    if pred.number_of_edges() == 0:
        n_gt = sum(len(decompose_into_paths(gt, s_gt)) for s_gt, _ in seeds)
        if reference:  # the released code: precision 1 (no predicted path), recall NaN (mean of nothing)
            return result_tensors(OptPResult(1.0, float("nan"), 0, n_gt, 0, 0))
        return result_tensors(OptPResult(0.0, 0.0, 0, n_gt, 0, n_gt))
    if reference:  # the released code draws both decompositions from one Python random stream (random.seed(S))
        streams = [random.Random(seed if k == 0 else s) for k, (s, _) in enumerate(seeds)]
        seeds = [[stream, stream] for stream in streams]
    totals = np.zeros(6)
    for s_gt, s_pred in seeds:
        recall, n_gt, n_conn, n_int = path_alignment(gt, pred, seed=s_gt, **kwargs)
        precision, n_pred, _, _ = path_alignment(pred, gt, seed=s_pred, **kwargs)
        totals += (precision, recall, n_pred, n_gt, n_conn, n_int)
    p, r, n_pred, n_gt, n_conn, n_int = totals.tolist()
    return result_tensors(
        OptPResult(p / n_decompositions, r / n_decompositions, int(n_pred), int(n_gt), int(n_conn), int(n_int))
    )


class OptPMetrics(GraphMetric):
    """OPT-P: mean per-tile path precision and recall, F1 of the means (see :func:`opt_p`).

    Cost: about 0.02 s per 14-node tile and 0.14 s per 65-node tile on one CPU thread (``n_decompositions=1``).

    Examples:
        >>> import networkx as nx, numpy as np
        >>> from drivemetrics.roadnet import OptPMetrics
        >>> pos = lambda *xy: {n: np.array(p, dtype=float) for n, p in enumerate(xy)}  # node -> (x, y), pixels
        >>> gt, pred = nx.star_graph(4), nx.star_graph(3)  # a crossing; the prediction lacks an arm, 2 px off
        >>> nx.set_node_attributes(gt, pos((0, 0), (-400, 0), (400, 0), (0, -400), (0, 400)), "pos")
        >>> nx.set_node_attributes(pred, pos((2, 2), (-400, 2), (400, 2), (2, -400)), "pos")
        >>> metric = OptPMetrics()
        >>> metric.update(pred, gt)
        >>> {k: round(float(v), 4) for k, v in metric.compute().items()}
        {'precision': 1.0, 'recall': 0.6411, 'f1': 0.7813}
    """

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
        compat: Compat = "default",
        validate_args: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.validate_args = bool(validate_args)
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
        add_config_state(self, ("OptPMetrics", sorted(self.options.items())))

    def update(self, preds: nx.Graph | Sequence[nx.Graph], target: nx.Graph | Sequence[nx.Graph]) -> None:
        """Add the precision and recall of one tile or of a sequence of tiles."""
        for pred, gt in graph_pairs(preds, target):
            res = opt_p(pred, gt, **self.options, validate_args=self.validate_args)
            self.sum_precision = self.sum_precision + res["precision"]
            self.sum_recall = self.sum_recall + res["recall"]
            self.n_tiles = self.n_tiles + 1

    def compute(self) -> dict[str, Tensor]:
        n = self.n_tiles.clamp(min=1)
        precision, recall = self.sum_precision / n, self.sum_recall / n
        return {"precision": precision, "recall": recall, "f1": tensor_f1(precision, recall)}


class OptPPrecision(ScalarMetric, OptPMetrics):
    """OPT-P path precision, mean over tiles (arguments as :class:`OptPMetrics`).

    Examples:
        >>> from drivemetrics.roadnet import OptPPrecision, roadnet_example_inputs
        >>> OptPPrecision()(**roadnet_example_inputs())
        tensor(1., dtype=torch.float64)
    """

    key = "precision"


class OptPRecall(ScalarMetric, OptPMetrics):
    """OPT-P path recall, mean over tiles (arguments as :class:`OptPMetrics`).

    Examples:
        >>> from drivemetrics.roadnet import OptPRecall, roadnet_example_inputs
        >>> OptPRecall()(**roadnet_example_inputs())
        tensor(0.6411, dtype=torch.float64)
    """

    key = "recall"


class OptPF1Score(ScalarMetric, OptPMetrics):
    """OPT-P F1 of the mean precision and recall (arguments as :class:`OptPMetrics`).

    Examples:
        >>> from drivemetrics.roadnet import OptPF1Score, roadnet_example_inputs
        >>> OptPF1Score()(**roadnet_example_inputs())
        tensor(0.7813, dtype=torch.float64)
    """

    key = "f1"
