"""Pooled KITTI-ROAD pixel evaluation: drivemetrics' one-pass counters vs the devkit's per-image numpy histograms.

A KITTI-ROAD-sized run: 289 frames of 375 x 1242, 256 thresholds, 8-bit confidence maps (what the devkit reads
from PNG), binary ground truth and a valid mask. The baseline is a plain numpy implementation of the devkit's
algorithm (per image: ``v / 255`` as float32, ``np.histogram`` of positive and negative pixels over
``[-inf, k/255..., inf]``, cumulative sums, pooled sums, one F-maximisation), timed in the same run; both must
give the same counts and scores. Prints frames/s, the speed ratio and the metric's state size (which does not
depend on the number of frames). With CUDA, also GPU frames/s.

    python benchmarks/road_pixel.py            # full run (289 frames)
    python benchmarks/road_pixel.py --quick    # 24 frames
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from drivemetrics.road import RoadPixelMetrics

HEIGHT, WIDTH = 375, 1242
THRESH = np.arange(256) / 255.0


def make_frames(count: int, distinct: int, seed: int = 0) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """``count`` frames cycling over ``distinct`` synthetic ones, shaped like a segmentation network's output.

    Road is a wedge below the horizon; the confidence is a sigmoid of the signed distance to the road edge (in
    pixels) with a low-frequency error and a little pixel noise, quantised to uint8, so large areas are saturated
    at 0 or 255 as with a trained network. The valid mask has a "don't care" block as in um_road_000000.
    """
    rng = np.random.default_rng(seed)
    rows = np.arange(HEIGHT)[:, None]
    cols = np.arange(WIDTH)[None, :]
    base = []
    for _ in range(distinct):
        center = WIDTH / 2 + rng.uniform(-150, 150)
        half_width = np.clip((rows - 180) * rng.uniform(2.0, 4.0), 0, None)
        road = np.abs(cols - center) < half_width
        error = 40 * np.sin(rows / rng.uniform(20, 60) + rng.uniform(0, 6)) + 30 * np.sin(cols / rng.uniform(50, 150))
        logit = (half_width + error - np.abs(cols - center)) / 12 + rng.normal(0, 0.3, road.shape)
        values = np.round(255 / (1 + np.exp(-logit))).astype(np.uint8)
        valid = np.ones_like(road)
        valid[190:250, : rng.integers(0, 400)] = False
        base.append((values, road, valid))
    return [base[i % distinct] for i in range(count)]


def devkit_numpy(frames: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> dict[str, float]:
    """The devkit's per-image histogram algorithm (evalExp + pxEval_maximizeFMeasure), plain numpy."""
    edges = np.concatenate(([-np.inf], THRESH, [np.inf]))
    total_fn = np.zeros(len(THRESH))
    total_fp = np.zeros(len(THRESH))
    pos_num = neg_num = 0
    for values, road, valid in frames:  # the devkit's statements, one image at a time
        prob = np.clip(values.astype("f4") / np.iinfo(values.dtype).max, 0.0, 1.0)
        fn_hist = np.histogram(prob[(road == True) & (valid == True)], bins=edges)[0]  # noqa: E712
        fp_hist = np.histogram(prob[(road == False) & (valid == True)], bins=edges)[0]  # noqa: E712
        total_fn += np.cumsum(fn_hist)[: len(THRESH)]
        total_fp += np.flipud(np.cumsum(np.flipud(fp_hist)))[1 : 1 + len(THRESH)]
        pos_num += int(np.sum((road == True) & (valid == True)))  # noqa: E712
        neg_num += int(np.sum((road == False) & (valid == True)))  # noqa: E712
    tp = pos_num - total_fn
    recall = tp / float(pos_num)
    precision = tp / (tp + total_fp + 1e-10)
    keep = ~((recall == 0) & (precision == 0))
    recall, precision = recall[keep], precision[keep]
    avg_prec = sum(max(precision[recall >= level]) for level in np.arange(0, 1.1, 0.1)) / 11
    f = 2 * (precision * recall) / (precision + recall + 1e-10)
    index = int(f.argmax())
    return {
        "max_f": float(f[index]),
        "average_precision": float(avg_prec),
        "best_threshold": float(THRESH[index]),
        "TP": tp[index],
    }


