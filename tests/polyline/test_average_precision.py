"""AP integration rules against plain loops (VOC area, 11-point on a float64 grid with float32 recall)."""

from __future__ import annotations

import numpy as np
import torch

from drivemetrics.polyline import (
    average_precision_11point,
    average_precision_area,
    interpolated_precision_11point,
    pooled_precision_recall,
)
from tests.polyline._reference import ref_11point, ref_voc_area


def ref_curve(scores: np.ndarray, tp: np.ndarray, num_targets: int) -> tuple[np.ndarray, np.ndarray]:
    order = sorted(range(len(scores)), key=lambda i: -scores[i])
    ctp = cfp = 0
    precision, recall = [], []
    for i in order:
        ctp += int(tp[i])
        cfp += int(not tp[i])
        precision.append(ctp / max(ctp + cfp, 1))
        recall.append(ctp / max(num_targets, 1))
    return np.array(precision), np.array(recall)


def test_curve_and_area_ap_equal_the_loops():
    rng = np.random.default_rng(0)
    for _ in range(30):
        n = int(rng.integers(0, 40))
        scores = np.round(rng.uniform(size=n), 2)
        tp = rng.random((3, n)) > 0.4
        num_targets = int(rng.integers(0, 30))
        precision, recall = pooled_precision_recall(torch.from_numpy(scores), torch.from_numpy(tp), num_targets)
        ap = average_precision_area(precision, recall)
        for k in range(3):
            p_ref, r_ref = ref_curve(scores, tp[k], num_targets)
            np.testing.assert_allclose(precision[k].numpy(), p_ref, rtol=0, atol=0)
            np.testing.assert_allclose(recall[k].numpy(), r_ref, rtol=0, atol=0)
            np.testing.assert_allclose(ap[k].item(), ref_voc_area(r_ref, p_ref), rtol=1e-14, atol=1e-15)


def test_float32_precision_like_maptr():
    scores = torch.linspace(1, 0, 7)
    tp = torch.tensor([True, False, True, True, False, False, True])
    precision, recall = pooled_precision_recall(scores, tp, 9, precision_dtype=torch.float32)
    assert precision.dtype == torch.float32
    assert recall.dtype == torch.float64
    ap = average_precision_area(precision, recall)
    assert ap.dtype == torch.float64
    p_ref = np.cumsum(tp.numpy()).astype(np.float32) / np.arange(1, 8, dtype=np.float32)
    assert ap.item() == ref_voc_area(recall.numpy(), p_ref.astype(np.float64))


def test_11point_grid_against_loop_with_float32_recall():
    rng = np.random.default_rng(1)
    for _ in range(30):
        n = int(rng.integers(1, 30))
        tp = rng.random(n) > 0.3
        num_targets = 10  # recalls k/10: 3/10 reaches 0.3, 7/10 misses 0.7000000000000001
        precision, recall = pooled_precision_recall(
            torch.linspace(1, 0, n),
            torch.from_numpy(tp),
            num_targets,
            precision_dtype=torch.float32,
            recall_dtype=torch.float32,
        )
        expected = ref_11point(recall.numpy(), precision.numpy())
        assert average_precision_11point(precision, recall).item() == expected
    precision = torch.tensor([1.0, 1.0], dtype=torch.float32)
    recall = torch.tensor([0.3, 0.7], dtype=torch.float32)
    values = interpolated_precision_11point(precision, recall)
    assert values.tolist() == [1.0] * 7 + [0.0] * 4  # the 0.7 point is missed


def test_empty_curve():
    precision, recall = pooled_precision_recall(torch.zeros(0), torch.zeros(2, 0, dtype=torch.bool), 5)
    assert average_precision_area(precision, recall).tolist() == [0.0, 0.0]
    assert average_precision_11point(precision, recall).tolist() == [0.0, 0.0]
