"""Geometry helpers shared by every road-network metric (each written once, used everywhere).

Shared by ``roadnet`` and ``lanegraph`` (the one lower package both import: no domain imports another). Graphs
follow the representation of :mod:`drivemetrics.roadnet.io`: an undirected :class:`networkx.Graph` whose nodes
carry ``pos = (x, y)`` (pixels, or metres). Functions never modify their input graphs.

- :func:`node_positions`: the nodes of a graph and their checked positions ``(N, 2)``.
- :func:`validate_graph`: the input check and clean-up every metric runs first.
- :func:`graph_arrays`: node positions ``(N, 2)`` and edge index pairs ``(E, 2)`` as numpy arrays.
- :func:`densify`: insert nodes so that no edge is longer than a spacing.
- :class:`SegmentIndex` / :func:`project_points`: nearest edge of many points (KD-tree over short edge pieces, then a
  vectorised exact point-to-segment projection), or every edge within a radius.
- :func:`snap_points`: project points and insert them as nodes (splitting edges).
- :func:`crop`: clip a graph to a window shrunk by a border, cutting edges at the window boundary.
- :func:`junctions`, :func:`endpoints`, :func:`control_nodes`: nodes of degree >= 3, == 1, != 2.
- :func:`resample_chains`: re-place the nodes of every chain between control nodes at a regular spacing.
- :func:`max_matching_min_cost` / :func:`match_points`: one-to-one matching (maximum cardinality, then minimum total
  cost) of candidate pairs, solved per independent group with ``scipy.optimize.linear_sum_assignment``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import networkx as nx
import numpy as np
from scipy.optimize import linear_sum_assignment
from scipy.sparse import coo_matrix, csr_matrix
from scipy.sparse.csgraph import connected_components
from scipy.spatial import cKDTree

from drivemetrics._internal.compat import Compat, check_compat
from drivemetrics._internal.limits import short_repr

if TYPE_CHECKING:
    from torch import Tensor

__all__ = [
    "CHUNK",
    "GraphArrays",
    "PointMatching",
    "Projection",
    "SegmentIndex",
    "control_nodes",
    "crop",
    "dense_arrays",
    "densify",
    "densify_arrays",
    "endpoints",
    "f1_from",
    "graph_arrays",
    "graph_from_arrays",
    "graph_length",
    "graph_pairs",
    "junctions",
    "length_csgraph",
    "match_points",
    "max_matching_min_cost",
    "node_positions",
    "project_points",
    "resample_chains",
    "road_chains",
    "safe_ratio",
    "snap_points",
    "translate",
    "validate_graph",
]


def node_positions(
    graph: nx.Graph, name: str, pos_key: str = "pos", allow_extra: bool = False
) -> tuple[list[Any], np.ndarray]:
    """The nodes of ``graph`` (in its order) and their positions ``(N, 2)`` float64, checked.

    Every node needs ``pos_key`` holding two finite numbers (``allow_extra``: the first two of a longer sequence);
    otherwise a ``ValueError`` names ``name``, the node and the value (abbreviated).
    """
    nodes = list(graph.nodes)
    pos = np.empty((len(nodes), 2), dtype=np.float64)
    for i, n in enumerate(nodes):
        attrs = graph.nodes[n]
        if pos_key not in attrs:
            raise ValueError(f"`{name}` node {short_repr(n)} has no '{pos_key}' attribute (expected {pos_key}=(x, y))")
        try:
            p = np.asarray(attrs[pos_key], dtype=np.float64).reshape(-1)
        except (TypeError, ValueError):
            p = np.empty(0)
        if p.shape[0] < 2 or (p.shape[0] > 2 and not allow_extra):
            raise ValueError(
                f"`{name}` node {short_repr(n)}: '{pos_key}' must be two finite numbers (x, y); got "
                f"{short_repr(attrs[pos_key])}, not two numbers"
            )
        pos[i] = p[:2]
    bad = ~np.isfinite(pos).all(axis=1)
    if bad.any():
        n = nodes[int(np.flatnonzero(bad)[0])]
        raise ValueError(
            f"`{name}` has {int(bad.sum())} node(s) with NaN or infinite '{pos_key}' (it must be two finite numbers), "
            f"e.g. node {short_repr(n)}"
        )
    return nodes, pos


#: How OPT-G / OPT-J pair points: the optimal one-to-one assignment or the greedy one of the released tools.
PointMatching = Literal["optimal", "greedy"]


@dataclass(frozen=True)
class GraphArrays:
    """Array view of a graph: ``nodes[i]`` is the node id of row ``i`` of ``pos`` ``(N, 2)``; ``edges`` ``(E, 2)`` holds
    row indices (int64) in the order of ``graph.edges``."""

    nodes: list
    pos: np.ndarray
    edges: np.ndarray

    @property
    def lengths(self) -> np.ndarray:
        """Edge lengths ``(E,)`` in the units of ``pos``."""
        return np.linalg.norm(self.pos[self.edges[:, 1]] - self.pos[self.edges[:, 0]], axis=1)


def graph_arrays(graph: nx.Graph) -> GraphArrays:
    """Node positions and edges of ``graph`` as arrays (see :class:`GraphArrays`)."""
    nodes = list(graph.nodes)
    index = {n: i for i, n in enumerate(nodes)}
    pos = np.array([graph.nodes[n]["pos"][:2] for n in nodes], dtype=np.float64).reshape(-1, 2)
    edges = np.array([(index[u], index[v]) for u, v in graph.edges], dtype=np.int64).reshape(-1, 2)
    return GraphArrays(nodes, pos, edges)


def graph_from_arrays(pos: np.ndarray, edges: np.ndarray) -> nx.Graph:
    """Graph with nodes ``0..N-1`` at ``pos`` ``(N, 2)`` and the edges ``(E, 2)`` (self-loops dropped)."""
    graph = nx.Graph()
    graph.add_nodes_from((i, {"pos": (x, y)}) for i, (x, y) in enumerate(np.asarray(pos, dtype=np.float64).tolist()))
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    graph.add_edges_from(edges[edges[:, 0] != edges[:, 1]].tolist())
    return graph


def graph_length(graph: nx.Graph) -> float:
    """Total edge length of ``graph`` (units of ``pos``)."""
    return float(graph_arrays(graph).lengths.sum())


def result_tensors(result: object) -> dict[str, Tensor]:
    """A kernel's result as ``dict[str, Tensor]``: 0-d float64 tensors for scores, 0-d int64 tensors for counts.

    ``result`` is a per-tile result record (its ``as_dict()`` when it has one, else its fields).
    """
    import torch

    values = result.as_dict() if hasattr(result, "as_dict") else dataclasses.asdict(result)  # type: ignore[call-overload]
    out = {}
    for key, value in values.items():
        is_count = isinstance(value, (int, np.integer)) and not isinstance(value, bool)
        out[key] = torch.tensor(value, dtype=torch.int64 if is_count else torch.float64)
    return out


def index_in_group(counts: np.ndarray) -> np.ndarray:
    """For consecutive groups of ``counts[g]`` items, each item's index inside its group: ``[2, 3] -> [0, 1, 0, 1, 2]``
    (``concatenate([arange(c) for c in counts])`` without a Python loop)."""
    counts = np.asarray(counts, dtype=np.int64)
    return np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)


def validate_graph(
    graph: object, name: str, *, allow_empty: bool = True, merge_duplicates: bool = True, keep_isolated: bool = False
) -> nx.Graph:
    """Check a road graph and return a clean copy; every metric calls this on its inputs.

    Checks (each failure raises naming ``name``): ``graph`` is a networkx graph; every node has ``pos`` with two
    finite numbers; unless ``allow_empty``, the graph has at least one edge.

    Clean-up (documented values, no error): directed / multi graphs become undirected simple graphs; self-loops are
    dropped (they have no extent); with ``merge_duplicates`` nodes at exactly the same position are merged into one
    (their edges are kept); isolated nodes are dropped unless ``keep_isolated``. Disconnected components are fine.
    Node ids become ``0..N-1`` (the original id is in ``"source_id"``) and ``pos`` a tuple of floats.
    """
    if not isinstance(graph, nx.Graph):
        raise TypeError(f"`{name}` must be a networkx graph, got {type(graph).__name__}")
    nodes, pos = node_positions(graph, name)
    index = {n: i for i, n in enumerate(nodes)}
    edges = np.array([(index[u], index[v]) for u, v in graph.edges()], dtype=np.int64).reshape(-1, 2)
    if merge_duplicates and len(pos):
        _, first, inverse = np.unique(pos, axis=0, return_index=True, return_inverse=True)
        rep = first[inverse.reshape(-1)]  # every node -> first node at the same position
        edges = rep[edges]
        keep_nodes = np.zeros(len(nodes), dtype=bool)
        keep_nodes[first] = True
    else:
        keep_nodes = np.ones(len(nodes), dtype=bool)
    edges = edges[edges[:, 0] != edges[:, 1]]
    if not keep_isolated:
        used = np.zeros(len(nodes), dtype=bool)
        used[edges.reshape(-1)] = True
        keep_nodes &= used
    new_id = np.full(len(nodes), -1, dtype=np.int64)
    kept = np.flatnonzero(keep_nodes)
    new_id[kept] = np.arange(len(kept))
    out = nx.Graph()
    out.add_nodes_from((j, {"pos": tuple(pos[i].tolist()), "source_id": nodes[i]}) for j, i in enumerate(kept))
    out.add_edges_from(new_id[edges].tolist())
    if not allow_empty and out.number_of_edges() == 0:
        raise ValueError(f"`{name}` graph is empty (no edges); a non-empty graph is required")
    return out


def densify_arrays(pos: np.ndarray, edges: np.ndarray, spacing: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Split every edge into ``ceil(length / spacing)`` equal pieces.

    Returns ``(pos2, edges2, parent)``: the original nodes come first in ``pos2`` (same rows), new nodes after them;
    ``parent[k]`` is the index of the original edge that piece ``k`` of ``edges2`` belongs to.
    """
    if not spacing > 0:
        raise ValueError(f"`spacing` must be > 0, got {spacing}")
    pos = np.asarray(pos, dtype=np.float64).reshape(-1, 2)
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    a, b = pos[edges[:, 0]], pos[edges[:, 1]]
    pieces = np.maximum(1, np.ceil(np.linalg.norm(b - a, axis=1) / spacing - 1e-9).astype(np.int64))
    n_new = pieces - 1
    parent_new = np.repeat(np.arange(len(edges)), n_new)
    offsets = np.cumsum(n_new) - n_new  # first new-node slot of each edge
    step = np.arange(int(n_new.sum())) - np.repeat(offsets, n_new) + 1  # 1..k-1 within each edge
    t = step / np.repeat(pieces, n_new)
    new_pos = a[parent_new] + t[:, None] * (b - a)[parent_new]
    # chain of each edge: start, new nodes..., end
    chain_start = np.repeat(edges[:, 0], pieces)
    parent = np.repeat(np.arange(len(edges)), pieces)
    k_in_edge = index_in_group(pieces)
    first_new = len(pos) + np.repeat(offsets, pieces)
    src = np.where(k_in_edge == 0, chain_start, first_new + k_in_edge - 1)
    last = k_in_edge == np.repeat(pieces, pieces) - 1
    dst = np.where(last, np.repeat(edges[:, 1], pieces), first_new + k_in_edge)
    return np.concatenate([pos, new_pos]), np.stack([src, dst], axis=1), parent


