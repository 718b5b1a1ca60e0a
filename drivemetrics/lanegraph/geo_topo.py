"""GEO / TOPO precision and recall of UrbanLaneGraph (see :mod:`drivemetrics.lanegraph` for the definition)."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import dijkstra
from scipy.spatial import cKDTree
from torch import Tensor

from drivemetrics._internal.compat import Compat, check_compat
from drivemetrics._internal.validation import check_graph
from drivemetrics.graph.geometry import index_in_group
from drivemetrics.lanegraph.geometry import (
    INTERP_SPACING,
    MATCH_DIST,
    REFERENCE_CLIP,
    TOPO_RADIUS,
    TOPO_SEED_EVERY,
    LaneArrays,
    as_lane_arrays,
    as_scalars,
    length_graph,
)
from drivemetrics.lanegraph.reference import reference_pair_order

__all__ = ["geo_topo", "greedy_matching"]

# ---------------------------------------------------------------------------------------------------------------
# greedy matching (shared by GEO and TOPO)


def _greedy_sequential(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    selected = np.zeros(len(a), dtype=bool)
    used_a: set = set()
    used_b: set = set()
    for k, (x, y) in enumerate(zip(a.tolist(), b.tolist(), strict=True)):
        if x in used_a or y in used_b:
            continue
        used_a.add(x)
        used_b.add(y)
        selected[k] = True
    return selected


def _first_of_each(keys: np.ndarray, size: int) -> np.ndarray:
    """Mask of the first occurrence of every key (keys in ``0..size-1``)."""
    first = np.empty(size, dtype=np.int64)
    order = np.arange(len(keys))
    first[keys[::-1]] = order[::-1]  # repeated indices: numpy assigns in order, so the earliest position wins
    return first[keys] == order


def greedy_matching(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Greedy one-to-one matching of candidate pairs ``(a[k], b[k])`` given in priority order.

    Returns the mask of the pairs a sequential scan would keep (a pair is kept when neither end is used yet). Computed
    in vectorised rounds: a pair that comes first among the remaining pairs of both its ends is kept, then every
    pair touching a kept end is dropped (the classic equivalence of greedy and locally dominant matching); the tail
    of long rounds runs sequentially.
    """
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    selected = np.zeros(len(a), dtype=bool)
    if not len(a):
        return selected
    if int(a.max()) > 8 * len(a) + 4096:  # compact sparse keys
        a = np.unique(a, return_inverse=True)[1].reshape(-1)
    if int(b.max()) > 8 * len(b) + 4096:
        b = np.unique(b, return_inverse=True)[1].reshape(-1)
    used_a = np.zeros(int(a.max()) + 1, dtype=bool)
    used_b = np.zeros(int(b.max()) + 1, dtype=bool)
    idx = np.arange(len(a))
    while len(idx) > 2000:
        aa, bb = a[idx], b[idx]
        win = _first_of_each(aa, len(used_a)) & _first_of_each(bb, len(used_b))
        selected[idx[win]] = True
        used_a[aa[win]] = True
        used_b[bb[win]] = True
        idx = idx[~(used_a[aa] | used_b[bb])]
    if len(idx):
        selected[idx[_greedy_sequential(a[idx], b[idx])]] = True
    return selected


# ---------------------------------------------------------------------------------------------------------------
# GEO / TOPO, default mode (vectorised)


