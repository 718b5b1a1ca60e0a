"""OPT-P path alignment as the released code runs it (``compat="reference"``), stage by stage.

The released ``path_based/path_connectivity_metric.py`` of ``lcit/metrics_delin`` (``new2l2s_v0``) aligns each path
of one graph into the other graph and then *deletes* what it matched. This module restates each of its stages as a
named function on :class:`networkx.Graph` objects (integer node ids, ``pos = (x, y)``), in the released order, so that
the graph being consumed evolves exactly as in the released code:

1. :func:`prepare_released_graph`: self-loops removed, nodes at identical positions merged into the first one,
   nodes without edges dropped (what ``opt_p`` and ``new2l2s_v0`` do to their inputs).
2. :func:`bisect_path`: every path segment halved until no piece is longer than 25 px.
3. :func:`snap_candidates`: for every edge of the graph, the projections of the path vertices closer than
   ``th_snap`` become candidates; a projection farther than ``th_existing`` from the previous candidate on that edge
   and from the edge's far end is *inserted into the graph* as a new node, otherwise it maps to that node / end.
   Every vertex also has the "unmatched" candidate (unary cost 0).
4. :func:`corridor_transitions`: for every path segment, the graph nodes within ``corridor`` of it and the edges
   among them form a corridor graph; a transition between two candidates is free when a path of at most 5 hops joins
   their nodes in it, otherwise it costs ``|segment|^2 * penalty_factor``.
5. :func:`viterbi_states`: min-sum dynamic programming over the candidates (first index wins ties).
6. :func:`aligned_pieces`: maximal runs of free transitions; the score ``sum l(piece)^2 / l(path)^2``, the
   interruptions, and the matched graph routes (snapped node, the corridor route, ...).
7. :func:`remove_matched_routes`: every edge between consecutive nodes of a matched route is deleted, detours
   included, and nodes left without neighbours are dropped. As in the released code a route node with id 0 is
   treated as "no previous node" (``if prev_node``), so the edge arriving from it is kept.
8. :func:`unsplit_inserted_nodes`: inserted nodes with two neighbours are replaced by an edge between them.

The path decomposition (:func:`released_decomposition`) makes the released random draws in the released order from a
``random.Random``: seeded with S it reproduces the released code run after ``random.seed(S)``, path for path, when
the input graphs have the same node and adjacency order. One released behaviour is not kept: an inserted node that
ends with more than two neighbours makes the released code raise ``ValueError``; here it stays in the graph.
"""

from __future__ import annotations

import itertools
import math
import random
from dataclasses import dataclass, field

import networkx as nx
import numpy as np

__all__ = [
    "ReleasedAlignment",
    "align_released_paths",
    "aligned_pieces",
    "bisect_path",
    "corridor_transitions",
    "prepare_released_graph",
    "reference_path_alignment",
    "released_decomposition",
    "remove_matched_routes",
    "sample_released_chain",
    "snap_candidates",
    "unsplit_inserted_nodes",
    "viterbi_states",
]

TH_EXISTING = 10.0  # px: the released ``opt_p`` default (the protocol passes only ``th_snap``)
MAX_HOPS = 5  # the released ``maxInspectedNodes``: cut-off of the corridor shortest paths

# A candidate: (squared distance, graph node, position of that node); the "unmatched" candidate is (0.0,).
Candidate = tuple


