"""UrbanLaneGraph metrics (Zürn et al., CVPR 2023) on directed lane graphs: TOPO / GEO, APLS, SDA, graph IoU, planning.

Lane graphs are :class:`networkx.DiGraph` objects whose nodes carry ``pos = (x, y)`` in pixels (any node ids). Every
function takes ``(preds, target)`` and a ``compat`` switch:

- ``compat=None`` (default): the paper's definitions with the released evaluator's bugs fixed (listed below).
- ``compat="reference"``: reproduces the numbers of the released evaluator (``jzuern/lanegnn``
  ``urbanlanegraph_evaluator``, setup.py 0.11), bugs included, for comparison with the leaderboard.

Metrics (parameters are the evaluator's):

- GEO / TOPO (:func:`geo_topo`): both graphs are resampled every ~2 px along their edges (``int(L) // 2`` pieces
  per edge, undirected). GEO: greedy one-to-one matching of the resampled points closer than 8 px, in order of
  increasing distance; precision = matched / predicted points, recall = matched / GT points. TOPO: from every 10th
  matched pair (in that order), the nodes within 400 px of graph distance around the matched points are matched
  the same way; TOPO precision / recall = GEO precision / recall x the mean local precision / recall.
- APLS (:func:`lanegraph_apls`): CosmiQ's APLS with 0.15 m/px, every node a control point, 5 m snapping,
  20 m minimum path length, harmonic mean of the two directions.
- SDA@R (:func:`sda`): split nodes (out-degree >= 2) matched by the Hungarian algorithm on Euclidean distance;
  a pair closer than R px is a true positive; tp / (tp + fp + fn); NaN when the GT has no split, 0 when the
  prediction has none.
- Graph IoU (:func:`graph_iou`): both graphs drawn with 10 px wide lines, IoU of the two masks.
- Planning (:func:`planning`): start / goal pairs from random walks on the GT, shortest paths on both graphs,
  paths resampled to 100 points; MMD (mean over GT points of the distance to the closest predicted point), MED
  (distance between the end points) and SR (success rate). A failed plan counts MMD = MED = 5000 px.

Fixed in the default mode (each reproduced by ``compat="reference"``):

- GEO / TOPO: no clipping of the resampled points to ``[0, 4096)`` px (the evaluator drops everything outside,
  so full-LGP tiles lose their far side and graphs in negative coordinates vanish); the 400 px neighbourhood is the
  exact graph-distance ball plus one step (the evaluator's depth-first walk gives the same set on trees but depends
  on the visiting order on graphs with cycles); TOPO is 0, not NaN, when nothing matches. The resampling is the
  evaluator's (positions truncated to int, same points), so GEO agrees with the evaluator's true GEO precision
  and recall wherever it does not clip, except where two candidates of one point are exactly equidistant: the
  default takes the newest first, the evaluator its R-tree's order (one match apart on 1 of the 200 austin and
  miami successor samples).
- Graph IoU: the canvas covers both graphs at their float positions (the evaluator truncates coordinates to int
  and draws on a fixed ``area_size`` canvas, clipping everything outside it); a pixel is inside a lane when its
  centre is within ``lane_width / 2`` of an edge (the reference mode draws with OpenCV's ``cv2.line`` as the
  evaluator, see :func:`graph_iou`).
- APLS: deterministic and computed for every graph size (the evaluator fails on Python >= 3.11 for GTs of
  2,000 nodes or more and silently reports 0); a control point that lands on a node already claimed by another
  keeps it (the evaluator relabels the node, so the first point looks missing); a control point missing from the
  other graph gets the 20 m minimum-length rule like every other pair; edges longer than 7.5 m receive control
  points every 10 m (the evaluator's ``is_curved_eps = 10**3`` silently disables them).
- Planning: shortest paths are length-weighted (the evaluator counts hops); SR counts only attempts whose GT path
  exists; a sample without any valid start / goal pair is NaN (the evaluator crashes).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import networkx as nx
import numpy as np
from scipy.optimize import linear_sum_assignment
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import dijkstra
from scipy.spatial import cKDTree

from drivemetrics.graph.geometry import index_in_group
from drivemetrics.graph.io import node_positions
from drivemetrics.graph.lanegraph_compat import opencv_graph_iou, reference_pair_order

__all__ = [
    "COMPAT_MODES",
    "LANE_METRICS",
    "PLANNING_METRICS",
    "LaneArrays",
    "evaluate_lanegraph_pair",
    "geo_topo",
    "graph_iou",
    "lane_arrays",
    "lanegraph_apls",
    "planning",
    "sda",
]

COMPAT_MODES = (None, "reference")
LANE_METRICS = ("topo_precision", "topo_recall", "geo_precision", "geo_recall", "apls", "sda20", "sda50", "iou")
PLANNING_METRICS = ("mmd", "med", "sr")

INTERP_SPACING = 2  # px, GEO/TOPO resampling (``int(L) // 2`` pieces per edge)
MATCH_DIST = 8.0  # px, GEO/TOPO matching distance
TOPO_RADIUS = 400.0  # px of graph distance around every 10th matched pair
TOPO_SEED_EVERY = 10
REFERENCE_CLIP = 4096  # px, the evaluator's hard-coded canvas for GEO/TOPO
METRES_PER_PX = 0.15
APLS_SNAP_M = 5.0
APLS_MIN_PATH_M = 20.0
APLS_SPACING_M = 10.0
APLS_REFERENCE_MAX_NODES = 2000  # the evaluator's sampled path (broken on Python >= 3.11) from this GT size
PLANNING_FAIL = 5000.0  # px, MMD / MED of a failed plan


def check_compat(compat: str | None) -> str | None:
    """``compat`` if it is ``None`` or ``"reference"``; ``ValueError`` otherwise."""
    if compat not in COMPAT_MODES:
        raise ValueError(f"`compat` must be None or 'reference', got {compat!r}")
    return compat


@dataclass(frozen=True)
class LaneArrays:
    """A lane graph as arrays: ``nodes[i]`` is the id of row ``i`` of ``pos`` ``(N, 2)`` (pixels); ``edges`` ``(E, 2)``
    holds directed row pairs in ``graph.edges`` order (self-loops and duplicate positions kept)."""

    nodes: list
    pos: np.ndarray
    edges: np.ndarray


def lane_arrays(graph: object, name: str) -> LaneArrays:
    """Check a lane graph and return its arrays.

    ``graph`` must be a :class:`networkx.DiGraph` (or MultiDiGraph) whose every node has ``pos`` = two finite
    numbers; errors name ``name`` and the node. The graph is not modified.
    """
    if not isinstance(graph, nx.DiGraph):
        kind = type(graph).__name__
        raise TypeError(f"`{name}` must be a directed lane graph (networkx.DiGraph), got {kind}")
    nodes, pos = node_positions(graph, name)
    index = {n: i for i, n in enumerate(nodes)}
    edges = np.array([(index[u], index[v]) for u, v in graph.edges()], dtype=np.int64).reshape(-1, 2)
    return LaneArrays(nodes, pos, edges)


def _arrays(graph: object, name: str) -> LaneArrays:
    return graph if isinstance(graph, LaneArrays) else lane_arrays(graph, name)


def _length_graph(pos: np.ndarray, edges: np.ndarray) -> csr_matrix:
    """Symmetric sparse adjacency weighted by edge length (zero lengths stored as 1e-12 so they stay edges)."""
    n = len(pos)
    if not len(edges):
        return csr_matrix((n, n))
    w = np.maximum(np.linalg.norm(pos[edges[:, 1]] - pos[edges[:, 0]], axis=1), 1e-12)
    rows = np.concatenate([edges[:, 0], edges[:, 1]])
    cols = np.concatenate([edges[:, 1], edges[:, 0]])
    mat = csr_matrix((np.concatenate([w, w]), (rows, cols)), shape=(n, n))
    mat.sum_duplicates()
    return mat


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
    """``S x N`` membership: the seed, every node closer than ``radius`` and the neighbours of those nodes."""
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

    def around(self, centres: np.ndarray, margin: float) -> np.ndarray:
        """Indices (unsorted) of the points inside the bounding box of ``centres`` grown by ``margin`` px."""
        lo, hi = centres.min(axis=0) - margin, centres.max(axis=0) + margin
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
        _length_graph(pred_pts, pred_seg),
        gt_pts,
        _length_graph(gt_pts, gt_seg),
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


def geo_topo(preds: nx.DiGraph, target: nx.DiGraph, compat: str | None = None) -> dict[str, float]:
    """GEO and TOPO precision / recall of a predicted lane graph (see the module doc).

    Returns ``{"geo_precision", "geo_recall", "topo_precision", "topo_recall"}`` (floats in [0, 1]). The reference
    mode returns the true GEO precision here; the evaluator's *reported* "GEO Precision" of the successor task is
    its TOPO precision (applied by :func:`evaluate_lanegraph_pair`).
    """
    compat = check_compat(compat)
    pred, gt = _arrays(preds, "preds"), _arrays(target, "target")
    return _geo_topo_reference(pred, gt) if compat == "reference" else _geo_topo_default(pred, gt)


# ---------------------------------------------------------------------------------------------------------------
# SDA


def split_points(arr: LaneArrays) -> np.ndarray:
    """Positions ``(K, 2)`` of the nodes with out-degree >= 2 (in node order)."""
    out_deg = np.bincount(arr.edges[:, 0], minlength=len(arr.nodes)) if len(arr.edges) else np.zeros(len(arr.nodes))
    return arr.pos[out_deg >= 2]


def sda(preds: nx.DiGraph, target: nx.DiGraph, threshold: float = 20.0, compat: str | None = None) -> float:
    """Split detection accuracy SDA@``threshold`` (px): tp / (tp + fp + fn) after Hungarian matching of split nodes.

    NaN when the GT has no split node, 0 when the prediction has none. Same in both modes.
    """
    check_compat(compat)
    gt_s = split_points(_arrays(target, "target"))
    pred_s = split_points(_arrays(preds, "preds"))
    if not len(gt_s):
        return math.nan
    if not len(pred_s):
        return 0.0
    cost = np.linalg.norm(gt_s[:, None, :] - pred_s[None, :, :], axis=-1)
    rows, cols = linear_sum_assignment(cost)
    tp = int(np.sum(cost[rows, cols] < threshold))
    return tp / (len(pred_s) + len(gt_s) - tp)


def matched_splits(preds: nx.DiGraph, target: nx.DiGraph, threshold: float) -> tuple[np.ndarray, np.ndarray]:
    """GT and predicted split positions ``(K, 2)`` matched closer than ``threshold`` (for figures)."""
    gt_s = split_points(_arrays(target, "target"))
    pred_s = split_points(_arrays(preds, "preds"))
    if not len(gt_s) or not len(pred_s):
        return np.empty((0, 2)), np.empty((0, 2))
    cost = np.linalg.norm(gt_s[:, None, :] - pred_s[None, :, :], axis=-1)
    rows, cols = linear_sum_assignment(cost)
    ok = cost[rows, cols] < threshold
    return gt_s[rows[ok]], pred_s[cols[ok]]


# ---------------------------------------------------------------------------------------------------------------
# graph IoU


def _raster_keys(
    p0: np.ndarray, p1: np.ndarray, radius: float, origin: tuple[int, int], shape: tuple[int, int]
) -> np.ndarray:
    """Flat indices ``row * width + col`` of the pixels whose centre lies within ``radius`` of a segment.

    ``origin = (x0, y0)`` is the pixel at index 0; pixels outside ``shape = (height, width)`` are dropped. Each
    segment's capsule is convex, so on every pixel row it covers one interval: the union of the intervals of its
    two end discs and of its band, computed in closed form; the pixels are generated from these spans.
    """
    if not len(p0):
        return np.empty(0, dtype=np.int64)
    eps = 1e-9
    p0 = np.asarray(p0, dtype=np.float64) - origin
    p1 = np.asarray(p1, dtype=np.float64) - origin
    y_lo = np.maximum(np.ceil(np.minimum(p0[:, 1], p1[:, 1]) - radius - eps), 0).astype(np.int64)
    y_hi = np.minimum(np.floor(np.maximum(p0[:, 1], p1[:, 1]) + radius + eps), shape[0] - 1).astype(np.int64)
    n_rows = np.maximum(y_hi - y_lo + 1, 0)
    seg = np.repeat(np.arange(len(p0)), n_rows)
    y = (y_lo[seg] + index_in_group(n_rows)).astype(np.float64)
    a, b = p0[seg], p1[seg]
    left = np.full(len(y), np.inf)
    right = np.full(len(y), -np.inf)
    for c in (a, b):  # end discs
        h2 = radius * radius - (y - c[:, 1]) ** 2
        ok = h2 >= -eps
        h = np.sqrt(np.maximum(h2, 0.0))
        left = np.where(ok, np.minimum(left, c[:, 0] - h), left)
        right = np.where(ok, np.maximum(right, c[:, 0] + h), right)
    d = b - a
    length = np.hypot(d[:, 0], d[:, 1])
    safe = np.where(length > 0, length, 1.0)
    u = d / safe[:, None]
    lo_x = np.full(len(y), -np.inf)
    hi_x = np.full(len(y), np.inf)
    feasible = length > 0
    # band: -r <= (p - a) . n <= r and 0 <= (p - a) . u <= L, with n = (-u_y, u_x) and p = (x, y)
    for k, m, c1, c2 in (
        (-u[:, 1], (y - a[:, 1]) * u[:, 0], -radius, radius),
        (u[:, 0], (y - a[:, 1]) * u[:, 1], 0.0, length),
    ):
        steep = np.abs(k) > 1e-12
        ks = np.where(steep, k, 1.0)
        e1 = a[:, 0] + (c1 - eps - m) / ks
        e2 = a[:, 0] + (c2 + eps - m) / ks
        lo_x = np.where(steep, np.maximum(lo_x, np.minimum(e1, e2)), lo_x)
        hi_x = np.where(steep, np.minimum(hi_x, np.maximum(e1, e2)), hi_x)
        feasible &= steep | ((m >= c1 - eps) & (m <= c2 + eps))
    band = feasible & (lo_x <= hi_x)
    left = np.where(band, np.minimum(left, lo_x), left)
    right = np.where(band, np.maximum(right, hi_x), right)
    col_lo = np.maximum(np.ceil(left - eps), 0)
    col_hi = np.minimum(np.floor(right + eps), shape[1] - 1)
    ok = np.isfinite(left) & (col_hi >= col_lo)
    col_lo, col_hi, rows = col_lo[ok].astype(np.int64), col_hi[ok].astype(np.int64), y[ok].astype(np.int64)
    count = col_hi - col_lo + 1
    start = np.repeat(rows * shape[1] + col_lo, count)
    return np.unique(start + index_in_group(count))


def graph_iou(
    preds: nx.DiGraph,
    target: nx.DiGraph,
    area_size: tuple[int, int] = (256, 256),
    lane_width: float = 10.0,
    compat: str | None = None,
) -> float:
    """IoU of the two graphs drawn with ``lane_width`` px wide edges.

    Default: a pixel belongs to a drawing when its centre is within ``lane_width / 2`` of an edge, at float
    positions, on a canvas covering both graphs (``area_size`` unused); NaN when neither graph has an edge.
    ``compat="reference"``: like the evaluator's ``cv2.line(..., thickness=lane_width)`` on an ``area_size`` =
    ``(height, width)`` canvas with int-truncated end points, ``|A & B| / (1e-8 + |A | B|)``, drawn with OpenCV
    (the ``lanegraph`` extra; ``ImportError`` naming it when missing): equal to the evaluator's IoU to 1e-6 on the
    austin and miami successor samples (see :func:`~drivemetrics.graph.lanegraph_compat.opencv_graph_iou`).
    """
    compat = check_compat(compat)
    pred, gt = _arrays(preds, "preds"), _arrays(target, "target")
    radius = lane_width / 2.0
    if compat == "reference":

        def segments(arr: LaneArrays) -> tuple[np.ndarray, np.ndarray]:
            return arr.pos[arr.edges[:, 0]], arr.pos[arr.edges[:, 1]]

        return opencv_graph_iou(segments(gt), segments(pred), area_size, lane_width)
    used = [arr.pos[arr.edges.reshape(-1)] for arr in (pred, gt) if len(arr.edges)]
    if not used:
        return math.nan
    allpts = np.concatenate(used)
    x0, y0 = np.floor(allpts.min(axis=0) - radius - 1).astype(np.int64)
    x1, y1 = np.ceil(allpts.max(axis=0) + radius + 1).astype(np.int64)
    shape = (int(y1 - y0 + 1), int(x1 - x0 + 1))

    def keys(arr: LaneArrays) -> np.ndarray:
        return _raster_keys(arr.pos[arr.edges[:, 0]], arr.pos[arr.edges[:, 1]], radius, (int(x0), int(y0)), shape)

    keys_gt, keys_pred = keys(gt), keys(pred)
    inter = len(np.intersect1d(keys_gt, keys_pred, assume_unique=True))
    union = len(keys_gt) + len(keys_pred) - inter
    return inter / union if union else math.nan


# ---------------------------------------------------------------------------------------------------------------
# APLS


def _apls_control_points(pos: np.ndarray, edges: np.ndarray, spacing: float) -> np.ndarray:
    """Every node, plus CosmiQ's midpoints: one on edges of ``0.75 * spacing <= L <= spacing``, ``n - 1`` evenly
    spaced points on longer ones (``n = len(arange(0, L, spacing)) + 1`` pieces)."""
    if not len(edges):
        return pos
    a, b = pos[edges[:, 0]], pos[edges[:, 1]]
    length = np.linalg.norm(b - a, axis=1)
    pieces = np.where(length <= spacing, 2, np.ceil(length / spacing - 1e-12).astype(np.int64) + 1)
    pieces = np.where(length < 0.75 * spacing, 1, pieces)
    n_new = pieces - 1
    edge_of = np.repeat(np.arange(len(edges)), n_new)
    k = index_in_group(n_new) + 1
    t = k / np.repeat(pieces, n_new)
    return np.concatenate([pos, a[edge_of] + t[:, None] * (b - a)[edge_of]])


def _snap_rows(graph: nx.Graph, points: np.ndarray, max_dist: float) -> tuple[nx.Graph, np.ndarray]:
    """Insert ``points`` into ``graph`` (splitting edges); each point's node row in the new graph (-1: too far)."""
    from drivemetrics.graph.geometry import snap_points

    new, ids = snap_points(graph, points, max_dist)
    index = {n: i for i, n in enumerate(new.nodes)}
    return new, np.array([-1 if n is None else index[n] for n in ids], dtype=np.int64)


