"""Old vs new library on the same in-memory work, in fresh processes, alternating (issue 46's like-for-like check).

The benchmark rows whose kernel time is short (KITTI object AP on the 7,481-frame tables, OpenLane-V2 1,000 x 11
in memory, the road-network metrics on the 2,048 px Vancouver crop, UrbanLaneGraph GEO+TOPO and APLS on the
1,500 px window) move by more than the 5 % under test with the load of a shared machine. Here each case runs
``--inner`` times inside one process (after one untimed warm-up call) and the least CPU time is kept; processes of
the new and the old checkout alternate (ABBA) for ``--rounds`` rounds; the printed figure is the median over rounds
of the least CPU time, and new/old their ratio. The values of both checkouts are compared (a hash of the rounded
results).

    python benchmarks/results/rerun46/micro.py --old /work/wt/pre46 [--rounds 5] [--inner 5] [--json OUT]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve()
NEW = HERE.parents[3]
FIXTURES = Path(os.environ.get("DRIVEMETRICS_FIXTURES", "/work/shared/fixtures"))


def _digest(value: object) -> str:
    def clean(v: object) -> object:
        if isinstance(v, dict):
            return {str(k): clean(x) for k, x in sorted(v.items(), key=lambda kv: str(kv[0]))}
        if isinstance(v, (list, tuple)):
            return [clean(x) for x in v]
        if hasattr(v, "tolist"):
            return clean(v.tolist())
        if isinstance(v, float):
            return round(v, 9)
        return v

    return hashlib.sha1(json.dumps(clean(value), default=str).encode()).hexdigest()[:12]


def case_kitti() -> tuple:
    from drivemetrics.detection.io import read_object_table
    from drivemetrics.detection.kitti_object import evaluate_kitti_objects

    root = Path(os.environ.get("KITTI_TREE", "/tmp/br/kt"))
    gt_dir, det_dir = root / "data" / "object" / "label_2", root / "results" / "bench" / "data"
    names = sorted(p.stem for p in gt_dir.glob("*.txt"))
    gt = read_object_table(gt_dir, names, False, "error", False)
    det = read_object_table(det_dir, names, True, "warn", False)
    return lambda: evaluate_kitti_objects(det, gt)  # the command's call (validate_args default)


def case_openlanev2() -> tuple:
    sys.path.insert(0, str(NEW / "benchmarks"))
    import openlanev2 as bench  # the new checkout's frame generator (same frames for both)

    from drivemetrics.lanetopology.evaluate import evaluate_openlanev2

    gt, submission = bench.make_frames(1000, 11)
    target = {k: v["annotation"] for k, v in gt.items()}
    preds = {k: v["predictions"] for k, v in submission["results"].items()}
    return lambda: evaluate_openlanev2(preds, target, compat="reference")


_CACHE: dict = {}


def _graph_case(name: str):
    def build() -> tuple:
        from drivemetrics.roadnet.evaluate import METRICS
        from drivemetrics.roadnet.io import read_graph

        try:
            from drivemetrics.graph.geometry import crop
        except ImportError:  # before the graph package
            from drivemetrics.roadnet.geometry import crop
        if "vancouver" not in _CACHE:
            folder = FIXTURES / "graphs" / "roadtracer_vancouver"
            gt_full, pred_full = read_graph(folder / "gt.graph"), read_graph(folder / "pred_roadtracer.graph")
            _CACHE["vancouver"] = [crop(g, -1024, -1024, 1024, 1024) for g in (gt_full, pred_full)]  # graph.py --quick
        gt, pred = _CACHE["vancouver"]
        options = {"opt_g": {"n_samples": 100}, "subg": {"n_subgraphs": 100}, "tlts": {"n_paths": 100}}
        return lambda: METRICS[name](pred, gt, **options.get(name, {}))

    return build


def _lanegraph_case(which: str):
    def build() -> tuple:
        sys.path.insert(0, str(NEW / "benchmarks"))
        import lanegraph as bench  # the new checkout's window and perturbation (same graphs for both)

        from drivemetrics.lanegraph.apls import lanegraph_apls
        from drivemetrics.lanegraph.geo_topo import geo_topo
        from drivemetrics.lanegraph.io import load_lanegraph_pickle

        if "lgp" not in _CACHE:
            full = load_lanegraph_pickle(FIXTURES / "lanegraph" / "submission_full_lgp_eval.pickle")
            _, graph = next(iter(full["austin"]["eval"].items()))
            gt = bench.window(graph, 1500.0)
            _CACHE["lgp"] = (gt, bench.perturbed(gt))
        gt, pred = _CACHE["lgp"]
        fn = geo_topo if which == "geo_topo" else lanegraph_apls
        return lambda: fn(pred, gt)

    return build


def _bench(name: str):
    """The new checkout's benchmark module ``name`` (its input builders; the library is the one already imported)."""
    import drivemetrics  # noqa: F401  (first: the checkout on PYTHONPATH, before the module's sys.path insert)

    sys.path.insert(0, str(NEW / "benchmarks"))
    return __import__(name)