def prepare_released_graph(graph: nx.Graph) -> nx.Graph:
    """A copy of ``graph`` as the released code sees it: integer ids, tuple positions, no self-loops, coincident
    nodes merged (edges moved to the first node at that position), nodes without edges removed.

    Node ids (the ``source_id`` :func:`~drivemetrics.graph.geometry.validate_graph` records, else the ids) are kept
    when they are all integers: the released code needs them (new nodes get ``max(id) + 1, ...``, and a route node
    with id 0 is special, see :func:`remove_matched_routes`); otherwise nodes are numbered ``0..N-1`` in graph order.

    Examples:
        >>> import networkx as nx
        >>> from drivemetrics.roadnet.opt_p_reference import prepare_released_graph
        >>> g = nx.Graph([(0, 1), (1, 2), (2, 2)])
        >>> nx.set_node_attributes(g, {0: (0.0, 0.0), 1: (5.0, 0.0), 2: (0.0, 0.0)}, "pos")
        >>> sorted(prepare_released_graph(g).edges())
        [(0, 1)]
    """
    ids = list(graph.nodes)
    source = [graph.nodes[n].get("source_id", n) for n in ids]  # ids before validate_graph renumbered them
    integer_ids = all(isinstance(n, (int, np.integer)) and not isinstance(n, bool) for n in source)
    name = {n: (int(m) if integer_ids else k) for k, (n, m) in enumerate(zip(ids, source, strict=True))}
    out = nx.Graph()
    for n in ids:
        x, y = graph.nodes[n]["pos"][:2]
        out.add_node(name[n], pos=(float(x), float(y)))
    out.add_edges_from((name[u], name[v]) for u, v in graph.edges() if u != v)
    _merge_coincident_nodes(out)
    out.remove_nodes_from([n for n in list(out.nodes) if len(out[n]) == 0])
    return out


def _merge_coincident_nodes(graph: nx.Graph) -> None:
    first_at: dict = {}
    duplicates = []
    for n in graph.nodes:
        pos = graph.nodes[n]["pos"]
        if pos not in first_at:
            first_at[pos] = n
            continue
        keeper = first_at[pos]
        for m in list(graph[n]):
            if m != keeper:
                graph.add_edge(keeper, m)
        duplicates.append(n)
    graph.remove_nodes_from(duplicates)


_UNSEEN, _ON_PATH, _OFF_PATH = 0, 1, 2


def _edge_key(u: object, v: object) -> frozenset:
    return frozenset((u, v))


def sample_released_chain(graph: nx.Graph, rng: random.Random) -> list:
    """One path of the released decomposition (``sample_chain``): a randomised depth-first search.

    It starts at a random node of degree 1 (a random node when there is none) and walks to random neighbours over
    unseen edges: a neighbour already on the chain closes a cycle (the chain at that moment is remembered and the
    edge is abandoned), a neighbour already explored is skipped, otherwise the walk descends. It returns the chain as
    soon as it reaches another node of degree 1; it backtracks at nodes without unseen edges. Without any such node it
    returns the chain remembered at the *last* cycle (the released code's "loop"), which may be short.

    ``rng.randrange`` is called exactly where the released code calls ``random.randrange``, on lists in the same
    order (graph node order, adjacency order), so a ``random.Random(S)`` gives the draws of ``random.seed(S)``.

    Examples:
        >>> import networkx as nx
        >>> from drivemetrics.roadnet.opt_p_reference import sample_released_chain
        >>> from drivemetrics.roadnet.opt_p_reference import random
        >>> g = nx.path_graph(4)
        >>> sample_released_chain(g, random.Random(0)) in ([0, 1, 2, 3], [3, 2, 1, 0])
        True
    """
    node_state: dict = {}
    edge_state: dict = {}
    ends = [n for n in graph.nodes if len(graph[n]) == 1]
    pool = ends if ends else list(graph.nodes)
    start = pool[rng.randrange(len(pool))]
    node_state[start] = _ON_PATH
    chain, loop = [start], [start]
    while chain:
        n = chain[-1]
        neighbours = list(graph[n])
        if len(neighbours) == 1 and edge_state.get(_edge_key(n, neighbours[0])) == _ON_PATH:
            return chain  # a dead end reached over the chain's last edge
        options = [m for m in neighbours if m != n and edge_state.get(_edge_key(n, m), _UNSEEN) == _UNSEEN]
        if options:
            m = options[rng.randrange(len(options))]
            state = node_state.get(m, _UNSEEN)
            if state == _ON_PATH:  # a cycle: remember the chain, do not descend
                loop = chain.copy()
                edge_state[_edge_key(n, m)] = _OFF_PATH
            elif state == _OFF_PATH:
                edge_state[_edge_key(n, m)] = _OFF_PATH
            else:
                edge_state[_edge_key(n, m)] = _ON_PATH
                node_state[n] = _ON_PATH
                chain.append(m)
        else:  # backtrack
            if len(chain) > 1:
                edge_state[_edge_key(chain[-2], n)] = _OFF_PATH
            node_state[n] = _OFF_PATH
            chain.pop()
    return loop


