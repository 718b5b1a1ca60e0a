"""Small road inputs for the examples: one call gives a family's ``update`` arguments.

The family classes' examples build their inputs in full, so a reader sees the format; the scalar classes' examples
call a helper here (``RoadPixelMaxFScore()(**drivemetrics.road.road_pixel_example_inputs())``) and show only
their value.
"""

from __future__ import annotations

import torch
from torch import Tensor

from drivemetrics.geometry.bev import BevGrid

__all__ = ["corridor_example_inputs", "road_pixel_example_inputs"]


def road_pixel_example_inputs() -> dict[str, Tensor]:
    """A 4 x 4 image whose lower half is road, predicted with confidence 200 / 255 there and 30 / 255 elsewhere.

    Returns ``{"preds": (1, 4, 4) uint8, "target": (1, 4, 4) bool}``, the inputs of the
    :class:`~drivemetrics.road.RoadPixelMetrics` example.

    Examples:
        >>> from drivemetrics.road import road_pixel_example_inputs
        >>> road_pixel_example_inputs()["preds"][0, :, 0]
        tensor([ 30,  30, 200, 200], dtype=torch.uint8)
    """
    target = torch.zeros(1, 4, 4, dtype=torch.bool)
    target[:, 2:] = True
    return {"preds": torch.where(target, 200, 30).to(torch.uint8), "target": target}


def corridor_example_inputs() -> dict[str, Tensor]:
    """A straight 3.5 m ego-lane on the KITTI-ROAD BEV grid, predicted exactly (confidence 1 on the lane, else 0).

    Returns ``{"preds": (1, 800, 400) float, "target": (1, 800, 400) bool}``, the inputs of the
    :class:`~drivemetrics.road.DrivingCorridorMetrics` example.

    Examples:
        >>> from drivemetrics.road import corridor_example_inputs
        >>> tuple(corridor_example_inputs()["target"].shape)
        (1, 800, 400)
    """
    grid = BevGrid()
    lane = (grid.x_centers().abs() < 1.75).expand(1, *grid.shape)
    return {"preds": lane.float(), "target": lane}
