import networkx as nx
import numpy as np
import pytest

from drivemetrics.graph.geometry import SegmentIndex, graph_arrays, graph_length
from drivemetrics.roadnet.perturb import (
    PERTURBATIONS,
    doubled_gt,
    doubled_pred,
    false_positives,
    interruptions,
    node_perturbations,
    overconnections,
    perturb,
)


def grid(n=4, step=200.0):
    """An n x n street grid with nodes every ``step`` px and one mid-block node per street."""
    g = nx.Graph()
    ids = {}
    for i in range(n):
        for j in range(n):
            ids[i, j] = len(ids)
            g.add_node(ids[i, j], pos=(j * step, i * step))
    for i in range(n):
        for j in range(n):
            for di, dj in ((0, 1), (1, 0)):
                if i + di < n and j + dj < n:
                    mid = len(g)
                    g.add_node(mid, pos=((j + dj / 2) * step, (i + di / 2) * step))
                    g.add_edge(ids[i, j], mid)
                    g.add_edge(mid, ids[i + di, j + dj])
    return g


def _same(a, b):
    pa, pb = graph_arrays(a), graph_arrays(b)
    return np.allclose(pa.pos, pb.pos) and sorted(map(sorted, a.edges)) == sorted(map(sorted, b.edges))


@pytest.mark.parametrize("kind", list(PERTURBATIONS))
def test_zero_errors_and_no_mutation(kind):
    g = grid()
    before = nx.node_link_data(g, edges="links")
    pred, gt = perturb(g, kind, 0, seed=1)
    assert _same(pred, gt)
    assert _same(gt, g)
    perturb(g, kind, 3, seed=1)
    assert nx.node_link_data(g, edges="links") == before


@pytest.mark.parametrize("kind", list(PERTURBATIONS))
def test_seeded(kind):
    a_pred, a_gt = perturb(grid(), kind, 3, seed=5)
    b_pred, b_gt = perturb(grid(), kind, 3, seed=5)
    assert _same(a_pred, b_pred)
    assert _same(a_gt, b_gt)


def test_interruptions_remove_exactly_the_gaps():
    g = grid()
    pred, gt = interruptions(g, 5, seed=0, gap=40.0)
    assert graph_length(pred) == pytest.approx(graph_length(gt) - 5 * 40.0)
    assert pred.number_of_edges() == gt.number_of_edges() + 5
    with pytest.raises(ValueError, match="gap"):
        interruptions(g, 1, gap=500.0)


def test_overconnections_add_edges_in_length_range():
    g = grid()
    pred, gt = overconnections(g, 6, seed=0, min_length=150, max_length=300)
    assert pred.number_of_nodes() == gt.number_of_nodes()
    new = set(map(frozenset, pred.edges)) - set(map(frozenset, gt.edges))
    assert len(new) == 6
    for a, b in map(tuple, new):
        d = np.hypot(*np.subtract(pred.nodes[a]["pos"], pred.nodes[b]["pos"]))
        assert 150 <= d <= 300


def test_overconnections_can_keep_away_from_junctions():
    g = grid(step=400.0)
    junction_pos = np.array([g.nodes[n]["pos"] for n in g if g.degree(n) >= 3])
    pred, gt = overconnections(g, 5, seed=1, max_length=300, min_junction_distance=150.0)
    new = set(map(frozenset, pred.edges)) - set(map(frozenset, gt.edges))
    assert len(new) == 5
    for node in set().union(*new):
        assert np.min(np.hypot(*(junction_pos - pred.nodes[node]["pos"]).T)) >= 150.0
    with pytest.raises(ValueError, match="from every junction"):
        overconnections(g, 5, max_length=300, min_junction_distance=250.0)


def test_node_perturbations_move_k_nodes_by_shift():
    pred, gt = node_perturbations(grid(), 7, seed=0, shift=30.0)
    moved = np.linalg.norm(graph_arrays(pred).pos - graph_arrays(gt).pos, axis=1)
    assert (moved > 1e-9).sum() == 7
    np.testing.assert_allclose(moved[moved > 1e-9], 30.0)
    with pytest.raises(ValueError, match="k"):
        node_perturbations(grid(2), 1000)


@pytest.mark.parametrize("fn", [doubled_pred, doubled_gt])
def test_doubled_roads_run_parallel_at_offset(fn):
    pred, gt = fn(grid(), 3, seed=5, offset=15.0, min_length=100)
    doubled, plain = (pred, gt) if fn is doubled_pred else (gt, pred)
    assert graph_length(doubled) > graph_length(plain) + 3 * 150
    new_nodes = [n for n in doubled.nodes if n >= plain.number_of_nodes()]
    assert new_nodes
    index, _ = SegmentIndex.from_graph(plain)
    dist = index.nearest(np.array([doubled.nodes[n]["pos"] for n in new_nodes])).distance
    # mitred joints: 15 px from the road, 15 * sqrt(2) at the outside of a right-angle corner
    assert dist.min() >= 15.0 - 1e-6
    assert dist.max() <= 15.0 * np.sqrt(2) + 1e-6
    assert np.isclose(dist, 15.0).mean() > 0.5
    with pytest.raises(ValueError, match="k"):
        fn(grid(2), 50)


def test_false_positives_are_far_from_gt():
    pred, gt = false_positives(grid(), 4, seed=0, length=80.0, min_distance=40.0)
    assert pred.number_of_edges() == gt.number_of_edges() + 4
    new = [e for e in pred.edges if min(e) >= gt.number_of_nodes()]
    assert len(new) == 4
    index, _ = SegmentIndex.from_graph(gt)
    for a, b in new:
        pa, pb = np.array(pred.nodes[a]["pos"]), np.array(pred.nodes[b]["pos"])
        assert np.linalg.norm(pa - pb) == pytest.approx(80.0)
        samples = pa + np.linspace(0, 1, 41)[:, None] * (pb - pa)
        assert index.nearest(samples).distance.min() >= 40.0 - 1.0  # GT checked on points every 2 px


def test_bad_input():
    with pytest.raises(ValueError, match="kind"):
        perturb(grid(), "typos", 1)
    with pytest.raises(ValueError, match="k"):
        perturb(grid(), "interruptions", -1)
    with pytest.raises(ValueError, match="graph"):
        perturb(nx.Graph(), "interruptions", 1)
