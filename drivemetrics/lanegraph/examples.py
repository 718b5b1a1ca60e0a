"""Small lane graphs for the examples: one call gives a family's ``update`` arguments.

The family classes' examples build their inputs in full, so a reader sees the format; the scalar classes' examples
call a helper here (``LaneGraphAPLS()(**drivemetrics.lanegraph.lanegraph_example_inputs())``) and show only their
value.
"""

from __future__ import annotations

import networkx as nx
import numpy as np

__all__ = ["lanegraph_example_inputs", "planning_example_inputs"]


def _with_pos(graph: nx.DiGraph, xy: list[tuple[float, float]]) -> nx.DiGraph:
    nx.set_node_attributes(graph, {n: np.array(p, dtype=float) for n, p in enumerate(xy)}, "pos")
    return graph


def lanegraph_example_inputs() -> dict[str, nx.DiGraph]:
    """Two forks, ``{"preds": graph, "target": graph}``: the predicted one 4 px off, its second branch elsewhere.

    Node ``pos`` is ``(x, y)`` in pixels; the graphs of the :class:`~drivemetrics.lanegraph.LaneGraphMetrics`
    example.

    Examples:
        >>> from drivemetrics.lanegraph import lanegraph_example_inputs
        >>> inputs = lanegraph_example_inputs()
        >>> sorted(inputs["preds"].edges)
        [(0, 1), (1, 2), (1, 3)]
    """
    target = _with_pos(nx.DiGraph([(0, 1), (1, 2), (1, 3)]), [(0, 50), (200, 50), (400, 50), (400, 250)])
    preds = _with_pos(nx.DiGraph([(0, 1), (1, 2), (1, 3)]), [(0, 54), (210, 54), (400, 54), (300, 250)])
    return {"preds": preds, "target": target}


def planning_example_inputs() -> dict[str, nx.DiGraph]:
    """Two straight lanes of 80 nodes 5 px apart, the predicted one 3 px beside the ground truth.

    ``{"preds": graph, "target": graph}``, node ``pos`` in pixels; the graphs of the
    :class:`~drivemetrics.lanegraph.LaneGraphPlanningMetrics` example.

    Examples:
        >>> from drivemetrics.lanegraph import planning_example_inputs
        >>> inputs = planning_example_inputs()
        >>> inputs["preds"].nodes[79]["pos"]
        array([395.,   3.])
    """
    target = _with_pos(nx.path_graph(80, nx.DiGraph), [(5.0 * n, 0.0) for n in range(80)])
    preds = _with_pos(nx.path_graph(80, nx.DiGraph), [(5.0 * n, 3.0) for n in range(80)])
    return {"preds": preds, "target": target}
