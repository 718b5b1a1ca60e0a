import networkx as nx
import numpy as np
import pytest
import torch
from scipy import ndimage

from drivemetrics.graph.geometry import crop
from drivemetrics.roadnet.ccq import (
    CCQMetrics,
    ccq,
    ccq_counts,
    ccq_graph,
    ccq_scores,
    disc_dilation,
    render_graph,
)
from drivemetrics.roadnet.io import read_graph


def _graph(points, edges):
    g = nx.Graph()
    for i, p in enumerate(points):
        g.add_node(i, pos=(float(p[0]), float(p[1])))
    g.add_edges_from(edges)
    return g


def _reference_counts(pred, gt, slack):
    """The released code's relaxed confusion counts (distance transform), written independently with scipy."""
    dist_gt = ndimage.distance_transform_edt(~gt)
    dist_pred = ndimage.distance_transform_edt(~pred)
    return [
        int((pred & (dist_gt <= slack)).sum()),
        int(pred.sum()),
        int((gt & (dist_pred <= slack)).sum()),
        int(gt.sum()),
    ]


@pytest.mark.parametrize("radius", [0, 1, 1.5, 2, 3.7, 8])
def test_disc_dilation_matches_distance_transform(radius, device):
    rng = np.random.default_rng(1)
    mask = rng.random((2, 40, 37)) < 0.02
    out = disc_dilation(torch.as_tensor(mask, device=device), radius).cpu().numpy()
    for b in range(2):
        expected = ndimage.distance_transform_edt(~mask[b]) <= radius
        np.testing.assert_array_equal(out[b], expected)


@pytest.mark.parametrize("slack", [0, 2, 3, 8])
def test_counts_match_reference_formula(slack, device):
    rng = np.random.default_rng(slack)
    pred = rng.random((3, 50, 60)) < 0.05
    gt = rng.random((3, 50, 60)) < 0.05
    counts = ccq_counts(torch.as_tensor(pred, device=device), torch.as_tensor(gt, device=device), slack)
    for b in range(3):
        assert counts[b].tolist() == _reference_counts(pred[b], gt[b], slack)


def test_parallel_lines_hand_example():
    gt = torch.zeros(1, 10, 20, dtype=torch.bool)
    pred = torch.zeros_like(gt)
    gt[0, 3, 2:18] = True
    pred[0, 5, 2:12] = True  # 2 px below, shorter
    r1 = ccq(pred, gt, slack=1)
    assert (r1["matched_pred"], r1["matched_gt"]) == (0, 0)
    r2 = ccq(pred, gt, slack=2)
    assert r2["correctness"] == 1.0
    assert r2["completeness"] == pytest.approx(10 / 16)
    assert r2["quality"] == pytest.approx(10 / 16)  # 1 / (1 / 1 + 16 / 10 - 1)


def test_scores_hand_values():
    assert ccq_scores(1, 2, 1, 1) == pytest.approx((0.5, 1.0, 0.5))
    assert ccq_scores(3, 4, 2, 4) == pytest.approx((0.75, 0.5, 1 / (1 / 0.75 + 1 / 0.5 - 1)))
    assert ccq_scores(0, 0, 0, 5) == (0.0, 0.0, 0.0)


def test_render_graph_draws_line_pixels():
    g = _graph([(0, 0), (10, 0), (10, 4)], [(0, 1), (1, 2)])
    img = render_graph(g, (6, 12))
    expected = torch.zeros(6, 12, dtype=torch.bool)
    expected[0, 0:11] = True
    expected[0:5, 10] = True
    assert torch.equal(img, expected)
    half = render_graph(g, (6, 12), scale=0.5)
    assert half[0, 0:6].all()
    assert half.sum() == 8


def test_graph_identical_empty_and_errors():
    g = _graph([(0, 0), (100, 0), (100, 80), (30, 40)], [(0, 1), (1, 2), (1, 3)])
    r = ccq_graph(g, g)
    assert (r["correctness"], r["completeness"], r["quality"]) == (1.0, 1.0, 1.0)
    empty = ccq_graph(nx.Graph(), g)
    assert (empty["correctness"], empty["completeness"], empty["quality"]) == (0.0, 0.0, 0.0)
    assert empty["total_gt"] > 0
    with pytest.raises(ValueError, match="target"):
        ccq_graph(g, nx.Graph())
    nan_pred = _graph([(0, 0), (float("nan"), 3)], [(0, 1)])
    with pytest.raises(ValueError, match="preds"):
        ccq_graph(nan_pred, g)
    with pytest.raises(ValueError, match="scale"):
        ccq_graph(g, g, scale=0)
    with pytest.raises(ValueError, match="binary"):
        ccq_counts(torch.full((1, 4, 4), 0.5), torch.zeros(1, 4, 4))
    with pytest.raises(ValueError, match="shape"):
        ccq_counts(torch.zeros(1, 4, 4), torch.zeros(1, 4, 5))
    with pytest.raises(ValueError, match="target"):
        ccq(torch.ones(1, 4, 4), torch.zeros(1, 4, 4))


def test_shifted_graph_within_and_beyond_slack():
    gt = _graph([(0, 0), (400, 0)], [(0, 1)])
    near = _graph([(0, 6), (400, 6)], [(0, 1)])  # 6 px: inside the 8 px slack
    far = _graph([(0, 20), (400, 20)], [(0, 1)])
    assert ccq_graph(near, gt)["quality"] == 1.0
    assert ccq_graph(far, gt)["quality"] == 0.0


