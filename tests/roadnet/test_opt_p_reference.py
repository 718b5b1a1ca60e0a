"""The released OPT-P alignment (``compat="reference"``), stage by stage on small hand-made graphs and paths."""

import itertools
import random

import networkx as nx
import numpy as np
import pytest

from drivemetrics.roadnet.opt_p_reference import (
    Transitions,
    aligned_pieces,
    bisect_path,
    corridor_transitions,
    prepare_released_graph,
    reference_path_alignment,
    released_decomposition,
    remove_matched_routes,
    snap_candidates,
    unsplit_inserted_nodes,
    viterbi_states,
)


def road(points, first_id=0):
    g = nx.Graph()
    for k, p in enumerate(points):
        g.add_node(first_id + k, pos=(float(p[0]), float(p[1])))
    g.add_edges_from((first_id + k, first_id + k + 1) for k in range(len(points) - 1))
    return g


def test_bisect_path_halves_until_short_enough():
    assert bisect_path(np.array([[0.0, 0.0], [60.0, 0.0]]), 25.0)[:, 0].tolist() == [0, 15, 30, 45, 60]
    assert bisect_path(np.array([[0.0, 0.0], [25.0, 0.0]]), 25.0).tolist() == [[0, 0], [25, 0]]  # not longer


def test_snap_candidates_insert_nodes_and_map_near_ones():
    g = road([(0, 0), (100, 0)])
    path = np.array([[20.0, 5.0], [25.0, 3.0], [50.0, -10.0], [95.0, 2.0], [30.0, 40.0], [5.0, 3.0]])
    cands = snap_candidates(g, path, th_existing=10.0, th_snap=25.0)
    summary = [[c[:2] for c in vertex] for vertex in cands]
    assert summary == [
        [(0.0,), (25.0, 2)],  # projection (20, 0): 20 px from node 0, inserted as node 2
        [(0.0,), (9.0, 2)],  # (25, 0): within 10 px of node 2, mapped to it
        [(0.0,), (100.0, 3)],  # (50, 0): inserted as node 3
        [(0.0,), (4.0, 1)],  # (95, 0): within 10 px of the far end, mapped to node 1
        [(0.0,)],  # 40 px away: unmatched only
        [(0.0,), (9.0, 0)],  # (5, 0): within 10 px of the start, mapped to node 0
    ]
    assert sorted(map(sorted, g.edges)) == [[0, 2], [1, 3], [2, 3]]  # the edge became the chain 0 - 2 - 3 - 1
    assert g.nodes[2]["pos"] == (20.0, 0.0)


def corridor_case(spacing):
    g = road([(x, 0.0) for x in np.arange(0.0, 20.0 + 1e-9, spacing)])
    last = g.number_of_nodes() - 1
    path = np.array([[0.0, 5.0], [20.0, 5.0]])
    cands = [[(0.0,), (25.0, 0, (0.0, 0.0))], [(0.0,), (25.0, last, (20.0, 0.0))]]
    return g, path, cands


def test_corridor_transition_free_within_five_hops():
    g, path, cands = corridor_case(5.0)  # 4 hops from node 0 to node 4
    tr = corridor_transitions(g, path, cands, corridor=25.0, penalty_factor=10000.0)
    assert tr.allowed[0].tolist() == [[False, False], [False, True]]
    assert tr.costs[0].tolist() == [[4e6, 4e6], [4e6, 0.0]]  # broken: |segment|^2 * 10^4 = 400 * 10^4
    assert tr.routes[0][(1, 1)] == [0, 1, 2, 3, 4]


def test_corridor_transition_broken_beyond_five_hops():
    g, path, cands = corridor_case(2.0)  # 10 hops: the released cut-off (maxInspectedNodes = 5) breaks it
    tr = corridor_transitions(g, path, cands, corridor=25.0, penalty_factor=10000.0)
    assert not tr.allowed[0].any()


def test_corridor_transition_broken_outside_the_corridor():
    g = road([(0, 0), (0, 100), (20, 100), (20, 0)])  # connected only through nodes 100 px away
    cands = [[(0.0,), (25.0, 0, (0.0, 0.0))], [(0.0,), (25.0, 3, (20.0, 0.0))]]
    tr = corridor_transitions(g, np.array([[0.0, 5.0], [20.0, 5.0]]), cands, 25.0, 10000.0)
    assert not tr.allowed[0].any()


