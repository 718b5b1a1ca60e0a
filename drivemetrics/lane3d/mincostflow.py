"""The lane assignment of Gen-LaneNet's Apollo evaluator exactly as OR-Tools' ``SimpleMinCostFlow`` solves it, ties
included.

``tools/eval_3D_lane.py`` (``tools/MinCostFlow.py``) matches the GT and predicted lanes of a frame with a min-cost
flow: source -> each GT lane (capacity 1, cost 0), each GT lane -> each prediction (capacity 1, the pair's cost
truncated to an int), each prediction -> sink (capacity 1, cost 0), ``min(#GT, #pred)`` units from source to sink, the
arcs added in that order. The truncated costs tie often, and which optimal assignment comes back decides which pairs
are counted (and so the x / z errors). ``scipy.optimize.linear_sum_assignment`` returns another optimum on such
matrices, so ``compat="reference"`` runs OR-Tools' algorithm step by step (OR-Tools 9.14,
``ortools/graph/min_cost_flow.cc``, as its Python ``SimpleMinCostFlow.solve`` calls it):

- ``SimpleMinCostFlow`` adds a new source (supplying the max flow) and sink, an arc new source -> each supply node and
  each demand node -> new sink, after the user's arcs; the graph (``ReverseArcStaticGraph``) orders the arcs by tail
  (stable), gives each node the reverse arcs of its incoming arcs (in arc order) first, then its outgoing arcs;
- costs are multiplied by ``#nodes + 1`` (price scaling), epsilon starts at the largest scaled cost and is divided by
  5 (integer division, at least 1) before each refine, until a refine at epsilon 1;
- a refine saturates every admissible arc (residual capacity > 0, reduced cost < 0) node by node, stacks the nodes
  with excess (LIFO), and discharges them: arcs scanned from the node's first admissible arc, the push look-ahead
  relabels a head without excess and without admissible arc before pushing, a node is relabelled when its scan ends
  (to the largest potential that keeps epsilon-optimality, or by epsilon when an arc stays admissible at that), no
  price updates (off by default).

The graphs are small (the lanes of one frame), so this is plain Python on lists; it only runs where the optimum
is not unique (a few % of the frames of ``benchmarks/lanes3d_presets.py``).

OR-Tools: (c) 2010-2025 Google LLC, Apache License 2.0; this is an independent re-implementation of the parts of
``SimpleMinCostFlow`` and ``GenericMinCostFlow`` that this graph reaches.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["flow_lane_assignment", "min_cost_flow", "ortools_lane_assignment"]

_ALPHA = 5  # OR-Tools' --min_cost_flow_alpha


def ortools_lane_assignment(cost: np.ndarray | Sequence[Sequence[int]]) -> list[tuple[int, int]]:
    """The ``(GT, prediction)`` pairs that Gen-LaneNet's ``SolveMinCostFlow(adj_mat, cost_mat)`` returns (every pair
    allowed, as the evaluator builds ``adj_mat``), in its order.

    Where the minimum-cost assignment is unique (no other assignment of ``min(G, P)`` pairs costs as little: each of
    its pairs, forbidden, makes the optimum dearer), any exact solver returns it and scipy's is taken; otherwise
    OR-Tools' algorithm runs (:func:`flow_lane_assignment`).

    Args:
        cost: a ``(G, P)`` matrix of non-negative integer costs.

    Returns:
        ``min(G, P)`` pairs of a minimum-cost assignment, sorted by GT then prediction (empty when ``G`` or ``P`` is 0).

    Examples:
        >>> from drivemetrics.lane3d.mincostflow import ortools_lane_assignment
        >>> ortools_lane_assignment([[3, 3], [3, 3]])  # both assignments are optimal: OR-Tools returns this one
        [(0, 1), (1, 0)]
        >>> ortools_lane_assignment([[4, 1, 3], [2, 0, 5]])
        [(0, 1), (1, 0)]
    """
    from scipy.optimize import linear_sum_assignment

    c = np.asarray(cost, dtype=np.int64)
    if c.size == 0:
        return []
    rows, cols = linear_sum_assignment(c)
    best = int(c[rows, cols].sum())
    for i, j in zip(rows.tolist(), cols.tolist(), strict=True):
        without = c.copy()
        without[i, j] = best + 1  # an assignment using (i, j) now costs more than the optimum
        r, k = linear_sum_assignment(without)
        if int(without[r, k].sum()) <= best:  # another optimum
            return flow_lane_assignment(c.tolist())
    return list(zip(rows.tolist(), cols.tolist(), strict=True))


def flow_lane_assignment(cost: Sequence[Sequence[int]]) -> list[tuple[int, int]]:
    """:func:`ortools_lane_assignment` always through OR-Tools' algorithm: :func:`min_cost_flow` on Gen-LaneNet's
    graph.

    Examples:
        >>> from drivemetrics.lane3d.mincostflow import flow_lane_assignment
        >>> flow_lane_assignment([[1, 1, 1], [1, 1, 1]])
        [(0, 2), (1, 1)]
    """
    g = len(cost)
    p = len(cost[0]) if g else 0
    if g == 0 or p == 0:
        return []
    sink = g + p + 1
    tails = [0] * g + [1 + i for i in range(g) for _ in range(p)] + [g + 1 + j for j in range(p)]
    heads = [1 + i for i in range(g)] + [g + 1 + j for _ in range(g) for j in range(p)] + [sink] * p
    costs = [0] * g + [int(c) for row in cost for c in row] + [0] * p
    supplies = [0] * (sink + 1)
    supplies[0], supplies[sink] = min(g, p), -min(g, p)
    flows = min_cost_flow(tails, heads, [1] * len(tails), costs, supplies)
    if flows is None:
        return []
    return [(k // p, k % p) for k in range(g * p) if flows[g + k] > 0]


def min_cost_flow(
    tails: Sequence[int],
    heads: Sequence[int],
    capacities: Sequence[int],
    costs: Sequence[int],
    supplies: Sequence[int],
) -> list[int] | None:
    """The flow on each arc that OR-Tools' ``SimpleMinCostFlow`` returns for these arcs (added in this order) and
    node supplies (``Solve()``, no supply adjustment), or ``None`` where it does not report ``OPTIMAL``.

    Args:
        tails, heads: the arcs' end nodes (``0 <= node < len(supplies)``).
        capacities: non-negative integer capacities.
        costs: integer unit costs.
        supplies: the supply of every node (a demand is negative).

    Examples:
        >>> from drivemetrics.lane3d.mincostflow import min_cost_flow
        >>> # two paths of cost 2 from node 0 to node 3: OR-Tools sends the unit along the second
        >>> min_cost_flow([0, 0, 1, 2], [1, 2, 3, 3], [1, 1, 1, 1], [2, 2, 0, 0], [1, 0, 0, -1])
        [1, 0, 1, 0]
    """
    n = len(supplies)
    if sum(s for s in supplies if s > 0) != -sum(s for s in supplies if s < 0):
        return None  # UNBALANCED
    user_arcs = len(tails)
    # the augmented graph: new source n, new sink n + 1
    all_tails, all_heads, all_caps, all_costs = list(tails), list(heads), list(capacities), list(costs)
    for node in range(n):
        if supplies[node] != 0:
            tail, head = (n, node) if supplies[node] > 0 else (node, n + 1)
            all_tails.append(tail)
            all_heads.append(head)
            all_caps.append(abs(supplies[node]))
            all_costs.append(0)
    total = sum(s for s in supplies if s > 0)
    if _max_flow(n + 2, all_tails, all_heads, all_caps, n, n + 1) != total:
        return None  # INFEASIBLE
    solver = _CostScaling(n + 2, all_tails, all_heads, all_caps, all_costs)
    solver.excess[n], solver.excess[n + 1] = total, -total
    if not solver.solve():
        return None
    return [solver.flow(arc) for arc in range(user_arcs)]


def _max_flow(nodes: int, tails: list[int], heads: list[int], caps: list[int], source: int, sink: int) -> int:
    """The value of a maximum flow (only the value matters: OR-Tools checks feasibility with it)."""
    residual: list[dict[int, int]] = [{} for _ in range(nodes)]
    for t, h, c in zip(tails, heads, caps, strict=True):
        residual[t][h] = residual[t].get(h, 0) + c
        residual[h].setdefault(t, 0)
    value = 0
    while True:
        parent = {source: source}
        queue = [source]
        for node in queue:
            for nxt, c in residual[node].items():
                if c > 0 and nxt not in parent:
                    parent[nxt] = node
                    queue.append(nxt)
        if sink not in parent:
            return value
        path, node = [], sink
        while node != source:
            path.append((parent[node], node))
            node = parent[node]
        delta = min(residual[a][b] for a, b in path)
        for a, b in path:
            residual[a][b] -= delta
            residual[b][a] += delta
        value += delta


class _CostScaling:
    """``GenericMinCostFlow`` over a ``ReverseArcStaticGraph``: arcs ``0 .. A-1`` forward, ``-A .. -1`` reverse,
    stored at ``arc + A``; each node's arcs in the graph's iteration order (reverse arcs, then outgoing ones)."""

    def __init__(self, nodes: int, tails: list[int], heads: list[int], caps: list[int], costs: list[int]) -> None:
        a = len(tails)
        self.nodes, self.arcs = nodes, a
        # forward arcs sorted by tail, stable: perm[user arc] = graph arc
        order = sorted(range(a), key=lambda i: tails[i])
        self.perm = [0] * a
        for new, old in enumerate(order):
            self.perm[old] = new
        f_tail = [tails[i] for i in order]
        f_head = [heads[i] for i in order]
        # reverse arcs grouped by their tail (the forward arc's head), in forward arc order
        indegree = [0] * nodes
        for h in f_head:
            indegree[h] += 1
        rev_next = [0] * nodes
        acc = 0
        for v in range(nodes):
            rev_next[v] = acc
            acc += indegree[v]
        size = 2 * a
        self.head = [0] * size
        self.opposite = [0] * size
        self.resid = [0] * size
        self.cost = [0] * size
        factor = nodes + 1  # price scaling
        eps = 1
        incident: list[list[int]] = [[] for _ in range(nodes)]
        reverse_of: list[list[int]] = [[] for _ in range(nodes)]
        for i in range(a):
            r = rev_next[f_head[i]] - a
            rev_next[f_head[i]] += 1
            fi, ri = i + a, r + a
            self.head[fi], self.head[ri] = f_head[i], f_tail[i]
            self.opposite[fi], self.opposite[ri] = ri, fi
            self.resid[fi] = caps[order[i]]
            scaled = costs[order[i]] * factor
            self.cost[fi], self.cost[ri] = scaled, -scaled
            eps = max(eps, abs(scaled))
            reverse_of[f_head[i]].append(ri)
        for i in range(a):
            incident[f_tail[i]].append(i + a)
        # reverse arcs of a node in increasing index order, then its outgoing arcs
        self.adj = [sorted(reverse_of[v]) + incident[v] for v in range(nodes)]
        self.eps = eps
        self.excess = [0] * nodes
        self.potential = [0] * nodes
        self.first = [0] * nodes  # position in adj[v] of the first admissible arc (len: none)
        self.stack: list[int] = []

    def flow(self, user_arc: int) -> int:
        return self.resid[self.opposite[self.perm[user_arc] + self.arcs]]

    def solve(self) -> bool:
        while True:
            self.eps = max(self.eps // _ALPHA, 1)
            if not self._refine():
                return False
            if self.eps == 1:
                return True

    def _admissible(self, arc: int, tail_potential: int) -> bool:
        return self.resid[arc] > 0 and self.cost[arc] + tail_potential - self.potential[self.head[arc]] < 0

    def _push(self, delta: int, arc: int, tail: int) -> None:
        self.resid[arc] -= delta
        self.resid[self.opposite[arc]] += delta
        self.excess[tail] -= delta
        self.excess[self.head[arc]] += delta

    def _refine(self) -> bool:
        for v in range(self.nodes):  # saturate the admissible arcs
            pot = self.potential[v]
            arcs = self.adj[v]
            for k in range(self.first[v], len(arcs)):
                arc = arcs[k]
                if self._admissible(arc, pot):
                    self._push(self.resid[arc], arc, v)
            self.first[v] = len(arcs)
        self.stack = [v for v in range(self.nodes) if self.excess[v] > 0]
        while self.stack:
            if not self._discharge(self.stack.pop()):
                return False
        return True

    def _discharge(self, v: int) -> bool:
        arcs = self.adj[v]
        while True:
            pot = self.potential[v]
            for k in range(self.first[v], len(arcs)):
                arc = arcs[k]
                if not self._admissible(arc, pot):
                    continue
                h = self.head[arc]
                if self.excess[h] >= 0 and not self._has_admissible(h):  # push look-ahead
                    if not self._relabel(h):
                        return False
                    if not self._admissible(arc, pot):
                        continue
                delta = min(self.excess[v], self.resid[arc])
                was_active = self.excess[h] > 0
                self._push(delta, arc, v)
                if self.excess[h] > 0 and not was_active:
                    self.stack.append(h)
                if self.excess[v] == 0:
                    self.first[v] = k
                    return True
            if not self._relabel(v):
                return False

    def _has_admissible(self, v: int) -> bool:
        pot = self.potential[v]
        arcs = self.adj[v]
        for k in range(self.first[v], len(arcs)):
            if self._admissible(arcs[k], pot):
                self.first[v] = k
                return True
        return False

    def _relabel(self, v: int) -> bool:
        guaranteed = self.potential[v] - self.eps
        best = prev = None
        first_arc = 0
        for k, arc in enumerate(self.adj[v]):
            if self.resid[arc] > 0:
                bound = self.potential[self.head[arc]] - self.cost[arc]
                if bound > guaranteed:
                    self.potential[v] = guaranteed
                    self.first[v] = k
                    return True
                if best is None or bound > best:
                    prev, best, first_arc = best, bound, k
        if best is None:  # no residual arc leaves the node
            if self.excess[v] != 0:
                return False  # INFEASIBLE
            self.potential[v] = guaranteed
            self.first[v] = len(self.adj[v])
            return True
        new = best - self.eps
        self.potential[v] = new
        self.first[v] = first_arc if prev is None or prev <= new else 0
        return True
