"""Benchmark: the official Apollo 3D Lane Synthetic (Gen-LaneNet) and ONCE-3DLanes evaluators against
``drivemetrics apollo3d-eval`` / ``once3d-eval`` on the same synthetic frames, same run, CPU, ``compat="reference"``.

``--frames`` synthetic frames per benchmark (default 5,000) are written in each official layout (Apollo: a
``test.json`` and a prediction file of JSON lines; ONCE: ``gt/<seq>/cam01/<ts>.json`` and ``pred/...``), then scored
end to end (the evaluators read the files themselves), the official evaluator first:

- Gen-LaneNet's ``tools/eval_3D_lane.py`` (yuliangguo/Pytorch_Generalized_3D_Lane_Detection 45c6cc4;
  ``--apollo-src``: the folder holding ``tools/``) as its ``__main__`` runs it: ``bench_one_submit_varying_probs``
  then ``bench_one_submit`` at the max-F threshold. ``tools/utils.py`` imports torch for its training helpers:
  empty stand-in modules satisfy those imports (as in the fixture's recorded run); the removed OR-Tools
  ``pywrapgraph`` API is given by a few lines of adapter over ``ortools.graph.python.min_cost_flow``;
- once_3dlanes_benchmark's ``evaluation/eval_utils.py`` (7582fbb; ``--once-src``: the repository's root) as its
  ``eval.py`` calls it (``LaneEval().lane_evaluation(gt, pred, "cfg/eval.json")``, 10 processes as configured), the
  missing ``jarvis`` helpers replaced as in the fixture's run (``load_json`` = ``json.load``); munkres 1.1.4;
- ``drivemetrics apollo3d-eval`` / ``once3d-eval --compat reference --workers 1`` as a fresh process (interpreter
  and imports included, as for the official scripts).

The official code runs in its own virtual environment (``--venv``; ``--setup`` creates it with the Python running
this script: numpy 1.23.5 for ``np.int`` / ``np.float``, scipy 1.9.3, OR-Tools 9.14 (whose tie choices
``compat="reference"`` reproduces), opencv-python-headless 4.8, shapely 2.0, munkres 1.1.4, prettytable, matplotlib,
ujson). Printed: wall and CPU seconds (CPU: the process and its
children), the ratio, the load average, and the largest difference between the official numbers and the library's
(Apollo: AP, F, R, P, 4 errors of lane lines, AP and F of centre lines; ONCE: F1, P, R, distance error of the 18
rows). ``--json`` / ``--markdown`` write the same.

    python benchmarks/lanes3d_presets.py --apollo-src SRC --once-src SRC --venv VENV [--setup] [--frames N]

The sources at their commits: ``git archive 45c6cc4 tools | tar -x -C SRC`` and ``git archive 7582fbb evaluation
cfg | tar -x -C SRC``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

PACKAGES = [
    "numpy==1.23.5",
    "scipy==1.9.3",
    "ortools==9.14.6206",  # the version drivemetrics.lane3d.mincostflow re-implements
    "ujson",
    "opencv-python-headless==4.8.1.78",
    "shapely==2.0.6",
    "munkres==1.1.4",
    "prettytable",
    "matplotlib==3.7.5",
]

_PYWRAPGRAPH = r"""
import sys, types
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
"""

_APOLLO_RUNNER = (
    _PYWRAPGRAPH
    + r"""
import io, contextlib, json, resource, time, warnings
warnings.simplefilter("ignore")
for name in ("torch", "torch.nn", "torch.nn.init", "torch.optim", "torch.optim.lr_scheduler"):
    sys.modules[name] = types.ModuleType(name)
sys.modules["torch"].nn = sys.modules["torch.nn"]
sys.modules["torch.nn"].init = sys.modules["torch.nn.init"]
sys.modules["torch"].optim = sys.modules["torch.optim"]
sys.modules["torch.optim"].lr_scheduler = sys.modules["torch.optim.lr_scheduler"]
sys.path.insert(0, sys.argv[1])
gt_file, pred_file = sys.argv[2], sys.argv[3]
start, cpu = time.perf_counter(), time.process_time()
from tools.utils import define_args, sim3d_config
from tools.eval_3D_lane import LaneEval
args = define_args().parse_args([])
sim3d_config(args)
evaluator = LaneEval(args)
with contextlib.redirect_stdout(io.StringIO()):
    pr = evaluator.bench_one_submit_varying_probs(pred_file, gt_file)
    stats = evaluator.bench_one_submit(pred_file, gt_file, prob_th=pr["max_F_prob_th"])
