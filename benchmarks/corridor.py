"""Driving-corridor fit: frames/s on 800 x 400 BEV frames, and how the time grows with N and the grid size.

Baselines measured in the same run:
  * per-frame loop: the same kernel called frame by frame (B = 1);
  * naive: a straightforward per-frame implementation that tests every grid cell against every candidate element
    (dense point-in-element masks, a Python loop over candidates), the way one would first write it.

    python benchmarks/corridor.py [--quick] [--device cuda]
"""

from __future__ import annotations

import argparse
import math
import os
import time
from dataclasses import replace

import torch

from drivemetrics.geometry.bev import BevGrid
from drivemetrics.road.corridor import fit_driving_corridor
from drivemetrics.road.corridor_config import CorridorConfig
from drivemetrics.vehicle.single_track import single_track_step


def lanes(batch: int, grid: BevGrid, seed: int = 0, device: str = "cpu") -> torch.Tensor:
    """Noisy curved ego-lane confidence maps, ``batch x rows x cols``."""
    g = torch.Generator().manual_seed(seed)
    xs, zs = grid.cell_centers()
    bend = (torch.rand(batch, 1, 1, generator=g) - 0.5) * 0.012
    shift = (torch.rand(batch, 1, 1, generator=g) - 0.5) * 1.0
    center = shift + bend * (zs - grid.z_min) ** 2
    lane = ((xs - center).abs() <= 1.75).float()
    noise = torch.rand(batch, *grid.shape, generator=g)
    return (0.8 * lane + 0.3 * noise).clamp(0, 1).to(device)


def naive_fit(conf: torch.Tensor, threshold: float, grid: BevGrid, config: CorridorConfig) -> float:
    """Per-frame dense search; returns the best fitness (to keep the work honest)."""
    xs, zs = grid.cell_centers(torch.float64, conf.device)
    det = (conf >= threshold).double()
    conf = conf.double()
    angles = config.wheel_angles
    K, S = len(angles), config.steps_per_stage
    res2 = grid.resolution**2
    hyps = [(config.start_x, grid.z_min, config.start_heading, 0.0)]
    for _ in range(40):
        cands = []
        for x0, z0, h0, fit in hyps:
            for rho in angles:
                k = math.tan(rho) / config.wheelbase
                arc = config.speed * math.cos(rho) * config.dt * S
                dx, dz = xs - x0, zs - z0
                a = dx * math.cos(h0) - dz * math.sin(h0)
                f = dx * math.sin(h0) + dz * math.cos(h0)
                if k == 0:
                    n, s = a, f
                else:
                    m = k * (a * a + f * f) - 2 * a
                    n = -m / (1 + torch.sqrt((1 + k * m).clamp_min(0)))
                    s = torch.atan2(k * f, 1 - k * a) / k
                inside = (n.abs() <= config.width / 2) & (s >= 0) & (s < arc)
                area = config.width * arc / res2
                if det[inside].sum() > config.det_min * area:
                    x, z, h = torch.tensor(x0), torch.tensor(z0), torch.tensor(h0)
                    for _ in range(S):
                        x, z, h = single_track_step(x, z, h, config.speed, rho, config.dt, config.wheelbase)
                    cands.append((x.item(), z.item(), h.item(), fit + conf[inside].sum().item()))
        if not cands:
            break
        hyps = sorted(cands, key=lambda c: -c[3])[:K]
        if hyps[0][1] >= grid.z_max:
            break
    return hyps[0][3]


def timed(fn, repeat: int) -> float:
    fn()  # warm-up
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(repeat):
        fn()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return (time.perf_counter() - start) / repeat


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer repeats and frames")
    parser.add_argument("--device", default=None, help="cpu / cuda (default: cpu, and cuda when available)")
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="CPU threads for the baselines and growth tables (default 1: stable "
        "on a shared machine, where OpenMP's spinning threads can be far slower than one)",
    )
    args = parser.parse_args()
    repeat = 1 if args.quick else 3
    grid, config, threshold = BevGrid(), CorridorConfig(), 0.5
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, load average {load:.2f} (machine busy?)")
    devices = [args.device] if args.device else ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])

    threads = torch.get_num_threads()
    for device in devices:
        conf = lanes(32, grid, device=device)
        if device == "cpu" and threads > 1:
            # with other jobs on the cores, OpenMP's spinning threads can be far slower than one thread
            torch.set_num_threads(1)
            t_one = timed(lambda c=conf: fit_driving_corridor(c, threshold=threshold, config=config), repeat)
            torch.set_num_threads(threads)
            print(f"\n[cpu, 1 thread] batch of 32 frames 800 x 400: {t_one:.3f} s -> {32 / t_one:.1f} frames/s")
        if device == "cpu":
            torch.set_num_threads(threads)
        t_batch = timed(lambda c=conf: fit_driving_corridor(c, threshold=threshold, config=config), repeat)
        fps = 32 / t_batch
        name = f"{device}, {torch.get_num_threads()} threads" if device == "cpu" else device
        print(f"\n[{name}] batch of 32 frames 800 x 400, paper defaults: {t_batch:.3f} s -> {fps:.1f} frames/s")
        if device == "cpu":
            torch.set_num_threads(args.threads)
            t_batch = timed(lambda c=conf: fit_driving_corridor(c, threshold=threshold, config=config), repeat)
            fps = 32 / t_batch
            print(f"  from here on {args.threads} thread(s): batch of 32 at {fps:.1f} frames/s")
        frames = 4 if args.quick else 8
        t_loop = timed(
            lambda c=conf, n=frames: [fit_driving_corridor(c[i : i + 1], threshold=threshold) for i in range(n)], 1
        )
        print(
            f"  per-frame loop of the same kernel: {frames / t_loop:.1f} frames/s "
            f"(batched is x{fps * t_loop / frames:.2f})"
        )
        if device == "cpu":
            naive_frames = 1
            t_naive = timed(
                lambda c=conf, n=naive_frames: [naive_fit(c[i], threshold, grid, config) for i in range(n)], 1
            )
            print(
                f"  naive dense per-frame search: {naive_frames / t_naive:.2f} frames/s "
                f"(batched is x{fps * t_naive / naive_frames:.0f})"
            )

        print("  growth with N (curvatures per side), batch 32:")
        base = None
        for n in (1, 2, 3, 4):
            cfg = replace(config, curvatures_per_side=n)
            t = timed(lambda c=conf, cfg=cfg: fit_driving_corridor(c, threshold=threshold, config=cfg), repeat)
            base = base or t
            print(f"    N = {n}: {(2 * n + 1) ** 2:3d} candidates/stage, {t:.3f} s  (x{t / base:.2f} of N = 1)")

        print("  growth with grid size (same 40 x 20 m area), batch 32:")
        base = None
        for res in (0.1, 0.05, 0.025):
            g = BevGrid(resolution=res)
            c = lanes(32 if res > 0.03 else 8, g, device=device)
            t = timed(lambda c=c, g=g: fit_driving_corridor(c, threshold=threshold, grid=g), repeat)
            per_frame = t / c.shape[0]
            base = base or per_frame
            print(
                f"    {g.rows} x {g.cols} ({res} m): {1 / per_frame:.1f} frames/s "
                f"(time per frame x{per_frame / base:.2f})"
            )


if __name__ == "__main__":
    main()
