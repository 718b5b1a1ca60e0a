"""Graph section of ``drivemetrics demo``: which road-network metric sees which kind of error.

A seeded synthetic road network (:func:`drivemetrics.synthetic.make_road_network`, pixels) is the ground truth.
Each error type of :data:`drivemetrics.graph.perturb.PERTURBATIONS` is applied at a few counts ``k``; every metric
(OPT-P, OPT-J, OPT-G and the classic APLS, TLTS, SUBG, JUNCT, CCQ) scores each ``(pred, gt)`` pair. The table gives,
per metric and error type, the spread of the main score over ``k`` (``FLAT`` = the metric does not see the error),
the message of Citraro et al. (ECCV 2020): older metrics are blind to some errors, OPT-P / OPT-J / OPT-G are not.
The grid of curves is saved as ``sensitivity.png`` and the raw numbers as ``sensitivity.csv``.
"""

from __future__ import annotations

from pathlib import Path

from drivemetrics.graph.evaluate import METRICS, evaluate_pair
from drivemetrics.graph.perturb import PERTURBATIONS, perturb
from drivemetrics.graph.sensitivity import (
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

QUICK = {"size": 1024.0, "levels": (0, 2, 4), "samples": 50}
FULL = {"size": 2048.0, "levels": (0, 2, 4, 8, 12), "samples": 200}
"""Tile side (px), error counts ``k`` and random draws of the sampled metrics, per mode."""

PERTURBATION_OPTIONS: dict[str, dict[str, float]] = {"false_positives": {"length": 80.0, "min_distance": 40.0}}
"""Spurious roads short enough to fit inside the synthetic blocks (160 px streets)."""


def sensitivity_rows(
    size: float, levels: tuple[int, ...], samples: int, seed: int, compat: str | None = None
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


def blind_spots(rows: list[SensitivityRow], tolerance: float = FLAT_TOLERANCE) -> dict[str, list[str]]:
    """``{metric (score): [error types whose spread over k is <= tolerance]}`` for the main scores."""
    spread = flatness(rows)
    kinds = list(dict.fromkeys(r.kind for r in rows))
    return {
        f"{m} ({s})": [kind for kind in kinds if spread[(m, s, kind)] <= tolerance]
        for m in dict.fromkeys(r.metric for r in rows)
        for s in PRIMARY[m]
    }


def run(out_dir: Path, seed: int, quick: bool, compat: str | None = None) -> str:
    """Run the graph sensitivity demo, write ``sensitivity.png`` / ``.csv`` under ``out_dir``, return the tables.

    ``compat="reference"`` scores with the released code's procedures (same table and files).
    """
    mode = QUICK if quick else FULL
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    rows, info = sensitivity_rows(mode["size"], mode["levels"], mode["samples"], seed, compat)
    plot_sensitivity(rows, out_dir / "sensitivity.png")
    write_csv(rows, out_dir / "sensitivity.csv")
    blind = blind_spots(rows)
    lines = [
        f"synthetic road network {mode['size']:.0f}² px, seed {seed}: "
        + ", ".join(f"{v} {k}" for k, v in info.items()),
        f"k = {', '.join(map(str, mode['levels']))} errors per type; {mode['samples']} draws for sampled metrics"
        + (f"; compat={compat}" if compat else ""),
        "",
        flatness_table(rows),
        "",
        "blind to (FLAT):",
    ]
    lines += [f"  {name:<22}{', '.join(kinds) if kinds else '-'}" for name, kinds in blind.items()]
    return "\n".join(lines)
