"""Benchmark: the official OpenLane-V2 devkit (2.1.0 evaluation code) against ``drivemetrics`` on the same frames.

Synthetic centerline-track frames (``--sizes``, default ``150x11 1000x11 1000x201``: frames x points per lane) are
written as the devkit's own pickles (ground-truth collection and submission), then timed side by side, the devkit
first, in the same run:

- end to end, each a fresh process (interpreter start-up, imports, reading the pickles, scoring): the devkit
  (``evaluate(ground_truth=..., predictions=...)`` on the two files) and ``drivemetrics openlanev2-eval --compat
  reference --json`` with its default workers; ``--e2e-repeat`` (default 3) alternating runs of each, the median;
- in memory (pickles already loaded): the devkit's ``evaluate`` once, ``evaluate_openlanev2(..., compat="reference")``
  in this process (on numpy arrays as the command runs it, or with ``--device cpu`` / ``cuda`` on torch tensors
  there, one torch thread; its default chunks of 256 frames), median of ``--repeat`` runs (default 5);
  ``--compat default`` times the library's default mode instead (its numbers then differ from the devkit's).

The devkit runs in its own environment: ``--devkit-python`` is the interpreter of a virtual environment holding
``openlanev2==2.1.0`` and its dependencies (``--setup VENV`` creates one: numpy < 1.24, scipy 1.9.3,
similaritymeasures, ortools, shapely 2.0, iso3166, tqdm, then the wheel with ``--no-deps``); ``--devkit-src`` is an
optional folder holding the ``openlanev2`` package (e.g. an export of github.com/OpenDriveLab/OpenLane-V2, whose
evaluation files are identical to the wheel's) put first on its path. The pinned ortools 9.2 has no wheel for
Python 3.11, so a few lines of adapter give the old ``ortools.graph.pywrapgraph.SimpleMinCostFlow`` names on top of
``ortools.graph.python.min_cost_flow``; ``cv2`` (imported by the devkit's image reader only) is stubbed.

Printed: one line per size with both times, the ratios, the end-to-end CPU seconds of each side (processes and
their children: less sensitive to other work on the machine than wall time), whether the numbers agree (largest
difference over DET_l, DET_t, TOP_ll, TOP_lt, OLS below 1e-6; the F-score can differ where the min-cost assignment
is not unique, as OR-Tools and scipy may pick different optima, so its difference is printed apart), and the load.

Run ``python benchmarks/openlanev2.py --devkit-python VENV/bin/python [--sizes 150x11 1000x11] [--device cuda]``.

``--before OLD_CHECKOUT`` also times another checkout of the library (``PYTHONPATH=OLD_CHECKOUT``, e.g. a ``git
worktree`` of an earlier commit) on the same frames: end to end in each round right after this checkout's run, and in
memory in a fresh process; its numbers must equal this checkout's (the like-for-like check of a change's speed).
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

HEADLINE = ("DET_l", "DET_t", "TOP_ll", "TOP_lt", "OLS", "F_score")
DEVKIT_PACKAGES = [
    "numpy<1.24",
    "scipy==1.9.3",
    "similaritymeasures",
    "ortools",
    "shapely==2.0.*",
    "iso3166",
    "tqdm",
]

_RUNNER = r"""
import json, sys, time, types, pickle
if sys.argv[1]:
    sys.path.insert(0, sys.argv[1])
from ortools.graph.python import min_cost_flow as _mcf

class SimpleMinCostFlow:  # the old pywrapgraph names over the current API
    def __init__(self):
        self._f = _mcf.SimpleMinCostFlow()
        self.OPTIMAL = self._f.OPTIMAL
    def AddArcWithCapacityAndUnitCost(self, t, h, c, u): return self._f.add_arc_with_capacity_and_unit_cost(t, h, c, u)
    def SetNodeSupply(self, n, s): return self._f.set_node_supply(n, s)
    def Solve(self): return self._f.solve()
    def NumArcs(self): return self._f.num_arcs()
    def Tail(self, a): return self._f.tail(a)
    def Head(self, a): return self._f.head(a)
    def Flow(self, a): return self._f.flow(a)
    def UnitCost(self, a): return self._f.unit_cost(a)

