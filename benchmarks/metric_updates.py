"""Benchmark: per-update time of Metrics with ragged state, early against late in a long run (issue 36).

A Metric that pools frames (``VectorMapAPMetrics``, ``OpenLaneV2Metrics``, ``KittiObjectMetrics``: the ragged
state of :mod:`drivemetrics._internal.ragged`) must update in constant time, however many frames it holds; the
pooled rows are concatenated once, in ``compute``. This script updates one ``VectorMapAPMetrics`` ``--updates``
times (default 100,000) with one small frame each (3 predicted lines of 20 points, 2 ground-truth lines, nuScenes
MapTR protocol; the same frame every time, so only what the metric holds changes), and times windows of
``--window`` updates (default 10,000). The baseline is the first window, timed in the same run.

Printed: the mean time per update of every window (and of its fastest tenth: on a shared machine the load changes
during the run), the last window against the first (goal: at most +20 %; also for the fastest tenths), and the
time of the final ``compute``. ``--openlanev2 N`` also times N updates of ``OpenLaneV2Metrics`` with one small
frame and with 16 frames (the per-update overhead of that family).

Run ``nice python benchmarks/metric_updates.py [--updates 100000] [--window 10000] [--openlanev2 2000] [--quick]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from drivemetrics.vectormap.map_ap import VectorMapAPMetrics  # noqa: E402

GOAL = 1.20  # last window / first window


def map_frame() -> tuple:
    """One frame of ``VectorMapAPMetrics.update`` arguments ``(preds, target)``: 3 predicted lines, 2 GT lines."""
    g = torch.Generator().manual_seed(0)
    t = torch.linspace(0.0, 1.0, 20)[:, None]
    target = torch.stack([torch.cat([t * 20.0 - 10.0, t * 0.0 + y], 1) for y in (-3.0, 3.0)])[None]
    preds = torch.cat([target, target[:, :1] + 5.0], 1) + 0.2 * torch.randn(1, 3, 20, 2, generator=g)
    labels = torch.tensor([[0, 2, 1]])
    scores = torch.tensor([[0.9, 0.6, 0.3]])
    return {"points": preds, "labels": labels, "scores": scores}, {"points": target, "labels": torch.tensor([[0, 2]])}


def time_map_updates(updates: int, window: int) -> tuple[list[float], list[float]]:
    """Seconds per update of each window of ``window`` updates: the mean, and the mean of its fastest tenth."""
    metric = VectorMapAPMetrics(protocol="nuscenes-maptr")
    frame = map_frame()
    for _ in range(20):  # warm-up (allocator, first-call paths), then a fresh metric
        metric.update(*frame)
    metric.reset()
    means, fastest = [], []
    block = max(1, window // 10)
    for _ in range(updates // window):
        blocks = []
        for _ in range(window // block):
            start = time.perf_counter()
            for _ in range(block):
                metric.update(*frame)
            blocks.append((time.perf_counter() - start) / block)
        means.append(sum(blocks) / len(blocks))
        fastest.append(min(blocks))
        print(
            f"  updates {len(means) * window:>7,}: {means[-1] * 1e3:.3f} ms per update "
            f"(fastest block of {block:,}: {min(blocks) * 1e3:.3f} ms)",
            flush=True,
        )
    start = time.perf_counter()
    value = metric.compute()["map"].item()
    print(f"compute over {len(means) * window:,} frames: {time.perf_counter() - start:.2f} s (mAP {value:.4f})")
    return means, fastest


def time_openlanev2_updates(updates: int, frames: int) -> float:
    """Mean seconds per ``OpenLaneV2Metrics.update`` of ``frames`` small frames (3 lanes, 2 traffic elements
    each; the battery's frames), after 3 warm-up updates."""
    from drivemetrics.lanetopology.openlanev2 import OpenLaneV2Metrics
    from tests.metric_inputs import _olv2_frame

    preds = [_olv2_frame("centerline", k % 4, k % 2, True) for k in range(frames)]
    target = [_olv2_frame("centerline", k % 4, k % 2, False) for k in range(frames)]
    metric = OpenLaneV2Metrics(track="centerline")
    for _ in range(3):
        metric.update(preds, target)
    start = time.perf_counter()
    for _ in range(updates):
        metric.update(preds, target)
    return (time.perf_counter() - start) / updates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--updates", type=int, default=100_000)
    parser.add_argument("--window", type=int, default=10_000)
    parser.add_argument("--openlanev2", type=int, default=0, metavar="N", help="also time N OpenLane-V2 updates")
    parser.add_argument("--quick", action="store_true", help="20,000 updates in windows of 2,000")
    args = parser.parse_args()
    if args.quick:
        args.updates, args.window = 20_000, 2_000
    if args.updates < 2 * args.window or args.window < 1:
        parser.error("--updates must hold at least two windows of --window updates")
    torch.set_num_threads(1)
    print(f"VectorMapAPMetrics: {args.updates:,} updates of one frame, windows of {args.window:,}")
    means, fastest = time_map_updates(args.updates, args.window)
    for what, values in (("mean", means), ("fastest tenth", fastest)):
        ratio = values[-1] / values[0]
        verdict = "ok" if ratio <= GOAL else "SLOWER"
        print(f"last window / first window ({what}): {ratio:.3f} (goal <= {GOAL:.2f}): {verdict}")
    if args.openlanev2:
        for frames in (1, 16):
            per_update = time_openlanev2_updates(max(1, args.openlanev2 // frames), frames)
            print(
                f"OpenLaneV2Metrics: {per_update * 1e3:.2f} ms per update of {frames} frame(s), "
                f"{per_update / frames * 1e3:.2f} ms per frame"
            )


if __name__ == "__main__":
    main()