def test_metric_sums_counts_over_tiles():
    a = _graph([(0, 0), (200, 0)], [(0, 1)])
    b = _graph([(0, 0), (200, 0), (200, 200)], [(0, 1), (1, 2)])
    metric = CCQMetrics()
    metric.update(a, b)
    metric.update([b], [b])
    ra, rb = ccq_graph(a, b), ccq_graph(b, b)
    corr, comp, qual = ccq_scores(
        ra["matched_pred"] + rb["matched_pred"],
        ra["total_pred"] + rb["total_pred"],
        ra["matched_gt"] + rb["matched_gt"],
        ra["total_gt"] + rb["total_gt"],
    )
    out = metric.compute()
    assert out["correctness"].item() == pytest.approx(corr)
    assert out["completeness"].item() == pytest.approx(comp)
    assert out["quality"].item() == pytest.approx(qual)
    images = CCQMetrics(slack=1)
    images.update(torch.eye(5)[None].bool(), torch.eye(5)[None].bool())
    assert images.compute()["quality"].item() == 1.0


def test_reference_canvas_without_tile_starts_at_the_origin():
    """compat CCQ without a canvas or a tile: a square from (0, 0) to ceil(max coordinate * scale), as the released
    examples draw (negative coordinates are clipped)."""
    gt = _graph([(-40, 10), (40, 10)], [(0, 1)])
    res = ccq_graph(gt, gt, slack=0.0, scale=1.0, compat="reference")
    assert res["total_gt"] == 40  # columns 0..39 of a 40 x 40 canvas
    wide = ccq_graph(gt, gt, slack=0.0, scale=1.0, canvas=(-64, 0, 64, 128), compat="reference")
    assert wide["total_gt"] == 81
    gt.graph["tile"] = (0.0, 0.0, 20.0, 20.0)
    assert ccq_graph(gt, gt, slack=0.0, scale=1.0, compat="reference")["total_gt"] == 20  # the tile: 20 x 20 px
    with pytest.raises(ValueError, match="canvas"):
        ccq_graph(gt, gt, canvas=(0, 0, 0, 5))
    with pytest.raises(ValueError, match="canvas"):
        CCQMetrics(canvas=(0, 0, 8))


def test_scalar_classes_with_different_canvases_count_apart():
    """The canvas changes the counts, so it is part of the scalar classes' compute-group key."""
    from drivemetrics.roadnet.ccq import CCQQuality

    a, b = CCQQuality(), CCQQuality(canvas=(0.0, 0.0, 64, 64))
    assert not torch.equal(a.config_key, b.config_key)
    assert torch.equal(a.config_key, CCQQuality().config_key)


def test_vancouver_identical_and_real_prediction(fixtures_dir):
    folder = fixtures_dir / "graphs" / "roadtracer_vancouver"
    gt = crop(read_graph(folder / "gt.graph"), -1024, -1024, 1024, 1024)
    pred = crop(read_graph(folder / "pred_roadtracer.graph"), -1024, -1024, 1024, 1024)
    assert ccq_graph(gt, gt)["quality"] == 1.0
    r = ccq_graph(pred, gt)
    assert 0.3 < r["quality"] < 1.0
    assert 0.0 < r["correctness"] < 1.0
    assert 0.0 < r["completeness"] < 1.0


@pytest.mark.parametrize("name", ["pred_roadtracer.graph", "pred_segmentation.graph"])
def test_default_render_agrees_with_pil_lines_of_unrounded_points(fixtures_dir, name):
    """PIL lines (width 1) of the unrounded scaled points at scale 1/4 on the 8192 px region, EDT with slack 2 px.

    Not the released protocol (it rounds the points first; ``compat="reference"`` reproduces it exactly, see
    ``test_metrics_delin.py``): this checks the default line drawing against PIL's at the same pixel grid.
    """
    from PIL import Image, ImageDraw

    from drivemetrics.graph.geometry import graph_arrays

    folder = fixtures_dir / "graphs" / "roadtracer_vancouver"
    gt, pred = read_graph(folder / "gt.graph"), read_graph(folder / name)

    def pil_render(g):
        arrays = graph_arrays(g)
        pos = (arrays.pos + 4096) * 0.25
        image = Image.new("L", (2048, 2048))
        draw = ImageDraw.Draw(image)
        for u, v in arrays.edges:
            draw.line([tuple(pos[u]), tuple(pos[v])], fill=255, width=1)
        return np.array(image) > 0

    ref = ccq_scores(*_reference_counts(pil_render(pred), pil_render(gt), 2))
    ours = ccq_graph(pred, gt, slack=8, scale=0.25, canvas=(-4096, -4096, 2048, 2048))
    assert ours["correctness"] == pytest.approx(ref[0], abs=2e-3)
    assert ours["completeness"] == pytest.approx(ref[1], abs=2e-3)
    assert ours["quality"] == pytest.approx(ref[2], abs=2e-3)


def test_ccq_takes_the_graphs_its_class_takes():
    """``ccq`` on graphs counts exactly what ``CCQMetrics`` counts for the same pair (slack 3, scale 1)."""
    gt = _graph([(0, 0), (100, 0), (100, 80), (30, 40)], [(0, 1), (1, 2), (1, 3)])
    pred = _graph([(0, 4), (100, 4), (100, 60)], [(0, 1), (1, 2)])
    r = ccq(pred, gt, slack=3.0, scale=1.0)
    metric = CCQMetrics(slack=3.0, scale=1.0)
    metric.update(pred, gt)
    out = metric.compute()
    assert r["quality"] < 1.0
    assert (r["correctness"], r["completeness"], r["quality"]) == pytest.approx(
        (float(out["correctness"]), float(out["completeness"]), float(out["quality"]))
    )
    with pytest.raises(ValueError, match="compat"):
        ccq(pred, gt, compat="released")
