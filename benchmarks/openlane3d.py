"""Benchmark: OpenLane's official 3D lane evaluator against ``drivemetrics.lane3d`` on the same synthetic frames.

``--frames`` synthetic frames (default 10,000) are written in the official layout (test list, annotation JSON in
the camera frame with visibility, prediction JSON in the ground frame), then scored in the same run, the official
evaluator first in each of ``--rounds`` rounds (alternating with the library), CPU only:

- the official ``eval_3D_lane.py`` (OpenDriveLab/OpenLane, ``eval/LANE_evaluation/lane3d``; ``--official-src``: the
  repository's root or that folder) in its own virtual environment (``--venv``; ``--setup`` creates it there:
  numpy 1.23.5 for ``np.int``, scipy 1.9.3, ortools 9.x). Current ortools lacks the removed
  ``ortools.graph.pywrapgraph`` API, so a few lines of adapter give its names over
  ``ortools.graph.python.min_cost_flow``; ``LaneEval.__init__`` never sets ``dataset_name``, which ``bench`` reads
  (line 96), so the runner sets it to ``"openlane"`` as PersFormer's copy does. Timed: ``bench_one_submit`` end to
  end (it reads the JSON files itself), and the JSON reading alone (the same ``json.load`` loop), whose difference
  is the evaluation of frames in memory;
- ``drivemetrics``: ``evaluate_openlane3d_files`` end to end (one process, and ``--workers`` processes),
  ``read_openlane_gt`` / ``read_openlane_pred`` alone (every check and limit), and ``evaluate_openlane3d_frames`` on
  the frames already read (in memory); ``compat="reference"``, one torch thread, median of ``--repeat`` runs;
- the JSON-parse floor: reading the bytes of every file and parsing them with the fastest parser installed
  (``orjson`` where the ``fast`` extra is installed, else ``json``), nothing else: no reader can be faster.

Printed: wall and CPU seconds of each (CPU: this process and its children; less sensitive to other work on the
machine), the ratios, the load average next to each line, the largest difference over the eight headline values,
whether the six counts and the per-frame outputs agree, and the frames whose integer-cost assignment has several
optima (OR-Tools and scipy may then pick different ones). ``--json`` / ``--markdown`` write the same.

Run ``python benchmarks/openlane3d.py --official-src SRC --venv VENV [--setup] [--frames N]`` (without
``--official-src``, as ``make bench`` runs it: the library alone). The official code at commit 8a0ce6b can be
exported from a clone with ``git archive HEAD eval/LANE_evaluation/lane3d | tar -x -C SRC``.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
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
import io, contextlib, warnings
warnings.simplefilter("ignore")  # scipy's divide warnings on lanes with a repeated y
from eval_3D_lane import LaneEval
gt_dir, pred_dir, test_list = sys.argv[2], sys.argv[3], sys.argv[4]
args = types.SimpleNamespace(dataset_dir=gt_dir, pred_dir=pred_dir, test_list=test_list)
evaluator = LaneEval(args)
evaluator.dataset_name = "openlane"  # read by bench() (line 96), never set by __init__
start, cpu = time.perf_counter(), time.process_time()
with contextlib.redirect_stdout(io.StringIO()):
    stats = evaluator.bench_one_submit(pred_dir, gt_dir, test_list, prob_th=0.5)
total, total_cpu = time.perf_counter() - start, time.process_time() - cpu
start, cpu = time.perf_counter(), time.process_time()
for line in open(test_list).readlines():
    for folder in (pred_dir, gt_dir):
        with open(folder + line.strip("\n").replace("jpg", "json")) as f:
            json.load(f)
reading, reading_cpu = time.perf_counter() - start, time.process_time() - cpu
frames = []
if sys.argv[5] == "1":  # a second, untimed pass: what bench() returns for each frame
    bench = evaluator.bench
    evaluator.bench = lambda *a: frames.append(bench(*a)) or frames[-1]
    with contextlib.redirect_stdout(io.StringIO()):
        evaluator.bench_one_submit(pred_dir, gt_dir, test_list, prob_th=0.5)
    frames = [[float(v) for v in f[:6]] + [[float(e) for e in errors] for errors in f[6:]] for f in frames]
names = ["F_score", "recall", "precision", "category_accuracy", "x_error_close", "x_error_far", "z_error_close",
         "z_error_far", "n_recall_hits", "n_precision_hits", "n_category_correct", "n_gt", "n_pred", "n_matched"]
print(json.dumps({"total_s": total, "total_cpu_s": total_cpu, "reading_s": reading, "reading_cpu_s": reading_cpu,
                  "metrics": dict(zip(names, map(float, stats))), "frames": frames}))
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
    """Create the official evaluator's virtual environment at ``venv`` (PyPI)."""
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", *PACKAGES], check=True)


