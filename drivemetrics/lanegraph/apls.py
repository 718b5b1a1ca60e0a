"""APLS with the UrbanLaneGraph parameter set, on the one APLS core (:mod:`drivemetrics.graph.path_similarity`)."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
from scipy.sparse.csgraph import dijkstra
from torch import Tensor

from drivemetrics._internal.compat import Compat, check_compat
from drivemetrics._internal.validation import check_graph
from drivemetrics.graph.geometry import index_in_group
from drivemetrics.graph.path_similarity import apls_scores, path_differences
from drivemetrics.lanegraph.geometry import (
    APLS_MIN_PATH_M,
    APLS_REFERENCE_MAX_NODES,
    APLS_SNAP_M,
    APLS_SPACING_M,
    METRES_PER_PX,
    LaneArrays,
    as_lane_arrays,
    as_scalar,
    length_graph,
)

__all__ = ["lanegraph_apls"]

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


def _apls_default(pred: LaneArrays, gt: LaneArrays, max_sources: int | None, seed: int) -> float:
    """The one APLS core (:func:`~drivemetrics.graph.path_similarity.path_differences`) with the UrbanLaneGraph
    parameter set, on graphs in metres whose control points are every node plus CosmiQ's per-edge midpoints."""
    from drivemetrics.graph.geometry import graph_arrays, graph_from_arrays, validate_graph

    g_gt = validate_graph(graph_from_arrays(gt.pos * METRES_PER_PX, gt.edges), "target")
    g_pred = validate_graph(graph_from_arrays(pred.pos * METRES_PER_PX, pred.edges), "preds")
    if not g_gt.number_of_edges() or not g_pred.number_of_edges():
        return 0.0
    a_gt, a_pred = graph_arrays(g_gt), graph_arrays(g_pred)
    cp_gt = _apls_control_points(a_gt.pos, a_gt.edges, APLS_SPACING_M)
    cp_pred = _apls_control_points(a_pred.pos, a_pred.edges, APLS_SPACING_M)
    sums = path_differences(g_gt, g_pred, cp_gt, cp_pred, APLS_SNAP_M, APLS_MIN_PATH_M, False, max_sources, seed)
    return apls_scores(*sums)[0]


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
    """Shortest-path lengths ``(len(sources), len(targets))``; ids absent from ``graph`` give rows / columns of inf."""
    nodes = list(graph.nodes)
    index = {n: i for i, n in enumerate(nodes)}
    pos = np.array([xy[n] for n in nodes], dtype=np.float64).reshape(-1, 2)
    edges = np.array([(index[u], index[v]) for u, v in graph.edges()], dtype=np.int64).reshape(-1, 2)
    out = np.full((len(sources), len(targets)), np.inf)
    src_rows = np.array([index.get(s, -1) for s in sources], dtype=np.int64)
    tgt_rows = np.array([index.get(t, -1) for t in targets], dtype=np.int64)
    ok_s, ok_t = src_rows >= 0, tgt_rows >= 0
    if ok_s.any() and ok_t.any():
        d = dijkstra(length_graph(pos, edges), directed=False, indices=src_rows[ok_s])
        out[np.ix_(ok_s, ok_t)] = d[:, tgt_rows[ok_t]]
    return out


def _reference_one_way(native: np.ndarray, prime: np.ndarray, present: np.ndarray) -> float:
    """The evaluator's ``path_sim_metric`` from native ``(N, N)`` and prime lengths; returns C (0 without paths)."""
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
    preds: nx.DiGraph,
    target: nx.DiGraph,
    *,
    compat: Compat = "default",
    max_sources: int | None = 500,
    seed: int = 0,
    validate_args: bool = True,
) -> Tensor:
    """APLS with the UrbanLaneGraph parameters (0.15 m/px, 5 m snapping, 20 m minimum path, harmonic mean).

    Default: every node plus points every 10 m on edges longer than 7.5 m are control points (CosmiQ's rule), the
    graphs are validated (duplicate positions merged), at most ``max_sources`` control points per direction (seeded
    draw, every control point a target) start paths. 0 when either graph has no edge.
    ``compat="reference"``: the evaluator's numbers (every node a control point, no midpoints, relabelling on
    coincident nodes, a missing source scoring 1 for every reachable end; 0 for GTs of 2,000 nodes or more).

    ``validate_args`` checks that both are networkx graphs whose nodes carry a finite ``pos`` within
    ``max_abs_coordinate`` (the graph readers' limit).

    Examples:
        >>> import networkx as nx, numpy as np
        >>> from drivemetrics.functional import lanegraph_apls
        >>> g = nx.DiGraph([(0, 1), (1, 2), (1, 3)])
        >>> xy = {0: (10.0, 10.0), 1: (60.0, 10.0), 2: (120.0, 10.0), 3: (120.0, 60.0)}
        >>> nx.set_node_attributes(g, {n: np.array(p) for n, p in xy.items()}, "pos")
        >>> lanegraph_apls(g, g)
        tensor(1., dtype=torch.float64)
    """
    if validate_args:
        check_graph(preds, "preds")
        check_graph(target, "target")
    check_compat(compat)
    pred, gt = as_lane_arrays(preds, "preds"), as_lane_arrays(target, "target")
    if compat == "reference":
        return as_scalar(_apls_reference(pred, gt))
    return as_scalar(_apls_default(pred, gt, max_sources, seed))
