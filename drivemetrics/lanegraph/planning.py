"""Planning MMD / MED / SR of UrbanLaneGraph: the kernel :func:`planning` and its Metric classes."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import networkx as nx
import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import dijkstra
from torch import Tensor

from drivemetrics._internal.compat import Compat, check_compat
from drivemetrics._internal.metric import ScalarMetric, add_config_state
from drivemetrics._internal.validation import check_graph
from drivemetrics.lanegraph._metric import PerSampleMean
from drivemetrics.lanegraph.geometry import (
    PLANNING_FAIL,
    PLANNING_METRICS,
    LaneArrays,
    as_lane_arrays,
    as_scalars,
    lane_arrays,
)

__all__ = [
    "LaneGraphPlanningMED",
    "LaneGraphPlanningMMD",
    "LaneGraphPlanningMetrics",
    "LaneGraphPlanningSuccessRate",
    "ReferencePlanningRandom",
    "planning",
    "planning_values",
]

# ---------------------------------------------------------------------------------------------------------------
# planning


class ReferencePlanningRandom:
    """The evaluator's global random streams: ``random.seed(0)`` and ``np.random.seed(0)`` at import, consumed by
    every planning sample in evaluation order (pass one instance through all samples of a run)."""

    def __init__(self) -> None:
        import random

        self.python = random.Random(0)
        self.numpy = np.random.RandomState(0)


def _resample_path(path: np.ndarray, n: int = 100) -> np.ndarray:
    """``path`` ``(K, 2)`` resampled to ``n`` points linearly by index (as ``interp1d`` over ``arange(K)``)."""
    s = np.linspace(0, len(path) - 1, n)
    idx = np.arange(len(path))
    return np.stack([np.interp(s, idx, path[:, 0]), np.interp(s, idx, path[:, 1])], axis=1)


def _path_metrics(path_gt: np.ndarray, path_pred: np.ndarray) -> tuple[float, float]:
    gt = _resample_path(path_gt)
    pred = _resample_path(path_pred)
    dist = np.linalg.norm(gt[:, None, :] - pred[None, :, :], axis=-1)
    return float(np.mean(dist.min(axis=1))), float(np.linalg.norm(gt[-1] - pred[-1]))


def _closest(pos: np.ndarray, point: np.ndarray, n: int = 5) -> np.ndarray:
    dist = np.linalg.norm(pos - point[None, :], axis=1).reshape(-1, 1)
    return np.argsort(dist, axis=0)[:n].reshape(-1)


def _summarise_plans(results: list, attempts_with_gt: int, total_attempts: int, compat: str) -> dict:
    if compat == "reference":
        if total_attempts == 0 or not results:  # the evaluator crashes (ZeroDivisionError / IndexError)
            return {"mmd": math.nan, "med": math.nan, "sr": math.nan}
        successes = sum(ok for _, _, ok in results)
        return {
            "mmd": float(np.mean([m for m, _, _ in results])),
            "med": float(np.mean([e for _, e, _ in results])),
            "sr": successes / total_attempts,
        }
    if not results:
        return {"mmd": math.nan, "med": math.nan, "sr": math.nan}
    return {
        "mmd": float(np.mean([m for m, _, _ in results])),
        "med": float(np.mean([e for _, e, _ in results])),
        "sr": sum(ok for _, _, ok in results) / attempts_with_gt,
    }


def _planning_reference(g_gt: nx.DiGraph, g_pred: nx.DiGraph, rand: ReferencePlanningRandom, attempts: int) -> dict:
    gt, pred = lane_arrays(g_gt, "target"), lane_arrays(g_pred, "preds")
    gt_nodes, pred_nodes = gt.nodes, pred.nodes
    results: list = []
    total = 0
    for _ in range(attempts):
        start = rand.python.choice(gt_nodes)
        cur = start
        steps = 0
        while steps < 100:
            succ = list(g_gt.successors(cur))
            if not succ:
                break
            cur = succ[rand.numpy.randint(0, len(succ))]
            steps += 1
        if steps < 50:
            continue
        p_start = np.asarray(g_gt.nodes[start]["pos"], dtype=np.float64)
        p_end = np.asarray(g_gt.nodes[cur]["pos"], dtype=np.float64)

        def plan(graph: nx.DiGraph, arr: LaneArrays, nodes: list, a: np.ndarray, b: np.ndarray) -> list | None:
            if not len(nodes):
                return None
            for ns in _closest(arr.pos, a).tolist():
                for ne in _closest(arr.pos, b).tolist():
                    try:
                        return nx.shortest_path(graph, nodes[ns], nodes[ne])
                    except nx.NetworkXNoPath:
                        pass
            return None

        total += 1
        path_gt = plan(g_gt, gt, gt_nodes, p_start, p_end)
        if path_gt is None:
            continue
        path_pred = plan(g_pred, pred, pred_nodes, p_start, p_end)
        if path_pred is None or len(path_pred) < 2:
            results.append((PLANNING_FAIL, PLANNING_FAIL, False))
            continue
        idx_gt = {n: i for i, n in enumerate(gt_nodes)}
        idx_pred = {n: i for i, n in enumerate(pred_nodes)}
        mmd, med = _path_metrics(gt.pos[[idx_gt[n] for n in path_gt]], pred.pos[[idx_pred[n] for n in path_pred]])
        results.append((mmd, med, True))
    return _summarise_plans(results, 0, total, "reference")


def _directed_graph(arr: LaneArrays) -> csr_matrix:
    n = len(arr.pos)
    e = arr.edges[arr.edges[:, 0] != arr.edges[:, 1]] if len(arr.edges) else arr.edges
    w = np.maximum(np.linalg.norm(arr.pos[e[:, 1]] - arr.pos[e[:, 0]], axis=1), 1e-12)
    mat = csr_matrix((w, (e[:, 0], e[:, 1])), shape=(n, n))
    mat.sum_duplicates()
    return mat


def _shortest_path(graph: csr_matrix, starts: np.ndarray, ends: np.ndarray) -> np.ndarray | None:
    """Rows of the length-weighted shortest path from the first start (in order) reaching an end (in order)."""
    dist, pred = dijkstra(graph, directed=True, indices=starts, return_predecessors=True)
    for i in range(len(starts)):
        for e in ends.tolist():
            if np.isfinite(dist[i, e]):
                path = [e]
                while path[-1] != starts[i]:
                    path.append(int(pred[i, path[-1]]))
                return np.array(path[::-1])
    return None


def _planning_default(gt: LaneArrays, pred: LaneArrays, seed: int | Sequence[int], attempts: int) -> dict:
    rng = np.random.default_rng(seed)
    n = len(gt.nodes)
    if n == 0:
        return {"mmd": math.nan, "med": math.nan, "sr": math.nan}
    order = np.argsort(gt.edges[:, 0], kind="stable") if len(gt.edges) else np.empty(0, dtype=np.int64)
    succ = gt.edges[order, 1] if len(gt.edges) else np.empty(0, dtype=np.int64)
    first = np.searchsorted(gt.edges[order, 0], np.arange(n + 1)) if len(gt.edges) else np.zeros(n + 1, np.int64)
    g_gt, g_pred = _directed_graph(gt), _directed_graph(pred)
    results: list = []
    with_gt = 0
    for _ in range(attempts):
        start = int(rng.integers(n))
        cur, steps = start, 0
        while steps < 100:  # kept when at least 50 steps were walked (the evaluator: loop index j >= 50)
            k = first[cur + 1] - first[cur]
            if k == 0:
                break
            cur = int(succ[first[cur] + rng.integers(k)])
            steps += 1
        if steps < 50:
            continue
        p_start, p_end = gt.pos[start], gt.pos[cur]
        path_gt = _shortest_path(g_gt, _closest(gt.pos, p_start), _closest(gt.pos, p_end))
        if path_gt is None or len(path_gt) < 2:  # no route on the GT (or the walk came back to its start)
            continue
        with_gt += 1
        path_pred = None
        if len(pred.nodes):
            path_pred = _shortest_path(g_pred, _closest(pred.pos, p_start), _closest(pred.pos, p_end))
        if path_pred is None or len(path_pred) < 2:
            results.append((PLANNING_FAIL, PLANNING_FAIL, False))
            continue
        mmd, med = _path_metrics(gt.pos[path_gt], pred.pos[path_pred])
        results.append((mmd, med, True))
    return _summarise_plans(results, with_gt, attempts, None)


def planning(
    preds: nx.DiGraph,
    target: nx.DiGraph,
    *,
    compat: Compat = "default",
    seed: int | Sequence[int] = 0,
    attempts: int = 100,
    reference_random: ReferencePlanningRandom | None = None,
    validate_args: bool = True,
) -> dict[str, Tensor]:
    """Planning metrics ``{"mmd", "med", "sr"}`` (pixels, pixels, fraction) of a predicted lane graph.

    0-d float64 tensors; :func:`planning_values` returns the same values as floats (what the dataset evaluation
    writes). The parameters are those of :func:`planning_values`.

    ``validate_args`` checks that both are networkx graphs whose nodes carry a finite ``pos`` within
    ``max_abs_coordinate`` (the graph readers' limit).

    Examples:
        >>> import networkx as nx, numpy as np
        >>> from drivemetrics.functional import planning
        >>> g = nx.path_graph(80, create_using=nx.DiGraph)  # one straight 395 px lane, a node every 5 px
        >>> nx.set_node_attributes(g, {n: np.array([5.0 * n, 0.0]) for n in g}, "pos")
        >>> {k: round(float(v), 3) for k, v in planning(g, g).items()}
        {'mmd': 0.0, 'med': 0.0, 'sr': 1.0}
    """
    if validate_args:
        check_graph(preds, "preds")
        check_graph(target, "target")
    return as_scalars(planning_values(preds, target, compat, seed, attempts, reference_random))


def planning_values(
    preds: nx.DiGraph,
    target: nx.DiGraph,
    compat: Compat = "default",
    seed: int | Sequence[int] = 0,
    attempts: int = 100,
    reference_random: ReferencePlanningRandom | None = None,
) -> dict[str, float]:
    """Planning metrics ``{"mmd", "med", "sr"}`` (pixels, pixels, fraction) as floats (see :func:`planning`).

    Each of ``attempts`` tries draws a GT start node and random-walks successors for up to 100 steps (kept when the
    walk lasts >= 50 steps); the 5 nodes nearest to the start / end positions in each graph are tried in order and
    the first connected pair gives the path. Default: seeded (``seed``), length-weighted paths, SR over the
    attempts with a GT path, NaN when no attempt has one. ``compat="reference"``: the evaluator's global random
    streams (``reference_random``, fresh if None), hop-count ``nx.shortest_path``, SR over all kept walks.
    """
    check_compat(compat)
    if attempts < 1:
        raise ValueError(f"`attempts` must be >= 1, got {attempts}")
    if compat == "reference":
        lane_arrays(target, "target")
        return _planning_reference(target, preds, reference_random or ReferencePlanningRandom(), attempts)
    return _planning_default(as_lane_arrays(target, "target"), as_lane_arrays(preds, "preds"), seed, attempts)


class LaneGraphPlanningMetrics(PerSampleMean):
    """Planning MMD, MED (pixels, lower is better) and SR (success rate) averaged over lane-graph samples.

    Args:
        compat: ``"default"`` (seeded per sample with ``seed``) or ``"reference"``.
        seed: seed of the start / goal draws (default mode).
        validate_args: check the inputs' values (reads back from the device); ``False`` skips those checks.

    Examples:
        >>> import networkx as nx, numpy as np
        >>> from drivemetrics.lanegraph import LaneGraphPlanningMetrics
        >>> gt, pred = nx.path_graph(80, nx.DiGraph), nx.path_graph(80, nx.DiGraph)  # straight lanes 3 px apart
        >>> nx.set_node_attributes(gt, {n: np.array([5.0 * n, 0.0]) for n in gt}, "pos")
        >>> nx.set_node_attributes(pred, {n: np.array([5.0 * n, 3.0]) for n in pred}, "pos")
        >>> metric = LaneGraphPlanningMetrics()
        >>> metric.update(pred, gt)
        >>> {k: round(float(v), 3) for k, v in metric.compute().items()}
        {'mmd': 3.0, 'med': 3.0, 'sr': 1.0}
    """

    # the headline values MMD and MED are distances (lower is better); log SR through LaneGraphPlanningSuccessRate
    higher_is_better = False
    plot_lower_bound = 0.0
    plot_upper_bound = None  # distances in pixels: unbounded
    _keys = PLANNING_METRICS

    def __init__(self, compat: Compat = "default", seed: int = 0, validate_args: bool = True, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.validate_args = bool(validate_args)
        check_compat(compat)
        self.compat = compat
        self.seed = seed
        add_config_state(self, ("LaneGraphPlanningMetrics", self.compat, seed))

    def _sample(self, pred: nx.DiGraph, gt: nx.DiGraph) -> dict[str, float]:
        return planning_values(pred, gt, self.compat, seed=self.seed)


class LaneGraphPlanningMMD(ScalarMetric, LaneGraphPlanningMetrics):
    """Planning MMD, pixels (the ``'mmd'`` value of :class:`LaneGraphPlanningMetrics`; same arguments and states).

    Examples:
        >>> from drivemetrics.lanegraph import LaneGraphPlanningMMD, planning_example_inputs
        >>> LaneGraphPlanningMMD()(**planning_example_inputs())
        tensor(3., dtype=torch.float64)
    """

    key = "mmd"  # a distance: lower is better, unbounded (as the family)


class LaneGraphPlanningMED(ScalarMetric, LaneGraphPlanningMetrics):
    """Planning MED, pixels (the ``'med'`` value of :class:`LaneGraphPlanningMetrics`; same arguments and states).

    Examples:
        >>> from drivemetrics.lanegraph import LaneGraphPlanningMED, planning_example_inputs
        >>> LaneGraphPlanningMED()(**planning_example_inputs())
        tensor(3., dtype=torch.float64)
    """

    key = "med"  # a distance: lower is better, unbounded (as the family)


class LaneGraphPlanningSuccessRate(ScalarMetric, LaneGraphPlanningMetrics):
    """Planning success rate (the ``'sr'`` value of :class:`LaneGraphPlanningMetrics`; same arguments and states).

    Examples:
        >>> from drivemetrics.lanegraph import LaneGraphPlanningSuccessRate, planning_example_inputs
        >>> LaneGraphPlanningSuccessRate()(**planning_example_inputs())
        tensor(1., dtype=torch.float64)
    """

    higher_is_better = True
    plot_upper_bound = 1.0
    key = "sr"