def densify(graph: nx.Graph, spacing: float) -> nx.Graph:
    """A copy of ``graph`` with nodes inserted so that no edge is longer than ``spacing`` (units of ``pos``).

    Each edge of length ``L`` is split into ``ceil(L / spacing)`` equal pieces. Original nodes keep their ids and
    attributes; new nodes get ids after ``max(id) + 1`` (integer ids) and ``pos`` only.
    """
    arrays = graph_arrays(graph)
    pos2, edges2, _ = densify_arrays(arrays.pos, arrays.edges, spacing)
    out = nx.Graph()
    out.add_nodes_from(graph.nodes(data=True))
    out.graph.update(graph.graph)
    n_old = len(arrays.nodes)
    start = (max((n for n in arrays.nodes if isinstance(n, (int, np.integer))), default=-1)) + 1
    ids = list(arrays.nodes) + list(range(start, start + len(pos2) - n_old))
    out.add_nodes_from(
        (ids[i], {"pos": tuple(p)}) for i, p in zip(range(n_old, len(pos2)), pos2[n_old:].tolist(), strict=True)
    )
    out.add_edges_from((ids[u], ids[v]) for u, v in edges2.tolist())
    return out


@dataclass(frozen=True)
class Projection:
    """Points projected onto a graph's edges; rows with no edge in range have ``edge = -1`` and NaN values.

    ``edge`` indexes :attr:`SegmentIndex.edges`; ``t`` in ``[0, 1]`` is the position along it from ``edges[e, 0]``;
    ``foot`` ``(N, 2)`` the closest point; ``distance`` the Euclidean distance to it.
    """

    edge: np.ndarray
    t: np.ndarray
    foot: np.ndarray
    distance: np.ndarray


