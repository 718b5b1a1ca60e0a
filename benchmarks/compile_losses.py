"""Eager vs ``torch.compile(fullgraph=True)`` of the training losses, forward + backward, steady state, on the CPU.

The losses (``validate_args=False``, the setting that compiles as one graph): ``SoftFMeasureLoss`` on a batch of
road logits, ``PSLDLoss`` on lane-center profiles (10-frame MPC roll-out) and the expected-road-center attack
objective on row-wise lane scores. Each is timed eagerly with ``validate_args=True`` (the default: value checks,
host syncs), eagerly with ``validate_args=False``, and compiled (inductor) after warm-up; the compile time (first
call) is reported apart. The compiled values and gradients are checked against eager ones.

Run ``python benchmarks/compile_losses.py`` (``--quick``: smaller inputs, fewer repeats). The first compile of the
PSLD roll-out takes minutes on a busy 2-core machine; it is paid once per input shape.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import torch

from drivemetrics.functional import expected_center_from_maps, road_center_attack_loss
from drivemetrics.lane import PSLDLoss
from drivemetrics.lane.geometry import default_z_samples
from drivemetrics.road import SoftFMeasureLoss

Case = tuple[Callable[[bool], Callable[..., torch.Tensor]], tuple[torch.Tensor, ...]]


def cases(quick: bool) -> dict[str, Case]:
    gen = torch.Generator().manual_seed(0)
    b = 4 if quick else 16
    logits = torch.randn(b, 1, 96, 320, generator=gen).requires_grad_()
    road = (torch.rand(b, 1, 96, 320, generator=gen) > 0.5).float()
    m = default_z_samples().numel()
    frames = 256 if quick else 2048
    centers = (0.3 * torch.randn(frames, m, generator=gen)).requires_grad_()
    speed = 10.0 + 20.0 * torch.rand(frames, generator=gen)
    maps = torch.randn(b, 4, 36, 101, generator=gen).requires_grad_()  # UltraFast-like: 4 lanes, 36 rows, 100+1 cells

    def center_loss(validate: bool) -> Callable[..., torch.Tensor]:
        def loss(scores: torch.Tensor) -> torch.Tensor:
            center = expected_center_from_maps(scores, lanes=(1, 2), no_lane_cell=True, validate_args=validate)
            return road_center_attack_loss(center)

        return loss

    def psld_loss(validate: bool) -> Callable[..., torch.Tensor]:
        module = PSLDLoss(validate_args=validate)
        return lambda preds, target, speed: module(preds, target, speed=speed)

    return {
        "SoftFMeasureLoss": (lambda v: SoftFMeasureLoss(from_logits=True, validate_args=v), (logits, road)),
        "PSLDLoss": (psld_loss, (centers, torch.zeros(frames, m), speed)),
        "road center (maps)": (center_loss, (maps,)),
    }


def step(fn: Callable[..., torch.Tensor], inputs: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, torch.Tensor]:
    """Forward + backward; returns the loss and the gradient of the first input."""
    leaf = inputs[0]
    leaf.grad = None
    loss = fn(*inputs)
    loss.backward()
    assert leaf.grad is not None
    return loss.detach(), leaf.grad.clone()


def timed(fn: Callable[..., torch.Tensor], inputs: tuple[torch.Tensor, ...], repeat: int) -> float:
    for _ in range(3):  # warm-up (and, compiled, the guards settle)
        step(fn, inputs)
    start = time.perf_counter()
    for _ in range(repeat):
        step(fn, inputs)
    return (time.perf_counter() - start) / repeat


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller inputs, fewer repeats")
    parser.add_argument("--repeat", type=int, default=None)
    parser.add_argument("--only", nargs="*", default=None, help="only these losses")
    args = parser.parse_args()
    repeat = args.repeat or (5 if args.quick else 20)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, forward + backward, ms per call")
    print(f"{'loss':<20} {'eager checked':>14} {'eager':>8} {'compiled':>9} {'speed-up':>9} {'compile s':>10}")
    for name, (make, inputs) in cases(args.quick).items():
        if args.only and name not in args.only:
            continue
        checked = timed(make(True), inputs, repeat)
        eager_fn = make(False)
        eager = timed(eager_fn, inputs, repeat)
        torch._dynamo.reset()
        compiled_fn = torch.compile(make(False), fullgraph=True)
        start = time.perf_counter()
        value, grad = step(compiled_fn, inputs)
        compile_s = time.perf_counter() - start
        expected_value, expected_grad = step(eager_fn, inputs)
        torch.testing.assert_close(value, expected_value, rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(grad, expected_grad, rtol=1e-4, atol=1e-6)
        compiled = timed(compiled_fn, inputs, repeat)
        print(
            f"{name:<20} {1e3 * checked:>14.2f} {1e3 * eager:>8.2f} {1e3 * compiled:>9.2f} "
            f"{eager / compiled:>8.1f}x {compile_s:>10.1f}"
        )


if __name__ == "__main__":
    main()
