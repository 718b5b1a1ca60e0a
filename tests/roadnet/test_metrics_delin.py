"""Conformance with the released code of Citraro et al. (``lcit/metrics_delin``) on the RoadTracer Vancouver fixture.

``expected_metrics_delin_crop2048.json`` holds what the released code returned for the 2048 px window centered at the
origin (segmentation prediction): the crops, OPT-J, CCQ, and OPT-P / OPT-G / TLTS for seeds 0-2. ``compat="reference"``
must give the deterministic values exactly and the sampled ones from the same distribution.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

from drivemetrics.graph.geometry import crop
from drivemetrics.roadnet.ccq import CCQMetrics, ccq_graph
from drivemetrics.roadnet.evaluate import crop_protocol
from drivemetrics.roadnet.io import read_roadtracer_graph
from drivemetrics.roadnet.opt_g import OptGMetrics, opt_g
from drivemetrics.roadnet.opt_j import OptJMetrics, opt_j
from drivemetrics.roadnet.opt_p import opt_p
from drivemetrics.roadnet.tlts import tlts

WINDOW = (-1024.0, -1024.0, 1024.0, 1024.0)


@pytest.fixture(scope="module")
def vancouver(fixtures_dir):
    folder = fixtures_dir / "graphs" / "roadtracer_vancouver"
    expected = json.loads((folder / "expected_metrics_delin_crop2048.json").read_text())
    graphs = {
        "gt": read_roadtracer_graph(folder / "gt.graph"),
        "segmentation": read_roadtracer_graph(folder / "pred_segmentation.graph"),
    }
    return expected, graphs


def _sha(rows) -> str:
    return hashlib.sha256(json.dumps(rows).encode("utf-8")).hexdigest()


@pytest.mark.parametrize("name", ["gt", "segmentation"])
def test_reference_crop_equals_released_crop(vancouver, name):
    expected, graphs = vancouver
    want = expected["crops"][name]
    g = graphs[name]
    c = crop(g, *WINDOW, compat="reference")
    assert (c.number_of_nodes(), c.number_of_edges()) == (want["n_nodes"], want["n_edges"])
    n0 = g.number_of_nodes()
    kept = [n for n in c.nodes if n < n0]
    new = [n for n in c.nodes if n >= n0]
    assert kept == want["kept_original_node_ids"]  # ids and order
    assert list(c.nodes) == kept + new
    edges = sorted([min(u, v), max(u, v)] for u, v in c.edges)
    assert edges == want["edges"]
    assert _sha(edges) == want["edges_sha256"]
    rows = [[n, next(iter(c.adj[n])), *c.nodes[n]["pos"]] for n in new]
    assert [r[:2] for r in rows] == [r[:2] for r in want["new_boundary_nodes"]]
    np.testing.assert_allclose(
        np.array(rows, dtype=float)[:, 2:], np.array(want["new_boundary_nodes"], dtype=float)[:, 2:], rtol=0, atol=1e-9
    )
    # the protocol (crop, then shift the window to the origin) keeps the ids and moves the positions
    shifted = crop_protocol(g, WINDOW, 0.0, compat="reference")
    assert list(shifted.nodes) == list(c.nodes)
    assert shifted.nodes[new[0]]["pos"] == pytest.approx(np.add(c.nodes[new[0]]["pos"], 1024.0).tolist(), abs=1e-12)


@pytest.fixture(scope="module")
def window_crops(vancouver):
    """GT and segmentation prediction cropped and shifted as the released protocol (reference rules)."""
    _expected, graphs = vancouver
    return {name: crop_protocol(g, WINDOW, 0.0, compat="reference") for name, g in graphs.items()}


def _released(expected, metric, seed=None):
    return next(r for r in expected["results"] if r["metric"] == metric and r["seed"] == seed)


def test_reference_opt_j_equals_released(vancouver, window_crops):
    want = _released(vancouver[0], "optj")
    res = opt_j(window_crops["segmentation"], window_crops["gt"], compat="reference")
    assert (res["tp"], res["pp"], res["ap"]) == (want["tp"], want["pp"], want["ap"])
    for key in ("precision", "recall", "f1"):
        assert res[key] == pytest.approx(want[key], abs=1e-9)
    # the default (optimal matching, merged duplicates) is a different number
    assert opt_j(window_crops["segmentation"], window_crops["gt"])["f1"] != pytest.approx(want["f1"], abs=1e-4)


@pytest.mark.parametrize("metric", ["ccq", "ccq1"])
def test_reference_ccq_equals_released(vancouver, window_crops, metric):
    want = _released(vancouver[0], metric)
    size = want["image_size"]
    res = ccq_graph(
        window_crops["segmentation"],
        window_crops["gt"],
        slack=8.0,
        scale=want["scale"],
        canvas=(0.0, 0.0, size, size),
        compat="reference",
    )
    assert (res["matched_pred"], res["total_pred"], res["matched_gt"], res["total_gt"]) == (
        want["TP_g"],
        want["pred_pixels"],
        want["TP_p"],
        want["gt_pixels"],
    )
    assert res["total_pred"] - res["matched_pred"] == want["FP"]
    assert res["total_gt"] - res["matched_gt"] == want["FN"]
    assert res["correctness"] == pytest.approx(want["correctness"], abs=1e-9)
    assert res["completeness"] == pytest.approx(want["completeness"], abs=1e-9)
    assert res["quality"] == pytest.approx(want["quality"], abs=1e-9)


@pytest.mark.parametrize("metric", ["ccq", "ccq1"])
def test_reference_ccq_default_canvas_is_released(vancouver, window_crops, metric):
    """Without a canvas, compat CCQ draws on the released one: the protocol's tile from the origin."""
    want = _released(vancouver[0], metric)
    pred, gt = window_crops["segmentation"], window_crops["gt"]
    assert gt.graph["tile"] == (0.0, 0.0, 2048.0, 2048.0)
    res = ccq_graph(pred, gt, slack=8.0, scale=want["scale"], compat="reference")
    assert (res["matched_pred"], res["total_pred"], res["matched_gt"], res["total_gt"]) == (
        want["TP_g"],
        want["pred_pixels"],
        want["TP_p"],
        want["gt_pixels"],
    )
    assert res["quality"] == pytest.approx(want["quality"], abs=1e-9)
    # the Metric class, on these graphs and on graphs without the tile attribute with an explicit canvas
    bare = [g.copy() for g in (pred, gt)]
    for g in bare:
        del g.graph["tile"]
    size = want["image_size"]
    for canvas, graphs in ((None, (pred, gt)), ((0.0, 0.0, size, size), bare)):
        m = CCQMetrics(scale=want["scale"], canvas=canvas, compat="reference")
        m.update(*graphs)
        counts = [int(getattr(m, k)) for k in ("matched_pred", "total_pred", "matched_gt", "total_gt")]
        assert counts == [want["TP_g"], want["pred_pixels"], want["TP_p"], want["gt_pixels"]]
        assert float(m.compute()["quality"]) == pytest.approx(want["quality"], abs=1e-6)  # float32 tensor


