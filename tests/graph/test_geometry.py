import itertools
import math

import networkx as nx
import numpy as np
import pytest

from drivemetrics.graph.geometry import (
    SegmentIndex,
    control_nodes,
    crop,
    densify,
    endpoints,
    graph_arrays,
    graph_from_arrays,
    graph_length,
    junctions,
    match_points,
    project_points,
    resample_chains,
    road_chains,
    snap_points,
    translate,
    validate_graph,
)


def _graph(points, edges):
    return graph_from_arrays(np.asarray(points, dtype=float), np.asarray(edges))


def _brute_point_segment(p, a, b):
    """Distance from p to every segment a[k]-b[k], written as a plain loop."""
    out = []
    for (ax, ay), (bx, by) in zip(a, b, strict=True):
        dx, dy = bx - ax, by - ay
        den = dx * dx + dy * dy
        t = 0.0 if den == 0 else max(0.0, min(1.0, ((p[0] - ax) * dx + (p[1] - ay) * dy) / den))
        out.append(math.hypot(p[0] - (ax + t * dx), p[1] - (ay + t * dy)))
    return np.array(out)


# ---------------------------------------------------------------- validation


def test_validate_rejects_bad_graphs():
    with pytest.raises(TypeError, match="`preds` must be a networkx graph"):
        validate_graph([(0, 1)], "preds")
    g = nx.Graph([(0, 1)])
    with pytest.raises(ValueError, match="`target` node 0 has no 'pos'"):
        validate_graph(g, "target")
    g.nodes[0]["pos"] = (0.0, 0.0)
    g.nodes[1]["pos"] = (float("nan"), 1.0)
    with pytest.raises(ValueError, match=r"`target` has 1 node.*NaN"):
        validate_graph(g, "target")
    g.nodes[1]["pos"] = (1.0, 2.0, 3.0)
    with pytest.raises(ValueError, match="two numbers"):
        validate_graph(g, "target")
    with pytest.raises(ValueError, match="`target` graph is empty"):
        validate_graph(nx.Graph(), "target", allow_empty=False)
    lonely = nx.Graph()
    lonely.add_node(0, pos=(1, 1))
    with pytest.raises(ValueError, match="is empty"):
        validate_graph(lonely, "target", allow_empty=False)


def test_validate_cleans_without_mutating():
    g = nx.MultiDiGraph()
    g.add_node("a", pos=(0, 0))
    g.add_node("b", pos=(10, 0))
    g.add_node("b2", pos=(10, 0))  # duplicate position of b
    g.add_node("c", pos=(10, 10))
    g.add_node("lonely", pos=(50, 50))
    g.add_edges_from([("a", "b"), ("b", "a"), ("b2", "c"), ("c", "c")])
    out = validate_graph(g, "g")
    assert g.number_of_nodes() == 5
    assert g.number_of_edges() == 4
    assert type(out) is nx.Graph
    assert out.number_of_nodes() == 3  # b2 merged into b, lonely dropped
    assert out.number_of_edges() == 2  # self-loop dropped, a-b once
    assert {out.nodes[n]["source_id"] for n in out} == {"a", "b", "c"}
    assert dict(out.degree)[1] == 2
    kept = validate_graph(g, "g", merge_duplicates=False, keep_isolated=True)
    assert kept.number_of_nodes() == 5


# ---------------------------------------------------------------- densify / resample


def test_densify_by_hand():
    g = _graph([[0, 0], [25, 0], [25, 4]], [[0, 1], [1, 2]])
    d = densify(g, 10)
    # 25 px -> 3 pieces of 8.33, 4 px -> unchanged
    assert d.number_of_nodes() == 5
    assert d.number_of_edges() == 4
    assert all(d.nodes[n]["pos"] == g.nodes[n]["pos"] for n in g)
    assert sorted(d.nodes[n]["pos"][0] for n in (3, 4)) == pytest.approx([25 / 3, 50 / 3])
    arr = graph_arrays(d)
    assert arr.lengths.max() <= 10
    assert graph_length(d) == pytest.approx(29.0)
    with pytest.raises(ValueError, match="spacing"):
        densify(g, 0)