def test_viterbi_prefers_unmatched_when_the_snap_costs_more_than_the_break():
    cands = [[(0.0,), (1.0, 0, ())], [(0.0,), (1.0, 1, ())], [(0.0,), (900.0, 2, ())]]
    free = np.array([[5.0, 5.0], [5.0, 0.0]])
    assert viterbi_states(cands, [free, free]) == [1, 1, 0]  # 900 > a break of 5
    assert viterbi_states(cands, [free, free * 1000]) == [1, 1, 1]  # 900 < a break of 5000


def test_aligned_pieces_score_interruptions_and_routes():
    pts = np.array([[x, 0.0] for x in (0.0, 10.0, 20.0, 30.0, 40.0)])
    cands = [[(0.0,), (1.0, 10 + k, ())] for k in range(5)]
    allowed = [np.array([[False, False], [False, ok]]) for ok in (True, True, False, False)]
    routes = [{(1, 1): [10, 11]}, {(1, 1): [11, 12]}, {}, {}]
    tr = Transitions(costs=[], allowed=allowed, routes=routes)
    res = aligned_pieces(pts, pts, cands, tr, [1, 1, 1, 0, 1])
    assert res.score == pytest.approx(20.0**2 / 40.0**2)  # one aligned piece of 20 px on a 40 px path
    assert res.interruptions == 2  # the break after vertex 2 and the unmatched end
    assert not res.connected
    assert res.routes == [[10, 10, 11, 11, 11, 12, 12]]


def test_removal_deletes_detours_and_skips_after_node_zero():
    g = nx.Graph([(1, 2), (2, 3), (2, 4), (3, 5)])
    remove_matched_routes(g, [[1, 2, 4, 2, 3]])  # out to a foot on the side road 2-4 and back
    assert sorted(map(sorted, g.edges)) == [[3, 5]]  # the side road went too (the default mode keeps it)
    assert 4 not in g
    h = nx.path_graph(3)
    remove_matched_routes(h, [[0, 1, 2]])
    assert list(h.edges) == [(0, 1)]  # `if prev_node`: the step from node 0 is skipped, as in the released code


def test_unsplit_inserted_nodes():
    g = nx.Graph([(0, 5), (5, 1), (1, 6)])
    unsplit_inserted_nodes(g, last_original_id=1)
    assert sorted(map(sorted, g.edges)) == [[0, 1], [1, 6]]  # 5 had two neighbours; 6 has one and stays


def test_released_decomposition_covers_every_edge_once_and_repeats_with_the_seed():
    g = nx.Graph([(0, 1), (1, 2), (1, 3), (3, 4), (4, 5), (5, 3), (5, 6)])
    paths = released_decomposition(g, seed=3)
    edges = sorted(sorted(e) for p in paths for e in itertools.pairwise(p))
    assert edges == sorted(sorted(e) for e in g.edges)
    assert released_decomposition(g, seed=random.Random(3)) == paths
    assert g.number_of_edges() == 7  # input untouched
    assert released_decomposition(nx.path_graph(5), seed=0) in ([[0, 1, 2, 3, 4]], [[4, 3, 2, 1, 0]])


def test_prepare_keeps_source_ids_merges_coincident_nodes():
    g = nx.Graph()
    g.add_node(0, pos=(0.0, 0.0), source_id=17)
    g.add_node(1, pos=(5.0, 0.0), source_id=18)
    g.add_node(2, pos=(0.0, 0.0), source_id=40)  # same place as 17
    g.add_node(3, pos=(0.0, 9.0), source_id=41)
    g.add_edges_from([(0, 1), (2, 3), (3, 3)])
    out = prepare_released_graph(g)
    assert list(out.nodes) == [17, 18, 41]
    assert sorted(map(sorted, out.edges)) == [[17, 18], [17, 41]]


def test_identical_graphs_align_fully_and_inputs_stay():
    gt = road([(0, 0), (40, 0), (80, 0), (80, 60)])
    pred = road([(0, 0), (40, 0), (80, 0), (80, 60)], first_id=10)
    mean, n_paths, connected, interruptions = reference_path_alignment(gt, pred, seed=0)
    assert (mean, n_paths, connected, interruptions) == (pytest.approx(1.0), 1, 1, 0)
    assert pred.number_of_edges() == 3