total, total_cpu = time.perf_counter() - start, time.process_time() - cpu
metrics = {"laneline_AP": pr["laneline_AP"], "F_score": stats[0], "recall": stats[1], "precision": stats[2],
           "x_error_close": stats[3], "x_error_far": stats[4], "z_error_close": stats[5], "z_error_far": stats[6],
           "centerline_AP": pr["centerline_AP"], "centerline_F": stats[7], "max_F_prob_th": pr["max_F_prob_th"]}
print(json.dumps({"total_s": total, "total_cpu_s": total_cpu, "metrics": {k: float(v) for k, v in metrics.items()}}))
"""
)

_ONCE_RUNNER = r"""
import io, contextlib, json, os, sys, time, types
def load_json(path):
    with open(path) as f:
        return json.load(f)
jarvis = types.ModuleType("jarvis")
for sub, attrs in (("eload", {"load_json": load_json}), ("edump", {"ptable_to_csv": lambda table, filename: None}),
                   ("epath", {"inherit": lambda dirname, filename, middlename, suffix: os.devnull})):
    module = types.ModuleType("jarvis." + sub)
    module.__dict__.update(attrs)
    sys.modules["jarvis." + sub] = module
sys.modules["jarvis"] = jarvis
sys.path.insert(0, os.path.join(sys.argv[1], "evaluation"))
gt_dir, pred_dir = sys.argv[2], sys.argv[3]
rows = []
import prettytable
add_row = prettytable.PrettyTable.add_row
def _add_row(self, row, *a, **k):  # keep the values the table is given
    rows.append([float(v) for v in row])
    return add_row(self, row, *a, **k)
prettytable.PrettyTable.add_row = _add_row
start = time.perf_counter()
import eval_utils
with contextlib.redirect_stdout(io.StringIO()):
    eval_utils.LaneEval().lane_evaluation(gt_dir, pred_dir, os.path.join(sys.argv[1], "cfg", "eval.json"))
total = time.perf_counter() - start
ru_self, ru_children = __import__("resource").getrusage(0), __import__("resource").getrusage(-1)
cpu = ru_self.ru_utime + ru_self.ru_stime + ru_children.ru_utime + ru_children.ru_stime
print(json.dumps({"total_s": total, "total_cpu_s": cpu, "rows": rows}))
"""


def _lane(rng: np.random.Generator, x0: float, y0: float, y1: float, step: float, curve: float) -> np.ndarray:
    y = np.arange(y0, y1, step)
    return np.stack([x0 + curve * y * y, y, 0.02 * y], 1).round(4)


def write_apollo(root: Path, count: int, seed: int) -> tuple[Path, Path]:
    """``count`` synthetic frames in Gen-LaneNet's format: a GT ``test.json`` and a prediction file."""
    rng = np.random.default_rng(seed)
    gt_lines, pred_lines = [], []
    for i in range(count):
        name = f"images/{i // 1000:02d}/{i:07d}.jpg"
        curve = rng.uniform(-2e-4, 2e-4)
        frame = {}
        pred = {"raw_file": name}
        for kind, offsets in (("laneLines", np.arange(int(rng.integers(2, 6))) * 3.6 - 5.4), ("centerLines", None)):
            if offsets is None:
                offsets = np.arange(int(rng.integers(1, 4))) * 3.6 - 3.6
            lanes, vis, preds, probs = [], [], [], []
            for x0 in offsets:
                lane = _lane(rng, x0, rng.uniform(3, 8), rng.uniform(45, 200), rng.uniform(0.5, 3), curve)
                lanes.append(lane.tolist())
                v = (lane[:, 1] < rng.uniform(40, 210)).astype(float)
                vis.append(v.tolist())
                if rng.uniform() < 0.1:
                    continue
                shift = rng.choice([0.0, rng.normal(0, 0.3), rng.normal(0, 1.5)])
                p = _lane(rng, x0 + shift, rng.uniform(3, 10), rng.uniform(40, 110), 5.0, curve * rng.uniform(0.8, 1.2))
                preds.append(p.tolist())
                probs.append(float(rng.uniform(0, 1)))
            for _ in range(int(rng.integers(0, 3))):
                preds.append(_lane(rng, rng.uniform(-12, 12), 3, rng.uniform(20, 100), 5.0, 0.0).tolist())
                probs.append(float(rng.uniform(0, 1)))
            frame[kind], frame[kind + "_visibility"] = lanes, vis
            pred[kind], pred[kind + "_prob"] = preds, probs
        gt_lines.append(json.dumps({"raw_file": name, "cam_height": 1.6, "cam_pitch": 0.04, **frame}))
        pred_lines.append(json.dumps(pred))
    gt_file, pred_file = root / "test.json", root / "test_pred_file.json"
    gt_file.write_text("\n".join(gt_lines) + "\n")
    pred_file.write_text("\n".join(pred_lines) + "\n")
    return gt_file, pred_file


