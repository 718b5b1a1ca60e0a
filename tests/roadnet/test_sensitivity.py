import csv

import networkx as nx
import pytest

from drivemetrics.roadnet.sensitivity import (
    SensitivityRow,
    fast_options,
    flatness,
    flatness_table,
    plot_sensitivity,
    run_sensitivity,
    write_csv,
)


def grid(n=4, step=200.0):
    g = nx.Graph()
    for i in range(n):
        for j in range(n):
            g.add_node(i * n + j, pos=(j * step, i * step))
            if j:
                g.add_edge(i * n + j - 1, i * n + j)
            if i:
                g.add_edge((i - 1) * n + j, i * n + j)
    return g


def test_flatness_by_hand():
    rows = [
        SensitivityRow("interruptions", 0, "apls", "apls", 1.0),
        SensitivityRow("interruptions", 5, "apls", "apls", 0.7),
        SensitivityRow("interruptions", 10, "apls", "apls", 0.8),
        SensitivityRow("false_positives", 0, "apls", "apls", 1.0),
        SensitivityRow("false_positives", 10, "apls", "apls", 0.995),
    ]
    spread = flatness(rows)
    assert spread[("apls", "apls", "interruptions")] == pytest.approx(0.3)
    assert spread[("apls", "apls", "false_positives")] == pytest.approx(0.005)
    table = flatness_table(rows)
    line = next(s for s in table.splitlines() if s.startswith("apls"))
    assert "0.300" in line
    assert "FLAT 0.005" in line


def test_run_responds_and_writes(tmp_path):
    kinds = ["interruptions", "false_positives"]
    rows = run_sensitivity(grid(), [0, 3], kinds, ["apls", "ccq", "tlts"], fast_options(40), seed=0, progress=False)
    assert len(rows) == 2 * 2 * (1 + 3 + 1)  # kinds x levels x scores
    value = {(r.kind, r.k, r.metric, r.score): r.value for r in rows}
    for kind in kinds:
        assert value[(kind, 0, "apls", "apls")] == pytest.approx(1.0)
        assert value[(kind, 0, "ccq", "quality")] == 1.0
    # gaps break paths; far-away extra roads do not touch any GT path
    assert value[("interruptions", 3, "tlts", "correct")] < 1.0
    assert value[("false_positives", 3, "tlts", "correct")] == 1.0
    assert value[("false_positives", 3, "ccq", "correctness")] < 1.0
    write_csv(rows, tmp_path / "s.csv")
    with open(tmp_path / "s.csv", encoding="utf-8") as handle:
        back = list(csv.DictReader(handle))
    assert len(back) == len(rows)
    assert float(back[-1]["value"]) == pytest.approx(rows[-1].value, rel=1e-5)
    plot_sensitivity(rows, tmp_path / "s.png")
    assert (tmp_path / "s.png").read_bytes()[:4] == b"\x89PNG"


def test_bad_arguments():
    with pytest.raises(ValueError, match="error type"):
        run_sensitivity(grid(), [0, 1], kinds=["typo"], progress=False)
    with pytest.raises(ValueError, match="metric"):
        run_sensitivity(grid(), [0, 1], metrics=["typo"], progress=False)
    with pytest.raises(ValueError, match="levels"):
        run_sensitivity(grid(), [], progress=False)
