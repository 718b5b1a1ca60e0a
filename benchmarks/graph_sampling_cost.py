"""Cost per tile of the sampled road-network metrics (OPT-G, TLTS, OPT-P) at their defaults and smaller budgets.

A validation loop that scores one predicted graph per tile pays this per tile, on one CPU thread. The tiles are
synthetic street grids (``make_road_network``; ``--size`` px, intersections every 160 px: 1024 px gives about 40
nodes, 512 px about 16 nodes); the prediction is the ground truth with a few nodes moved and one street cut
(``node_perturbations``, ``interruptions``). For each budget the time per tile (median of ``--repeat`` runs) and
the F1 / correct fraction are printed, so the accuracy cost of a smaller budget is visible next to its speed.

Run ``python benchmarks/graph_sampling_cost.py`` (``--quick``: one repeat, one tile size).
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from drivemetrics.roadnet.opt_g import opt_g
from drivemetrics.roadnet.opt_p import opt_p
from drivemetrics.roadnet.perturb import interruptions, node_perturbations
from drivemetrics.roadnet.tlts import tlts
from drivemetrics.synthetic.road_network import make_road_network


def tile(size: float, seed: int = 0):
    target = make_road_network(size=size, spacing=160.0, seed=seed)
    moved, _ = node_perturbations(target, k=3, seed=seed, shift=20.0)
    preds, _ = interruptions(moved, k=1, seed=seed)
    return preds, target


def median_seconds(fn, repeat: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeat", type=int, default=None)
    parser.add_argument("--size", type=float, nargs="*", default=None, help="tile sizes in px (default 512 1024)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    repeat = args.repeat or (1 if args.quick else 3)
    sizes = args.size or ([512.0] if args.quick else [512.0, 1024.0])
    runs = [
        ("OPT-G", "n_samples", [1000, 200, 50], lambda p, t, n: float(opt_g(p, t, n_samples=n)["f1"])),
        ("TLTS", "n_paths", [1000, 200, 50], lambda p, t, n: float(tlts(p, t, n_paths=n)["correct"])),
        ("OPT-P", "n_decompositions", [1], lambda p, t, n: float(opt_p(p, t, n_decompositions=n)["f1"])),
        (
            "OPT-P spacing 10",
            "n_decompositions",
            [1],
            lambda p, t, n: float(opt_p(p, t, n_decompositions=n, spacing=10.0)["f1"]),
        ),
    ]
    print(f"{'tile':>14} {'metric':<17} {'budget':<22} {'s / tile':>9} {'value':>7}")
    for size in sizes:
        preds, target = tile(size)
        label = f"{target.number_of_nodes()} nodes {int(size)}px"
        for name, knob, budgets, fn in runs:
            for budget in budgets:
                seconds, value = median_seconds(lambda fn=fn, b=budget, p=preds, t=target: fn(p, t, b), repeat)
                print(f"{label:>14} {name:<17} {f'{knob}={budget}':<22} {seconds:>9.3f} {float(value):>7.3f}")


if __name__ == "__main__":
    main()
