"""Train a tiny 3D lane regressor with the lane matching loss and watch the OpenLane F-score rise.

Synthetic data, no download, runs in seconds on a CPU:

    python training_examples/lane3d_matching.py [--quick] [--json OUT]

Each scene is a road of three lane lines 3.5 m apart, shifted sideways, curved and climbing by amounts the model
sees (with noise) as a 6-value feature vector. The model is one linear layer that outputs three lanes of 12 points
``(x, y, z)`` at fixed distances ahead (y = 5 .. 93 m, the OpenLane ground frame: x right, y forward, z up).
``lane_matching_loss`` (soft Chamfer distance, Hungarian assignment; ``drivemetrics.lanetopology``) trains it on
3D lanes as they are; ``OpenLane3DMetrics`` scores the held-out scenes before and after training.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from drivemetrics.functional import lane_matching_loss
from drivemetrics.lane3d import OpenLane3DMetrics

LANES, POINTS = 3, 12
Y_AHEAD = torch.linspace(5.0, 93.0, POINTS)


def make_scenes(count: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``count x 6`` features and ``count x 3 x 12 x 3`` GT lanes (metres, ground frame)."""
    g = torch.Generator().manual_seed(seed)
    shift = torch.rand(count, 1, generator=g) * 3.0 - 1.5
    curve = (torch.rand(count, 1, generator=g) - 0.5) * 2e-3
    slope = (torch.rand(count, 1, generator=g) - 0.5) * 0.04
    offsets = torch.tensor([-3.5, 0.0, 3.5])
    x = shift[:, :, None] + offsets[None, :, None] + curve[:, :, None] * Y_AHEAD**2  # (count, 3, 12)
    z = slope[:, :, None] * Y_AHEAD + torch.zeros(count, LANES, 1)
    y = Y_AHEAD.expand(count, LANES, POINTS)
    lanes = torch.stack([x, y, z], -1)
    features = torch.cat([shift, curve * 1e3, slope * 25, torch.randn(count, 3, generator=g)], 1)
    features[:, :3] += 0.02 * torch.randn(count, 3, generator=g)
    return features, lanes


class LaneRegressor(torch.nn.Module):
    """Features -> three lanes of ``(x, z)`` at the fixed ``y`` of :data:`Y_AHEAD`."""

    def __init__(self) -> None:
        super().__init__()
        self.head = torch.nn.Linear(6, LANES * POINTS * 2)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        xz = self.head(features).view(-1, LANES, POINTS, 2)
        y = Y_AHEAD.expand(features.shape[0], LANES, POINTS)
        return torch.stack([xz[..., 0], y, xz[..., 1]], -1)


def evaluate(model: torch.nn.Module, features: torch.Tensor, lanes: torch.Tensor) -> dict[str, float]:
    metric = OpenLane3DMetrics()
    categories = torch.ones(features.shape[0], LANES, dtype=torch.long)
    with torch.no_grad():
        metric.update({"points": model(features), "labels": categories}, {"points": lanes, "labels": categories})
    scores = metric.compute()
    keys = ("f_score", "recall", "precision", "x_error_close", "x_error_far", "z_error_close", "z_error_far")
    return {key: float(scores[key]) for key in keys}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="200 steps (a few seconds)")
    parser.add_argument("--json", metavar="PATH", help="write the held-out scores before / after to this JSON file")
    args = parser.parse_args()
    if args.quick:
        args.steps = min(args.steps, 200)
        torch.set_num_threads(1)  # tiny tensors: a second thread costs more than it saves
    torch.manual_seed(args.seed)

    train_x, train_y = make_scenes(256, seed=args.seed)
    test_x, test_y = make_scenes(64, seed=args.seed + 1)
    model = LaneRegressor()
    optimiser = torch.optim.Adam(model.parameters(), lr=0.05)
    before = evaluate(model, test_x, test_y)
    start = time.perf_counter()
    for step in range(args.steps):
        batch = torch.randint(0, len(train_x), (16,))
        optimiser.zero_grad()
        loss = lane_matching_loss(model(train_x[batch]), train_y[batch], distance="chamfer", gamma=0.1)
        loss.backward()
        optimiser.step()
        if step % 50 == 0 or step == args.steps - 1:
            print(f"step {step:4d}  lane matching loss {loss.item():.3f} m")
    after = evaluate(model, test_x, test_y)
    print(f"trained {args.steps} steps in {time.perf_counter() - start:.1f} s")
    for key in before:
        print(f"held-out {key:14s}: {before[key]:.4f} -> {after[key]:.4f}")
    if args.json:
        payload = {"example": "lane3d_matching", "quick": args.quick, "steps": args.steps}
        write_json(args.json, {**payload, "before": before, "after": after})


def write_json(path: str | Path, payload: dict) -> None:
    """Write ``payload`` atomically (temp file in the target folder, then rename)."""
    from drivemetrics._internal.files import atomic_write_text

    atomic_write_text(path, json.dumps(payload, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
