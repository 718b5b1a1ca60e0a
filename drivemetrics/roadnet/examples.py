"""Small road-network inputs for the examples: one call gives a family's ``update`` arguments.

The family classes' examples build their inputs in full, so a reader sees the format; the scalar classes' examples
call the helper here (``OptGRecall()(**drivemetrics.roadnet.roadnet_example_inputs())``) and show only their value.
"""

from __future__ import annotations

import networkx as nx
import numpy as np

__all__ = ["roadnet_example_inputs"]


def roadnet_example_inputs() -> dict[str, nx.Graph]:
    """A crossing and a prediction that lacks one of its arms, 2 px off: ``{"preds": graph, "target": graph}``.

    Node ``pos`` is ``(x, y)`` in pixels; the ground truth has 4 arms of 400 px, the prediction 3. The same graphs
    as in the examples of :class:`~drivemetrics.roadnet.OptGMetrics` and the other families.

    Examples:
        >>> from drivemetrics.roadnet import roadnet_example_inputs
        >>> inputs = roadnet_example_inputs()
        >>> inputs["target"].number_of_edges(), inputs["preds"].number_of_edges()
        (4, 3)
    """
    target, preds = nx.star_graph(4), nx.star_graph(3)
    target_xy = [(0, 0), (-400, 0), (400, 0), (0, -400), (0, 400)]
    preds_xy = [(2, 2), (-400, 2), (400, 2), (2, -400)]
    nx.set_node_attributes(target, {n: np.array(p, dtype=float) for n, p in enumerate(target_xy)}, "pos")
    nx.set_node_attributes(preds, {n: np.array(p, dtype=float) for n, p in enumerate(preds_xy)}, "pos")
    return {"preds": preds, "target": target}
