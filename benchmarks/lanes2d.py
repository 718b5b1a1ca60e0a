"""Benchmark: ``llamas-eval`` and ``curvelanes-eval`` end to end against the official Python evaluators.

Synthetic frames in each dataset's layout are written once into ``--work DIR`` (LLAMAS: labels with markers and
the projection matrix, CULane-style predictions; CurveLanes: 2560 x 1440 labels as strings, scored predictions,
``image_sizes.json``). The official code runs unmodified in its own virtual environment, made under ``--work`` by
this script with pip (numpy, scipy, opencv-python-headless, shapely, p_tqdm); its files are read from the git
repositories given on the command line (no default paths):

- ``--llamas-repo``: a clone of karstenBehrendt/unsupervised_llamas (commit 9b99f46 is used): ``culane_metric/
  evaluate.py`` with its label scripts, run as its command line does (``eval_predictions(..., width=30,
  unofficial=False, sequential=True)``);
- ``--condlane-repo``: a clone of aliyun/conditional-lane-detection (commit c57b242): ``tools/condlanenet/
  lane_metric.py`` (vega's ``LaneMetricCore``), the label text conversion and ``parse_anno`` as
  ``test_curvelanes.py``, nine passes for the score thresholds 0.1 .. 0.9 (vega's ``LaneMetric``).

``drivemetrics`` runs as a user runs it (a fresh ``python -m drivemetrics`` process, JSON written), both compat
modes, with ``--workers 1`` (``--workers`` here: like for like with the official evaluators, which run sequentially;
``auto`` for the pool's own policy). Printed: wall seconds of each side (median of ``--repeat`` alternating runs),
the ratio, whether the numbers are equal (reference mode: every count and value), the load average. ``python
benchmarks/lanes2d.py --work DIR --llamas-repo R1 --condlane-repo R2 [--llamas-frames N] [--curvelanes-frames N]
[--repeat 1] [--json OUT]`` (``--llamas-frames 0`` or ``--curvelanes-frames 0`` skips that benchmark).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
import venv
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
LLAMAS_COMMIT = "9b99f464e1983195b922e2df8bb57760182206e7"
CONDLANE_COMMIT = "c57b242deea809800d1bb3ec547f12cc357ce95b"
PACKAGES = ["numpy<2.3", "scipy", "opencv-python-headless<4.13", "shapely", "p_tqdm"]


# ------------------------------------------------------------------------------------------------- synthetic data


def _llamas_frames(root: Path, frames: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    for f in range(frames):
        seq = f"images-bench_{f // 500:03d}"
        name = f"{f:06d}"
        vx, vy = 638 + rng.uniform(-60, 60), 300 + rng.uniform(-20, 20)
        bend = rng.uniform(-80, 80)
        lanes, preds = [], []
        for lane_id, bottom in zip(("l1", "l0", "r0", "r1"), (-350, 250, 1000, 1650), strict=True):
            bottom += rng.uniform(-60, 60)

            def x_at(
                y: np.ndarray, bottom: float = bottom, vx: float = vx, vy: float = vy, bend: float = bend
            ) -> np.ndarray:
                t = (716 - y) / (716 - vy)
                return bottom + (vx - bottom) * t + bend * t * t

            markers = []
            y = 716.0
            while y > vy + 40:
                y0, y1 = y, max(y - rng.uniform(25, 60), vy + 20)
                x0, x1 = float(x_at(np.array(y0))), float(x_at(np.array(y1)))
                if 0 <= x0 < 1276 and 0 <= x1 < 1276 and int(y0) != int(y1) and int(x0) != int(x1):
                    z0, z1 = 1500.0 / (y0 - vy), 1500.0 / (y1 - vy)
                    markers.append({
                        "lane_marker_id": f"m{len(markers)}",
                        "world_start": {"x": 0.002 * (x0 - vx) * z0, "y": 1.6, "z": z0},
                        "world_end": {"x": 0.002 * (x1 - vx) * z1, "y": 1.6, "z": z1},
                        "pixel_start": {"x": int(x0), "y": int(y0)},
                        "pixel_end": {"x": int(x1), "y": int(y1)},
                    })  # fmt: skip
                y = y1 - rng.uniform(10, 40)
            if len(markers) >= 2:
                lanes.append({"lane_id": lane_id, "markers": markers})
            if rng.random() < 0.9:
                ys = np.arange(716, vy + 30, -rng.uniform(5, 20))
                xs = x_at(ys) + rng.normal(rng.choice([2.0, 12.0, 25.0]), 1.0) + rng.normal(0, 1.5, len(ys))
                preds.append(" ".join(f"{x:.5f} {y:.5f}" for x, y in zip(xs, ys, strict=True)))
        if rng.random() < 0.3:
            preds.append(" ".join(f"{x:.5f} {y:.5f}" for x, y in [(900, 716), (760, 500), (700, 400)]))
        label = {"projection_matrix": [[1000, 0, 638], [0, 1000, 358], [0, 0, 1]], "lanes": lanes}
        (root / "labels" / "valid" / seq).mkdir(parents=True, exist_ok=True)
        (root / "pred" / seq).mkdir(parents=True, exist_ok=True)
        (root / "labels" / "valid" / seq / f"{name}.json").write_text(json.dumps(label))
        (root / "pred" / seq / f"{name}.lines.txt").write_text("\n".join(preds) + ("\n" if preds else ""))


def _curvelanes_frames(root: Path, frames: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    (root / "valid" / "labels").mkdir(parents=True, exist_ok=True)
    (root / "pred").mkdir(parents=True, exist_ok=True)
    names, sizes = [], {}
    for f in range(frames):
        name = f"{f:032x}"
        w, h = 2560, 1440
        vx, vy = 1280 + rng.uniform(-300, 300), 600 + rng.uniform(-100, 100)
        bend = rng.uniform(-400, 400)
        gt_lines, pred_lines = [], []
        for _ in range(int(rng.integers(2, 7))):
            bottom = rng.uniform(-800, 3300)
            ys = np.arange(h - 1, vy + 60, -rng.uniform(20, 60))
            t = (h - 1 - ys) / (h - 1 - vy)
            xs = bottom + (vx - bottom) * t + bend * t * t
            gt_lines.append([{"y": f"{y:.2f}", "x": f"{x:.2f}"} for x, y in zip(xs, ys, strict=True)])
            if rng.random() < 0.9:
                shift = rng.choice([3.0, 15.0, 40.0]) * rng.choice([-1, 1])
                pts = [
                    {"x": round(x + shift + rng.normal(0, 2), 2), "y": round(y, 2)} for x, y in zip(xs, ys, strict=True)
                ]
                pred_lines.append(
                    {"score": round(float(rng.uniform(0.05, 1.0)), 4), "points": pts[:: int(rng.integers(1, 3))]}
                )
        names.append(name)
        sizes[name] = {"width": w, "height": h}
        (root / "valid" / "labels" / f"{name}.lines.json").write_text(json.dumps({"Lines": gt_lines}))
        (root / "pred" / f"{name}.lines.json").write_text(
            json.dumps({"Shape": {"height": h, "width": w}, "Lines": pred_lines})
        )
    (root / "valid" / "valid.txt").write_text("".join(f"images/{n}.jpg\n" for n in names))
    (root / "valid" / "image_sizes.json").write_text(json.dumps(sizes))


# -------------------------------------------------------------------------------------------- official evaluators


def _git_show(repo: Path, commit: str, path: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "show", f"{commit}:{path}"], check=True, capture_output=True, text=True
    ).stdout


def _official_env(work: Path, llamas_repo: Path, condlane_repo: Path) -> Path:
    """The venv (made once) and the official files laid out as packages; returns the venv's python."""
    env = work / "venv"
    python = env / "bin" / "python"
    if not python.exists():
        venv.create(env, with_pip=True)
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", *PACKAGES], check=True)
    pkg = work / "official" / "unsupervised_llamas"
    for path in ("culane_metric/evaluate.py", "label_scripts/spline_creator.py", "label_scripts/label_file_scripts.py",
                 "label_scripts/dataset_constants.py", "common/helper_scripts.py", "common/constants.py"):  # fmt: skip
        target = pkg / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(_git_show(llamas_repo, LLAMAS_COMMIT, path))
        for folder in (pkg, target.parent):
            (folder / "__init__.py").touch()
    cond = work / "official" / "condlane"
    cond.mkdir(parents=True, exist_ok=True)
    (cond / "lane_metric.py").write_text(_git_show(condlane_repo, CONDLANE_COMMIT, "tools/condlanenet/lane_metric.py"))
    return python


