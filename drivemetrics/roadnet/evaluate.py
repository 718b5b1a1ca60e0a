"""Evaluate road-graph predictions with every graph metric, per tile and over a dataset.

:data:`METRICS` maps a metric name to its functional; :func:`evaluate_pair` runs the chosen metrics on one
``(pred, gt)`` pair and returns plain dicts (counts and scores); :func:`evaluate_dataset` runs folders of tiles
(optionally in a process pool) and aggregates them as Citraro et al.'s protocol does:

- OPT-J, OPT-G, SUBG, CCQ, JUNCT: from counts summed over tiles;
- OPT-P: F1 of the mean per-tile precision and the mean per-tile recall;
- TLTS: mean of the per-tile fractions (for every class; the released script reads ``too_short`` from the
  ``too_long`` key, a bug reproduced only with ``compat="reference"``);
- APLS: mean of the per-tile APLS and one-way scores (SpaceNet's protocol).

``compat="reference"`` passes ``compat="reference"`` to every metric that has it (OPT-J, OPT-P, OPT-G, TLTS, CCQ)
and crops with the released ``crop_graph`` rules, so the numbers are those of ``lcit/metrics_delin``. APLS, JUNCT
and SUBG have no compat mode (:func:`metrics_without_compat`) and are scored in the default mode.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np

from drivemetrics._internal.compat import Compat, check_compat
from drivemetrics._internal.limits import check_graph_area, check_graph_extent, check_window
from drivemetrics._internal.pool import check_workers_or_auto, map_in_processes
from drivemetrics._internal.progress import progress_bar
from drivemetrics.graph.geometry import crop, graph_arrays, translate
from drivemetrics.roadnet.apls import apls
from drivemetrics.roadnet.ccq import ccq_graph, ccq_scores
from drivemetrics.roadnet.io import read_graph
from drivemetrics.roadnet.junct import junct, junct_scores
from drivemetrics.roadnet.opt_g import opt_g
from drivemetrics.roadnet.opt_j import opt_j
from drivemetrics.roadnet.opt_p import opt_p
from drivemetrics.roadnet.subg import subg, subg_scores
from drivemetrics.roadnet.tlts import tlts

__all__ = [
    "COMPAT_METRICS",
    "GRAPH_SUFFIXES",
    "METRICS",
    "MetricFn",
    "aggregate",
    "check_metric_names",
    "crop_protocol",
    "evaluate_dataset",
    "evaluate_pair",
    "find_pairs",
    "format_table",
    "metrics_without_compat",
]

MetricFn = Callable[..., Any]

METRICS: dict[str, MetricFn] = {
    "opt_p": opt_p,
    "opt_j": opt_j,
    "opt_g": opt_g,
    "apls": apls,
    "tlts": tlts,
    "subg": subg,
    "junct": junct,
    "ccq": ccq_graph,
}
"""Functional of every graph metric, ``fn(preds, target, **options)``."""

GRAPH_SUFFIXES = (".graph", ".txt", ".geojson", ".json", ".p", ".pkl", ".pickle", ".gpickle")


def _as_dict(result: dict[str, Any]) -> dict[str, float]:
    """Plain ``{name: number}`` of a kernel's ``dict[str, Tensor]`` (int for counts, float for scores)."""
    return {key: value.item() for key, value in result.items()}


def check_metric_names(names: Iterable[str]) -> list[str]:
    """The names as a list; ``ValueError`` naming the unknown ones."""
    names = list(names)
    unknown = sorted(set(names) - set(METRICS))
    if unknown:
        raise ValueError(f"unknown metric(s) {unknown}; choose from {sorted(METRICS)}")
    return names


COMPAT_METRICS = frozenset({"opt_p", "opt_j", "opt_g", "tlts", "ccq"})
"""Metrics whose ``compat="reference"`` reproduces the released code of Citraro et al. (``lcit/metrics_delin``).

APLS's ``compat="reference"`` is another tool (Sat2Graph's, with ``protocol="sat2graph"``): set it through
``options`` (``apls.compat=reference apls.protocol=sat2graph`` on the CLI); JUNCT and SUBG have no compat mode.
"""


