import itertools

import networkx as nx
import numpy as np
import pytest
import torch

from drivemetrics.graph.geometry import crop, validate_graph
from drivemetrics.roadnet import OptJMetrics
from drivemetrics.roadnet.io import read_graph
from drivemetrics.roadnet.opt_j import opt_j


def _graph(points, edges):
    g = nx.Graph()
    for i, p in enumerate(points):
        g.add_node(i, pos=(float(p[0]), float(p[1])))
    g.add_edges_from(edges)
    return g


def _t_junction(shift=(0.0, 0.0), drop_branch=False):
    """Junction at (100, 100) with arms to the left, right and (unless dropped) down."""
    sx, sy = shift
    pts = [(100 + sx, 100 + sy), (0 + sx, 100 + sy), (200 + sx, 100 + sy), (100 + sx, 200 + sy)]
    edges = [(0, 1), (0, 2)] + ([] if drop_branch else [(0, 3)])
    return _graph(pts, edges)


# ---------------------------------------------------------------- an independent re-statement of the released code


def _seg_dist(x, p, q):
    """Distances from point x to segments p[k]-q[k]; also the clamped parameter and the foot points."""
    d = q - p
    den = np.einsum("ij,ij->i", d, d)
    lam = np.einsum("ij,ij->i", x - p, d) / np.where(den > 0, den, 1)
    foot = p + np.clip(lam, 0, 1)[:, None] * d
    return np.linalg.norm(foot - x, axis=1), lam, foot


def _snap(adj, pos, edges, points, th_existing, th_snap):
    adj = {n: set(v) for n, v in adj.items()}
    pos = dict(pos)
    p = np.array([pos[u] for u, _ in edges])
    q = np.array([pos[v] for _, v in edges])
    corr, inserts = [], {}
    for i, x in enumerate(points):
        d, lam, foot = _seg_dist(x, p, q)
        j = int(np.argmin(d))
        u, v = edges[j]
        if d[j] >= th_snap:
            corr.append(None)
        elif lam[j] <= 0 or (np.linalg.norm(p[j] - x) < th_existing and lam[j] < 1):
            corr.append(u)
        elif lam[j] >= 1 or np.linalg.norm(q[j] - x) < th_existing:
            corr.append(v)
        else:
            name = ("snap", i)
            pos[name] = foot[j]
            inserts.setdefault(j, []).append(name)
            corr.append(name)
    for j, names in inserts.items():
        u, v = edges[j]
        names = sorted(names, key=lambda n: float(np.sum((pos[n] - pos[u]) ** 2)))
        adj[u].discard(v)
        adj[v].discard(u)
        chain = [u, *names, v]
        for a, b in itertools.pairwise(chain):
            adj.setdefault(a, set()).add(b)
            adj.setdefault(b, set()).add(a)
    return adj, pos, corr


def _reference_greedy(gt, pred, th_existing=1.0, th_snap=25.0, alpha=100.0, k=5):
    """The released OPT-J algorithm re-stated with loops and dense distances (slow, for checking only)."""

    def parts(g):
        adj = {n: set(g.adj[n]) for n in g}
        pos = {n: np.array(g.nodes[n]["pos"], dtype=float) for n in g}
        return adj, pos, list(g.edges)

    def control(adj):
        return [n for n in adj if len(adj[n]) == 1 or len(adj[n]) > 2]

    def one_way(src_adj, src_pos, src_nodes, dst):
        pts = [src_pos[n] for n in src_nodes]
        adj2, pos2, corr = _snap(*dst, pts, th_existing, th_snap)
        corr_set = {c for c in corr if c is not None}
        cands = [n for n in adj2 if len(adj2[n]) == 1 or len(adj2[n]) > 2 or n in corr_set]
        cpos = np.array([pos2[n] for n in cands])
        seen, matches = set(), {}
        for n, x in zip(src_nodes, pts, strict=True):
            d = np.linalg.norm(cpos - x, axis=1)
            best, best_cost = None, np.inf
            for j in np.argsort(d, kind="stable")[:k]:
                cost = d[j] + alpha * abs(len(src_adj[n]) - len(adj2[cands[j]]))
                if d[j] <= th_snap and cost < best_cost and cands[j] not in seen:
                    best, best_cost = cands[j], cost
            matches[n] = best
            seen.add(best)
        return matches, adj2

    g_adj, g_pos, g_edges = parts(gt)
    h_adj, h_pos, h_edges = parts(pred)
    m_g, h_snap = one_way(g_adj, g_pos, control(g_adj), (h_adj, h_pos, h_edges))
    rest = [n for n in control(h_adj) if n not in set(m_g.values())]
    m_h, g_snap = one_way(h_adj, h_pos, rest, (g_adj, g_pos, g_edges))
    tp = pp = ap = 0
    for n, m in m_g.items():
        o_gt, o_pr = len(g_adj[n]), (len(h_snap[m]) if m is not None else 0)
        tp, pp, ap = tp + min(o_gt, o_pr), pp + o_pr, ap + o_gt
    for n, m in m_h.items():
        o_pr, o_gt = len(h_adj[n]), (len(g_snap[m]) if m is not None else 0)
        tp, pp, ap = tp + min(o_gt, o_pr), pp + o_pr, ap + o_gt
    return tp, pp, ap