def _apls_one_way(
    own: nx.Graph, own_rows: np.ndarray, other: nx.Graph, other_rows: np.ndarray, sources: np.ndarray
) -> tuple[float, int]:
    """Summed capped path differences and pair count from ``sources`` (control-point indices) to every control point."""
    from drivemetrics.graph.geometry import graph_arrays

    own_arr, other_arr = graph_arrays(own), graph_arrays(other)
    own_cs, other_cs = _length_graph(own_arr.pos, own_arr.edges), _length_graph(other_arr.pos, other_arr.edges)
    present = other_rows >= 0
    total, pairs = 0.0, 0
    for lo in range(0, len(sources), 64):
        src = sources[lo : lo + 64]
        l_own = dijkstra(own_cs, directed=False, indices=own_rows[src])[:, own_rows]
        l_other = np.full_like(l_own, np.inf)
        ok = present[src]
        if ok.any():
            d = dijkstra(other_cs, directed=False, indices=other_rows[src[ok]])
            l_other[ok] = np.where(present[None, :], d[:, np.where(present, other_rows, 0)], np.inf)
        valid = np.isfinite(l_own) & (l_own >= APLS_MIN_PATH_M)
        valid[np.arange(len(src)), src] = False
        with np.errstate(invalid="ignore"):
            diff = np.minimum(1.0, np.abs(l_own - l_other) / l_own)
        diff = np.where(np.isfinite(l_other), diff, 1.0)
        total += float(diff[valid].sum())
        pairs += int(valid.sum())
    return total, pairs


