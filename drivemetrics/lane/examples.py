"""Small lane inputs for the examples: one call gives a family's ``update`` arguments.

The family classes' examples build their inputs in full, so a reader sees the format; the scalar classes' examples
call a helper here (``CULaneF1Score()(**drivemetrics.lane.culane_example_inputs())``) and show only their value.
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["culane_example_inputs", "curvelanes_example_inputs", "llamas_example_inputs", "tusimple_example_inputs"]


def tusimple_example_inputs() -> dict[str, Tensor]:
    """Two ground-truth lanes at TuSimple's rows and predictions 5 px to their right (inside the 20 px threshold).

    Returns ``{"preds": (1, 2, 56), "target": (1, 2, 56), "h_samples": (56,)}`` (x and rows in pixels), the inputs
    of the :class:`~drivemetrics.lane.TuSimpleMetrics` example.

    Examples:
        >>> from drivemetrics.lane import tusimple_example_inputs
        >>> {name: tuple(value.shape) for name, value in tusimple_example_inputs().items()}
        {'preds': (1, 2, 56), 'target': (1, 2, 56), 'h_samples': (56,)}
    """
    rows = torch.arange(160.0, 720.0, 10.0)
    target = torch.stack([400 - 0.3 * (rows - 160), 880 + 0.3 * (rows - 160)])[None]
    return {"preds": target + 5.0, "target": target, "h_samples": rows}


def culane_example_inputs() -> dict[str, Tensor]:
    """One ground-truth lane, predicted exactly and with a false lane 300 px to its right.

    Returns ``{"preds": (1, 2, 2, 2), "target": (1, 1, 2, 2)}`` (``(B, L, P, 2)`` points in pixels), the inputs of
    the :class:`~drivemetrics.lane.CULaneMetrics` example.

    Examples:
        >>> from drivemetrics.lane import culane_example_inputs
        >>> culane_example_inputs()["target"]
        tensor([[[[800., 580.],
                  [820., 300.]]]])
    """
    target = torch.tensor([[[[800.0, 580.0], [820.0, 300.0]]]])
    return {"preds": torch.cat([target, target + torch.tensor([300.0, 0.0])], 1), "target": target}


def llamas_example_inputs() -> dict[str, Tensor]:
    """One LLAMAS GT lane (one point per row 300-716), predicted exactly and with a false lane on the left.

    Returns ``{"preds": (1, 2, 2, 2), "target": (1, 1, 417, 2)}`` (``(B, L, P, 2)`` points in pixels), the inputs
    of the :class:`~drivemetrics.lane.LlamasMetrics` example.

    Examples:
        >>> from drivemetrics.lane.examples import llamas_example_inputs
        >>> {name: tuple(value.shape) for name, value in llamas_example_inputs().items()}
        {'preds': (1, 2, 2, 2), 'target': (1, 1, 417, 2)}
    """
    rows = torch.arange(300.0, 717.0)
    target = torch.stack([640 + 0.5 * (rows - 300), rows], -1)[None, None]
    preds = torch.tensor([[[[640.0, 300.0], [848.0, 716.0]], [[100.0, 716.0], [300.0, 400.0]]]])
    return {"preds": preds, "target": target}


def curvelanes_example_inputs() -> dict[str, Tensor]:
    """One CurveLanes GT lane in a 2560 x 1440 image, predicted exactly and with a false lane 600 px to its right
    (no scores: both kept).

    Returns ``{"preds": (1, 2, 2, 2), "target": (1, 1, 2, 2), "image_size": (1, 2)}``, the inputs of the
    :class:`~drivemetrics.lane.CurveLanesMetrics` scalar examples.

    Examples:
        >>> from drivemetrics.lane.examples import curvelanes_example_inputs
        >>> curvelanes_example_inputs()["image_size"]
        tensor([[2560., 1440.]])
    """
    target = torch.tensor([[[[1000.0, 1439.0], [1200.0, 700.0]]]])
    preds = torch.cat([target, target + torch.tensor([600.0, 0.0])], 1)
    return {"preds": preds, "target": target, "image_size": torch.tensor([[2560.0, 1440.0]])}
