"""UrbanLaneGraph helpers shared by the lane-graph kernels: lane arrays, constants, compat check.

Defines no Metric.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import networkx as nx
import numpy as np
from scipy.sparse import csr_matrix

from drivemetrics.graph.geometry import node_positions
from drivemetrics.graph.path_similarity import PARAMETER_SETS

__all__ = [
    "APLS_MIN_PATH_M",
    "APLS_REFERENCE_MAX_NODES",
    "APLS_SNAP_M",
    "APLS_SPACING_M",
    "INTERP_SPACING",
    "LANE_METRICS",
    "MATCH_DIST",
    "METRES_PER_PX",
    "PLANNING_FAIL",
    "PLANNING_METRICS",
    "REFERENCE_CLIP",
    "TOPO_RADIUS",
    "TOPO_SEED_EVERY",
    "LaneArrays",
    "as_lane_arrays",
    "as_scalar",
    "as_scalars",
    "lane_arrays",
    "length_graph",
]

if TYPE_CHECKING:
    from torch import Tensor

LANE_METRICS = ("topo_precision", "topo_recall", "geo_precision", "geo_recall", "apls", "sda20", "sda50", "iou")
PLANNING_METRICS = ("mmd", "med", "sr")

INTERP_SPACING = 2  # px, GEO/TOPO resampling (``int(L) // 2`` pieces per edge)
MATCH_DIST = 8.0  # px, GEO/TOPO matching distance
TOPO_RADIUS = 400.0  # px of graph distance around every 10th matched pair
TOPO_SEED_EVERY = 10
REFERENCE_CLIP = 4096  # px, the evaluator's hard-coded canvas for GEO/TOPO
METRES_PER_PX = 0.15
APLS_SNAP_M = PARAMETER_SETS["urbanlanegraph"]["max_snap_dist"]  # 5 m
APLS_MIN_PATH_M = PARAMETER_SETS["urbanlanegraph"]["min_path_length"]  # 20 m
APLS_SPACING_M = PARAMETER_SETS["urbanlanegraph"]["control_spacing"]  # 10 m
APLS_REFERENCE_MAX_NODES = 2000  # the evaluator's sampled path (broken on Python >= 3.11) from this GT size
PLANNING_FAIL = 5000.0  # px, MMD / MED of a failed plan


@dataclass(frozen=True)
class LaneArrays:
    """A lane graph as arrays: ``nodes[i]`` is the id of row ``i`` of ``pos`` ``(N, 2)`` (pixels); ``edges`` ``(E, 2)``
    holds directed row pairs in ``graph.edges`` order (self-loops and duplicate positions kept)."""

    nodes: list
    pos: np.ndarray
    edges: np.ndarray


def lane_arrays(graph: object, name: str) -> LaneArrays:
    """Check a lane graph and return its arrays.

    ``graph`` must be a :class:`networkx.DiGraph` (or MultiDiGraph) whose every node has ``pos`` = two finite
    numbers; errors name ``name`` and the node. The graph is not modified.
    """
    if not isinstance(graph, nx.DiGraph):
        kind = type(graph).__name__
        raise TypeError(f"`{name}` must be a directed lane graph (networkx.DiGraph), got {kind}")
    nodes, pos = node_positions(graph, name)
    index = {n: i for i, n in enumerate(nodes)}
    edges = np.array([(index[u], index[v]) for u, v in graph.edges()], dtype=np.int64).reshape(-1, 2)
    return LaneArrays(nodes, pos, edges)


def as_scalar(value: float) -> Tensor:
    """``value`` as a 0-d float64 tensor: the kernels' return convention (NaN stays NaN)."""
    import torch

    return torch.tensor(float(value), dtype=torch.float64)


def as_scalars(values: dict[str, float]) -> dict[str, Tensor]:
    """``{key: 0-d float64 tensor}`` of a dict of floats (the kernels' return convention)."""
    return {key: as_scalar(value) for key, value in values.items()}


def as_lane_arrays(graph: object, name: str) -> LaneArrays:
    """``graph`` itself if it is already :class:`LaneArrays`, else :func:`lane_arrays` of it (checked, ``name``)."""
    return graph if isinstance(graph, LaneArrays) else lane_arrays(graph, name)


def length_graph(pos: np.ndarray, edges: np.ndarray) -> csr_matrix:
    """Symmetric sparse adjacency weighted by edge length (zero lengths stored as 1e-12 so they stay edges)."""
    n = len(pos)
    if not len(edges):
        return csr_matrix((n, n))
    w = np.maximum(np.linalg.norm(pos[edges[:, 1]] - pos[edges[:, 0]], axis=1), 1e-12)
    rows = np.concatenate([edges[:, 0], edges[:, 1]])
    cols = np.concatenate([edges[:, 1], edges[:, 0]])
    mat = csr_matrix((np.concatenate([w, w]), (rows, cols)), shape=(n, n))
    mat.sum_duplicates()
    return mat
