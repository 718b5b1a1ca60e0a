"""lanegraph-eval's default worker count: which process scores the samples (decisions, not timings)."""

from __future__ import annotations

import networkx as nx
import numpy as np

from drivemetrics._internal import pool
from drivemetrics.lanegraph.evaluate import evaluate_submission


def line(y: float, length: float = 200.0) -> nx.DiGraph:
    graph = nx.DiGraph()
    for i, x in enumerate(np.arange(0.0, length + 1e-9, 10.0)):
        graph.add_node(i, pos=np.array([x, y]))
    graph.add_edges_from((i, i + 1) for i in range(len(graph) - 1))
    return graph


def dataset(samples: int) -> tuple[dict, dict]:
    gt = {"austin": {"eval": {f"a{k}": line(10.0 * k) for k in range(samples)}}}
    pred = {"austin": {"eval": {f"a{k}": line(10.0 * k + 3.0) for k in range(samples)}}}
    return pred, gt


def test_default_workers_score_a_small_split_in_one_process(pools, monkeypatch):
    monkeypatch.setattr(pool.os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    result = evaluate_submission(*dataset(4), "successor", workers=None, progress=False)
    assert len(result["samples"]) == 4
    assert pools == []


def test_default_workers_start_no_pool_on_a_busy_machine(pools, monkeypatch):
    monkeypatch.setattr(pool, "WORKER_START_SECONDS", 0.0)  # any pool would pay on free cores
    monkeypatch.setattr(pool.os, "getloadavg", lambda: (5.0, 5.0, 5.0))
    evaluate_submission(*dataset(4), "successor", workers=None, progress=False)
    assert pools == []


def test_default_workers_pool_the_rest_when_it_pays_on_free_cores(pools, monkeypatch):
    monkeypatch.setattr(pool, "WORKER_START_SECONDS", 0.0)
    monkeypatch.setattr(pool.os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    pooled = evaluate_submission(*dataset(4), "successor", workers=None, progress=False)
    assert pools == [(3, 2)]  # the first sample timed here, the other three in two workers
    np.testing.assert_equal(pooled, evaluate_submission(*dataset(4), "successor", workers=1, progress=False))
