"""Graph IoU on hand-made lane graphs."""

import numpy as np
import pytest

from drivemetrics.lanegraph.iou import graph_iou
from tests.lanegraph._graphs import lane, straight


def test_iou_by_hand():
    # radius-5 capsule around a horizontal segment of integer end points: 11 pixel rows x (L + 1) columns, plus two
    # half discs of (81 - 11) / 2 = 35 pixels (81 pixels within 5 px of a point)
    gt = straight(0, 100, step=100.0)
    half = straight(0, 50, step=50.0)
    assert graph_iou(gt, gt) == 1.0
    assert graph_iou(half, gt) == pytest.approx((51 * 11 + 70) / (101 * 11 + 70))
    assert graph_iou(straight(0, 100, y=20.0, step=100.0), gt) == 0.0
    assert graph_iou(half, gt, compat="reference") == pytest.approx(
        graph_iou(half, gt, compat="reference", area_size=(256, 256)), abs=0
    )
    # default mode works anywhere; the reference canvas (256 x 256 from the origin) misses graphs elsewhere
    far = straight(-1000, -900, step=100.0)
    assert graph_iou(far, far) == 1.0
    assert graph_iou(far, far, compat="reference") == 0.0


def test_iou_reference_equals_opencv_lines():
    cv2 = pytest.importorskip("cv2")
    rng = np.random.default_rng(1)
    for _ in range(5):
        pts = rng.uniform(20, 236, size=(8, 2))
        g = lane(pts)
        h = lane(pts + rng.normal(0, 4, size=pts.shape))
        masks = []
        for graph in (g, h):
            im = np.zeros((256, 256), np.uint8)
            for u, v in graph.edges():
                a, b = graph.nodes[u]["pos"], graph.nodes[v]["pos"]
                cv2.line(im, (int(a[0]), int(a[1])), (int(b[0]), int(b[1])), 255, 10)
            masks.append(im > 0)
        expect = (masks[0] & masks[1]).sum() / (masks[0] | masks[1]).sum()
        assert graph_iou(h, g, compat="reference") == pytest.approx(expect, abs=1e-12)
