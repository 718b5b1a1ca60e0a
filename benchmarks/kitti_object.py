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

**Against the official C++** (``--devkit DIR``, DIR = the KITTI object devkit, holding ``cpp/evaluate_object.cpp``
and ``cpp/mail.h``, e.g. an export of github.com/sunnyln/kitti-devkit; needs g++ and the Boost headers, Debian
``libboost-dev``): for each ``--sizes`` frame count the script writes a KITTI tree in a temporary folder
(``data/object/label_2`` = the fixture label files copied verbatim, frame ``i`` = label ``i % 300``;
``results/bench/data`` = the jittered detections above), compiles ``evaluate_object.cpp`` with ``N_TESTIMAGES`` set
to that count (the only change; ``g++ -O3 -DNDEBUG``, as the reference notes did), then times end to end,
``--repeat`` alternating runs, the official tool first: ``evaluate_object bench`` in that tree (it also calls
gnuplot / ps2pdf for its plots: where they are not installed those calls fail at once, as here) and ``drivemetrics
kitti-object-eval --gt ... --det ... --write-stats DIR`` (default workers, a fresh process). Printed per size: the
medians, the ratio, the CPU seconds of each side (process and children: less sensitive to other work on the
machine), whether the numbers agree (every ``stats_*.txt`` the C++ wrote equals the library's to the printed 6
decimals) and the load average. ``python benchmarks/kitti_object.py --devkit /path/to/kitti-devkit [--sizes 7481]
[--repeat 3] [--json OUT]``.

``--before OLD_CHECKOUT`` (with ``--devkit``) also times the same command from another checkout of the library
(``PYTHONPATH=OLD_CHECKOUT``, e.g. a ``git worktree`` of an earlier commit) in each round, right after this
checkout's run: the like-for-like check that a change did not slow the command down (its stats must equal this
checkout's).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
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


def build_official(devkit: Path, frames: int, into: Path) -> Path:
    """``evaluate_object`` compiled with ``N_TESTIMAGES = frames`` (its only change), ``g++ -O3 -DNDEBUG``."""
    source = devkit / "cpp" / "evaluate_object.cpp"
    if not source.is_file():
        sys.exit(f"--devkit {devkit}: no cpp/evaluate_object.cpp")
    text = source.read_text()
    line = "const int32_t N_TESTIMAGES = 7518;"
    if line not in text:
        sys.exit(f"{source}: the line {line!r} was not found (another devkit version?)")
    into.mkdir(parents=True, exist_ok=True)
    shutil.copy(devkit / "cpp" / "mail.h", into / "mail.h")
    (into / "evaluate_object.cpp").write_text(text.replace(line, f"const int32_t N_TESTIMAGES = {frames};"))
    binary = into / f"evaluate_object_{frames}"
    command = ["g++", "-O3", "-DNDEBUG", "-o", str(binary), str(into / "evaluate_object.cpp")]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"building the official tool failed ({' '.join(command)}):\n{done.stderr[-2000:]}")
    return binary


def write_tree(root: Path, frames: int) -> None:
    """``data/object/label_2`` (fixture labels, verbatim, cycled) and ``results/bench/data`` (jittered results)."""
    from drivemetrics.detection.io import write_kitti_object_folder

    label_dir = _fixtures()
    names = sorted(p.name for p in label_dir.glob("*.txt"))
    out = root / "data" / "object" / "label_2"
    out.mkdir(parents=True)
    for i in range(frames):
        shutil.copyfile(label_dir / names[i % len(names)], out / f"{i:06d}.txt")
    labels = list(read_kitti_object_folder(label_dir).values())
    jittered = kitti_oracle.jitter_detections(labels, seed=0)
    write_kitti_object_folder(
        root / "results" / "bench" / "data", {f"{i:06d}": jittered[i % len(labels)] for i in range(frames)}
    )


