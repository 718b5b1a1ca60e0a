"""Benchmark: MapTR's official nuScenes map evaluator (as shipped, shapely 1.8, its own venv) vs the library.

Same run, same synthetic set: ``--samples`` frames (default 6,019, the nuScenes val size) in MapTR's native GT
and ``results`` JSON: 0-15 elements per frame of three classes (dividers, ring-shaped ped crossings, boundaries),
2-40 vertices, 20-point predictions derived from them (lateral shifts 0.1-2.5 m, noise, misses, extras, reversed
order, unique scores).

- official: ``projects/mmdet3d_plugin/datasets/map_utils/{mean_ap,tpfp,tpfp_chamfer}.py`` of hustvl/MapTR commit
  a6872d8 read from a git mirror (``--maptr-git``, e.g. ``/work/.mirror/hustvl+MapTR/repo``), run unchanged in a
  separate virtual environment (``--venv``: python with shapely 1.8.5.post1, numpy < 1.24, scipy) with tiny
  stand-ins for the mmcv / mmdet names it imports (Timer, dump, ProgressBar, print_log, bbox_overlaps,
  terminaltables.AsciiTable: none touches a number); the glue of ``_evaluate_single`` (3 thresholds, class means,
  mAP) is repeated in the runner. ``--workers`` processes (the code's ``Pool(nproc)``).
- library: ``evaluate_map_files(..., protocol="nuscenes-maptr")`` in this process, ``torch`` with ``--threads``
  threads (default 1), then again with torch's default thread count (the core count) when it differs; reading the
  JSON is included in both timings.

Prints both times, the ratio and the largest difference over all 13 values (3 classes x 3 thresholds, 3 class APs,
mAP). Run: ``python benchmarks/vectormap_ap.py --maptr-git /work/.mirror/hustvl+MapTR/repo --venv /tmp/maptr-venv``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MAPTR_FILES = ("mean_ap.py", "tpfp.py", "tpfp_chamfer.py")
MAPTR_DIR = "projects/mmdet3d_plugin/datasets/map_utils"
CLASSES = ("divider", "ped_crossing", "boundary")

STANDINS = {
    "mmcv/__init__.py": (
        "import pickle, time\n"
        "class Timer:\n"
        "    def __init__(self): self._t0 = self._last = time.time()\n"
        "    def since_start(self): return time.time() - self._t0\n"
        "    def since_last_check(self):\n"
        "        now = time.time(); d = now - self._last; self._last = now; return d\n"
        "def dump(obj, path, **kw):\n"
        "    pass\n"
        "def load(path, **kw):\n"
        "    import json\n"
        "    return json.load(open(path))\n"
        "class ProgressBar:\n"
        "    def __init__(self, *a, **k): pass\n"
        "    def update(self, *a, **k): pass\n"
    ),
    "mmcv/utils.py": "def print_log(msg, logger=None):\n    pass\n",
    "mmdet/__init__.py": "",
    "mmdet/core/__init__.py": "",
    "mmdet/core/evaluation/__init__.py": "",
    "mmdet/core/evaluation/bbox_overlaps.py": "def bbox_overlaps(*a, **k):\n    raise NotImplementedError\n",
    "terminaltables.py": (
        "class AsciiTable:\n"
        "    def __init__(self, data):\n"
        "        self.table = str(data)\n"
        "        self.inner_footing_row_border = False\n"
    ),
}

RUNNER = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
from map_utils.mean_ap import eval_map, format_res_gt_by_classes
import numpy as np
gt_path, pred_path, nproc = sys.argv[2], sys.argv[3], int(sys.argv[4])
classes = ("divider", "ped_crossing", "boundary")
start = time.perf_counter()
gen_results = json.load(open(pred_path))["results"]
annotations = json.load(open(gt_path))["GTs"]
cls_gens, cls_gts = format_res_gt_by_classes(pred_path, gen_results, annotations, cls_names=classes,
    num_pred_pts_per_instance=20, eval_use_same_gt_sample_num_flag=True,
    pc_range=[-15.0, -30.0, -2.0, 15.0, 30.0, 2.0], nproc=nproc)
thresholds = [0.5, 1.0, 1.5]
cls_aps = np.zeros((len(thresholds), len(classes)))
for i, thr in enumerate(thresholds):
    _, cls_ap = eval_map(gen_results, annotations, cls_gens, cls_gts, threshold=thr, cls_names=classes,
                         logger="silent", num_pred_pts_per_instance=20,
                         pc_range=[-15.0, -30.0, -2.0, 15.0, 30.0, 2.0], metric="chamfer", nproc=nproc)
    for j in range(len(classes)):
        cls_aps[i, j] = cls_ap[j]["ap"]
seconds = time.perf_counter() - start
detail = {"mAP": float(cls_aps.mean(0).mean())}
for j, name in enumerate(classes):
    detail[name + "/AP"] = float(cls_aps.mean(0)[j])
    for i, thr in enumerate(thresholds):
        detail[f"{name}/AP@{thr}"] = float(cls_aps[i, j])
print(json.dumps({"seconds": seconds, "detail": detail}))
"""