def test_resample_chains_regular_spacing():
    # a T: long arm drawn with 1 px edges, junction at (100, 0), short branch of 30 px
    xs = np.arange(0, 101, 1.0)
    pts = [[x, 0] for x in xs] + [[100, 30]]
    edges = [[i, i + 1] for i in range(100)] + [[100, 101], [100, 102]]
    pts.append([130, 0])
    g = _graph(pts, edges)
    r = resample_chains(g, 10)
    assert sorted(d for _, d in r.degree) == [1, 1, 1] + [2] * (9 + 2 + 2) + [3]
    arr = graph_arrays(r)
    assert arr.lengths == pytest.approx(np.full(len(arr.lengths), 10.0))
    assert graph_length(r) == pytest.approx(160.0)
    # a closed loop with no control node keeps its anchor and is resampled too
    ring = nx.cycle_graph(40)
    nx.set_node_attributes(
        ring, {k: (math.cos(k / 40 * 2 * math.pi), math.sin(k / 40 * 2 * math.pi)) for k in ring}, "pos"
    )
    rr = resample_chains(ring, 0.5)
    assert rr.number_of_edges() == rr.number_of_nodes() == math.ceil(graph_length(ring) / 0.5)


def test_road_chains_cover_every_edge_once():
    g = nx.path_graph(5)  # 0-1-2-3-4, plus a branch at 2 and a separate triangle
    g.add_edge(2, 9)
    g.add_edges_from([(20, 21), (21, 22), (22, 20)])
    chains = road_chains(g)
    edges = [frozenset(e) for c in chains for e in itertools.pairwise(c)]
    assert len(edges) == len(set(edges)) == g.number_of_edges()
    ends = sorted(tuple(sorted((c[0], c[-1]))) for c in chains)
    assert ends[:3] == [(0, 2), (2, 4), (2, 9)]
    (triangle,) = [c for c in chains if c[0] >= 20]
    assert triangle[0] == triangle[-1]
    assert len(triangle) == 4


# ---------------------------------------------------------------- projection


def test_segment_index_matches_brute_force():
    rng = np.random.default_rng(0)
    pos = rng.uniform(0, 200, (60, 2))
    edges = rng.integers(0, 60, (90, 2))
    edges = edges[edges[:, 0] != edges[:, 1]]
    index = SegmentIndex(pos, edges, piece_length=7.0)
    pts = rng.uniform(-20, 220, (200, 2))
    proj = index.nearest(pts)
    within = index.nearest(pts, max_dist=15.0)
    p_idx, e_idx, _, dist = index.within(pts, 15.0)
    for k, p in enumerate(pts):
        d = _brute_point_segment(p, pos[edges[:, 0]], pos[edges[:, 1]])
        assert proj.distance[k] == pytest.approx(d.min(), abs=1e-9)
        assert d[proj.edge[k]] == pytest.approx(d.min(), abs=1e-9)
        assert np.linalg.norm(proj.foot[k] - p) == pytest.approx(d.min(), abs=1e-9)
        if d.min() <= 15.0:
            assert within.distance[k] == pytest.approx(d.min(), abs=1e-9)
        else:
            assert within.edge[k] == -1
        assert set(e_idx[p_idx == k].tolist()) == set(np.flatnonzero(d <= 15.0).tolist())
    assert np.all(np.diff(dist[p_idx == 0]) >= 0)


def test_project_points_returns_edge_ids():
    g = _graph([[0, 0], [100, 0], [100, 100]], [[0, 1], [1, 2]])
    proj, edges = project_points(g, np.array([[40.0, 3.0], [104.0, 60.0]]))
    assert edges[proj.edge[0]] in ((0, 1), (1, 0))
    assert proj.foot[0] == pytest.approx([40.0, 0.0])
    assert proj.distance[1] == pytest.approx(4.0)
    assert set(edges[proj.edge[1]]) == {1, 2}


