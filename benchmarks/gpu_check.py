"""One prepared GPU check: the CUDA paths run, agree with the CPU and are fast.

On a machine with CUDA, in one go (under 6 minutes on an H100):

1. runs the ``gpu``-marked tests (``pytest -m gpu``);
2. compares every GPU kernel with its CPU result on the same inputs: pixel counting (float and uint8), BEV warps,
   soft F-measure forward and backward, PSLD and ``PSLDLoss`` (forward and backward), the expected road center,
   CULane (default mode), the DRP patch compositing and a short attack, and the polyline kernels where the
   package has them;
3. times, with CUDA events after warm-up: pixel counting throughput (GB/s of input read) against a plain
   device-to-device copy measured in the same run, a batched BEV warp, ``PSLDLoss`` forward + backward, and the
   full DRP attack (200 iterations, 20 frames x 8 EOT samples);

and writes one JSON (``--json``, default ``gpu_check.json``) and a short table. Without CUDA it prints one line
and exits 0 (CI has no GPU). ``--self-test`` runs the comparison machinery CPU against CPU on small inputs (and
checks that a perturbed result is caught); ``tests/benchmarks/test_gpu_check.py`` runs it in ``make test``.

    python benchmarks/gpu_check.py                 # on the GPU machine
    python benchmarks/gpu_check.py --self-test     # anywhere
    make gpu-check
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

REPO_ROOT = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------------------------------------- comparisons


@dataclass
class Comparison:
    """One kernel's device result against its CPU result."""

    name: str
    ok: bool
    max_abs_diff: float
    tolerance: str
    error: str = ""


def _leaves(value: Any, prefix: str = "") -> Iterator[tuple[str, torch.Tensor]]:
    """Every tensor in a (nested) result: tensors, dicts, tuples, lists, dataclasses, NamedTuples."""
    if isinstance(value, torch.Tensor):
        yield prefix, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, f"{prefix}.{key}")
    elif hasattr(value, "__dataclass_fields__"):
        for key in value.__dataclass_fields__:
            yield from _leaves(getattr(value, key), f"{prefix}.{key}")
    elif isinstance(value, (tuple, list)):
        for i, item in enumerate(value):
            yield from _leaves(item, f"{prefix}[{i}]")
    elif isinstance(value, (int, float, bool)):
        yield prefix, torch.tensor(value)


def compare(name: str, reference: Any, result: Any, rtol: float, atol: float) -> Comparison:
    """Compare every tensor of ``result`` with the same tensor of ``reference`` (on the CPU, float64).

    Shapes, dtypes and NaN positions must match; values must satisfy ``|a - b| <= atol + rtol * |b|``.
    """
    ref_leaves, res_leaves = dict(_leaves(reference)), dict(_leaves(result))
    tolerance = f"rtol {rtol:g}, atol {atol:g}"
    if ref_leaves.keys() != res_leaves.keys() or not ref_leaves:
        return Comparison(name, False, math.inf, tolerance, f"structure differs: {sorted(ref_leaves)}")
    worst, problems = 0.0, []
    for key, ref in ref_leaves.items():
        res = res_leaves[key].detach().cpu()
        ref = ref.detach().cpu()
        if res.shape != ref.shape or res.dtype != ref.dtype:
            problems.append(f"{key}: {res.dtype}{tuple(res.shape)} vs {ref.dtype}{tuple(ref.shape)}")
            continue
        a, b = res.double(), ref.double()
        if not torch.equal(torch.isnan(a), torch.isnan(b)):
            problems.append(f"{key}: NaN positions differ")
            continue
        finite = ~torch.isnan(b)
        diff = (a - b).abs()[finite]
        if diff.numel():
            worst = max(worst, float(diff.max()))
            if bool((diff > atol + rtol * b.abs()[finite]).any()):
                problems.append(f"{key}: max |diff| {float(diff.max()):.3g}")
    return Comparison(name, not problems, worst, tolerance, "; ".join(problems))


def _generator(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _to(value: Any, device: torch.device) -> Any:
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, dict):
        return {k: _to(v, device) for k, v in value.items()}
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # NamedTuple
        return type(value)(*(_to(v, device) for v in value))
    if isinstance(value, (tuple, list)):
        return type(value)(_to(v, device) for v in value)
    return value


# Each check builds its inputs on the CPU (seeded, sized by ``scale``), runs the kernel on ``device`` and returns
# everything to compare (moved back to the CPU by the caller). ``(name, function, rtol, atol)``.


