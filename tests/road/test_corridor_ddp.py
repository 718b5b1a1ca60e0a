"""DrivingCorridorMetric syncs its counters across two gloo processes."""

from __future__ import annotations

import socket

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from drivemetrics.geometry.bev import BevGrid
from drivemetrics.road.corridor import DrivingCorridorMetric, driving_corridor_scores


def _frames() -> tuple[torch.Tensor, torch.Tensor]:
    grid = BevGrid()
    xs, zs = grid.cell_centers()
    targets = torch.stack([(xs - shift).abs() <= 1.75 for shift in (0.0, 0.5, -0.5, 1.0)]) & (zs <= 40.0)
    conf = targets.float() * 0.9
    conf[1, 350:420] = 0.0  # a gap: this frame's corridor ends early
    conf[2] = torch.roll(conf[2], 25, dims=1)  # shifted detection
    return conf, targets


def _worker(rank: int, port: int, queue: mp.Queue) -> None:
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    try:
        conf, targets = _frames()
        metric = DrivingCorridorMetric(threshold=0.5)
        metric.update(conf[rank::2], targets[rank::2])  # rank 0: frames 0, 2; rank 1: frames 1, 3
        result = {k: v.item() for k, v in metric.compute().items()}
        curves = metric.compute_curves()
        queue.put((rank, result, curves["hitrate"].tolist()))
    finally:
        dist.destroy_process_group()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.ddp
def test_metric_syncs_across_two_processes():
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    mp.spawn(_worker, args=(_free_port(), queue), nprocs=2, join=True)
    results = sorted(queue.get(timeout=60) for _ in range(2))
    conf, targets = _frames()
    expected = driving_corridor_scores(conf, targets, threshold=0.5)
    metric = DrivingCorridorMetric(threshold=0.5)
    metric.update(conf, targets)
    expected_hitrate = metric.compute_curves()["hitrate"].tolist()
    for _, result, hitrate in results:
        for key, value in expected.items():
            assert result[key] == pytest.approx(value.item(), abs=1e-12), key
        assert hitrate == pytest.approx(expected_hitrate)
    assert 0 < expected["hitrate_30m"].item() < 1  # the frames really differ