def released_decomposition(graph: nx.Graph, seed: int | random.Random | None = 0) -> list[list]:
    """The released ``decompose_graph_to_paths`` on a copy of ``graph``: chains from :func:`sample_released_chain`
    until no edge is left; each chain's edges are removed, and nodes left without edges.

    ``seed``: a ``random.Random`` (its stream continues) or a seed for one; the released code draws from the global
    ``random`` module, so ``random.Random(S)`` reproduces its run after ``random.seed(S)``.

    Examples:
        >>> from drivemetrics.roadnet.opt_p_reference import released_decomposition
        >>> import networkx as nx
        >>> [len(p) for p in released_decomposition(nx.path_graph(5), seed=1)]
        [5]
    """
    rng = seed if isinstance(seed, random.Random) else random.Random(seed)
    work = graph.copy()
    paths = []
    while len(work) > 0:
        chain = sample_released_chain(work, rng)
        for u, v in itertools.pairwise(chain):
            work.remove_edge(u, v)
            if len(work[u]) == 0:
                work.remove_node(u)
        if chain[-1] in work and len(work[chain[-1]]) == 0:
            work.remove_node(chain[-1])
        if len(chain) < 2:  # the released code loops forever here; it cannot happen on a graph without self-loops
            break
        paths.append(chain)
    return paths


def bisect_path(points: np.ndarray, max_length: float) -> np.ndarray:
    """Insert midpoints until no segment of the polyline ``points`` ``(n, 2)`` is longer than ``max_length``.

    Examples:
        >>> from drivemetrics.roadnet.opt_p_reference import bisect_path
        >>> import numpy as np
        >>> bisect_path(np.array([[0.0, 0.0], [60.0, 0.0]]), 25.0)[:, 0].tolist()
        [0.0, 15.0, 30.0, 45.0, 60.0]
    """
    limit_sq = max_length**2
    out = [np.asarray(p, dtype=np.float64) for p in points]
    k = 0
    while k < len(out) - 1:
        here, there = out[k], out[k + 1]
        if float(np.sum((here - there) ** 2)) > limit_sq:
            out.insert(k + 1, 0.5 * (here + there))
        else:
            k += 1
    return np.array(out)


def _project_on_segments(starts: np.ndarray, ends: np.ndarray, points: np.ndarray) -> tuple[np.ndarray, ...]:
    """Clamped projection parameter ``(S, P)``, foot points ``(S, P, 2)`` and squared distances ``(S, P)``."""
    along = starts - ends  # (S, 2), the released parametrisation: foot = start - along * t
    denom = np.sum(along**2, axis=1)[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):  # a zero-length segment: NaN, never a candidate
        t = np.sum((starts[:, None, :] - points[None, :, :]) * along[:, None, :], axis=2) / denom
    t = np.clip(t, 0.0, 1.0)
    feet = starts[:, None, :] - along[:, None, :] * t[:, :, None]
    dist_sq = np.sum((points[None, :, :] - feet) ** 2, axis=2)
    return t, feet, dist_sq


