"""Default ``--workers`` against ``--workers 1`` and ``--workers 2``, end to end, for every pooled command.

Issue 40's promise: a command run without ``--workers`` is never slower than the same command with one worker.
Each case below is one ``drivemetrics`` command on one input, the fixture data (``$DRIVEMETRICS_FIXTURES`` or
``../shared/fixtures``) or a larger input built from it in a temporary folder. Every run is a fresh process
(start-up, reading and writing included), the three settings are interleaved (the order rotates from one repeat
to the next, so a change of load hits all three alike) and each line prints the median wall time of each setting,
the ratio ``--workers 1`` / default (>= 1: the default is not slower) and the 1-minute load average seen before
the runs. Children get the environment a user has: ``OMP_NUM_THREADS`` is removed, so the commands' own thread
defaults are what is measured; run the script under ``nice -n 5`` on a shared machine.

    python benchmarks/workers.py                  # every case, 3 repeats
    python benchmarks/workers.py --cases road-eval-289 graph-eval-vegas-x4 --repeat 5
    python benchmarks/workers.py --list

Commands covered here: road-eval (forked processes, numpy), road-bev (threads decoding PNGs), graph-eval (processes
over tiles), lanegraph-eval (processes over samples), culane-eval (processes over frame chunks) and map-eval's AV2
protocol (forked workers), the last two on the synthetic inputs of ``culane.py`` and ``vectormap_ap.py``. The other
pooled commands have their own scripts (``openlanev2.py``, ``kitti_object.py``, ``openlane3d.py``).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "benchmarks"))

SETTINGS: tuple[tuple[str, list[str]], ...] = (("default", []), ("1", ["--workers", "1"]), ("2", ["--workers", "2"]))


def fixtures() -> Path:
    root = Path(os.environ.get("DRIVEMETRICS_FIXTURES", REPO_ROOT.parent / "shared" / "fixtures"))
    if not (root / "README.md").is_file():
        sys.exit(f"fixtures not found in {root}: set DRIVEMETRICS_FIXTURES")
    return root


# ---------------------------------------------------------------------------------------------- the cases


def _road_folder(tmp: Path, scale: float) -> Path:
    from road_eval import build_folder  # the 289-frame KITTI-ROAD-shaped folder of benchmarks/road_eval.py

    out = tmp / f"road_{scale}"
    if not out.exists():
        build_folder(out, scale)
    return out


def road_eval(scale: float, space: str) -> Callable[[Path, Path], list[str]]:
    def argv(fx: Path, tmp: Path) -> list[str]:
        folder = _road_folder(tmp, scale)
        return ["road-eval", "--data", str(folder / "data"), "--results", str(folder / "results"), "--space", space]

    return argv


def road_bev(scale: float) -> Callable[[Path, Path], list[str]]:
    def argv(fx: Path, tmp: Path) -> list[str]:
        folder = _road_folder(tmp, scale)
        out = tmp / "bev_out"
        shutil.rmtree(out, ignore_errors=True)  # the command refuses nothing here, but start each run empty
        return [
            "road-bev",
            "--calib",
            str(folder / "data" / "calib"),
            "--input",
            str(folder / "results"),
            "--output",
            str(out),
        ]

    return argv


def graph_vancouver(fx: Path, tmp: Path) -> list[str]:
    root = fx / "graphs" / "roadtracer_vancouver"
    window = ["--window", "-1024", "-1024", "1024", "1024"]
    return ["graph-eval", "--gt", str(root / "gt.graph"), "--pred", str(root / "pred_segmentation.graph"), *window]


def graph_vegas(copies: int, metrics: list[str] | None = None) -> Callable[[Path, Path], list[str]]:
    """The 7 SpaceNet Vegas tiles (GT vs OSM), each copied ``copies`` times under new names."""

    def argv(fx: Path, tmp: Path) -> list[str]:
        src = fx / "graphs" / "spacenet_vegas"
        gt, pred = tmp / f"vegas{copies}" / "gt", tmp / f"vegas{copies}" / "pred"
        if not gt.exists():
            for side, folder in ((gt, src / "spacenetroads"), (pred, src / "osm")):
                side.mkdir(parents=True)
                for path in sorted(folder.iterdir()):
                    for k in range(copies):
                        shutil.copyfile(path, side / f"{path.stem}_{k}{path.suffix}")
        extra = ["--metrics", *metrics] if metrics else []
        return ["graph-eval", "--gt", str(gt), "--pred", str(pred), *extra]

    return argv


def lanegraph(task: str, compat: str = "default") -> Callable[[Path, Path], list[str]]:
    def argv(fx: Path, tmp: Path) -> list[str]:
        root = fx / "lanegraph"
        if task == "successor":
            gt, pred = "annotations_successor_lgp_eval.pickle", "submission_succ_lgp_eval.pickle"
        else:  # the one full-LGP tile against itself, as the command matrix does
            gt = pred = "submission_full_lgp_eval.pickle"
        return [
            "lanegraph-eval",
            "--gt",
            str(root / gt),
            "--pred",
            str(root / pred),
            "--task",
            task,
            "--compat",
            compat,
        ]

    return argv


def culane(frames: int, compat: str = "default") -> Callable[[Path, Path], list[str]]:
    """``frames`` synthetic CULane frames (about 4 lanes each), written by ``benchmarks/culane.py``."""

    def argv(fx: Path, tmp: Path) -> list[str]:
        from culane import make_dataset

        root = tmp / f"culane_{frames}"
        if not (root / "list.txt").is_file():
            make_dataset(root, frames)
        return [
            "culane-eval",
            "--pred",
            str(root / "pred"),
            "--gt",
            str(root / "gt"),
            "--list",
            str(root / "list.txt"),
            "--compat",
            compat,
        ]

    return argv


def map_av2(samples: int) -> Callable[[Path, Path], list[str]]:
    """``samples`` synthetic samples in the CVPR 2023 challenge's JSON, written by ``benchmarks/vectormap_ap.py``."""

    def argv(fx: Path, tmp: Path) -> list[str]:
        import json

        from vectormap_ap import make_synthetic, to_av2

        gt, pred = tmp / f"av2_{samples}_gt.json", tmp / f"av2_{samples}_pred.json"
        if not pred.is_file():
            gt_data, pred_data = to_av2(*make_synthetic(samples))
            gt.write_text(json.dumps(gt_data))
            pred.write_text(json.dumps(pred_data))
        return ["map-eval", "--protocol", "av2-cvpr23", "--gt", str(gt), "--pred", str(pred)]

    return argv