def stack_batch(frames, device: torch.device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``B x H x W`` tensors of a list of frames (data loading, not timed)."""
    return tuple(torch.from_numpy(np.stack([f[i] for f in frames])).to(device) for i in range(3))


def run_drivemetrics(batches, count: int) -> tuple[dict[str, float], int]:
    """Pooled evaluation of ``count`` frames with RoadPixelMetrics, one update per batch (cycling over ``batches``)."""
    preds0 = batches[0][0]
    metric = RoadPixelMetrics(fixed_threshold=None, validate_args=False).to(preds0.device)  # as the devkit
    seen = 0
    index = 0
    while seen < count:
        preds, target, valid = batches[index % len(batches)]
        take = min(count - seen, preds.shape[0])
        preds, target, valid = preds[:take], target[:take], valid[:take]
        metric.update(preds, target, valid=valid)
        seen += take
        index += 1
    scores = metric.compute()
    state_bytes = sum(t.numel() * t.element_size() for t in metric.metric_state.values())
    out = {k: scores[k].item() for k in ("max_f", "average_precision", "best_threshold", "tp_wp")}
    return out, state_bytes


def timed(fn, *args, repeat: int = 1):
    """``(result, best wall seconds, best CPU seconds of this process)`` over ``repeat`` runs.

    CPU time is printed too because a shared machine's load inflates wall time; with more than one torch thread
    it adds up the threads.
    """
    best_wall = best_cpu = float("inf")
    result = None
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        result = fn(*args)
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        best_wall = min(best_wall, time.perf_counter() - wall)
        best_cpu = min(best_cpu, time.process_time() - cpu)
    return result, best_wall, best_cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="24 frames instead of 289")
    parser.add_argument("--frames", type=int, default=None, help="number of frames (default 289, quick 24)")
    parser.add_argument("--batch", type=int, default=8, help="frames per update")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (numpy is single-threaded)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    count = args.frames or (24 if args.quick else 289)
    # the frames cycle over `batch` distinct ones, so every update sees the same pre-stacked batch
    frames = make_frames(count, distinct=min(count, args.batch))
    print(f"{count} frames of {HEIGHT} x {WIDTH}, 256 thresholds, batch {args.batch}, {args.threads} torch thread(s)")

    reference, t_numpy, c_numpy = timed(devkit_numpy, frames, repeat=3 if args.quick else 2)
    print(
        f"numpy devkit algorithm       : wall {t_numpy:7.3f} s {count / t_numpy:7.1f} frames/s | cpu {c_numpy:7.3f} s"
    )
    cpu_batches = [stack_batch(frames[: args.batch], torch.device("cpu"))]
    cpu_float = [(p.float() / 255, t, v) for p, t, v in cpu_batches]  # the devkit's float32 reading, not timed
    for as_float in (False, True):
        label = "float32 maps" if as_float else "uint8 maps  "
        (scores, state_bytes), t_ours, c_ours = timed(
            run_drivemetrics, cpu_float if as_float else cpu_batches, count, repeat=3
        )
        for key, ref_key in (
            ("max_f", "max_f"),
            ("average_precision", "average_precision"),
            ("best_threshold", "best_threshold"),
            ("tp_wp", "TP"),
        ):
            assert abs(scores[key] - reference[ref_key]) <= 1e-12, (key, scores[key], reference[ref_key])
        print(
            f"drivemetrics CPU {label}: wall {t_ours:7.3f} s {count / t_ours:7.1f} frames/s | cpu {c_ours:7.3f} s | "
            f"ratio wall {t_numpy / t_ours:5.1f}x cpu {c_numpy / c_ours:5.1f}x (same MaxF {scores['max_f']:.12f})"
        )
    print(
        f"metric state: {state_bytes} bytes (4 int64 counters x 256 thresholds + a constant config), "
        "whatever the number of frames"
    )
    if torch.cuda.is_available():
        gpu_batches = [stack_batch(frames[: args.batch], torch.device("cuda"))]
        gpu_float = [(p.float() / 255, t, v) for p, t, v in gpu_batches]
        run_drivemetrics(gpu_batches, args.batch)  # warm-up
        for as_float in (False, True):
            (scores, _), t_gpu, _ = timed(run_drivemetrics, gpu_float if as_float else gpu_batches, count, repeat=3)
            assert abs(scores["max_f"] - reference["max_f"]) <= 1e-12
            label = "float32" if as_float else "uint8"
            print(
                f"drivemetrics GPU {label:7s}: {t_gpu:8.3f} s  {count / t_gpu:9.1f} frames/s (data already on the GPU)"
            )
    else:
        print("CUDA not available: no GPU timing")


if __name__ == "__main__":
    main()
