"""Benchmark: StreamMapNet's ``vector_eval`` and MapTracker's C-mAP tools against ``drivemetrics map-eval``.

Inputs: the visible fixture cases (``--fixtures``: the ``streammapnet`` and ``maptracker_cmap`` folders of the shared
fixtures, read in place, never copied into the repository), one perception range (``--roi``):

- StreamMapNet: the GT of ``gts.json`` written as the GT cache pickle its evaluator writes
  (``tmp_gts_nusc_{W}x{H}_newsplit.pkl``, which it then loads, as on its second run), repeated ``--copies`` times
  with new tokens, and the submission. Official: ``plugin/datasets/evaluation/{vector_eval,AP,distance}.py`` of
  StreamMapNet 4c7aaf4 (``--streammapnet-src``: checkout or git directory), run unchanged,
  ``VectorEvaluate(cfg, n_workers=--workers).evaluate(submission)``; the per-threshold APs read by wrapping its
  ``average_precision``. Library: ``python -m drivemetrics map-eval --protocol streammapnet --roi R --gt CACHE.pkl``.
- MapTracker: the first ``--scenes`` scenes of ``samples.json`` and the submission. Official: ``tools/tracking/
  {prepare_gt_tracks,prepare_pred_tracks,calculate_cmap}.py`` and ``cmap_utils/*`` and
  ``plugin/datasets/pipelines/vectorize.py`` of MapTracker ee8321f (``--maptracker-src``), run unchanged in the
  documented order in a fresh folder (GT tracks, prediction tracks, ``calculate_cmap.py --consist 1`` and
  ``--consist 0``); a stand-in dataset feeds the GT through the official ``VectorizeMap`` with the configs'
  parameters. Library: ``python -m drivemetrics map-eval --protocol maptracker --roi R --compat reference``
  (C-mAP and plain mAP in one run).

Official code runs in its own virtual environment (``--setup VENV`` creates it: numpy 1.26.4, scipy 1.11.4,
shapely 1.8.5.post1, OpenCV 4.10.0.84, Pillow 10.4.0, imageio, prettytable, the fixtures' versions; torch is taken
from this interpreter's environment through a ``.pth`` line placed after the venv's own packages: the CPU build
the fixtures used), with tiny stand-ins for the mmcv / mmdet / mmdet3d names the files import (none computes a
number). Each side runs end to end in fresh processes, official first; printed: both times, the ratio, whether
every AP agrees (largest difference), the load average. ``--json-out FILE`` saves the result.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import re
import site
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = [
    "numpy==1.26.4",
    "scipy==1.11.4",
    "shapely==1.8.5.post1",
    "opencv-python-headless==4.10.0.84",
    "pillow==10.4.0",
    "imageio==2.34.2",
    "prettytable==3.10.0",
]
SMN_COMMIT = "4c7aaf42116461ad8a8b0f5cdc486903a7f15bb8"
SMN_FILES = {
    "evaluation/__init__.py": "plugin/datasets/evaluation/__init__.py",
    "evaluation/vector_eval.py": "plugin/datasets/evaluation/vector_eval.py",
    "evaluation/AP.py": "plugin/datasets/evaluation/AP.py",
    "evaluation/distance.py": "plugin/datasets/evaluation/distance.py",
}
MT_COMMIT = "ee8321fa5dac801463e9be0dd62e37b6aea36c27"
MT_FILES = {
    "tools/tracking/prepare_gt_tracks.py": "tools/tracking/prepare_gt_tracks.py",
    "tools/tracking/prepare_pred_tracks.py": "tools/tracking/prepare_pred_tracks.py",
    "tools/tracking/calculate_cmap.py": "tools/tracking/calculate_cmap.py",
    "tools/tracking/cmap_utils/__init__.py": "tools/tracking/cmap_utils/__init__.py",
    "tools/tracking/cmap_utils/data_utils.py": "tools/tracking/cmap_utils/data_utils.py",
    "tools/tracking/cmap_utils/match_utils.py": "tools/tracking/cmap_utils/match_utils.py",
    "tools/tracking/cmap_utils/utils.py": "tools/tracking/cmap_utils/utils.py",
    "plugin/datasets/pipelines/vectorize.py": "plugin/datasets/pipelines/vectorize.py",
}
CLASSES = ("ped_crossing", "divider", "boundary")
THRESHOLDS = {"60x30": (0.5, 1.0, 1.5), "100x50": (1.0, 1.5, 2.0)}

#: stand-ins for the names the official files import (no number is computed here)
STANDINS = {
    "mmcv/__init__.py": r"""