_LLAMAS_RUNNER = """
import json, sys
sys.path.insert(0, sys.argv[1])
from unsupervised_llamas.culane_metric.evaluate import eval_predictions
r = eval_predictions(sys.argv[2], sys.argv[3], width=30, unofficial=False, sequential=True)
json.dump(r, open(sys.argv[4], "w"))
"""

_CURVELANES_RUNNER = """
import json, os, sys
sys.path.insert(0, sys.argv[1])
from lane_metric import LaneMetricCore
valid, pred_dir, out = sys.argv[2], sys.argv[3], sys.argv[4]
names = [os.path.basename(l.split()[0])[:-4] for l in open(os.path.join(valid, "valid.txt")) if l.strip()]
sizes = json.load(open(os.path.join(valid, "image_sizes.json")))
annos = {}
for name in names:  # prepare_labels (.lines.json -> text) then parse_anno, as test_curvelanes.py reads the GT
    lines = json.load(open(os.path.join(valid, "labels", name + ".lines.json")))["Lines"]
    text = "\\n".join(" ".join(str(c) for p in line for c in (p["x"], p["y"])) + " " for line in lines)
    annos[name] = [[{"x": float(v[2 * i]), "y": float(v[2 * i + 1])} for i in range(len(v) // 2)]
                   for v in (l.strip().split(" ") for l in text.split("\\n") if l.strip())]
preds = {n: json.load(open(os.path.join(pred_dir, n + ".lines.json"))) for n in names}
res = {}
for t in (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9):
    core = LaneMetricCore(eval_width=224, eval_height=224, iou_thresh=0.5, lane_width=5, prob_thresh=t)
    for n in names:
        core(dict(Lines=annos[n], Shape=sizes[n]), preds[n])
    s = core.summary()
    s["hit_num"] = sum(r["hit_num"] for r in core.result_record)
    res[str(t)] = s
json.dump(res, open(out, "w"))
"""


