import json

import networkx as nx
import pytest

from drivemetrics.cli import main
from drivemetrics.graph.io import write_roadtracer_graph


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


def test_graph_eval_one_pair(tmp_path, capsys):
    write_roadtracer_graph(grid(), tmp_path / "gt.graph")
    write_roadtracer_graph(grid(), tmp_path / "pred.graph")
    out = tmp_path / "r.json"
    code = main(
        [
            "graph-eval",
            "--gt",
            str(tmp_path / "gt.graph"),
            "--pred",
            str(tmp_path / "pred.graph"),
            "--metrics",
            "apls",
            "opt_j",
            "junct",
            "--json",
            str(out),
            "--no-progress",
            "--set",
            "apls.max_snap_dist=25",
            "--set",
            "apls.variant=sat2graph",
        ]
    )
    assert code == 0
    data = json.loads(out.read_text())
    assert data["aggregate"]["apls"]["apls"] == pytest.approx(1.0)
    assert data["aggregate"]["opt_j"]["f1"] == 1.0
    assert data["aggregate"]["junct"]["f_error"] == 0.0
    assert set(data["tiles"]) == {"gt"}
    assert "apls" in capsys.readouterr().out


def test_graph_eval_errors(tmp_path, capsys):
    write_roadtracer_graph(grid(), tmp_path / "gt.graph")
    assert main(["graph-eval", "--gt", str(tmp_path / "gt.graph"), "--pred", str(tmp_path / "none.graph")]) == 2
    assert "--pred" in capsys.readouterr().err
    bad = ["graph-eval", "--gt", str(tmp_path / "gt.graph"), "--pred", str(tmp_path / "gt.graph"), "--metrics", "x"]
    assert main(bad) == 2
    assert "unknown metric" in capsys.readouterr().err
    assert main([*bad[:5], "--set", "apls.max_snap_dist"]) == 2
    assert "METRIC.KEY=VALUE" in capsys.readouterr().err
    assert main([*bad[:5], "--metrics", "apls", "--set", "apls.colour=3", "--no-progress"]) == 2
    assert "colour" in capsys.readouterr().err


def test_graph_sensitivity_quick(tmp_path, capsys):
    write_roadtracer_graph(grid(), tmp_path / "gt.graph")
    code = main(
        [
            "graph-sensitivity",
            "--gt",
            str(tmp_path / "gt.graph"),
            "--out",
            str(tmp_path / "out"),
            "--quick",
            "--metrics",
            "apls",
            "ccq",
            "--kinds",
            "node_perturbations",
            "doubled_pred",
            "--no-progress",
        ]
    )
    assert code == 0
    assert (tmp_path / "out" / "sensitivity.png").is_file()
    lines = (tmp_path / "out" / "sensitivity.csv").read_text().splitlines()
    assert lines[0] == "kind,k,metric,score,value"
    assert len(lines) == 1 + 2 * 3 * (1 + 3)  # kinds x levels (0, 2, 4) x scores
    printed = capsys.readouterr().out
    assert "apls (apls)" in printed
    assert "ccq (quality)" in printed


def test_graph_eval_refuses_json_over_an_input_and_hostile_pickles(tmp_path, capsys):
    write_roadtracer_graph(grid(), tmp_path / "gt.graph")
    write_roadtracer_graph(grid(), tmp_path / "pred.graph")
    before = (tmp_path / "pred.graph").read_bytes()
    args = ["graph-eval", "--gt", str(tmp_path / "gt.graph"), "--pred", str(tmp_path / "pred.graph")]
    assert main([*args, "--json", str(tmp_path / "pred.graph"), "--no-progress"]) == 2
    assert "`--json`" in capsys.readouterr().err
    assert (tmp_path / "pred.graph").read_bytes() == before
    bomb = tmp_path / "pred.p"
    bomb.write_bytes(b"cbuiltins\nbytearray\n(L3000000000\ntR.")
    code = main(["graph-eval", "--gt", str(tmp_path / "gt.graph"), "--pred", str(bomb), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2
    assert "pred.p" in err
    assert "budget" in err
    assert "Traceback" not in err


def test_cli_names_equal_the_library_tables():
    # the CLI module hard-codes them to stay light at import
    import importlib

    from drivemetrics.graph import cli, evaluate

    perturb = importlib.import_module("drivemetrics.graph.perturb")  # the package attribute is the function
    assert tuple(evaluate.METRICS) == cli.METRICS
    assert tuple(perturb.PERTURBATIONS) == cli.PERTURBATIONS
