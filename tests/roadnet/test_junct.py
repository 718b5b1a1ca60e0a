import math

import networkx as nx
import numpy as np
import pytest

from drivemetrics.graph.geometry import crop, validate_graph
from drivemetrics.roadnet.io import read_graph
from drivemetrics.roadnet.junct import JunctionMetrics, junct, junct_scores, junction_clusters


def _star(center, angles_deg, arm=200.0, start_id=0):
    """A junction at ``center`` with straight arms of length ``arm`` in the given directions."""
    g = nx.Graph()
    g.add_node(start_id, pos=(float(center[0]), float(center[1])))
    for k, a in enumerate(angles_deg, start=1):
        t = math.radians(a)
        g.add_node(start_id + k, pos=(center[0] + arm * math.cos(t), center[1] + arm * math.sin(t)))
        g.add_edge(start_id, start_id + k)
    return g


def test_out_angles_of_a_cross():
    clusters = junction_clusters(validate_graph(_star((0, 0), [0, 90, 180, 270]), "g"))
    assert clusters.centers.tolist() == [[0.0, 0.0]]
    got = np.sort(np.mod(clusters.angles[0], 2 * np.pi))
    np.testing.assert_allclose(got, np.radians([0, 90, 180, 270]), atol=1e-9)


def test_close_junctions_form_one_cluster():
    # two junctions 30 px apart joined by a road: one cluster with four out-going roads
    pos = [(0, 0), (30, 0), (-100, 0), (0, 100), (130, 0), (30, -100)]
    g = nx.Graph()
    for i, p in enumerate(pos):
        g.add_node(i, pos=p)
    g.add_edges_from([(0, 1), (0, 2), (0, 3), (1, 4), (1, 5)])
    clusters = junction_clusters(validate_graph(g, "g"))
    assert len(clusters.centers) == 1
    assert np.isfinite(clusters.angles[0]).sum() == 4


def test_context_clustering_of_predicted_junctions():
    gt = _star((0, 0), [0, 90, 180, 270])
    # predicted crossing drawn as two T-junctions 40 px apart (joined), plus a detached junction 60 px away
    pos = [(-20, 0), (20, 0), (-200, 0), (-20, 200), (200, 0), (20, -200), (0, 60), (-100, 60), (100, 60), (0, 160)]
    pred = nx.Graph()
    for i, p in enumerate(pos):
        pred.add_node(i, pos=p)
    pred.add_edges_from([(0, 1), (0, 2), (0, 3), (1, 4), (1, 5), (6, 7), (6, 8), (6, 9)])
    clusters = junction_clusters(validate_graph(pred, "p"), context=np.array([[0.0, 0.0]]))
    assert len(clusters.centers) == 2  # the joined pair, and the detached junction alone
    assert np.isfinite(clusters.angles).sum(axis=1).tolist() == [4, 3]
    r = junct(pred, gt)
    assert (r["n_gt"], r["n_pred"]) == (1, 2)
    assert r["f_correct"] == 1.0
    assert r["f_error"] == pytest.approx(0.5)  # the detached junction is unmatched
    plain = junction_clusters(validate_graph(pred, "p"))
    assert len(plain.centers) == 2


def test_identical_missing_and_extra_arms():
    cross = _star((0, 0), [0, 90, 180, 270])
    tee = _star((0, 0), [0, 90, 180])
    r = junct(cross, cross)
    assert (r["f_correct"], r["f_error"]) == (1.0, 0.0)
    # the prediction misses one of four arms: correct = 3/4, no wrong predicted arm
    missing = junct(tee, cross)
    assert (missing["f_correct"], missing["f_error"]) == (0.75, 0.0)
    # the prediction adds an arm at 270 deg, 90 deg from the GT arms at 0 and 180: error = 1/4
    extra = junct(cross, tee)
    assert (extra["f_correct"], extra["f_error"]) == (1.0, 0.25)


def test_unmatched_clusters():
    gt = _star((0, 0), [0, 90, 180])
    far = _star((500, 500), [0, 90, 180])
    r = junct(far, gt)
    assert (r["f_correct"], r["f_error"], r["n_gt"], r["n_pred"]) == (0.0, 1.0, 1, 1)
    empty = junct(nx.Graph(), gt)
    assert (empty["f_correct"], empty["f_error"], empty["n_pred"]) == (0.0, 0.0, 0)
    shifted = junct(_star((40, 0), [0, 90, 180]), gt)  # within the 110.5 px match radius
    assert shifted["f_correct"] == 1.0


