"""Benchmark: the official map-AP evaluators (MapTR nuScenes, CVPR 2023 Argoverse 2) against ``drivemetrics map-eval``.

One synthetic set of ``--samples`` frames (default 6,019, the nuScenes val size): 0-15 elements per frame of three
classes (dividers, ring-shaped ped crossings, boundaries), 2-40 vertices, 20-point predictions derived from them
(lateral shifts 0.1-2.5 m, noise, misses, extras, reversed order, unique scores), written in each evaluator's native
JSON (for Argoverse 2 the axes are swapped into its 60 x 30 m frame and frames grouped 40 per segment; Chamfer
distances do not change). For each protocol (``--protocols``) the official code and the library run end to end,
each a fresh process (interpreter start-up, imports, reading both JSON files, matching, AP), official first,
alternating, ``--repeat`` times (the median is reported):

- ``nuscenes-maptr``: ``projects/mmdet3d_plugin/datasets/map_utils/{mean_ap,tpfp,tpfp_chamfer}.py`` of hustvl/MapTR
  commit a6872d8 (``--maptr-src``: a checkout or a git directory holding that commit), run unchanged; the glue of
  ``CustomNuScenesLocalMapDataset._evaluate_single`` (settings of ``maptr_tiny_r50_24e.py``: 20 prediction points,
  ``eval_use_same_gt_sample_num_flag``, thresholds 0.5 / 1.0 / 1.5, class means, mAP) is repeated in the runner;
  ``--workers`` processes (its ``Pool(nproc)``).
- ``av2-cvpr23``: ``src/datasets/evaluation/{vector_eval,AP,distance}.py`` of
  Tsinghua-MARS-Lab/Online-HD-Map-Construction-CVPR2023 commit 775b203 (``--cvpr23-src``), run unchanged:
  ``VectorEvaluate(gt_file, n_workers=--workers).evaluate(submission_file)`` (its default is 16 workers; the
  per-threshold APs are read by wrapping its ``average_precision``, which changes no number).

Both run in one virtual environment (``--official-python``; ``--setup VENV`` creates one with numpy 1.23.4,
scipy 1.10.1, shapely 1.8.5.post1 and prettytable, the versions the fixtures' expected values came from: MapTR's
code needs shapely < 2), with tiny stand-ins for the mmcv / mmdet / mmdet3d names the files import (Timer, load,
dump, ProgressBar, Config, print_log, bbox_overlaps, build_dataset, build_dataloader, terminaltables.AsciiTable:
none touches a number). The library: ``python -m drivemetrics map-eval --protocol P --json ...`` with its default
workers (where orjson, the ``fast`` extra, is importable, once more with ``DRIVEMETRICS_FAST_JSON=0``: the
standard library's parser); then ``evaluate_map_files`` in this process (torch already imported, ``--threads``
torch threads), the in-memory time.

Without ``--official-python`` (or ``--setup``) the library is timed alone. Printed per protocol: official and
library end-to-end times, the ratio, whether all 13 numbers agree (3 classes x 3 thresholds, 3 class APs, mAP; the
largest difference), the library's in-process time, and the load average. ``--json-out FILE`` saves the lines.

Run ``python benchmarks/vectormap_ap.py --setup VENV --maptr-src MAPTR --cvpr23-src CVPR23`` (later runs:
``--official-python VENV/bin/python`` instead of ``--setup``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

OFFICIAL_PACKAGES = ["numpy==1.23.4", "scipy==1.10.1", "shapely==1.8.5.post1", "prettytable"]
MAPTR_COMMIT = "a6872d8d9670bde17b4b01560f1221f88b443d55"
MAPTR_DIR = "projects/mmdet3d_plugin/datasets/map_utils"
MAPTR_FILES = ("mean_ap.py", "tpfp.py", "tpfp_chamfer.py")
CVPR23_COMMIT = "775b203aeab56be4248fb5495be452fa404bd29d"
CVPR23_DIR = "src/datasets/evaluation"
CVPR23_FILES = ("__init__.py", "vector_eval.py", "AP.py", "distance.py")
CLASSES = ("divider", "ped_crossing", "boundary")  # MapTR's ids
AV2_LABEL = {0: 1, 1: 0, 2: 2}  # MapTR id -> challenge id (ped_crossing, divider, boundary)
THRESHOLDS = ("0.5", "1.0", "1.5")

STANDINS = {
    "mmcv/__init__.py": (
        "import json, time\n"
        "class Timer:\n"
        "    def __init__(self): self._t0 = self._last = time.time()\n"
        "    def since_start(self): return time.time() - self._t0\n"
        "    def since_last_check(self):\n"
        "        now = time.time(); d = now - self._last; self._last = now; return d\n"
        "def dump(obj, path, **kw):\n"
        "    pass\n"
        "def load(path, **kw):\n"
        "    with open(path) as f:\n"
        "        return json.load(f)\n"
        "class ProgressBar:\n"
        "    def __init__(self, *a, **k): pass\n"
        "    def update(self, *a, **k): pass\n"
        "class Config(dict):\n"
        "    pass\n"
    ),
    "mmcv/utils.py": "def print_log(msg, logger=None):\n    pass\n",
    "mmdet/__init__.py": "",
    "mmdet/core/__init__.py": "",
    "mmdet/core/evaluation/__init__.py": "",
    "mmdet/core/evaluation/bbox_overlaps.py": "def bbox_overlaps(*a, **k):\n    raise NotImplementedError\n",
    "mmdet3d/__init__.py": "",
    "mmdet3d/datasets/__init__.py": (
        "def build_dataset(*a, **k):\n    raise NotImplementedError\n"
        "def build_dataloader(*a, **k):\n    raise NotImplementedError\n"
    ),
    "terminaltables.py": (
        "class AsciiTable:\n"
        "    def __init__(self, data):\n"
        "        self.table = str(data)\n"
        "        self.inner_footing_row_border = False\n"
    ),
}

MAPTR_RUNNER = r"""
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

