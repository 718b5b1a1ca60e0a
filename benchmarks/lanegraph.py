"""Speed of the UrbanLaneGraph metrics: the 5,214-node full-LGP example against a perturbed copy, and the whole
successor split end to end.

    python benchmarks/lanegraph.py            # windows of the full tile, the full tile, all 561 successor samples
    python benchmarks/lanegraph.py --quick    # smaller windows, no full tile

For square windows of growing side cut from the full-LGP example (and the full tile), GEO+TOPO and APLS (default
mode) are timed against a perturbed copy (nodes moved by N(0, 2 px), every 25th node dropped); the exponent of
time against the number of nodes is fitted. Baseline measured in the same run: the reference mode's GEO+TOPO, a
sequential replica of the released evaluator's algorithm (Python sets, depth-first balls, greedy loops) without
its O(N^2) list copies, on the windows up to 1,500 px; the script prints our time / baseline time. The released
evaluator itself takes 188 s for GEO+TOPO on the full tile on this kind of machine (and 42 s for the successor
split); targets: GEO+TOPO and APLS on the full tile < 10 s, successor split end to end < 10 s with 2 workers.

Needs the fixtures (../shared/fixtures or $DRIVEMETRICS_FIXTURES).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import networkx as nx
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from drivemetrics.lanegraph.apls import lanegraph_apls  # noqa: E402
from drivemetrics.lanegraph.evaluate import evaluate_submission  # noqa: E402
from drivemetrics.lanegraph.geo_topo import geo_topo  # noqa: E402
from drivemetrics.lanegraph.io import load_lanegraph_pickle  # noqa: E402


def fixtures() -> Path:
    env = os.environ.get("DRIVEMETRICS_FIXTURES")
    path = Path(env) if env else ROOT.parent / "shared" / "fixtures"
    folder = path / "lanegraph"
    if not folder.is_dir():
        sys.exit(f"fixtures not found in {folder}: set DRIVEMETRICS_FIXTURES")
    return folder


def timed(fn, *args, **kwargs):
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return time.perf_counter() - t0, out


def perturbed(graph: nx.DiGraph, seed: int = 0) -> nx.DiGraph:
    rng = np.random.default_rng(seed)
    out = graph.copy()
    for n in out.nodes:
        out.nodes[n]["pos"] = np.asarray(graph.nodes[n]["pos"], dtype=float) + rng.normal(0.0, 2.0, 2)
    out.remove_nodes_from(list(out.nodes)[::25])
    return out


def window(graph: nx.DiGraph, side: float | None) -> nx.DiGraph:
    """Nodes within a ``side`` px square at the graph's lower corner, shifted to positive coordinates."""
    pos = np.array([graph.nodes[n]["pos"] for n in graph.nodes], dtype=float)
    lo = pos.min(axis=0)
    keep = (
        list(graph.nodes)
        if side is None
        else [n for n, p in zip(graph.nodes, pos, strict=True) if (p < lo + side).all()]
    )
    out = graph.subgraph(keep).copy()
    for n in out.nodes:
        out.nodes[n]["pos"] = np.asarray(graph.nodes[n]["pos"], dtype=float) - lo + 10.0
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller windows, no full tile")
    parser.add_argument("--workers", type=int, default=2, help="processes for the successor split (default 2)")
    args = parser.parse_args()
    folder = fixtures()
    full = load_lanegraph_pickle(folder / "submission_full_lgp_eval.pickle")
    _, graph = next(iter(full["austin"]["eval"].items()))
    sides: list[float | None] = [800.0, 1500.0] if args.quick else [800.0, 1500.0, 3000.0, None]
    print(f"{'window':>8} {'nodes':>6} {'GEO+TOPO s':>11} {'APLS s':>8} {'baseline s':>11} {'ratio':>6}  values")
    nodes, times = [], []
    for side in sides:
        gt = window(graph, side)
        pred = perturbed(gt)
        t_gt, values = timed(geo_topo, pred, gt)
        t_apls, apls_value = timed(lanegraph_apls, pred, gt)
        base = ratio = float("nan")
        if side is not None and side <= 1500:
            base, _ = timed(geo_topo, pred, gt, compat="reference")
            ratio = t_gt / base
        nodes.append(gt.number_of_nodes() + pred.number_of_nodes())
        times.append(t_gt + t_apls)
        label = "full" if side is None else f"{side:.0f}"
        shown = " ".join(f"{k}={v:.3f}" for k, v in values.items()) + f" apls={apls_value:.3f}"
        print(f"{label:>8} {gt.number_of_nodes():>6} {t_gt:>11.2f} {t_apls:>8.2f} {base:>11.2f} {ratio:>6.2f}  {shown}")
    if len(nodes) > 1:
        slope = np.polyfit(np.log(nodes), np.log(times), 1)[0]
        print(f"time ~ nodes^{slope:.2f} (GEO+TOPO + APLS)")
    if not args.quick:
        print(f"full tile GEO+TOPO + APLS: {times[-1]:.1f} s (target < 10 s; released evaluator: 188 s for GEO+TOPO)")
        gt_data = load_lanegraph_pickle(folder / "annotations_successor_lgp_eval.pickle")
        pred_data = load_lanegraph_pickle(folder / "submission_succ_lgp_eval.pickle")
        for compat in ("default", "reference"):
            t, result = timed(
                evaluate_submission,
                pred_data,
                gt_data,
                "successor",
                compat=compat,
                workers=args.workers,
                progress=False,
            )
            overall = " ".join(f"{k}={v:.4f}" for k, v in result["overall"].items())
            print(
                f"successor split, {len(result['samples'])} samples, compat={compat}, {args.workers} workers: "
                f"{t:.1f} s (target < 10 s; released evaluator 42 s)  {overall}"
            )


if __name__ == "__main__":
    main()
