"""Two gloo processes, each counting part of the frames: the synced result equals the single-process one."""

from __future__ import annotations

import pytest
import torch

from drivemetrics.road import RoadPixelMaxFScore, RoadPixelMetrics
from tests.ddp import run_distributed

WORLD_SIZE = 2
KEYS = (
    "max_f",
    "average_precision",
    "average_precision_integrated",
    "best_threshold",
    "precision_wp",
    "recall_wp",
    "f_measure_fixed",
    "total_positives",
)


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


def _worker(rank: int, world: int) -> dict[str, float]:
    metric = RoadPixelMetrics()
    maxf = RoadPixelMaxFScore()
    for preds, target, valid in _frames()[rank::world]:
        metric.update(preds, target, valid=valid)
        maxf.update(preds, target, valid=valid)
    scores = metric.compute()
    result = {key: scores[key].item() for key in KEYS}
    result["RoadPixelMaxFScore"] = maxf.compute().item()
    result["local_tp0"] = int(metric.tp[0])  # the local state is restored after the sync
    return result


@pytest.mark.ddp
def test_two_process_sync_equals_single_process():
    results = run_distributed(_worker, world=WORLD_SIZE)
    single = RoadPixelMetrics()
    for frame in _frames():
        single.update(frame[0], frame[1], valid=frame[2])
    expected = single.compute()
    local_tp0 = [sum(int((t & v).sum()) for _, t, v in _frames()[r::WORLD_SIZE]) for r in range(WORLD_SIZE)]
    for rank, result in enumerate(results):
        for key in KEYS:
            assert result[key] == expected[key].item(), (rank, key)
        assert result["RoadPixelMaxFScore"] == expected["max_f"].item()
        assert result["local_tp0"] == local_tp0[rank]