# ---------------------------------------------------------------- hand-computed cases


@pytest.mark.parametrize("matching", ["optimal", "greedy"])
def test_identical_graphs_score_one(matching):
    g = _t_junction()
    res = opt_j(g, g, matching=matching)
    # junction degree 3 + three endpoints of degree 1
    assert (res["tp"], res["pp"], res["ap"]) == (6, 6, 6)
    assert res["precision"] == res["recall"] == res["f1"] == 1.0


def test_missing_branch_by_hand():
    gt = _t_junction()
    pred = _t_junction(shift=(3.0, 4.0), drop_branch=True)  # 5 px away, the down arm missing
    res = opt_j(pred, gt)
    # GT junction (deg 3) <-> pred node of degree 2 at (103, 104): tp 2, pp 2, ap 3
    # GT left / right ends <-> pred ends: tp 1 + 1; GT bottom end: nothing within 25 px, ap 1
    assert (res["tp"], res["pp"], res["ap"]) == (4, 4, 6)
    assert res["precision"] == 1.0
    assert res["recall"] == pytest.approx(4 / 6)


def test_snapped_point_on_an_edge_counts_degree_two():
    gt = _graph([(0, 0), (100, 0)], [(0, 1)])
    pred = _graph([(0, 0), (50, 0), (100, 0), (50, 10)], [(0, 1), (1, 2), (1, 3)])  # a 10 px spur at x = 50
    res = opt_j(pred, gt)
    # GT ends match pred ends (tp 2); the pred junction (deg 3) snaps onto the GT edge (deg 2): tp 2, pp 3, ap 2;
    # the spur end (50, 10) snaps onto the GT edge too, 10 px away: a GT point of degree 2 -> tp 1, pp 1, ap 2
    assert (res["tp"], res["pp"], res["ap"]) == (5, 6, 6)


def test_empty_prediction_and_empty_target():
    gt = _t_junction()
    res = opt_j(nx.Graph(), gt)
    assert (res["tp"], res["pp"], res["ap"]) == (0, 0, 6)
    assert res["precision"] == res["recall"] == res["f1"] == 0.0
    with pytest.raises(ValueError, match="`target` graph is empty"):
        opt_j(gt, nx.Graph())


def test_bad_arguments():
    g = _t_junction()
    with pytest.raises(ValueError, match="matching"):
        opt_j(g, g, matching="hungarian")
    with pytest.raises(ValueError, match="d_max"):
        opt_j(g, g, d_max=0)
    bad = _t_junction()
    bad.nodes[2]["pos"] = (np.nan, 0.0)
    with pytest.raises(ValueError, match="`preds` has 1 node"):
        opt_j(bad, g)


def test_inputs_not_mutated():
    gt, pred = _t_junction(), _t_junction(shift=(3.0, 4.0), drop_branch=True)
    before = (nx.to_dict_of_lists(gt), nx.to_dict_of_lists(pred), dict(pred.nodes(data="pos")))
    opt_j(pred, gt)
    assert before == (nx.to_dict_of_lists(gt), nx.to_dict_of_lists(pred), dict(pred.nodes(data="pos")))


def test_greedy_agrees_with_reference_restatement_on_random_graphs():
    rng = np.random.default_rng(3)
    for _ in range(5):
        gt = nx.random_geometric_graph(40, 0.25, seed=int(rng.integers(1000)))
        pr = nx.random_geometric_graph(45, 0.22, seed=int(rng.integers(1000)))
        for g in (gt, pr):
            for n in g:
                g.nodes[n]["pos"] = tuple(float(v) * 300 for v in g.nodes[n]["pos"])
        gt, pr = validate_graph(gt, "gt"), validate_graph(pr, "pr")
        res = opt_j(pr, gt, matching="greedy")
        assert (res["tp"], res["pp"], res["ap"]) == _reference_greedy(gt, pr)


# ---------------------------------------------------------------- real data


