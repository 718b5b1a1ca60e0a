"""Speed of the TuSimple and CULane kernels against simple baselines measured in the same run.

1. TuSimple: the batched ``tusimple_image_scores`` vs a per-image, per-lane Python/numpy loop written like the
   official ``LaneEval.bench`` (same numbers asserted).
2. CULane drawing: ``draw_lanes`` (closed-form row intervals of every segment's capsule + scatter/cumsum) vs the
   direct vectorised distance of every pixel to every segment in torch (same masks asserted).

Run ``python benchmarks/lane_metrics.py [--quick]``; prints times and ratios (and GPU times when CUDA is present).
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
import torch

from drivemetrics.lane.raster import draw_lanes
from drivemetrics.lane.tusimple import tusimple_image_scores


def _timeit(fn, repeat=3):
    best = math.inf
    out = None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - start)
    return best, out


def _loop_bench(preds, gts, ys):
    """Per-image loop in the style of LaneEval.bench (numpy per lane pair)."""
    out = []
    for pred, gt in zip(preds, gts, strict=True):
        accs, matched, fn = [], 0, 0
        for g in gt:
            ok = g >= 0
            k = np.polyfit(ys[ok], g[ok], 1)[0] if ok.sum() > 1 else 0.0
            th = 20.0 / math.cos(math.atan(k))
            best = 0.0
            for p in pred:
                pp = np.where(p >= 0, p, -100.0)
                gg = np.where(g >= 0, g, -100.0)
                best = max(best, float(np.mean(np.abs(pp - gg) < th)))
            accs.append(best)
            matched += best >= 0.85
            fn += best < 0.85
        n = max(min(4, len(gt)), 1)
        out.append((sum(accs) / n, (len(pred) - matched) / len(pred) if len(pred) else 0.0, fn / n))
    return np.array(out)


def bench_tusimple(n_images: int) -> None:
    rng = np.random.default_rng(0)
    ys = np.arange(160.0, 720.0, 10.0)
    gt = np.stack([rng.uniform(100, 1200, (n_images, 4, 1)) + rng.uniform(-1, 1, (n_images, 4, 1)) * (ys - 160)])[0]
    gt[:, :, :8] = -2.0
    pred = gt + rng.normal(0, 10, gt.shape)
    pred[gt < 0] = -2.0
    preds_t = torch.tensor(np.where(pred >= 0, pred, np.nan))
    gts_t = torch.tensor(np.where(gt >= 0, gt, np.nan))
    ys_t = torch.tensor(ys)
    t_loop, ref = _timeit(lambda: _loop_bench(pred, gt, ys), repeat=1)
    t_vec, scores = _timeit(lambda: tusimple_image_scores(preds_t, gts_t, h_samples=ys_t))
    got = torch.stack([scores["accuracy"], scores["fp"], scores["fn"]], -1).numpy()
    assert np.allclose(got, ref, atol=1e-12), "vectorised TuSimple differs from the loop"
    print(
        f"TuSimple, {n_images} images x 4 lanes: loop {t_loop * 1e3:.1f} ms, batched CPU {t_vec * 1e3:.1f} ms, "
        f"speed-up {t_loop / t_vec:.0f}x"
    )
    if torch.cuda.is_available():
        dev = torch.device("cuda")
        t_gpu, _ = _timeit(lambda: tusimple_image_scores(preds_t.to(dev), gts_t.to(dev), h_samples=ys_t.to(dev)))
        print(f"  GPU {t_gpu * 1e3:.1f} ms ({n_images / t_gpu:,.0f} images/s)")


def _distance_masks(points: torch.Tensor, height: int, width: int, radius: float) -> torch.Tensor:
    """Baseline: distance of every pixel to every segment (B x L x S x H x W), no interval trick."""
    a, b = points[:, :, :-1], points[:, :, 1:]
    ok = ~(torch.isnan(a).any(-1) | torch.isnan(b).any(-1))
    a, b = torch.nan_to_num(a), torch.nan_to_num(b)
    yy = torch.arange(height, dtype=points.dtype)[:, None]
    xx = torch.arange(width, dtype=points.dtype)[None, :]
    masks = []
    for row in range(0, height, 64):  # row chunks bound the memory of the baseline
        y = yy[row : row + 64]
        d = b - a
        l2 = (d * d).sum(-1).clamp(min=1e-12)[..., None, None]
        px = xx - a[..., 0, None, None]
        py = y - a[..., 1, None, None]
        t = ((px * d[..., 0, None, None] + py * d[..., 1, None, None]) / l2).clamp(0, 1)
        dist2 = (px - t * d[..., 0, None, None]) ** 2 + (py - t * d[..., 1, None, None]) ** 2
        inside = (dist2 <= radius * radius) & ok[..., None, None]
        masks.append(inside.any(2))
    return torch.cat(masks, dim=2)


def bench_culane(n_images: int) -> None:
    rng = np.random.default_rng(1)
    height, width = 590, 1640
    ys = np.linspace(590, 250, 18)
    base = rng.uniform(200, 1400, (n_images, 4, 1))
    slope = rng.uniform(-1.5, 1.5, (n_images, 4, 1))
    xs = base + slope * (590 - ys) + rng.normal(0, 2, (n_images, 4, 18))
    pts = torch.tensor(np.stack([xs, np.broadcast_to(ys, xs.shape)], -1))
    t_base, ref = _timeit(lambda: _distance_masks(pts, height, width, 15.0), repeat=1)
    t_new, got = _timeit(lambda: draw_lanes(pts, height, width, 30.0))
    mismatch = (got != ref).sum().item()
    assert mismatch <= 1e-5 * got.numel(), f"{mismatch} pixels differ"  # exact ties on the boundary only
    print(
        f"CULane drawing, {n_images} images x 4 lanes at 590 x 1640: per-pixel distance {t_base * 1e3:.0f} ms, "
        f"row intervals {t_new * 1e3:.0f} ms, speed-up {t_base / t_new:.0f}x ({mismatch} boundary pixels differ)"
    )
    if torch.cuda.is_available():
        t_gpu, _ = _timeit(lambda: draw_lanes(pts.cuda(), height, width, 30.0))
        print(f"  GPU {t_gpu * 1e3:.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    bench_tusimple(300 if args.quick else 3000)
    bench_culane(2 if args.quick else 4)


if __name__ == "__main__":
    main()