def _apls_default(pred: LaneArrays, gt: LaneArrays, max_sources: int | None, seed: int) -> float:
    from drivemetrics.graph.geometry import graph_arrays, graph_from_arrays, validate_graph

    g_gt = validate_graph(graph_from_arrays(gt.pos * METRES_PER_PX, gt.edges), "target")
    g_pred = validate_graph(graph_from_arrays(pred.pos * METRES_PER_PX, pred.edges), "preds")
    if not g_gt.number_of_edges() or not g_pred.number_of_edges():
        return 0.0
    a_gt, a_pred = graph_arrays(g_gt), graph_arrays(g_pred)
    cp_gt = _apls_control_points(a_gt.pos, a_gt.edges, APLS_SPACING_M)
    cp_pred = _apls_control_points(a_pred.pos, a_pred.edges, APLS_SPACING_M)
    gt2, rows_gt_own = _snap_rows(g_gt, cp_gt, 1e-6)  # own control points lie on the graph
    gt2, rows_gt_other = _snap_rows(gt2, cp_pred, APLS_SNAP_M)  # rows of the first insertion stay valid
    pred2, rows_pred_own = _snap_rows(g_pred, cp_pred, 1e-6)
    pred2, rows_pred_other = _snap_rows(pred2, cp_gt, APLS_SNAP_M)
    rng = np.random.default_rng(seed)

    def sources(n: int) -> np.ndarray:
        if max_sources is not None and n > max_sources:
            return np.sort(rng.choice(n, size=max_sources, replace=False))
        return np.arange(n)

    d_gp, n_gp = _apls_one_way(gt2, rows_gt_own, pred2, rows_pred_other, sources(len(cp_gt)))
    d_pg, n_pg = _apls_one_way(pred2, rows_pred_own, gt2, rows_gt_other, sources(len(cp_pred)))
    c_gp = 1.0 - d_gp / n_gp if n_gp else 0.0
    c_pg = 1.0 - d_pg / n_pg if n_pg else 0.0
    return 2 * c_gp * c_pg / (c_gp + c_pg) if c_gp > 0 and c_pg > 0 else 0.0