pywrapgraph = types.ModuleType("ortools.graph.pywrapgraph")
pywrapgraph.SimpleMinCostFlow = SimpleMinCostFlow
sys.modules["ortools.graph.pywrapgraph"] = pywrapgraph
import ortools.graph
ortools.graph.pywrapgraph = pywrapgraph
sys.modules.setdefault("cv2", types.ModuleType("cv2"))
from openlanev2.centerline.evaluation.evaluate import evaluate
import numpy
sys.modules.setdefault("numpy._core", numpy.core)  # the pickles come from numpy 2 (after shapely's import)
sys.modules.setdefault("numpy._core.multiarray", numpy.core.multiarray)
if sys.argv[4] == "files":  # end to end: the devkit reads its pickles itself
    start, cpu_start = time.perf_counter(), time.process_time()
    metrics = evaluate(ground_truth=sys.argv[2], predictions=sys.argv[3], verbose=False)
else:  # in memory
    gt = pickle.load(open(sys.argv[2], "rb"))
    pred = pickle.load(open(sys.argv[3], "rb"))
    start, cpu_start = time.perf_counter(), time.process_time()
    metrics = evaluate(gt, pred, verbose=False)
elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu_start
score = metrics["OpenLane-V2 Score"]
out = {k: float(score[k]) for k in ("DET_l", "DET_t", "TOP_ll", "TOP_lt")}
out["OLS"] = float(score["score"])
out["F_score"] = float(metrics["F-Score for 3D Lane"]["score"])
print(json.dumps({"seconds": elapsed, "cpu_seconds": cpu, "metrics": out}))
"""


def setup_devkit_venv(venv: Path) -> None:
    """Create the devkit's virtual environment: its dependencies, then ``openlanev2==2.1.0`` without its pins
    (ortools 9.2 and scipy 1.8 have no Python 3.11 wheels); needs the package index."""
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", *DEVKIT_PACKAGES], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "--no-deps", "openlanev2==2.1.0"], check=True)


def _resample(points: np.ndarray, num: int) -> np.ndarray:
    seg = np.linalg.norm(np.diff(points, axis=0), axis=1)
    s = np.r_[0, np.cumsum(seg)]
    t = np.linspace(0, s[-1], num)
    return np.stack([np.interp(t, s, points[:, k]) for k in range(3)], 1)


def make_frames(n: int, num_points: int, seed: int = 0) -> tuple[dict, dict]:
    """``n`` synthetic frames: (devkit GT collection, devkit submission), lanes of ``num_points`` points."""
    rng = np.random.default_rng(seed)
    gt_collection, results = {}, {}
    conf_counter = 0
    for f in range(n):
        token = ("val", str(10000 + f // 50), str(315970000000000000 + 100000 * f))
        num_lanes = int(rng.integers(4, 11))
        lanes = []
        for _ in range(num_lanes):
            start = np.array([rng.uniform(-45, 30), rng.uniform(-20, 20), rng.uniform(-2, 0)])
            heading = rng.uniform(-0.6, 0.6)
            length = rng.uniform(15, 45)
            bend = rng.uniform(-0.02, 0.02)
            u = np.linspace(0, length, 40)
            xy = np.stack([np.cos(heading + bend * u), np.sin(heading + bend * u)], 1)
            pts = start + np.c_[np.cumsum(xy, 0) * (length / 40), np.zeros(40)]
            lanes.append(_resample(pts, num_points).astype(np.float32))
        num_te = int(rng.integers(0, 5))
        boxes = []
        for _ in range(num_te):
            x, y = rng.uniform(0, 1800), rng.uniform(0, 900)
            w, h = rng.uniform(15, 60), rng.uniform(15, 60)
            boxes.append(np.array([[x, y], [x + w, y + h]], dtype=np.float32))
        te_attr = rng.integers(0, 13, size=num_te)
        topo_ll = (rng.random((num_lanes, num_lanes)) < 0.15).astype(np.int8)
        np.fill_diagonal(topo_ll, 0)
        topo_lt = (rng.random((num_lanes, num_te)) < 0.3).astype(np.int8)
        gt_collection[token] = {
            "annotation": {
                "lane_centerline": [{"id": k, "points": p} for k, p in enumerate(lanes)],
                "traffic_element": [
                    {"id": 100 + k, "category": 1, "attribute": int(a), "points": b}
                    for k, (a, b) in enumerate(zip(te_attr, boxes, strict=True))
                ],
                "topology_lclc": topo_ll,
                "topology_lcte": topo_lt,
            }
        }
        pred_lanes = []
        for p in lanes:
            kind = rng.random()
            if kind < 0.15:
                continue  # missed
            shift = np.array([0, rng.normal(0, 1.2), rng.normal(0, 0.2)], dtype=np.float32)
            q = p + shift
            if kind > 0.93:
                q = q[::-1].copy()  # reversed
            pred_lanes.append(q)
        for _ in range(int(rng.integers(0, 3))):  # extras
            pred_lanes.append(lanes[int(rng.integers(num_lanes))] + np.float32(rng.uniform(3, 8)))
        pred_boxes = [b + rng.normal(0, 4, size=(2, 2)).astype(np.float32) for b in boxes if rng.random() > 0.2]
        pred_boxes = [np.sort(b, axis=0) for b in pred_boxes]
        pred_attr = [int(a) if rng.random() > 0.2 else int(rng.integers(13)) for a in te_attr[: len(pred_boxes)]]
        num_p, num_pt = len(pred_lanes), len(pred_boxes)

        def confidences(k: int) -> list[float]:
            nonlocal conf_counter
            values = [float(np.float32(0.05 + 0.9 * ((conf_counter + i) * 0.6180339887 % 1))) for i in range(k)]
            conf_counter += k
            return values

        results[token] = {
            "predictions": {
                "lane_centerline": [
                    {"id": k, "points": p, "confidence": c}
                    for k, (p, c) in enumerate(zip(pred_lanes, confidences(num_p), strict=True))
                ],
                "traffic_element": [
                    {"id": 1000 + k, "category": 1, "attribute": a, "points": b, "confidence": c}
                    for k, (a, b, c) in enumerate(zip(pred_attr, pred_boxes, confidences(num_pt), strict=True))
                ],
                "topology_lclc": np.round(rng.random((num_p, num_p)), 3),
                "topology_lcte": np.round(rng.random((num_p, num_pt)), 3),
            }
        }
    submission = {
        "method": "synthetic",
        "e-mail": "a@b.c",
        "institution / company": "x",
        "country / region": "DE",
        "authors": ["x"],
        "results": results,
    }
    return gt_collection, submission


def run_library(
    gt: dict, submission: dict, device: str | None, repeat: int = 5, compat: str = "reference"
) -> tuple[float, float, dict[str, float]]:
    """The library's median wall and CPU time over ``repeat`` runs (same frames), and its headline values."""
    from drivemetrics.lanetopology.evaluate import evaluate_openlanev2
    from drivemetrics.lanetopology.scoring import devkit_name

    target = {k: v["annotation"] for k, v in gt.items()}
    preds = {k: v["predictions"] for k, v in submission["results"].items()}
    first = next(iter(target))
    evaluate_openlanev2({first: preds[first]}, {first: target[first]}, device=device)  # imports, warm-up
    walls, cpus = [], []
    for _ in range(repeat):
        start, cpu_start = time.perf_counter(), time.process_time()
        scores = evaluate_openlanev2(preds, target, compat=compat, device=device)  # type: ignore[arg-type]
        walls.append(time.perf_counter() - start)
        cpus.append(time.process_time() - cpu_start)
    named = {devkit_name(key): value for key, value in scores.items()}
    return float(np.median(walls)), float(np.median(cpus)), {k: named[k] for k in HEADLINE}


