"""Seeded synthetic road networks (pixel coordinates) for the graph-metric demo and tests.

:func:`make_road_network` lays out a square grid of intersections ``spacing`` px apart, centered in a ``size`` x
``size`` px tile, and moves each one by up to ``jitter * spacing`` px. Neighbouring intersections are joined by
streets; a fraction ``dead_end_fraction`` of the streets is cut short into dead ends (a spur of 40-60 % of the street
from one end), chosen so that the network stays connected and no intersection becomes a dead end itself; a fraction
``curved_fraction`` of the remaining streets is bent into a quadratic Bezier curve (bulge ``bend`` x street length),
drawn as a polyline with vertices about ``curve_step`` px apart (clipped to the tile). Straight streets and spurs
are single edges.

The result is an undirected ``networkx.Graph`` with nodes ``0..N-1`` carrying ``pos = (x, y)`` in pixels (x right,
y down, all inside ``[0, size]``), in the representation of :mod:`drivemetrics.roadnet`. ``graph.graph`` records the
parameters and the counts ``n_dead_ends`` (exactly the nodes of degree 1) and ``n_curved``.
"""

from __future__ import annotations

import math

import networkx as nx
import numpy as np

__all__ = ["make_road_network"]


def _check_fraction(value: float, name: str) -> None:
    if not (isinstance(value, (int, float)) and 0.0 <= value <= 1.0):
        raise ValueError(f"`{name}` must be a number in [0, 1], got {value!r}")


def _cut_dead_ends(
    grid: nx.Graph, streets: list[tuple[int, int]], n_wanted: int, rng: np.random.Generator
) -> list[tuple[int, int]]:
    """Remove up to ``n_wanted`` streets from ``grid`` (in place) while it stays connected and no far end becomes a
    dead end itself; ``(kept end, removed end)`` of each (a spur is drawn from the kept end later)."""
    spurs: list[tuple[int, int]] = []
    for s in rng.permutation(len(streets)):  # loop over candidate streets (tens to hundreds), not points
        if len(spurs) == n_wanted:
            break
        a, b = streets[s]
        if rng.random() < 0.5:
            a, b = b, a
        if grid.degree(b) <= 2:  # b would become a dead end itself
            continue
        grid.remove_edge(a, b)
        if not nx.has_path(grid, a, b):
            grid.add_edge(a, b)
            continue
        spurs.append((a, b))
    return spurs


def make_road_network(
    size: float = 1024.0,
    spacing: float = 160.0,
    seed: int = 0,
    *,
    jitter: float = 0.15,
    dead_end_fraction: float = 0.15,
    curved_fraction: float = 0.25,
    bend: float = 0.2,
    curve_step: float = 64.0,
) -> nx.Graph:
    """A jittered street grid with curved streets and dead ends, nodes with ``pos`` in pixels.

    Args:
        size: side of the square tile, px.
        spacing: distance between neighbouring grid intersections before jitter, px (at most ``size / 2``).
        seed: seed of every random choice (equal seeds, equal graphs).
        jitter: largest move of an intersection along x and along y, as a fraction of ``spacing`` (0 to 0.3).
        dead_end_fraction: fraction of the grid streets turned into dead ends (fewer when connectivity forbids).
        curved_fraction: fraction of the remaining full streets drawn as curves.
        bend: sideways bulge of a curved street at its middle, as a fraction of its chord length (0 to 0.5).
        curve_step: approximate distance between the vertices of a curved street, px.

    Returns:
        ``networkx.Graph``, nodes ``0..N-1`` with ``pos = (x, y)`` (floats, px); connected, maximum degree 4.

    Examples:
        >>> from drivemetrics.synthetic import make_road_network
        >>> graph = make_road_network(size=256.0, spacing=128.0, seed=0)
        >>> graph.number_of_nodes() > 0, all("pos" in data for _, data in graph.nodes(data=True))
        (True, True)
    """
    if not (isinstance(size, (int, float)) and size > 0):
        raise ValueError(f"`size` must be a positive number of pixels, got {size!r}")
    if not (isinstance(spacing, (int, float)) and 0 < spacing <= size / 2):
        raise ValueError(f"`spacing` must be in (0, size / 2] = (0, {size / 2}] px, got {spacing!r}")
    if not (isinstance(jitter, (int, float)) and 0.0 <= jitter <= 0.3):
        raise ValueError(f"`jitter` must be in [0, 0.3] (fraction of `spacing`), got {jitter!r}")
    if not (isinstance(bend, (int, float)) and 0.0 <= bend <= 0.5):
        raise ValueError(f"`bend` must be in [0, 0.5] (fraction of the street length), got {bend!r}")
    if not (isinstance(curve_step, (int, float)) and curve_step > 0):
        raise ValueError(f"`curve_step` must be a positive number of pixels, got {curve_step!r}")
    _check_fraction(dead_end_fraction, "dead_end_fraction")
    _check_fraction(curved_fraction, "curved_fraction")
    rng = np.random.default_rng(seed)

    n = int(size // spacing)  # intersections per axis (>= 2)
    offset = (size - (n - 1) * spacing) / 2
    ii, jj = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")  # row i -> y, column j -> x
    xy = np.stack([offset + jj.ravel() * spacing, offset + ii.ravel() * spacing], axis=1).astype(np.float64)
    xy += rng.uniform(-jitter * spacing, jitter * spacing, size=xy.shape)
    idx = np.arange(n * n).reshape(n, n)
    streets = [(int(a), int(b)) for a, b in zip(idx[:, :-1].ravel(), idx[:, 1:].ravel(), strict=True)]
    streets += [(int(a), int(b)) for a, b in zip(idx[:-1, :].ravel(), idx[1:, :].ravel(), strict=True)]

    grid = nx.Graph(streets)
    spurs = _cut_dead_ends(grid, streets, round(dead_end_fraction * len(streets)), rng)

    graph = nx.Graph()
    for node in range(n * n):
        graph.add_node(node, pos=(float(xy[node, 0]), float(xy[node, 1])))

    def new_node(point: np.ndarray) -> int:
        node = graph.number_of_nodes()
        graph.add_node(node, pos=(float(point[0]), float(point[1])))
        return node

    for a, b in spurs:
        tip = new_node(xy[a] + rng.uniform(0.4, 0.6) * (xy[b] - xy[a]))
        graph.add_edge(a, tip)

    full = sorted(tuple(sorted(e)) for e in grid.edges)
    n_curved = 0
    for a, b in full:
        if rng.random() >= curved_fraction or bend == 0:
            graph.add_edge(a, b)
            continue
        n_curved += 1
        chord = xy[b] - xy[a]
        length = float(np.linalg.norm(chord))
        normal = np.array([-chord[1], chord[0]]) / length
        control = (xy[a] + xy[b]) / 2 + 2 * bend * length * rng.choice([-1.0, 1.0]) * normal  # Bezier mid = bend
        pieces = max(2, math.ceil(length * (1 + 2 * bend**2) / curve_step))
        t = np.linspace(0.0, 1.0, pieces + 1)[1:-1, None]
        inner = np.clip((1 - t) ** 2 * xy[a] + 2 * t * (1 - t) * control + t**2 * xy[b], 0.0, size)
        prev = a
        for point in inner:
            node = new_node(point)
            graph.add_edge(prev, node)
            prev = node
        graph.add_edge(prev, b)

    graph.graph.update(
        size=float(size),
        spacing=float(spacing),
        seed=int(seed),
        n_dead_ends=len(spurs),
        n_curved=n_curved,
    )
    return graph