def _geos_point_segment(p: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distance of point ``p`` to segments ``a -> b`` ``(E, 2)``, computed as GEOS (shapely) does."""
    d = b - a
    len2 = d[:, 0] * d[:, 0] + d[:, 1] * d[:, 1]
    safe = np.where(len2 > 0, len2, 1.0)
    r = ((p[0] - a[:, 0]) * d[:, 0] + (p[1] - a[:, 1]) * d[:, 1]) / safe
    s = ((a[:, 1] - p[1]) * d[:, 0] - (a[:, 0] - p[0]) * d[:, 1]) / safe
    to_a = np.sqrt((p[0] - a[:, 0]) ** 2 + (p[1] - a[:, 1]) ** 2)
    to_b = np.sqrt((p[0] - b[:, 0]) ** 2 + (p[1] - b[:, 1]) ** 2)
    perp = np.abs(s) * np.sqrt(len2)
    return np.where((len2 <= 0) | (r <= 0), to_a, np.where(r >= 1, to_b, perp))


def _reference_insert(graph: nx.Graph, xy: dict, points: list, max_dist: float) -> nx.Graph:
    """The evaluator's ``insert_control_points`` (exact nearest edge, relabelling on coincident nodes).

    ``points`` are ``(node_id, x, y)``; ``xy`` maps node id -> position and receives the new nodes. Raises
    ``ValueError`` when the graph has nodes but no edge (``np.argmin`` of an empty list in the evaluator).
    """
    out = graph.copy()
    if out.number_of_nodes() == 0:
        return out
    for node_id, x, y in points:
        edges = list(out.edges())
        if not edges:
            raise ValueError("attempt to get argmin of an empty sequence")
        a = np.array([xy[u] for u, _ in edges], dtype=np.float64)
        b = np.array([xy[v] for _, v in edges], dtype=np.float64)
        p = np.array([x, y], dtype=np.float64)
        dist = _geos_point_segment(p, a, b)
        k = int(np.argmin(dist))
        if dist[k] > max_dist or node_id in out:
            continue
        u, v = edges[k]
        a_k, b_k = a[k], b[k]
        d = b_k - a_k
        len2 = float(d @ d)
        seg_len = math.sqrt(len2)
        if len2 <= 0 or (p == a_k).all():
            frac = 0.0
        elif (p == b_k).all():
            frac = 1.0
        else:
            frac = min(1.0, max(0.0, float(((p - a_k) @ d) / len2)))
        proj = frac * seg_len
        if proj <= 0.0 or proj >= seg_len:  # coincident with an end node: relabel it
            foot = a_k if proj <= 0.0 else b_k
            if abs(foot[0] - xy[u][0]) <= 0.05 and abs(foot[1] - xy[u][1]) <= 0.05:
                node = u
            elif abs(foot[0] - xy[v][0]) <= 0.05 and abs(foot[1] - xy[v][1]) <= 0.05:
                node = v
            else:
                continue
            out = nx.relabel_nodes(out, {node: node_id})
            xy[node_id] = xy[node]
            continue
        xy[node_id] = (float(a_k[0] + frac * d[0]), float(a_k[1] + frac * d[1]))
        out.add_node(node_id)
        out.add_edge(u, node_id)
        out.add_edge(node_id, v)
        out.remove_edge(u, v)
    return out


def _dist_matrix(graph: nx.Graph, xy: dict, sources: list, targets: list) -> np.ndarray:
    """Shortest-path lengths ``len(sources) x len(targets)``; ids absent from ``graph`` give rows / columns of inf."""
    nodes = list(graph.nodes)
    index = {n: i for i, n in enumerate(nodes)}
    pos = np.array([xy[n] for n in nodes], dtype=np.float64).reshape(-1, 2)
    edges = np.array([(index[u], index[v]) for u, v in graph.edges()], dtype=np.int64).reshape(-1, 2)
    out = np.full((len(sources), len(targets)), np.inf)
    src_rows = np.array([index.get(s, -1) for s in sources], dtype=np.int64)
    tgt_rows = np.array([index.get(t, -1) for t in targets], dtype=np.int64)
    ok_s, ok_t = src_rows >= 0, tgt_rows >= 0
    if ok_s.any() and ok_t.any():
        d = dijkstra(_length_graph(pos, edges), directed=False, indices=src_rows[ok_s])
        out[np.ix_(ok_s, ok_t)] = d[:, tgt_rows[ok_t]]
    return out


def _reference_one_way(native: np.ndarray, prime: np.ndarray, present: np.ndarray) -> float:
    """The evaluator's ``path_sim_metric`` from native ``N x N`` and prime lengths; returns C (0 without paths)."""
    reach = np.isfinite(native)
    np.fill_diagonal(reach, False)
    missing_rows = ~present
    n_missing = int(reach[missing_rows].sum())  # a missing source: every reachable end counts 1, no length rule
    valid = np.isfinite(native) & (native >= APLS_MIN_PATH_M) & present[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        diff = np.minimum(1.0, np.abs(native - prime) / native)
    diff = np.where(np.isfinite(prime), diff, 1.0)
    count = n_missing + int(valid.sum())
    if count == 0:
        return 0.0
    return 1.0 - (n_missing + float(diff[valid].sum())) / count


def _apls_reference(pred: LaneArrays, gt: LaneArrays) -> float:
    if len(gt.nodes) >= APLS_REFERENCE_MAX_NODES:  # make_graphs_yuge: random.sample(G.nodes()) fails, caught: 0
        return 0.0
    if not len(gt.nodes) or not len(pred.nodes):
        return 0.0
    n_gt = len(gt.nodes)
    xy: dict = {}
    graphs = []
    for arr, offset in ((gt, 0), (pred, n_gt)):
        digraph = nx.DiGraph()
        digraph.add_nodes_from(range(offset, offset + len(arr.nodes)))
        digraph.add_edges_from((arr.edges + offset).tolist())
        graphs.append(digraph.to_undirected())
        scaled = arr.pos * METRES_PER_PX
        xy.update({offset + i: (float(x), float(y)) for i, (x, y) in enumerate(scaled.tolist())})
    g_gt, g_pred = graphs
    ids_gt, ids_pred = list(g_gt.nodes), list(g_pred.nodes)
    xy_pred, xy_gt = dict(xy), dict(xy)  # the insertions give the other graph's ids new positions
    try:
        pred_prime = _reference_insert(g_pred, xy_pred, [(n, *xy[n]) for n in ids_gt], APLS_SNAP_M)
        gt_prime = _reference_insert(g_gt, xy_gt, [(n, *xy[n]) for n in ids_pred], APLS_SNAP_M)
    except ValueError:
        return 0.0
    c_gp = _reference_one_way(
        _dist_matrix(g_gt, xy, ids_gt, ids_gt),
        _dist_matrix(pred_prime, xy_pred, ids_gt, ids_gt),
        np.array([n in pred_prime for n in ids_gt]),
    )
    c_pg = _reference_one_way(
        _dist_matrix(g_pred, xy, ids_pred, ids_pred),
        _dist_matrix(gt_prime, xy_gt, ids_pred, ids_pred),
        np.array([n in gt_prime for n in ids_pred]),
    )
    if c_gp <= 0 or c_pg <= 0 or math.isnan(c_gp) or math.isnan(c_pg):
        return 0.0
    values = np.array([c_gp, c_pg])
    return float(len(values) / np.sum(1.0 / values))


def lanegraph_apls(
    preds: nx.DiGraph, target: nx.DiGraph, compat: str | None = None, max_sources: int | None = 500, seed: int = 0
) -> float:
    """APLS with the UrbanLaneGraph parameters (0.15 m/px, 5 m snapping, 20 m minimum path, harmonic mean).

    Default: every node plus points every 10 m on edges longer than 7.5 m are control points (CosmiQ's rule), the
    graphs are validated (duplicate positions merged), at most ``max_sources`` control points per direction (seeded
    draw, every control point a target) start paths. 0 when either graph has no edge.
    ``compat="reference"``: the evaluator's numbers (every node a control point, no midpoints, relabelling on
    coincident nodes, a missing source scoring 1 for every reachable end; 0 for GTs of 2,000 nodes or more).
    """
    compat = check_compat(compat)
    pred, gt = _arrays(preds, "preds"), _arrays(target, "target")
    if compat == "reference":
        return _apls_reference(pred, gt)
    return _apls_default(pred, gt, max_sources, seed)


# ---------------------------------------------------------------------------------------------------------------
# planning


class ReferencePlanningRandom:
    """The evaluator's global random streams: ``random.seed(0)`` and ``np.random.seed(0)`` at import, consumed by
    every planning sample in evaluation order (pass one instance through all samples of a run)."""

    def __init__(self) -> None:
        import random

        self.python = random.Random(0)
        self.numpy = np.random.RandomState(0)


def _resample_path(path: np.ndarray, n: int = 100) -> np.ndarray:
    """``path`` ``(K, 2)`` resampled to ``n`` points linearly by index (as ``interp1d`` over ``arange(K)``)."""
    s = np.linspace(0, len(path) - 1, n)
    idx = np.arange(len(path))
    return np.stack([np.interp(s, idx, path[:, 0]), np.interp(s, idx, path[:, 1])], axis=1)


def _path_metrics(path_gt: np.ndarray, path_pred: np.ndarray) -> tuple[float, float]:
    gt = _resample_path(path_gt)
    pred = _resample_path(path_pred)
    dist = np.linalg.norm(gt[:, None, :] - pred[None, :, :], axis=-1)
    return float(np.mean(dist.min(axis=1))), float(np.linalg.norm(gt[-1] - pred[-1]))


def _closest(pos: np.ndarray, point: np.ndarray, n: int = 5) -> np.ndarray:
    dist = np.linalg.norm(pos - point[None, :], axis=1).reshape(-1, 1)
    return np.argsort(dist, axis=0)[:n].reshape(-1)


def _summarise_plans(results: list, attempts_with_gt: int, total_attempts: int, compat: str | None) -> dict:
    if compat == "reference":
        if total_attempts == 0 or not results:  # the evaluator crashes (ZeroDivisionError / IndexError)
            return {"mmd": math.nan, "med": math.nan, "sr": math.nan}
        successes = sum(ok for _, _, ok in results)
        return {
            "mmd": float(np.mean([m for m, _, _ in results])),
            "med": float(np.mean([e for _, e, _ in results])),
            "sr": successes / total_attempts,
        }
    if not results:
        return {"mmd": math.nan, "med": math.nan, "sr": math.nan}
    return {
        "mmd": float(np.mean([m for m, _, _ in results])),
        "med": float(np.mean([e for _, e, _ in results])),
        "sr": sum(ok for _, _, ok in results) / attempts_with_gt,
    }


def _planning_reference(g_gt: nx.DiGraph, g_pred: nx.DiGraph, rand: ReferencePlanningRandom, attempts: int) -> dict:
    gt, pred = lane_arrays(g_gt, "target"), lane_arrays(g_pred, "preds")
    gt_nodes, pred_nodes = gt.nodes, pred.nodes
    results: list = []
    total = 0
    for _ in range(attempts):
        start = rand.python.choice(gt_nodes)
        cur = start
        steps = 0
        while steps < 100:
            succ = list(g_gt.successors(cur))
            if not succ:
                break
            cur = succ[rand.numpy.randint(0, len(succ))]
            steps += 1
        if steps < 50:
            continue
        p_start = np.asarray(g_gt.nodes[start]["pos"], dtype=np.float64)
        p_end = np.asarray(g_gt.nodes[cur]["pos"], dtype=np.float64)

        def plan(graph: nx.DiGraph, arr: LaneArrays, nodes: list, a: np.ndarray, b: np.ndarray) -> list | None:
            if not len(nodes):
                return None
            for ns in _closest(arr.pos, a).tolist():
                for ne in _closest(arr.pos, b).tolist():
                    try:
                        return nx.shortest_path(graph, nodes[ns], nodes[ne])
                    except nx.NetworkXNoPath:
                        pass
            return None

        total += 1
        path_gt = plan(g_gt, gt, gt_nodes, p_start, p_end)
        if path_gt is None:
            continue
        path_pred = plan(g_pred, pred, pred_nodes, p_start, p_end)
        if path_pred is None or len(path_pred) < 2:
            results.append((PLANNING_FAIL, PLANNING_FAIL, False))
            continue
        idx_gt = {n: i for i, n in enumerate(gt_nodes)}
        idx_pred = {n: i for i, n in enumerate(pred_nodes)}
        mmd, med = _path_metrics(gt.pos[[idx_gt[n] for n in path_gt]], pred.pos[[idx_pred[n] for n in path_pred]])
        results.append((mmd, med, True))
    return _summarise_plans(results, 0, total, "reference")


def _directed_graph(arr: LaneArrays) -> csr_matrix:
    n = len(arr.pos)
    e = arr.edges[arr.edges[:, 0] != arr.edges[:, 1]] if len(arr.edges) else arr.edges
    w = np.maximum(np.linalg.norm(arr.pos[e[:, 1]] - arr.pos[e[:, 0]], axis=1), 1e-12)
    mat = csr_matrix((w, (e[:, 0], e[:, 1])), shape=(n, n))
    mat.sum_duplicates()
    return mat


def _shortest_path(graph: csr_matrix, starts: np.ndarray, ends: np.ndarray) -> np.ndarray | None:
    """Rows of the length-weighted shortest path from the first start (in order) reaching an end (in order)."""
    dist, pred = dijkstra(graph, directed=True, indices=starts, return_predecessors=True)
    for i in range(len(starts)):
        for e in ends.tolist():
            if np.isfinite(dist[i, e]):
                path = [e]
                while path[-1] != starts[i]:
                    path.append(int(pred[i, path[-1]]))
                return np.array(path[::-1])
    return None


def _planning_default(gt: LaneArrays, pred: LaneArrays, seed: int | Sequence[int], attempts: int) -> dict:
    rng = np.random.default_rng(seed)
    n = len(gt.nodes)
    if n == 0:
        return {"mmd": math.nan, "med": math.nan, "sr": math.nan}
    order = np.argsort(gt.edges[:, 0], kind="stable") if len(gt.edges) else np.empty(0, dtype=np.int64)
    succ = gt.edges[order, 1] if len(gt.edges) else np.empty(0, dtype=np.int64)
    first = np.searchsorted(gt.edges[order, 0], np.arange(n + 1)) if len(gt.edges) else np.zeros(n + 1, np.int64)
    g_gt, g_pred = _directed_graph(gt), _directed_graph(pred)
    results: list = []
    with_gt = 0
    for _ in range(attempts):
        start = int(rng.integers(n))
        cur, steps = start, 0
        while steps < 100:  # kept when at least 50 steps were walked (the evaluator: loop index j >= 50)
            k = first[cur + 1] - first[cur]
            if k == 0:
                break
            cur = int(succ[first[cur] + rng.integers(k)])
            steps += 1
        if steps < 50:
            continue
        p_start, p_end = gt.pos[start], gt.pos[cur]
        path_gt = _shortest_path(g_gt, _closest(gt.pos, p_start), _closest(gt.pos, p_end))
        if path_gt is None or len(path_gt) < 2:  # no route on the GT (or the walk came back to its start)
            continue
        with_gt += 1
        path_pred = None
        if len(pred.nodes):
            path_pred = _shortest_path(g_pred, _closest(pred.pos, p_start), _closest(pred.pos, p_end))
        if path_pred is None or len(path_pred) < 2:
            results.append((PLANNING_FAIL, PLANNING_FAIL, False))
            continue
        mmd, med = _path_metrics(gt.pos[path_gt], pred.pos[path_pred])
        results.append((mmd, med, True))
    return _summarise_plans(results, with_gt, attempts, None)


def planning(
    preds: nx.DiGraph,
    target: nx.DiGraph,
    compat: str | None = None,
    seed: int | Sequence[int] = 0,
    attempts: int = 100,
    reference_random: ReferencePlanningRandom | None = None,
) -> dict[str, float]:
    """Planning metrics ``{"mmd", "med", "sr"}`` (pixels, pixels, fraction) of a predicted lane graph.

    Each of ``attempts`` tries draws a GT start node and random-walks successors for up to 100 steps (kept when the
    walk lasts >= 50 steps); the 5 nodes nearest to the start / end positions in each graph are tried in order and
    the first connected pair gives the path. Default: seeded (``seed``), length-weighted paths, SR over the
    attempts with a GT path, NaN when no attempt has one. ``compat="reference"``: the evaluator's global random
    streams (``reference_random``, fresh if None), hop-count ``nx.shortest_path``, SR over all kept walks.
    """
    compat = check_compat(compat)
    if attempts < 1:
        raise ValueError(f"`attempts` must be >= 1, got {attempts}")
    if compat == "reference":
        lane_arrays(target, "target")
        return _planning_reference(target, preds, reference_random or ReferencePlanningRandom(), attempts)
    return _planning_default(_arrays(target, "target"), _arrays(preds, "preds"), seed, attempts)


# ---------------------------------------------------------------------------------------------------------------
# one sample


def evaluate_lanegraph_pair(
    preds: nx.DiGraph,
    target: nx.DiGraph,
    task: str = "successor",
    compat: str | None = None,
    apls_max_sources: int | None = 500,
    seed: int = 0,
) -> dict[str, float]:
    """Every lane-graph metric of one sample: ``{m: value for m in LANE_METRICS}`` (NaN where undefined).

    ``task``: ``"successor"`` (256 x 256 crops) or ``"full"`` (5000 x 5000 tiles; only the reference mode's IoU
    canvas and SDA depend on it: the evaluator reports no SDA for full tiles, so it is NaN there). With
    ``compat="reference"`` and the successor task, ``geo_precision`` is what the evaluator reports under
    "GEO Precision": its TOPO precision.
    """
    compat = check_compat(compat)
    if task not in ("successor", "full"):
        raise ValueError(f"`task` must be 'successor' or 'full' here, got {task!r} (planning: use planning())")
    pred, gt = lane_arrays(preds, "preds"), lane_arrays(target, "target")
    area = (256, 256) if task == "successor" else (5000, 5000)
    out = {"sda20": sda(pred, gt, 20.0), "sda50": sda(pred, gt, 50.0)}
    out["iou"] = graph_iou(pred, gt, area, 10.0, compat)
    out["apls"] = lanegraph_apls(pred, gt, compat, apls_max_sources, seed)
    out.update(geo_topo(pred, gt, compat))
    if compat == "reference" and task == "successor":
        out["geo_precision"] = out["topo_precision"]
    if compat == "reference" and task == "full":  # the evaluator does not report SDA for full tiles
        out["sda20"] = out["sda50"] = math.nan
    return {k: float(out[k]) for k in LANE_METRICS}


def missing_sample_values(task: str, compat: str | None) -> dict[str, float]:
    """What a sample without prediction scores in the reference mode: 0.0 for every metric, MMD / MED included
    (the evaluator's documentation says 5000; the default mode scores the sample as an empty prediction)."""
    keys = PLANNING_METRICS if task == "planning" else LANE_METRICS
    return dict.fromkeys(keys, 0.0)
