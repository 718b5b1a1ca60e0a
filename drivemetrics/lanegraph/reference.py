"""What the released UrbanLaneGraph evaluator takes from third-party libraries, reproduced for ``compat="reference"``.

Two results of the evaluator (``jzuern/lanegnn`` ``urbanlanegraph_evaluator`` 0.11) depend on a library's
internals rather than on the metric's definition:

- **R-tree candidate order (GEO / TOPO).** The evaluator indexes one point set in an ``rtree.index.Index``
  (libspatialindex R*-tree, 100 entries per node, points inserted one by one) and lists, for every query point, the
  candidates in the order the tree returns them. Its greedy matching sorts the pairs by squared distance with a
  stable sort, so two candidates of one query at *exactly* the same distance are taken in the tree's order. That order
  is insertion order while the tree is a single leaf (at most 100 points) and follows the tree's splits beyond: on
  ``miami_194_46863_3400_001_030`` it decides one GEO match and 0.014 of TOPO precision. :func:`reference_pair_order`
  asks ``rtree`` itself (the ``lanegraph`` extra) for that order; without ``rtree`` it is exact up to 100 indexed
  points and approximate (newest first, with a warning) beyond.
- **Graph IoU.** The evaluator draws every edge with ``cv2.line(..., thickness=lane_width)``;
  :func:`opencv_graph_iou` does the same with OpenCV (the ``lanegraph`` extra); there is no OpenCV-free exact
  substitute for its thick-line polygon filler.

Both libraries are imported only when these functions run, so the default mode needs neither.
"""

from __future__ import annotations

import warnings
from types import ModuleType

import numpy as np

from drivemetrics._internal.extras import available, require

__all__ = [
    "RTREE_LEAF_CAPACITY",
    "load_cv2",
    "opencv_graph_iou",
    "reference_pair_order",
    "rtree_candidate_ranks",
    "tied_pairs",
]

RTREE_LEAF_CAPACITY = 100  # libspatialindex's default leaf capacity: up to this many points the tree is one leaf
_INT_LIMIT = 2**31 - 1  # cv2.line takes 32-bit integer end points
_warned_rtree: list[bool] = []


def _has_rtree() -> bool:
    """Whether ``rtree`` is installed (extra ``lanegraph``); without it the candidate order is rebuilt in numpy."""
    return available("rtree.index")


def load_cv2() -> ModuleType:
    """``cv2`` (extra ``lanegraph``), or :class:`~drivemetrics._internal.extras.MissingExtraError`."""
    return require("lanegraph", "cv2", "UrbanLaneGraph compat='reference' (graph IoU)")


def tied_pairs(query_rows: np.ndarray, sq_dist: np.ndarray) -> np.ndarray:
    """Mask of the candidate pairs that share their query row and their squared distance with another pair.

    Args:
        query_rows: ``(K,)`` query index of each pair.
        sq_dist: ``(K,)`` squared distance of each pair (pixels squared).

    Returns:
        ``(K,)`` bool: only these pairs depend on the R-tree's candidate order.

    Examples:
        >>> from drivemetrics.lanegraph.reference import tied_pairs
        >>> import numpy as np
        >>> tied_pairs(np.array([0, 0, 1, 1]), np.array([4.0, 4.0, 1.0, 2.0])).tolist()
        [True, True, False, False]
    """
    if not len(query_rows):
        return np.zeros(0, dtype=bool)
    order = np.lexsort((sq_dist, query_rows))
    q, r = query_rows[order], sq_dist[order]
    same_as_next = (q[1:] == q[:-1]) & (r[1:] == r[:-1])
    tied_sorted = np.zeros(len(q), dtype=bool)
    tied_sorted[1:] |= same_as_next
    tied_sorted[:-1] |= same_as_next
    tied = np.empty(len(q), dtype=bool)
    tied[order] = tied_sorted
    return tied


def rtree_candidate_ranks(
    indexed: np.ndarray, queried: np.ndarray, query_rows: np.ndarray, indexed_rows: np.ndarray, window: float
) -> np.ndarray:
    """Position of each pair's indexed point in the evaluator's R-tree answer to its query.

    The tree is built as the evaluator builds it: point ``i`` of ``indexed`` inserted as the box ``(x - 1, y - 1,
    x + 1, y + 1)`` with id ``i``, one insertion at a time (a bulk-loaded tree would order its answers differently);
    query ``j`` asks for the box ``queried[j] +- window``.

    Args:
        indexed: ``(N, 2)`` points put into the tree, in insertion order (pixels).
        queried: ``(M, 2)`` query points (pixels).
        query_rows: ``(K,)`` query index of each pair to rank.
        indexed_rows: ``(K,)`` indexed point of each pair (must be inside its query's box).
        window: half side of the query box (pixels; the matching distance).

    Returns:
        ``(K,)`` int64 rank of ``indexed_rows[k]`` among the candidates of query ``query_rows[k]``.

    Raises:
        ImportError: when ``rtree`` is not installed.
    """
    rtree_index = require("lanegraph", "rtree.index", "the evaluator's R-tree order")
    tree = rtree_index.Index()
    for i, (x, y) in enumerate(np.asarray(indexed, dtype=np.float64).tolist()):
        tree.insert(i, (x - 1, y - 1, x + 1, y + 1))
    ranks = np.zeros(len(query_rows), dtype=np.int64)
    queried = np.asarray(queried, dtype=np.float64)
    for row in np.unique(query_rows).tolist():
        x, y = queried[row].tolist()
        answer = list(tree.intersection((x - window, y - window, x + window, y + window)))
        position = {point: k for k, point in enumerate(answer)}
        pairs = np.flatnonzero(query_rows == row)
        ranks[pairs] = [position[p] for p in indexed_rows[pairs].tolist()]
    return ranks