def snap_candidates(graph: nx.Graph, path: np.ndarray, th_existing: float, th_snap: float) -> list[list[Candidate]]:
    """Candidates of every path vertex; inserts the new snapped nodes into ``graph`` (modified in place).

    Edges are visited in ``graph.edges`` order (as listed before any insertion). On each edge ``(a, b)`` the vertices
    closer than ``th_snap`` are taken in order of their projection from ``a`` to ``b``: a projection farther than
    ``th_existing`` from the previous one (initially ``a``) and from ``b`` becomes a new node chained from ``a``;
    a projection near the previous one maps to it; the remaining ones, near ``b``, map to ``b``. An edge that received
    new nodes is replaced by the chain ``a - new ... - b``.
    """
    snap_sq, existing_sq = th_snap**2, th_existing**2
    candidates: list[list[Candidate]] = [[(0.0,)] for _ in range(len(path))]
    edges = list(graph.edges)
    if not edges:
        return candidates
    pos = graph.nodes
    starts = np.array([pos[a]["pos"] for a, _ in edges], dtype=np.float64)
    ends = np.array([pos[b]["pos"] for _, b in edges], dtype=np.float64)
    t, feet, dist_sq = _project_on_segments(starts, ends, path)
    t[dist_sq >= snap_sq] = np.inf  # too far: never a candidate
    visit = np.argsort(t, axis=1, kind="stable")
    next_id = max(graph.nodes) + 1
    for k, (a, b) in enumerate(edges):
        end_pos = pos[b]["pos"]
        prev_node, prev_pos = a, pos[a]["pos"]
        inserted = reached_end = False
        for vertex in visit[k].tolist():
            if not t[k, vertex] <= 1.0:
                break
            foot = feet[k, vertex]
            # from the first projection near b on (they are sorted along the edge), every one maps to b
            reached_end = reached_end or (foot[0] - end_pos[0]) ** 2 + (foot[1] - end_pos[1]) ** 2 <= existing_sq
            if reached_end:
                candidates[vertex].append((float(dist_sq[k, vertex]), b, end_pos))
                continue
            if (foot[0] - prev_pos[0]) ** 2 + (foot[1] - prev_pos[1]) ** 2 > existing_sq:
                new_pos = (float(foot[0]), float(foot[1]))
                graph.add_node(next_id, pos=new_pos)
                graph.add_edge(prev_node, next_id)
                prev_node, prev_pos = next_id, new_pos
                next_id += 1
                inserted = True
            candidates[vertex].append((float(dist_sq[k, vertex]), prev_node, prev_pos))
        if inserted:
            graph.add_edge(prev_node, b)
            graph.remove_edge(a, b)
    return candidates


def _corridor_graph(graph: nx.Graph, members: list) -> nx.Graph:
    """The subgraph on ``members`` built node by node and edge by edge in the released order (its adjacency order
    decides which of several equally short routes the breadth-first search returns)."""
    rank = {n: k for k, n in enumerate(members)}
    corridor = nx.Graph()
    corridor.add_nodes_from(members)
    for k, n in enumerate(members):
        later = sorted(rank[m] for m in graph[n] if rank.get(m, -1) > k)
        corridor.add_edges_from((n, members[j]) for j in later)
    return corridor


@dataclass
class Transitions:
    """Per path segment ``i`` (vertex ``i`` to ``i + 1``): cost matrix ``(len(cands[i]), len(cands[i + 1]))``, which
    entries are free, and the corridor route (node list) of each free entry."""

    costs: list[np.ndarray] = field(default_factory=list)
    allowed: list[np.ndarray] = field(default_factory=list)
    routes: list[dict] = field(default_factory=list)