import json, pickle, runpy
def load(path, **kw):
    if str(path).endswith(".pkl"):
        with open(path, "rb") as f:
            return pickle.load(f)
    with open(path) as f:
        return json.load(f)
def dump(obj, path, **kw):
    with open(path, "wb") as f:
        pickle.dump(obj, f)
class ProgressBar:
    def __init__(self, *a, **k): pass
    def update(self, *a, **k): pass
class Config(dict):
    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None
    def __setattr__(self, name, value):
        self[name] = value
    @staticmethod
    def wrap(value):
        if isinstance(value, dict):
            return Config({k: Config.wrap(v) for k, v in value.items()})
        return value
    @staticmethod
    def fromfile(path):
        return Config.wrap({k: v for k, v in runpy.run_path(path).items() if not k.startswith("_")})
""",
    "mmcv/utils.py": "def print_log(msg, logger=None):\n    print(msg)\n",
    "IPython/__init__.py": "def embed(*a, **k): pass\n",
    "mmdet/__init__.py": "",
    "mmdet/datasets/__init__.py": "",
    "mmdet/datasets/builder.py": r"""
class _Registry:
    def register_module(self, *a, **k):
        return lambda cls: cls
PIPELINES = _Registry()
""",
    "mmdet3d/__init__.py": "",
    "mmdet3d/datasets/__init__.py": r'''
import json
class DataContainer:
    def __init__(self, data):
        self.data = data
class StreamMapNetGT:
    """StreamMapNet's dataset as its evaluator reads it: names only (its GT comes from the cache pickle)."""
    def __init__(self, cfg):
        self.cat2id = {"ped_crossing": 0, "divider": 1, "boundary": 2}
        self.ann_file = cfg["ann_file"]
        self.roi_size = tuple(cfg["roi_size"])
class MapTrackerSamples:
    """The frames of samples.json through the official VectorizeMap with the config's parameters."""
    def __init__(self, cfg):
        from plugin.datasets.pipelines.vectorize import VectorizeMap
        self.ann_file = cfg["ann_file"]
        self.roi_size = tuple(cfg["roi_size"])
        self.cat2id = {"ped_crossing": 0, "divider": 1, "boundary": 2}
        self.renderer = None
        rows = json.load(open(cfg["samples_json"]))["samples"] if "val" in self.ann_file else []
        self.samples = rows
        self.pipeline = VectorizeMap(roi_size=self.roi_size, **cfg["vectorize"])
    def __len__(self):
        return len(self.samples)
    def __getitem__(self, idx):
        from shapely.geometry import LineString
        s = self.samples[idx]
        geoms = {label: [LineString(line) for line in s["map_geoms"].get(str(label), [])] for label in (0, 1, 2)}
        out = self.pipeline({"map_geoms": geoms})
        meta = {"token": s["token"], "scene_name": s["scene_name"], "local_idx": s["local_idx"],
                "ego2global_translation": s["ego2global_translation"],
                "ego2global_rotation": s["ego2global_rotation"]}
        return {"img_metas": DataContainer(meta), "vectors": DataContainer(out["vectors"])}
def build_dataset(cfg):
    return MapTrackerSamples(cfg) if "samples_json" in cfg else StreamMapNetGT(cfg)
