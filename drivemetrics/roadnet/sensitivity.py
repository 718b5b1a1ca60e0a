"""Sensitivity of every graph metric to synthetic errors (Citraro et al., ECCV 2020, section 4.1 and Fig. 5).

:func:`run_sensitivity` perturbs a ground-truth graph with ``k`` errors of each type of
:data:`drivemetrics.roadnet.perturb.PERTURBATIONS` and scores the ``(pred, gt)`` pair with every metric;
:func:`flatness` measures, per metric score and error type, how much the score moves over the range of ``k``
(a *flat* curve means the metric does not see that kind of error); :func:`plot_sensitivity` draws the grid of
curves (rows: metrics, columns: error types) and :func:`write_csv` saves the raw numbers.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import networkx as nx

from drivemetrics._internal.compat import Compat
from drivemetrics._internal.extras import pyplot_for_files
from drivemetrics._internal.files import atomic_open, atomic_save_figure
from drivemetrics._internal.progress import progress_bar
from drivemetrics.roadnet.evaluate import METRICS, check_metric_names, evaluate_pair
from drivemetrics.roadnet.perturb import PERTURBATIONS, perturb

__all__ = [
    "FLAT_TOLERANCE",
    "PRIMARY",
    "SCORES",
    "SensitivityRow",
    "fast_options",
    "flatness",
    "flatness_table",
    "plot_sensitivity",
    "run_sensitivity",
    "write_csv",
]

SCORES: dict[str, tuple[str, ...]] = {
    "opt_p": ("precision", "recall", "f1"),
    "opt_j": ("precision", "recall", "f1"),
    "opt_g": ("precision", "recall", "f1"),
    "apls": ("apls",),
    "tlts": ("correct",),
    "subg": ("f1",),
    "junct": ("f_correct", "f_error"),
    "ccq": ("correctness", "completeness", "quality"),
}
"""Scores drawn for each metric."""

PRIMARY: dict[str, tuple[str, ...]] = {
    "opt_p": ("f1",),
    "opt_j": ("f1",),
    "opt_g": ("f1",),
    "apls": ("apls",),
    "tlts": ("correct",),
    "subg": ("f1",),
    "junct": ("f_correct", "f_error"),
    "ccq": ("quality",),
}
"""The scores per metric listed in the flatness table (JUNCT has two: neither summarises the other)."""

FLAT_TOLERANCE = 0.01


def fast_options(samples: int) -> dict[str, dict[str, Any]]:
    """Metric options with ``samples`` random draws for the sampled metrics (OPT-G, SUBG, TLTS, APLS sources)."""
    return {
        "opt_g": {"n_samples": samples},
        "subg": {"n_subgraphs": samples},
        "tlts": {"n_paths": samples},
        "apls": {"max_sources": samples},
    }


@dataclass(frozen=True)
class SensitivityRow:
    """One score of one metric for ``k`` errors of one type."""

    kind: str
    k: int
    metric: str
    score: str
    value: float


def run_sensitivity(
    target: nx.Graph,
    levels: Sequence[int],
    kinds: Sequence[str] | None = None,
    metrics: Sequence[str] | None = None,
    options: dict[str, dict[str, Any]] | None = None,
    seed: int = 0,
    progress: bool | None = None,
    compat: Compat = "default",
) -> list[SensitivityRow]:
    """Score every metric on ``perturb(target, kind, k, seed)`` for each error type and each ``k`` in ``levels``.

    The unperturbed pair (``k = 0``) is scored once and shared by all error types. ``compat="reference"`` scores
    with the released code's procedures (passed to every metric that has the option).
    """
    kinds = list(kinds if kinds is not None else PERTURBATIONS)
    unknown = sorted(set(kinds) - set(PERTURBATIONS))
    if unknown:
        raise ValueError(f"unknown error type(s) {unknown}; choose from {sorted(PERTURBATIONS)}")
    names = check_metric_names(metrics if metrics is not None else METRICS)
    levels = sorted({int(k) for k in levels})
    if not levels or levels[0] < 0:
        raise ValueError(f"`levels` must be non-empty non-negative ints, got {levels}")
    rows: list[SensitivityRow] = []
    jobs = [(kind, k) for kind in kinds for k in levels if k > 0]
    bar = progress_bar(len(jobs) + (0 in levels), "graph-sensitivity", "pair", progress)
    if 0 in levels:
        pred, gt = perturb(target, kinds[0], 0, seed)
        base = evaluate_pair(pred, gt, names, options, compat=compat)
        bar.update()
        for kind in kinds:
            rows += [SensitivityRow(kind, 0, m, s, float(base[m][s])) for m in names for s in SCORES[m]]
    for kind, k in jobs:
        bar.set_postfix_str(f"{kind} k={k}")
        pred, gt = perturb(target, kind, k, seed)
        res = evaluate_pair(pred, gt, names, options, compat=compat)
        rows += [SensitivityRow(kind, k, m, s, float(res[m][s])) for m in names for s in SCORES[m]]
        bar.update()
    bar.close()
    return rows


def flatness(rows: Sequence[SensitivityRow]) -> dict[tuple[str, str, str], float]:
    """``{(metric, score, kind): spread}``: max - min of the score over the levels (a metric is flat where small)."""
    values: dict[tuple[str, str, str], list[float]] = {}
    for r in rows:
        values.setdefault((r.metric, r.score, r.kind), []).append(r.value)
    return {key: max(v) - min(v) for key, v in values.items()}


def flatness_table(rows: Sequence[SensitivityRow], tolerance: float = FLAT_TOLERANCE) -> str:
    """Text table of the spread of each metric's main scores per error type; ``FLAT`` marks spreads <= tolerance."""
    spread = flatness(rows)
    kinds = list(dict.fromkeys(r.kind for r in rows))
    metrics = list(dict.fromkeys(r.metric for r in rows))
    width = max(len(k) for k in kinds) + 2
    head = f"{'metric (score)':<22}" + "".join(f"{k:>{width}}" for k in kinds)
    lines = [f"score spread (max - min over k); FLAT = spread <= {tolerance}", head]
    for m in metrics:
        for s in PRIMARY[m]:
            cells = []
            for kind in kinds:
                v = spread.get((m, s, kind), float("nan"))
                cells.append(f"{('FLAT ' if v <= tolerance else '') + f'{v:.3f}':>{width}}")
            lines.append(f"{f'{m} ({s})':<22}" + "".join(cells))
    return "\n".join(lines)


