"""Graph section of ``drivemetrics demo``: which road-network metric sees which kind of error.

A seeded synthetic road network (:func:`drivemetrics.synthetic.make_road_network`, pixels) is the ground truth.
Each error type of :data:`drivemetrics.roadnet.perturb.PERTURBATIONS` is applied at a few counts ``k``; every metric
(OPT-P, OPT-J, OPT-G and the classic APLS, TLTS, SUBG, JUNCT, CCQ) scores each ``(pred, gt)`` pair. The table gives,
per metric and error type, the spread of the main score over ``k`` (``FLAT`` = the metric does not see the error),
the message of Citraro et al. (ECCV 2020): older metrics are blind to some errors, OPT-P / OPT-J / OPT-G are not.
The grid of curves is saved as ``sensitivity.png`` and the raw numbers as ``sensitivity.csv``.

JUNCT is flat under every error type on this dense grid, by design: a predicted junction within about
``3 * cluster_radius`` (255 px) of road from a GT junction joins that junction's cluster (Go's
``GetIntersectionClustersWithContext``), and an extra arm there is never wrong (the 90 degree tolerance around 3 or
4 GT arms covers every direction); the grid's 160 px streets keep every node within 134 px of a junction. A
second scenario (:func:`junct_far_overconnections`) therefore puts the overconnections where JUNCT can see them:
on a sparse grid of curved 512 px streets, with both ends at least 255 px from every GT junction.
"""

from __future__ import annotations

from pathlib import Path

from drivemetrics.roadnet.evaluate import METRICS, evaluate_pair
from drivemetrics.roadnet.junct import CLUSTER_RADIUS, junct
from drivemetrics.roadnet.perturb import PERTURBATIONS, perturb
from drivemetrics.roadnet.sensitivity import (
    FLAT_TOLERANCE,
    PRIMARY,
    SCORES,
    SensitivityRow,
    fast_options,
    flatness,
    flatness_table,
    plot_sensitivity,
    write_csv,
)
from drivemetrics.synthetic.road_network import make_road_network

__all__ = [
    "FULL",
    "PERTURBATION_OPTIONS",
    "QUICK",
    "blind_spots",
    "junct_far_overconnections",
    "run",
    "sensitivity_rows",
]

QUICK = {"size": 1024.0, "levels": (0, 2, 4), "samples": 50}
FULL = {"size": 2048.0, "levels": (0, 2, 4, 8, 12), "samples": 200}
"""Tile side (px), error counts ``k`` and random draws of the sampled metrics, per mode."""

PERTURBATION_OPTIONS: dict[str, dict[str, float]] = {"false_positives": {"length": 80.0, "min_distance": 40.0}}
"""Spurious roads short enough to fit inside the synthetic blocks (160 px streets)."""


def sensitivity_rows(
    size: float, levels: tuple[int, ...], samples: int, seed: int, compat: str = "default"
) -> tuple[list[SensitivityRow], dict[str, int]]:
    """Score every metric on every error type at every ``k`` of ``levels``; also returns the GT's size counts.

    ``compat="reference"``: the metrics that have it run the released code's procedures.
    """
    target = make_road_network(size, seed=seed)
    options = fast_options(samples)
    for name in ("opt_p", "opt_g", "apls", "tlts", "subg"):
        options.setdefault(name, {})["seed"] = seed
    options["apls"]["max_snap_dist"] = 25.0  # pixel data: APLS's defaults are metres
    rows: list[SensitivityRow] = []
    base = evaluate_pair(*perturb(target, "interruptions", 0), None, options, compat=compat)
    for kind in PERTURBATIONS:  # a loop over a handful of (kind, k) scenarios
        for k in levels:
            if k == 0:
                res = base
            else:
                pred, gt = perturb(target, kind, k, seed=seed, **PERTURBATION_OPTIONS.get(kind, {}))
                res = evaluate_pair(pred, gt, None, options, compat=compat)
            rows += [SensitivityRow(kind, k, m, s, float(res[m][s])) for m in METRICS for s in SCORES[m]]
    info = {
        "nodes": target.number_of_nodes(),
        "edges": target.number_of_edges(),
        "dead ends": target.graph["n_dead_ends"],
        "curved": target.graph["n_curved"],
    }
    return rows, info


def junct_far_overconnections(levels: tuple[int, ...], seed: int) -> list[tuple[int, float]]:
    """``[(k, JUNCT F_error)]`` for ``k`` overconnections at least ``3 * CLUSTER_RADIUS`` px from every GT junction.

    The ground truth is a 2048² px grid of curved 512 px streets, sparse enough to have such nodes.
    """
    target = make_road_network(2048.0, spacing=512.0, seed=seed, curved_fraction=1.0)
    scores = []
    for k in levels:
        pred, gt = perturb(target, "overconnections", k, seed=seed, min_junction_distance=3 * CLUSTER_RADIUS)
        scores.append((k, float(junct(pred, gt)["f_error"])))
    return scores


def blind_spots(rows: list[SensitivityRow], tolerance: float = FLAT_TOLERANCE) -> dict[str, list[str]]:
    """``{metric (score): [error types whose spread over k is <= tolerance]}`` for the main scores."""
    spread = flatness(rows)
    kinds = list(dict.fromkeys(r.kind for r in rows))
    return {
        f"{m} ({s})": [kind for kind in kinds if spread[(m, s, kind)] <= tolerance]
        for m in dict.fromkeys(r.metric for r in rows)
        for s in PRIMARY[m]
    }


def run(out_dir: Path, seed: int, quick: bool, compat: str = "default", figures: bool = True) -> str:
    """Run the graph sensitivity demo, write ``sensitivity.png`` (``figures=True``) and ``sensitivity.csv`` under
    ``out_dir``, return the tables.

    ``compat="reference"`` scores with the released code's procedures (same table and files).
    """
    mode = QUICK if quick else FULL
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    rows, info = sensitivity_rows(mode["size"], mode["levels"], mode["samples"], seed, compat)
    if figures:
        plot_sensitivity(rows, out_dir / "sensitivity.png")
    write_csv(rows, out_dir / "sensitivity.csv")
    blind = blind_spots(rows)
    lines = [
        f"synthetic road network {mode['size']:.0f}² px, seed {seed}: "
        + ", ".join(f"{v} {k}" for k, v in info.items()),
        f"k = {', '.join(map(str, mode['levels']))} errors per type; {mode['samples']} draws for sampled metrics"
        + (f"; compat={compat}" if compat == "reference" else ""),
        "",
        flatness_table(rows),
        "",
        "blind to (FLAT):",
    ]
    lines += [f"  {name:<22}{', '.join(kinds) if kinds else '-'}" for name, kinds in blind.items()]
    far = junct_far_overconnections(mode["levels"], seed)
    lines += [
        "",
        f"JUNCT is blind above because every node of this grid is within {3 * CLUSTER_RADIUS:.0f} px of road from a GT",
        "junction (predicted junctions there join its cluster). Overconnections >= "
        f"{3 * CLUSTER_RADIUS:.0f} px from every junction (sparse grid of 512 px curved streets):",
        "  JUNCT f_error " + ", ".join(f"k={k}: {f:.3f}" for k, f in far),
    ]
    return "\n".join(lines)