def case_bev(mode: str):
    def build() -> tuple:
        import torch

        from drivemetrics.geometry import warp_image_to_bev

        frames, homs = _bench("bev_warp").make_frames(8)
        images = torch.from_numpy(frames).unsqueeze(1)
        h = torch.from_numpy(homs)
        if mode == "bilinear":
            images = images.float() / 255
        return lambda: warp_image_to_bev(images, h, mode=mode)[0]

    return build


def case_road_pixel() -> tuple:
    import torch

    bench = _bench("road_pixel")
    frames = bench.make_frames(24, distinct=8)
    batches = [bench.stack_batch(frames[:8], torch.device("cpu"))]
    return lambda: bench.run_drivemetrics(batches, 24)[0]


def case_psld(loss: bool):
    def build() -> tuple:
        from drivemetrics.lane.psld import PSLDLoss, psld

        pred, gt, speed = _bench("psld").scenes(10_000, __import__("torch").device("cpu"))
        if not loss:
            return lambda: psld(pred, gt, speed=speed, reduction="none")
        loss_fn = PSLDLoss()

        def forward_backward() -> float:
            param = pred.clone().requires_grad_()
            value = loss_fn(param, gt, speed=speed)
            value.backward()
            return float(value.detach())

        return forward_backward

    return build


def case_corridor() -> tuple:
    from drivemetrics.geometry.bev import BevGrid
    from drivemetrics.road.corridor import fit_driving_corridor
    from drivemetrics.road.corridor_config import CorridorConfig

    grid, config = BevGrid(), CorridorConfig()
    conf = _bench("corridor").lanes(32, grid)
    return lambda: fit_driving_corridor(conf, threshold=0.5, config=config)


def case_tusimple() -> tuple:
    import numpy as np
    import torch

    from drivemetrics.lane.tusimple import tusimple_image_scores

    rng = np.random.default_rng(0)  # lane_metrics.py's inputs, 3,000 images
    ys = np.arange(160.0, 720.0, 10.0)
    gt = rng.uniform(100, 1200, (3000, 4, 1)) + rng.uniform(-1, 1, (3000, 4, 1)) * (ys - 160)
    gt[:, :, :8] = -2.0
    pred = gt + rng.normal(0, 10, gt.shape)
    pred[gt < 0] = -2.0
    p, g = torch.tensor(np.where(pred >= 0, pred, np.nan)), torch.tensor(np.where(gt >= 0, gt, np.nan))
    return lambda: tusimple_image_scores(p, g, h_samples=torch.tensor(ys))