def _resample_lanes(arr: LaneArrays) -> tuple[np.ndarray, np.ndarray]:
    """The evaluator's resampling without its clipping: node positions truncated to int, each undirected edge
    (first direction met) cut into ``max(1, int(L) // 2)`` pieces, identical points merged.

    Returns the points ``(P, 2)`` (in the evaluator's node order) and the undirected edges ``(K, 2)`` between
    consecutive points.
    """
    pairs = []
    seen: set = set()
    for nid, nei in _reference_adjacency(arr).items():
        for nn in nei:
            if (nid, nn) in seen or (nn, nid) in seen:
                continue
            seen.add((nid, nn))
            pairs.append((*nid, *nn))
    if not pairs:
        return np.empty((0, 2)), np.empty((0, 2), dtype=np.int64)
    ends = np.array(pairs, dtype=np.float64)
    p0, p1 = ends[:, :2], ends[:, 2:]
    n_pts = np.maximum(2, np.floor(np.sqrt(((p0 - p1) ** 2).sum(axis=1))).astype(np.int64) // INTERP_SPACING + 1)
    edge_of = np.repeat(np.arange(len(pairs)), n_pts)
    i = index_in_group(n_pts)
    a = 1.0 - i / (n_pts[edge_of] - 1)
    pts = p0[edge_of] * a[:, None] + p1[edge_of] * (1 - a)[:, None]
    unique, first, inverse = np.unique(pts, axis=0, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")  # first-appearance order, as the evaluator's dict
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    node = rank[inverse.reshape(-1)]
    nxt = np.flatnonzero(edge_of[:-1] == edge_of[1:])
    seg = np.sort(np.stack([node[nxt], node[nxt + 1]], axis=1), axis=1)
    seg = seg[seg[:, 0] != seg[:, 1]]
    return unique[order], np.unique(seg, axis=0)


def _candidate_pairs(pred_pts: np.ndarray, gt_pts: np.ndarray, thr: float) -> tuple[np.ndarray, ...]:
    """Pairs (pred, gt) with squared distance < thr**2, sorted by (distance, pred, gt)."""
    if not len(pred_pts) or not len(gt_pts):
        empty = np.empty(0, dtype=np.int64)
        return empty, empty, np.empty(0)
    coo = cKDTree(pred_pts).sparse_distance_matrix(cKDTree(gt_pts), thr, output_type="ndarray")
    pa, pb = coo["i"].astype(np.int64), coo["j"].astype(np.int64)
    d = pred_pts[pa] - gt_pts[pb]
    r = d[:, 0] ** 2 + d[:, 1] ** 2
    keep = r < thr * thr
    pa, pb, r = pa[keep], pb[keep], r[keep]
    order = np.lexsort((-pb, pa, r))  # ties: newest first (a fixed rule; the evaluator's R-tree order may differ)
    return pa[order], pb[order], r[order]


def _balls(graph: csr_matrix, seeds: np.ndarray, radius: float) -> csr_matrix:
    """``(S, N)`` membership: the seed, every node closer than ``radius`` and the neighbours of those nodes."""
    dist = dijkstra(graph, directed=False, indices=seeds, limit=radius)
    inside = csr_matrix(dist < radius)
    adjacency = (graph != 0).astype(np.float64)
    ring = inside.astype(np.float64) @ adjacency
    out = (ring + inside.astype(np.float64)).tocsr()
    out.data[:] = 1.0
    out.eliminate_zeros()
    return out


class _BoxIndex:
    """Points sorted by x, for the indices of the points inside an axis-aligned box."""

    def __init__(self, pts: np.ndarray) -> None:
        self.order = np.argsort(pts[:, 0], kind="stable")
        self.x = pts[self.order, 0]
        self.y = pts[self.order, 1]

    def around(self, centers: np.ndarray, margin: float) -> np.ndarray:
        """Indices (unsorted) of the points inside the bounding box of ``centers`` grown by ``margin`` px."""
        lo, hi = centers.min(axis=0) - margin, centers.max(axis=0) + margin
        a = int(np.searchsorted(self.x, lo[0], side="left"))
        b = int(np.searchsorted(self.x, hi[0], side="right"))
        y = self.y[a:b]
        return self.order[a:b][(y >= lo[1]) & (y <= hi[1])]


def _ranges(starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
    """``concatenate([arange(a, b) for a, b in zip(starts, stops)])`` without a Python loop."""
    return np.repeat(starts, stops - starts) + index_in_group(stops - starts)


def _topo_local(
    pred_pts: np.ndarray,
    pred_graph: csr_matrix,
    gt_pts: np.ndarray,
    gt_graph: csr_matrix,
    pairs: tuple[np.ndarray, np.ndarray],
    seeds_pred: np.ndarray,
    seeds_gt: np.ndarray,
    chunk: int = 64,
) -> tuple[np.ndarray, np.ndarray]:
    """Local precision and recall around every seed pair (vectorised over seeds; order of the output arbitrary).

    Seeds are processed in spatially compact groups. A group works on the part of each graph inside the box around
    its seeds grown by the radius plus the longest edge: a node closer than the radius in graph distance is closer
    in Euclidean distance, and so is every path to it, so its distance and its neighbours are the same in that part.
    The candidate pairs (kept in global priority order) whose points lie in one of the group's balls are tested
    against every ball at once, so each seed's local pairs come out already in priority order.
    """
    pa, pb = pairs
    # pairs that come first among all pairs at both their ends win in any subset containing them (greedy = locally
    # dominant matching): select them up front, the rounds then run on the rest
    dominant = _first_of_each(pa, len(pred_pts)) & _first_of_each(pb, len(gt_pts))
    by_pred = np.argsort(pa, kind="stable")  # pair ids grouped by predicted point
    pair_start = np.searchsorted(pa[by_pred], np.arange(len(pred_pts) + 1))
    longest = max((float(g.data.max()) if g.nnz else 0.0) for g in (pred_graph, gt_graph))
    margin = TOPO_RADIUS + longest + 1.0
    local_p = np.full(len(pred_pts), -1, dtype=np.int64)  # global -> local index of the current group
    local_g = np.full(len(gt_pts), -1, dtype=np.int64)
    box_p, box_g = _BoxIndex(pred_pts), _BoxIndex(gt_pts)
    in_group = np.zeros(len(pa), dtype=bool)  # pairs of the current group
    cell = np.floor(pred_pts[seeds_pred] / TOPO_RADIUS).astype(np.int64)
    order = np.lexsort((cell[:, 0], cell[:, 1]))
    seeds_pred, seeds_gt = seeds_pred[order], seeds_gt[order]
    precisions, recalls = [], []
    for lo in range(0, len(seeds_pred), chunk):
        sp, sg = seeds_pred[lo : lo + chunk], seeds_gt[lo : lo + chunk]
        s_n = len(sp)
        nodes_p = box_p.around(pred_pts[sp], margin)
        nodes_g = box_g.around(gt_pts[sg], margin)
        local_p[nodes_p] = np.arange(len(nodes_p))
        local_g[nodes_g] = np.arange(len(nodes_g))
        ball_p = _balls(pred_graph[nodes_p][:, nodes_p], local_p[sp], TOPO_RADIUS)
        ball_g = _balls(gt_graph[nodes_g][:, nodes_g], local_g[sg], TOPO_RADIUS)
        size_p, size_g = np.diff(ball_p.indptr), np.diff(ball_g.indptr)
        in_p = np.zeros((s_n, len(nodes_p)), dtype=bool)
        in_p[np.repeat(np.arange(s_n), size_p), ball_p.indices] = True
        in_g = np.zeros((s_n, len(nodes_g)), dtype=bool)
        in_g[np.repeat(np.arange(s_n), size_g), ball_g.indices] = True
        ids = by_pred[_ranges(pair_start[nodes_p], pair_start[nodes_p + 1])]  # pairs with a local predicted point
        in_group[ids[local_g[pb[ids]] >= 0]] = True  # ... and a local GT point
        ids = np.flatnonzero(in_group)  # in priority order
        in_group[ids] = False
        la, lb = local_p[pa[ids]], local_g[pb[ids]]
        rel = np.flatnonzero(in_p.any(axis=0)[la] & in_g.any(axis=0)[lb])
        seed_of, r = np.nonzero(in_p[:, la[rel]] & in_g[:, lb[rel]])  # row-major: per seed, in priority order
        pair = rel[r]
        key_a = seed_of * len(nodes_p) + la[pair]
        key_b = seed_of * len(nodes_g) + lb[pair]
        first = dominant[ids[pair]]
        used_a = np.zeros(s_n * len(nodes_p), dtype=bool)
        used_b = np.zeros(s_n * len(nodes_g), dtype=bool)
        used_a[key_a[first]] = True
        used_b[key_b[first]] = True
        rest = ~first & ~used_a[key_a] & ~used_b[key_b]
        chosen = greedy_matching(key_a[rest], key_b[rest])
        matched = np.bincount(seed_of[first], minlength=s_n) + np.bincount(seed_of[rest][chosen], minlength=s_n)
        precisions.append(matched / np.maximum(size_p, 1))
        recalls.append(matched / np.maximum(size_g, 1))
        local_p[nodes_p] = -1
        local_g[nodes_g] = -1
    if not precisions:
        return np.empty(0), np.empty(0)
    return np.concatenate(precisions), np.concatenate(recalls)


def _geo_topo_default(pred: LaneArrays, gt: LaneArrays) -> dict[str, float]:
    pred_pts, pred_seg = _resample_lanes(pred)
    gt_pts, gt_seg = _resample_lanes(gt)
    zero = {"geo_precision": 0.0, "geo_recall": 0.0, "topo_precision": 0.0, "topo_recall": 0.0}
    if not len(pred_pts) or not len(gt_pts):
        return zero
    pa, pb, _ = _candidate_pairs(pred_pts, gt_pts, MATCH_DIST)
    chosen = greedy_matching(pa, pb)
    matched = int(chosen.sum())
    if matched == 0:
        return zero
    geo_p, geo_r = matched / len(pred_pts), matched / len(gt_pts)
    seeds = np.flatnonzero(chosen)[::TOPO_SEED_EVERY]
    p_local, r_local = _topo_local(
        pred_pts,
        length_graph(pred_pts, pred_seg),
        gt_pts,
        length_graph(gt_pts, gt_seg),
        (pa, pb),
        pa[seeds],
        pb[seeds],
    )
    return {
        "geo_precision": geo_p,
        "geo_recall": geo_r,
        "topo_precision": geo_p * float(np.mean(p_local)),
        "topo_recall": geo_r * float(np.mean(r_local)),
    }


# ---------------------------------------------------------------------------------------------------------------
# GEO / TOPO, reference mode (a faithful, sequential replica of the evaluator)


def _reference_adjacency(arr: LaneArrays) -> dict:
    """The evaluator's ``nx_to_geo_topo_format``: int-truncated positions, out-edges only."""
    pos = arr.pos.tolist()
    neighbors: dict = {}
    for u, v in arr.edges.tolist():
        k1 = (int(pos[u][0]), int(pos[u][1]))
        k2 = (int(pos[v][0]), int(pos[v][1]))
        lst = neighbors.setdefault(k1, [])
        if k2 not in lst:
            lst.append(k2)
    return neighbors


def _reference_interpolate(graph: dict, clip: int = REFERENCE_CLIP) -> dict:
    """The evaluator's ``interpolateGraph``: undirected, a point every ~2 px, points outside ``[0, clip)`` dropped."""
    out: dict = {}
    seen: set = set()

    def outside(p: tuple) -> bool:
        return p[0] < 0 or p[0] >= clip or p[1] < 0 or p[1] >= clip

    for nid, nei in graph.items():
        for nn in nei:
            if (nid, nn) in seen or (nn, nid) in seen:
                continue
            x1, y1 = nid
            x2, y2 = nn
            seen.add((nid, nn))
            n_pts = max(2, int(math.sqrt((x1 - x2) ** 2 + (y1 - y2) ** 2)) // 2 + 1)
            last = (x1, y1)
            for i in range(1, n_pts):
                a = 1.0 - float(i) / (n_pts - 1)
                cur = (x1 * a + x2 * (1 - a), y1 * a + y2 * (1 - a))
                if outside(cur) or outside(last):
                    last = cur
                    continue
                lst = out.setdefault(last, [])
                if cur not in lst:
                    lst.append(cur)
                lst = out.setdefault(cur, [])
                if last not in lst:
                    lst.append(last)
                last = cur
    return out


def _reference_ball(graph: dict, start: tuple, steps: float = TOPO_RADIUS) -> list:
    """The evaluator's ``propagateByDistance``: depth-first walk, list in Python set order."""
    visited: set = set()
    stack = [(start, 0)]
    while stack:
        cur, depth = stack.pop()
        visited.add(cur)
        if depth >= steps:
            continue
        for nei in graph[cur]:
            if nei in visited:
                continue
            stack.append((nei, depth + math.sqrt((cur[0] - nei[0]) ** 2 + (cur[1] - nei[1]) ** 2)))
    return list(visited)


def _reference_match_count(indexed: list, queried: list, thr: float = MATCH_DIST) -> int:
    """Greedy matching as in the evaluator: pairs (queried i, indexed n) sorted by squared distance, stable."""
    if not indexed or not queried:
        return 0
    a = np.asarray(indexed, dtype=np.float64).reshape(-1, 2)
    q = np.asarray(queried, dtype=np.float64).reshape(-1, 2)
    coo = cKDTree(q).sparse_distance_matrix(cKDTree(a), thr + 1e-9, output_type="ndarray")
    qi, ni = coo["i"].astype(np.int64), coo["j"].astype(np.int64)
    d = a[ni] - q[qi]
    r = d[:, 0] ** 2 + d[:, 1] ** 2
    keep = r < thr * thr
    qi, ni, r = qi[keep], ni[keep], r[keep]
    order = reference_pair_order(a, q, qi, ni, r, thr)  # ties: the evaluator's R-tree order
    return int(_greedy_sequential(qi[order], ni[order]).sum())


def _geo_topo_reference(pred: LaneArrays, gt: LaneArrays) -> dict[str, float]:
    prop_graph = _reference_interpolate(_reference_adjacency(pred))
    gt_graph = _reference_interpolate(_reference_adjacency(gt))
    prop_nodes, gt_nodes = list(prop_graph), list(gt_graph)
    if not prop_nodes or not gt_nodes:  # ZeroDivisionError in the evaluator, caught: all four are 0
        return {"geo_precision": 0.0, "geo_recall": 0.0, "topo_precision": 0.0, "topo_recall": 0.0}
    g = np.asarray(gt_nodes, dtype=np.float64).reshape(-1, 2)
    p = np.asarray(prop_nodes, dtype=np.float64).reshape(-1, 2)
    coo = cKDTree(p).sparse_distance_matrix(cKDTree(g), MATCH_DIST + 1e-9, output_type="ndarray")
    pi, gi = coo["i"].astype(np.int64), coo["j"].astype(np.int64)
    d = g[gi] - p[pi]
    r = d[:, 0] ** 2 + d[:, 1] ** 2
    keep = r < MATCH_DIST**2
    pi, gi, r = pi[keep], gi[keep], r[keep]
    order = reference_pair_order(g, p, pi, gi, r, MATCH_DIST)  # ties: the evaluator's R-tree order
    pi, gi = pi[order], gi[order]
    chosen = np.flatnonzero(_greedy_sequential(pi, gi))
    ps, rs = [], []
    for k in chosen[::TOPO_SEED_EVERY].tolist():
        nodes1 = _reference_ball(prop_graph, prop_nodes[pi[k]])
        nodes2 = _reference_ball(gt_graph, gt_nodes[gi[k]])
        m = _reference_match_count(nodes1, nodes2)
        ps.append(m / len(nodes1))
        rs.append(m / len(nodes2))
    matched = len(chosen)
    geo_p, geo_r = matched / len(prop_nodes), matched / len(gt_nodes)
    mean_p = float(np.mean(ps)) if ps else math.nan  # np.mean([]) = NaN in the evaluator: TOPO is NaN
    mean_r = float(np.mean(rs)) if rs else math.nan
    return {
        "geo_precision": geo_p,
        "geo_recall": geo_r,
        "topo_precision": geo_p * mean_p,
        "topo_recall": geo_r * mean_r,
    }


def geo_topo(
    preds: nx.DiGraph, target: nx.DiGraph, *, compat: Compat = "default", validate_args: bool = True
) -> dict[str, Tensor]:
    """GEO and TOPO precision / recall of a predicted lane graph (see the module doc).

    Returns ``{"geo_precision", "geo_recall", "topo_precision", "topo_recall"}`` (0-d float64 tensors in [0, 1]).
    The reference mode returns the true GEO precision here; the evaluator's *reported* "GEO Precision" of the
    successor task is its TOPO precision (applied by :func:`evaluate_lanegraph_pair`).

    Args:
        preds, target (networkx.DiGraph): Predicted and ground-truth lane graphs, node ``pos = (x, y)`` in pixels.
        compat (str): ``"default"`` or ``"reference"``.
        validate_args: check that both are networkx graphs whose nodes carry a finite
            ``pos`` within ``max_abs_coordinate`` (the graph readers' limit); ``False`` skips it.

    Examples:
        >>> import networkx as nx, numpy as np
        >>> from drivemetrics.functional import geo_topo
        >>> g, h = nx.DiGraph([(0, 1)]), nx.DiGraph([(0, 1)])  # two 100 px lanes overlapping by 50 px
        >>> nx.set_node_attributes(g, {0: np.array([0.0, 0.0]), 1: np.array([100.0, 0.0])}, "pos")
        >>> nx.set_node_attributes(h, {0: np.array([50.0, 0.0]), 1: np.array([150.0, 0.0])}, "pos")
        >>> {k: round(float(v), 3) for k, v in geo_topo(h, g).items()}
        {'geo_precision': 0.51, 'geo_recall': 0.51, 'topo_precision': 0.26, 'topo_recall': 0.26}
    """
    if validate_args:
        check_graph(preds, "preds")
        check_graph(target, "target")
    check_compat(compat)
    pred, gt = as_lane_arrays(preds, "preds"), as_lane_arrays(target, "target")
    values = _geo_topo_reference(pred, gt) if compat == "reference" else _geo_topo_default(pred, gt)
    return as_scalars(values)
