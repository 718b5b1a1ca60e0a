"""DrivingCorridorMetrics syncs its counters across two gloo processes."""

from __future__ import annotations

import pytest
import torch

from drivemetrics.geometry.bev import BevGrid
from drivemetrics.road.corridor import DrivingCorridorMetrics, driving_corridor_scores
from tests.ddp import run_distributed


def _frames() -> tuple[torch.Tensor, torch.Tensor]:
    grid = BevGrid()
    xs, zs = grid.cell_centers()
    targets = torch.stack([(xs - shift).abs() <= 1.75 for shift in (0.0, 0.5, -0.5, 1.0)]) & (zs <= 40.0)
    conf = targets.float() * 0.9
    conf[1, 350:420] = 0.0  # a gap: this frame's corridor ends early
    conf[2] = torch.roll(conf[2], 25, dims=1)  # shifted detection
    return conf, targets


def _worker(rank: int, world: int) -> tuple[dict[str, float], list[float]]:
    conf, targets = _frames()
    metric = DrivingCorridorMetrics(threshold=0.5)
    metric.update(conf[rank::world], targets[rank::world])  # rank 0: frames 0, 2; rank 1: frames 1, 3
    result = {k: v.item() for k, v in metric.compute().items()}
    return result, metric.compute_curves()["hitrate"].tolist()


@pytest.mark.ddp
def test_metric_syncs_across_two_processes():
    results = run_distributed(_worker)
    conf, targets = _frames()
    expected = driving_corridor_scores(conf, targets, threshold=0.5)
    metric = DrivingCorridorMetrics(threshold=0.5)
    metric.update(conf, targets)
    expected_hitrate = metric.compute_curves()["hitrate"].tolist()
    for result, hitrate in results:
        for key, value in expected.items():
            assert result[key] == pytest.approx(value.item(), abs=1e-12), key
        assert hitrate == pytest.approx(expected_hitrate)
    assert 0 < expected["hitrate_30m"].item() < 1  # the frames really differ
