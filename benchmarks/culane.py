"""Benchmark: ``culane-eval`` end to end (default and ``--compat reference``) vs a plain per-frame OpenCV loop.

A synthetic CULane-format test set (590 x 1640, about 4 GT lanes per frame with points every 10 rows; predictions
= the GT lanes shifted and jittered, some missing, some extra, some sampled every 20 rows) is written once into a
folder. Timed in the same run, on the same cores:

- baseline ``opencv loop``: per frame, read both files, interpolate every lane of >= 3 points with the official
  natural cubic spline (50 steps per interval), round the points, draw each lane once with ``cv2.line``
  (thickness 30, segment by segment), IoU of every pair with numpy, ``scipy`` Hungarian, TP when IoU > 0.5 --
  the official algorithm as one would write it in Python;
- ``culane-eval`` (default mode, batched torch) and ``culane-eval --compat reference`` (``--workers 1`` and 2),
  each a fresh process (start-up, file reading and the JSON included).

The baseline's counts must equal the compat mode's. Run
``python benchmarks/culane.py [--quick] [--frames N] [--data DIR]`` (default 34,680 frames, the CULane test size;
the loop is timed on the first ``--baseline-frames`` (1,000) frames and scaled to the set, as printed).

**Against the official C++** (``--official DIR``, DIR = SCNN's ``tools/lane_evaluation`` folder, e.g. from an export
of github.com/XingangPan/SCNN; needs g++ with OpenMP and the OpenCV 4 development files, Debian
``libopencv-core-dev libopencv-imgproc-dev libopencv-highgui-dev libopencv-imgcodecs-dev``): the folder is copied
and built with its own Makefile (``-std=c++11 -fopenmp``, no optimisation flag; ``--official-cxx "g++ -O3"`` adds
one), two changes forced by OpenCV 4 and not by the code: the headers' folder on ``CPATH`` and ``opencv_imgcodecs``
linked (the Makefile names it in a comment). The tool runs its frames in parallel with OpenMP (all cores). For each
``--sizes`` frame count the synthetic set above is written, then timed end to end, ``--repeat`` alternating runs,
the official tool first (``evaluate -a gt/ -d pred/ -i . -l list.txt -w 30 -t 0.5 -c 1640 -r 590``, as its
``run.sh``), then ``culane-eval`` (fresh processes): default mode with its default workers and ``--workers 1``,
``--compat reference`` likewise. Printed per size and mode: the medians, the ratio, CPU seconds of each side
(process and children), whether the numbers agree (compat: TP / FP / FN equal to the tool's; the default mode
differs from the tool by definition, its TP difference is printed) and the load average.
``python benchmarks/culane.py --official /path/to/SCNN/tools/lane_evaluation [--sizes 5000] [--repeat 2]
[--json OUT]``.

``--before OLD_CHECKOUT`` (with ``--official``) also runs each mode from another checkout of the library
(``PYTHONPATH=OLD_CHECKOUT``, e.g. a ``git worktree`` of an earlier commit) right after this checkout's run: the
like-for-like check that a change did not slow the command down (its counts must equal this checkout's).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

CULANE_TEST_FRAMES = 34_680
HEIGHT, WIDTH = 590, 1640


def _lane_x(bottom_x: float, bend: float, ys: np.ndarray) -> np.ndarray:
    """x of a lane converging from ``bottom_x`` at row 590 towards (820, 250), with a quadratic bend."""
    t = (590 - ys) / 340.0
    return bottom_x + (820 - bottom_x) * t + bend * t * t


def _fmt(xs: np.ndarray, ys: np.ndarray) -> str:
    return " ".join(f"{x:.3f} {y:.3f}" for x, y in zip(xs, ys, strict=True))


def make_dataset(root: Path, frames: int, seed: int = 0) -> list[str]:
    """Write ``gt/`` and ``pred/`` ``.lines.txt`` files and ``list.txt``; returns the list entries."""
    gen = np.random.default_rng(seed)
    names = []
    for i in range(frames):
        folder = f"driver_{i // 1000:03d}"
        name = f"{folder}/{i:05d}"
        names.append(f"/{name}.jpg")
        n_lanes = int(gen.choice([2, 3, 4, 4, 4, 5]))
        bottoms = np.sort(gen.uniform(-300, 1900, n_lanes))
        bend = gen.normal(0, 60)
        top = gen.uniform(260, 330)
        gt_lines, pred_lines = [], []
        for bottom in bottoms:
            ys = np.arange(590.0, top, -10.0)
            gt_lines.append(_fmt(_lane_x(bottom, bend, ys), ys))
            if gen.random() < 0.9:  # detected
                step = 20.0 if gen.random() < 0.3 else 10.0
                ys_p = np.arange(590.0 - gen.uniform(0, 40), top + gen.uniform(0, 60), -step)
                if len(ys_p) < 2:
                    continue
                xs_p = _lane_x(bottom + gen.normal(0, 8), bend, ys_p) + gen.normal(0, 1.5, len(ys_p))
                pred_lines.append(_fmt(xs_p, ys_p))
        if gen.random() < 0.15:  # a false positive
            ys = np.arange(590.0, 300.0, -10.0)
            pred_lines.append(_fmt(_lane_x(gen.uniform(-300, 1900), gen.normal(0, 60), ys), ys))
        for kind, lines in (("gt", gt_lines), ("pred", pred_lines)):
            path = root / kind / f"{name}.lines.txt"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("".join(line + "\n" for line in lines))
    (root / "list.txt").write_text("\n".join(names) + "\n")
    return names


# ----------------------------------------------------------------------------------------------------------------
# baseline: the official algorithm as a plain per-frame Python / OpenCV loop


def _read(path: Path) -> list[np.ndarray]:
    if not path.is_file():
        return []
    return [np.array(line.split(), dtype=np.float64).reshape(-1, 2) for line in path.read_text().splitlines()]


def _natural_spline(points: np.ndarray, steps: int = 50) -> np.ndarray:
    p = points.astype(np.float32).astype(np.float64)
    n = len(p)
    h = np.linalg.norm(np.diff(p, axis=0), axis=1)
    slope = np.diff(p, axis=0) / h[:, None]
    # tridiagonal system of the natural spline's second derivatives at the interior knots
    a = np.zeros((n - 2, n - 2))
    for i in range(n - 2):
        a[i, i] = 2 * (h[i] + h[i + 1])
        if i > 0:
            a[i, i - 1] = h[i]
        if i < n - 3:
            a[i, i + 1] = h[i + 1]
    m = np.zeros((n, 2))
    m[1:-1] = np.linalg.solve(a, 6 * (slope[1:] - slope[:-1]))
    out = []
    for j in range(n - 1):
        t = np.arange(steps)[:, None] * h[j] / steps
        b = slope[j] - h[j] * (2 * m[j] + m[j + 1]) / 6
        out.append(p[j] + b * t + m[j] / 2 * t**2 + (m[j + 1] - m[j]) / (6 * h[j]) * t**3)
    out.append(p[-1:])
    return np.concatenate(out).astype(np.float32)


def _draw(lane: np.ndarray) -> np.ndarray | None:
    import cv2

    if len(lane) < 2:
        return None
    curve = lane.astype(np.float32) if len(lane) == 2 else _natural_spline(lane)
    pts = np.rint(curve).astype(np.int32)
    image = np.zeros((HEIGHT, WIDTH), np.uint8)
    for k in range(len(pts) - 1):
        cv2.line(image, (int(pts[k, 0]), int(pts[k, 1])), (int(pts[k + 1, 0]), int(pts[k + 1, 1])), 1, 30)
    return image


def baseline(root: Path, names: list[str]) -> tuple[int, int, int]:
    from scipy.optimize import linear_sum_assignment

    tp = fp = fn = 0
    for entry in names:
        rel = entry.lstrip("/").replace(".jpg", ".lines.txt")
        gt, pred = _read(root / "gt" / rel), _read(root / "pred" / rel)
        gm, pm = [_draw(lane) for lane in gt], [_draw(lane) for lane in pred]
        iou = np.zeros((len(gt), len(pred)))
        for i, a in enumerate(gm):
            for j, b in enumerate(pm):
                if a is not None and b is not None:
                    inter = np.count_nonzero(a & b)
                    iou[i, j] = inter / (np.count_nonzero(a) + np.count_nonzero(b) - inter)
        hits = 0
        if iou.size:
            r, c = linear_sum_assignment(1 - iou)
            hits = int((iou[r, c] > 0.5).sum())
        tp, fp, fn = tp + hits, fp + len(pred) - hits, fn + len(gt) - hits
    return tp, fp, fn


def run_cli(root: Path, *extra: str, checkout: Path | None = None) -> tuple[float, dict]:
    """One ``culane-eval`` process (of the library on ``PYTHONPATH``, or of ``checkout``): wall seconds, its JSON."""
    out = root / f"result{'_'.join(extra).replace('-', '')}{'_' + checkout.name if checkout else ''}.json"
    argv = [sys.executable, "-m", "drivemetrics", "culane-eval", "--pred", str(root / "pred"), "--gt", str(root / "gt")]
    argv += ["--list", str(root / "list.txt"), "--json", str(out), *extra]
    # PYTHONSAFEPATH: ``-m`` would otherwise put the working folder first on the path, and a run started in this
    # checkout would import this checkout's package whatever PYTHONPATH says
    env = {**os.environ, "PYTHONPATH": str(checkout), "PYTHONSAFEPATH": "1"} if checkout else None
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    return time.perf_counter() - start, json.loads(out.read_text())


def _check_checkout(checkout: Path) -> None:
    """Exit unless a run with ``PYTHONPATH=checkout`` (from this checkout's folder) imports that checkout's package."""
    env = {**os.environ, "PYTHONPATH": str(checkout), "PYTHONSAFEPATH": "1"}
    command = [sys.executable, "-c", "import drivemetrics; print(drivemetrics.__file__)"]
    found = subprocess.run(command, env=env, capture_output=True, text=True).stdout.strip()
    if not found.startswith(str(checkout) + os.sep):
        sys.exit(f"--before {checkout}: its runs would import {found or 'nothing'}")


def build_official(source: Path, into: Path, cxx: str) -> Path:
    """The official ``evaluate`` built by its own Makefile in a copy of ``source`` (``tools/lane_evaluation``)."""
    if not (source / "Makefile").is_file() or not (source / "src" / "evaluate.cpp").is_file():
        sys.exit(f"--official {source}: expected SCNN's tools/lane_evaluation (Makefile, src/evaluate.cpp)")
    shutil.copytree(source, into, ignore=shutil.ignore_patterns("build", "evaluate"))
    env = {**os.environ, "CPATH": ":".join(p for p in ("/usr/include/opencv4", os.environ.get("CPATH", "")) if p)}
    command = ["make", f"CXX={cxx}", "LIBRARIES=opencv_core opencv_highgui opencv_imgproc opencv_imgcodecs"]
    done = subprocess.run(command, cwd=into, env=env, capture_output=True, text=True)
    if done.returncode or not (into / "evaluate").is_file():
        sys.exit(
            f"building the official tool failed ({' '.join(command)}):\n{done.stdout[-1000:]}{done.stderr[-2000:]}"
        )
    return into / "evaluate"


def _timed(command: list[str], cwd: Path | None = None) -> tuple[float, float]:
    """Wall and CPU seconds (the process and its children) of one run; stdout and stderr discarded."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _official_counts(path: Path) -> tuple[int, int, int]:
    found = re.search(r"tp: (\d+) fp: (\d+) fn: (\d+)", path.read_text())
    if not found:
        sys.exit(f"no counts in the official output {path}")
    return int(found[1]), int(found[2]), int(found[3])


def compare_official(args: argparse.Namespace) -> None:
    modes = {
        "default": [],
        "default --workers 1": ["--workers", "1"],
        "compat": ["--compat", "reference"],
        "compat --workers 1": ["--compat", "reference", "--workers", "1"],
    }
    machine = f"{platform.node()}: {os.cpu_count()} cores, {platform.processor() or platform.machine()}"
    print(f"{machine}; {time.strftime('%Y-%m-%d %H:%M %Z')}")
    print(f"official = SCNN tools/lane_evaluation built by its Makefile with CXX={args.official_cxx!r}, OpenMP")
    header = f"{'frames':>7} {'mode':<20} {'official s':>10} {'library s':>10} {'ratio':>7} {'CPU s off/lib':>14}"
    print(header + f" {'CPU ratio':>9}  agree  load")
    rows = []
    with tempfile.TemporaryDirectory(prefix="culane_bench_") as tmp:
        binary = build_official(Path(args.official), Path(tmp) / "official", args.official_cxx)
        for frames in args.sizes:
            root = Path(tmp) / f"n{frames}"
            make_dataset(root, frames)
            out = root / "official.txt"
            official_cmd = [str(binary), "-a", f"{root}/gt", "-d", f"{root}/pred", "-i", f"{root}/", "-l"]
            official_cmd += [f"{root}/list.txt", "-w", "30", "-t", "0.5", "-c", "1640", "-r", "590", "-o", str(out)]
            official, library, loads = [], {m: [] for m in modes}, [os.getloadavg()[0]]
            before: dict[str, list] = {m: [] for m in modes}
            results, before_results = {}, {}
            if args.before:
                _check_checkout(Path(args.before).resolve())
            for round_ in range(args.repeat):
                official.append(_timed(official_cmd))
                for mode, extra in modes.items():
                    sides = ["new", "old"] if args.before else ["new"]
                    for side in sides if round_ % 2 == 0 else sides[::-1]:  # the order alternates each round
                        start = resource.getrusage(resource.RUSAGE_CHILDREN)
                        if side == "new":
                            wall, results[mode] = run_cli(root, *extra, checkout=Path(__file__).resolve().parents[1])
                        else:
                            wall, before_results[mode] = run_cli(root, *extra, checkout=Path(args.before).resolve())
                        end = resource.getrusage(resource.RUSAGE_CHILDREN)
                        cpu = end.ru_utime - start.ru_utime + end.ru_stime - start.ru_stime
                        (library if side == "new" else before)[mode].append((wall, cpu))
                loads.append(os.getloadavg()[0])
            counts = _official_counts(out)
            off_wall = statistics.median(t[0] for t in official)
            off_cpu = statistics.median(t[1] for t in official)
            load = f"{min(loads):.1f}-{max(loads):.1f}"
            for mode, runs in library.items():
                got = (results[mode]["tp"], results[mode]["fp"], results[mode]["fn"])
                if mode.startswith("compat"):
                    agree = "yes" if got == counts else f"NO {got} vs {counts}"
                else:
                    agree = f"TP {got[0] - counts[0]:+d}"
                lib_wall = statistics.median(t[0] for t in runs)
                lib_cpu = statistics.median(t[1] for t in runs)
                print(
                    f"{frames:>7} {mode:<20} {off_wall:>10.1f} {lib_wall:>10.2f} {off_wall / lib_wall:>6.1f}x "
                    f"{off_cpu:>6.1f}/{lib_cpu:<7.2f} {off_cpu / lib_cpu:>8.1f}x  {agree:<5}  {load}"
                )
                rows.append(
                    {
                        "frames": frames,
                        "mode": mode,
                        "official_s": [t[0] for t in official],
                        "official_cpu_s": [t[1] for t in official],
                        "library_s": [t[0] for t in runs],
                        "library_cpu_s": [t[1] for t in runs],
                        "ratio": off_wall / lib_wall,
                        "cpu_ratio": off_cpu / lib_cpu,
                        "official_counts": counts,
                        "library_counts": got,
                        "agree": agree,
                        "load": loads,
                    }
                )
                if before[mode]:
                    old_wall = statistics.median(t[0] for t in before[mode])
                    old_cpu = statistics.median(t[1] for t in before[mode])
                    same = all(before_results[mode][k] == results[mode][k] for k in ("tp", "fp", "fn", "f1"))
                    print(
                        f"{'':>7} {'  before':<20} {'':>10} {old_wall:>10.2f} new/old wall {lib_wall / old_wall:.3f}"
                        f", CPU {old_cpu:.2f} (new/old {lib_cpu / old_cpu:.3f}); equal to this checkout's: "
                        f"{'yes' if same else 'NO'}"
                    )
                    rows[-1].update(
                        before_s=[t[0] for t in before[mode]],
                        before_cpu_s=[t[1] for t in before[mode]],
                        new_over_before=lib_wall / old_wall,
                        new_over_before_cpu=lib_cpu / old_cpu,
                        before_equal=same,
                    )
    if args.json:
        meta = {"machine": machine, "date": time.strftime("%Y-%m-%d %H:%M %Z"), "official_cxx": args.official_cxx}
        Path(args.json).write_text(json.dumps({**meta, "rows": rows}, indent=1) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--official", default=None, help="SCNN tools/lane_evaluation folder: time the official C++")
    parser.add_argument("--official-cxx", default="g++", help="compiler command for its Makefile, e.g. 'g++ -O3'")
    parser.add_argument("--sizes", type=int, nargs="+", default=[5000], help="frame counts (with --official)")
    parser.add_argument("--repeat", type=int, default=2, help="alternating runs per side (with --official)")
    parser.add_argument("--json", default=None, help="also write the timings here (with --official)")
    parser.add_argument(
        "--before",
        default=None,
        metavar="OLD_CHECKOUT",
        help="also run each mode from this checkout of the library (PYTHONPATH), each round (with --official)",
    )
    parser.add_argument("--frames", type=int, default=CULANE_TEST_FRAMES)
    parser.add_argument(
        "--baseline-frames", type=int, default=1000, help="time the loop on the first N frames, scaled (0: all)"
    )
    parser.add_argument("--quick", action="store_true", help="2,000 frames, loop timed on 300")
    parser.add_argument("--data", default=None, help="folder for the synthetic set (reused when it has list.txt)")
    args = parser.parse_args()
    if args.official:
        compare_official(args)
        return
    if args.quick:
        args.frames, args.baseline_frames = 2000, 300
    root = Path(args.data) if args.data else Path(tempfile.mkdtemp(prefix="culane_bench_"))
    if (root / "list.txt").is_file():
        names = (root / "list.txt").read_text().split()
        if len(names) != args.frames:
            raise SystemExit(f"{root} holds {len(names)} frames, not {args.frames}")
    else:
        start = time.perf_counter()
        names = make_dataset(root, args.frames)
        print(f"wrote {len(names)} frames to {root} in {time.perf_counter() - start:.1f} s")
    print(f"frames {len(names)}, cpu cores {os.cpu_count()}, torch threads: default")

    n_base = min(args.baseline_frames or len(names), len(names))
    start = time.perf_counter()
    base_counts = baseline(root, names[:n_base])
    t_base = (time.perf_counter() - start) * len(names) / n_base
    scaled = "" if n_base == len(names) else f" (timed on {n_base} frames, scaled)"
    print(f"opencv loop                     {t_base:9.1f} s{scaled}")

    t_default, r_default = run_cli(root)
    print(f"culane-eval (default)           {t_default:9.1f} s   x{t_base / t_default:6.1f}")
    for workers in ("1", "2"):
        t_compat, r_compat = run_cli(root, "--compat", "reference", "--workers", workers)
        print(f"culane-eval --compat --workers {workers} {t_compat:9.1f} s   x{t_base / t_compat:6.1f}")
    if n_base == len(names):
        assert (r_compat["tp"], r_compat["fp"], r_compat["fn"]) == base_counts, (r_compat, base_counts)
    else:
        _, r_part = run_cli_subset(root, names[:n_base])
        assert (r_part["tp"], r_part["fp"], r_part["fn"]) == base_counts, (r_part, base_counts)
    print(
        f"counts: loop {base_counts} = compat; default TP/FP/FN {r_default['tp']}/{r_default['fp']}/{r_default['fn']}"
    )
    print(f"F1: compat {r_compat['f1']:.4f}, default {r_default['f1']:.4f}")


def run_cli_subset(root: Path, names: list[str]) -> tuple[float, dict]:
    """``culane-eval --compat reference`` on the first frames only (to check the baseline's counts)."""
    subset = root / "list_subset.txt"
    subset.write_text("\n".join(names) + "\n")
    out = root / "result_subset.json"
    argv = [sys.executable, "-m", "drivemetrics", "culane-eval", "--pred", str(root / "pred"), "--gt", str(root / "gt")]
    argv += ["--list", str(subset), "--json", str(out), "--compat", "reference"]
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start, json.loads(out.read_text())


if __name__ == "__main__":
    main()
