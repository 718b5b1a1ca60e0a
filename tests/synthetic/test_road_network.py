from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest

from drivemetrics.graph.geometry import validate_graph
from drivemetrics.synthetic import make_road_network


def _positions(graph):
    return np.array([graph.nodes[n]["pos"] for n in sorted(graph.nodes)])


def _edge_lengths(graph):
    return np.array([math.dist(graph.nodes[a]["pos"], graph.nodes[b]["pos"]) for a, b in graph.edges])


def test_same_seed_same_graph_other_seed_other_graph():
    a, b, c = make_road_network(1024, seed=3), make_road_network(1024, seed=3), make_road_network(1024, seed=4)
    assert np.array_equal(_positions(a), _positions(b))
    assert sorted(a.edges) == sorted(b.edges)
    assert a.graph == b.graph
    assert _positions(a).shape != _positions(c).shape or not np.allclose(_positions(a), _positions(c))


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("size", [768.0, 1500.0])
def test_valid_connected_graph_inside_the_tile(seed, size):
    graph = make_road_network(size, seed=seed)
    assert sorted(graph.nodes) == list(range(graph.number_of_nodes()))
    clean = validate_graph(graph, "graph", allow_empty=False)  # no duplicates merged, nothing dropped
    assert clean.number_of_nodes() == graph.number_of_nodes()
    assert clean.number_of_edges() == graph.number_of_edges()
    assert nx.is_connected(graph)
    pos = _positions(graph)
    assert (pos >= 0).all()
    assert (pos <= size).all()
    degrees = np.array([d for _, d in graph.degree])
    assert degrees.max() <= 4
    assert (degrees == 1).sum() == graph.graph["n_dead_ends"] > 0
    assert graph.graph["n_curved"] > 0
    assert (degrees == 3).any()  # dead ends make T junctions besides the 4-way crossings
    assert (degrees == 4).any()
    assert _edge_lengths(graph).min() > 20.0


def test_plain_grid_by_hand():
    # 1024 px, 160 px spacing: floor(1024 / 160) = 6 intersections per axis, centered: first at (1024 - 800) / 2
    graph = make_road_network(1024, 160, seed=0, jitter=0, dead_end_fraction=0, curved_fraction=0)
    assert graph.number_of_nodes() == 36
    assert graph.number_of_edges() == 2 * 6 * 5
    np.testing.assert_allclose(_edge_lengths(graph), 160.0)
    coords = 112.0 + 160.0 * np.arange(6)
    pos = _positions(graph)
    assert set(np.unique(pos[:, 0])) == set(coords)
    assert set(np.unique(pos[:, 1])) == set(coords)
    corners = [n for n, d in graph.degree if d == 2]
    assert len(corners) == 4


def test_dead_ends_are_40_to_60_percent_spurs_of_a_street():
    graph = make_road_network(1024, 160, seed=1, jitter=0, dead_end_fraction=0.2, curved_fraction=0)
    tips = [n for n, d in graph.degree if d == 1]
    assert len(tips) == graph.graph["n_dead_ends"] == 12  # round(0.2 * 60), all placeable on a 6 x 6 grid
    for tip in tips:
        (base,) = graph.neighbors(tip)
        length = math.dist(graph.nodes[tip]["pos"], graph.nodes[base]["pos"])
        assert 0.4 * 160 <= length <= 0.6 * 160
        # the spur runs along a grid line
        assert min(abs(graph.nodes[tip]["pos"][i] - graph.nodes[base]["pos"][i]) for i in (0, 1)) == 0.0
    assert graph.number_of_edges() == 60  # each spur replaces one street


def test_curved_streets_by_hand():
    # every street bent: chord 160 px, bulge 0.2 * 160 = 32 px at the middle; ceil(160 * 1.08 / 64) = 3 pieces, so the
    # inner vertices sit at t = 1/3, 2/3: along the chord at 160 t, sideways 4 * 32 * t (1 - t) = 28.44 px
    graph = make_road_network(1024, 160, seed=0, jitter=0, dead_end_fraction=0, curved_fraction=1.0, bend=0.2)
    assert graph.graph["n_curved"] == 60
    assert graph.number_of_nodes() == 36 + 2 * 60
    grid = 112.0 + 160.0 * np.arange(6)
    inner = _positions(graph)[36:]
    sideways = 4 * 32 * (1 / 3) * (2 / 3)
    dx = np.abs(inner[:, :1] - grid).min(axis=1)  # distance to the nearest vertical grid line
    dy = np.abs(inner[:, 1:] - grid).min(axis=1)
    # one coordinate is 28.44 px off its street's line, the other 160 / 3 px from the nearest crossing street
    np.testing.assert_allclose(np.sort(np.stack([dx, dy], axis=1), axis=1), [[sideways, 160 / 3]] * 120, atol=1e-9)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"size": -5}, "size"),
        ({"size": 300, "spacing": 200}, "spacing"),
        ({"jitter": 0.5}, "jitter"),
        ({"dead_end_fraction": 1.5}, "dead_end_fraction"),
        ({"curved_fraction": -0.1}, "curved_fraction"),
        ({"bend": 0.9}, "bend"),
        ({"curve_step": 0}, "curve_step"),
    ],
)
def test_bad_arguments_are_named(kwargs, name):
    with pytest.raises(ValueError, match=f"`{name}`"):
        make_road_network(**kwargs)
