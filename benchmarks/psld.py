"""PSLD speed: batched rollouts vs a per-frame Python loop of the same model, loss forward + backward, GPU rate.

Run ``python benchmarks/psld.py`` (10,000 frames batched) or with ``--quick`` (1,000 frames). The per-frame loop
(``psld`` called on one frame at a time) runs on the first ``--loop-frames`` frames (default: all of them in the full
run, 300 with ``--quick``) and the speed-up compares time per frame; both paths give the same numbers (asserted).
Target: batched >= 100x the loop on CPU.
"""

from __future__ import annotations

import argparse
import time

import torch

from drivemetrics.lane.geometry import default_z_samples
from drivemetrics.lane.psld import PSLDLoss, psld


def scenes(n: int, device: torch.device, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Random gentle-curve ground-truth centers, perturbed detections and speeds (float32)."""
    gen = torch.Generator().manual_seed(seed)
    z = default_z_samples(torch.float32)[None]

    def rnd(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=gen)

    gt = 0.3 * rnd(n, 1) + 0.01 * rnd(n, 1) * z + 1e-4 * rnd(n, 1) * z**2
    pred = gt + 0.3 * rnd(n, 1) + 0.01 * rnd(n, 1) * z + 2e-4 * rnd(n, 1) * z**2
    speed = 10.0 + 20.0 * torch.rand(n, generator=gen)
    return pred.to(device), gt.to(device), speed.to(device)


def timed(fn, repeat: int = 1, sync: bool = False) -> tuple[float, object]:
    out = fn()  # warm-up
    if sync:
        torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(repeat):
        out = fn()
    if sync:
        torch.cuda.synchronize()
    return (time.perf_counter() - start) / repeat, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="1,000 frames instead of 10,000")
    parser.add_argument("--frames", type=int, default=None)
    parser.add_argument("--loop-frames", type=int, default=None, help="frames timed in the per-frame loop")
    args = parser.parse_args()
    n = args.frames or (1_000 if args.quick else 10_000)
    cpu = torch.device("cpu")
    pred, gt, speed = scenes(n, cpu)
    print(f"PSLD, Tp = 10, {n} frames, float32, torch threads = {torch.get_num_threads()}")

    t_batch, batched = timed(lambda: psld(pred, gt, speed=speed, reduction="none"), repeat=3)

    k = min(n, args.loop_frames or (300 if args.quick else n))

    def loop() -> torch.Tensor:
        return torch.cat(
            [psld(pred[i : i + 1], gt[i : i + 1], speed=speed[i : i + 1], reduction="none") for i in range(k)]
        )

    start = time.perf_counter()
    looped = loop()
    t_loop = (time.perf_counter() - start) / k * n  # per-frame time x n
    assert torch.allclose(batched[:k], looped, rtol=1e-4, atol=1e-7), (batched[:k] - looped).abs().max()
    print(f"  batched            {t_batch * 1e3:9.1f} ms   ({n / t_batch:,.0f} frames/s)")
    print(f"  per-frame loop     {t_loop * 1e3:9.1f} ms   ({n / t_loop:,.0f} frames/s; timed on {k} frames)")
    print(f"  speed-up           {t_loop / t_batch:9.1f} x   (target >= 100 x; same values asserted)")

    loss_fn = PSLDLoss()

    def forward_backward() -> float:
        param = pred.clone().requires_grad_()
        loss = loss_fn(param, gt, speed=speed)
        loss.backward()
        return float(loss.detach())

    t_fb, _ = timed(forward_backward, repeat=2)
    t_fwd, _ = timed(lambda: loss_fn(pred, gt, speed=speed), repeat=2)
    print(f"  PSLDLoss forward   {t_fwd * 1e3:9.1f} ms   forward + backward {t_fb * 1e3:9.1f} ms ({n} frames)")

    if torch.cuda.is_available():
        gpu = torch.device("cuda")
        for frames in (n, 10 * n):
            pred_g, gt_g, speed_g = scenes(frames, gpu)
            t_gpu, out = timed(lambda p=pred_g, g=gt_g, s=speed_g: psld(p, g, speed=s, reduction="none"), 5, sync=True)
            if frames == n:
                assert torch.allclose(out.cpu(), batched, rtol=1e-3, atol=1e-6)
            print(f"  GPU batched        {t_gpu * 1e3:9.1f} ms   ({frames / t_gpu:,.0f} frames/s, {frames} frames)")
            param = pred_g.clone().requires_grad_()
            t_gfb, _ = timed(lambda p=param, g=gt_g, s=speed_g: loss_fn(p, g, speed=s).backward(), 3, sync=True)
            print(f"  GPU loss fwd+bwd   {t_gfb * 1e3:9.1f} ms   ({frames} frames)")
    else:
        print("  GPU: not available")


if __name__ == "__main__":
    main()