def test_bounds_and_errors():
    gt = nx.union(_star((0, 0), [0, 90, 180]), _star((1000, 0), [0, 90, 180], start_id=10))
    pred = _star((0, 0), [0, 90, 180])
    assert junct(pred, gt)["f_correct"] == 0.5
    assert junct(pred, gt, bounds=(-100, -100, 100, 100))["f_correct"] == 1.0
    no_junction = nx.path_graph(3)
    nx.set_node_attributes(no_junction, {0: (0, 0), 1: (10, 0), 2: (20, 0)}, "pos")
    assert math.isnan(junct(pred, no_junction)["f_correct"])
    with pytest.raises(ValueError, match="target"):
        junct(pred, nx.Graph())
    with pytest.raises(ValueError, match="radii"):
        junct(pred, gt, match_radius=0)
    assert junct_scores(3.0, 4, 1.0, 2) == (0.75, 0.5)


def test_metric_sums():
    cross = _star((0, 0), [0, 90, 180, 270])
    tee = _star((0, 0), [0, 90, 180])
    metric = JunctionMetrics()
    metric.update([tee, cross], [cross, tee])
    out = metric.compute()
    assert out["f_correct"].item() == pytest.approx((0.75 + 1.0) / 2)
    assert out["f_error"].item() == pytest.approx((0.0 + 0.25) / 2)


def test_vancouver_crop(fixtures_dir):
    folder = fixtures_dir / "graphs" / "roadtracer_vancouver"
    gt = crop(read_graph(folder / "gt.graph"), -1024, -1024, 1024, 1024)
    pred = crop(read_graph(folder / "pred_roadtracer.graph"), -1024, -1024, 1024, 1024)
    same = junct(gt, gt)
    assert (same["f_correct"], same["f_error"]) == (1.0, 0.0)
    r = junct(pred, gt)
    assert 0.3 < r["f_correct"] < 1.0
    assert 0.0 < r["f_error"] < 1.0


def _ladder(connectors=(100.0,), rungs=(), length=2000.0, gap=150.0, step=50.0):
    """Two parallel straight roads ``gap`` px apart (nodes every ``step`` px) joined by vertical ``connectors``.

    A connector at ``x`` makes two GT junctions, (x, 0) and (x, gap). ``rungs`` are extra vertical edges added
    the same way (the overconnections of a prediction). Node ids: ``(row, column)``.
    """
    g = nx.Graph()
    xs = np.arange(0.0, length + step / 2, step)
    for row, y in enumerate((0.0, gap)):
        for i, x in enumerate(xs):
            g.add_node((row, i), pos=(float(x), y))
            if i:
                g.add_edge((row, i - 1), (row, i))
    for x in (*connectors, *rungs):
        i = round(x / step)
        g.add_edge((0, i), (1, i))
    return g


@pytest.mark.parametrize("context", [True, False])
def test_overconnections_far_from_gt_junctions_raise_f_error(context):
    # GT: 2 junction clusters at x = 100 (150 px apart > cluster radius 85). Each spurious rung 900+ px away makes
    # two predicted junctions no GT cluster reaches (context reach 3 x 85 px along the roads): unmatched clusters,
    # +1 error each. F_error = 2k / (2 + 2k).
    gt = _ladder()
    for k, rungs in enumerate([(), (1000.0,), (1000.0, 1500.0), (1000.0, 1500.0, 1900.0)]):
        r = junct(_ladder(rungs=rungs), gt, context=context)
        assert r["n_gt"] == 2
        assert r["f_correct"] == 1.0
        assert r["n_pred"] == 2 + 2 * k
        assert r["error_score"] == 2 * k
        assert r["f_error"] == pytest.approx(2 * k / (2 + 2 * k))


def test_overconnection_next_to_a_gt_junction_is_absorbed():
    # JUNCT's blind spot: a rung 50 px from the GT junctions makes two predicted junctions within the context reach
    # of the GT clusters, so they join them; the new arm (about 66 degrees from the center) lies within 90 degrees
    # of the GT's arm at 90 degrees, so no out-angle is wrong: F_error stays 0.
    gt = _ladder()
    r = junct(_ladder(rungs=(150.0,)), gt)
    assert (r["n_gt"], r["n_pred"], r["error_score"], r["f_correct"], r["f_error"]) == (2, 2, 0.0, 1.0, 0.0)
