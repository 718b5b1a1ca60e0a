"""UrbanLaneGraph submissions: loading, per-sample preprocessing, evaluation of a split and the evaluator's pooling.

Submission and annotation pickles hold ``R[city][split][sample_id] = nx.DiGraph`` (node attribute ``pos`` in
pixels) and are read by :func:`~drivemetrics.lanegraph.io.load_lanegraph_pickle` with the restricted unpickler
(:func:`~drivemetrics.roadnet.io.safe_pickle_load`): a pickle asking for anything but graphs, numpy arrays and
builtin containers is rejected before it runs.

Tasks:

- ``successor``: every lane-graph metric on the 256 x 256 crops, as they are.
- ``full``: the (x, y) offsets in fields 2 and 3 of the sample id (``paloalto_24_15359_8592``) are subtracted from
  both graphs, then predicted nodes 50 px or more from every GT node are removed.
- ``planning``: MMD / MED / SR after the same offsets (no filtering).

Pooling (the evaluator's): per city, the mean over its GT samples ignoring NaN; overall, the mean over the cities
ignoring NaN. A GT sample without prediction scores 0.0 on every metric in the reference mode (MMD / MED included,
where the evaluator's documentation says 5000); the default mode scores it as an empty prediction (GEO / TOPO /
APLS / IoU 0, SDA 0 or NaN, MMD / MED 5000 and SR 0).
"""

from __future__ import annotations

import json
import math
import warnings
import zlib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
import torch
from scipy.spatial import cKDTree

from drivemetrics._internal.compat import Compat, check_compat
from drivemetrics._internal.distributed import Shard, current_shard
from drivemetrics._internal.files import atomic_write_text, check_output_path
from drivemetrics._internal.limits import check_coordinates, check_graph_extent, check_graph_size, short_repr
from drivemetrics._internal.pool import check_workers_or_auto, map_in_processes
from drivemetrics._internal.progress import progress_bar
from drivemetrics._internal.ragged import RaggedRows
from drivemetrics.graph.geometry import node_positions
from drivemetrics.lanegraph.geometry import LANE_METRICS, PLANNING_METRICS, lane_arrays
from drivemetrics.lanegraph.lanegraph import lanegraph_pair_values, missing_sample_values
from drivemetrics.lanegraph.planning import ReferencePlanningRandom, planning_values

__all__ = [
    "REFERENCE_CITIES",
    "TASKS",
    "evaluate_submission",
    "filter_near",
    "format_tables",
    "prepare_sample",
    "sample_offsets",
    "shift_graph",
    "write_json",
]

TASKS = ("successor", "full", "planning")
REFERENCE_CITIES = ("austin", "detroit", "miami", "paloalto", "pittsburgh", "washington")
FULL_FILTER_PX = 50.0


def sample_offsets(sample_id: str) -> tuple[float, float]:
    """The (x, y) pixel offsets in fields 2 and 3 of a full-LGP sample id (``paloalto_24_15359_8592``)."""
    parts = str(sample_id).split("_")
    try:
        return float(parts[2]), float(parts[3])
    except (IndexError, ValueError):
        raise ValueError(
            f"sample id {short_repr(sample_id)}: expected 'city_n_xoffset_yoffset...' with numeric fields 2 and 3"
        ) from None


def shift_graph(graph: nx.DiGraph, dx: float, dy: float) -> nx.DiGraph:
    """A copy of ``graph`` with every ``pos`` moved by ``(-dx, -dy)`` (the input is not modified)."""
    out = graph.copy()
    for n in out.nodes:
        p = np.asarray(graph.nodes[n]["pos"], dtype=np.float64).reshape(-1)
        out.nodes[n]["pos"] = np.array([p[0] - dx, p[1] - dy])
    return out


def filter_near(target: nx.DiGraph, source: nx.DiGraph, threshold: float = FULL_FILTER_PX) -> nx.DiGraph:
    """``source`` without its nodes at ``threshold`` px or more from every node of ``target`` (a new graph)."""
    if source.number_of_nodes() == 0:
        return source.copy()
    src = lane_arrays(source, "preds")
    tgt = lane_arrays(target, "target")
    if not len(tgt.nodes):
        return source.subgraph([]).copy()
    dist, _ = cKDTree(tgt.pos).query(src.pos, k=1)
    keep = [n for n, d in zip(src.nodes, dist.tolist(), strict=True) if d < threshold]
    return source.subgraph(keep).copy()