def reference_pair_order(
    indexed: np.ndarray,
    queried: np.ndarray,
    query_rows: np.ndarray,
    indexed_rows: np.ndarray,
    sq_dist: np.ndarray,
    window: float,
) -> np.ndarray:
    """The order in which the evaluator's greedy matching visits candidate pairs.

    It builds the pairs query by query (``queried`` in order), each query's candidates in R-tree order, then sorts
    them by squared distance with a stable sort: the order is (distance, query, R-tree rank). The R-tree rank only
    matters for pairs tied on query and distance; it is asked from ``rtree`` when such pairs exist. Without
    ``rtree``: insertion order (exact while ``indexed`` fits one leaf, ``RTREE_LEAF_CAPACITY`` points), else newest
    first with a ``RuntimeWarning`` (the values may then differ from the evaluator's in ties).

    Args:
        indexed: ``(N, 2)`` points of the R-tree, in insertion order (pixels).
        queried: ``(M, 2)`` query points (pixels).
        query_rows, indexed_rows, sq_dist: ``(K,)`` the candidate pairs and their squared distances.
        window: half side of the evaluator's query box (pixels).

    Returns:
        ``(K,)`` permutation of the pairs.

    Examples:
        >>> import numpy as np
        >>> from drivemetrics.lanegraph.reference import reference_pair_order
        >>> pts = np.array([[0.0, 1.0], [0.0, -1.0]])
        >>> reference_pair_order(pts, np.zeros((1, 2)), np.array([0, 0]), np.array([1, 0]), np.array([1.0, 1.0]), 8.0)
        array([1, 0])
    """
    query_rows = np.asarray(query_rows, dtype=np.int64)
    indexed_rows = np.asarray(indexed_rows, dtype=np.int64)
    tied = tied_pairs(query_rows, sq_dist)
    if not tied.any():
        return np.lexsort((indexed_rows, query_rows, sq_dist))
    if len(indexed) <= RTREE_LEAF_CAPACITY:
        rank = indexed_rows  # a single leaf answers in insertion order
    elif _has_rtree():
        rank = np.zeros(len(query_rows), dtype=np.int64)
        rank[tied] = rtree_candidate_ranks(indexed, queried, query_rows[tied], indexed_rows[tied], window)
    else:
        if not _warned_rtree:
            _warned_rtree.append(True)
            warnings.warn(
                "lane-graph GEO / TOPO with compat='reference': rtree is not installed, so candidates at equal "
                "distance are taken newest first, not in the evaluator's R-tree order (values may differ by a "
                "match); pip install 'drivemetrics[lanegraph]'",
                RuntimeWarning,
                stacklevel=3,
            )
        rank = -indexed_rows
    return np.lexsort((rank, query_rows, sq_dist))


def opencv_graph_iou(
    gt_segments: tuple[np.ndarray, np.ndarray],
    pred_segments: tuple[np.ndarray, np.ndarray],
    area_size: tuple[int, int],
    lane_width: float,
) -> float:
    """The evaluator's graph IoU: every edge drawn with ``cv2.line`` on an ``area_size`` canvas.

    Args:
        gt_segments, pred_segments: ``(starts, ends)``, each ``(E, 2)`` edge end points ``(x, y)`` (pixels); they
            are truncated to integers as the evaluator's ``int(...)`` does.
        area_size: ``(height, width)`` of the canvas (pixels).
        lane_width: line thickness (pixels, a whole number).

    Returns:
        ``|A & B| / (1e-8 + |A | B|)`` over the drawn pixels (0 when nothing is drawn).

    Raises:
        ImportError: without OpenCV. ValueError: for a non-integer ``lane_width`` or end points beyond 32-bit
        integers.

    Examples:
        >>> import numpy as np
        >>> from drivemetrics.lanegraph.reference import opencv_graph_iou
        >>> seg = (np.array([[10.0, 10.0]]), np.array([[100.0, 10.0]]))
        >>> round(opencv_graph_iou(seg, seg, (64, 128), 10), 6)
        1.0
    """
    cv2 = load_cv2()
    if float(lane_width) != int(lane_width) or int(lane_width) < 1:
        raise ValueError(f"`lane_width` must be a whole number of pixels >= 1 in compat='reference', got {lane_width}")
    shape = (int(area_size[0]), int(area_size[1]))

    def draw(segments: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        image = np.zeros(shape, dtype=np.uint8)
        starts, ends = (np.trunc(np.asarray(s, dtype=np.float64)).reshape(-1, 2) for s in segments)
        if not len(starts):
            return image
        if max(np.abs(starts).max(), np.abs(ends).max()) > _INT_LIMIT:
            raise ValueError("lane graph positions beyond 32-bit integers cannot be drawn like the evaluator")
        lines = np.stack([starts, ends], axis=1).astype(np.int32)  # (E, 2, 2)
        cv2.polylines(image, list(lines.reshape(-1, 2, 1, 2)), isClosed=False, color=255, thickness=int(lane_width))
        return image

    gt_mask, pred_mask = draw(gt_segments) > 0, draw(pred_segments) > 0
    inter = int(np.count_nonzero(gt_mask & pred_mask))
    union = int(np.count_nonzero(gt_mask | pred_mask))
    return inter / (1e-8 + union)