def _pixel_counting(device: torch.device, scale: float) -> dict[str, Any]:
    from drivemetrics.functional import pixel_counts

    h, w = max(8, int(375 * scale)), max(8, int(1242 * scale))
    g = _generator(1)
    probs = torch.rand(4, h, w, generator=g)
    road = torch.rand(4, h, w, generator=g) > 0.5
    valid = torch.rand(4, h, w, generator=g) > 0.1
    as_uint8 = (probs * 255).round().to(torch.uint8)
    return {
        "float": pixel_counts(probs.to(device), road.to(device), valid=valid.to(device)),
        "uint8": pixel_counts(as_uint8.to(device), road.to(device), valid=valid.to(device)),
    }


def _bev_warp(device: torch.device, scale: float) -> Any:
    from drivemetrics.geometry import BevGrid
    from drivemetrics.geometry.warp import warp_image_to_bev

    h, w = max(16, int(375 * scale)), max(16, int(1242 * scale))
    image = torch.rand(2, 3, h, w, generator=_generator(2), dtype=torch.float64)
    # a camera 1.65 m above the road, looking forward: image (u, v, 1) ~ K [X, Z, 1] on the road plane Y = 0
    fx, cx, cy = 0.58 * w, w / 2, 0.47 * h
    homography = torch.tensor([[fx, cx, 0.0], [0.0, cy, fx * 1.65], [0.0, 1.0, 0.0]], dtype=torch.float64)
    grid = BevGrid(resolution=0.05 if scale >= 1 else 0.5)
    return warp_image_to_bev(image.to(device), homography.expand(2, 3, 3).to(device), grid)


def _soft_f(device: torch.device, scale: float) -> dict[str, Any]:
    from drivemetrics.functional import soft_f_measure

    h, w = max(8, int(256 * scale)), max(8, int(512 * scale))
    g = _generator(3)
    logits = torch.randn(4, h, w, generator=g, dtype=torch.float64).to(device).requires_grad_(True)
    road = (torch.rand(4, h, w, generator=g) > 0.5).to(device)
    loss = soft_f_measure(logits, road, from_logits=True)
    (grad,) = torch.autograd.grad(loss.sum(), logits)
    return {"loss": loss, "grad": grad}