CASES = {
    "kitti_object_eval_7481": case_kitti,
    "openlanev2_1000x11_in_memory": case_openlanev2,
    **{f"graph_{m}_2048": _graph_case(m) for m in ("opt_p", "opt_j", "opt_g", "apls", "tlts", "subg", "junct", "ccq")},
    "lanegraph_geo_topo_1500": _lanegraph_case("geo_topo"),
    "lanegraph_apls_1500": _lanegraph_case("apls"),
    "bev_warp_devkit_8": case_bev("devkit"),
    "bev_warp_bilinear_8": case_bev("bilinear"),
    "road_pixel_24_uint8": case_road_pixel,
    "psld_10000": case_psld(False),
    "psld_loss_fwd_bwd_10000": case_psld(True),
    "corridor_fit_32": case_corridor,
    "tusimple_3000": case_tusimple,
}


def worker(cases: list[str], inner: int) -> None:
    import torch

    import drivemetrics

    torch.set_num_threads(1)  # one thread: OpenMP's spinning threads make times erratic on a shared machine
    out = {"_library": {"path": drivemetrics.__file__}}
    for name in cases:
        fn = CASES[name]()
        value = fn()  # warm-up (imports, caches)
        cpus, walls = [], []
        for _ in range(inner):
            c0, t0 = time.process_time(), time.perf_counter()
            fn()
            cpus.append(time.process_time() - c0)
            walls.append(time.perf_counter() - t0)
        out[name] = {"cpu": min(cpus), "wall": min(walls), "digest": _digest(value)}
    print(json.dumps(out))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", type=Path, help="the old checkout")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--inner", type=int, default=5)
    parser.add_argument("--cases", nargs="+", default=list(CASES))
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.cases, args.inner)
        return
    trees = {"new": NEW, "old": args.old.resolve()}
    runs: dict[str, dict[str, list]] = {label: {c: [] for c in args.cases} for label in trees}
    loads = [os.getloadavg()[0]]
    for r in range(args.rounds):
        for label in ("new", "old") if r % 2 == 0 else ("old", "new"):
            env = {**os.environ, "PYTHONPATH": str(trees[label]), "OMP_NUM_THREADS": "1"}
            command = [sys.executable, str(HERE), "--worker", "--inner", str(args.inner), "--cases", *args.cases]
            done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=trees[label])
            if done.returncode:
                sys.exit(f"{label} failed: {done.stderr[-3000:]}")
            rows = json.loads(done.stdout.strip().splitlines()[-1])
            if not rows.pop("_library")["path"].startswith(str(trees[label])):
                sys.exit(f"{label}: the library was not imported from {trees[label]}")
            for case, row in rows.items():
                runs[label][case].append(row)
            loads.append(os.getloadavg()[0])
    print(
        f"{args.rounds} rounds x {args.inner} inner runs, least CPU per process, median over rounds; "
        f"load {min(loads):.1f}-{max(loads):.1f}; {time.strftime('%Y-%m-%d %H:%M %Z')}"
    )
    print(f"{'case':<32} {'old CPU s':>10} {'new CPU s':>10} {'new/old':>8}  values equal")
    result = {"rounds": args.rounds, "inner": args.inner, "load": loads, "cases": {}}
    for case in args.cases:
        old = statistics.median(r["cpu"] for r in runs["old"][case])
        new = statistics.median(r["cpu"] for r in runs["new"][case])
        digests = {r["digest"] for label in trees for r in runs[label][case]}
        equal = len(digests) == 1
        print(f"{case:<32} {old:>10.4f} {new:>10.4f} {new / old:>8.3f}  {'yes' if equal else 'NO ' + str(digests)}")
        result["cases"][case] = {
            "old_cpu_s": [r["cpu"] for r in runs["old"][case]],
            "new_cpu_s": [r["cpu"] for r in runs["new"][case]],
            "old_wall_s": [r["wall"] for r in runs["old"][case]],
            "new_wall_s": [r["wall"] for r in runs["new"][case]],
            "new_over_old_cpu": new / old,
            "values_equal": equal,
        }
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