def metrics_without_compat(names: Iterable[str]) -> list[str]:
    """The metrics among ``names`` that ``compat="reference"`` leaves in the default mode (not in the table)."""
    return [name for name in check_metric_names(names) if name not in COMPAT_METRICS]


def evaluate_pair(
    preds: nx.Graph,
    target: nx.Graph,
    metrics: Sequence[str] | None = None,
    options: dict[str, dict[str, Any]] | None = None,
    compat: Compat = "default",
) -> dict[str, dict[str, float]]:
    """Run ``metrics`` (default: all of :data:`METRICS`) on one pair; ``options[name]`` are keyword arguments.

    ``compat`` is passed to every metric of :data:`COMPAT_METRICS` (unless ``options`` set it).
    """
    names = check_metric_names(metrics if metrics is not None else METRICS)
    check_compat(compat)
    options = {name: dict(opts) for name, opts in (options or {}).items()}
    for name in names:
        accepted = set(inspect.signature(METRICS[name]).parameters) - {"preds", "target"}
        unknown = sorted(set(options.get(name, {})) - accepted)
        if unknown:
            raise ValueError(f"unknown option(s) {unknown} for metric {name!r}; it accepts {sorted(accepted)}")
        if name in COMPAT_METRICS:
            options.setdefault(name, {}).setdefault("compat", compat)
    return {name: _as_dict(METRICS[name](preds, target, **options.get(name, {}))) for name in names}


def aggregate(
    per_tile: Sequence[dict[str, dict[str, float]]], compat: Compat = "default"
) -> dict[str, dict[str, float]]:
    """Dataset scores from per-tile results of :func:`evaluate_pair` (see the module doc for the rules).

    ``compat="reference"`` keeps the released script's TLTS aggregation bug: ``too_short`` is the mean of the per-tile
    ``too_long``.
    """
    reference = check_compat(compat)
    if not per_tile:
        raise ValueError("`per_tile` is empty: nothing to aggregate")
    out: dict[str, dict[str, float]] = {}

    def total(name: str, key: str) -> float:
        return float(sum(tile[name][key] for tile in per_tile))

    def mean(name: str, key: str) -> float:
        return total(name, key) / len(per_tile)

    def f1(p: float, r: float) -> float:
        return 2 * p * r / (p + r) if p + r > 0 else 0.0

    names = [name for name in per_tile[0] if name in METRICS]
    for name in names:
        if name == "opt_p":
            p, r = mean(name, "precision"), mean(name, "recall")
            out[name] = {"precision": p, "recall": r, "f1": f1(p, r)}
        elif name == "opt_j":
            tp, pp, ap = total(name, "tp"), total(name, "pp"), total(name, "ap")
            p, r = (tp / pp if pp else 0.0), (tp / ap if ap else 0.0)
            out[name] = {"precision": p, "recall": r, "f1": f1(p, r), "tp": tp, "pp": pp, "ap": ap}
        elif name == "opt_g":
            n_pred, n_gt = total(name, "n_pred"), total(name, "n_gt")
            n_sp, n_mi = total(name, "n_spurious"), total(name, "n_missing")
            p = (n_pred - n_sp) / n_pred if n_pred else 0.0
            r = (n_gt - n_mi) / n_gt if n_gt else 0.0
            out[name] = {"precision": p, "recall": r, "f1": f1(p, r)}
        elif name == "subg":
            counts = [int(total(name, k)) for k in ("n_marbles", "n_holes", "n_spurious", "n_empty")]
            out[name] = dict(zip(("f1", "spurious", "missing"), subg_scores(*counts), strict=True))
        elif name == "ccq":
            counts = [total(name, k) for k in ("matched_pred", "total_pred", "matched_gt", "total_gt")]
            out[name] = dict(zip(("correctness", "completeness", "quality"), ccq_scores(*counts), strict=True))
        elif name == "junct":
            fc, fe = junct_scores(
                total(name, "correct_score"),
                int(total(name, "n_gt")),
                total(name, "error_score"),
                int(total(name, "n_pred")),
            )
            out[name] = {"f_correct": fc, "f_error": fe}
        elif name == "tlts":
            out[name] = {k: mean(name, k) for k in ("correct", "too_long", "too_short", "infeasible")}
            if reference:
                out[name]["too_short"] = out[name]["too_long"]
        elif name == "apls":
            out[name] = {k: mean(name, k) for k in ("apls", "gt_to_pred", "pred_to_gt")}
    return out