CVPR23_RUNNER = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
from evaluation import vector_eval
gt_path, pred_path, nproc = sys.argv[2], sys.argv[3], int(sys.argv[4])
seen = []
official_ap = vector_eval.average_precision
def recorded(recalls, precisions, mode="area"):  # the per-threshold values the evaluator only prints
    value = official_ap(recalls, precisions, mode)
    seen.append(float(value))
    return value
vector_eval.average_precision = recorded
start = time.perf_counter()
evaluator = vector_eval.VectorEvaluate(gt_path, n_workers=nproc)
returned = evaluator.evaluate(pred_path)
seconds = time.perf_counter() - start
thresholds = vector_eval.THRESHOLDS
detail = {}
for k, (name, label) in enumerate(evaluator.cat2id.items()):
    for i, thr in enumerate(thresholds):
        detail[f"{name}/AP@{thr}"] = seen[k * len(thresholds) + i]
    detail[name + "/AP"] = float(returned[name])
detail["mAP"] = sum(float(v) for v in returned.values()) / len(returned)
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
    # rounding to 6 decimals can tie two scores, and the evaluators order ties differently (numpy's unstable sort,
    # the library by content): the k-th repeat of a value is raised by k * 1e-10, so that every score is unique
    seen: dict[float, int] = {}
    for sample in results:
        for vector in sample["vectors"]:
            value = vector["confidence_level"]
            repeats = seen.get(value, 0)
            seen[value] = repeats + 1
            vector["confidence_level"] = value + repeats * 1e-10
    return {"GTs": gts}, {"meta": {"output_format": "vector"}, "results": results}