def corridor_transitions(
    graph: nx.Graph,
    path: np.ndarray,
    candidates: list[list[Candidate]],
    corridor: float,
    penalty_factor: float,
    max_hops: int = MAX_HOPS,
) -> Transitions:
    """Transition costs between the candidates of consecutive path vertices (see the module doc, stage 4)."""
    nodes = list(graph.nodes)
    node_pos = np.array([graph.nodes[n]["pos"] for n in nodes], dtype=np.float64).reshape(-1, 2)
    _, _, dist_sq = _project_on_segments(path[:-1], path[1:], node_pos)
    out = Transitions()
    for i in range(1, len(path)):
        members = [nodes[j] for j in np.flatnonzero(dist_sq[i - 1] < corridor**2).tolist()]
        sub = _corridor_graph(graph, members)
        before, after = candidates[i - 1], candidates[i]
        penalty = float(np.sum((path[i] - path[i - 1]) ** 2)) * penalty_factor
        costs = np.full((len(before), len(after)), penalty)
        allowed = np.zeros((len(before), len(after)), dtype=bool)
        routes: dict = {}
        reach: dict = {}
        for p in range(1, len(before)):
            source = before[p][1]
            if source not in sub:
                continue
            if source not in reach:
                reach[source] = nx.single_source_shortest_path(sub, source, cutoff=max_hops)
            for c in range(1, len(after)):
                route = reach[source].get(after[c][1])
                if route is not None:
                    costs[p, c] = 0.0
                    allowed[p, c] = True
                    routes[(p, c)] = route
        out.costs.append(costs)
        out.allowed.append(allowed)
        out.routes.append(routes)
    return out


def viterbi_states(candidates: list[list[Candidate]], costs: list[np.ndarray]) -> list[int]:
    """Candidate index per vertex minimising unary (squared distance, 0 unmatched) plus transition costs.

    Examples:
        >>> from drivemetrics.roadnet.opt_p_reference import viterbi_states
        >>> import numpy as np
        >>> states = [[(0.0,), (4.0, 1, (0, 0))], [(0.0,), (1.0, 2, (0, 0))]]
        >>> viterbi_states(states, [np.array([[9.0, 9.0], [9.0, 0.0]])])
        [1, 1]
    """
    cost = np.array([c[0] for c in candidates[0]])
    back = []
    for i in range(1, len(candidates)):
        total = cost[:, None] + costs[i - 1]
        back.append(np.argmin(total, axis=0))
        cost = np.min(total, axis=0) + np.array([c[0] for c in candidates[i]])
    states = [int(np.argmin(cost))]
    for pointers in reversed(back):
        states.append(int(pointers[states[-1]]))
    return states[::-1]


@dataclass
class ReleasedAlignment:
    """One aligned path: score, whether every transition was free, interruption count, matched graph routes (each a
    list of node ids in order)."""

    score: float
    connected: bool
    interruptions: int
    routes: list[list]


def _polyline_length(points: list | np.ndarray) -> float:
    pts = np.asarray(points, dtype=np.float64).reshape(-1, 2)
    return float(np.sum(np.hypot(*np.diff(pts, axis=0).T))) if len(pts) > 1 else 0.0


def aligned_pieces(
    path: np.ndarray,
    fine_path: np.ndarray,
    candidates: list[list[Candidate]],
    transitions: Transitions,
    states: list[int],
) -> ReleasedAlignment:
    """Score and matched routes of the Viterbi states (stage 6). ``path`` is the original polyline (its length is the
    denominator), ``fine_path`` the bisected one the states refer to."""
    free = [bool(transitions.allowed[i - 1][states[i - 1], states[i]]) for i in range(1, len(fine_path))]
    interruptions = 0 if free[0] else 1
    routes: list[list] = []
    pieces: list[list[int]] = []
    on_piece = False
    for i in range(1, len(fine_path)):
        snapped = candidates[i - 1][states[i - 1]][1] if states[i - 1] else None
        if free[i - 1]:
            if not on_piece:
                routes.append([])
                pieces.append([])
                interruptions += i > 1
            on_piece = True
            routes[-1].append(snapped)
            routes[-1].extend(transitions.routes[i - 1][(states[i - 1], states[i])])
            pieces[-1].append(i - 1)
        else:
            if on_piece:
                routes[-1].append(snapped)
                pieces[-1].append(i - 1)
                interruptions += 1
            on_piece = False
    last = len(fine_path) - 1
    if on_piece:
        routes[-1].append(candidates[last][states[last]][1])
        pieces[-1].append(last)
    else:
        interruptions += 1
    total = _polyline_length(path)
    score = sum(_polyline_length(fine_path[piece]) ** 2 for piece in pieces) / total**2 if total > 0 else math.nan
    return ReleasedAlignment(score, all(free), interruptions, routes)


