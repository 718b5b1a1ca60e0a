"""PSLDLoss as an auxiliary training loss (tiny, CPU, well under 30 s).

A small MLP reads a noisy, partly corrupted observation of the road and predicts the road-frame polynomials of the
ego-left and ego-right lines (``X = c0 + c1 Z + c2 Z^2``). Two models are trained for the same steps:

* baseline: L1 loss on the line positions at 5..40 m (what a lane detector usually optimises);
* + PSLD:   the same loss + ``weight * PSLDLoss("polynomial")``, the differentiable per-frame simulated lateral
  deviation (the vehicle driven by the predicted center for one frame, by the ground truth afterwards).

It prints the exact PSLD (``drivemetrics.lane.psld.psld``) on held-out frames for both; on this toy problem the
auxiliary loss lowers PSLD by a few percent at equal line error (the point is the wiring, not the gain). Run:
``PYTHONPATH=. python training_examples/psld_aux_loss.py [--quick] [--json PATH]``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch
from torch import nn

from drivemetrics.lane.geometry import center_from_polynomials, default_z_samples
from drivemetrics.lane.psld import PSLDLoss, psld

Z = default_z_samples()
Z_FIT = torch.linspace(5.0, 40.0, 8)


def make_frames(n: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Observations ``(n, 12)``, ground-truth line polynomials ``(n, 2, 3)`` and speeds ``(n,)``."""
    offset = 0.4 * torch.randn(n, generator=gen)  # vehicle position in the lane
    heading = 0.01 * torch.randn(n, generator=gen)
    curvature = 2e-4 * torch.randn(n, generator=gen)
    width = 3.5 + 0.2 * torch.rand(n, generator=gen)
    c0 = torch.stack([offset - width / 2, offset + width / 2], 1)
    coeffs = torch.stack([c0, heading[:, None].expand(n, 2), curvature[:, None].expand(n, 2)], -1)
    truth = torch.stack([offset, heading * 20, curvature * 1e3, width - 3.5], 1)
    noisy = truth + 0.3 * torch.randn(n, 4, generator=gen)
    distractor = torch.randn(n, 8, generator=gen)
    speed = 15.0 + 15.0 * torch.rand(n, generator=gen)
    return torch.cat([noisy, distractor], 1), coeffs, speed


def lines_at(coeffs: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    """Line positions ``(n, 2, len(z))`` of polynomial coefficients ``(n, 2, 3)``."""
    return coeffs @ (z[:, None] ** torch.arange(3)).T


class Head(nn.Module):
    """Observation -> line polynomial coefficients, with fixed output scales per coefficient."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(12, 64), nn.Tanh(), nn.Linear(64, 6))
        self.register_buffer("scale", torch.tensor([1.0, 0.01, 2e-4]).repeat(2), persistent=False)
        self.register_buffer("bias", torch.tensor([-1.8, 0.0, 0.0, 1.8, 0.0, 0.0]), persistent=False)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return (self.net(obs) * self.scale + self.bias).reshape(-1, 2, 3)


def train(use_psld: bool, seed: int = 0, steps: int = 100, weight: float = 200.0) -> Head:
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    model = Head()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    psld_loss = PSLDLoss("polynomial", horizon_frames=10)
    for _ in range(steps):
        obs, coeffs, speed = make_frames(64, gen)
        pred = model(obs)
        loss = (lines_at(pred, Z_FIT) - lines_at(coeffs, Z_FIT)).abs().mean()
        if use_psld:
            target_center = center_from_polynomials(coeffs, Z)
            loss = loss + weight * psld_loss(pred, target_center, speed=speed)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model


def evaluate(model: Head) -> tuple[float, float]:
    gen = torch.Generator().manual_seed(1234)
    obs, coeffs, speed = make_frames(2000, gen)
    with torch.no_grad():
        pred = model(obs)
        l1 = float((lines_at(pred, Z_FIT) - lines_at(coeffs, Z_FIT)).abs().mean())
        value = float(psld(center_from_polynomials(pred, Z), center_from_polynomials(coeffs, Z), speed=speed))
    return l1, value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer steps (a few seconds)")
    parser.add_argument("--json", metavar="PATH", help="write the held-out numbers to this JSON file")
    args = parser.parse_args()
    steps = 40 if args.quick else 100
    if args.quick:
        torch.set_num_threads(1)  # tiny tensors: a second thread costs more than it saves
    start = time.perf_counter()
    results = {}
    print(f"{'model':<12} {'line L1 [m]':>12} {'PSLD [m/step]':>14}")
    for name, use_psld in (("baseline", False), ("+ PSLD", True)):
        l1, value = evaluate(train(use_psld, steps=steps))
        results["psld_aux" if use_psld else "baseline"] = {"line_l1_m": l1, "psld": value}
        print(f"{name:<12} {l1:12.4f} {value:14.5f}")
    seconds = time.perf_counter() - start
    print(f"({seconds:.1f} s)")
    if args.json:
        write_json(args.json, {"example": "psld_aux_loss", "quick": args.quick, "steps": steps, **results})


def write_json(path: str | Path, payload: dict) -> None:
    """Write ``payload`` atomically (temp file in the target folder, then rename)."""
    from drivemetrics._internal.files import atomic_write_text

    atomic_write_text(path, json.dumps(payload, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