def to_av2(gt_data: dict, pred_data: dict, frames_per_segment: int = 40) -> tuple[dict, dict]:
    """The same frames in the CVPR 2023 challenge's GT and submission formats (axes swapped: x forward)."""
    gt: dict[str, list] = {}
    for k, sample in enumerate(gt_data["GTs"]):
        annotation: dict[str, list] = {name: [] for name in ("ped_crossing", "divider", "boundary")}
        for vector in sample["vectors"]:
            annotation[vector["cls_name"]].append([[y, x, 0.0, 1] for x, y in vector["pts"]])
        segment = f"segment{k // frames_per_segment:05d}"
        token = sample["sample_token"]
        gt.setdefault(segment, []).append({"segment_id": segment, "timestamp": token, "annotation": annotation})
    results = {}
    for sample in pred_data["results"]:
        vectors = sample["vectors"]
        results[sample["sample_token"]] = {
            "vectors": [[[y, x] for x, y in v["pts"]] for v in vectors],
            "scores": [v["confidence_level"] for v in vectors],
            "labels": [AV2_LABEL[v["type"]] for v in vectors],
        }
    return gt, {"meta": {"output_format": "vector"}, "results": results}


def setup_official_venv(venv: Path) -> None:
    """Create the official evaluators' virtual environment (needs the package index)."""
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", *OFFICIAL_PACKAGES], check=True)


def _official_file(source: Path, commit: str, path: str) -> str:
    """``path`` of the official code: from a checkout folder, or at ``commit`` from a git directory."""
    if (source / path).is_file():
        return (source / path).read_text()
    done = subprocess.run(["git", "--git-dir", str(source), "show", f"{commit}:{path}"], capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"{source}: neither a checkout holding {path} nor a git directory with commit {commit}")
    return done.stdout


def prepare_official(protocol: str, source: Path, work: Path) -> tuple[Path, Path]:
    """The official files, the stand-ins and the runner in ``work``: (package folder, runner script)."""
    package = work / f"official-{protocol}"
    if protocol == "nuscenes-maptr":
        folder, files, commit, runner = package / "map_utils", (MAPTR_DIR, MAPTR_FILES), MAPTR_COMMIT, MAPTR_RUNNER
    else:
        folder, files, commit, runner = package / "evaluation", (CVPR23_DIR, CVPR23_FILES), CVPR23_COMMIT, CVPR23_RUNNER
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text("")
    for name in files[1]:
        (folder / name).write_text(_official_file(source, commit, f"{files[0]}/{name}"))
    for relative, text in STANDINS.items():
        target = package / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    (package / "runner.py").write_text(runner)
    return package, package / "runner.py"


def run_official(python: Path, package: Path, runner: Path, gt: Path, pred: Path, workers: int) -> tuple[float, dict]:
    """One official process: (wall seconds of the whole process, its JSON line)."""
    env = {"OMP_NUM_THREADS": "1", "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    start = time.perf_counter()
    done = subprocess.run(
        [str(python), str(runner), str(package), str(gt), str(pred), str(workers)],
        capture_output=True,
        text=True,
        env=env,
    )
    wall = time.perf_counter() - start
    if done.returncode:
        raise SystemExit(f"the official evaluator failed (exit {done.returncode}): {done.stderr[-3000:]}")
    return wall, json.loads(done.stdout.strip().splitlines()[-1])


def _flatten(report: dict) -> dict[str, float]:
    detail = {"mAP": float(report["mAP"])}
    for name, entry in report["classes"].items():
        detail[name + "/AP"] = float(entry["AP"])
        for thr in THRESHOLDS:
            detail[f"{name}/AP@{thr}"] = float(entry[f"AP@{thr}"])
    return detail


def orjson_installed() -> bool:
    """Whether the optional ``orjson`` parser (the ``fast`` extra) is importable here."""
    import importlib.util

    return importlib.util.find_spec("orjson") is not None


def run_library_end_to_end(
    protocol: str, gt: Path, pred: Path, out: Path, device: str, fast_json: bool = True, root: Path = ROOT
) -> tuple[float, dict]:
    """One ``drivemetrics map-eval`` process with its default workers: (wall seconds, the 13 values).
    ``fast_json=False`` makes it parse with the standard library's ``json`` even where orjson is installed;
    ``root``: the checkout whose library runs (``--before``: an older one)."""
    path = os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH", "")]))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": path, "DRIVEMETRICS_FAST_JSON": str(int(fast_json))}
    command = [sys.executable, "-m", "drivemetrics", "map-eval", "--protocol", protocol, "--gt", str(gt)]
    command += ["--pred", str(pred), "--json", str(out), "--no-progress", "--device", device]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    if done.returncode:
        raise SystemExit(f"drivemetrics failed (exit {done.returncode}): {done.stderr[-2000:]}")
    return wall, _flatten(json.loads(out.read_text()))