def make_synthetic(num_samples: int, seed: int = 0) -> tuple[dict, dict]:
    """MapTR-format GT and results for ``num_samples`` synthetic frames."""
    rng = np.random.default_rng(seed)
    gts, results = [], []
    score_pool = rng.permutation(10_000_000)[: num_samples * 40] / 10_000_000.0
    used = 0
    for index in range(num_samples):
        token = f"{seed:04d}{index:08d}"
        gt_vectors, pred_vectors = [], []
        for _ in range(int(rng.integers(0, 16))):
            label = int(rng.integers(0, 3))
            if label == 1:  # ped crossing: a closed ring
                centre = rng.uniform([-12, -27], [12, 27])
                half = rng.uniform([1.5, 2.0], [4.0, 6.0])
                angle = rng.uniform(0, np.pi)
                corners = np.array([[-1, -1], [1, -1], [1, 1], [-1, 1], [-1, -1]]) * half
                rot = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
                line = corners @ rot.T + centre
            else:
                count = int(rng.integers(2, 41))
                start = rng.uniform([-15, -30], [15, 30])
                heading = rng.uniform(0, 2 * np.pi)
                turn = np.cumsum(rng.normal(0, 0.05, count))
                steps = rng.uniform(0.5, 2.0, count)[:, None] * np.stack(
                    [np.cos(heading + turn), np.sin(heading + turn)], 1
                )
                line = start + np.concatenate([[[0, 0]], np.cumsum(steps[:-1], 0)])
            line = np.clip(line, [-15, -30], [15, 30]).round(4)
            gt_vectors.append({"pts": line.tolist(), "pts_num": len(line), "cls_name": CLASSES[label], "type": label})
            if rng.random() < 0.15:
                continue  # missed
            shift = rng.uniform(0.1, 2.5) * rng.choice([-1, 1])
            seg = np.diff(line, axis=0)
            lengths = np.concatenate([[0], np.cumsum(np.hypot(seg[:, 0], seg[:, 1]))])
            positions = np.linspace(0, lengths[-1], 20)
            pred = np.stack([np.interp(positions, lengths, line[:, 0]), np.interp(positions, lengths, line[:, 1])], 1)
            pred = pred + np.array([shift, 0.0]) + rng.normal(0, 0.1, pred.shape)
            if rng.random() < 0.3:
                pred = pred[::-1]
            pred = np.clip(pred, [-15, -30], [15, 30]).round(4)
            score = float(score_pool[used])
            used += 1
            pred_vectors.append(
                {
                    "pts": pred.tolist(),
                    "pts_num": 20,
                    "cls_name": CLASSES[label],
                    "type": label,
                    "confidence_level": round(score * 0.5 + 0.5 / (1 + abs(shift)), 6),
                }
            )
        for _ in range(int(rng.integers(0, 3))):  # extras
            label = int(rng.integers(0, 3))
            start = rng.uniform([-15, -30], [15, 30])
            pred = np.clip(start + np.cumsum(rng.normal(0, 1.0, (20, 2)), 0), [-15, -30], [15, 30]).round(4)
            score = float(score_pool[used])
            used += 1
            pred_vectors.append(
                {
                    "pts": pred.tolist(),
                    "pts_num": 20,
                    "cls_name": CLASSES[label],
                    "type": label,
                    "confidence_level": round(score * 0.3, 6),
                }
            )
        gts.append({"sample_token": token, "vectors": gt_vectors})
        results.append({"sample_token": token, "vectors": pred_vectors})
    return {"GTs": gts}, {"meta": {"output_format": "vector"}, "results": results}


