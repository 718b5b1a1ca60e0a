import math

import networkx as nx
import numpy as np
import pytest

from drivemetrics.graph.geometry import crop
from drivemetrics.graph.path_similarity import apls_scores, control_points
from drivemetrics.roadnet.apls import APLSMetrics, apls
from drivemetrics.roadnet.io import read_graph


def _graph(points, edges):
    g = nx.Graph()
    for i, p in enumerate(points):
        g.add_node(i, pos=(float(p[0]), float(p[1])))
    g.add_edges_from(edges)
    return g


def _polyline(points):
    return _graph(points, [(i, i + 1) for i in range(len(points) - 1)])


def test_control_points_follow_cosmiq_spacing():
    road = _polyline([(0, 0), (40, 0), (130, 0)])  # one road of length 130 through a degree-2 node
    pts = control_points(road, 50)
    # ends, then ceil(130 / 50) - 1 = 2 evenly spaced points at 130 / 3 and 260 / 3
    np.testing.assert_allclose(pts, [[0, 0], [130, 0], [130 / 3, 0], [260 / 3, 0]], atol=1e-9)
    short = _polyline([(0, 0), (40, 0)])  # 0.75 * 50 <= 40 <= 50: one midpoint
    np.testing.assert_allclose(control_points(short, 50), [[0, 0], [40, 0], [20, 0]])
    tiny = _polyline([(0, 0), (30, 0)])  # < 0.75 * 50: ends only
    assert len(control_points(tiny, 50)) == 2


def test_hand_example_missing_end():
    """GT road of 100 (control points A=0, M=50, B=100); the prediction stops at 60.

    gt -> pred: B is 40 from the prediction (missing): pairs (A,M),(M,A) score 0, the 4 pairs with B score 1,
    C = 1 - 4/6. pred -> gt: points 0, 30, 60 all lie on the GT with equal path lengths: C = 1.
    APLS = harmonic mean = 2 * (1/3) * 1 / (4/3) = 0.5.
    """
    gt = _polyline([(0, 0), (100, 0)])
    pred = _polyline([(0, 0), (60, 0)])
    r = apls(pred, gt)
    assert r["gt_to_pred"] == pytest.approx(1 / 3)
    assert r["pred_to_gt"] == pytest.approx(1.0)
    assert r["apls"] == pytest.approx(0.5)
    assert (r["pairs_gt_to_pred"], r["pairs_pred_to_gt"]) == (6, 6)
    sat = apls(pred, gt, protocol="sat2graph", compat="reference", max_snap_dist=4, min_path_length=10)
    assert sat["apls"] == pytest.approx((1 / 3 + 1) / 2)  # arithmetic mean


def test_hand_example_length_difference():
    """A bent prediction (apex 3 px off the road) between the same two ends: both one-way diffs are exact."""
    gt = _polyline([(0, 0), (100, 0)])
    pred = _polyline([(0, 0), (50, 3), (100, 0)])
    r = apls(pred, gt, control_spacing=200)  # no midpoints: control points are the two ends
    bent = 2 * math.hypot(50, 3)
    assert r["gt_to_pred"] == pytest.approx(1 - (bent - 100) / 100)
    assert r["pred_to_gt"] == pytest.approx(1 - (bent - 100) / bent)
    assert r["pairs_gt_to_pred"] == 2


def test_disconnected_prediction_caps_at_one():
    gt = _polyline([(0, 0), (200, 0)])
    pred = _graph([(0, 0), (90, 0), (110, 0), (200, 0)], [(0, 1), (2, 3)])
    r = apls(pred, gt, control_spacing=1000)
    # GT ends snap onto both pieces but are not connected: both ordered pairs score 1
    assert r["gt_to_pred"] == pytest.approx(0.0)
    assert r["apls"] == 0.0


def test_min_path_length_filter():
    gt = _polyline([(0, 0), (8, 0)])
    assert apls(gt, gt, control_spacing=1000, min_path_length=10)["pairs_gt_to_pred"] == 0
    assert apls(gt, gt, control_spacing=1000, min_path_length=5)["pairs_gt_to_pred"] == 2


def test_identical_empty_errors():
    g = _graph([(0, 0), (300, 0), (300, 200), (120, 160)], [(0, 1), (1, 2), (1, 3)])
    r = apls(g, g)
    assert r["apls"] == pytest.approx(1.0)
    assert apls(nx.Graph(), g)["apls"] == 0.0
    with pytest.raises(ValueError, match="target"):
        apls(g, nx.Graph())
    with pytest.raises(ValueError, match="protocol"):
        apls(g, g, protocol="spacenet")
    with pytest.raises(ValueError, match="sat2graph"):  # the reference mode reproduces Sat2Graph's tool only
        apls(g, g, compat="reference")
    with pytest.raises(ValueError, match="compat"):
        apls(g, g, compat=None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_sources"):
        apls(g, g, max_sources=0)
    assert apls_scores(1.0, 2.0, 0.0, 0.0) == (0.0, 0.5, 0.0)


def test_source_sampling():
    gt = _polyline([(0, 0), (400, 0), (400, 400), (0, 400)])
    pred = _polyline([(0, 2), (380, 2), (420, 420)])
    full = apls(pred, gt, control_spacing=20, max_sources=None)
    assert apls(pred, gt, control_spacing=20, max_sources=10_000) == full
    sampled = apls(pred, gt, control_spacing=20, max_sources=10, seed=1)
    assert sampled == apls(pred, gt, control_spacing=20, max_sources=10, seed=1)
    assert sampled["pairs_gt_to_pred"] < full["pairs_gt_to_pred"]
    assert abs(sampled["apls"] - full["apls"]) < 0.2


def test_metric_pools_and_means():
    gt = _polyline([(0, 0), (100, 0)])
    pred = _polyline([(0, 0), (60, 0)])
    metric = APLSMetrics()
    metric.update([pred, gt], [gt, gt])
    out = metric.compute()
    assert out["mean_apls"].item() == pytest.approx((0.5 + 1.0) / 2)
    # pooled: gt->pred diffs 4 + 0 over 6 + 6 pairs; pred->gt 0 over 6 + 6
    assert out["gt_to_pred"].item() == pytest.approx(1 - 4 / 12)
    assert out["apls"].item() == pytest.approx(2 * (2 / 3) / (2 / 3 + 1))


def test_vancouver_crop(fixtures_dir):
    folder = fixtures_dir / "graphs" / "roadtracer_vancouver"
    gt = crop(read_graph(folder / "gt.graph"), -512, -512, 512, 512)
    pred = crop(read_graph(folder / "pred_roadtracer.graph"), -512, -512, 512, 512)
    assert apls(gt, gt)["apls"] == pytest.approx(1.0)
    r = apls(pred, gt, max_snap_dist=25)
    assert 0.05 < r["apls"] < 1.0


def test_spacenet_geojson_in_metres(fixtures_dir):
    """SpaceNet labels vs OSM for one Vegas tile, with CosmiQ's metre defaults (snap 4 m, control points 50 m)."""
    folder = fixtures_dir / "graphs" / "spacenet_vegas"
    gt = read_graph(folder / "spacenetroads" / "AOI_2_Vegas_img99.geojson")
    osm = read_graph(folder / "osm" / "AOI_2_Vegas_img99.geojson")
    assert apls(gt, gt)["apls"] == pytest.approx(1.0)
    r = apls(osm, gt)
    assert 0.0 < r["apls"] < 1.0
    assert r["apls"] == pytest.approx(2 * r["gt_to_pred"] * r["pred_to_gt"] / (r["gt_to_pred"] + r["pred_to_gt"]))
