"""Benchmark: OpenLane's official 3D lane evaluator against ``drivemetrics.lane3d`` on the same synthetic frames.

``--frames`` synthetic frames (default 10,000) are written in the official layout (test list, annotation JSON in
the camera frame with visibility, prediction JSON in the ground frame), then scored in the same run by

- the official ``eval_3D_lane.py`` (OpenDriveLab/OpenLane, ``eval/LANE_evaluation/lane3d``; ``--official-src``: the
  repository's root or that folder) in its own virtual environment (``--venv``, default ``/tmp/ol3d-venv``;
  ``--setup`` creates it: numpy < 1.24 for ``np.int``, scipy 1.9.3, ortools). Current ortools lacks the removed
  ``ortools.graph.pywrapgraph`` API, so a few lines of adapter give its names over
  ``ortools.graph.python.min_cost_flow``; ``LaneEval.__init__`` never sets ``dataset_name``, which ``bench`` reads
  (line 96), so the runner sets it to ``"openlane"`` as PersFormer's copy does. Timed: ``bench_one_submit`` end to
  end (it reads the JSON files itself), and the JSON reading alone (the same ``json.load`` loop), whose difference
  is the evaluation of frames in memory;
- ``drivemetrics``: ``evaluate_openlane3d_files`` end to end (one process and ``--workers``), the JSON reading
  alone (``read_openlane_gt`` / ``read_openlane_pred``, the floor of the end-to-end time) and
  ``evaluate_openlane3d_frames`` on the frames already read (in memory); ``compat="reference"``, one torch thread,
  median of ``--repeat`` runs.

Printed: the times, the ratios and the largest difference over the eight headline values and the six counts.

Run ``python benchmarks/openlane3d.py --official-src /path/to/OpenLane [--setup] [--frames N]`` (without
``--official-src``, as ``make bench`` runs it: the library alone). The official code at commit 8a0ce6b can be
exported from a clone with ``git archive HEAD eval/LANE_evaluation/lane3d | tar -x -C DIR``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

HEADLINE = ("F_score", "recall", "precision", "category_accuracy", "x_error_close", "x_error_far", "z_error_close")
HEADLINE += ("z_error_far",)
FRAME_KEYS = ("r_lane", "p_lane", "c_lane", "cnt_gt", "cnt_pred", "match_num")
ERROR_KEYS = ("x_error_close", "x_error_far", "z_error_close", "z_error_far")
COUNTS = ("n_recall_hits", "n_precision_hits", "n_category_correct", "n_gt", "n_pred", "n_matched")
#: The official evaluator's environment: numpy < 1.24 (``np.int``), scipy of its time, an OR-Tools with the current
#: ``min_cost_flow`` API (the runner adapts the removed ``pywrapgraph`` names to it).
PACKAGES = ["numpy==1.23.5", "scipy==1.9.3", "ortools>=9.8,<10"]

_RUNNER = r"""
import json, sys, time, types
from ortools.graph.python import min_cost_flow as _mcf

class SimpleMinCostFlow:  # the removed pywrapgraph names over the current API
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
sys.path.insert(0, sys.argv[1])
import io, contextlib
from eval_3D_lane import LaneEval
gt_dir, pred_dir, test_list = sys.argv[2], sys.argv[3], sys.argv[4]
args = types.SimpleNamespace(dataset_dir=gt_dir, pred_dir=pred_dir, test_list=test_list)
evaluator = LaneEval(args)
evaluator.dataset_name = "openlane"  # read by bench() (line 96), never set by __init__
start = time.perf_counter()
with contextlib.redirect_stdout(io.StringIO()):
    stats = evaluator.bench_one_submit(pred_dir, gt_dir, test_list, prob_th=0.5)
total = time.perf_counter() - start
frames = []  # a second, untimed pass: what bench() returns for each frame
bench = evaluator.bench
evaluator.bench = lambda *a: frames.append(bench(*a)) or frames[-1]
with contextlib.redirect_stdout(io.StringIO()):
    evaluator.bench_one_submit(pred_dir, gt_dir, test_list, prob_th=0.5)
frames = [[float(v) for v in f[:6]] + [[float(e) for e in errors] for errors in f[6:]] for f in frames]
start = time.perf_counter()
for line in open(test_list).readlines():
    for folder in (pred_dir, gt_dir):
        with open(folder + line.strip("\n").replace("jpg", "json")) as f:
            json.load(f)
reading = time.perf_counter() - start
names = ["F_score", "recall", "precision", "category_accuracy", "x_error_close", "x_error_far", "z_error_close",
         "z_error_far", "n_recall_hits", "n_precision_hits", "n_category_correct", "n_gt", "n_pred", "n_matched"]
print(json.dumps({"total_s": total, "reading_s": reading, "metrics": dict(zip(names, map(float, stats))),
                  "frames": frames}))