def write_once(root: Path, count: int, seed: int) -> tuple[Path, Path]:
    """``count`` synthetic frames in the ONCE-3DLanes layout (camera frame: x right, y down, z forward)."""
    rng = np.random.default_rng(seed)
    for i in range(count):
        rel = Path(f"{i // 7:06d}") / "cam01" / f"{1616000000000 + 100 * i}.json"
        gt, preds = [], []
        for x0 in np.arange(int(rng.integers(2, 5))) * 3.6 - 5.4:
            z = np.arange(rng.uniform(3, 12), rng.uniform(30, 80), rng.uniform(0.5, 3))
            lane = np.stack([x0 + 1e-3 * z * z * rng.uniform(-1, 1), 1.6 + 0.01 * z, z], 1).round(3)
            gt.append((lane[::-1] if rng.uniform() < 0.3 else lane).tolist())
            if rng.uniform() < 0.1:
                continue
            shift = rng.choice([0.0, rng.normal(0, 0.15), rng.normal(0, 1.0)])
            moved = lane + np.array([shift, rng.normal(0, 0.1), 0.0])
            preds.append({"points": moved.round(3).tolist(), "score": rng.uniform()})
        for _ in range(int(rng.integers(0, 3))):
            z = np.arange(rng.uniform(3, 20), rng.uniform(30, 60), 2.0)
            lane = np.stack([np.full_like(z, rng.uniform(-10, 10)), np.full_like(z, 1.6), z], 1).round(3)
            preds.append({"points": lane.tolist(), "score": rng.uniform()})
        for sub, data in (("gt", {"lanes": gt}), ("pred", {"lanes": preds})):
            path = root / sub / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(data))
    return root / "gt", root / "pred"


