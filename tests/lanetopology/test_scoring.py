"""Per-vertex topology AP (scoring.topology_vertex_ap): the devkit's rule and the default mode's charged edges.

Expected values are worked out by hand in the comments (precision at each correct edge, in rank order).
"""

from __future__ import annotations

import numpy as np
import pytest

from drivemetrics.lanetopology.scoring import UNMATCHED_RELATION, topology_vertex_ap


def test_edges_below_the_last_correct_one_are_free_in_reference_and_misses_in_default() -> None:
    gt = np.array([[1, 0, 0, 1, 0]])
    scores = np.array([[0.9, 0.8, 0.7, 0.6, 0.55]])
    # row: TP (precision 1), FP, FP, TP (2/4), FP below the last TP
    # reference: (1 + 1/2) / 2 GT edges; default: the trailing FP is one more miss: (1 + 1/2) / 3
    # columns (one entry each): GT edge predicted -> 1, non-edge predicted -> 0
    columns = [1, 0, 0, 1, 0]
    np.testing.assert_allclose(topology_vertex_ap(gt, scores, reference=True), [0.75, *columns])
    np.testing.assert_allclose(topology_vertex_ap(gt, scores, reference=False), [0.5, *columns])


def test_false_positives_above_the_last_correct_edge_score_as_in_the_devkit() -> None:
    gt = np.array([[0, 1, 0, 1]])
    scores = np.array([[0.9, 0.8, 0.3, 0.7]])  # FP, TP (1/2), TP (2/3); 0.3 not predicted
    want = (1 / 2 + 2 / 3) / 2
    assert topology_vertex_ap(gt, scores, reference=True)[0] == pytest.approx(want)
    assert topology_vertex_ap(gt, scores, reference=False)[0] == pytest.approx(want)


def test_default_equals_reference_without_trailing_predicted_edges() -> None:
    """The stated property, on random matrices with distinct values: for every vertex (row or column) whose
    predicted edges (> 0.5) all rank at or above its last correct edge, or that has no correct edge, the two
    modes agree; the others are never higher in the default mode."""
    rng = np.random.default_rng(3)
    checked_equal = checked_lower = 0
    for _ in range(200):
        rows, cols = rng.integers(1, 7, size=2)
        gt = (rng.random((rows, cols)) < 0.3).astype(int)
        scores = rng.permutation(rows * cols).reshape(rows, cols) / (rows * cols) + 1e-3  # distinct
        ref = topology_vertex_ap(gt, scores, reference=True)
        fixed = topology_vertex_ap(gt, scores, reference=False)
        vertices = [(gt[r], scores[r]) for r in range(rows)] + [(gt[:, c], scores[:, c]) for c in range(cols)]
        for k, (g, s) in enumerate(vertices):
            predicted = s > 0.5
            hits = s[predicted & (g == 1)]
            trailing = predicted & (g == 0) & (s < hits.min()) if hits.size else np.zeros_like(predicted)
            if trailing.any():
                assert fixed[k] < ref[k]
                checked_lower += 1
            else:
                assert fixed[k] == pytest.approx(ref[k])
                checked_equal += 1
    assert checked_equal > 100
    assert checked_lower > 50


def test_the_unmatched_fill_is_not_charged() -> None:
    gt = np.array([[1, 0]])
    scores = np.array([[0.9, UNMATCHED_RELATION]])  # a correct edge, then the fill of an unmatched GT item
    charged = np.array([[True, False]])
    assert topology_vertex_ap(gt, scores, reference=False, charged=charged)[0] == 1.0  # as the devkit
    assert topology_vertex_ap(gt, scores, reference=False)[0] == 0.5  # charged, it would be a miss: 1 / (1 + 1)
    assert topology_vertex_ap(gt, scores, reference=True)[0] == 1.0


def test_ties_with_the_last_correct_edge_are_not_below_it() -> None:
    gt = np.array([[1, 0, 0]])
    scores = np.array([[0.7, 0.7, 0.6]])
    # default: the tie {0.7, 0.7} is one operating point (precision 1/2 there); 0.6 below it is a miss:
    # (1/2) / (1 + 1); reference: index order, TP first (precision 1), FPs below free: 1
    assert topology_vertex_ap(gt, scores, reference=False)[0] == 0.25
    assert topology_vertex_ap(gt, scores, reference=True)[0] == 1.0


def test_vertices_without_ground_truth_edges_keep_the_devkit_rule() -> None:
    gt = np.zeros((2, 2), dtype=int)
    scores = np.array([[0.9, 0.1], [0.2, 0.3]])
    # row 0 predicts an edge: 0; row 1 none: 1; column 0 sees 0.9: 0; column 1 none: 1
    for reference in (True, False):
        np.testing.assert_allclose(topology_vertex_ap(gt, scores, reference), [0, 1, 0, 1])


def test_min_cost_assignments_equal_the_solver() -> None:
    """The shortcut (strict, distinct minima) picks what the solver picks; ties and conflicts go to the solver."""
    from scipy.optimize import linear_sum_assignment

    from drivemetrics.lanetopology.scoring import _min_cost_assignments

    rng = np.random.default_rng(5)
    for trial in range(200):
        frames = int(rng.integers(1, 10))
        rows, cols = rng.integers(0, 6, frames), rng.integers(0, 6, frames)
        high = (2, 30, 1000)[trial % 3]  # many ties, some, almost none
        blocks = [rng.integers(0, high, (r, c)) for r, c in zip(rows, cols, strict=True)]
        cost = np.concatenate([b.reshape(-1) for b in blocks]).astype(np.int64)
        got = set(_min_cost_assignments(cost, rows, cols).tolist())
        want = set()
        start = 0
        for b in blocks:
            if b.size:
                r, c = linear_sum_assignment(b)
                want |= set((start + r * b.shape[1] + c).tolist())
            start += b.size
        assert got == want
    # a frame with a clear diagonal takes the shortcut; one with a conflict needs the solver: both as scipy
    cost = np.array([1, 9, 9, 1, 1, 2, 2, 9], dtype=np.int64)  # frame 0: [[1, 9], [9, 1]]; frame 1: [[1, 2], [2, 9]]
    assert sorted(_min_cost_assignments(cost, np.array([2, 2]), np.array([2, 2])).tolist()) == [0, 3, 5, 6]