def run_library_in_process(protocol: str, gt: Path, pred: Path, threads: int, device: str) -> tuple[float, dict]:
    """``evaluate_map_files`` in this process (imports done before the clock starts): (seconds, the 13 values)."""
    sys.path.insert(0, str(ROOT))
    import torch

    from drivemetrics.vectormap.evaluate import evaluate_map_files

    torch.set_num_threads(threads)
    start = time.perf_counter()
    report = evaluate_map_files(gt, pred, protocol, device=device).report  # type: ignore[arg-type]
    if device != "cpu":
        torch.cuda.synchronize()
    return time.perf_counter() - start, _flatten(report)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=6019)
    parser.add_argument("--protocols", nargs="+", default=["nuscenes-maptr", "av2-cvpr23"])
    parser.add_argument("--maptr-src", type=Path, help="MapTR checkout or git directory (commit a6872d8)")
    parser.add_argument("--cvpr23-src", type=Path, help="CVPR 2023 challenge checkout or git directory (775b203)")
    parser.add_argument("--official-python", type=Path, help="python of the official evaluators' environment")
    parser.add_argument("--setup", type=Path, metavar="VENV", help="create the official environment first")
    parser.add_argument("--workers", type=int, default=2, help="processes of the official evaluators")
    parser.add_argument("--repeat", type=int, default=2, help="end-to-end runs of each side, alternating (median)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads of the in-process library run")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--json-out", type=Path, help="write the results here (JSON)")
    parser.add_argument(
        "--before",
        type=Path,
        metavar="CHECKOUT",
        help="an older checkout of the library, run end to end too (after the official code, alternating with this "
        "checkout's run): old against new in the same run, all 13 numbers compared",
    )
    args = parser.parse_args()
    if args.setup:
        setup_official_venv(args.setup)
        args.official_python = args.official_python or args.setup / "bin" / "python"
    sources = {"nuscenes-maptr": args.maptr_src, "av2-cvpr23": args.cvpr23_src}
    official = args.official_python is not None
    for protocol in args.protocols:
        if protocol not in sources:
            parser.error(f"--protocols: {protocol!r} is not one of {tuple(sources)}")
        if official and sources[protocol] is None:
            parser.error(f"{protocol} needs --{'maptr' if protocol == 'nuscenes-maptr' else 'cvpr23'}-src")
    machine = f"{os.cpu_count()} CPUs, {platform.processor() or platform.machine()}"
    with_orjson = orjson_installed()
    print(f"{machine}, {time.strftime('%Y-%m-%d %H:%M %Z')}, {args.samples} samples, orjson installed: {with_orjson}")
    gt_maptr, pred_maptr = make_synthetic(args.samples)
    lines, records = [], []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        files = {"nuscenes-maptr": (work / "maptr_gt.json", work / "maptr_pred.json")}
        files["av2-cvpr23"] = (work / "av2_gt.json", work / "av2_pred.json")
        for (gt_file, pred_file), (gt_data, pred_data) in zip(
            files.values(), [(gt_maptr, pred_maptr), to_av2(gt_maptr, pred_maptr)], strict=True
        ):
            gt_file.write_text(json.dumps(gt_data))
            pred_file.write_text(json.dumps(pred_data))
        count_gt = sum(len(s["vectors"]) for s in gt_maptr["GTs"])
        count_pred = sum(len(s["vectors"]) for s in pred_maptr["results"])
        print(f"{count_gt} GT lines, {count_pred} predictions")
        for protocol in args.protocols:
            gt_file, pred_file = files[protocol]
            if official:
                package, runner = prepare_official(protocol, sources[protocol], work)
            official_walls, official_inner, library_walls, loads = [], [], [], [os.getloadavg()[0]]
            stdlib_walls: list[float] = []
            before_walls: list[float] = []
            official_detail: dict = {}
            library_detail: dict = {}
            before_detail: dict = {}
            for _ in range(args.repeat):  # official first, alternating
                if official:
                    wall, out = run_official(args.official_python, package, runner, gt_file, pred_file, args.workers)
                    official_walls.append(wall)
                    official_inner.append(out["seconds"])
                    official_detail = out["detail"]
                    loads.append(os.getloadavg()[0])
                sides = [(ROOT, library_walls), (args.before, before_walls)] if args.before else [(ROOT, library_walls)]
                for root, walls in sides if len(library_walls) % 2 == 0 else sides[::-1]:  # new first, then old first
                    wall, detail = run_library_end_to_end(
                        protocol, gt_file, pred_file, work / "out.json", args.device, root=root
                    )
                    walls.append(wall)
                    if root == ROOT:
                        library_detail = detail
                    else:
                        before_detail = detail
                if with_orjson:  # the same without orjson (standard-library JSON), as without the fast extra
                    wall, _ = run_library_end_to_end(
                        protocol, gt_file, pred_file, work / "out.json", args.device, fast_json=False
                    )
                    stdlib_walls.append(wall)
                loads.append(os.getloadavg()[0])
            in_process, in_detail = run_library_in_process(protocol, gt_file, pred_file, args.threads, args.device)
            loads.append(os.getloadavg()[0])
            library_s = statistics.median(library_walls)
            record = {
                "protocol": protocol,
                "samples": args.samples,
                "library_end_to_end_s": library_walls,
                "library_in_process_s": in_process,
                "library_end_to_end_stdlib_json_s": stdlib_walls,
                "orjson": with_orjson,
                "load": [round(x, 2) for x in loads],
                "library": library_detail,
            }
            line = f"{protocol}: library {library_s:.2f} s end to end ({in_process:.2f} s in process)"
            before_text = ""
            if args.before:
                before_s = statistics.median(before_walls)
                same = before_detail == library_detail
                record.update(before=str(args.before), before_end_to_end_s=before_walls, before_numbers_equal=same)
                record.update(before_detail=before_detail, new_over_before=library_s / before_s)
                before_text = (
                    f"; before ({args.before}) {before_s:.2f} s ({min(before_walls):.2f}-{max(before_walls):.2f} s), "
                    f"new / before = {library_s / before_s:.3f}, numbers {'equal' if same else 'DIFFER'}"
                )
            if official:
                official_s = statistics.median(official_walls)
                diff = max(
                    max(abs(official_detail[k] - d[k]) for k in official_detail) for d in (library_detail, in_detail)
                )
                agree = "agree" if diff <= 1e-6 else "DIFFER"
                record.update(
                    official_end_to_end_s=official_walls, official_inner_s=official_inner, official=official_detail
                )
                record.update(ratio=official_s / library_s, largest_difference=diff)
                line = (
                    f"{protocol}: official {official_s:.2f} s, library {library_s:.2f} s end to end = "
                    f"{official_s / library_s:.1f}x (official {min(official_walls):.2f}-{max(official_walls):.2f} s, "
                    f"library {min(library_walls):.2f}-{max(library_walls):.2f} s; in process {in_process:.2f} s); "
                    f"numbers {agree} (largest difference {diff:.1e}, mAP {official_detail['mAP']:.6f})"
                )
                if stdlib_walls:
                    stdlib_s = statistics.median(stdlib_walls)
                    line += f"; without orjson {stdlib_s:.2f} s = {official_s / stdlib_s:.1f}x"
                    record["ratio_stdlib_json"] = official_s / stdlib_s
            line += before_text + f"; load {min(loads):.1f}-{max(loads):.1f}"
            print(line, flush=True)
            lines.append(line)
            records.append(record)
    if args.json_out:
        meta = {"machine": machine, "date": time.strftime("%Y-%m-%d %H:%M %Z"), "argv": sys.argv[1:]}
        args.json_out.write_text(json.dumps({"meta": meta, "lines": lines, "runs": records}, indent=1) + "\n")


if __name__ == "__main__":
    main()