CASES: dict[str, tuple[str, Callable[[Path, Path], list[str]]]] = {
    "road-eval-6": ("KITTI-ROAD fixture frames, 6 frames, perspective", road_eval(0.02, "perspective")),
    "road-eval-289": ("289 frames (the training split's size), perspective", road_eval(1.0, "perspective")),
    "road-eval-289-bev": ("289 frames, --space bev", road_eval(1.0, "bev")),
    "road-bev-289": ("289 result PNGs warped to BEV", road_bev(1.0)),
    "graph-eval-vancouver": ("Vancouver 2048 px window, 1 tile, every metric", graph_vancouver),
    "graph-eval-vegas": ("SpaceNet Vegas, 7 tiles, every metric", graph_vegas(1)),
    "graph-eval-vegas-x4": ("SpaceNet Vegas tiles x4 = 28 tiles, every metric", graph_vegas(4)),
    "graph-eval-vegas-x4-fast": ("28 tiles, --metrics opt_j ccq junct", graph_vegas(4, ["opt_j", "ccq", "junct"])),
    "lanegraph-successor": ("UrbanLaneGraph successor eval split, 561 samples", lanegraph("successor")),
    "lanegraph-successor-reference": ("561 samples, --compat reference", lanegraph("successor", "reference")),
    "lanegraph-full": ("full-LGP tile (5,214 nodes), 1 sample", lanegraph("full")),
    "lanegraph-planning": ("planning on the full-LGP tile", lanegraph("planning")),
    "culane-5000": ("5,000 synthetic CULane frames", culane(5000)),
    "culane-5000-reference": ("5,000 synthetic CULane frames, --compat reference", culane(5000, "reference")),
    "map-eval-av2": ("6,019 synthetic samples, --protocol av2-cvpr23 (numpy path)", map_av2(6019)),
}


