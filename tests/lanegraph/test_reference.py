"""The evaluator's library-dependent behaviour: R-tree candidate order and the OpenCV graph IoU."""

import sys

import numpy as np
import pytest

from drivemetrics.lanegraph import reference
from drivemetrics.lanegraph.reference import (
    RTREE_LEAF_CAPACITY,
    opencv_graph_iou,
    reference_pair_order,
    rtree_candidate_ranks,
    tied_pairs,
)


def test_tied_pairs_share_query_and_distance():
    q = np.array([0, 1, 0, 1, 2])
    r = np.array([4.0, 4.0, 4.0, 9.0, 4.0])
    assert tied_pairs(q, r).tolist() == [True, False, True, False, False]
    assert tied_pairs(np.zeros(0, dtype=np.int64), np.zeros(0)).tolist() == []


def test_pair_order_is_distance_then_query_then_insertion_in_one_leaf():
    indexed = np.array([[0.0, 1.0], [0.0, -1.0], [3.0, 0.0]])
    queried = np.array([[0.0, 0.0], [3.0, 1.0]])
    qi = np.array([0, 0, 1, 1])
    ni = np.array([1, 0, 2, 0])
    r = np.array([1.0, 1.0, 1.0, 9.0])
    # (r=1, q=0, n=0), (r=1, q=0, n=1), (r=1, q=1, n=2), (r=9, ...): the stable sort after query-by-query listing
    assert reference_pair_order(indexed, queried, qi, ni, r, 8.0).tolist() == [1, 0, 2, 3]


def line_of_points(n):
    return np.stack([np.arange(n, dtype=np.float64) * 2.0, np.zeros(n)], axis=1)


def test_rtree_order_differs_from_insertion_order_beyond_one_leaf():
    pytest.importorskip("rtree")
    indexed = line_of_points(3 * RTREE_LEAF_CAPACITY)
    ends = [0, len(indexed) - 1]
    # a query equidistant from every point: its answer lists all of them, in the tree's (not insertion) order
    ranks = rtree_candidate_ranks(indexed, np.array([[300.0, 0.0]]), np.zeros(len(indexed), int), np.arange(300), 1e4)
    assert sorted(ranks.tolist()) == list(range(300))
    assert ranks.tolist() != list(range(300))
    assert ranks[ends].tolist() != [0, 299]


def test_pair_order_without_rtree_warns_beyond_one_leaf(monkeypatch):
    monkeypatch.setattr(reference, "_has_rtree", lambda: False)
    monkeypatch.setattr(reference, "_warned_rtree", [])
    indexed = line_of_points(RTREE_LEAF_CAPACITY + 1)
    queried = np.array([[3.0, 0.0]])  # equidistant from points 1 and 2
    qi, ni, r = np.array([0, 0]), np.array([1, 2]), np.array([1.0, 1.0])
    with pytest.warns(RuntimeWarning, match="rtree"):
        assert reference_pair_order(indexed, queried, qi, ni, r, 8.0).tolist() == [1, 0]
    # one leaf: exact without rtree, no warning
    assert reference_pair_order(indexed[:10], queried, qi, ni, r, 8.0).tolist() == [0, 1]


def test_opencv_iou_matches_cv2_line_per_edge():
    cv2 = pytest.importorskip("cv2")
    rng = np.random.default_rng(3)
    for _ in range(5):
        a = (rng.uniform(-20, 270, (12, 2)), rng.uniform(-20, 270, (12, 2)))
        b = (a[0] + rng.normal(0, 5, (12, 2)), a[1] + rng.normal(0, 5, (12, 2)))
        masks = []
        for starts, ends in (a, b):
            im = np.zeros((256, 256), np.uint8)
            for p, q in zip(starts, ends, strict=True):
                cv2.line(im, (int(p[0]), int(p[1])), (int(q[0]), int(q[1])), 255, 10)
            masks.append(im > 0)
        expect = (masks[0] & masks[1]).sum() / (1e-8 + (masks[0] | masks[1]).sum())
        assert opencv_graph_iou(a, b, (256, 256), 10) == pytest.approx(expect, abs=1e-12)
    empty = (np.zeros((0, 2)), np.zeros((0, 2)))
    assert opencv_graph_iou(empty, empty, (256, 256), 10) == 0.0


def test_opencv_iou_errors(monkeypatch):
    seg = (np.array([[0.0, 0.0]]), np.array([[9.0, 9.0]]))
    pytest.importorskip("cv2")
    with pytest.raises(ValueError, match="lane_width"):
        opencv_graph_iou(seg, seg, (16, 16), 2.5)
    with pytest.raises(ValueError, match="32-bit"):
        opencv_graph_iou((np.array([[0.0, 0.0]]), np.array([[1e12, 0.0]])), seg, (16, 16), 10)
    monkeypatch.setitem(sys.modules, "cv2", None)
    with pytest.raises(ImportError, match=r"drivemetrics\[lanegraph\]"):
        opencv_graph_iou(seg, seg, (16, 16), 10)