def prepare_sample(pred: nx.DiGraph, gt: nx.DiGraph, sample_id: str, task: str) -> tuple[nx.DiGraph, nx.DiGraph]:
    """The task's preprocessing of one ``(pred, gt)`` pair (see the module doc); returns ``(pred, gt)``."""
    if task == "successor":
        return pred, gt
    dx, dy = sample_offsets(sample_id)
    gt, pred = shift_graph(gt, dx, dy), shift_graph(pred, dx, dy)
    if task == "full":
        pred = filter_near(gt, pred)
    return pred, gt


def prepare_checked_sample(
    pred: nx.DiGraph, gt: nx.DiGraph, city: str, sample_id: str, task: str
) -> tuple[nx.DiGraph, nx.DiGraph]:
    """:func:`prepare_sample` after refusing a sample whose cost would not follow its size (a ``ValueError``
    naming the sample and the limit, see :mod:`drivemetrics._internal.limits`); returns ``(pred, gt)``.

    Each graph: at most ``max_graph_nodes`` / ``max_graph_edges``, coordinates within ``max_abs_coordinate``
    (city pixels; the full task's offsets too). Both graphs together, as scored (after the full task's shift): a
    bounding box of at most ``max_graph_extent`` px a side, because the resampling along edges (GEO / TOPO, APLS)
    and the IoU drawing grow with the edges' lengths. Real inputs: successor samples fit 256 px crops (largest
    span ~300 px), full-LGP tiles 5000 px (the 5,214-node example spans 5,300 px) at city offsets of tens of
    thousands of px. Planning routes on the graphs as they are (no drawing, no resampling): no extent check.
    """
    for graph, what in ((gt, "--gt annotation"), (pred, "--pred submission")):
        where = f"{what} {city}/{short_repr(sample_id)}"
        check_graph_size(graph.number_of_nodes(), graph.number_of_edges(), where)
        if graph.number_of_nodes():
            check_coordinates(node_positions(graph, where)[1], where)
    if task == "full":
        check_coordinates(sample_offsets(sample_id), f"sample id {short_repr(sample_id)} (x, y offsets)")
    pred, gt = prepare_sample(pred, gt, sample_id, task)
    both = [node_positions(g, "graph")[1] for g in (gt, pred) if g.number_of_nodes()]
    if both and task != "planning":
        where = f"--gt annotation with --pred submission {city}/{short_repr(sample_id)}"
        check_graph_extent(np.concatenate(both), where)
    return pred, gt


def _evaluate_job(job: tuple) -> tuple[str, str, dict[str, float]]:
    city, sample_id, gt, pred, task, compat, seed = job
    if pred is None:  # default mode only: the reference mode fills missing samples before
        pred = nx.DiGraph()
    pred, gt = prepare_checked_sample(pred, gt, city, sample_id, task)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        if task == "planning":
            values = planning_values(pred, gt, compat, seed=[seed, zlib.crc32(str(sample_id).encode())])
        else:
            values = lanegraph_pair_values(pred, gt, task, compat, seed=seed)
    return city, sample_id, values


def _nanmean(values: Iterable[float]) -> float:
    arr = np.asarray(list(values), dtype=np.float64)
    arr = arr[~np.isnan(arr)]
    return float(arr.mean()) if len(arr) else math.nan


def _city_order(cities: Iterable[str]) -> list[str]:
    cities = list(cities)
    return [c for c in REFERENCE_CITIES if c in cities] + sorted(c for c in cities if c not in REFERENCE_CITIES)


def _gather_results(
    shard: Shard, results: dict[str, dict[str, float]], jobs: list, keys: Sequence[str], sequential: bool
) -> dict[str, dict[str, float]]:
    """Every rank's per-sample values (one float64 row of ``keys`` per job) on every rank, in job order."""
    mine = list(range(len(jobs))) if sequential and shard.is_main else [] if sequential else shard.indices(len(jobs))
    rows = [[results[jobs[i][1]][k] for k in keys] for i in mine]
    values = RaggedRows.from_frames(
        [torch.tensor([row], dtype=torch.float64) for row in rows], (len(keys),), torch.float64
    )
    frames = shard.gather_frames(mine, values=values)
    return {
        jobs[i][1]: dict(zip(keys, row, strict=True))
        for i, row in zip(frames.keys.tolist(), frames.fields["values"].rows.tolist(), strict=True)
    }


