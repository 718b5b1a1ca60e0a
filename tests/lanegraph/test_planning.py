"""Planning MMD / MED / SR on hand-made lane graphs."""

import math

import networkx as nx
import pytest

from drivemetrics.lanegraph.planning import planning
from tests.lanegraph._graphs import straight


def test_planning_by_hand():
    gt = straight(0, 1000, step=5.0)  # 201 nodes in one chain: every walk from the first 150 nodes is kept
    same = planning(gt, gt)
    assert same == {"mmd": 0.0, "med": 0.0, "sr": 1.0}
    shifted = planning(straight(0, 1000, y=3.0, step=5.0), gt)
    assert shifted["mmd"] == pytest.approx(3.0)
    assert shifted["med"] == pytest.approx(3.0)
    empty = planning(nx.DiGraph(), gt)
    assert empty == {"mmd": 5000.0, "med": 5000.0, "sr": 0.0}
    assert all(math.isnan(v) for v in planning(gt, straight(0, 100)).values())  # walks shorter than 50 steps
    ref = planning(gt, gt, compat="reference")
    assert ref["mmd"] == 0.0
    assert ref["sr"] == 1.0