def run_official(venv: Path, source: Path, root: Path, test_list: Path, frames: bool) -> dict:
    """The official evaluator on the frames under ``root`` (its times, metrics and, with ``frames``, per frame)."""
    folder = source / "eval" / "LANE_evaluation" / "lane3d" if (source / "eval").is_dir() else source
    if not (folder / "eval_3D_lane.py").is_file():
        raise SystemExit(f"--official-src: no eval_3D_lane.py in {folder}")
    command = [str(venv / "bin" / "python"), "-c", _RUNNER, str(folder), f"{root}/gt/", f"{root}/pred/"]
    done = subprocess.run(
        [*command, str(test_list), "1" if frames else "0"], capture_output=True, text=True, check=False, cwd=folder
    )
    if done.returncode != 0:
        raise SystemExit(f"the official evaluator failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _take(resampled: dict, index: torch.Tensor) -> dict:
    """The resampled values of the lanes ``index`` as ``(K, 1, 100)`` (one lane per frame of a pair batch)."""
    return {key: resampled[key].index_select(0, index)[:, None] for key in ("x", "z", "visible")}


def frames_with_tied_assignments(gt: list, pred: list) -> list[int]:
    """Frames whose integer-cost maximum-cardinality assignment is not unique (OR-Tools and scipy may then pick
    different optima, which moves the errors and, rarely, the counts); frame ``i`` pairs annotation ``i``."""
    from scipy.optimize import linear_sum_assignment

    from drivemetrics.lane3d import pairs, resample
    from drivemetrics.lane3d.evaluate import _frames_to_lanes

    tied = []
    for start in range(0, len(gt), 256):
        gt_lanes = _frames_to_lanes(gt[start : start + 256], True, "cpu")
        pred_lanes = _frames_to_lanes(pred[start : start + 256], False, "cpu")
        g = resample.resample_lanes(gt_lanes, True, False)
        p = resample.resample_lanes(pred_lanes, False, False)
        batch = len(gt[start : start + 256])
        gi, pj, _, first, n_gt, n_pred = pairs.pair_index(gt_lanes.frame, g["kept"], pred_lanes.frame, p["kept"], batch)
        cost = pairs.pair_cost(pairs.pair_terms(_take(g, gi), _take(p, pj), None), True)[:, 0, 0].numpy()
        for b, (offset, rows, cols) in enumerate(zip(first.tolist(), n_gt.tolist(), n_pred.tolist(), strict=True)):
            if rows * cols == 0:
                continue
            sub = cost[offset : offset + rows * cols].reshape(rows, cols)
            r, c = linear_sum_assignment(sub)
            best = sub[r, c].sum()
            for i, j in zip(r, c, strict=True):
                other = sub.copy()
                other[i, j] = 1e9  # is there another optimum without this pair?
                r2, c2 = linear_sum_assignment(other)
                if other[r2, c2].sum() == best:
                    tied.append(start + b)
                    break
    return tied


def _cpu_seconds() -> float:
    """CPU seconds of this process and its finished children (worker processes)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def measure(fn: Callable[[], object], repeat: int) -> tuple[dict, object]:
    """Median wall and CPU seconds of ``repeat`` calls (garbage collection as usual), the load, the last result."""
    walls, cpus, result = [], [], None
    for _ in range(repeat):
        gc.collect()
        start, cpu = time.perf_counter(), _cpu_seconds()
        result = fn()
        walls.append(time.perf_counter() - start)
        cpus.append(_cpu_seconds() - cpu)
    return {"wall_s": statistics.median(walls), "cpu_s": statistics.median(cpus), "load": os.getloadavg()[0]}, result


def json_floor(files: list[Path]) -> Callable[[], object]:
    """Reading every file's bytes and parsing them with the fastest parser installed, nothing else."""
    try:
        import orjson

        parse: Callable[[bytes], object] = orjson.loads
    except ImportError:
        parse = json.loads

    def run() -> list:
        gc.disable()  # as the library's readers (many small objects)
        try:
            return [parse(path.read_bytes()) for path in files]
        finally:
            gc.enable()

    run.parser = parse.__module__  # type: ignore[attr-defined]
    return run


def compare(ours: dict, official: dict, tied_frames: list[int]) -> dict:
    """Agreement of the two results: headline values, counts, per-frame outputs."""
    theirs, mine = official["metrics"], ours["metrics"]
    worst = max(abs(float(mine[k]) - float(theirs[k])) for k in HEADLINE)
    differ = []
    for k, (row, theirs_row) in enumerate(zip(ours["per_frame"], official["frames"], strict=True)):
        same = [row[key] for key in FRAME_KEYS] == [int(v) for v in theirs_row[:6]]
        for e, key in enumerate(ERROR_KEYS):
            ours_e, theirs_e = np.sort(np.asarray(row[key], float)), np.sort(np.asarray(theirs_row[6 + e], float))
            same &= ours_e.shape == theirs_e.shape and np.allclose(ours_e, theirs_e, atol=1e-9, equal_nan=True)
        if not same:
            differ.append(k)
    return {
        "largest_headline_difference": worst,
        "counts_equal": all(int(mine[k]) == int(theirs[k]) for k in COUNTS),
        "counts": {k: [int(mine[k]), int(theirs[k])] for k in COUNTS},
        "frames_differing": differ,
        "frames_with_tied_assignments": tied_frames,
        "differing_frames_not_tied": sorted(set(differ) - set(tied_frames)),
    }


def machine() -> dict:
    """The machine the numbers come from."""
    model = platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cpu": model, "cores": os.cpu_count(), "python": platform.python_version(), "torch": torch.__version__}


def _ratio(official: float | None, ours: float) -> float | None:
    return None if official is None else official / ours


def markdown(result: dict) -> str:
    """A short table of ``result`` (wall seconds, ratios, CPU seconds, load)."""
    rows = result["rows"]
    lines = [
        f"# OpenLane 3D lanes: official `eval_3D_lane.py` vs drivemetrics, {result['frames']:,} frames",
        "",
        f"{result['date']} on {result['machine']['cpu']} ({result['machine']['cores']} cores, shared), CPU only, "
        f'one torch thread, `compat="reference"`; JSON parser of the floor: `{result["floor_parser"]}`.',
        "",
        "| measurement | wall s | wall ratio (official / this) | CPU s | CPU ratio | load (1 min) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, row in rows.items():
        ratio, cpu_ratio = row.get("ratio"), row.get("cpu_ratio")
        ratio_text = "" if ratio is None else f"{ratio:.1f}x"
        cpu_text = "" if cpu_ratio is None else f"{cpu_ratio:.1f}x"
        lines.append(
            f"| {name} | {row['wall_s']:.2f} | {ratio_text} | {row['cpu_s']:.2f} | {cpu_text} | {row['load']:.1f} |"
        )
    agreement = result.get("agreement")
    if agreement:
        differ, tied = agreement["frames_differing"], agreement["frames_with_tied_assignments"]
        where = "all of them" if not agreement["differing_frames_not_tied"] else "not all"
        lines += [
            "",
            f"Same numbers: largest headline difference {agreement['largest_headline_difference']:.1e}, counts "
            f"equal: {agreement['counts_equal']}; {len(differ)} frames with different per-frame outputs, {where} "
            f"among the {len(tied)} frames whose integer-cost assignment has several optima (OR-Tools and scipy "
            "pick different ones there).",
        ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--official-src",
        type=Path,
        default=None,
        help="OpenLane repository root (or its lane3d folder); without it: the library alone",
    )
    parser.add_argument("--venv", type=Path, default=None, help="the official evaluator's virtual environment")
    parser.add_argument("--setup", action="store_true", help="create the venv (--venv) of the official evaluator first")
    parser.add_argument("--frames", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3, help="runs of each library measurement (median)")
    parser.add_argument("--rounds", type=int, default=1, help="rounds of official then library (median)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=None, metavar="OUT", help="write the results as JSON")
    parser.add_argument("--markdown", type=Path, default=None, metavar="OUT", help="write a markdown table")
    args = parser.parse_args()
    if (args.setup or args.official_src is not None) and args.venv is None:
        parser.error("--venv VENV is required with --setup or --official-src (the official evaluator's environment)")
    if args.setup:
        setup_venv(args.venv)
    if args.official_src is not None and not (args.venv / "bin" / "python").is_file():
        parser.error(f"--venv {args.venv}: no bin/python there (create it with --setup)")
    torch.set_num_threads(1)
    from drivemetrics.lane3d.evaluate import evaluate_openlane3d_files, evaluate_openlane3d_frames
    from drivemetrics.lane3d.io import read_openlane_gt, read_openlane_pred, read_test_list

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        test_list = write_frames(root, args.frames, args.seed)
        lines = read_test_list(test_list)
        files = [root / folder / line.replace("jpg", "json") for line in lines for folder in ("pred", "gt")]
        if args.official_src is None:
            print("official evaluator skipped (give --official-src and --venv [--setup]): the library alone")
        floor = json_floor(files)

        def read_all() -> tuple[list, list]:
            gt = [read_openlane_gt(root / "gt" / line.replace("jpg", "json")) for line in lines]
            return gt, [read_openlane_pred(root / "pred" / line.replace("jpg", "json")) for line in lines]

        rounds: list[dict] = []
        official = None
        for round_index in range(args.rounds):
            times: dict[str, dict] = {}
            if args.official_src is not None:
                load = os.getloadavg()[0]
                official = run_official(args.venv, args.official_src, root, test_list, frames=round_index == 0)
                times["official end to end"] = {"wall_s": official["total_s"], "cpu_s": official["total_cpu_s"]}
                times["official JSON reading (json.load)"] = {
                    "wall_s": official["reading_s"],
                    "cpu_s": official["reading_cpu_s"],
                }
                times["official in memory (difference)"] = {
                    "wall_s": official["total_s"] - official["reading_s"],
                    "cpu_s": official["total_cpu_s"] - official["reading_cpu_s"],
                }
                for row in times.values():
                    row["load"] = load
                if round_index == 0:
                    first_official = official
            times["drivemetrics end to end, 1 process"], ours = measure(
                lambda: evaluate_openlane3d_files(root / "gt", root / "pred", test_list, "reference"), args.repeat
            )
            times[f"drivemetrics end to end, {args.workers} workers"], _ = measure(
                lambda: evaluate_openlane3d_files(root / "gt", root / "pred", test_list, "reference", args.workers),
                args.repeat,
            )
            times["drivemetrics JSON reading (checked readers)"], (gt, pred) = measure(read_all, args.repeat)
            times["drivemetrics in memory"], _ = measure(
                lambda gt=gt, pred=pred: evaluate_openlane3d_frames(gt, pred, "reference"), args.repeat
            )
            times["JSON-parse floor (read bytes + parse)"], _ = measure(floor, args.repeat)
            rounds.append(times)
        tied = frames_with_tied_assignments(gt, pred) if official is not None else []
    rows = {
        name: {key: statistics.median(r[name][key] for r in rounds) for key in ("wall_s", "cpu_s", "load")}
        for name in rounds[0]
    }
    if official is not None:
        for name, row in rows.items():
            if name.startswith(("drivemetrics end to end", "JSON-parse floor", "drivemetrics in memory")):
                theirs = rows["official in memory (difference)" if "memory" in name else "official end to end"]
                row["ratio"] = _ratio(theirs["wall_s"], row["wall_s"])
                row["cpu_ratio"] = _ratio(theirs["cpu_s"], row["cpu_s"])
    result = {
        "frames": args.frames,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine(),
        "floor_parser": floor.parser,  # type: ignore[attr-defined]
        "repeat": args.repeat,
        "rounds": args.rounds,
        "rows": rows,
    }
    if official is not None:
        result["agreement"] = compare(ours, first_official, tied)  # type: ignore[arg-type]
        result["official_metrics"] = first_official["metrics"]
        result["drivemetrics_metrics"] = ours["metrics"]  # type: ignore[index]
    print(f"{args.frames} frames, one torch thread, library: median of {args.repeat}; {args.rounds} round(s)")
    for name, row in rows.items():
        ratio = f"{row['ratio']:6.1f}x" if row.get("ratio") else " " * 7
        cpu_ratio = f"{row['cpu_ratio']:6.1f}x" if row.get("cpu_ratio") else " " * 7
        print(
            f"{name:<46}{row['wall_s']:8.2f} s {ratio}  cpu {row['cpu_s']:7.2f} s {cpu_ratio}  load {row['load']:.1f}"
        )
    floor_row = rows["JSON-parse floor (read bytes + parse)"]
    for name in ("drivemetrics end to end, 1 process", f"drivemetrics end to end, {args.workers} workers"):
        print(f"{name}: {rows[name]['wall_s'] / floor_row['wall_s']:.2f}x the JSON-parse floor ({floor.parser})")  # type: ignore[attr-defined]
    if official is not None:
        agreement = result["agreement"]
        print(
            f"largest headline difference {agreement['largest_headline_difference']:.2e}; counts equal: "
            f"{agreement['counts_equal']}; frames differing: {len(agreement['frames_differing'])}, of which not "
            f"tied: {agreement['differing_frames_not_tied']}; tied frames: {len(tied)}"
        )
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    if args.markdown:
        args.markdown.write_text(markdown(result))


if __name__ == "__main__":
    main()
