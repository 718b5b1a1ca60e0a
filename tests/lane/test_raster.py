from __future__ import annotations

import numpy as np
import pytest
import torch

from drivemetrics.lane.raster import draw_lanes, solve_tridiagonal, spline_lanes
from tests.lane._reference import brute_mask


def test_draw_matches_brute_force(device):
    rng = np.random.default_rng(0)
    height, width = 40, 70
    lanes = []
    for _ in range(6):
        n = int(rng.integers(2, 6))
        pts = np.stack([rng.uniform(-10, width + 10, n), rng.uniform(-10, height + 10, n)], axis=1)
        pts = np.concatenate([pts, np.full((6 - n, 2), np.nan)])
        lanes.append(pts)
    # special cases: vertical, horizontal, repeated point
    lanes.append(np.array([[20.3, -5], [20.3, 50], [np.nan, np.nan], *[[np.nan, np.nan]] * 3]))
    lanes.append(np.array([[-5, 12.7], [80, 12.7], [80, 12.7], *[[np.nan, np.nan]] * 3]))
    points = torch.tensor(np.stack(lanes), dtype=torch.float64).reshape(2, 4, 6, 2)
    masks = draw_lanes(points.to(device), height, width, line_width=9.0).cpu().numpy()
    for b in range(2):
        for lane in range(4):
            expected = brute_mask(points[b, lane].numpy(), height, width, 4.5)
            assert (masks[b, lane] == expected).all(), (b, lane)
            assert expected.any()


def test_draw_rejects_bad_inputs():
    one_point = torch.tensor([[[[5.0, 5.0], [float("nan"), float("nan")]]]])
    with pytest.raises(ValueError, match="fewer than 2 valid points"):
        draw_lanes(one_point, 10, 10)
    with pytest.raises(ValueError, match="points"):
        draw_lanes(torch.zeros(1, 2, 3), 10, 10)
    with pytest.raises(ValueError, match="infinite"):
        draw_lanes(torch.full((1, 1, 2, 2), float("inf")), 10, 10)


def test_spline_lanes_is_the_natural_spline_on_chord_length():
    from scipy.interpolate import CubicSpline

    lane = np.array([[100.0, 590.0], [160.0, 470.0], [260.0, 380.0], [420.0, 300.0], [700.0, 260.0]])
    points = torch.full((1, 2, 6, 2), float("nan"), dtype=torch.float64)
    points[0, 0, :5] = torch.from_numpy(lane)
    points[0, 1, :2] = torch.tensor([[5.0, 5.0], [5.0, 5.0]])  # one distinct point: not drawn
    curve, drawn = spline_lanes(points, spacing=4.0)
    assert drawn.tolist() == [[True, False]]
    assert torch.isnan(curve[0, 1]).all()
    s = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(lane, axis=0), axis=1))])
    expected = CubicSpline(s, lane, bc_type="natural")(np.linspace(0, s[-1], curve.shape[2]))
    np.testing.assert_allclose(curve[0, 0].numpy(), expected, atol=1e-9)
    assert curve.shape[2] == int(np.ceil(s[-1] / 4.0)) + 1


def test_solve_tridiagonal_equals_a_dense_solve():
    rng = np.random.default_rng(3)
    lower, upper = rng.uniform(0.1, 1.0, (2, 5, 7))
    diag = 2.5 + rng.uniform(0.0, 1.0, (5, 7))  # diagonally dominant, as the spline's systems
    rhs = rng.normal(size=(5, 7, 2))
    dense = np.zeros((5, 7, 7))
    k = np.arange(7)
    dense[:, k, k] = diag
    dense[:, k[1:], k[:-1]] = lower[:, 1:]
    dense[:, k[:-1], k[1:]] = upper[:, :-1]
    expected = np.linalg.solve(dense, rhs)
    got = solve_tridiagonal(*(torch.from_numpy(a) for a in (lower, diag, upper, rhs)))
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12, atol=1e-12)