def run_official(maptr_git: Path, venv_python: Path, work: Path, gt: Path, pred: Path, workers: int) -> dict:
    package = work / "official"
    (package / "map_utils").mkdir(parents=True)
    (package / "map_utils" / "__init__.py").write_text("")
    for name in MAPTR_FILES:
        source = subprocess.run(
            ["git", "--git-dir", str(maptr_git), "show", f"HEAD:{MAPTR_DIR}/{name}"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        (package / "map_utils" / name).write_text(source)
    for relative, text in STANDINS.items():
        target = package / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    (package / "runner.py").write_text(RUNNER)
    wall = time.perf_counter()
    done = subprocess.run(
        [str(venv_python), str(package / "runner.py"), str(package), str(gt), str(pred), str(workers)],
        check=True,
        capture_output=True,
        text=True,
    )
    out = json.loads(done.stdout.strip().splitlines()[-1])
    out["wall"] = time.perf_counter() - wall
    return out


def _default_threads() -> int:
    import torch

    return torch.get_num_threads()


DEFAULT_THREADS = _default_threads()


def run_library(gt: Path, pred: Path, workers: int, device: str) -> dict:
    import torch

    torch.set_num_threads(workers)
    from drivemetrics.vectormap.evaluate import evaluate_map_files

    start = time.perf_counter()
    report = evaluate_map_files(gt, pred, "nuscenes-maptr", device=device).report
    if device != "cpu":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    detail = {"mAP": report["mAP"]}
    for name, entry in report["classes"].items():
        detail[name + "/AP"] = entry["AP"]
        for thr in ("0.5", "1.0", "1.5"):
            detail[f"{name}/AP@{thr}"] = entry[f"AP@{thr}"]
    return {"seconds": seconds, "detail": detail}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=6019)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--maptr-git", type=Path, default=Path("/work/.mirror/hustvl+MapTR/repo"))
    parser.add_argument("--venv", type=Path, default=Path("/tmp/maptr-venv"))
    parser.add_argument("--threads", type=int, default=1, help="torch threads of the library run")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--skip-official", action="store_true", help="time the library only")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        gt_data, pred_data = make_synthetic(args.samples)
        gt, pred = work / "gt.json", work / "pred.json"
        gt.write_text(json.dumps(gt_data))
        pred.write_text(json.dumps(pred_data))
        count = sum(len(s["vectors"]) for s in gt_data["GTs"])
        print(
            f"{args.samples} samples, {count} GT elements, {sum(len(s['vectors']) for s in pred_data['results'])} preds"
        )
        print(f"load average before: {os.getloadavg()[0]:.2f}")
        library = run_library(gt, pred, args.threads, args.device)
        print(f"library ({args.device}, {args.threads} torch threads): {library['seconds']:.2f} s")
        default = None
        if args.device == "cpu" and args.threads != DEFAULT_THREADS:  # what a user gets without setting threads
            default = run_library(gt, pred, DEFAULT_THREADS, args.device)
            print(f"library ({args.device}, {DEFAULT_THREADS} torch threads, the default): {default['seconds']:.2f} s")
        print(f"load average after the library: {os.getloadavg()[0]:.2f}")
        if args.skip_official:
            print(json.dumps(library["detail"], indent=1))
            return
        official = run_official(args.maptr_git, args.venv / "bin" / "python", work, gt, pred, args.workers)
        print(f"official MapTR ({args.workers} processes): {official['seconds']:.2f} s (wall {official['wall']:.2f} s)")
        print(f"load average after the official run: {os.getloadavg()[0]:.2f}")
        diff = max(abs(official["detail"][k] - library["detail"][k]) for k in official["detail"])
        print(f"ratio: {official['seconds'] / library['seconds']:.1f}x; largest difference over 13 values: {diff:.3g}")
        if default is not None:
            diff = max(abs(official["detail"][k] - default["detail"][k]) for k in official["detail"])
            ratio = official["seconds"] / default["seconds"]
            print(f"ratio with {DEFAULT_THREADS} threads: {ratio:.1f}x (largest difference {diff:.3g})")
        print(f"mAP official {official['detail']['mAP']:.6f} library {library['detail']['mAP']:.6f}")


if __name__ == "__main__":
    main()