def _project_on_segments(points: np.ndarray, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, ...]:
    """Row-wise projection of ``points[k]`` on segment ``a[k]-b[k]``: ``(t, foot, distance)``."""
    ab = b - a
    denom = np.einsum("ij,ij->i", ab, ab)
    t = np.einsum("ij,ij->i", points - a, ab) / np.where(denom > 0, denom, 1.0)
    t = np.clip(np.where(denom > 0, t, 0.0), 0.0, 1.0)
    foot = a + t[:, None] * ab
    return t, foot, np.linalg.norm(points - foot, axis=1)


class SegmentIndex:
    """Spatial index over the straight edges of a graph (or raw segments) for exact nearest-edge queries.

    Edges are cut (virtually) into pieces no longer than ``piece_length``; a KD-tree holds the piece midpoints. An edge
    within distance ``r`` of a point has a piece whose midpoint is within ``r + piece_length / 2``, so a ball query
    followed by exact vectorised projection onto the candidate edges is exact.

    Args:
        pos: node positions ``(N, 2)``.
        edges: node index pairs ``(E, 2)``.
        piece_length: length of the KD-tree pieces (default: the median edge length, at least 1e-6).
    """

    def __init__(self, pos: np.ndarray, edges: np.ndarray, piece_length: float | None = None) -> None:
        self.pos = np.asarray(pos, dtype=np.float64).reshape(-1, 2)
        self.edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
        a, b = self.pos[self.edges[:, 0]], self.pos[self.edges[:, 1]]
        lengths = np.linalg.norm(b - a, axis=1)
        if piece_length is None:
            piece_length = float(np.median(lengths)) if len(lengths) else 1.0
        self.piece_length = max(float(piece_length), 1e-6)
        pieces = np.maximum(1, np.ceil(lengths / self.piece_length).astype(np.int64))
        self._piece_edge = np.repeat(np.arange(len(self.edges)), pieces)
        k = index_in_group(pieces)
        t_mid = (k + 0.5) / np.repeat(pieces, pieces)
        mids = a[self._piece_edge] + t_mid[:, None] * (b - a)[self._piece_edge]
        self._half = 0.5 * float((lengths / pieces).max()) if len(lengths) else 0.0
        self._tree = cKDTree(mids) if len(mids) else None

    @classmethod
    def from_graph(cls, graph: nx.Graph, piece_length: float | None = None) -> tuple[SegmentIndex, GraphArrays]:
        """Index of ``graph``'s edges and the :class:`GraphArrays` its edge indices refer to."""
        arrays = graph_arrays(graph)
        return cls(arrays.pos, arrays.edges, piece_length), arrays

    def within(self, points: np.ndarray, radius: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Every (point, edge) pair with distance ``<= radius``.

        Returns ``(point_idx, edge_idx, t, distance)`` arrays, sorted by point then distance; each edge appears at
        most once per point.
        """
        points = np.asarray(points, dtype=np.float64).reshape(-1, 2)
        empty = np.empty(0, dtype=np.int64)
        if self._tree is None or not len(points):
            return empty, empty, np.empty(0), np.empty(0)
        qtree = cKDTree(points)
        pairs = qtree.sparse_distance_matrix(self._tree, radius + self._half, output_type="ndarray")
        p_idx = pairs["i"].astype(np.int64)
        e_idx = self._piece_edge[pairs["j"]]
        key = np.unique(p_idx * len(self.edges) + e_idx)
        p_idx, e_idx = key // len(self.edges), key % len(self.edges)
        a, b = self.pos[self.edges[e_idx, 0]], self.pos[self.edges[e_idx, 1]]
        t, _, dist = _project_on_segments(points[p_idx], a, b)
        keep = dist <= radius
        p_idx, e_idx, t, dist = p_idx[keep], e_idx[keep], t[keep], dist[keep]
        order = np.lexsort((e_idx, dist, p_idx))
        return p_idx[order], e_idx[order], t[order], dist[order]

    def nearest(self, points: np.ndarray, max_dist: float | None = None) -> Projection:
        """Closest edge of every point (ties: lowest edge index); ``edge = -1`` when none is within ``max_dist``."""
        points = np.asarray(points, dtype=np.float64).reshape(-1, 2)
        n = len(points)
        edge = np.full(n, -1, dtype=np.int64)
        t = np.full(n, np.nan)
        foot = np.full((n, 2), np.nan)
        dist = np.full(n, np.nan)
        if self._tree is None or n == 0:
            return Projection(edge, t, foot, dist)
        if max_dist is None:
            # the nearest midpoint bounds the nearest-edge distance; any closer edge has a midpoint within +half
            d0, _ = self._tree.query(points, k=1)
            lists = self._tree.query_ball_point(points, d0 + self._half + 1e-9)
            counts = np.fromiter((len(x) for x in lists), dtype=np.int64, count=n)
            p_idx = np.repeat(np.arange(n), counts)
            e_idx = self._piece_edge[np.fromiter((j for x in lists for j in x), dtype=np.int64, count=counts.sum())]
            a, b = self.pos[self.edges[e_idx, 0]], self.pos[self.edges[e_idx, 1]]
            tt, _, dd = _project_on_segments(points[p_idx], a, b)
        else:
            p_idx, e_idx, tt, dd = self.within(points, max_dist)
        if not len(p_idx):
            return Projection(edge, t, foot, dist)
        order = np.lexsort((e_idx, dd, p_idx))
        p_idx, e_idx, tt, dd = p_idx[order], e_idx[order], tt[order], dd[order]
        first = np.ones(len(p_idx), dtype=bool)
        first[1:] = p_idx[1:] != p_idx[:-1]
        p_idx, e_idx, tt, dd = p_idx[first], e_idx[first], tt[first], dd[first]
        edge[p_idx], t[p_idx], dist[p_idx] = e_idx, tt, dd
        a, b = self.pos[self.edges[e_idx, 0]], self.pos[self.edges[e_idx, 1]]
        foot[p_idx] = a + tt[:, None] * (b - a)
        return Projection(edge, t, foot, dist)


def project_points(graph: nx.Graph, points: np.ndarray, max_dist: float | None = None) -> tuple[Projection, list]:
    """Project ``points`` ``(N, 2)`` onto the nearest edge of ``graph``.

    Returns the :class:`Projection` and the list of ``graph.edges`` as ``(u, v)`` node-id pairs that
    ``Projection.edge`` indexes (``t`` runs from ``u`` to ``v``).
    """
    index, arrays = SegmentIndex.from_graph(graph)
    proj = index.nearest(points, max_dist)
    return proj, [(arrays.nodes[u], arrays.nodes[v]) for u, v in arrays.edges.tolist()]


def snap_points(
    graph: nx.Graph, points: np.ndarray, max_dist: float, existing_dist: float = 0.0
) -> tuple[nx.Graph, list]:
    """Snap points onto ``graph``, inserting a node on the closest edge where needed.

    For each point the closest edge is found; if its distance is ``>= max_dist`` the point maps to ``None``. If the
    closest point of the edge is one of its end nodes, or the point is closer than ``existing_dist`` to an end node,
    the point maps to that existing node. Otherwise a new node (degree 2, attribute ``snapped=True``) is inserted on
    the edge at the projection; several points on one edge are inserted in order along it. This is the snapping of
    Citraro et al.'s released code (``utils.snap_points_to_graph``).

    Returns ``(new_graph, node_ids)``; ``new_graph`` is a copy (the input is not modified) and ``node_ids[k]`` is the
    node that point ``k`` maps to, or ``None``. New node ids are integers after ``max(id) + 1``.
    """
    points = np.asarray(points, dtype=np.float64).reshape(-1, 2)
    out = graph.copy()
    index, arrays = SegmentIndex.from_graph(graph)
    proj = index.nearest(points, max_dist)
    node_ids: list = [None] * len(points)
    ok = (proj.edge >= 0) & (proj.distance < max_dist)
    if not ok.any():
        return out, node_ids
    e = np.where(ok, proj.edge, 0)
    u, v = arrays.edges[e, 0], arrays.edges[e, 1]
    d_u = np.linalg.norm(points - arrays.pos[u], axis=1)
    d_v = np.linalg.norm(points - arrays.pos[v], axis=1)
    to_u = ok & ((proj.t <= 0) | ((proj.t < 1) & (d_u < existing_dist)))
    to_v = ok & ~to_u & ((proj.t >= 1) | (d_v < existing_dist))
    insert = ok & ~to_u & ~to_v
    for k in np.flatnonzero(to_u):
        node_ids[k] = arrays.nodes[u[k]]
    for k in np.flatnonzero(to_v):
        node_ids[k] = arrays.nodes[v[k]]
    next_id = max((n for n in arrays.nodes if isinstance(n, (int, np.integer))), default=-1) + 1
    ins = np.flatnonzero(insert)
    order = ins[np.lexsort((proj.t[ins], proj.edge[ins]))]
    for edge_id in np.unique(proj.edge[order]):
        ks = order[proj.edge[order] == edge_id]
        a, b = arrays.nodes[arrays.edges[edge_id, 0]], arrays.nodes[arrays.edges[edge_id, 1]]
        out.remove_edge(a, b)
        prev = a
        for k in ks.tolist():
            out.add_node(next_id, pos=(float(proj.foot[k, 0]), float(proj.foot[k, 1])), snapped=True)
            out.add_edge(prev, next_id)
            node_ids[k] = next_id
            prev = next_id
            next_id += 1
        out.add_edge(prev, b)
    return out, node_ids


def _clip_segments(a: np.ndarray, b: np.ndarray, box: tuple[float, float, float, float]) -> tuple[np.ndarray, ...]:
    """Liang-Barsky clipping of segments ``a -> b`` to ``box = (xmin, ymin, xmax, ymax)``: ``(t0, t1, hit)``."""
    xmin, ymin, xmax, ymax = box
    d = b - a
    t0 = np.zeros(len(a))
    t1 = np.ones(len(a))
    hit = np.ones(len(a), dtype=bool)
    for p, q in (
        (-d[:, 0], a[:, 0] - xmin),
        (d[:, 0], xmax - a[:, 0]),
        (-d[:, 1], a[:, 1] - ymin),
        (d[:, 1], ymax - a[:, 1]),
    ):
        parallel = p == 0
        hit &= ~(parallel & (q < 0))
        with np.errstate(divide="ignore", invalid="ignore"):
            r = q / p
        t0 = np.where(~parallel & (p < 0), np.maximum(t0, r), t0)
        t1 = np.where(~parallel & (p > 0), np.minimum(t1, r), t1)
    hit &= t0 <= t1
    return t0, t1, hit


def translate(graph: nx.Graph, dx: float, dy: float) -> nx.Graph:
    """A copy of ``graph`` (same ids, order and attributes) with every ``pos`` moved by ``(dx, dy)``."""
    out = graph.copy()
    for _, attrs in out.nodes(data=True):
        x, y = attrs["pos"][:2]
        attrs["pos"] = (float(x) + dx, float(y) + dy)
    return out


_SIDE_NAMES = ("x = xmin", "y = ymin", "y = ymax", "x = xmax")


def _box_sides(box: tuple[float, float, float, float]) -> tuple[np.ndarray, np.ndarray]:
    """The four box sides as segments ``P[k] -> Q[k]``, in the released order (x=xmin, y=ymin, y=ymax, x=xmax)."""
    xmin, ymin, xmax, ymax = box
    p = np.array([(xmin, ymin), (xmin, ymin), (xmin, ymax), (xmax, ymin)], dtype=np.float64)
    q = np.array([(xmin, ymax), (xmax, ymin), (xmax, ymax), (xmax, ymax)], dtype=np.float64)
    return p, q


def _nearest_side(points: np.ndarray, box: tuple[float, float, float, float]) -> np.ndarray:
    """Index (into :data:`_SIDE_NAMES`) of the box side closest to each point ``(N, 2)``; ties go to the first side.

    Distances are computed as the released code does (projection parameter with a ``1e-12`` guard), so exact ties
    resolve the same way.
    """
    p, q = _box_sides(box)
    qp = (q - p)[None]
    xp = points[:, None] - p[None]
    lam = np.sum(xp * qp, axis=2) / (np.sum(qp * qp, axis=2) + 1e-12)
    foot = p[None] + lam[:, :, None] * qp
    foot = np.where((lam <= 0)[:, :, None], p[None], foot)
    foot = np.where((lam >= 1)[:, :, None], q[None], foot)
    return np.argmin(np.linalg.norm(foot - points[:, None], axis=2), axis=1)


def _line_intersection(a0: np.ndarray, a1: np.ndarray, b0: np.ndarray, b1: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Intersection of the infinite lines ``a0-a1`` and ``b0-b1`` (rows); ``ok`` is False for parallel lines."""
    xdiff = np.stack([a0[:, 0] - a1[:, 0], b0[:, 0] - b1[:, 0]], axis=1)
    ydiff = np.stack([a0[:, 1] - a1[:, 1], b0[:, 1] - b1[:, 1]], axis=1)
    div = xdiff[:, 0] * ydiff[:, 1] - xdiff[:, 1] * ydiff[:, 0]
    da = a0[:, 0] * a1[:, 1] - a0[:, 1] * a1[:, 0]
    db = b0[:, 0] * b1[:, 1] - b0[:, 1] * b1[:, 0]
    ok = div != 0
    safe = np.where(ok, div, 1.0)
    x = (da * xdiff[:, 1] - db * xdiff[:, 0]) / safe
    y = (da * ydiff[:, 1] - db * ydiff[:, 0]) / safe
    return np.stack([x, y], axis=1), ok


def _crop_reference(graph: nx.Graph, box: tuple[float, float, float, float]) -> nx.Graph:
    """The released ``crop_graph`` (``lcit/metrics_delin`` utils): see :func:`crop` with ``compat="reference"``."""
    xmin, ymin, xmax, ymax = box
    nodes = list(graph.nodes)
    if any(not isinstance(n, (int, np.integer)) or isinstance(n, bool) for n in nodes):
        raise ValueError("crop(compat='reference') needs integer node ids (new nodes are numbered max(id) + 1, ...)")
    out = graph.copy()
    if not nodes:
        return out
    pos = np.array([graph.nodes[n]["pos"][:2] for n in nodes], dtype=np.float64).reshape(-1, 2)
    outside_of = dict(
        zip(
            nodes,
            ((pos[:, 0] < xmin) | (pos[:, 0] >= xmax) | (pos[:, 1] < ymin) | (pos[:, 1] >= ymax)).tolist(),
            strict=True,
        )
    )
    edges = list(out.edges())
    cut = [(s, t) for s, t in edges if outside_of[s] != outside_of[t]]
    for s, t in edges:
        if outside_of[s] and outside_of[t]:
            out.remove_edge(s, t)
    if cut:
        ends = np.array([(t, s) if outside_of[s] else (s, t) for s, t in cut])  # (inside, outside)
        index = {n: i for i, n in enumerate(nodes)}
        p_s = pos[[index[s] for s, _ in cut]]
        p_t = pos[[index[t] for _, t in cut]]
        p_out = pos[[index[o] for o in ends[:, 1].tolist()]]
        side = _nearest_side(p_out, box)
        sp, sq = _box_sides(box)
        new_pos, ok = _line_intersection(sp[side], sq[side], p_s, p_t)
        if not ok.all():
            k = int(np.flatnonzero(~ok)[0])
            raise ValueError(
                f"crop(compat='reference'): edge {cut[k]} is parallel to the box side {_SIDE_NAMES[side[k]]} "
                "closest to its outside end; the released crop_graph fails on it (no intersection point)"
            )
        next_id = int(max(nodes)) + 1
        for k, (s, t) in enumerate(cut):
            inside = t if outside_of[s] else s
            out.add_node(next_id, pos=(float(new_pos[k, 0]), float(new_pos[k, 1])))
            if outside_of[s]:
                out.add_edge(next_id, inside)
            else:
                out.add_edge(inside, next_id)
            out.remove_edge(s, t)
            next_id += 1
    out.remove_nodes_from([n for n in list(out.nodes) if out.degree(n) == 0])
    return out


def crop(
    graph: nx.Graph,
    xmin: float,
    ymin: float,
    xmax: float,
    ymax: float,
    border: float = 0.0,
    *,
    compat: Compat = "default",
) -> nx.Graph:
    """Clip ``graph`` to the window ``[xmin + border, xmax - border] x [ymin + border, ymax - border]``.

    Default: every edge is clipped to the closed window (Liang-Barsky), so an edge passing through the window with
    both ends outside keeps its inside piece; a new node is added where an edge crosses the boundary; nodes left
    without edges are dropped and nodes at identical positions merged (:func:`validate_graph`). Returns a new graph
    in the representation (ids ``0..N-1``).

    ``compat="reference"``: the released ``crop_graph`` of ``lcit/metrics_delin``, rule for rule. A point is inside
    when ``xmin <= x < xmax`` and ``ymin <= y < ymax``; an edge with both ends inside is kept and one with both ends
    outside is dropped (even if it passes through the window); an edge with one end outside is replaced by an edge
    from its inside end to a new node placed where the edge's line meets the line of the window side closest to the
    *outside* end (ties: x = xmin, y = ymin, y = ymax, x = xmax), which need not be the side the edge crosses. New
    nodes are numbered ``max(id) + 1, + 2, ...`` in edge order; then nodes without edges are removed. Node ids, node
    order (kept ids, then new ids) and attributes are kept, nothing is merged. Node ids must be integers.
    """
    box = (xmin + border, ymin + border, xmax - border, ymax - border)
    if box[0] > box[2] or box[1] > box[3]:
        raise ValueError(f"crop window {box} is empty (border {border} too large for the window)")
    if check_compat(compat):
        return _crop_reference(graph, box)
    arrays = graph_arrays(graph)
    pos, edges = arrays.pos, arrays.edges
    a, b = pos[edges[:, 0]], pos[edges[:, 1]]
    t0, t1, hit = _clip_segments(a, b, box)
    a, b, t0, t1, edges = a[hit], b[hit], t0[hit], t1[hit], edges[hit]
    # endpoints strictly inside keep their node; cut points become new nodes
    n = len(pos)
    src = np.where(t0 <= 0, edges[:, 0], n + np.arange(len(edges)))
    dst = np.where(t1 >= 1, edges[:, 1], n + len(edges) + np.arange(len(edges)))
    new_pos = np.concatenate([pos, a + t0[:, None] * (b - a), a + t1[:, None] * (b - a)])
    pairs = np.stack([src, dst], axis=1)
    used = np.unique(pairs)
    remap = np.full(len(new_pos), -1, dtype=np.int64)
    remap[used] = np.arange(len(used))
    return validate_graph(graph_from_arrays(new_pos[used], remap[pairs]), "graph", merge_duplicates=True)


def _degree_filter(graph: nx.Graph, test: str) -> list:
    degree = dict(graph.degree())
    for n in nx.nodes_with_selfloops(graph):
        degree[n] -= 2
    if test == "junction":
        return [n for n, d in degree.items() if d >= 3]
    if test == "endpoint":
        return [n for n, d in degree.items() if d == 1]
    return [n for n, d in degree.items() if d != 2 and d > 0]


def junctions(graph: nx.Graph) -> list:
    """Nodes of degree >= 3 (self-loops not counted)."""
    return _degree_filter(graph, "junction")


def endpoints(graph: nx.Graph) -> list:
    """Nodes of degree 1 (self-loops not counted)."""
    return _degree_filter(graph, "endpoint")


def control_nodes(graph: nx.Graph) -> list:
    """Junctions and endpoints: nodes of degree 1 or >= 3, in ``graph.nodes`` order."""
    return _degree_filter(graph, "control")


def road_chains(graph: nx.Graph) -> list[list]:
    """Maximal chains through degree-2 nodes: node lists from a control node to a control node (a closed cycle with
    no control node starts and ends at the same node). Every edge lies on exactly one chain."""
    is_ctrl = {n: graph.degree(n) != 2 for n in graph.nodes}
    seen: set[frozenset] = set()
    chains = []
    starts = [n for n in graph.nodes if is_ctrl[n]] + list(graph.nodes)
    for start in starts:
        for nb in graph.adj[start]:
            if frozenset((start, nb)) in seen:
                continue
            chain = [start, nb]
            seen.add(frozenset((start, nb)))
            while not is_ctrl[chain[-1]] and chain[-1] != start:
                a, b = graph.adj[chain[-1]]
                nxt = b if a == chain[-2] or frozenset((chain[-1], a)) in seen else a
                if frozenset((chain[-1], nxt)) in seen:
                    break
                seen.add(frozenset((chain[-1], nxt)))
                chain.append(nxt)
            chains.append(chain)
    return chains


def resample_chains(graph: nx.Graph, spacing: float) -> nx.Graph:
    """Re-place nodes so that every chain between control nodes is cut into ``ceil(L / spacing)`` equal-arc pieces.

    Control nodes (degree != 2) keep their position; the intermediate nodes are replaced by nodes at regular arc
    length along the chain polyline, so the node density no longer depends on how finely the input was drawn (the
    released OPT-G code gets a similar effect from Ramer-Douglas-Peucker simplification followed by oversampling).
    Closed cycles without a control node keep one of their nodes as the anchor. Returns a new graph (ids ``0..N-1``).
    """
    if not spacing > 0:
        raise ValueError(f"`spacing` must be > 0, got {spacing}")
    arrays = graph_arrays(graph)
    index = {n: i for i, n in enumerate(arrays.nodes)}
    pos_out: list[np.ndarray] = [arrays.pos]
    edges_out: list[np.ndarray] = []
    used = np.zeros(len(arrays.nodes), dtype=bool)
    next_id = len(arrays.nodes)
    for chain in road_chains(graph):
        ids = np.array([index[n] for n in chain])
        pts = arrays.pos[ids]
        used[ids[0]] = used[ids[-1]] = True
        seg = np.linalg.norm(np.diff(pts, axis=0), axis=1)
        cum = np.concatenate([[0.0], np.cumsum(seg)])
        pieces = max(1, int(np.ceil(cum[-1] / spacing - 1e-9)))
        s = cum[-1] * np.arange(1, pieces) / pieces
        new = np.stack([np.interp(s, cum, pts[:, 0]), np.interp(s, cum, pts[:, 1])], axis=1)
        chain_ids = np.concatenate([[ids[0]], next_id + np.arange(len(new)), [ids[-1]]])
        next_id += len(new)
        pos_out.append(new)
        edges_out.append(np.stack([chain_ids[:-1], chain_ids[1:]], axis=1))
    pos = np.concatenate(pos_out)
    edges = np.concatenate(edges_out) if edges_out else np.empty((0, 2), dtype=np.int64)
    keep = np.ones(len(pos), dtype=bool)
    keep[: len(arrays.nodes)] = used
    remap = np.cumsum(keep) - 1
    return graph_from_arrays(pos[keep], remap[edges])


def max_matching_min_cost(
    src: np.ndarray, dst: np.ndarray, cost: np.ndarray, n_src: int, n_dst: int
) -> tuple[np.ndarray, np.ndarray]:
    """One-to-one matching among candidate pairs ``(src[k], dst[k])`` with ``cost[k]``.

    Maximises the number of matched pairs, then minimises their total cost (exact: each connected group of candidate
    pairs is a dense ``linear_sum_assignment`` with a prohibitive cost on non-candidates). Returns matched
    ``(src_idx, dst_idx)`` arrays.
    """
    src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    cost = np.asarray(cost, dtype=np.float64)
    if not len(src):
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    adj = coo_matrix((np.ones(len(src)), (src, n_src + dst)), shape=(n_src + n_dst,) * 2)
    _, label = connected_components(adj, directed=False)
    group = label[src]
    order = np.argsort(group, kind="stable")
    src, dst, cost, group = src[order], dst[order], cost[order], group[order]
    bounds = np.flatnonzero(np.diff(group)) + 1
    big = (float(np.abs(cost).max()) + 1.0) * (len(src) + 1)  # one more pair always beats any cost saving
    out_s, out_d = [], []
    for lo, hi in zip(np.r_[0, bounds], np.r_[bounds, len(group)], strict=True):
        if hi - lo == 1:
            out_s.append(src[lo : lo + 1])
            out_d.append(dst[lo : lo + 1])
            continue
        s_u, s_inv = np.unique(src[lo:hi], return_inverse=True)
        d_u, d_inv = np.unique(dst[lo:hi], return_inverse=True)
        mat = np.full((len(s_u), len(d_u)), big)
        mat[s_inv, d_inv] = cost[lo:hi]
        rows, cols = linear_sum_assignment(mat)
        real = mat[rows, cols] < big
        out_s.append(s_u[rows[real]])
        out_d.append(d_u[cols[real]])
    return np.concatenate(out_s), np.concatenate(out_d)


def match_points(a: np.ndarray, b: np.ndarray, max_dist: float) -> tuple[np.ndarray, np.ndarray]:
    """One-to-one matching of points ``a`` ``(N, 2)`` and ``b`` ``(M, 2)`` closer than ``max_dist``.

    Maximum number of pairs, then minimum total Euclidean distance. Returns index arrays ``(ia, ib)``.
    """
    a = np.asarray(a, dtype=np.float64).reshape(-1, 2)
    b = np.asarray(b, dtype=np.float64).reshape(-1, 2)
    if not len(a) or not len(b):
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    if len(a) * len(b) <= 4096:  # small: one dense assignment
        dist = np.linalg.norm(a[:, None] - b[None], axis=2)
        close = dist < max_dist
        if not close.any():
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
        big = (float(dist[close].max()) + 1.0) * (min(len(a), len(b)) + 1)
        rows, cols = linear_sum_assignment(np.where(close, dist, big))
        real = close[rows, cols]
        return rows[real].astype(np.int64), cols[real].astype(np.int64)
    pairs = cKDTree(a).sparse_distance_matrix(cKDTree(b), max_dist, output_type="ndarray")
    pairs = pairs[pairs["v"] < max_dist]
    return max_matching_min_cost(pairs["i"], pairs["j"], pairs["v"], len(a), len(b))


# ---------------------------------------------------------------------------------------------------------------
# helpers shared by the kernels and the Metric classes


def safe_ratio(num: float, den: float) -> float:
    """``num / den``, or 0.0 when ``den == 0``."""
    return float(num) / float(den) if den else 0.0


def f1_from(precision: float, recall: float) -> float:
    """Harmonic mean of precision and recall, 0.0 when both are 0."""
    return 2.0 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0


CHUNK = 64  # Dijkstra sources per batch (memory: CHUNK x nodes float64)


def length_csgraph(pos: np.ndarray, edges: np.ndarray) -> csr_matrix:
    """Symmetric sparse adjacency ``(N, N)`` weighted by Euclidean edge length (for scipy.sparse.csgraph)."""
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