def remove_matched_routes(graph: nx.Graph, routes: list[list]) -> None:
    """Delete the edges between consecutive distinct nodes of every route and the nodes left isolated (stage 7)."""
    for route in routes:
        previous = None
        for node in route:
            if previous and node != previous:  # the released truthiness test: node id 0 counts as "none"
                if graph.has_edge(previous, node):
                    graph.remove_edge(previous, node)
                for end in (previous, node):
                    if end in graph and set(graph[end]) <= {end}:
                        graph.remove_node(end)
            previous = node


def unsplit_inserted_nodes(graph: nx.Graph, last_original_id: int) -> None:
    """Replace every inserted node (id > ``last_original_id``) that has two neighbours by an edge between them."""
    for n in list(graph.nodes):
        if n > last_original_id:
            neighbours = list(graph[n])
            if len(neighbours) == 2:
                graph.add_edge(*neighbours)
                graph.remove_node(n)


def reference_path_alignment(
    paths_graph: nx.Graph,
    into_graph: nx.Graph,
    *,
    seed: int | random.Random | None = 0,
    th_snap: float = 25.0,
    th_existing: float = TH_EXISTING,
    segment_length: float = 25.0,
    corridor: float = 25.0,
    penalty_factor: float = 10000.0,
) -> tuple[float, int, int, int]:
    """The released ``new2l2s_v0(g=into_graph, h=paths_graph)``: mean path score of ``paths_graph`` aligned into
    ``into_graph``, which is consumed path after path. Neither input is modified.

    Returns ``(mean_score, n_paths, n_connected, n_interruptions)``: the mean over the scored paths (NaN when none
    was scored); paths met after ``into_graph`` has lost its last edge are not scored.
    """
    paths_side = prepare_released_graph(paths_graph).copy()  # the copies the released code makes, in its order:
    into = prepare_released_graph(into_graph).copy()  # they decide the adjacency order, hence the random draws
    paths = released_decomposition(paths_side, seed)
    scores, connected, interruptions = align_released_paths(
        paths_side, into, paths, th_snap, th_existing, segment_length, corridor, penalty_factor
    )
    mean = float(np.mean(scores)) if scores else math.nan
    return mean, len(paths), connected, interruptions


def align_released_paths(
    paths_side: nx.Graph,
    into: nx.Graph,
    paths: list[list],
    th_snap: float = 25.0,
    th_existing: float = TH_EXISTING,
    segment_length: float = 25.0,
    corridor: float = 25.0,
    penalty_factor: float = 10000.0,
) -> tuple[list[float], int, int]:
    """Align ``paths`` (node lists of ``paths_side``) one after the other into ``into``, which is consumed (modified
    in place; both graphs as :func:`prepare_released_graph` returns them). Returns the per-path scores (paths met
    once ``into`` has no edge left are not scored), the number of connected paths and of interruptions."""
    last_original_id = max(into.nodes) if into.number_of_nodes() else 1
    scores: list[float] = []
    connected = interruptions = 0
    for path_nodes in paths:
        if into.number_of_edges() == 0:
            break
        points = np.array([paths_side.nodes[n]["pos"] for n in path_nodes], dtype=np.float64)
        fine = bisect_path(points, segment_length)
        candidates = snap_candidates(into, fine, th_existing, th_snap)
        transitions = corridor_transitions(into, fine, candidates, corridor, penalty_factor)
        states = viterbi_states(candidates, transitions.costs)
        result = aligned_pieces(points, fine, candidates, transitions, states)
        scores.append(result.score)
        connected += result.connected
        interruptions += result.interruptions
        remove_matched_routes(into, result.routes)
        unsplit_inserted_nodes(into, last_original_id)
    return scores, connected, interruptions