def _vancouver(fixtures_dir, name, half=None):
    g = validate_graph(read_graph(fixtures_dir / "graphs" / "roadtracer_vancouver" / name), name)
    return crop(g, -half, -half, half, half) if half else g


@pytest.mark.parametrize("pred_name", ["pred_roadtracer.graph", "pred_segmentation.graph"])
def test_vancouver_greedy_matches_reference_order(fixtures_dir, pred_name):
    gt = _vancouver(fixtures_dir, "gt.graph", 1024)
    pred = _vancouver(fixtures_dir, pred_name, 1024)
    res = opt_j(pred, gt, matching="greedy")
    assert (res["tp"], res["pp"], res["ap"]) == _reference_greedy(gt, pred)


@pytest.mark.slow
def test_vancouver_full_tile_greedy_and_optimal(fixtures_dir):
    gt = _vancouver(fixtures_dir, "gt.graph")
    pred = _vancouver(fixtures_dir, "pred_roadtracer.graph")
    greedy = opt_j(pred, gt, matching="greedy")
    assert (greedy["tp"], greedy["pp"], greedy["ap"]) == _reference_greedy(gt, pred)
    optimal = opt_j(pred, gt)
    same = opt_j(gt, gt)
    assert same["f1"] == 1.0
    # the optimal matching never matches a GT node twice, so it cannot exceed the greedy true positives here
    assert optimal["tp"] <= greedy["tp"]
    assert 0.5 < optimal["f1"] < 0.9


# ---------------------------------------------------------------- torchmetrics wrapper


def test_metric_sums_counts_over_tiles():
    gt = _t_junction()
    pred = _t_junction(shift=(3.0, 4.0), drop_branch=True)
    metric = OptJMetrics()
    metric.update([gt, pred], [gt, gt])  # (6, 6, 6) + (4, 4, 6)
    metric.update(nx.Graph(), gt)  # (0, 0, 6)
    out = metric.compute()
    assert out["precision"].item() == pytest.approx(10 / 10)
    assert out["recall"].item() == pytest.approx(10 / 18)
    assert out["f1"].item() == pytest.approx(2 * (10 / 18) / (1 + 10 / 18))
    assert metric.tp.dtype == torch.float64
    metric.reset()
    assert metric.tp.item() == 0
    with pytest.raises(ValueError, match="as many graphs"):
        metric.update([gt], [gt, gt])
    with pytest.raises(TypeError, match="both be graphs"):
        metric.update(gt, [gt])


def test_metric_merge_state_equals_one_pass():
    gt = _t_junction()
    pred = _t_junction(shift=(3.0, 4.0), drop_branch=True)
    a, b, both = OptJMetrics(), OptJMetrics(), OptJMetrics()
    a.update(gt, gt)
    b.update(pred, gt)
    both.update([gt, pred], [gt, gt])
    a.merge_state(b)  # what a DDP sync does with sum-reduced states
    for key in ("precision", "recall", "f1"):
        assert a.compute()[key].item() == pytest.approx(both.compute()[key].item())


# ---------------------------------------------------------------- two-process sync


def _ddp_tiles():
    base = _t_junction()
    return [
        (base, base),
        (_t_junction(shift=(3.0, 4.0), drop_branch=True), base),
        (_t_junction(shift=(-6.0, 2.0)), base),
        (nx.Graph(), base),
        (_t_junction(shift=(40.0, 0.0)), base),
    ]


def _ddp_metrics():
    from drivemetrics.roadnet import OptGMetrics, OptPMetrics

    return {
        "OptJMetrics": OptJMetrics(),
        "OptPMetrics": OptPMetrics(),
        "OptGMetrics": OptGMetrics(n_samples=20, radius=150.0),
    }


def _ddp_worker(rank, world):
    metrics = _ddp_metrics()
    for pred, gt in _ddp_tiles()[rank::world]:  # uneven split: 3 tiles on rank 0, 2 on rank 1
        for metric in metrics.values():
            metric.update(pred, gt)
    return {name: {k: v.item() for k, v in m.compute().items()} for name, m in metrics.items()}


@pytest.mark.ddp
def test_two_process_sync_equals_single_process():
    from tests.ddp import run_distributed

    results = run_distributed(_ddp_worker)
    single = _ddp_metrics()
    for pred, gt in _ddp_tiles():
        for metric in single.values():
            metric.update(pred, gt)
    expected = {name: {k: v.item() for k, v in m.compute().items()} for name, m in single.items()}
    for rank, result in enumerate(results):
        for name, scores in expected.items():
            for key, value in scores.items():
                assert result[name][key] == pytest.approx(value), (rank, name, key)