SAMPLED = {
    "optp": ("precision", "recall", "f1"),
    "optg": ("f1", "spurious", "missing"),
    "tlts": ("correct", "too_long", "too_short", "infeasible"),
}


@pytest.fixture(scope="module")
def sampled_means(window_crops):
    """Mean over seeds 0-2 of the sampled metrics in compat mode (what the released seed range is compared with)."""
    pred, gt = window_crops["segmentation"], window_crops["gt"]
    runs = {"optp": [], "optg": [], "tlts": []}
    for seed in (0, 1, 2):
        runs["optp"].append(opt_p(pred, gt, seed=seed, compat="reference"))
        runs["optg"].append(opt_g(pred, gt, seed=seed, compat="reference"))
        runs["tlts"].append(tlts(pred, gt, seed=seed, compat="reference"))
    return runs


@pytest.mark.slow
@pytest.mark.parametrize(("metric", "key"), [(m, k) for m, keys in SAMPLED.items() for k in keys])
def test_reference_sampled_metrics_within_released_seed_range(vancouver, sampled_means, metric, key):
    spread = next(s for s in vancouver[0]["stochastic_spread"] if s["metric"] == metric)[key]
    mean = float(np.mean([float(run[key]) for run in sampled_means[metric]]))
    assert spread["min"] - 0.02 <= mean <= spread["max"] + 0.02, (metric, key, mean, spread["min"], spread["max"])


@pytest.mark.slow
def test_reference_tlts_divides_by_n_paths_plus_one(sampled_means):
    for run in sampled_means["tlts"]:
        counts = [run[k] for k in ("n_correct", "n_too_long", "n_too_short", "n_infeasible")]
        assert sum(counts) == 1001
        assert run["correct"].item() == run["n_correct"].item() / 1001


@pytest.mark.slow
def test_reference_opt_p_equals_released_per_seed(vancouver, window_crops):
    """The released alignment and removal restated stage by stage, with the released random draws: seed S gives what
    the released code gives after ``random.seed(S)``."""
    spread = next(s for s in vancouver[0]["stochastic_spread"] if s["metric"] == "optp")
    for k, seed in enumerate(spread["seeds"]):
        got = opt_p(window_crops["segmentation"], window_crops["gt"], seed=seed, compat="reference")
        for key in ("precision", "recall", "f1"):
            assert got[key] == pytest.approx(spread[key]["values"][k], abs=1e-9), (seed, key)


RELEASED_OPTP_F1_ROADTRACER = (0.668, 0.694)  # issue 31: the released code on this window, seeds 0-2 (3 decimals)


@pytest.mark.slow
def test_reference_opt_p_roadtracer_inside_released_range(fixtures_dir, window_crops):
    folder = fixtures_dir / "graphs" / "roadtracer_vancouver"
    pred = crop_protocol(read_roadtracer_graph(folder / "pred_roadtracer.graph"), WINDOW, 0.0, compat="reference")
    f1 = [opt_p(pred, window_crops["gt"], seed=seed, compat="reference")["f1"] for seed in (0, 1, 2)]
    lo, hi = RELEASED_OPTP_F1_ROADTRACER
    assert lo <= float(np.mean(f1)) <= hi
    assert all(lo - 5e-4 <= v <= hi + 5e-4 for v in f1), f1  # each seed: the quoted values, rounded


def test_metric_classes_take_compat(vancouver, window_crops):
    optj = _released(vancouver[0], "optj")
    metric = OptJMetrics(compat="reference")
    metric.update(window_crops["segmentation"], window_crops["gt"])
    assert float(metric.compute()["f1"]) == pytest.approx(optj["f1"], abs=1e-9)
    with pytest.raises(ValueError, match="compat"):
        OptGMetrics(compat="metrics_delin")
    with pytest.raises(ValueError, match="greedy"):
        opt_j(window_crops["segmentation"], window_crops["gt"], matching="optimal", compat="reference")
