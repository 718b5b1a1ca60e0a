"""Topology scoring steps: the devkit's per-vertex AP (reference mode) and the default mode's pooled relation AP.

Expected values are worked out by hand in the comments (precision at each correct edge, in rank order).
"""

from __future__ import annotations

import numpy as np
import pytest

from drivemetrics.lanetopology.average_precision import relation_average_precision
from drivemetrics.lanetopology.scoring import DEVKIT_NAMES, devkit_name
from drivemetrics.lanetopology.topology import relation_rows, topology_vertex_ap


def test_devkit_vertex_ap_leaves_edges_below_the_last_correct_one_free() -> None:
    gt = np.array([[1, 0, 0, 1, 0]])
    scores = np.array([[0.9, 0.8, 0.7, 0.6, 0.55]])
    # row: TP (precision 1), FP, FP, TP (2/4), FP below the last TP (free): (1 + 1/2) / 2 GT edges
    # columns (one entry each): GT edge predicted -> 1, non-edge predicted -> 0
    np.testing.assert_allclose(topology_vertex_ap(gt, scores), [0.75, 1, 0, 0, 1, 0])


def test_devkit_vertex_ap_ties_in_index_order_and_empty_vertices() -> None:
    # a tie {0.7, 0.7}: index order puts the TP first (precision 1)
    assert topology_vertex_ap(np.array([[1, 0, 0]]), np.array([[0.7, 0.7, 0.6]]))[0] == 1.0
    # no GT edge: 1 without predicted edge (> 0.5), 0 with one
    gt = np.zeros((2, 2), dtype=int)
    scores = np.array([[0.9, 0.1], [0.2, 0.3]])
    np.testing.assert_allclose(topology_vertex_ap(gt, scores), [0, 1, 0, 1])


def test_relation_ap_hand_cases() -> None:
    # TP (1/1), FP, TP (2/3), FP; 3 GT relations (one never found): (1 + 2/3) / 3
    conf, tp = np.array([0.9, 0.8, 0.7, 0.1]), np.array([1, 0, 1, 0])
    assert relation_average_precision(conf, tp, 3) == pytest.approx((1 + 2 / 3) / 3)
    # a candidate below the last TP changes nothing; one above a TP costs
    assert relation_average_precision(np.r_[conf, 0.05], np.r_[tp, 0], 3) == pytest.approx((1 + 2 / 3) / 3)
    assert relation_average_precision(np.r_[conf, 0.95], np.r_[tp, 0], 3) == pytest.approx((1 / 2 + 2 / 4) / 3)
    # a tie group is one operating point, whatever the order inside it: TP and FP at 0.6 -> precision 1/2
    for tp_tie in ([1, 0], [0, 1]):
        assert relation_average_precision(np.array([0.6, 0.6]), np.array(tp_tie), 1) == 0.5
    assert np.isnan(relation_average_precision(np.array([0.6]), np.array([0]), 0))  # no GT relation: no AP
    assert relation_average_precision(np.zeros(0), np.zeros(0), 2) == 0.0  # nothing predicted


def test_relation_ap_depends_on_the_order_only() -> None:
    rng = np.random.default_rng(3)
    conf = rng.random(300)
    tp = rng.random(300) < 0.2
    want = relation_average_precision(conf, tp, 80)
    for mapped in (0.4 * conf, np.where(conf > 0.05, 0.5 + conf / 2, conf / 2), conf**3, np.log(conf)):
        assert relation_average_precision(mapped, tp, 80) == pytest.approx(want, abs=1e-12)


def test_relation_rows_charge_unmatched_predictions_and_count_every_gt_relation() -> None:
    gt = [np.array([[0, 1, 0], [0, 0, 1], [0, 0, 0]]), np.zeros((0, 0))]  # frame 1: no GT lane
    pred = [np.array([[0.1, 0.8, 0.9], [0.2, 0.3, 0.4], [0.5, 0.6, 0.7]]), np.array([[0.9]])]
    # frame 0, threshold 0: predictions 0, 1 match GT 0, 1 and prediction 2 nothing; threshold 1: 2 matches GT 2
    match = [np.array([[0, 0], [1, 1], [-1, 2]]), np.array([[-1, -1]])]
    conf, tp, num_gt = relation_rows(gt, pred, match, match)
    assert num_gt == 2  # 0 -> 1 and 1 -> 2, also where lane 2 is missed
    assert conf.tolist() == [0.1, 0.8, 0.9, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.9]  # frame by frame, row-major
    assert np.flatnonzero(tp[:, 0]).tolist() == [1]  # 0 -> 1 only; 0.9 (0 -> unmatched 2) is an FP
    assert np.flatnonzero(tp[:, 1]).tolist() == [1, 5]  # 0 -> 1 and 1 -> 2 (0.4)
    # threshold 0: two FPs at 0.9 (frame 0's 0 -> unmatched 2, frame 1's) above the TP 0.8, the other GT relation
    # missed: (1/3) / 2; threshold 1 also finds 1 -> 2 at 0.4, ranked 7th (0.9, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4):
    # (1/3 + 2/7) / 2
    assert relation_average_precision(conf, tp[:, 0], num_gt) == pytest.approx(1 / 6)
    assert relation_average_precision(conf, tp[:, 1], num_gt) == pytest.approx((1 / 3 + 2 / 7) / 2)


def test_devkit_names_table() -> None:
    assert devkit_name("top_lsls@2.0") == "TOP_lsls@2.0"
    assert devkit_name("det_t@red") == "DET_t@red"
    assert all(name.lower() == key for key, name in DEVKIT_NAMES.items())