def find_pairs(gt: str | Path, pred: str | Path) -> tuple[list[tuple[str, Path, Path | None]], list[str]]:
    """Match GT and prediction files.

    Two files make one pair named after the GT file. Two folders are matched by file stem (name without
    suffix); a GT tile without a prediction gets ``None`` (scored as an empty prediction). Returns
    ``([(name, gt_path, pred_path_or_None), ...], [prediction stems without GT])``.
    """
    gt, pred = Path(gt), Path(pred)
    if not gt.exists():
        raise FileNotFoundError(f"`--gt` not found: {gt}")
    if not pred.exists():
        raise FileNotFoundError(f"`--pred` not found: {pred}")
    if gt.is_file() and pred.is_file():
        return [(gt.stem, gt, pred)], []
    if gt.is_file() != pred.is_file():
        raise ValueError("`gt` and `pred` must both be files or both be folders")

    def listing(folder: Path) -> dict[str, Path]:
        files = sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in GRAPH_SUFFIXES)
        return {p.stem: p for p in files}

    gts, preds = listing(gt), listing(pred)
    if not gts:
        raise ValueError(f"no graph file ({', '.join(GRAPH_SUFFIXES)}) in the GT folder {gt}")
    pairs = [(name, path, preds.get(name)) for name, path in gts.items()]
    return pairs, sorted(set(preds) - set(gts))


def crop_protocol(
    graph: nx.Graph,
    window: tuple[float, float, float, float] | None,
    border: float,
    compat: Compat = "default",
    extent: tuple[float, float, float, float] | None = None,
) -> nx.Graph:
    """The RoadTracer protocol of Citraro et al. (``examples/compute_scores_roadtracer.py``).

    With a ``window = (xmin, ymin, xmax, ymax)``: crop to it, then shift it to the origin; with ``border > 0``, then
    crop ``[border, width - border) x [border, height - border)`` of the shifted tile. Without a window, ``border``
    shrinks ``extent`` (the GT's bounding box) in place. ``compat`` chooses the crop rules (see :func:`crop`).
    With a window, the result's graph attribute ``"tile"`` is the shifted window ``(0, 0, width, height)`` (the
    released CCQ canvas, used by ``ccq_graph(compat="reference")``).
    """
    if window is not None:
        xmin, ymin, xmax, ymax = window
        graph = translate(crop(graph, xmin, ymin, xmax, ymax, compat=compat), -xmin, -ymin)
        extent = (0.0, 0.0, xmax - xmin, ymax - ymin)
    if border:
        if extent is None:
            raise ValueError("`border` without `window` needs the `extent` to shrink")
        graph = crop(graph, *extent, border=border, compat=compat)
    if window is not None:
        graph.graph["tile"] = (0.0, 0.0, float(window[2] - window[0]), float(window[3] - window[1]))
    return graph


def _graph_size(graph: nx.Graph) -> dict[str, int]:
    return {"nodes": graph.number_of_nodes(), "edges": graph.number_of_edges()}