def _timed(command: list[str], cwd: Path | None = None, env: dict | None = None) -> tuple[float, float]:
    """Wall and CPU seconds (the process and its children) of one run; stdout and stderr discarded."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _stats_agree(official: Path, library: Path) -> tuple[bool, float]:
    """Whether every ``stats_*.txt`` of the C++ has a twin from the library with the same values (6 decimals)."""
    files = sorted(official.glob("stats_*.txt"))
    worst = 0.0
    for path in files:
        twin = library / path.name
        if not twin.is_file():
            return False, float("inf")
        a, b = np.loadtxt(path, ndmin=2), np.loadtxt(twin, ndmin=2)
        if a.shape != b.shape:
            return False, float("inf")
        worst = max(worst, float(np.abs(a - b).max()))
    return bool(files) and worst <= 5e-7, worst


def compare_official(args: argparse.Namespace) -> None:
    devkit = Path(args.devkit)
    # PYTHONSAFEPATH: ``-m`` would otherwise put the working folder first on the path, and a run started in this
    # checkout would import this checkout's package whatever PYTHONPATH says (``--before`` would time this one)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    env["PYTHONSAFEPATH"] = "1"
    python = [sys.executable, "-m", "drivemetrics"]
    machine = f"{platform.node()}: {os.cpu_count()} cores, {platform.processor() or platform.machine()}"
    print(f"{machine}; {time.strftime('%Y-%m-%d %H:%M %Z')}")
    print("official = evaluate_object (g++ -O3 -DNDEBUG); library = drivemetrics kitti-object-eval", *args.library_args)
    header = f"{'frames':>7} {'official s':>11} {'library s':>10} {'ratio':>7} {'CPU s off/lib':>14} {'CPU ratio':>9}"
    print(header + "  agree  load")
    rows = []
    with tempfile.TemporaryDirectory(prefix="kitti_bench_") as tmp:
        for frames in args.sizes:
            root = Path(tmp) / f"n{frames}"
            write_tree(root, frames)
            binary = build_official(devkit, frames, Path(tmp) / "build")
            result_dir = root / "results" / "bench"
            library_out = root / "library_stats"
            gt, det = root / "data" / "object" / "label_2", result_dir / "data"
            command = [*python, "kitti-object-eval", "--gt", str(gt), "--det", str(det), "--no-progress"]
            command += ["--write-stats", str(library_out), *args.library_args]
            before_out = root / "before_stats"
            before_command = [*command[: command.index("--write-stats") + 1], str(before_out), *args.library_args]
            before_env = {**env, "PYTHONPATH": str(Path(args.before).resolve())} if args.before else None
            for side in [env, before_env] if before_env else [env]:  # each side imports its own checkout
                probe = [sys.executable, "-c", "import drivemetrics; print(drivemetrics.__file__)"]
                found = subprocess.run(probe, env=side, capture_output=True, text=True).stdout.strip()
                if not found.startswith(side["PYTHONPATH"] + os.sep):
                    sys.exit(f"PYTHONPATH={side['PYTHONPATH']}: the runs would import {found or 'nothing'}")
            official, library, before, loads = [], [], [], [os.getloadavg()[0]]
            for round_ in range(args.repeat):
                shutil.rmtree(result_dir / "plot", ignore_errors=True)
                for stale in result_dir.glob("stats_*.txt"):
                    stale.unlink()
                official.append(_timed([str(binary), "bench"], cwd=root))
                # the old checkout right after the C++ every other round: that place costs more (see rerun46)
                if before_env is not None and round_ % 2 == 1:
                    before.append(_timed(before_command, env=before_env))
                library.append(_timed(command, env=env))
                if before_env is not None and round_ % 2 == 0:
                    before.append(_timed(before_command, env=before_env))
                loads.append(os.getloadavg()[0])
            agree, worst = _stats_agree(result_dir, library_out)
            off_wall, lib_wall = (statistics.median(t[0] for t in runs) for runs in (official, library))
            off_cpu, lib_cpu = (statistics.median(t[1] for t in runs) for runs in (official, library))
            load = f"{min(loads):.1f}-{max(loads):.1f}"
            print(
                f"{frames:>7} {off_wall:>11.2f} {lib_wall:>10.2f} {off_wall / lib_wall:>6.1f}x "
                f"{off_cpu:>6.1f}/{lib_cpu:<7.2f} {off_cpu / lib_cpu:>8.1f}x  {'yes' if agree else 'NO':<5}  {load}"
            )
            rows.append(
                {
                    "frames": frames,
                    "official_s": [t[0] for t in official],
                    "library_s": [t[0] for t in library],
                    "official_cpu_s": [t[1] for t in official],
                    "library_cpu_s": [t[1] for t in library],
                    "ratio": off_wall / lib_wall,
                    "cpu_ratio": off_cpu / lib_cpu,
                    "agree": agree,
                    "largest_difference": worst,
                    "load": loads,
                }
            )
            if before:
                same, diff = _stats_agree(library_out, before_out)
                old_wall, old_cpu = (statistics.median(t[i] for t in before) for i in (0, 1))
                print(
                    f"{'before':>7} {'':>11} {old_wall:>10.2f} new/old wall {lib_wall / old_wall:.3f}, "
                    f"CPU {old_cpu:.2f} (new/old {lib_cpu / old_cpu:.3f}); stats equal to this checkout's: "
                    f"{'yes' if same else 'NO'} (largest difference {diff:g})"
                )
                rows[-1].update(
                    before_s=[t[0] for t in before],
                    before_cpu_s=[t[1] for t in before],
                    new_over_before=lib_wall / old_wall,
                    new_over_before_cpu=lib_cpu / old_cpu,
                    before_agree=same,
                    before_largest_difference=diff,
                )
    if args.json:
        meta = {"machine": platform.node(), "cores": os.cpu_count(), "date": time.strftime("%Y-%m-%d %H:%M %Z")}
        meta["library_args"] = args.library_args
        Path(args.json).write_text(json.dumps({**meta, "rows": rows}, indent=1) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=7481)
    parser.add_argument("--baseline-frames", type=int, default=150)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--devkit", default=None, help="KITTI object devkit folder (cpp/evaluate_object.cpp): time it")
    parser.add_argument("--sizes", type=int, nargs="+", default=[7481], help="frame counts (with --devkit)")
    parser.add_argument("--repeat", type=int, default=3, help="alternating runs per side (with --devkit)")
    parser.add_argument("--json", default=None, help="also write the timings here (with --devkit)")
    parser.add_argument(
        "--before",
        default=None,
        metavar="OLD_CHECKOUT",
        help="also time the command from this checkout of the library (PYTHONPATH), each round (with --devkit)",
    )
    parser.add_argument(
        "--library-args",
        nargs="*",
        default=[],
        help="extra kitti-object-eval options, e.g. --workers 1 (with --devkit)",
    )
    args = parser.parse_args()
    if args.devkit:
        compare_official(args)
        return
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
    header = f"{'input':<18} {'detections':>10} {'vectorised s':>13} {'per-frame loop s':>17} {'speed-up':>9}"
    print(f"{header}  car 3D mod AP %")
    for name, dets in inputs.items():
        start = time.perf_counter()
        result = evaluate_kitti_objects(dets, gts, only_detected=False, threads=args.workers)
        fast = time.perf_counter() - start
        n = min(args.baseline_frames, args.frames)
        start = time.perf_counter()
        expected = kitti_oracle.evaluate(gts[:n], dets[:n])
        slow = (time.perf_counter() - start) * args.frames / n
        _check_equal(evaluate_kitti_objects(dets[:n], gts[:n], only_detected=False), expected)
        ap = result["car"]["3d"]["moderate"]["ap_r40"]
        count = sum(len(d) for d in dets)
        print(f"{name:<18} {count:>10} {fast:>13.2f} {slow:>16.1f}* {slow / fast:>8.1f}x  {ap * 100:.4f}")
    print(f"* timed on {min(args.baseline_frames, args.frames)} frames, extrapolated linearly; results equal there")


if __name__ == "__main__":
    main()