def _psld_inputs(scale: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    batch = max(2, int(32 * scale))
    z = torch.linspace(0.0, 100.0, 101, dtype=torch.float64)
    g = _generator(4)
    curvature = 1e-3 * torch.randn(batch, 1, generator=g, dtype=torch.float64)
    target = 0.5 * curvature * z**2 + 0.1 * torch.randn(batch, 1, generator=g, dtype=torch.float64)
    preds = target + 0.2 * torch.randn(batch, 101, generator=g, dtype=torch.float64).cumsum(-1) / 10
    return preds, target, z


def _psld(device: torch.device, scale: float) -> dict[str, Any]:
    from drivemetrics.functional import psld
    from drivemetrics.lane import PSLDLoss

    preds, target, z = _psld_inputs(scale)
    value = psld(preds.to(device), target.to(device), speed=20.0, z_samples=z.to(device), reduction="none")
    x = preds.to(device).requires_grad_(True)
    loss = PSLDLoss(z_samples=z.to(device)).to(device)(x, target.to(device), speed=20.0)
    (grad,) = torch.autograd.grad(loss, x)
    return {"psld": value, "loss": loss, "grad": grad}


def _road_center(device: torch.device, scale: float) -> Any:
    from drivemetrics.lane import road_center as module

    maps = torch.randn(2, 5, max(8, int(36 * scale)), max(16, int(100 * scale)), generator=_generator(5))
    function = module.expected_center_from_maps
    return function(maps.to(device))


def _culane(device: torch.device, scale: float) -> dict[str, Any]:
    from drivemetrics.lane import culane as module

    g = _generator(6)
    ys = torch.linspace(580.0, 280.0, 18)
    base = torch.tensor([400.0, 700.0, 950.0, 1250.0])[:, None] + torch.linspace(0, 120, 18)[None]
    target = torch.stack([base.clone() for _ in range(3)])  # (B, L, P) x coordinates
    preds = target + 25 * torch.randn(target.shape, generator=g)
    points = lambda xs: torch.stack([xs, ys.expand_as(xs)], dim=-1)  # noqa: E731
    return module.culane_f1(points(preds).to(device), points(target).to(device))


def _drp(device: torch.device, scale: float) -> dict[str, Any]:
    from drivemetrics.attack import DriveClips, DRPConfig, drp_attack
    from drivemetrics.attack.patch import composite_patch
    from drivemetrics.synthetic.lane_clips import make_lane_clips
    from drivemetrics.synthetic.lane_detectors import make_detector

    frames = max(3, int(21 * scale))
    clips = make_lane_clips(batch=1, frames=frames, seed=0, max_wander=0.1)
    images = clips.images[0, :2].to(device)
    h, w = images.shape[-2:]
    texture = 0.3 * torch.rand(1, 1, 40, 80, generator=_generator(7))
    image_from_texture = torch.tensor([[w / 80 * 0.5, 0.0, w * 0.25], [0.0, h / 40 * 0.3, h * 0.6], [0.0, 0.0, 1.0]])
    composite, mask = composite_patch(
        images, texture.expand(2, 1, 40, 80).to(device), image_from_texture.expand(2, 3, 3).to(device)
    )
    torch.manual_seed(0)
    detector = make_detector("segmentation", clips.h_samples).to(device)
    for parameter in detector.parameters():
        parameter.requires_grad_(False)
    fields = {f: getattr(clips, f) for f in ("speed", "image_from_road", "poses", "z_samples")}
    drive = DriveClips(
        clips.images.to(device), fields["speed"], fields["image_from_road"], fields["poses"], clips.center_road,
        fields["z_samples"],
    )  # fmt: skip
    result = drp_attack(drive, detector.lane_model(), DRPConfig(eot_samples=2, target_deviation=None, iterations=2))
    return {"composite": composite, "mask": mask, "patch": result.perturbation}


def _polyline(device: torch.device, scale: float) -> Any:
    """The polyline kernels of the OpenLane-V2 and map-AP domains: Chamfer and Frechet matrices, the bounded
    (banded) Frechet distances, the soft Frechet distance and its gradient."""
    from drivemetrics.polyline import (
        bounded_frechet_distance_pairs,
        chamfer_distance_matrix,
        frechet_distance_matrix,
        soft_frechet_distance_pairs,
    )

    g = _generator(8)
    a = torch.randn(3, 4, 40, 2, generator=g, dtype=torch.float64).cumsum(-2)
    b = torch.randn(3, 5, 40, 2, generator=g, dtype=torch.float64).cumsum(-2)
    lengths = torch.randint(2, 41, (3, 5), generator=g)
    full = torch.full((3, 4), 40)
    pairs_a = a.reshape(12, 40, 2).to(device)
    pairs_b = (pairs_a.cpu() + 0.5 * torch.randn(12, 1, 2, generator=g, dtype=torch.float64)).to(device)
    soft_a = pairs_a[:4].clone().requires_grad_(True)
    soft = soft_frechet_distance_pairs(soft_a, pairs_b[:4], gamma=0.1)
    (grad,) = torch.autograd.grad(soft.sum(), soft_a)
    return {
        "chamfer_matrix": chamfer_distance_matrix(b.to(device), lengths.to(device), a.to(device), full.to(device)),
        "frechet_matrix": frechet_distance_matrix(b.to(device), lengths.to(device), a.to(device), full.to(device)),
        "bounded_frechet": bounded_frechet_distance_pairs(pairs_a, pairs_b, max_distance=3.0),
        "soft_frechet": soft.detach(),
        "soft_frechet_grad": grad,
    }


CHECKS: list[tuple[str, Callable[[torch.device, float], Any], float, float]] = [
    ("pixel counting (float, uint8)", _pixel_counting, 0.0, 0.0),
    ("BEV warp", _bev_warp, 1e-9, 1e-9),
    ("soft F-measure forward + backward", _soft_f, 1e-9, 1e-12),
    ("PSLD, PSLDLoss forward + backward", _psld, 1e-7, 1e-9),
    ("expected road center", _road_center, 1e-5, 1e-6),
    ("CULane F1 (default mode)", _culane, 0.0, 1e-6),
    ("DRP compositing + 2-iteration attack", _drp, 1e-3, 1e-4),
    ("polyline Chamfer / Frechet matrices, banded and soft Frechet", _polyline, 1e-9, 1e-9),
]


def run_comparisons(device: torch.device, reference: torch.device, scale: float) -> list[Comparison]:
    """Every check on ``device`` against ``reference`` (usually the CPU). A check that raises is a failure."""
    out = []
    for name, function, rtol, atol in CHECKS:
        try:
            expected = function(reference, scale)
            if expected is None:
                continue
            got = function(device, scale)
            out.append(compare(name, _to(expected, torch.device("cpu")), _to(got, torch.device("cpu")), rtol, atol))
        except Exception as err:  # report and go on: one broken kernel must not hide the others
            detail = traceback.format_exception_only(type(err), err)[-1].strip()
            out.append(Comparison(name, False, math.inf, "", f"raised {detail}"))
    return out


# ------------------------------------------------------------------------------------------------------ timing


def _timed(function: Callable[[], Any], device: torch.device, repeat: int, warmup: int = 2) -> float:
    """Median seconds per call after ``warmup`` calls (CUDA events on a GPU, perf_counter elsewhere)."""
    for _ in range(warmup):
        function()
    times = []
    for _ in range(repeat):
        if device.type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            function()
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end) / 1e3)
        else:
            begin = time.perf_counter()
            function()
            times.append(time.perf_counter() - begin)
    times.sort()
    return times[len(times) // 2]


def run_timings(device: torch.device, scale: float, attack_iterations: int) -> dict[str, float]:
    """Throughput and latency figures on ``device`` (see the module docstring)."""
    from drivemetrics.functional import pixel_counts
    from drivemetrics.geometry import BevGrid
    from drivemetrics.geometry.warp import warp_image_to_bev
    from drivemetrics.lane import PSLDLoss

    out: dict[str, float] = {}
    batch, h, w = max(1, int(64 * scale)), 375, 1242
    probs = torch.rand(batch, h, w, device=device)
    road = torch.rand(batch, h, w, device=device) > 0.5
    valid = torch.ones(batch, h, w, dtype=torch.bool, device=device)
    read_bytes = probs.numel() * (4 + 1 + 1)
    seconds = _timed(lambda: pixel_counts(probs, road, valid=valid, validate_args=False), device, repeat=5)
    out["pixel_counting_GBps"] = read_bytes / seconds / 1e9
    buffer = torch.empty(max(1, int(256e6 * scale)) // 4, device=device)
    copy_s = _timed(lambda: buffer.clone(), device, repeat=5)
    out["device_copy_GBps"] = 2 * buffer.numel() * 4 / copy_s / 1e9  # read + write
    out["pixel_counting_vs_copy"] = out["pixel_counting_GBps"] / out["device_copy_GBps"]

    image = torch.rand(batch, 3, h, w, device=device)
    fx = 0.58 * w
    homography = torch.tensor([[fx, w / 2, 0.0], [0.0, 0.47 * h, fx * 1.65], [0.0, 1.0, 0.0]], device=device)
    grid = BevGrid()
    out["bev_warp_batch_s"] = _timed(lambda: warp_image_to_bev(image, homography.expand(batch, 3, 3), grid), device, 5)
    out["bev_warp_frames"] = float(batch)

    preds, target, z = _psld_inputs(scale * 8)  # batch 256 at scale 1
    x = preds.float().to(device).requires_grad_(True)
    loss = PSLDLoss(z_samples=z.float().to(device), validate_args=False).to(device)
    target_d = target.float().to(device)

    def psld_step() -> None:
        torch.autograd.grad(loss(x, target_d, speed=20.0), x)

    out["psld_loss_fwd_bwd_s"] = _timed(psld_step, device, repeat=10)
    out["psld_loss_batch"] = float(x.shape[0])

    if attack_iterations:
        from drivemetrics.attack import DriveClips, DRPConfig, drp_attack
        from drivemetrics.synthetic.lane_clips import make_lane_clips
        from drivemetrics.synthetic.lane_detectors import make_detector

        clips = make_lane_clips(batch=1, frames=21, seed=0, max_wander=0.1)
        drive = DriveClips(
            clips.images.to(device), clips.speed, clips.image_from_road, clips.poses, clips.center_road,
            clips.z_samples,
        )  # fmt: skip
        torch.manual_seed(0)
        detector = make_detector("segmentation", clips.h_samples).to(device)
        for parameter in detector.parameters():
            parameter.requires_grad_(False)
        config = DRPConfig(eot_samples=8, target_deviation=None, iterations=attack_iterations)
        drp_attack(drive, detector.lane_model(), DRPConfig(eot_samples=8, target_deviation=None, iterations=2))
        if device.type == "cuda":
            torch.cuda.synchronize()
        begin = time.perf_counter()
        drp_attack(drive, detector.lane_model(), config)
        if device.type == "cuda":
            torch.cuda.synchronize()
        out["drp_attack_s"] = time.perf_counter() - begin
        out["drp_attack_iterations"] = float(attack_iterations)
    return out


# --------------------------------------------------------------------------------------------------------- main


def run_gpu_tests() -> dict[str, Any]:
    """``pytest -m gpu`` in a child process: exit status and the summary line."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    argv = [sys.executable, "-m", "pytest", "-q", "-m", "gpu", "-p", "no:cacheprovider", "tests"]
    done = subprocess.run(argv, capture_output=True, text=True, cwd=REPO_ROOT, env=env)
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    return {"returncode": done.returncode, "summary": lines[-1] if lines else "", "tail": "\n".join(lines[-30:])}


def self_test() -> int:
    """The comparison machinery on the CPU against the CPU (must agree) and a perturbed result (must be caught)."""
    cpu = torch.device("cpu")
    comparisons = run_comparisons(cpu, cpu, scale=0.05)
    for c in comparisons:
        print(f"{'ok  ' if c.ok else 'FAIL'} {c.name}: {c.error or f'max |diff| {c.max_abs_diff:.3g}'}")
    caught = not compare("perturbed", {"x": torch.ones(3)}, {"x": torch.ones(3) + 1e-3}, 1e-6, 0.0).ok
    print(f"{'ok  ' if caught else 'FAIL'} a perturbed result is reported")
    timings = run_timings(cpu, scale=0.02, attack_iterations=0)
    timed = all(math.isfinite(v) and v > 0 for v in timings.values())
    print(f"{'ok  ' if timed else 'FAIL'} timings: {', '.join(sorted(timings))}")
    return 0 if caught and timed and all(c.ok for c in comparisons) else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", default="gpu_check.json", help="output JSON (default gpu_check.json)")
    parser.add_argument("--self-test", action="store_true", help="CPU vs CPU on small inputs (no GPU needed)")
    parser.add_argument("--skip-tests", action="store_true", help="do not run the gpu-marked tests")
    parser.add_argument("--attack-iterations", type=int, default=200, help="DRP attack iterations timed (200)")
    args = parser.parse_args(argv)
    if args.self_test:
        return self_test()
    if not torch.cuda.is_available():
        print("gpu_check: no CUDA device here; nothing ran")
        return 0
    device = torch.device("cuda")
    report: dict[str, Any] = {
        "device": torch.cuda.get_device_name(device),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "python": platform.python_version(),
    }
    begin = time.perf_counter()
    report["gpu_tests"] = {"skipped": True} if args.skip_tests else run_gpu_tests()
    comparisons = run_comparisons(device, torch.device("cpu"), scale=1.0)
    report["comparisons"] = [asdict(c) for c in comparisons]
    report["timings"] = run_timings(device, scale=1.0, attack_iterations=args.attack_iterations)
    report["wall_s"] = time.perf_counter() - begin
    Path(args.json).write_text(json.dumps(report, indent=2) + "\n")

    print(f"{report['device']}, torch {report['torch']}, CUDA {report['cuda']}")
    tests = report["gpu_tests"]
    print(f"gpu-marked tests: {tests.get('summary', 'skipped')}")
    for c in comparisons:
        print(f"  {'ok  ' if c.ok else 'FAIL'} {c.name:<40} max |diff| {c.max_abs_diff:.3g}  {c.error}")
    t = report["timings"]
    print(f"  pixel counting {t['pixel_counting_GBps']:.0f} GB/s, device copy {t['device_copy_GBps']:.0f} GB/s "
          f"({t['pixel_counting_vs_copy']:.2f} of copy)")  # fmt: skip
    print(f"  BEV warp {t['bev_warp_frames']:.0f} frames: {t['bev_warp_batch_s'] * 1e3:.2f} ms")
    print(f"  PSLDLoss fwd+bwd batch {t['psld_loss_batch']:.0f}: {t['psld_loss_fwd_bwd_s'] * 1e3:.2f} ms")
    if "drp_attack_s" in t:
        print(f"  DRP attack {t['drp_attack_iterations']:.0f} it, 20 frames x 8 EOT: {t['drp_attack_s']:.1f} s")
    print(f"wall {report['wall_s']:.0f} s -> {args.json}")
    failed = tests.get("returncode", 0) != 0 or not all(c.ok for c in comparisons)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
