"""Graph IoU of UrbanLaneGraph: both graphs drawn as lanes, IoU of the two masks."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
from torch import Tensor

from drivemetrics._internal.compat import Compat, check_compat
from drivemetrics._internal.validation import check_graph
from drivemetrics.graph.geometry import index_in_group
from drivemetrics.lanegraph.geometry import LaneArrays, as_lane_arrays, as_scalar
from drivemetrics.lanegraph.reference import opencv_graph_iou

__all__ = ["graph_iou"]

# ---------------------------------------------------------------------------------------------------------------
# graph IoU


def _raster_keys(
    p0: np.ndarray, p1: np.ndarray, radius: float, origin: tuple[int, int], shape: tuple[int, int]
) -> np.ndarray:
    """Flat indices ``row * width + col`` of the pixels whose center lies within ``radius`` of a segment.

    ``origin = (x0, y0)`` is the pixel at index 0; pixels outside ``shape = (height, width)`` are dropped. Each
    segment's capsule is convex, so on every pixel row it covers one interval: the union of the intervals of its
    two end discs and of its band, computed in closed form; the pixels are generated from these spans.
    """
    if not len(p0):
        return np.empty(0, dtype=np.int64)
    eps = 1e-9
    p0 = np.asarray(p0, dtype=np.float64) - origin
    p1 = np.asarray(p1, dtype=np.float64) - origin
    y_lo = np.maximum(np.ceil(np.minimum(p0[:, 1], p1[:, 1]) - radius - eps), 0).astype(np.int64)
    y_hi = np.minimum(np.floor(np.maximum(p0[:, 1], p1[:, 1]) + radius + eps), shape[0] - 1).astype(np.int64)
    n_rows = np.maximum(y_hi - y_lo + 1, 0)
    seg = np.repeat(np.arange(len(p0)), n_rows)
    y = (y_lo[seg] + index_in_group(n_rows)).astype(np.float64)
    a, b = p0[seg], p1[seg]
    left = np.full(len(y), np.inf)
    right = np.full(len(y), -np.inf)
    for c in (a, b):  # end discs
        h2 = radius * radius - (y - c[:, 1]) ** 2
        ok = h2 >= -eps
        h = np.sqrt(np.maximum(h2, 0.0))
        left = np.where(ok, np.minimum(left, c[:, 0] - h), left)
        right = np.where(ok, np.maximum(right, c[:, 0] + h), right)
    d = b - a
    length = np.hypot(d[:, 0], d[:, 1])
    safe = np.where(length > 0, length, 1.0)
    u = d / safe[:, None]
    lo_x = np.full(len(y), -np.inf)
    hi_x = np.full(len(y), np.inf)
    feasible = length > 0
    # band: -r <= (p - a) . n <= r and 0 <= (p - a) . u <= L, with n = (-u_y, u_x) and p = (x, y)
    for k, m, c1, c2 in (
        (-u[:, 1], (y - a[:, 1]) * u[:, 0], -radius, radius),
        (u[:, 0], (y - a[:, 1]) * u[:, 1], 0.0, length),
    ):
        steep = np.abs(k) > 1e-12
        ks = np.where(steep, k, 1.0)
        e1 = a[:, 0] + (c1 - eps - m) / ks
        e2 = a[:, 0] + (c2 + eps - m) / ks
        lo_x = np.where(steep, np.maximum(lo_x, np.minimum(e1, e2)), lo_x)
        hi_x = np.where(steep, np.minimum(hi_x, np.maximum(e1, e2)), hi_x)
        feasible &= steep | ((m >= c1 - eps) & (m <= c2 + eps))
    band = feasible & (lo_x <= hi_x)
    left = np.where(band, np.minimum(left, lo_x), left)
    right = np.where(band, np.maximum(right, hi_x), right)
    col_lo = np.maximum(np.ceil(left - eps), 0)
    col_hi = np.minimum(np.floor(right + eps), shape[1] - 1)
    ok = np.isfinite(left) & (col_hi >= col_lo)
    col_lo, col_hi, rows = col_lo[ok].astype(np.int64), col_hi[ok].astype(np.int64), y[ok].astype(np.int64)
    count = col_hi - col_lo + 1
    start = np.repeat(rows * shape[1] + col_lo, count)
    return np.unique(start + index_in_group(count))


def graph_iou(
    preds: nx.DiGraph,
    target: nx.DiGraph,
    *,
    area_size: tuple[int, int] = (256, 256),
    lane_width: float = 10.0,
    compat: Compat = "default",
    validate_args: bool = True,
) -> Tensor:
    """IoU of the two graphs drawn with ``lane_width`` px wide edges.

    Default: a pixel belongs to a drawing when its center is within ``lane_width / 2`` of an edge, at float
    positions, on a canvas covering both graphs (``area_size`` unused); NaN when neither graph has an edge.
    ``compat="reference"``: like the evaluator's ``cv2.line(..., thickness=lane_width)`` on an ``area_size`` =
    ``(height, width)`` canvas with int-truncated end points, ``|A & B| / (1e-8 + |A | B|)``, drawn with OpenCV
    (the ``lanegraph`` extra; ``ImportError`` naming it when missing): equal to the evaluator's IoU to 1e-6 on the
    austin and miami successor samples (see :func:`~drivemetrics.lanegraph.reference.opencv_graph_iou`).

    Args:
        preds, target (networkx.DiGraph): Predicted and ground-truth lane graphs, node ``pos = (x, y)`` in pixels.
        area_size (tuple of int): ``(height, width)`` of the reference mode's canvas, pixels.
        lane_width (float): Width of the drawn lanes, pixels.
        compat (str): ``"default"`` or ``"reference"``.
        validate_args: check that both are networkx graphs whose nodes carry a finite
            ``pos`` within ``max_abs_coordinate`` (the graph readers' limit); ``False`` skips it.

    Returns:
        Tensor: 0-d float64 IoU in [0, 1] (NaN when neither graph has an edge).

    Examples:
        >>> import networkx as nx, numpy as np
        >>> from drivemetrics.functional import graph_iou
        >>> g, h = nx.DiGraph([(0, 1)]), nx.DiGraph([(0, 1)])  # two 100 px lanes overlapping by 50 px
        >>> nx.set_node_attributes(g, {0: np.array([0.0, 0.0]), 1: np.array([100.0, 0.0])}, "pos")
        >>> nx.set_node_attributes(h, {0: np.array([50.0, 0.0]), 1: np.array([150.0, 0.0])}, "pos")
        >>> graph_iou(g, g)
        tensor(1., dtype=torch.float64)
        >>> round(float(graph_iou(h, g)), 4)
        0.3645
    """
    if validate_args:
        check_graph(preds, "preds")
        check_graph(target, "target")
    check_compat(compat)
    pred, gt = as_lane_arrays(preds, "preds"), as_lane_arrays(target, "target")
    radius = lane_width / 2.0
    if compat == "reference":

        def segments(arr: LaneArrays) -> tuple[np.ndarray, np.ndarray]:
            return arr.pos[arr.edges[:, 0]], arr.pos[arr.edges[:, 1]]

        return as_scalar(opencv_graph_iou(segments(gt), segments(pred), area_size, lane_width))
    used = [arr.pos[arr.edges.reshape(-1)] for arr in (pred, gt) if len(arr.edges)]
    if not used:
        return as_scalar(math.nan)
    allpts = np.concatenate(used)
    x0, y0 = np.floor(allpts.min(axis=0) - radius - 1).astype(np.int64)
    x1, y1 = np.ceil(allpts.max(axis=0) + radius + 1).astype(np.int64)
    shape = (int(y1 - y0 + 1), int(x1 - x0 + 1))

    def keys(arr: LaneArrays) -> np.ndarray:
        return _raster_keys(arr.pos[arr.edges[:, 0]], arr.pos[arr.edges[:, 1]], radius, (int(x0), int(y0)), shape)

    keys_gt, keys_pred = keys(gt), keys(pred)
    inter = len(np.intersect1d(keys_gt, keys_pred, assume_unique=True))
    union = len(keys_gt) + len(keys_pred) - inter
    return as_scalar(inter / union if union else math.nan)
