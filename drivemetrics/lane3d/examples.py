"""Small OpenLane 3D lane inputs for the examples: one call gives the family's ``update`` arguments.

The family class's example builds its inputs in full, so a reader sees the format; the scalar classes' examples
call the helper here (``OpenLane3DFScore()(**drivemetrics.lane3d.openlane3d_example_inputs())``) and show only
their value.
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["apollo3d_example_inputs", "once3d_example_inputs", "openlane3d_example_inputs"]


def openlane3d_example_inputs() -> dict[str, dict[str, Tensor]]:
    """One frame: two straight GT lanes from y = 3 to 52 m (categories 1 and 2) at x = -1.8 and 1.8 m; predicted
    0.2 m and 0.5 m to their right and 0.1 m / 0.3 m high (the second with category 3), and a false lane at x = 7 m.

    Returns ``{"preds": {"points", "labels"}, "target": {"points", "labels"}}`` with points ``(1, L, 2, 3)`` in the
    evaluator's ground frame, metres: recall 1, precision 2 / 3, F-score 0.8, category accuracy 0.5, x errors 0.35 m,
    z errors 0.2 m.

    Examples:
        >>> from drivemetrics.lane3d import openlane3d_example_inputs
        >>> openlane3d_example_inputs()["target"]["points"][0, 0]
        tensor([[-1.8000,  3.0000,  0.0000],
                [-1.8000, 52.0000,  0.0000]])
    """
    lane = torch.tensor([[0.0, 3.0, 0.0], [0.0, 52.0, 0.0]])
    target = torch.stack([lane + torch.tensor([-1.8, 0.0, 0.0]), lane + torch.tensor([1.8, 0.0, 0.0])])[None]
    shifts = torch.tensor([[0.2, 0.0, 0.1], [0.5, 0.0, 0.3], [5.2, 0.0, 0.0]])[None, :, None]
    preds = torch.cat([target, target[:, 1:]], 1) + shifts
    return {
        "preds": {"points": preds, "labels": torch.tensor([[1, 3, 1]])},
        "target": {"points": target, "labels": torch.tensor([[1, 2]])},
    }


def apollo3d_example_inputs() -> dict[str, dict[str, Tensor]]:
    """The OpenLane example's lanes for Apollo 3D Lane Synthetic (GT 3-52 m at x = -1.8 / 1.8 m, all visible;
    predictions 0.2 / 0.5 m right and 0.1 / 0.3 m high, a false lane at x = 7 m) with probabilities 0.9, 0.6, 0.3.

    Returns ``{"preds": {"points", "scores"}, "target": {"points"}}`` (``(1, L, 2, 3)``, ground frame, metres): F 0.8
    below the threshold 0.3 (the false lane counts), max F 1 from 0.3 on, AP 0.9211, x errors 0.35 m, z errors 0.2 m.

    Examples:
        >>> from drivemetrics.lane3d.examples import apollo3d_example_inputs
        >>> apollo3d_example_inputs()["preds"]["scores"]
        tensor([[0.9000, 0.6000, 0.3000]], dtype=torch.float64)
    """
    inputs = openlane3d_example_inputs()
    preds = {"points": inputs["preds"]["points"], "scores": torch.tensor([[0.9, 0.6, 0.3]], dtype=torch.float64)}
    return {"preds": preds, "target": {"points": inputs["target"]["points"]}}


def once3d_example_inputs() -> dict[str, dict[str, Tensor]]:
    """Two GT lanes in the camera frame (x = 1.8 and -1.8 m, 1.6 m below the camera, z 3-40 m) and one prediction
    0.1 m right of the first with score 0.97: at 0.95, F1 2 / 3, precision 1, recall 0.5, distance error 0.1 m.

    Examples:
        >>> from drivemetrics.lane3d.examples import once3d_example_inputs
        >>> once3d_example_inputs()["preds"]["scores"]
        tensor([[0.9700]])
    """
    z = torch.arange(3.0, 41.0)
    lane = torch.stack([torch.full_like(z, 1.8), torch.full_like(z, 1.6), z], 1)
    target = torch.stack([lane, lane - torch.tensor([3.6, 0.0, 0.0])])[None]
    preds = (lane + torch.tensor([0.1, 0.0, 0.0]))[None, None]
    return {"preds": {"points": preds, "scores": torch.tensor([[0.97]])}, "target": {"points": target}}
