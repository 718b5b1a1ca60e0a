"""SDA@R on hand-made lane graphs."""

import math

import networkx as nx

from drivemetrics.lanegraph.sda import sda
from tests.lanegraph._graphs import fork, straight


def test_sda_by_hand():
    gt = fork((100.0, 100.0))
    assert sda(fork((110.0, 100.0)), gt, threshold=20.0) == 1.0
    assert sda(fork((130.0, 100.0)), gt, threshold=20.0) == 0.0  # tp 0, fp 1, fn 1
    assert sda(fork((130.0, 100.0)), gt, threshold=50.0) == 1.0
    assert math.isnan(sda(fork(), straight(0, 100)))  # the GT has no split
    assert sda(straight(0, 100), gt) == 0.0  # the prediction has none
    two = nx.union(fork((100.0, 100.0)), fork((400.0, 100.0)), rename=("a", "b"))
    assert sda(fork((100.0, 100.0)), two, threshold=20.0) == 0.5  # tp 1, fp 0, fn 1
