"""Two gloo processes, each counting part of the frames: the synced result equals the single-process one."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from drivemetrics.road import RoadMaxF, RoadPixelMetrics

WORLD_SIZE = 2
KEYS = ("MaxF", "AvgPrec", "AvgPrecIntegrated", "BestThresh", "PRE_wp", "REC_wp", "F_fixed", "totalPosNum")


def _frames() -> list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
    g = torch.Generator().manual_seed(0)
    frames = []
    for i in range(5):  # uneven split: 3 frames on rank 0, 2 on rank 1
        target = torch.rand(1 + i % 2, 10, 13, generator=g) < 0.3 + 0.1 * i
        noise = torch.rand(target.shape, generator=g)
        preds = (0.6 * target + 0.5 * noise).clamp(0, 1)
        valid = torch.rand(target.shape, generator=g) > 0.1
        frames.append((preds, target, valid))
    return frames


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker(rank: int, port: int, out_dir: str) -> None:
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=WORLD_SIZE)
    try:
        metric = RoadPixelMetrics()
        maxf = RoadMaxF()
        for preds, target, valid in _frames()[rank::WORLD_SIZE]:
            metric.update(preds, target, valid)
            maxf.update(preds, target, valid)
        scores = metric.compute()
        result = {key: scores[key].item() for key in KEYS}
        result["RoadMaxF"] = maxf.compute().item()
        result["local_tp0"] = int(metric.tp[0])  # the local state is restored after the sync
        torch.save(result, Path(out_dir) / f"rank{rank}.pt")
    finally:
        dist.destroy_process_group()


@pytest.mark.ddp
def test_two_process_sync_equals_single_process(tmp_path):
    mp.spawn(_worker, args=(_free_port(), str(tmp_path)), nprocs=WORLD_SIZE, join=True)
    single = RoadPixelMetrics()
    for frame in _frames():
        single.update(*frame)
    expected = single.compute()
    local_tp0 = [sum(int((t & v).sum()) for _, t, v in _frames()[r::WORLD_SIZE]) for r in range(WORLD_SIZE)]
    for rank in range(WORLD_SIZE):
        result = torch.load(tmp_path / f"rank{rank}.pt")
        for key in KEYS:
            assert result[key] == expected[key].item(), (rank, key)
        assert result["RoadMaxF"] == expected["MaxF"].item()
        assert result["local_tp0"] == local_tp0[rank]
