"""Toy ego lanes for the driving-oriented lane loss tests: straight lines seen by the synthetic lane camera."""

from __future__ import annotations

import torch

from drivemetrics.synthetic.lane_clips import LaneCamera

ROWS = torch.linspace(48.0, 125.0, 16, dtype=torch.float64)


def homography() -> torch.Tensor:
    return LaneCamera().image_from_road()


def straight_lanes(offset: float = 0.0, width: float = 3.6, batch: int = 1) -> torch.Tensor:
    """``(batch, 2, N, 2)`` pixels of a straight lane of ``width`` metres centred ``offset`` metres right."""
    h = homography()
    z = torch.stack([_row_distance(h, v) for v in ROWS])
    lines = []
    for x in (offset - width / 2, offset + width / 2):
        road = torch.stack([torch.full_like(z, x), z, torch.ones_like(z)], -1)  # (X, Z, 1)
        uvw = road @ h.T
        lines.append(torch.stack([uvw[:, 0] / uvw[:, 2], ROWS], -1))
    return torch.stack(lines)[None].expand(batch, 2, len(ROWS), 2).clone()


def _row_distance(h: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Road distance Z of image row ``v`` on the camera's center column (pitch only: the same on every column)."""
    from drivemetrics.geometry import image_to_road

    return image_to_road(h, torch.stack([torch.tensor(127.5, dtype=torch.float64), v])[None])[0][0, 1]