def _load() -> str:
    return "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def _cpu() -> float:
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def _official(python: Path, runner: str, argv: list[str]) -> dict:
    out = subprocess.run([str(python), "-c", runner, *argv], capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"official evaluator failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _ours(command: str, gt: Path, pred: Path) -> tuple[dict, float, float]:
    """``drivemetrics COMMAND --compat reference`` as a fresh process (interpreter and imports included), one worker."""
    out = gt.parent / f"{command}.json"
    argv = [sys.executable, "-c", "import sys; from drivemetrics.cli import main; sys.exit(main(sys.argv[1:]))"]
    argv += [command, "--gt", str(gt), "--pred", str(pred), "--compat", "reference", "--json", str(out)]
    argv += ["--workers", "1", "--no-progress"]
    start, cpu = time.perf_counter(), _cpu()
    subprocess.run(argv, check=True, capture_output=True)
    return json.loads(out.read_text()), time.perf_counter() - start, _cpu() - cpu


def run_apollo(python: Path, src: Path, root: Path, frames: int) -> dict:
    gt, pred = write_apollo(root, frames, 7)
    load_before = _load()
    official = _official(python, _APOLLO_RUNNER, [str(src), str(gt), str(pred)])
    load_mid = _load()
    ours, wall, cpu = _ours("apollo3d-eval", gt, pred)
    diff = max(abs(official["metrics"][k] - ours["metrics"][k]) for k in official["metrics"])
    return {
        "benchmark": "apollo3d-eval",
        "frames": frames,
        "official_s": official["total_s"],
        "official_cpu_s": official["total_cpu_s"],
        "drivemetrics_s": wall,
        "drivemetrics_cpu_s": cpu,
        "ratio": official["total_s"] / wall,
        "cpu_ratio": official["total_cpu_s"] / cpu,
        "max_abs_diff": diff,
        "load": [load_before, load_mid, _load()],
        "official_metrics": official["metrics"],
    }


def run_once(python: Path, src: Path, root: Path, frames: int) -> dict:
    gt, pred = write_once(root, frames, 7)
    load_before = _load()
    official = _official(python, _ONCE_RUNNER, [str(src), str(gt) + "/", str(pred) + "/"])
    load_mid = _load()
    ours, wall, cpu = _ours("once3d-eval", gt, pred)
    diff = 0.0
    for row, mine in zip(official["rows"], ours["table"], strict=True):
        for value, key in zip(row[1:], ("F1", "precision", "recall", "distance_error"), strict=True):
            other = mine[key]
            same_nan = other is None and value != value
            diff = max(diff, 0.0 if same_nan else abs(value - (other if other is not None else float("nan"))))
    return {
        "benchmark": "once3d-eval",
        "frames": frames,
        "official_s": official["total_s"],
        "official_cpu_s": official["total_cpu_s"],
        "drivemetrics_s": wall,
        "drivemetrics_cpu_s": cpu,
        "ratio": official["total_s"] / wall,
        "cpu_ratio": official["total_cpu_s"] / cpu,
        "max_abs_diff": diff,
        "load": [load_before, load_mid, _load()],
        "official_row_0.95": official["rows"][-1],
    }


def setup_venv(venv: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", *PACKAGES], check=True)
    return venv / "bin" / "python"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--apollo-src", type=Path, help="folder holding Gen-LaneNet's tools/ (commit 45c6cc4)")
    parser.add_argument("--once-src", type=Path, help="once_3dlanes_benchmark's root (commit 7582fbb)")
    parser.add_argument("--venv", type=Path, required=True, help="virtual environment of the official evaluators")
    parser.add_argument("--setup", action="store_true", help="create --venv with the official packages first")
    parser.add_argument("--frames", type=int, default=5000, help="synthetic frames per benchmark")
    parser.add_argument("--json", type=Path, help="write the results as JSON")
    parser.add_argument("--markdown", type=Path, help="write the results as a Markdown table")
    args = parser.parse_args()
    python = setup_venv(args.venv) if args.setup else args.venv / "bin" / "python"
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        if args.apollo_src:
            (Path(tmp) / "apollo").mkdir()
            results.append(run_apollo(python, args.apollo_src, Path(tmp) / "apollo", args.frames))
            print(json.dumps(results[-1]), flush=True)
        if args.once_src:
            (Path(tmp) / "once").mkdir()
            results.append(run_once(python, args.once_src, Path(tmp) / "once", args.frames))
            print(json.dumps(results[-1]), flush=True)
    meta = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": platform.platform(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
    }
    if args.json:
        args.json.write_text(json.dumps({"meta": meta, "results": results}, indent=1) + "\n")
    if args.markdown:
        lines = [
            f'Run {meta["date"]} on {meta["machine"]} ({meta["cpus"]} CPUs), `compat="reference"`, end to end.',
            "",
            "| command | frames | official s (CPU s) | drivemetrics s (CPU s) | wall ratio | CPU ratio | max abs diff "
            "| load 1/5/15 min |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for r in results:
            lines.append(
                f"| `{r['benchmark']}` | {r['frames']} | {r['official_s']:.2f} ({r['official_cpu_s']:.2f}) | "
                f"{r['drivemetrics_s']:.2f} ({r['drivemetrics_cpu_s']:.2f}) | {r['ratio']:.1f}x | "
                f"{r['cpu_ratio']:.1f}x | "
                f"{r['max_abs_diff']:.1e} | {' / '.join(r['load'])} |"
            )
        args.markdown.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
