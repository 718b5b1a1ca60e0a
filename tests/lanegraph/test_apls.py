"""Lane-graph APLS (the road-network APLS core with the UrbanLaneGraph parameters) on hand-made graphs."""

import networkx as nx
import numpy as np
import pytest

from drivemetrics.lanegraph.apls import lanegraph_apls
from tests.lanegraph._graphs import straight


@pytest.mark.parametrize("compat", ["default", "reference"])
def test_apls_identical_and_empty(compat):
    g = straight(0, 400)  # 60 m
    assert lanegraph_apls(g, g, compat=compat) == pytest.approx(1.0)
    assert lanegraph_apls(nx.DiGraph(), g, compat=compat) == 0.0
    lonely = nx.DiGraph()
    lonely.add_node(0, pos=np.array([5.0, 5.0]))
    assert lanegraph_apls(lonely, g, compat=compat) == 0.0


def test_apls_reference_large_gt_is_zero_default_is_not():
    g = straight(0, 2000 * 2.0, step=2.0)  # 2001 nodes
    assert lanegraph_apls(g, g, compat="reference") == 0.0
    assert lanegraph_apls(g, g) == pytest.approx(1.0)


def test_apls_shorter_prediction():
    gt = straight(0, 400)
    pred = straight(0, 200)
    for compat in ("default", "reference"):
        value = lanegraph_apls(pred, gt, compat=compat)
        assert 0.0 < value < 1.0
