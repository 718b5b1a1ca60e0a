"""The sampling procedures of Citraro et al.'s released code (``lcit/metrics_delin``), for ``compat="reference"``.

Each helper restates one released procedure, step by step, with a seeded ``numpy.random.Generator`` in place of
the unseeded Python ``random`` / global numpy calls (so results are reproducible; they follow the released
distribution, not its exact draws):

- :func:`simplify_rdp`: ``utils.simplify_graph_ramer_douglas_peucker`` (remove a degree-2 node when it lies within
  ``epsilon`` of the line through its two neighbours, visiting nodes in a shuffled order, until nothing changes);
- :func:`oversample`: ``utils.oversampling_graph`` (each edge of length ``L`` is cut into ``round(L / spacing)``
  equal pieces; an edge shorter than ``1.5 * spacing`` is not cut);
- :class:`NodeSampler`: ``utils.uniform_node_sampling`` (draw a uniform point in the bounding box of at most
  ``max_node_probe`` shuffled nodes and return its nearest node *only if that node is farther than
  ``dist_matching``*, i.e. nodes next to empty areas are favoured);
- :func:`dfs_ball`: ``graph_based.common.dfs_nodes_pos`` (depth-first search that also yields the first node beyond
  the radius and, at junctions, skips children that come back towards the root).
"""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
from scipy.spatial import cKDTree

__all__ = ["NodeSampler", "dfs_ball", "oversample", "simplify_rdp"]


def _line_distance(p: np.ndarray, a: np.ndarray, b: np.ndarray) -> float:
    """Distance of ``p`` to the infinite line through ``a`` and ``b`` (to ``a`` when ``a == b``), as ``rdp.pldist``."""
    if a[0] == b[0] and a[1] == b[1]:
        return float(np.hypot(p[0] - a[0], p[1] - a[1]))
    d = b - a
    return float(abs(d[0] * (a[1] - p[1]) - d[1] * (a[0] - p[0])) / np.hypot(d[0], d[1]))


def simplify_rdp(graph: nx.Graph, epsilon: float, rng: np.random.Generator) -> nx.Graph:
    """A copy of ``graph`` with degree-2 nodes removed while they lie within ``epsilon`` of their neighbours' line.

    Passes over the nodes in a random order (``rng``) until a pass changes nothing; a removed node's two neighbours
    are joined by an edge. Node ids and the other nodes' positions are kept.
    """
    out = graph.copy()
    changed = True
    while changed:
        changed = False
        nodes = list(out.nodes)
        for k in rng.permutation(len(nodes)).tolist():
            n = nodes[k]
            nbrs = [m for m in out.adj[n] if m != n]
            if len(nbrs) != 2:
                continue
            a, b = (np.asarray(out.nodes[m]["pos"][:2], dtype=np.float64) for m in nbrs)
            if _line_distance(np.asarray(out.nodes[n]["pos"][:2], dtype=np.float64), a, b) <= epsilon:
                out.add_edge(*nbrs)
                out.remove_node(n)
                changed = True
    return out


def oversample(graph: nx.Graph, spacing: float) -> nx.Graph:
    """A copy of ``graph`` with ``round(L / spacing) - 1`` evenly spaced nodes inserted in every edge of length ``L``.

    Rounding is half to even (numpy); new nodes are numbered from ``max(id) + 1`` in edge order. Node ids must be
    integers.
    """
    out = graph.copy()
    if out.number_of_nodes() == 0:
        return out
    next_id = int(max(out.nodes)) + 1
    for s, t in list(out.edges):
        p1 = np.asarray(out.nodes[s]["pos"][:2], dtype=np.float64)
        p2 = np.asarray(out.nodes[t]["pos"][:2], dtype=np.float64)
        diff = p1 - p2
        pieces = int(np.round(np.linalg.norm(diff) / spacing))
        if pieces < 2:
            continue
        steps = np.linspace(0.0, 1.0, pieces + 1)[1:-1]
        new = (p1[None] - diff[None] * steps[:, None]).tolist()
        out.remove_edge(s, t)
        ids = list(range(next_id, next_id + len(new)))
        next_id += len(new)
        out.add_nodes_from((i, {"pos": (x, y)}) for i, (x, y) in zip(ids, new, strict=True))
        chain = [s, *ids, t]
        out.add_edges_from(itertools.pairwise(chain))
    return out


class NodeSampler:
    """The released ``uniform_node_sampling`` over node positions ``pos`` ``(N, 2)``: nodes next to empty areas.

    Each draw shuffles the nodes and keeps the first ``max_node_probe``; then it draws uniform points in their
    bounding box until one has its nearest kept node farther than ``dist_matching`` (at most ``max_tries``) and
    returns that node's row; failing that, a uniformly drawn row.
    """

    def __init__(
        self,
        pos: np.ndarray,
        rng: np.random.Generator,
        dist_matching: float,
        max_node_probe: int = 10000,
        max_tries: int = 10000,
        batch: int = 128,
    ) -> None:
        self.pos = np.asarray(pos, dtype=np.float64).reshape(-1, 2)
        if not len(self.pos):
            raise ValueError("cannot sample a node of an empty graph")
        self.rng = rng
        self.dist_matching = float(dist_matching)
        self.max_node_probe = int(max_node_probe)
        self.max_tries = int(max_tries)
        self.batch = int(batch)
        self._all = len(self.pos) <= self.max_node_probe
        if self._all:  # the shuffle only reorders the nodes: one tree and one bounding box serve every draw
            self._tree = cKDTree(self.pos)
            self._box = (self.pos.min(axis=0), self.pos.max(axis=0))

    def sample_index(self) -> int:
        """Row index of one drawn node."""
        if self._all:
            rows, tree, (lo, hi) = None, self._tree, self._box
        else:
            rows = self.rng.permutation(len(self.pos))[: self.max_node_probe]
            sub = self.pos[rows]
            tree, lo, hi = cKDTree(sub), sub.min(axis=0), sub.max(axis=0)
        tries = 0
        while tries < self.max_tries:
            k = min(self.batch, self.max_tries - tries)
            points = lo + (hi - lo) * self.rng.random((k, 2))
            dist, idx = tree.query(points)
            far = np.flatnonzero(dist > self.dist_matching)
            if len(far):
                j = int(idx[far[0]])
                return j if rows is None else int(rows[j])
            tries += k
        return int(self.rng.integers(len(self.pos)))


def dfs_ball(
    adj: list[list[int]], px: list[float], py: list[float], is_junction: list[bool], root: int, radius: float
) -> list[int]:
    """Nodes found by the released depth-first search from ``root`` (indices into ``adj``; ``px`` / ``py`` the node
    coordinates as lists).

    A child is yielded when first seen; it is expanded only when within ``radius`` of the root (so one ring of nodes
    beyond the radius is included). At a junction parent, a child whose squared distance to the root is below 0.75
    times the parent's is marked seen and skipped.
    """
    r2 = radius * radius
    x0, y0 = px[root], py[root]
    out = [root]
    visited = {root}
    stack = [(is_junction[root], 0.0, iter(adj[root]))]
    while stack:
        parent_junction, parent_d2, children = stack[-1]
        child = next(children, None)
        if child is None:
            stack.pop()
            continue
        if child in visited:
            continue
        d2 = (px[child] - x0) ** 2 + (py[child] - y0) ** 2
        visited.add(child)
        if parent_junction and d2 < parent_d2 * 0.75:
            continue
        out.append(child)
        if d2 <= r2:
            stack.append((is_junction[child], d2, iter(adj[child])))
    return out
