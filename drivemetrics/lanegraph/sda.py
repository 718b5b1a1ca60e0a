"""SDA@R: split-detection accuracy of UrbanLaneGraph (Hungarian matching of split nodes)."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
from scipy.optimize import linear_sum_assignment
from torch import Tensor

from drivemetrics._internal.compat import Compat, check_compat
from drivemetrics._internal.validation import check_graph
from drivemetrics.lanegraph.geometry import LaneArrays, as_lane_arrays, as_scalar

__all__ = ["matched_splits", "sda", "split_points"]

# ---------------------------------------------------------------------------------------------------------------
# SDA


def split_points(arr: LaneArrays) -> np.ndarray:
    """Positions ``(K, 2)`` of the nodes with out-degree >= 2 (in node order)."""
    out_deg = np.bincount(arr.edges[:, 0], minlength=len(arr.nodes)) if len(arr.edges) else np.zeros(len(arr.nodes))
    return arr.pos[out_deg >= 2]


def sda(
    preds: nx.DiGraph,
    target: nx.DiGraph,
    *,
    threshold: float = 20.0,
    compat: Compat = "default",
    validate_args: bool = True,
) -> Tensor:
    """Split detection accuracy SDA@``threshold`` (px): tp / (tp + fp + fn) after Hungarian matching of split nodes.

    NaN when the GT has no split node, 0 when the prediction has none. Same in both modes.

    Args:
        preds, target (networkx.DiGraph): Predicted and ground-truth lane graphs, node ``pos = (x, y)`` in pixels.
        threshold (float): Largest distance of a true-positive pair, pixels.
        compat (str): ``"default"`` or ``"reference"`` (same result).
        validate_args: check that both are networkx graphs whose nodes carry a finite
            ``pos`` within ``max_abs_coordinate`` (the graph readers' limit); ``False`` skips it.

    Returns:
        Tensor: 0-d float64 SDA in [0, 1] (NaN when the GT has no split node).

    Examples:
        >>> import networkx as nx, numpy as np
        >>> from drivemetrics.functional import sda
        >>> g = nx.DiGraph([(0, 1), (1, 2), (1, 3)])
        >>> xy = {0: (10.0, 10.0), 1: (60.0, 10.0), 2: (120.0, 10.0), 3: (120.0, 60.0)}
        >>> nx.set_node_attributes(g, {n: np.array(p) for n, p in xy.items()}, "pos")
        >>> sda(g, g)
        tensor(1., dtype=torch.float64)
        >>> h = nx.relabel_nodes(g, {3: 4}); nx.set_node_attributes(h, {4: np.array([120.0, 90.0])}, "pos")
        >>> h.add_edge(1, 5); h.nodes[5]["pos"] = np.array([100.0, 100.0])
        >>> sda(h, g)
        tensor(1., dtype=torch.float64)
    """
    if validate_args:
        check_graph(preds, "preds")
        check_graph(target, "target")
    check_compat(compat)
    gt_s = split_points(as_lane_arrays(target, "target"))
    pred_s = split_points(as_lane_arrays(preds, "preds"))
    if not len(gt_s):
        return as_scalar(math.nan)
    if not len(pred_s):
        return as_scalar(0.0)
    cost = np.linalg.norm(gt_s[:, None, :] - pred_s[None, :, :], axis=-1)
    rows, cols = linear_sum_assignment(cost)
    tp = int(np.sum(cost[rows, cols] < threshold))
    return as_scalar(tp / (len(pred_s) + len(gt_s) - tp))


def matched_splits(preds: nx.DiGraph, target: nx.DiGraph, threshold: float) -> tuple[np.ndarray, np.ndarray]:
    """GT and predicted split positions ``(K, 2)`` matched closer than ``threshold`` (for figures)."""
    gt_s = split_points(as_lane_arrays(target, "target"))
    pred_s = split_points(as_lane_arrays(preds, "preds"))
    if not len(gt_s) or not len(pred_s):
        return np.empty((0, 2)), np.empty((0, 2))
    cost = np.linalg.norm(gt_s[:, None, :] - pred_s[None, :, :], axis=-1)
    rows, cols = linear_sum_assignment(cost)
    ok = cost[rows, cols] < threshold
    return gt_s[rows[ok]], pred_s[cols[ok]]
