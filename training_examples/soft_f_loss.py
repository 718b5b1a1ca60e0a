"""Train a one-layer road segmenter with the soft F-measure loss and watch the KITTI-ROAD MaxF rise.

Synthetic data, no download, runs in seconds on a CPU:

    python training_examples/soft_f_loss.py            # perspective loss
    python training_examples/soft_f_loss.py --bev      # the same loss measured on the road plane (BEV)

Each image is a road region below a wavy horizon line with 3 noisy feature channels (one informative). The net is
a single 5 x 5 convolution producing road logits; ``SoftFMeasureLoss(from_logits=True)`` trains it, and
``RoadPixelMetrics`` evaluates the held-out images with the devkit's pooled MaxF / AP before and after training.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from drivemetrics.geometry import BevGrid
from drivemetrics.road import RoadPixelMetrics, SoftFMeasureLoss

HEIGHT, WIDTH = 48, 64
# A toy road->image homography for a 48 x 64 image: camera 1.6 m above the road, 32 px focal length,
# principal point (32, 8): u = 32 X / Z + 32, v = 51.2 / Z + 8.
IMAGE_FROM_ROAD = torch.tensor([[32.0, 32.0, 0.0], [0.0, 8.0, 51.2], [0.0, 1.0, 0.0]])
GRID = BevGrid(x_min=-4.0, x_max=4.0, z_min=2.0, z_max=12.0, resolution=0.1)


def make_images(count: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``count x 3 x H x W`` features and ``count x H x W`` road masks."""
    g = torch.Generator().manual_seed(seed)
    rows = torch.arange(HEIGHT).view(1, HEIGHT, 1).float()
    cols = torch.arange(WIDTH).view(1, 1, WIDTH).float()
    phase = torch.rand(count, 1, 1, generator=g) * 6.28
    horizon = HEIGHT * 0.45 + 4 * torch.sin(cols / 7 + phase)
    road = rows >= horizon
    features = torch.randn(count, 3, HEIGHT, WIDTH, generator=g)
    features[:, 0] += 0.7 * (road.float() * 2 - 1)
    return features, road


def evaluate(net: torch.nn.Module, features: torch.Tensor, road: torch.Tensor) -> dict[str, float]:
    metric = RoadPixelMetrics()
    with torch.no_grad():
        metric.update(torch.sigmoid(net(features))[:, 0], road)
    scores = metric.compute()
    return {key: scores[key].item() for key in ("max_f", "average_precision", "f_measure_fixed")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bev", action="store_true", help="measure the loss in the bird's-eye view")
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="50 steps (a few seconds)")
    parser.add_argument("--json", metavar="PATH", help="write the held-out scores before / after to this JSON file")
    args = parser.parse_args()
    if args.quick:
        args.steps = min(args.steps, 50)
        torch.set_num_threads(1)  # tiny tensors: a second thread costs more than it saves
    torch.manual_seed(args.seed)

    train_x, train_y = make_images(32, seed=args.seed)
    test_x, test_y = make_images(16, seed=args.seed + 1)
    net = torch.nn.Conv2d(3, 1, kernel_size=5, padding=2)
    loss_fn = SoftFMeasureLoss(from_logits=True, space="bev" if args.bev else "perspective", grid=GRID)
    homography = IMAGE_FROM_ROAD.expand(8, 3, 3) if args.bev else None
    optimiser = torch.optim.Adam(net.parameters(), lr=0.02)

    before = evaluate(net, test_x, test_y)
    start = time.perf_counter()
    for step in range(args.steps):
        batch = torch.randint(0, len(train_x), (8,))
        optimiser.zero_grad()
        loss = loss_fn(net(train_x[batch]), train_y[batch], homography=homography)
        loss.backward()
        optimiser.step()
        if step % 50 == 0 or step == args.steps - 1:
            print(f"step {step:4d}  soft-F loss {loss.item():.4f}")
    after = evaluate(net, test_x, test_y)
    print(f"trained {args.steps} steps in {time.perf_counter() - start:.1f} s ({'BEV' if args.bev else 'perspective'})")
    for key in before:
        print(f"held-out {key:8s}: {before[key]:.4f} -> {after[key]:.4f}")
    if args.json:
        space = "bev" if args.bev else "perspective"
        payload = {"example": "soft_f_loss", "quick": args.quick, "steps": args.steps, "loss_space": space}
        write_json(args.json, {**payload, "before": before, "after": after})


def write_json(path: str | Path, payload: dict) -> None:
    """Write ``payload`` atomically (temp file in the target folder, then rename)."""
    from drivemetrics._internal.files import atomic_write_text

    atomic_write_text(path, json.dumps(payload, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
