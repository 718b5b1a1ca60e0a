import pytest
import torch

from drivemetrics.geometry import BevGrid


def test_kitti_default_grid_matches_devkit_layout():
    grid = BevGrid()
    assert grid.shape == (800, 400)
    x, z = grid.cell_centers(torch.float64)
    # devkit: column 0 is x = -9.975 (left), row 0 is z = 45.975 (far), row 799 is z = 6.025 (near)
    assert x[0, 0].item() == pytest.approx(-9.975)
    assert x[0, -1].item() == pytest.approx(9.975)
    assert z[0, 0].item() == pytest.approx(45.975)
    assert z[-1, 0].item() == pytest.approx(6.025)


def test_cell_metric_round_trip():
    grid = BevGrid(x_min=-5, x_max=5, z_min=0, z_max=20, resolution=0.1)
    row = torch.tensor([0.0, 10.5, 199.0])
    col = torch.tensor([0.0, 3.25, 99.0])
    x, z = grid.metric_from_cell(row, col)
    r2, c2 = grid.cell_from_metric(x, z)
    torch.testing.assert_close(r2, row)
    torch.testing.assert_close(c2, col)


@pytest.mark.parametrize("kwargs", [{"resolution": 0.0}, {"x_min": 1.0, "x_max": 1.0}, {"z_min": 50.0}])
def test_bad_grid_raises(kwargs):
    with pytest.raises(ValueError, match=r"resolution|ranges"):
        BevGrid(**kwargs)