"""


def write_frames(root: Path, count: int, seed: int) -> Path:
    """``count`` synthetic frames in the official layout under ``root``; returns the test list."""
    rng = np.random.default_rng(seed)
    lines = []
    for i in range(count):
        name = f"validation/segment-{i // 200:05d}_with_camera_labels/{i:09d}.jpg"
        lines.append(name)
        height = 2.0 + rng.uniform(-0.1, 0.1)
        extrinsic = np.eye(4)
        extrinsic[:3, 3] = [1.5, rng.uniform(-0.1, 0.1), height]
        curve, slope = rng.uniform(-1e-3, 1e-3), rng.uniform(-0.02, 0.02)
        gt_lanes, pred_lanes = [], []
        for k, offset in enumerate(np.arange(int(rng.integers(2, 6))) * 3.5 - 5.0):
            n = int(rng.integers(20, 80))
            y = np.sort(rng.uniform(5.0, 5.0 + rng.uniform(30, 110), n))
            x = offset + curve * y**2
            z = slope * y
            visibility = (rng.random(n) > 0.1) & (y < y[-1] - rng.uniform(0, 10))
            camera = np.stack([y, -x, z - height])  # ground (x right, y forward, z up) -> camera (R = I)
            gt_lanes.append(
                {
                    "xyz": camera.round(4).tolist(),
                    "visibility": visibility.astype(float).tolist(),
                    "category": k % 3 + 1,
                }
            )
            if rng.random() < 0.85:
                shift = rng.choice([0.05, 0.3, 1.0, 2.5])
                pred = np.stack([x + shift * rng.standard_normal(), y, z + 0.05 * rng.standard_normal()], 1)
                pred_lanes.append({"xyz": pred.round(4).tolist(), "category": int(rng.choice([k % 3 + 1, 20, 21]))})
        if rng.random() < 0.3:
            y = np.linspace(10, 60, 25)
            pred_lanes.append({"xyz": np.stack([y * 0 + 8.5, y, y * 0], 1).round(4).tolist(), "category": 1})
        gt = {"file_path": name, "extrinsic": extrinsic.tolist(), "intrinsic": np.eye(3).tolist()}
        gt["lane_lines"] = gt_lanes
        pred = {"file_path": name, "lane_lines": pred_lanes}
        for folder, data in (("gt", gt), ("pred", pred)):
            path = root / folder / name.replace("jpg", "json")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(data))
    test_list = root / "test_list.txt"
    test_list.write_text("".join(line + "\n" for line in lines))
    return test_list


def setup_venv(venv: Path) -> None:
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", *PACKAGES], check=True)


def run_official(venv: Path, source: Path, root: Path, test_list: Path) -> dict:
    folder = source / "eval" / "LANE_evaluation" / "lane3d" if (source / "eval").is_dir() else source
    if not (folder / "eval_3D_lane.py").is_file():
        raise SystemExit(f"--official-src: no eval_3D_lane.py in {folder}")
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c", _RUNNER, str(folder), f"{root}/gt/", f"{root}/pred/", str(test_list)],
        capture_output=True,
        text=True,
        check=False,
        cwd=folder,
    )
    if done.returncode != 0:
        raise SystemExit(f"the official evaluator failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def frames_with_tied_assignments(gt: list, pred: list) -> list[int]:
    """Frames whose integer-cost maximum-cardinality assignment is not unique (OR-Tools and scipy may then pick
    different optima, which moves the errors and, rarely, the counts)."""
    from scipy.optimize import linear_sum_assignment

    from drivemetrics.lane3d import openlane as ol

    tied = []
    for start in range(0, len(gt), 256):
        out = _tied_batch(gt[start : start + 256], pred[start : start + 256], ol, linear_sum_assignment)
        tied += [start + k for k in out]
    return tied


def _tied_batch(gt: list, pred: list, ol: object, lsa: object) -> list[int]:
    from drivemetrics.lane3d.evaluate import _pack_values, pack_lanes

    target, target_lengths = pack_lanes([f.points for f in gt])
    preds, pred_lengths = pack_lanes([f.points for f in pred])
    visibility = _pack_values([f.visibility for f in gt], target.shape[1], target.shape[2], np.float64)
    extrinsic = torch.from_numpy(np.stack([f.extrinsic for f in gt]))
    target = ol.openlane3d_gt_to_ground(target, extrinsic)  # type: ignore[attr-defined]
    g = ol.openlane3d_resample(target, target_lengths, visibility)  # type: ignore[attr-defined]
    p = ol.openlane3d_resample(preds, pred_lengths)  # type: ignore[attr-defined]
    cost = ol.openlane3d_pair_matrices(g, p, "reference")["cost"].numpy()  # type: ignore[attr-defined]
    tied = []
    for b in range(len(gt)):
        sub = cost[b][np.ix_(g["kept"][b].numpy(), p["kept"][b].numpy())]
        if sub.size == 0:
            continue
        rows, cols = lsa(sub)  # type: ignore[operator]
        best = sub[rows, cols].sum()
        for r, c in zip(rows, cols, strict=True):
            other = sub.copy()
            other[r, c] = 1e9  # is there another optimum without this pair?
            r2, c2 = lsa(other)  # type: ignore[operator]
            if other[r2, c2].sum() == best:
                tied.append(b)
                break
    return tied


def median_time(fn, repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--official-src",
        type=Path,
        default=None,
        help="OpenLane repository root (or lane3d folder); without it: the library alone",
    )
    parser.add_argument("--venv", type=Path, default=None, help="the official evaluator's virtual environment")
    parser.add_argument("--setup", action="store_true", help="create the venv (--venv) of the official evaluator first")
    parser.add_argument("--frames", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(1)
    from drivemetrics.lane3d.evaluate import evaluate_openlane3d_files, evaluate_openlane3d_frames
    from drivemetrics.lane3d.io import read_openlane_gt, read_openlane_pred, read_test_list

    if (args.setup or args.official_src is not None) and args.venv is None:
        parser.error("--venv VENV is required with --setup or --official-src (the official evaluator's environment)")
    if args.setup:
        setup_venv(args.venv)
    if args.official_src is not None and not (args.venv / "bin" / "python").is_file():
        parser.error(f"--venv {args.venv}: no bin/python there (create it with --setup)")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        test_list = write_frames(root, args.frames, args.seed)
        have_official = args.official_src is not None
        if not have_official:
            print("official evaluator skipped (give --official-src and --venv [--setup]): the library alone")
        official = run_official(args.venv, args.official_src, root, test_list) if have_official else None

        def read_all() -> tuple[list, list]:
            lines = read_test_list(test_list)
            gt = [read_openlane_gt(root / "gt" / line.replace("jpg", "json")) for line in lines]
            return gt, [read_openlane_pred(root / "pred" / line.replace("jpg", "json")) for line in lines]

        reading_s, (gt, pred) = median_time(read_all, args.repeat)
        memory_s, ours = median_time(lambda: evaluate_openlane3d_frames(gt, pred, "reference"), args.repeat)
        e2e_s, _ = median_time(
            lambda: evaluate_openlane3d_files(root / "gt", root / "pred", test_list, "reference"), args.repeat
        )
        tied_frames = frames_with_tied_assignments(gt, pred)
        tied = len(tied_frames)
        e2e_w_s, _ = median_time(
            lambda: evaluate_openlane3d_files(root / "gt", root / "pred", test_list, "reference", args.workers),
            args.repeat,
        )
    if official is None:
        print(f"{args.frames} frames, one torch thread, median of {args.repeat}")
        print(f"drivemetrics end to end, 1 process       {e2e_s:8.2f} s")
        print(f"drivemetrics JSON reading alone          {reading_s:8.2f} s")
        print(f"drivemetrics in memory                   {memory_s:8.2f} s")
        return
    theirs = official["metrics"]
    mine = ours["metrics"]  # type: ignore[index]
    worst = max(abs(float(mine[k]) - float(theirs[k])) for k in HEADLINE)
    counts_equal = all(int(mine[k]) == int(theirs[k]) for k in COUNTS)
    official_memory = official["total_s"] - official["reading_s"]
    print(f"{args.frames} frames, one torch thread, median of {args.repeat} (official: one run)")
    print(f"official end to end (bench_one_submit)   {official['total_s']:8.2f} s")
    print(f"official JSON reading alone              {official['reading_s']:8.2f} s")
    print(f"official in memory (difference)          {official_memory:8.2f} s")
    print(f"drivemetrics end to end, 1 process       {e2e_s:8.2f} s   {official['total_s'] / e2e_s:6.1f}x")
    label = f"drivemetrics end to end, {args.workers} workers"
    print(f"{label:<41}{e2e_w_s:8.2f} s   {official['total_s'] / e2e_w_s:6.1f}x")
    print(f"drivemetrics JSON reading alone          {reading_s:8.2f} s   (floor of the end to end time)")
    print(f"drivemetrics in memory                   {memory_s:8.2f} s   {official_memory / memory_s:6.1f}x")
    print(f"largest headline difference {worst:.2e}; counts equal: {counts_equal}")
    print(f"frames whose integer-cost assignment has several optima (solvers may differ there): {tied}")
    differ = []
    for k, (row, theirs_row) in enumerate(zip(ours["per_frame"], official["frames"], strict=True)):  # type: ignore[index]
        same = [row[key] for key in FRAME_KEYS] == [int(v) for v in theirs_row[:6]]
        for e, key in enumerate(ERROR_KEYS):
            ours_e, theirs_e = np.sort(np.asarray(row[key], float)), np.sort(np.asarray(theirs_row[6 + e], float))
            same &= ours_e.shape == theirs_e.shape and np.allclose(ours_e, theirs_e, atol=1e-9, equal_nan=True)
        if not same:
            differ.append(k)
    print(f"frames whose per-frame outputs differ: {len(differ)} {differ[:10]}; tied frames among them: {tied_frames}")
    print(json.dumps({"official": theirs, "drivemetrics": mine}, indent=None))


if __name__ == "__main__":
    main()