def test_snap_points_by_hand():
    g = _graph([[0, 0], [100, 0]], [[0, 1]])
    pts = np.array([[30, 5], [2, 3], [-10, 0], [50, 40], [70, -2], [99, 1]], dtype=float)
    out, ids = snap_points(g, pts, max_dist=25, existing_dist=5)
    assert ids[1] == 0  # within existing_dist of node 0
    assert ids[2] == 0  # projection clamps onto node 0
    assert ids[3] is None  # 40 px away
    assert ids[5] == 1
    assert out.nodes[ids[0]]["pos"] == (30.0, 0.0)
    assert out.nodes[ids[4]]["pos"] == (70.0, 0.0)
    # the edge is split in order along it: 0 - 30 - 70 - 1
    assert nx.shortest_path(out, 0, 1) == [0, ids[0], ids[4], 1]
    assert g.number_of_nodes() == 2  # input untouched
    assert g.number_of_edges() == 1


# ---------------------------------------------------------------- crop / degree


def _id_graph(points, edges, ids=None):
    """Graph with the given integer ids (default 0..N-1), node order as listed."""
    g = nx.Graph()
    ids = list(range(len(points))) if ids is None else ids
    for n, p in zip(ids, points, strict=True):
        g.add_node(n, pos=(float(p[0]), float(p[1])))
    g.add_edges_from(edges)
    return g


def test_crop_reference_drops_an_edge_through_the_box():
    # both ends outside, the edge crosses the box: the released crop drops it, the default keeps the inside piece
    g = _id_graph([[-50, 5], [50, 5], [2, 2], [8, 8]], [(0, 1), (2, 3)])
    ref = crop(g, 0, 0, 10, 10, compat="reference")
    assert list(ref.nodes) == [2, 3]
    assert list(ref.edges) == [(2, 3)]
    default = crop(g, 0, 0, 10, 10)
    assert default.number_of_edges() == 2
    assert sorted(default.nodes[n]["pos"] for n in default)[:2] == [(0.0, 5.0), (2.0, 2.0)]


def test_crop_reference_half_open_box():
    # x == xmax is outside in the released crop (a new node is made on the side), inside for the default
    g = _id_graph([[5, 5], [10, 5]], [(0, 1)])
    ref = crop(g, 0, 0, 10, 10, compat="reference")
    assert list(ref.nodes) == [0, 2]  # node 1 (x = xmax) is outside, replaced by new node 2 = max(id) + 1
    assert ref.nodes[2]["pos"] == (10.0, 5.0)
    assert list(crop(g, 0, 0, 10, 10).nodes) == [0, 1]


def test_crop_reference_boundary_node_on_the_side_nearest_the_outside_end():
    # outside end (30, -1) lies in the corner region beyond (xmax, ymin): both sides are equally near (the corner),
    # the tie goes to y = ymin, so the new node is where the edge's line meets y = 0: (26.5, 0), outside the box,
    # although the edge leaves the box through x = 10
    g = _id_graph([[9, 5], [30, -1]], [(7, 3)], ids=[7, 3])
    ref = crop(g, 0, 0, 10, 10, compat="reference")
    assert list(ref.nodes) == [7, 8]  # new id = max(id) + 1
    assert ref.nodes[8]["pos"] == pytest.approx((26.5, 0.0), abs=1e-12)
    assert list(ref.edges) == [(7, 8)]
    default = crop(g, 0, 0, 10, 10)
    assert sorted(default.nodes[n]["pos"] for n in default)[1] == pytest.approx((10.0, 5 - 6 / 21))
    # an outside end straight below the box: the side y = 0, where the edge crosses
    g2 = _id_graph([[9, 1], [9.5, -20]], [(0, 1)])
    ref2 = crop(g2, 0, 0, 10, 10, compat="reference")
    assert ref2.nodes[2]["pos"] == pytest.approx((9 + 0.5 / 21, 0.0), abs=1e-12)