def evaluate_submission(
    pred_data: dict,
    gt_data: dict,
    task: str,
    split: str = "eval",
    compat: Compat = "default",
    workers: int | None = 1,
    progress: bool | None = None,
    seed: int = 0,
) -> dict[str, Any]:
    """Evaluate every GT sample of ``split``; returns ``{"overall", "cities", "samples", "missing"}``.

    ``overall`` and ``cities[city]`` map metric -> pooled value, ``samples[sample_id]`` metric -> value (NaN where
    undefined), ``missing`` lists the GT samples without prediction. ``workers > 1`` runs a process pool, ``None``
    one only where the measured time of the first samples says it pays (results do not depend on it;
    reference-mode planning always runs in order, its random streams run through the samples).
    """
    check_compat(compat)
    if task not in TASKS:
        raise ValueError(f"`task` must be one of {TASKS}, got {task!r}")
    workers = check_workers_or_auto(workers)
    if compat == "reference" and task != "planning":  # the graph IoU draws with OpenCV: checked before any work
        from drivemetrics.lanegraph.reference import load_cv2

        load_cv2()
    keys = PLANNING_METRICS if task == "planning" else LANE_METRICS
    cities = [c for c in _city_order(gt_data) if split in gt_data[c]]
    if not cities:
        raise ValueError(f"the annotations hold no split {short_repr(split)} (cities: {sorted(gt_data)})")
    samples: dict[str, dict[str, float]] = {}
    city_of: dict[str, str] = {}
    jobs = []
    missing = []
    for city in cities:
        preds_city = (pred_data.get(city) or {}).get(split) or {}
        for sample_id, gt in gt_data[city][split].items():
            city_of[sample_id] = city
            pred = preds_city.get(sample_id, preds_city.get(f"{sample_id}-rgb"))
            if pred is None:
                missing.append(sample_id)
                if compat == "reference":
                    samples[sample_id] = missing_sample_values(task)
                    continue
            jobs.append((city, sample_id, gt, pred, task, compat, seed))
    # under torchrun each rank evaluates its shard of the samples (reference planning: one random stream, rank 0)
    shard = current_shard()
    sequential = task == "planning" and compat == "reference"
    all_jobs = jobs
    jobs = (jobs if shard.is_main else []) if sequential else shard.take(jobs)
    bar = progress_bar(len(jobs), f"lanegraph-eval {task}", "sample", progress if shard.is_main else False)
    results: dict[str, dict[str, float]] = {}
    if sequential:
        rand = ReferencePlanningRandom()
        for city, sample_id, gt, pred, *_ in jobs:
            p, g = prepare_checked_sample(pred, gt, city, sample_id, task)
            results[sample_id] = planning_values(p, g, "reference", reference_random=rand)
            bar.update()
    elif workers == 1 or len(jobs) <= 1:
        for job in jobs:
            _, sample_id, values = _evaluate_job(job)
            results[sample_id] = values
            bar.update()
    else:
        # spawned workers, terminated on Ctrl-C (drivemetrics._internal.pool)
        for _, sample_id, values in map_in_processes(_evaluate_job, jobs, workers):
            results[sample_id] = values
            bar.update()
    bar.close()
    if shard.world > 1:
        results = _gather_results(shard, results, all_jobs, keys, sequential)
    samples.update(results)
    ordered = {sid: samples[sid] for city in cities for sid in gt_data[city][split]}
    per_city = {city: {k: _nanmean(ordered[sid][k] for sid in gt_data[city][split]) for k in keys} for city in cities}
    overall = {k: _nanmean(per_city[c][k] for c in cities) for k in keys}
    return {"overall": overall, "cities": per_city, "samples": ordered, "missing": missing}


def _json_ready(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _json_ready(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_json_ready(v) for v in obj]
    if isinstance(obj, (float, np.floating)):
        return None if math.isnan(float(obj)) else float(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    return obj


def write_json(result: dict[str, Any], path: str | Path, inputs: Iterable[str | Path] = ()) -> None:
    """Write ``result`` as JSON (NaN as null) atomically: a temporary file in the target folder, then ``os.replace``.

    Raises ``ValueError`` if ``path`` is one of ``inputs`` (a command never writes over its inputs).
    """
    inputs = list(inputs)
    check_output_path(path, input_files=inputs, input_dirs=inputs, option="--json", is_folder=False)
    payload = {k: result[k] for k in ("overall", "cities", "samples") if k in result}
    atomic_write_text(path, json.dumps(_json_ready(payload), indent=2, allow_nan=False))


def format_tables(result: dict[str, Any]) -> str:
    """Text table: one row per city and the overall row, one column per metric."""
    keys = list(result["overall"])
    header = f"{'city':<12}" + "".join(f"{k:>15}" for k in keys)
    rows = [header, "-" * len(header)]

    def fmt(v: float) -> str:
        return f"{'nan':>15}" if math.isnan(v) else f"{v:>15.4f}"

    for city, values in result["cities"].items():
        rows.append(f"{city:<12}" + "".join(fmt(values[k]) for k in keys))
    rows.append("-" * len(header))
    rows.append(f"{'overall':<12}" + "".join(fmt(result["overall"][k]) for k in keys))
    return "\n".join(rows)