def _evaluate_files(job: tuple) -> tuple[str, dict[str, dict[str, float]]]:
    name, gt_path, pred_path, metrics, options, window, border, compat = job
    target = read_graph(gt_path)
    preds = read_graph(pred_path) if pred_path is not None else nx.Graph()
    check_graph_extent(graph_arrays(target).pos, gt_path)
    if pred_path is not None:
        check_graph_extent(graph_arrays(preds).pos, pred_path)
        if window is None:  # the CCQ canvas covers both graphs
            both = np.concatenate([graph_arrays(target).pos, graph_arrays(preds).pos])
            check_graph_area(both, f"{gt_path} with {pred_path}")
    if window is not None or border:
        extent = None
        if window is None:  # the GT's bounding box
            pos = graph_arrays(target).pos
            extent = (*pos.min(axis=0).tolist(), *pos.max(axis=0).tolist())
        target = crop_protocol(target, window, border, compat, extent)
        preds = crop_protocol(preds, window, border, compat, extent) if preds.number_of_edges() else preds
    options = {key: dict(value) for key, value in options.items()}
    if window is not None and "ccq" in metrics and "canvas" not in options.get("ccq", {}):
        scale = options.get("ccq", {}).get("scale", 0.25)
        width, height = window[2] - window[0], window[3] - window[1]  # the shifted tile, as the released script
        options.setdefault("ccq", {})["canvas"] = (0.0, 0.0, round(height * scale), round(width * scale))
    result = evaluate_pair(preds, target, metrics, options, compat=compat)
    result["graphs"] = {"gt": _graph_size(target), "pred": _graph_size(preds)}
    return name, result


def evaluate_dataset(
    pairs: Sequence[tuple[str, Path, Path | None]],
    metrics: Sequence[str] | None = None,
    options: dict[str, dict[str, Any]] | None = None,
    workers: int | None = 1,
    progress: bool | None = None,
    window: tuple[float, float, float, float] | None = None,
    border: float = 0.0,
    compat: Compat = "default",
) -> tuple[dict[str, dict[str, dict[str, float]]], dict[str, dict[str, float]]]:
    """Evaluate tiles (from :func:`find_pairs`); returns ``(per_tile by name, aggregate)``.

    ``workers > 1`` evaluates tiles in a process pool, ``None`` only where the measured time of the first tiles says
    a pool pays (results do not depend on it: every metric is seeded).
    ``window = (xmin, ymin, xmax, ymax)`` and ``border`` crop both graphs first (:func:`crop_protocol`: crop to the
    window, shift it to the origin, then cut the border; with a border but no window the GT's bounding box is
    shrunk); the CCQ canvas is then the shifted window. The RoadTracer protocol of Citraro et al. uses the city's
    8192 px region and a 260 px border. Each tile's result also holds ``"graphs"``: the node and edge counts of
    ``"gt"`` and ``"pred"`` after cropping. ``compat="reference"``: the released code's crop and metrics.
    """
    names = check_metric_names(metrics if metrics is not None else METRICS)
    check_compat(compat)
    workers = check_workers_or_auto(workers)
    if not border >= 0:
        raise ValueError(f"`border` must be >= 0, got {border}")
    if window is not None:
        check_window(window, "`window` (--window)")
    jobs = [(name, g, p, names, options or {}, window, border, compat) for name, g, p in pairs]
    bar = progress_bar(len(jobs), "graph-eval", "tile", progress)
    results: dict[str, dict[str, dict[str, float]]] = {}
    try:
        for name, res in map_in_processes(_evaluate_files, jobs, workers):
            results[name] = res
            bar.update()
    finally:
        bar.close()
    ordered = {name: results[name] for name, _, _ in pairs}
    return ordered, aggregate(list(ordered.values()), compat)


def format_table(scores: dict[str, dict[str, float]]) -> str:
    """Aligned text table ``metric | score = value ...`` of aggregated scores."""
    lines = []
    for name, values in scores.items():
        cells = "  ".join(f"{k}={v:.4f}" for k, v in values.items() if isinstance(v, float) and not math.isnan(v))
        lines.append(f"{name:<6}  {cells}")
    return "\n".join(lines)