def test_crop_reference_keeps_identical_positions_and_ids_in_order():
    g = _id_graph([[1, 1], [5, 5], [5, 5], [9, 9], [20, 20]], [(4, 0), (1, 2), (2, 9), (0, 1)], ids=[4, 0, 1, 2, 9])
    ref = crop(g, 0, 0, 10, 10, compat="reference")
    assert list(ref.nodes) == [4, 0, 1, 2, 10]  # input order, then the new node
    assert ref.nodes[0]["pos"] == ref.nodes[1]["pos"] == (5.0, 5.0)  # not merged
    assert ref.number_of_edges() == 4
    assert crop(g, 0, 0, 10, 10).number_of_nodes() == 4  # the default merges the two nodes at (5, 5)
    with pytest.raises(ValueError, match="integer node ids"):
        crop(nx.relabel_nodes(g, str), 0, 0, 10, 10, compat="reference")
    with pytest.raises(ValueError, match="compat"):
        crop(g, 0, 0, 10, 10, compat="released")


def test_translate_keeps_ids_and_moves_positions():
    g = _id_graph([[1, 2], [3, 4]], [(5, 2)], ids=[5, 2])
    t = translate(g, 10.0, -2.0)
    assert list(t.nodes) == [5, 2]
    assert t.nodes[2]["pos"] == (13.0, 2.0)
    assert g.nodes[2]["pos"] == (3.0, 4.0)


def test_crop_cuts_edges_at_the_window():
    g = _graph([[-10, 0], [10, 0], [50, 50], [200, 200]], [[0, 1], [1, 2], [2, 3]])
    c = crop(g, 0, -5, 100, 100)
    pos = sorted(c.nodes[n]["pos"] for n in c)
    assert pos == [(0.0, 0.0), (10.0, 0.0), (50.0, 50.0), (100.0, 100.0)]
    assert c.number_of_edges() == 3
    b = crop(g, -100, -100, 100, 100, border=60)  # window [-40, 40]^2
    # edge (10, 0)-(50, 50) leaves x = 40 at y = 30 * 50 / 40 = 37.5
    assert sorted(b.nodes[n]["pos"] for n in b) == [(-10.0, 0.0), (10.0, 0.0), (40.0, 37.5)]
    with pytest.raises(ValueError, match="empty"):
        crop(g, 0, 0, 10, 10, border=6)


def test_junctions_endpoints_control_nodes():
    g = nx.star_graph(3)  # center 0 with leaves 1..3
    g.add_edge(3, 4)
    g.add_edge(4, 4)  # self-loop does not count
    assert junctions(g) == [0]
    assert sorted(endpoints(g)) == [1, 2, 4]
    assert sorted(control_nodes(g)) == [0, 1, 2, 4]


# ---------------------------------------------------------------- matching


def _best_matching(a, b, max_dist):
    """Exhaustive: largest number of pairs closer than max_dist, then smallest total distance."""
    best = (0, 0.0)
    d = np.linalg.norm(a[:, None] - b[None], axis=2)
    for r in range(min(len(a), len(b)), 0, -1):
        for rows in itertools.combinations(range(len(a)), r):
            for cols in itertools.permutations(range(len(b)), r):
                cost = [d[i, j] for i, j in zip(rows, cols, strict=True)]
                if max(cost) < max_dist and (r > best[0] or (r == best[0] and sum(cost) < best[1])):
                    best = (r, sum(cost))
        if best[0]:
            return best
    return best


def test_match_points_beats_greedy_and_is_optimal():
    a = np.array([[0.0, 0.0], [20.0, 0.0]])
    b = np.array([[11.0, 0.0], [34.0, 0.0]])
    ia, ib = match_points(a, b, 25.0)
    assert sorted(zip(ia.tolist(), ib.tolist(), strict=True)) == [(0, 0), (1, 1)]  # greedy would stop at 1 pair
    rng = np.random.default_rng(1)
    for _ in range(20):
        a = rng.uniform(0, 60, (5, 2))
        b = rng.uniform(0, 60, (4, 2))
        ia, ib = match_points(a, b, 25.0)
        assert len(set(ia.tolist())) == len(ia)
        assert len(set(ib.tolist())) == len(ib)
        n, cost = _best_matching(a, b, 25.0)
        assert len(ia) == n
        assert np.linalg.norm(a[ia] - b[ib], axis=1).sum() == pytest.approx(cost)
