"""The metric bird's-eye-view (BEV) grid on the road plane."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the grid itself needs no torch (road-eval's numpy path uses it); its tensor methods import it
    import torch
    from torch import Tensor

__all__ = ["BevGrid"]


@dataclass(frozen=True)
class BevGrid:
    """A regular grid on the road plane Y = 0 (road frame: X right, Z forward, metres).

    Row 0 is the far edge (``z_max``), column 0 the left edge (``x_min``); values live at cell centers. The
    default is the KITTI-ROAD benchmark grid: X in [-10, 10] m, Z in [6, 46] m at 0.05 m, 800 rows x 400 columns.

    Examples:
        >>> from drivemetrics.geometry import BevGrid
        >>> grid = BevGrid(x_min=-2.0, x_max=2.0, z_min=6.0, z_max=10.0, resolution=0.5)
        >>> grid.rows, grid.cols
        (8, 8)
    """

    x_min: float = -10.0
    x_max: float = 10.0
    z_min: float = 6.0
    z_max: float = 46.0
    resolution: float = 0.05

    def __post_init__(self) -> None:
        if not self.resolution > 0:
            raise ValueError(f"`resolution` must be > 0 metres, got {self.resolution}")
        if not (self.x_max > self.x_min and self.z_max > self.z_min):
            raise ValueError(
                f"grid ranges must be increasing, got x [{self.x_min}, {self.x_max}], z [{self.z_min}, {self.z_max}]"
            )

    @property
    def rows(self) -> int:
        """Number of rows (along Z)."""
        return round((self.z_max - self.z_min) / self.resolution)

    @property
    def cols(self) -> int:
        """Number of columns (along X)."""
        return round((self.x_max - self.x_min) / self.resolution)

    @property
    def shape(self) -> tuple[int, int]:
        """``(rows, cols)``."""
        return self.rows, self.cols

    def x_centers(self, dtype: torch.dtype | None = None, device: torch.device | str | None = None) -> Tensor:
        """X of each column's center, metres, shape ``(cols,)``, increasing (``dtype`` default float32)."""
        import torch

        j = torch.arange(self.cols, dtype=torch.float64, device=device)
        return (self.x_min + (j + 0.5) * self.resolution).to(dtype or torch.float32)

    def z_centers(self, dtype: torch.dtype | None = None, device: torch.device | str | None = None) -> Tensor:
        """Z of each row's center, metres, shape ``(rows,)``, decreasing (row 0 is far; ``dtype`` default float32)."""
        import torch

        i = torch.arange(self.rows, dtype=torch.float64, device=device)
        return (self.z_max - (i + 0.5) * self.resolution).to(dtype or torch.float32)

    def cell_centers(
        self, dtype: torch.dtype | None = None, device: torch.device | str | None = None
    ) -> tuple[Tensor, Tensor]:
        """Meshes ``(X, Z)`` of cell centers, each ``(rows, cols)``, metres (``dtype`` default float32)."""
        import torch

        z, x = torch.meshgrid(self.z_centers(dtype, device), self.x_centers(dtype, device), indexing="ij")
        return x, z

    def cell_from_metric(self, x: Tensor, z: Tensor) -> tuple[Tensor, Tensor]:
        """Continuous ``(row, col)`` of road points ``(x, z)``; integer values are cell centers."""
        col = (x - self.x_min) / self.resolution - 0.5
        row = (self.z_max - z) / self.resolution - 0.5
        return row, col

    def metric_from_cell(self, row: Tensor, col: Tensor) -> tuple[Tensor, Tensor]:
        """Road points ``(x, z)`` in metres of continuous cell coordinates ``(row, col)``."""
        x = self.x_min + (col + 0.5) * self.resolution
        z = self.z_max - (row + 0.5) * self.resolution
        return x, z
