"""Small vectorised-map inputs for the examples: one call gives the map family's ``update`` arguments.

The family class's example builds its inputs in full, so a reader sees the format; the scalar classes' examples
call the helper here (``VectorMapMeanAveragePrecision()(**drivemetrics.vectormap.vector_map_example_inputs())``)
and show only their value.
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["vector_map_example_inputs"]


def vector_map_example_inputs() -> dict[str, dict[str, Tensor]]:
    """One frame with one 10 m divider (label 0, as under every protocol), predicted 0.6 m to its side, score 0.9.

    Returns ``{"preds": {"points", "labels", "scores"}, "target": {"points", "labels"}}`` with points ``(1, 1, 2, 2)``
    in metres, the inputs of the :class:`~drivemetrics.vectormap.VectorMapAPMetrics` example.

    Examples:
        >>> from drivemetrics.vectormap import vector_map_example_inputs
        >>> vector_map_example_inputs()["preds"]["points"]
        tensor([[[[ 0.0000,  0.6000],
                  [10.0000,  0.6000]]]])
    """
    line = torch.tensor([[[[0.0, 0.0], [10.0, 0.0]]]])
    labels = torch.tensor([[0]])  # divider: drivemetrics.vectormap.protocol.MAP_CLASSES
    preds = {"points": line + torch.tensor([0.0, 0.6]), "labels": labels, "scores": torch.tensor([[0.9]])}
    return {"preds": preds, "target": {"points": line, "labels": labels.clone()}}