def _children_cpu() -> float:
    """CPU seconds (user + system) of the finished child processes so far, their own children included."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _devkit(python: Path, src: Path | None, runner: Path, gt: Path, pred: Path, mode: str) -> tuple[float, dict]:
    """One devkit process: (wall seconds of the whole process, its JSON line with ``process_cpu`` added)."""
    env = {"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"}
    command = [str(python), str(runner), str(src or ""), str(gt), str(pred), mode]
    start, cpu = time.perf_counter(), _children_cpu()
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    wall, cpu = time.perf_counter() - start, _children_cpu() - cpu
    if done.returncode:
        print(done.stderr[-3000:], file=sys.stderr)
        raise SystemExit(f"the devkit failed (exit {done.returncode})")
    return wall, {**json.loads(done.stdout.strip().splitlines()[-1]), "process_cpu": cpu}


def _library_end_to_end(
    gt: Path, pred: Path, out: Path, compat: str, checkout: Path | None = None
) -> tuple[float, float, dict[str, float]]:
    """One ``drivemetrics openlanev2-eval`` process with its default workers (from ``checkout``, default this one):
    (wall seconds, CPU seconds of it and its children, headline values)."""
    checkout = checkout or Path(__file__).resolve().parents[1]
    # PYTHONSAFEPATH: ``-m`` / ``-c`` would otherwise put the working folder first on the path, and a run started in
    # this checkout would import this checkout's package whatever PYTHONPATH says
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(checkout), "PYTHONSAFEPATH": "1"}
    command = [sys.executable, "-m", "drivemetrics", "openlanev2-eval", "--gt", str(gt), "--pred", str(pred)]
    command += ["--compat", compat, "--json", str(out)]
    start, cpu = time.perf_counter(), _children_cpu()
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    wall, cpu = time.perf_counter() - start, _children_cpu() - cpu
    if done.returncode:
        raise SystemExit(f"drivemetrics failed (exit {done.returncode}): {done.stderr[-2000:]}")
    return wall, cpu, {k: float(v) for k, v in json.loads(out.read_text()).items() if k in HEADLINE}


_BEFORE_IN_MEMORY = r"""
import json, sys
import torch
sys.path.insert(0, sys.argv[1])
import openlanev2 as bench
torch.set_num_threads(1)
gt, submission = bench.make_frames(int(sys.argv[2]), int(sys.argv[3]))
wall, cpu, values = bench.run_library(gt, submission, sys.argv[4] or None, int(sys.argv[5]), sys.argv[6])
print(json.dumps({"wall": wall, "cpu": cpu, "metrics": values}))
"""


def _before_in_memory(checkout: Path, frames: int, num_points: int, args: argparse.Namespace) -> dict:
    """``run_library`` of a checkout of the library on the same frames, in a fresh process (the one of this
    checkout too, with ``--before``: the script's own process holds the frames and the pickles)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(checkout), "PYTHONSAFEPATH": "1"}
    found = subprocess.run(
        [sys.executable, "-c", "import drivemetrics; print(drivemetrics.__file__)"],
        capture_output=True,
        text=True,
        env=env,
    ).stdout.strip()
    if not found.startswith(str(checkout) + os.sep):
        raise SystemExit(f"{checkout}: its runs would import {found or 'nothing'}")
    command = [sys.executable, "-c", _BEFORE_IN_MEMORY, str(Path(__file__).resolve().parent), str(frames)]
    command += [str(num_points), args.device or "", str(args.repeat), args.compat]
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if done.returncode:
        raise SystemExit(f"--before {checkout} failed in memory (exit {done.returncode}): {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _agreement(devkit: dict[str, float], library: dict[str, float]) -> tuple[float, float]:
    """Largest |difference| over the OLS parts, and the F-score's."""
    parts = max(abs(devkit[k] - library[k]) for k in HEADLINE if k != "F_score")
    return parts, abs(devkit["F_score"] - library["F_score"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", nargs="+", default=["150x11", "1000x11", "1000x201"], help="FRAMESxPOINTS")
    parser.add_argument("--devkit-python", type=Path, default=None, help="python of the devkit's environment")
    parser.add_argument("--devkit-src", type=Path, default=None, help="folder holding the openlanev2 package")
    parser.add_argument("--setup", type=Path, default=None, metavar="VENV", help="create the devkit's venv first")
    parser.add_argument(
        "--device",
        default=None,
        help="in memory: where the library computes lane distances (default: numpy arrays, as the command does; "
        "cpu / cuda: torch tensors there, as the Metric classes do)",
    )
    parser.add_argument("--skip-devkit", action="store_true", help="time the library only")
    parser.add_argument("--repeat", type=int, default=5, help="library runs in memory (the median is reported)")
    parser.add_argument("--e2e-repeat", type=int, default=3, help="end-to-end runs of each side (median)")
    parser.add_argument(
        "--before",
        type=Path,
        default=None,
        metavar="OLD_CHECKOUT",
        help="also time the library of this checkout (PYTHONPATH) on the same frames, each round",
    )
    parser.add_argument(
        "--compat", choices=("reference", "default"), default="reference", help="the library's mode (default: devkit)"
    )
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.setup:
        setup_devkit_venv(args.setup)
        args.devkit_python = args.devkit_python or args.setup / "bin" / "python"
    if not args.skip_devkit and args.devkit_python is None:
        parser.error("--devkit-python (or --setup VENV, or --skip-devkit) is required")
    print(f"{os.cpu_count()} CPUs, {platform.processor() or platform.machine()}, {time.strftime('%Y-%m-%d %H:%M %Z')}")
    for size in args.sizes:
        frames, num_points = (int(x) for x in size.split("x"))
        gt, submission = make_frames(frames, num_points)
        with tempfile.TemporaryDirectory() as tmp:
            gt_path, pred_path, out = Path(tmp) / "gt.pkl", Path(tmp) / "pred.pkl", Path(tmp) / "scores.json"
            gt_path.write_bytes(pickle.dumps(gt))
            pred_path.write_bytes(pickle.dumps(submission))
            runner = Path(tmp) / "runner.py"
            runner.write_text(_RUNNER)
            dev_e2e, lib_e2e, dev_cpu, lib_cpu, loads = [], [], [], [], [os.getloadavg()[0]]
            old_e2e: list[tuple[float, float, dict[str, float]]] = []
            for round_ in range(args.e2e_repeat):  # official first, alternating
                if not args.skip_devkit:
                    wall, dev_files = _devkit(args.devkit_python, args.devkit_src, runner, gt_path, pred_path, "files")
                    dev_e2e.append(wall)
                    dev_cpu.append(dev_files["process_cpu"])
                if args.before is not None and round_ % 2 == 1:  # the old checkout first every other round
                    old_e2e.append(_library_end_to_end(gt_path, pred_path, out, args.compat, args.before.resolve()))
                wall, cpu, lib_files = _library_end_to_end(gt_path, pred_path, out, args.compat)
                lib_e2e.append(wall)
                lib_cpu.append(cpu)
                if args.before is not None and round_ % 2 == 0:
                    old_e2e.append(_library_end_to_end(gt_path, pred_path, out, args.compat, args.before.resolve()))
                loads.append(os.getloadavg()[0])
            if not args.skip_devkit:
                _, dev = _devkit(args.devkit_python, args.devkit_src, runner, gt_path, pred_path, "memory")
        lib_s, _, lib = run_library(gt, submission, args.device, args.repeat, args.compat)
        loads.append(os.getloadavg()[0])
        if args.before is not None:
            old = _before_in_memory(args.before.resolve(), frames, num_points, args)
            mine = _before_in_memory(Path(__file__).resolve().parents[1], frames, num_points, args)
            loads.append(os.getloadavg()[0])
            old_wall, old_cpu = (float(np.median([t[i] for t in old_e2e])) for i in (0, 1))
            new_wall, new_cpu = float(np.median(lib_e2e)), float(np.median(lib_cpu))
            same = max(abs(old_e2e[-1][2][k] - lib_files[k]) for k in HEADLINE)
            same = max(same, max(abs(old["metrics"][k] - lib[k]) for k in HEADLINE))
            print(
                f"{frames} frames x {num_points} points, before ({args.before}): end to end {old_wall:.2f} s "
                f"(CPU {old_cpu:.2f} s) vs this checkout {new_wall:.2f} s (CPU {new_cpu:.2f} s): new/old "
                f"{new_wall / old_wall:.3f} (CPU {new_cpu / old_cpu:.3f}); in memory, each in a fresh process, "
                f"{old['wall']:.3f} s (CPU {old['cpu']:.3f}) vs {mine['wall']:.3f} s (CPU {mine['cpu']:.3f}): new/old "
                f"{mine['wall'] / old['wall']:.3f} (CPU {mine['cpu'] / old['cpu']:.3f}); numbers max |new - old| "
                f"{same:.1e}; before's runs {', '.join(f'{t[0]:.2f}' for t in old_e2e)}, this checkout's "
                f"{', '.join(f'{t:.2f}' for t in lib_e2e)}"
            )
        lib_e = float(np.median(lib_e2e))
        line = f"{frames} frames x {num_points} points: end to end drivemetrics {lib_e:.2f} s"
        if args.skip_devkit:
            print(f"{line}; in memory {lib_s:.3f} s; load {min(loads):.1f}-{max(loads):.1f}")
            continue
        dev_e = float(np.median(dev_e2e))
        parts, fscore = _agreement(dev["metrics"], lib)
        parts_e2e, _ = _agreement(dev_files["metrics"], lib_files)
        agree = "agree" if max(parts, parts_e2e) < 1e-6 else "DIFFER"
        print(
            f"{line} vs devkit {dev_e:.2f} s = {dev_e / lib_e:.2f}x ({min(lib_e2e):.2f}-{max(lib_e2e):.2f} vs "
            f"{min(dev_e2e):.2f}-{max(dev_e2e):.2f}); in memory {lib_s:.3f} s vs {dev['seconds']:.2f} s = "
            f"{dev['seconds'] / lib_s:.1f}x; end-to-end CPU {np.median(lib_cpu):.2f} s vs {np.median(dev_cpu):.2f} s "
            f"= {np.median(dev_cpu) / np.median(lib_cpu):.2f}x; numbers {agree} (OLS parts max |diff| "
            f"{max(parts, parts_e2e):.1e}, F_score {fscore:.1e}); load {min(loads):.1f}-{max(loads):.1f}"
        )


if __name__ == "__main__":
    main()