#: CPU seconds (user + system) of each timed command, by the label _timed was given: on a shared machine the wall
#: seconds also depend on the share of a core each command got, the CPU seconds do not
CPU_SECONDS: dict[str, list[float]] = {}


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _timed(argv: list[str], cwd: Path | None = None, label: str | None = None) -> float:
    start, cpu = time.perf_counter(), _children_cpu()
    done = subprocess.run(argv, capture_output=True, text=True, cwd=cwd)
    if done.returncode:
        raise RuntimeError(f"{' '.join(argv[:4])} ...: {done.stderr[-2000:]}")
    if label is not None:
        CPU_SECONDS.setdefault(label, []).append(_children_cpu() - cpu)
    return time.perf_counter() - start


def _ours(command: str, gt: Path, pred: Path, out: Path, compat: str, workers: str) -> list[str]:
    argv = [sys.executable, "-m", "drivemetrics", command, "--gt", str(gt), "--pred", str(pred), "--compat", compat,
            "--no-progress", "--json", str(out)]  # fmt: skip
    return argv if workers == "auto" else [*argv, "--workers", workers]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", type=Path, required=True, help="folder for the data, the venv and the outputs")
    ap.add_argument("--llamas-repo", type=Path, required=True, help="git clone of unsupervised_llamas")
    ap.add_argument("--condlane-repo", type=Path, required=True, help="git clone of conditional-lane-detection")
    ap.add_argument("--llamas-frames", type=int, default=5000, help="LLAMAS frames (0: skip LLAMAS)")
    ap.add_argument("--curvelanes-frames", type=int, default=5000, help="CurveLanes frames (0: skip CurveLanes)")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument(
        "--workers",
        default="1",
        help="drivemetrics' --workers: 1 (default) is like for like with the official evaluators, which run "
        "sequentially here; 'auto' leaves it to the pool's policy (a pool only on free cores)",
    )
    args = ap.parse_args()
    work = args.work.resolve()
    python = _official_env(work, args.llamas_repo, args.condlane_repo)
    env_ours = dict(os.environ, PYTHONPATH=str(REPO))
    report: dict[str, object] = {
        "load_before": os.getloadavg(),
        "python": sys.version.split()[0],
        "drivemetrics_workers": args.workers,
    }
    ll, cl = work / f"llamas_{args.llamas_frames}", work / f"curvelanes_{args.curvelanes_frames}"
    if args.llamas_frames and not ll.exists():
        _llamas_frames(ll, args.llamas_frames, 7)
    if args.curvelanes_frames and not cl.exists():
        _curvelanes_frames(cl, args.curvelanes_frames, 7)
    (work / "llamas_runner.py").write_text(_LLAMAS_RUNNER)
    (work / "curvelanes_runner.py").write_text(_CURVELANES_RUNNER)
    os.environ.update(env_ours)
    runs = {
        "llamas": (
            [str(python), str(work / "llamas_runner.py"), str(work / "official"), str(ll / "pred"),
             str(ll / "labels" / "valid"), str(work / "llamas_official.json")],
            "llamas-eval", ll / "labels" / "valid", ll / "pred", args.llamas_frames,
        ),
        "curvelanes": (
            [str(python), str(work / "curvelanes_runner.py"), str(work / "official" / "condlane"), str(cl / "valid"),
             str(cl / "pred"), str(work / "curvelanes_official.json")],
            "curvelanes-eval", cl / "valid", cl / "pred", args.curvelanes_frames,
        ),
    }  # fmt: skip
    # what a fresh process pays before its first frame (interpreter, torch, the library): reported to separate the
    # per-frame ratio from start-up at these scales
    # the commands' CPU path imports no torch: numpy, SciPy, OpenCV and the lane modules
    imports = "import cv2, scipy.interpolate, scipy.optimize, drivemetrics.lane.cli, drivemetrics.lane.evaluate_lanes2d"
    start_up = statistics.median(_timed([sys.executable, "-c", imports]) for _ in range(3))
    report["start_up_seconds"] = start_up
    print(f"start-up of a drivemetrics process (python, numpy, SciPy, OpenCV, the lane modules): {start_up:.1f} s")
    for name, (official_argv, command, gt, pred, frames) in runs.items():
        if not frames:  # --llamas-frames 0 / --curvelanes-frames 0: that benchmark is skipped
            continue
        times: dict[str, list[float]] = {"official": [], "reference": [], "default": []}
        for _ in range(args.repeat):
            times["official"].append(_timed(official_argv, cwd=work, label=f"{name} official"))
            for compat in ("reference", "default"):
                times[compat].append(
                    _timed(
                        _ours(command, gt, pred, work / f"{name}_{compat}.json", compat, args.workers),
                        label=f"{name} {compat}",
                    )
                )
        official = json.loads((work / f"{name}_official.json").read_text())
        ours = json.loads((work / f"{name}_reference.json").read_text())
        if name == "llamas":
            counts = all(ours["pooled"][k.lower()] == official[k] for k in ("TP", "FP", "FN"))
            values = all(abs(ours["pooled"][k.lower()] - official[k]) < 1e-12 for k in ("Precision", "Recall", "F1"))
            equal = counts and values
        else:
            equal = all(
                ours["per_score_threshold"][f"{float(t):g}"]["hit_num"] == v["hit_num"]
                and ours["per_score_threshold"][f"{float(t):g}"]["pr_num"] == v["pr_num"]
                and abs(ours["per_score_threshold"][f"{float(t):g}"]["f1"] - v["f1_measure"]) < 1e-12
                for t, v in official.items()
            )
        med = {k: statistics.median(v) for k, v in times.items()}
        cpu = {k: statistics.median(CPU_SECONDS[f"{name} {k}"]) for k in times}
        row = {
            "frames": frames,
            "seconds": med,
            "cpu_seconds": cpu,  # user + system of the command and its children
            "cpu_ratio_reference": cpu["official"] / cpu["reference"],
            "ratio_reference": med["official"] / med["reference"],
            "ratio_default": med["official"] / med["default"],
            "ratio_reference_after_start_up": med["official"] / max(med["reference"] - start_up, 1e-9),
            "reference_numbers_equal": equal,
            "load_after": os.getloadavg(),
        }
        report[name] = row
        print(
            f"{name:<11} {frames} frames: official {med['official']:.1f} s, reference {med['reference']:.1f} s "
            f"({row['ratio_reference']:.1f}x; {row['ratio_reference_after_start_up']:.1f}x after start-up), "
            f"default {med['default']:.1f} s ({row['ratio_default']:.1f}x), CPU seconds official "
            f"{cpu['official']:.1f} / reference {cpu['reference']:.1f} ({row['cpu_ratio_reference']:.1f}x), "
            f"numbers equal: {equal}, "
            f"load {os.getloadavg()[0]:.2f}"
        )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