class _Loader:
    def __init__(self, dataset):
        self.dataset = dataset
    def __len__(self):
        return len(self.dataset)
    def __iter__(self):
        for idx in range(len(self.dataset)):
            item = self.dataset[idx]
            yield {"img_metas": DataContainer([[item["img_metas"].data]]),
                   "vectors": DataContainer([[item["vectors"].data]])}
def build_dataloader(dataset, *a, **k):
    return _Loader(dataset)
''',
    "plugin/__init__.py": "",
    "plugin/datasets/__init__.py": "",
    "plugin/datasets/pipelines/__init__.py": "",
}

SMN_RUNNER = r"""
import json, sys, time
from evaluation import vector_eval
roi, submission, workers = sys.argv[1], sys.argv[2], int(sys.argv[3])
seen = []
official_ap = vector_eval.average_precision
def recorded(recalls, precisions, mode="area"):  # the per-threshold values the evaluator only prints
    value = official_ap(recalls, precisions, mode)
    seen.append(float(value))
    return value
vector_eval.average_precision = recorded
start = time.perf_counter()
size = tuple(int(v) for v in roi.split("x"))
evaluator = vector_eval.VectorEvaluate({"ann_file": "nuscenes_map_infos_val_newsplit.pkl", "roi_size": size},
                                       n_workers=workers)
returned = evaluator.evaluate(submission)
seconds = time.perf_counter() - start
detail = {}
for k, name in enumerate(["ped_crossing", "divider", "boundary"]):
    for i, thr in enumerate(evaluator.thresholds):
        detail[f"{name}/AP@{thr}"] = seen[k * 3 + i]
    detail[name + "/AP"] = float(returned[name])
detail["mAP"] = sum(float(v) for v in returned.values()) / 3
print(json.dumps({"seconds": seconds, "detail": detail}))
"""

MT_CONFIG = """
roi_size = {roi}
pc_range = [{x0}, {y0}, -3.0, {x1}, {y1}, 5.0]
canvas_size = (200, 100)
thickness = 3
plugin = False
match_config = dict(ann_file="{ann}", roi_size=roi_size, samples_json="{samples}",
                    vectorize=dict(normalize=True, coords_dim=2, simplify=False, sample_num=20))
eval_config = dict(ann_file="{ann}", roi_size=roi_size, samples_json="{samples}",
                   vectorize=dict(normalize=False, coords_dim=2, simplify=True))
"""


def setup_venv(venv: Path) -> Path:
    """A virtual environment with the official tools' packages; torch from this environment (a .pth line after
    the venv's own site-packages)."""
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.base_prefix + "/bin/python3", "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", *PACKAGES], check=True)
    out = subprocess.run(
        [str(python), "-c", "import site; print(site.getsitepackages()[0])"], capture_output=True, text=True, check=True
    )
    torch_site = next(p for p in site.getsitepackages() if (Path(p) / "torch").is_dir())
    (Path(out.stdout.strip()) / "zz_torch_from_host.pth").write_text(torch_site + "\n")
    return python


def official_file(source: Path, commit: str, path: str) -> str:
    if (source / path).is_file():
        return (source / path).read_text()
    done = subprocess.run(["git", "--git-dir", str(source), "show", f"{commit}:{path}"], capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"{source}: neither a checkout holding {path} nor a git directory with commit {commit}")
    return done.stdout


def write_tree(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def load_average() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def library(argv: list[str], cwd: Path) -> float:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "drivemetrics", "map-eval", *argv, "--no-progress"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - start
    if done.returncode:
        raise SystemExit(done.stderr)
    return seconds


def bench_streammapnet(args: argparse.Namespace, python: Path, work: Path) -> dict:
    case = args.fixtures / "streammapnet" / "cases" / args.roi
    gts = json.loads((case / "gts.json").read_text())["gts"]
    submission = json.loads((case / "submission_vector.json").read_text())
    cache, results = {}, {}
    for copy in range(args.copies):
        for token, by_label in gts.items():
            cache[f"{token}-{copy}"] = {
                int(k): [np.array(v, dtype=np.float64) for v in lines] for k, lines in by_label.items()
            }
        for token, entry in submission["results"].items():
            results[f"{token}-{copy}"] = entry
    run = work / "streammapnet"
    write_tree(run, STANDINS)
    write_tree(run, {k: official_file(args.streammapnet_src, SMN_COMMIT, v) for k, v in SMN_FILES.items()})
    (run / "runner.py").write_text(SMN_RUNNER)
    cache_path = run / f"tmp_gts_nusc_{args.roi}_newsplit.pkl"
    with open(cache_path, "wb") as f:
        pickle.dump(cache, f)
    (run / "submission_vector.json").write_text(json.dumps({"meta": submission["meta"], "results": results}))
    load_before = load_average()
    start = time.perf_counter()
    done = subprocess.run(
        [str(python), "runner.py", args.roi, "submission_vector.json", str(args.workers)],
        cwd=run,
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(run)),
    )
    official_s = time.perf_counter() - start
    if done.returncode:
        raise SystemExit(done.stderr[-3000:])
    official = json.loads(done.stdout.strip().splitlines()[-1])["detail"]
    out = run / "library.json"
    library_s = library(
        [
            "--protocol",
            "streammapnet",
            "--roi",
            args.roi,
            "--gt",
            str(cache_path),
            "--pred",
            str(run / "submission_vector.json"),
            "--json",
            str(out),
            "--workers",
            str(args.workers),
        ],
        run,
    )
    got = json.loads(out.read_text())
    mine = {"mAP": got["mAP"]}
    for name, entry in got["per_class"].items():
        mine[f"{name}/AP"] = entry["AP"]
        for thr in THRESHOLDS[args.roi]:
            mine[f"{name}/AP@{thr}"] = entry[f"AP@{thr}"]
    worst = max(abs(mine[k] - official[k]) for k in official)
    return {
        "tool": "streammapnet",
        "roi": args.roi,
        "samples": len(cache),
        "official_s": official_s,
        "library_s": library_s,
        "ratio": official_s / library_s,
        "values": len(official),
        "largest_difference": worst,
        "load_before": load_before,
        "load_after": load_average(),
    }


def bench_maptracker(args: argparse.Namespace, python: Path, work: Path) -> dict:
    case = args.fixtures / "maptracker_cmap" / "cases" / args.roi
    data = json.loads((case / "samples.json").read_text())
    scenes = sorted({s["scene_name"] for s in data["samples"]})[: args.scenes]
    samples = [s for s in data["samples"] if s["scene_name"] in scenes]
    submission = json.loads((case / "submission_vector.json").read_text())
    tokens = {s["token"] for s in samples}
    results = {t: e for t, e in submission["results"].items() if t in tokens}
    run = work / "maptracker"
    write_tree(run, STANDINS)
    write_tree(run, {k: official_file(args.maptracker_src, MT_COMMIT, v) for k, v in MT_FILES.items()})
    (run / "work_dirs" / "case").mkdir(parents=True)
    (run / "work_dirs" / "data").mkdir(parents=True)
    (run / "samples.json").write_text(json.dumps({**data, "samples": samples}))
    (run / "work_dirs" / "case" / "submission_vector.json").write_text(json.dumps({**submission, "results": results}))
    width, height = (int(v) for v in args.roi.split("x"))
    (run / "cfg.py").write_text(
        MT_CONFIG.format(
            roi=(width, height),
            x0=-width / 2,
            y0=-height / 2,
            x1=width / 2,
            y1=height / 2,
            ann=str(run / "work_dirs" / "data" / "nuscenes_map_infos_val_newsplit.pkl"),
            samples=str(run / "samples.json"),
        )
    )
    env = dict(os.environ, PYTHONPATH=str(run))
    commands = [
        ["tools/tracking/prepare_gt_tracks.py", "cfg.py"],
        [
            "tools/tracking/prepare_pred_tracks.py",
            "cfg.py",
            "--result_path",
            "work_dirs/case/submission_vector.json",
            "--cons_frames",
            "5",
        ],
        [
            "tools/tracking/calculate_cmap.py",
            "cfg.py",
            "--result_path",
            "work_dirs/case/pos_predictions_5.pkl",
            "--consist",
            "1",
        ],
        [
            "tools/tracking/calculate_cmap.py",
            "cfg.py",
            "--result_path",
            "work_dirs/case/pos_predictions_5.pkl",
            "--consist",
            "0",
        ],
    ]
    load_before = load_average()
    printed, steps = [], []
    start = time.perf_counter()
    for command in commands:
        step = time.perf_counter()
        done = subprocess.run([str(python), *command], cwd=run, env=env, capture_output=True, text=True)
        steps.append(time.perf_counter() - step)
        if done.returncode:
            raise SystemExit(f"{command[0]}: {done.stderr[-3000:]}")
        printed.append(done.stdout)
    official_s = time.perf_counter() - start
    official = {}
    for mode, text in (("cmap", printed[2]), ("plain", printed[3])):
        official[f"{mode}/mAP"] = float(re.search(r"mean AP\s+([0-9.eE-]+)", text).group(1))
        means = eval(re.search(r"Category mean AP (\{.*\})", text).group(1), {"np": np})
        for name in CLASSES:
            official[f"{mode}/{name}/AP"] = float(means[name])
    out = run / "library.json"
    library_s = library(
        [
            "--protocol",
            "maptracker",
            "--roi",
            args.roi,
            "--compat",
            "reference",
            "--gt",
            str(run / "samples.json"),
            "--pred",
            str(run / "work_dirs" / "case" / "submission_vector.json"),
            "--json",
            str(out),
            "--workers",
            "1",
        ],
        run,
    )
    got = json.loads(out.read_text())
    mine = {}
    for mode in ("cmap", "plain"):
        mine[f"{mode}/mAP"] = got[mode]["mAP"]
        for name in CLASSES:
            mine[f"{mode}/{name}/AP"] = got[mode]["per_class"][name]["AP"]
    worst = max(abs(mine[k] - official[k]) for k in official)
    return {
        "tool": "maptracker",
        "roi": args.roi,
        "scenes": len(scenes),
        "frames": len(samples),
        "official_s": official_s,
        "official_steps_s": steps,
        "library_s": library_s,
        "ratio": official_s / library_s,
        "values": len(official),
        "largest_difference": worst,
        "load_before": load_before,
        "load_after": load_average(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fixtures", type=Path, default=ROOT.parent / "shared" / "fixtures")
    parser.add_argument("--roi", choices=sorted(THRESHOLDS), default="60x30")
    parser.add_argument("--tools", default="streammapnet,maptracker")
    parser.add_argument("--copies", type=int, default=1, help="StreamMapNet: the 50 samples repeated this often")
    parser.add_argument("--scenes", type=int, default=1, help="MapTracker: the first N scenes of the fixture")
    parser.add_argument("--workers", type=int, default=1, help="StreamMapNet: processes of both sides")
    parser.add_argument("--setup", type=Path, help="create (or reuse) the official tools' venv here")
    parser.add_argument("--official-python", type=Path)
    parser.add_argument("--streammapnet-src", type=Path)
    parser.add_argument("--maptracker-src", type=Path)
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    python = setup_venv(args.setup) if args.setup else args.official_python
    if python is None:
        raise SystemExit("give --setup VENV or --official-python PYTHON")
    lines = []
    with tempfile.TemporaryDirectory() as folder:
        for tool in args.tools.split(","):
            result = (bench_streammapnet if tool == "streammapnet" else bench_maptracker)(args, python, Path(folder))
            print(json.dumps(result))
            lines.append(result)
    if args.json_out:
        args.json_out.parent.mkdir(parents=True, exist_ok=True)
        args.json_out.write_text(json.dumps(lines, indent=2) + "\n")


if __name__ == "__main__":
    main()
