"""Benchmark: the vectorised KITTI object evaluation vs a plain per-frame Python/numpy port of the C++.

Inputs: the 300 fixture label frames (``kitti_object/label_2``) repeated to 7,481 frames (the size of the KITTI
training set), evaluated for Car / Pedestrian / Cyclist, 2D + AOS + BEV + 3D, three difficulties:

- ``GT as detections``: every label line except DontCare, with score 1.0 (so AOS is computed);
- ``jittered``: detector-like results (jittered boxes, random scores, misses, flips, class confusion, boxes on
  DontCare regions, random false positives incl. tiny ones; ``tests/detection/kitti_oracle.jitter_detections``).

Timed in the same run:

- ``evaluate_kitti_objects`` on all 7,481 frames (no warm-up, no JIT: the first call is the one timed);
- baseline: ``tests/detection/kitti_oracle.evaluate``, the C++ loops frame by frame, GT by GT, detection by
  detection, in Python (overlap matrices per frame with the same float64 box functions). It is timed on the first
  ``--baseline-frames`` frames and extrapolated linearly to 7,481 frames (its cost per frame does not depend on
  the number of frames: 41 thresholds, per-frame loops); the two results are asserted equal on those frames.

Run ``python benchmarks/kitti_object.py [--frames 7481] [--baseline-frames 150] [--workers 1]`` with
``DRIVEMETRICS_FIXTURES`` set (or the fixtures in ``../shared/fixtures``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from drivemetrics.detection.io import KittiObjects, read_kitti_object_folder  # noqa: E402
from drivemetrics.detection.kitti_object import DIFFICULTIES, evaluate_kitti_objects  # noqa: E402
from tests.detection import kitti_oracle  # noqa: E402


def _fixtures() -> Path:
    env = os.environ.get("DRIVEMETRICS_FIXTURES")
    candidates = ([Path(env)] if env else []) + [ROOT.parent / "shared" / "fixtures"]
    for path in candidates:
        if (path / "kitti_object" / "label_2").is_dir():
            return path / "kitti_object" / "label_2"
    sys.exit("kitti_object fixtures not found: set DRIVEMETRICS_FIXTURES")


def _without_dontcare(frame: KittiObjects) -> KittiObjects:
    keep = [i for i, t in enumerate(frame.type) if t != "DontCare"]
    return KittiObjects.from_array([frame.type[i] for i in keep], frame.to_array()[keep]).with_score(1.0)


def _check_equal(result: dict, expected: dict) -> None:
    for cls, per_metric in expected.items():
        for metric, curves in per_metric.items():
            got = np.array([result[cls][metric][d]["curve"] for d in DIFFICULTIES])
            np.testing.assert_allclose(got, np.array(curves), rtol=0, atol=1e-12, equal_nan=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=7481)
    parser.add_argument("--baseline-frames", type=int, default=150)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()

    labels = list(read_kitti_object_folder(_fixtures()).values())
    gts = [labels[i % len(labels)] for i in range(args.frames)]
    jittered = kitti_oracle.jitter_detections(labels, seed=0)
    inputs = {
        "GT as detections": [_without_dontcare(g) for g in gts],
        "jittered": [jittered[i % len(labels)] for i in range(args.frames)],
    }
    print(
        f"{args.frames} frames, {sum(len(g) for g in gts)} label lines; classes car/pedestrian/cyclist; 2D+AOS+BEV+3D"
    )
    print(f"{'input':<18} {'detections':>10} {'vectorised s':>13} {'per-frame loop s':>17} {'speed-up':>9}  car 3D mod")
    for name, dets in inputs.items():
        start = time.perf_counter()
        result = evaluate_kitti_objects(dets, gts, only_detected=False, workers=args.workers)
        fast = time.perf_counter() - start
        n = min(args.baseline_frames, args.frames)
        start = time.perf_counter()
        expected = kitti_oracle.evaluate(gts[:n], dets[:n])
        slow = (time.perf_counter() - start) * args.frames / n
        _check_equal(evaluate_kitti_objects(dets[:n], gts[:n], only_detected=False), expected)
        ap = result["car"]["3d"]["moderate"]["ap_r40"]
        count = sum(len(d) for d in dets)
        print(f"{name:<18} {count:>10} {fast:>13.2f} {slow:>16.1f}* {slow / fast:>8.1f}x  {ap:.4f}")
    print(f"* timed on {min(args.baseline_frames, args.frames)} frames, extrapolated linearly; results equal there")


if __name__ == "__main__":
    main()
