"""Synthetic errors on a ground-truth road graph, for the metric sensitivity study (Citraro et al., ECCV 2020, 4.1).

Every generator takes a graph (undirected ``networkx.Graph`` with node attribute ``pos`` = (x, y) in pixels), an
error count ``k`` and a ``seed``, and returns a ``(pred, gt)`` pair of new graphs (the input is never mutated;
nodes are relabelled ``0..n-1``). ``k = 0`` returns the unperturbed pair. Error types (:data:`PERTURBATIONS`):

- ``interruptions``: ``k`` gaps of ``gap`` px cut out of the prediction at points drawn uniformly along the roads;
- ``overconnections``: ``k`` straight spurious roads between random pairs of nodes ``min_length..max_length`` px
  apart;
- ``node_perturbations``: ``k`` prediction nodes moved by ``shift`` px in a random direction;
- ``doubled_pred``: ``k`` roads (chains between junctions / endpoints) predicted twice, the copy ``offset`` px to
  the side and joined to the road's ends;
- ``doubled_gt``: ``k`` roads doubled in the ground truth (e.g. dual carriageways), so the prediction misses one;
- ``false_positives``: ``k`` straight roads of ``length`` px at least ``min_distance`` px away from every GT road.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import networkx as nx
import numpy as np
from scipy.spatial import cKDTree

from drivemetrics.graph.geometry import graph_arrays, road_chains, validate_graph

__all__ = [
    "PERTURBATIONS",
    "PerturbationFn",
    "doubled_gt",
    "doubled_pred",
    "false_positives",
    "interruptions",
    "node_perturbations",
    "overconnections",
    "perturb",
]

PerturbationFn = Callable[..., tuple[nx.Graph, nx.Graph]]


def _copy_int_labels(graph: nx.Graph) -> nx.Graph:
    """A validated copy with nodes ``0..n-1`` and ``pos`` as float tuples (the input is not modified)."""
    return validate_graph(graph, "graph", allow_empty=False)


def _positions(graph: nx.Graph) -> np.ndarray:
    """N x 2 node positions of an int-labelled graph (node i in row i)."""
    return graph_arrays(graph).pos


def _edge_array(graph: nx.Graph) -> np.ndarray:
    """E x 2 node indices of the edges (rows of :func:`_positions`)."""
    return graph_arrays(graph).edges


def _new_node(graph: nx.Graph, xy: np.ndarray) -> int:
    node = graph.number_of_nodes()
    while node in graph:
        node += 1
    graph.add_node(node, pos=(float(xy[0]), float(xy[1])))
    return node


def _check_k(k: int) -> None:
    if not isinstance(k, (int, np.integer)) or k < 0:
        raise ValueError(f"`k` must be a non-negative int, got {k!r}")


def interruptions(graph: nx.Graph, k: int, seed: int = 0, gap: float = 60.0) -> tuple[nx.Graph, nx.Graph]:
    """Cut ``k`` gaps of ``gap`` px out of the prediction, centered at points uniform along edges >= ``gap`` long.

    Edges shorter than ``gap`` (hardly any on real maps) are never cut. Returns ``(pred, gt)``.
    """
    _check_k(k)
    gt = _copy_int_labels(graph)
    pred = gt.copy()
    if k == 0:
        return pred, gt
    rng = np.random.default_rng(seed)
    for _ in range(k):
        pos = _positions(pred)
        edges = _edge_array(pred)
        if len(edges) == 0:
            break
        lengths = np.linalg.norm(pos[edges[:, 1]] - pos[edges[:, 0]], axis=1)
        eligible = lengths > gap
        if not eligible.any():
            raise ValueError(f"no edge is longer than `gap` = {gap} px; use a smaller gap")
        weights = np.where(eligible, lengths, 0.0)
        e = rng.choice(len(edges), p=weights / weights.sum())
        a, b = edges[e]
        length = lengths[e]
        center = rng.uniform(gap / 2, length - gap / 2)
        direction = (pos[b] - pos[a]) / length
        pred.remove_edge(a, b)
        cut_a = _new_node(pred, pos[a] + direction * (center - gap / 2))
        pred.add_edge(a, cut_a)
        cut_b = _new_node(pred, pos[a] + direction * (center + gap / 2))
        pred.add_edge(cut_b, b)
    return pred, gt


def overconnections(
    graph: nx.Graph,
    k: int,
    seed: int = 0,
    min_length: float = 50.0,
    max_length: float = 200.0,
    min_junction_distance: float = 0.0,
) -> tuple[nx.Graph, nx.Graph]:
    """Add ``k`` straight spurious roads to the prediction between random node pairs ``min..max_length`` px apart.

    Pairs already joined by an edge are skipped. With ``min_junction_distance > 0`` both ends lie at least that far
    (px) from every GT junction (degree >= 3), e.g. beyond JUNCT's clustering reach. Returns ``(pred, gt)``.
    """
    _check_k(k)
    gt = _copy_int_labels(graph)
    pred = gt.copy()
    if k == 0:
        return pred, gt
    rng = np.random.default_rng(seed)
    pos = _positions(gt)
    tree = cKDTree(pos)
    usable = np.ones(len(pos), dtype=bool)
    junction_rows = np.array([gt.degree(n) >= 3 for n in range(len(pos))])
    if min_junction_distance > 0 and junction_rows.any():
        usable = cKDTree(pos[junction_rows]).query(pos)[0] >= min_junction_distance
    added = 0
    for start in rng.permutation(len(pos)):
        if not usable[start]:
            continue
        near = np.asarray(tree.query_ball_point(pos[start], max_length), dtype=np.int64)
        dist = np.linalg.norm(pos[near] - pos[start], axis=1)
        near = near[(dist >= min_length) & usable[near]]
        near = near[[not pred.has_edge(start, int(n)) for n in near]]
        if len(near) == 0:
            continue
        pred.add_edge(int(start), int(rng.choice(near)))
        added += 1
        if added == k:
            return pred, gt
    far = f", both >= {min_junction_distance} px from every junction" if min_junction_distance > 0 else ""
    raise ValueError(f"could not find {k} node pairs {min_length}..{max_length} px apart{far}; graph too small")


def node_perturbations(graph: nx.Graph, k: int, seed: int = 0, shift: float = 30.0) -> tuple[nx.Graph, nx.Graph]:
    """Move ``k`` distinct random prediction nodes by ``shift`` px in uniformly random directions.

    Returns ``(pred, gt)``.
    """
    _check_k(k)
    gt = _copy_int_labels(graph)
    pred = gt.copy()
    if k == 0:
        return pred, gt
    if k > pred.number_of_nodes():
        raise ValueError(f"`k` = {k} exceeds the number of nodes ({pred.number_of_nodes()})")
    rng = np.random.default_rng(seed)
    nodes = rng.choice(pred.number_of_nodes(), size=k, replace=False)
    angles = rng.uniform(0.0, 2 * math.pi, size=k)
    for node, angle in zip(nodes, angles, strict=True):
        x, y = pred.nodes[int(node)]["pos"]
        pred.nodes[int(node)]["pos"] = (x + shift * math.cos(angle), y + shift * math.sin(angle))
    return pred, gt


def _offset_chain(pos: np.ndarray, offset: float) -> np.ndarray:
    """Polyline (P x 2) moved ``offset`` px to its left, with mitred joints (each segment stays ``offset`` away)."""
    seg = np.diff(pos, axis=0)
    seg /= np.maximum(np.linalg.norm(seg, axis=1, keepdims=True), 1e-12)
    seg_normal = np.stack([-seg[:, 1], seg[:, 0]], axis=1)  # S x 2
    before = np.concatenate([seg_normal[:1], seg_normal])  # normal of the segment ending at each vertex
    after = np.concatenate([seg_normal, seg_normal[-1:]])
    mitre = before + after
    mitre /= np.maximum(np.linalg.norm(mitre, axis=1, keepdims=True), 1e-12)
    scale = 1.0 / np.maximum(np.einsum("ij,ij->i", mitre, after), 0.5)  # capped for very sharp turns
    return pos + offset * scale[:, None] * mitre


def _double_roads(graph: nx.Graph, k: int, rng: np.random.Generator, offset: float, min_length: float) -> nx.Graph:
    """A copy of ``graph`` where ``k`` random chains at least ``min_length`` long get a parallel twin."""
    out = graph.copy()
    pos = _positions(graph)
    chains = road_chains(graph)
    lengths = np.array([np.linalg.norm(np.diff(pos[c], axis=0), axis=1).sum() for c in chains])
    eligible = np.flatnonzero(lengths >= min_length)
    if k > len(eligible):
        raise ValueError(f"`k` = {k} exceeds the number of roads at least {min_length} px long ({len(eligible)})")
    for ci in rng.choice(eligible, size=k, replace=False):
        chain = chains[ci]
        twin = _offset_chain(pos[chain], offset)
        prev = chain[0]
        for xy in twin[1:-1]:
            node = _new_node(out, xy)
            out.add_edge(prev, node)
            prev = node
        if len(chain) == 2:  # a single straight edge: give the twin one offset inner vertex
            mid = _new_node(out, (twin[0] + twin[1]) / 2)
            out.add_edge(prev, mid)
            prev = mid
        out.add_edge(prev, chain[-1])
    return out


def doubled_pred(
    graph: nx.Graph, k: int, seed: int = 0, offset: float = 15.0, min_length: float = 100.0
) -> tuple[nx.Graph, nx.Graph]:
    """Predict ``k`` roads twice: a twin ``offset`` px to the side, joined to the road's end nodes.

    Roads are chains between junctions / endpoints at least ``min_length`` px long. Returns ``(pred, gt)``.
    """
    _check_k(k)
    gt = _copy_int_labels(graph)
    if k == 0:
        return gt.copy(), gt
    return _double_roads(gt, k, np.random.default_rng(seed), offset, min_length), gt


def doubled_gt(
    graph: nx.Graph, k: int, seed: int = 0, offset: float = 15.0, min_length: float = 100.0
) -> tuple[nx.Graph, nx.Graph]:
    """Double ``k`` roads in the ground truth (the prediction, the original graph, misses the twins).

    Returns ``(pred, gt)``.
    """
    _check_k(k)
    pred = _copy_int_labels(graph)
    if k == 0:
        return pred, pred.copy()
    return pred, _double_roads(pred, k, np.random.default_rng(seed), offset, min_length)


def false_positives(
    graph: nx.Graph, k: int, seed: int = 0, length: float = 100.0, min_distance: float = 50.0
) -> tuple[nx.Graph, nx.Graph]:
    """Add ``k`` isolated straight roads of ``length`` px whose points all lie >= ``min_distance`` px from the GT.

    Segments are drawn uniformly inside the GT bounding box (uniform center and direction) and rejected when too
    close to the GT (checked on points every 2 px against GT points every 2 px). Returns ``(pred, gt)``.
    """
    _check_k(k)
    gt = _copy_int_labels(graph)
    pred = gt.copy()
    if k == 0:
        return pred, gt
    rng = np.random.default_rng(seed)
    pos = _positions(gt)
    edges = _edge_array(gt)
    # points along the GT every <= 2 px, to measure clearance
    seg_len = np.linalg.norm(pos[edges[:, 1]] - pos[edges[:, 0]], axis=1)
    steps = np.maximum(np.ceil(seg_len / 2.0).astype(np.int64), 1)
    edge_of = np.repeat(np.arange(len(edges)), steps + 1)
    t = np.concatenate([np.linspace(0.0, 1.0, s + 1) for s in steps]) if len(edges) else np.zeros(0)
    gt_pts = pos[edges[edge_of, 0]] + t[:, None] * (pos[edges[edge_of, 1]] - pos[edges[edge_of, 0]])
    tree = cKDTree(np.concatenate([gt_pts, pos]))
    lo, hi = pos.min(axis=0), pos.max(axis=0)
    n_samples = max(math.ceil(length / 2.0), 1) + 1
    frac = np.linspace(-0.5, 0.5, n_samples)
    placed: list[np.ndarray] = []
    for _ in range(200):
        centers = rng.uniform(lo, hi, size=(256, 2))
        angles = rng.uniform(0.0, math.pi, size=256)
        direction = np.stack([np.cos(angles), np.sin(angles)], axis=1)
        pts = centers[:, None, :] + frac[None, :, None] * length * direction[:, None, :]  # 256 x S x 2
        clearance, _ = tree.query(pts.reshape(-1, 2))
        ok = (clearance.reshape(256, -1) >= min_distance).all(axis=1)
        for i in np.flatnonzero(ok):
            if placed:
                other = cKDTree(np.concatenate(placed))
                if (other.query(pts[i])[0] < min_distance).any():
                    continue
            placed.append(pts[i])
            a = _new_node(pred, pts[i, 0])
            b = _new_node(pred, pts[i, -1])
            pred.add_edge(a, b)
            if len(placed) == k:
                return pred, gt
    raise ValueError(f"could not place {k} roads {min_distance} px away from the GT inside its bounding box")


PERTURBATIONS: dict[str, PerturbationFn] = {
    "interruptions": interruptions,
    "overconnections": overconnections,
    "node_perturbations": node_perturbations,
    "doubled_pred": doubled_pred,
    "doubled_gt": doubled_gt,
    "false_positives": false_positives,
}


def perturb(graph: nx.Graph, kind: str, k: int, seed: int = 0, **options: float) -> tuple[nx.Graph, nx.Graph]:
    """Apply the error type ``kind`` (a key of :data:`PERTURBATIONS`) ``k`` times; returns ``(pred, gt)``."""
    if kind not in PERTURBATIONS:
        raise ValueError(f"`kind` must be one of {sorted(PERTURBATIONS)}, got {kind!r}")
    return PERTURBATIONS[kind](graph, k, seed=seed, **options)
