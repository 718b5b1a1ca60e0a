"""Small vectorised-map inputs for the examples: one call gives the map family's ``update`` arguments.

The family class's example builds its inputs in full, so a reader sees the format; the scalar classes' examples
call the helper here (``VectorMapMeanAveragePrecision()(**drivemetrics.vectormap.vector_map_example_inputs())``)
and show only their value.
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["consistent_map_example_inputs", "vector_map_example_inputs"]


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


def consistent_map_example_inputs() -> dict[str, object]:
    """One scene of three frames, the ego driving 2 m forward per frame along a 40 m divider (label 1), predicted
    0.2 m to its side (score 0.9), and a boundary (label 2) predicted only in the last frame, 0.3 m off.

    Returns ``{"preds", "target", "scene", "pose"}``: the keyword arguments of
    :meth:`~drivemetrics.vectormap.ConsistentMapAPMetrics.update` (points ``(3, 2, 2, 2)`` metres, ``pose``
    ``(3, 4, 4)`` ego -> global).

    Examples:
        >>> from drivemetrics.vectormap.examples import consistent_map_example_inputs
        >>> inputs = consistent_map_example_inputs()
        >>> inputs["pose"][:, 0, 3], inputs["scene"]
        (tensor([0., 2., 4.]), ['scene-1', 'scene-1', 'scene-1'])
    """
    divider = torch.tensor([[-20.0, 1.0], [20.0, 1.0]])
    boundary = torch.tensor([[-20.0, -6.0], [20.0, -6.0]])
    shift = torch.tensor([[2.0 * k, 0.0] for k in range(3)])[:, None, None, :]  # the map moves back as the ego drives
    target = torch.stack([divider, boundary])[None] - shift  # (3, 2, 2, 2)
    preds = target + torch.tensor([[0.0, 0.2], [0.0, 0.3]])[None, :, None, :]
    scores = torch.tensor([[0.9, 0.0], [0.9, 0.0], [0.9, 0.8]])
    pose = torch.eye(4).repeat(3, 1, 1)
    pose[:, 0, 3] = torch.tensor([0.0, 2.0, 4.0])
    labels = torch.tensor([[1, 2]] * 3)
    return {
        "preds": {"points": preds, "labels": labels, "scores": scores},
        "target": {"points": target, "labels": labels.clone()},
        "scene": ["scene-1"] * 3,
        "pose": pose,
    }
