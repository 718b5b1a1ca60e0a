"""Small hand-made lane graphs shared by the lane-graph tests."""

import networkx as nx
import numpy as np


def lane(points, offset=0, directed_pairs=None):
    """Directed chain through ``points`` (node ids from ``offset``)."""
    g = nx.DiGraph()
    for i, p in enumerate(points):
        g.add_node(offset + i, pos=np.array(p, dtype=float))
    for i in range(len(points) - 1):
        g.add_edge(offset + i, offset + i + 1)
    for u, v in directed_pairs or []:
        g.add_edge(u, v)
    return g


def straight(x0, x1, y=0.0, step=10.0):
    xs = np.arange(x0, x1 + 1e-9, step)
    return lane([(x, y) for x in xs])


def fork(at=(0.0, 0.0)):
    """A split node at ``at`` with two successors."""
    x, y = at
    g = nx.DiGraph()
    g.add_node(0, pos=np.array([x - 50.0, y]))
    g.add_node(1, pos=np.array([x, y]))
    g.add_node(2, pos=np.array([x + 50.0, y + 30.0]))
    g.add_node(3, pos=np.array([x + 50.0, y - 30.0]))
    g.add_edges_from([(0, 1), (1, 2), (1, 3)])
    return g