# -------------------------------------------------------------------------------------------------- timing


def run_timed(argv: list[str], root: Path) -> tuple[float, float, str]:
    """``(wall s, CPU s of the child and its workers, its standard output)`` of ``python -m drivemetrics *argv``
    with ``root`` first on the import path."""
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    env["PYTHONPATH"] = str(root)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "drivemetrics", *argv, "--no-progress"],
        capture_output=True,
        text=True,
        env=env,
        cwd=root,
    )
    wall = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), done.stdout


def measure(name: str, fx: Path, tmp: Path, repeat: int, root: Path, before: Path | None) -> str:
    what, build = CASES[name]
    settings = [(label, flags, root) for label, flags in SETTINGS]
    if before is not None:  # the default of another checkout, timed in the same rotation
        settings.append(("before", [], before))
    walls: dict[str, list[float]] = {label: [] for label, _, _ in settings}
    cpus: dict[str, list[float]] = {label: [] for label, _, _ in settings}
    loads = []
    outputs: dict[str, str] = {}  # the printed results of each setting's first run, compared below
    for rep in range(repeat):
        order = settings[rep % len(settings) :] + settings[: rep % len(settings)]
        for label, flags, where in order:
            loads.append(os.getloadavg()[0])
            wall, cpu, out = run_timed([*build(fx, tmp), *flags], where)
            outputs.setdefault(label, out)
            walls[label].append(wall)
            cpus[label].append(cpu)
    med = {label: statistics.median(v) for label, v in walls.items()}
    cpu = {label: statistics.median(v) for label, v in cpus.items()}
    ratio = med["1"] / med["default"]
    times = " ".join(f"{label} {med[label]:6.2f} s (CPU {cpu[label]:5.2f})" for label, _, _ in settings)
    verdict = "ok" if ratio >= 0.95 else "DEFAULT SLOWER"
    differ = [label for label in outputs if outputs[label] != outputs["default"]]
    same = "outputs equal" if not differ else f"OUTPUTS DIFFER from the default's: {', '.join(differ)}"
    return (
        f"{name:<26} {times} | 1/default {ratio:4.2f} 2/default {med['2'] / med['default']:4.2f} | "
        f"load {min(loads):.1f}-{max(loads):.1f} | {verdict}, {same} ({what})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", choices=list(CASES), default=list(CASES), metavar="CASE")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each setting (default 3; the median is kept)")
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    parser.add_argument(
        "--before",
        type=Path,
        default=None,
        help="also time the default of the drivemetrics package in this folder (an unpacked older commit), "
        "interleaved with the others",
    )
    parser.add_argument(
        "--root",
        type=Path,
        default=REPO_ROOT,
        help="folder holding the drivemetrics package to time (default: this checkout; e.g. an unpacked older "
        "commit, to compare policies on the same inputs)",
    )
    args = parser.parse_args()
    if args.list:
        for name, (what, _) in CASES.items():
            print(f"{name:<30} {what}")
        return
    fx = fixtures()
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores, median of {args.repeat}")
    with tempfile.TemporaryDirectory(prefix="dm_workers_") as tmp:
        for name in args.cases:
            print(measure(name, fx, Path(tmp), args.repeat, args.root, args.before), flush=True)


if __name__ == "__main__":
    main()
