"""Synthetic scene rendering speed: batched rendering vs one scene at a time.

Renders random roads with a synthetic detector in perspective (375 x 1242, KITTI camera) and in BEV (800 x 400),
batched (``B`` scenes per call) and, as the baseline measured in the same run, one scene per call; asserts both
give the same masks and prints scenes/s and the ratio. With CUDA, also the GPU rate.

    python benchmarks/synthetic_scenes.py            # 16 scenes, batches of 8
    python benchmarks/synthetic_scenes.py --quick    # 4 scenes, batches of 2
"""

from __future__ import annotations

import argparse
import time

import torch

from drivemetrics.synthetic import render_bev, render_perspective, sample_detector, sample_road_geometry


def _render(space: str, geometry, detector):
    if space == "perspective":
        return render_perspective(geometry, detector=detector)
    return render_bev(geometry, detector=detector)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def bench(space: str, scenes: int, batch: int, device: torch.device, baseline: bool = True) -> None:
    gen = torch.Generator().manual_seed(0)
    geometry = sample_road_geometry(scenes, gen, device=device)
    detector = sample_detector("good", geometry, gen)
    _render(space, geometry[:1], detector)  # warm-up
    _sync(device)
    start = time.perf_counter()
    batched = []
    for i in range(0, scenes, batch):
        part = geometry[i : i + batch]
        det = sample_detector("good", part, torch.Generator().manual_seed(i))
        batched.append(_render(space, part, det).road)
    _sync(device)
    t_batched = time.perf_counter() - start
    line = f"{space:<12} {device.type:<4} batched (B={batch}): {scenes / t_batched:7.2f} scenes/s"
    if baseline:
        start = time.perf_counter()
        single = []
        for i in range(scenes):
            part = geometry[i]
            det = sample_detector("good", part, torch.Generator().manual_seed(i))
            single.append(_render(space, part, det).road)
        _sync(device)
        t_single = time.perf_counter() - start
        assert torch.equal(torch.cat(batched), torch.cat(single)), "batched and per-scene masks differ"
        line += f" | one per call: {scenes / t_single:7.2f} scenes/s | ratio {t_single / t_batched:5.2f}x"
    print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="4 scenes in batches of 2")
    args = parser.parse_args()
    scenes, batch = (4, 2) if args.quick else (16, 8)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} CPU threads")
    for space in ("perspective", "bev"):
        bench(space, scenes, batch, torch.device("cpu"))
    if torch.cuda.is_available():
        for space in ("perspective", "bev"):
            bench(space, scenes * 4, batch * 4, torch.device("cuda"), baseline=False)


if __name__ == "__main__":
    main()
