"""The one APLS core (path-length similarity of two graphs), shared by road-network and lane-graph APLS.

Both :func:`drivemetrics.roadnet.apls.apls` (CosmiQ / Sat2Graph parameter sets) and
:func:`drivemetrics.lanegraph.apls.lanegraph_apls` (UrbanLaneGraph parameter set) compute their control points,
then call :func:`path_differences` (snapping, chunked multi-source Dijkstra, capped relative differences) and
:func:`apls_scores`. The definition is documented in :mod:`drivemetrics.roadnet.apls`. This module defines no
Metric.
"""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
from scipy.sparse.csgraph import dijkstra

from drivemetrics.graph.geometry import CHUNK, graph_arrays, length_csgraph, road_chains, snap_points

__all__ = ["PARAMETER_SETS", "apls_scores", "control_points", "path_differences"]

PARAMETER_SETS: dict[str, dict[str, float]] = {
    "cosmiq": {"control_spacing": 50.0, "max_snap_dist": 4.0, "min_path_length": 10.0},
    "sat2graph": {"control_spacing": 50.0, "max_snap_dist": 10.0, "min_path_length": 100.0},
    "urbanlanegraph": {"control_spacing": 10.0, "max_snap_dist": 5.0, "min_path_length": 20.0},  # metres
}
"""APLS parameters (graph units) of each protocol: road networks (CosmiQ / SpaceNet, Sat2Graph) and UrbanLaneGraph."""


def apls_scores(
    diff_gp: float, pairs_gp: float, diff_pg: float, pairs_pg: float, combine: str = "harmonic"
) -> tuple[float, float, float]:
    """``(apls, gt_to_pred, pred_to_gt)`` from summed differences and pair counts (a side without pairs scores 0)."""
    c_gp = 1.0 - diff_gp / pairs_gp if pairs_gp > 0 else 0.0
    c_pg = 1.0 - diff_pg / pairs_pg if pairs_pg > 0 else 0.0
    if combine == "arithmetic":
        value = (c_gp + c_pg) / 2
    else:
        value = 2 * c_gp * c_pg / (c_gp + c_pg) if c_gp > 0 and c_pg > 0 else 0.0
    return float(value), float(c_gp), float(c_pg)


def control_points(graph: nx.Graph, spacing: float) -> np.ndarray:
    """``(K, 2)`` control points: degree != 2 nodes, then points every ~``spacing`` along each road (see module doc)."""
    arrays = graph_arrays(graph)
    index = {n: i for i, n in enumerate(arrays.nodes)}
    ctrl = [index[n] for n in graph.nodes if graph.degree(n) != 2]
    points = [arrays.pos[ctrl]]
    for chain in road_chains(graph):
        poly = arrays.pos[[index[n] for n in chain]]
        seg = np.linalg.norm(np.diff(poly, axis=0), axis=1)
        cum = np.r_[0.0, np.cumsum(seg)]
        length = cum[-1]
        if length > spacing:
            n_int = math.ceil(length / spacing - 1e-9)
            at = length * np.arange(1, n_int) / n_int
        elif length >= 0.75 * spacing:
            at = np.array([length / 2])
        else:
            continue
        k = np.clip(np.searchsorted(cum, at, side="right") - 1, 0, len(seg) - 1)
        t = (at - cum[k]) / np.maximum(seg[k], 1e-12)
        points.append(poly[k] + t[:, None] * (poly[k + 1] - poly[k]))
    return np.concatenate(points).reshape(-1, 2)


def _snap_rows(graph: nx.Graph, points: np.ndarray, max_dist: float) -> tuple[nx.Graph, np.ndarray]:
    """Insert ``points`` into ``graph``; returns the new graph and each point's node row (-1 when missing)."""
    new, ids = snap_points(graph, points, max_dist)
    index = {n: i for i, n in enumerate(new.nodes)}
    return new, np.array([-1 if n is None else index[n] for n in ids], dtype=np.int64)


def _one_way(
    own: nx.Graph,
    own_rows: np.ndarray,
    other: nx.Graph,
    other_rows: np.ndarray,
    min_path_length: float,
    strict: bool,
    max_sources: int | None,
    rng: np.random.Generator,
) -> tuple[float, int]:
    """Summed capped differences and pair count for control points of ``own`` (rows in both snapped graphs)."""
    n_cp = len(own_rows)
    if n_cp < 2:
        return 0.0, 0
    sources = np.arange(n_cp)
    if max_sources is not None and n_cp > max_sources:
        sources = np.sort(rng.choice(n_cp, size=max_sources, replace=False))
    own_arr, other_arr = graph_arrays(own), graph_arrays(other)
    own_cs = length_csgraph(own_arr.pos, own_arr.edges)
    other_cs = length_csgraph(other_arr.pos, other_arr.edges) if len(other_arr.edges) else None
    present = other_rows >= 0
    total_diff, total_pairs = 0.0, 0
    for lo in range(0, len(sources), CHUNK):
        src = sources[lo : lo + CHUNK]
        l_own = dijkstra(own_cs, directed=False, indices=own_rows[src])[:, own_rows]  # R x K
        l_other = np.full_like(l_own, np.inf)
        ok = present[src]
        if other_cs is not None and ok.any():
            d = dijkstra(other_cs, directed=False, indices=other_rows[src[ok]])
            l_other[ok] = np.where(present[None, :], d[:, np.where(present, other_rows, 0)], np.inf)
        long_enough = l_own > min_path_length if strict else l_own >= min_path_length
        valid = np.isfinite(l_own) & long_enough & (l_own > 0)
        valid[np.arange(len(src)), src] = False
        with np.errstate(invalid="ignore"):
            diff = np.minimum(1.0, np.abs(l_own - l_other) / l_own)
        diff = np.where(np.isfinite(l_other), diff, 1.0)
        total_diff += float(diff[valid].sum())
        total_pairs += int(valid.sum())
    return total_diff, total_pairs


def path_differences(
    target: nx.Graph,
    preds: nx.Graph,
    cp_target: np.ndarray,
    cp_preds: np.ndarray,
    max_snap_dist: float,
    min_path_length: float,
    strict: bool,
    max_sources: int | None,
    seed: int,
) -> tuple[float, int, float, int]:
    """Summed capped path differences and pair counts, GT -> prediction then prediction -> GT.

    Each graph receives its own control points (exactly on it) and the other's (within ``max_snap_dist``); paths
    run between the control points of one graph (``(K, 2)`` arrays ``cp_*``), pairs shorter than
    ``min_path_length`` (``strict``: not longer) are skipped; at most ``max_sources`` sources per direction, drawn
    with ``seed`` (GT side first).

    Returns:
        ``(diff_gt_to_pred, pairs_gt_to_pred, diff_pred_to_gt, pairs_pred_to_gt)``.
    """
    own = 1e-6  # own control points lie on the graph
    gt2, rows_gt_own = _snap_rows(target, cp_target, own)
    gt2, rows_gt_other = _snap_rows(gt2, cp_preds, max_snap_dist)
    pred2, rows_pred_own = _snap_rows(preds, cp_preds, own)
    pred2, rows_pred_other = _snap_rows(pred2, cp_target, max_snap_dist)
    # rows of the first insertion stay valid: snap_points only appends nodes
    rng = np.random.default_rng(seed)
    d_gp, n_gp = _one_way(gt2, rows_gt_own, pred2, rows_pred_other, min_path_length, strict, max_sources, rng)
    d_pg, n_pg = _one_way(pred2, rows_pred_own, gt2, rows_gt_other, min_path_length, strict, max_sources, rng)
    return d_gp, n_gp, d_pg, n_pg
