"""OR-Tools' min-cost-flow lane assignment (Gen-LaneNet's Apollo evaluator): its choice among tied optima.

``ortools_ties.json`` holds what OR-Tools 9.14 (``ortools.graph.python.min_cost_flow.SimpleMinCostFlow``, the
graph ``tools/MinCostFlow.py`` builds) returned for the seed-generated matrices of :func:`_matrices`; regenerate it
in an environment with ortools: ``PYTHONPATH=. python tests/lane3d/test_mincostflow.py``.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from drivemetrics.lane3d.mincostflow import flow_lane_assignment, min_cost_flow, ortools_lane_assignment

RECORDED = Path(__file__).with_name("ortools_ties.json")


def _matrices(seed: int, count: int) -> list[list[list[int]]]:
    """Tie-heavy integer cost matrices (1-8 GT x 1-10 predictions): few distinct values, multiples, a 150 gate."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        g, p = rng.randint(1, 8), rng.randint(1, 10)
        kind = rng.random()
        if kind < 0.4:
            values = [rng.choice([0, 1, 2, 150]) for _ in range(3)]
            cost = [[rng.choice(values) for _ in range(p)] for _ in range(g)]
        elif kind < 0.7:
            cost = [[rng.randint(0, 5) * rng.choice([1, 10, 37]) for _ in range(p)] for _ in range(g)]
        elif kind < 0.85:
            cost = [[150] * p for _ in range(g)]
            for _ in range(rng.randint(0, g)):
                cost[rng.randrange(g)][rng.randrange(p)] = rng.randint(0, 40)
        else:
            cost = [[rng.randint(0, 160) for _ in range(p)] for _ in range(g)]
        out.append(cost)
    return out


def _encode(pairs: list[tuple[int, int]], rows: int) -> str:
    """The assigned column of each row ('-' for none), one character per row."""
    col = dict(pairs)
    return "".join(str(col[i]) if i in col else "-" for i in range(rows))


def _ortools(cost: list[list[int]]) -> list[tuple[int, int]]:
    """``tools/MinCostFlow.py``'s ``SolveMinCostFlow`` (every pair adjacent) over the current OR-Tools API."""
    from ortools.graph.python import min_cost_flow as mcf

    g, p = len(cost), len(cost[0])
    flow = mcf.SimpleMinCostFlow()
    sink = g + p + 1
    tails = [0] * g + [1 + i for i in range(g) for _ in range(p)] + [g + 1 + j for j in range(p)]
    heads = [1 + i for i in range(g)] + [g + 1 + j for _ in range(g) for j in range(p)] + [sink] * p
    costs = [0] * g + [c for row in cost for c in row] + [0] * p
    for t, h, c in zip(tails, heads, costs, strict=True):
        flow.add_arc_with_capacity_and_unit_cost(t, h, 1, c)
    for node, supply in enumerate([min(g, p)] + [0] * (g + p) + [-min(g, p)]):
        flow.set_node_supply(node, supply)
    assert flow.solve() == flow.OPTIMAL
    return [
        (flow.tail(a) - 1, flow.head(a) - g - 1)
        for a in range(flow.num_arcs())
        if flow.tail(a) != 0 and flow.head(a) != sink and flow.flow(a) > 0
    ]


def _scipy(cost: list[list[int]]) -> list[tuple[int, int]]:
    from scipy.optimize import linear_sum_assignment

    rows, cols = linear_sum_assignment(np.array(cost))
    return list(zip(rows.tolist(), cols.tolist(), strict=True))


def test_recorded_ortools_choices():
    recorded = json.loads(RECORDED.read_text())
    matrices = _matrices(recorded["seed"], recorded["count"])
    assert len(recorded["assignments"]) == len(matrices) >= 3000
    differs = 0
    for cost, want in zip(matrices, recorded["assignments"], strict=True):
        ours = flow_lane_assignment(cost)
        assert _encode(ours, len(cost)) == want, cost
        assert ortools_lane_assignment(cost) == ours, cost  # scipy where the optimum is unique
        other = _scipy(cost)
        assert sum(cost[i][j] for i, j in ours) == sum(cost[i][j] for i, j in other)  # an optimum
        differs += ours != other
    assert differs > len(matrices) // 3  # the ties where scipy returns another optimum are many


def test_live_ortools_when_installed():
    pytest.importorskip("ortools.graph.python.min_cost_flow")
    for cost in _matrices(4848, 500):
        want = _ortools(cost)
        assert flow_lane_assignment(cost) == want, cost
        assert ortools_lane_assignment(cost) == want, cost


@pytest.mark.parametrize(
    ("cost", "want"),
    [  # OR-Tools 9.14's answers; scipy returns the other optimum of each
        ([[3, 3], [3, 3]], [(0, 1), (1, 0)]),
        ([[1, 1, 1], [1, 1, 1]], [(0, 2), (1, 1)]),
        ([[150, 150], [150, 150], [150, 150]], [(0, 0), (2, 1)]),
        ([[0, 1, 0], [1, 0, 0], [0, 0, 1]], [(0, 2), (1, 1), (2, 0)]),
    ],
)
def test_hard_coded_ortools_choices(cost, want):
    assert ortools_lane_assignment(cost) == flow_lane_assignment(cost) == want
    assert _scipy(cost) != want


def test_min_cost_flow_generic_cases():
    # a tie between two paths of cost 2: OR-Tools sends the unit along the second
    assert min_cost_flow([0, 0, 1, 2], [1, 2, 3, 3], [1, 1, 1, 1], [2, 2, 0, 0], [1, 0, 0, -1]) == [1, 0, 1, 0]
    assert min_cost_flow([0, 0, 1, 2], [1, 2, 3, 3], [1, 1, 1, 1], [2, 1, 0, 0], [1, 0, 0, -1]) == [0, 1, 0, 1]
    assert min_cost_flow([0], [1], [1], [0], [1, 0]) is None  # unbalanced
    assert min_cost_flow([0], [1], [1], [0], [2, -2]) is None  # infeasible: capacity 1
    for empty in ([], [[]]):
        assert ortools_lane_assignment(empty) == []
        assert flow_lane_assignment(empty) == []


if __name__ == "__main__":  # regenerate ortools_ties.json (needs ortools)
    seed, count = 48, 3000
    answers = [_encode(_ortools(cost), len(cost)) for cost in _matrices(seed, count)]
    data = {
        "source": "OR-Tools 9.14 SimpleMinCostFlow on the graph of Gen-LaneNet's tools/MinCostFlow.py",
        "seed": seed,
        "count": count,
        "assignments": answers,
    }
    RECORDED.write_text(json.dumps(data, indent=0) + "\n")