def write_csv(rows: Sequence[SensitivityRow], path: str | Path) -> None:
    """Write ``kind,k,metric,score,value`` lines."""
    with atomic_open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["kind", "k", "metric", "score", "value"])
        writer.writerows([r.kind, r.k, r.metric, r.score, f"{r.value:.6g}"] for r in rows)


def plot_sensitivity(rows: Sequence[SensitivityRow], path: str | Path) -> None:
    """Draw the grid of sensitivity curves (rows: metrics, columns: error types) to an image file."""
    plt = pyplot_for_files()

    kinds = list(dict.fromkeys(r.kind for r in rows))
    metrics = list(dict.fromkeys(r.metric for r in rows))
    fig, axes = plt.subplots(
        len(metrics), len(kinds), figsize=(2.6 * len(kinds), 1.9 * len(metrics)), squeeze=False, sharex="col"
    )
    for i, m in enumerate(metrics):
        for j, kind in enumerate(kinds):
            ax = axes[i][j]
            for s in SCORES[m]:
                pts = sorted((r.k, r.value) for r in rows if r.metric == m and r.kind == kind and r.score == s)
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", markersize=3, label=s)
            ax.set_ylim(-0.02, 1.02)
            ax.grid(alpha=0.3)
            if i == 0:
                ax.set_title(kind.replace("_", " "), fontsize=9)
            if j == 0:
                ax.set_ylabel(m.upper().replace("_", "-"), fontsize=9)
                ax.legend(fontsize=6, loc="lower left")
            if i == len(metrics) - 1:
                ax.set_xlabel("number of errors k", fontsize=8)
            ax.tick_params(labelsize=7)
    fig.tight_layout()
    atomic_save_figure(fig, path, dpi=110)
    plt.close(fig)
