"""DRP attack speed: attack iterations per second for 20 frames x 8 EOT samples, batched vs a per-sample loop.

One iteration = the closed-loop simulation of the attacked drive (20 steps, no gradient) + the attack loss on
every frame x EOT sample at the simulated poses, forward and backward through the detector and the patch
compositing. The batched path runs the 160 frames as one batch (``drp_attack``); the baseline does the same work
with one frame and one EOT sample at a time (as the released DRP code does, per frame with batch 1), summing the
gradients; the two gradients are asserted equal. Detector: the untrained ``segmentation`` reference detector
(speed only). Run ``python benchmarks/drp.py`` (``--quick``: 2 iterations each, ``--threads``: torch threads,
default 1, the fastest on a shared 2-core CPU). The issue's target is a 200-iteration attack of one clip under 60 s
on one H100; with a GPU the batched path is also timed there.
"""

from __future__ import annotations

import argparse
import time

import torch

from drivemetrics.attack import DriveClips, DRPConfig, drp_attack
from drivemetrics.attack import drp as drp_module
from drivemetrics.synthetic.lane_clips import make_lane_clips
from drivemetrics.synthetic.lane_detectors import make_detector


def setup(device: torch.device) -> tuple[DriveClips, object, DRPConfig]:
    c = make_lane_clips(batch=1, frames=21, seed=0, max_wander=0.1)
    drive = DriveClips(c.images.to(device), c.speed, c.image_from_road, c.poses, c.center_road, c.z_samples)
    torch.manual_seed(0)
    detector = make_detector("segmentation", c.h_samples).to(device)
    for p in detector.parameters():
        p.requires_grad_(False)
    config = DRPConfig(eot_samples=8, target_deviation=None)
    return drive, detector.lane_model(), config


def per_sample_iteration(drive: DriveClips, model, config: DRPConfig, delta: torch.Tensor) -> torch.Tensor:
    """One attack iteration with Python loops over frames and EOT samples (batch 1 everywhere)."""
    prep = drp_module._prepare(drive)
    with torch.no_grad():
        poses = drp_module._rollout(prep, model, delta, config, drp_module.LinearMPC())
    length = poses.shape[1]
    noise = drp_module._draw_noise(config, config.eot_samples, length, delta.device, torch.Generator().manual_seed(0))
    grad = torch.zeros_like(delta)
    one = torch.zeros(1, dtype=torch.long, device=delta.device)
    for e in range(config.eot_samples):
        for t in range(length):
            pose = drp_module._shift_pose(poses[0, t][None], noise["lateral"][e, t][None], noise["yaw"][e, t][None])
            d = delta.detach().requires_grad_(True)
            view = drp_module._render(
                prep, one, one + t, pose, d, config.patch, noise["shift"][e][None], noise["brightness"][e][None]
            )
            center = model.center(model.forward(view))
            loss = (1 - center).sum() / (config.eot_samples * length)
            grad += torch.autograd.grad(loss, d)[0]
    return grad


def batched_gradient(drive: DriveClips, model, config: DRPConfig, delta: torch.Tensor) -> torch.Tensor:
    prep = drp_module._prepare(drive)
    with torch.no_grad():
        poses = drp_module._rollout(prep, model, delta, config, drp_module.LinearMPC())
    noise = drp_module._draw_noise(
        config, config.eot_samples, poses.shape[1], delta.device, torch.Generator().manual_seed(0)
    )
    d = delta.detach().requires_grad_(True)
    return torch.autograd.grad(drp_module._trajectory_loss(prep, model, d, poses, config, noise), d)[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 iterations per path")
    parser.add_argument("--iterations", type=int, default=None)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    iterations = args.iterations or (2 if args.quick else 5)
    cpu = torch.device("cpu")
    drive, model, config = setup(cpu)
    print(f"DRP attack, 1 clip x 20 frames x 8 EOT samples, patch {config.patch.shape} cells, threads {args.threads}")
    delta = 0.1 * torch.rand(1, 1, *config.patch.shape, generator=torch.Generator().manual_seed(1))
    g_batch = batched_gradient(drive, model, config, delta)
    g_loop = per_sample_iteration(drive, model, config, delta)
    assert torch.allclose(g_batch, g_loop, rtol=1e-3, atol=1e-6), (g_batch - g_loop).abs().max()

    result = drp_attack(drive, model, DRPConfig(eot_samples=8, target_deviation=None, iterations=iterations))
    rate = result.iterations_per_s
    start = time.perf_counter()
    for _ in range(iterations):
        per_sample_iteration(drive, model, config, delta)
    loop_rate = iterations / (time.perf_counter() - start)
    print(f"  batched (drp_attack)   {rate:7.3f} it/s   200 iterations: {200 / rate:7.1f} s")
    print(f"  per-sample loop        {loop_rate:7.3f} it/s   200 iterations: {200 / loop_rate:7.1f} s")
    print(f"  speed-up               {rate / loop_rate:7.2f} x   (same gradient asserted)")
    if torch.cuda.is_available():
        gpu = torch.device("cuda")
        drive_g, model_g, _ = setup(gpu)
        result = drp_attack(drive_g, model_g, DRPConfig(eot_samples=8, target_deviation=None, iterations=iterations))
        print(f"  GPU batched            {result.iterations_per_s:7.3f} it/s")
    else:
        print("  GPU: not available")


if __name__ == "__main__":
    main()
