import json

import networkx as nx
import pytest

from drivemetrics.cli import main
from drivemetrics.roadnet.io import write_roadtracer_graph


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
            "apls.protocol=sat2graph",
            "--set",
            "apls.compat=reference",
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


def test_graph_sensitivity_refuses_out_before_any_computing(tmp_path, capsys, monkeypatch):
    import drivemetrics.roadnet.io as graph_io
    import drivemetrics.roadnet.sensitivity as sensitivity

    def no_computing(*args, **kwargs):
        raise AssertionError("computed before checking --out")

    monkeypatch.setattr(sensitivity, "run_sensitivity", no_computing)
    monkeypatch.setattr(graph_io, "read_graph", no_computing)
    gt = tmp_path / "gt.graph"
    write_roadtracer_graph(grid(), gt)
    before = gt.read_bytes()
    (tmp_path / "file.txt").write_text("keep")
    args = ["graph-sensitivity", "--gt", str(gt), "--quick", "--no-progress", "--out"]
    assert main([*args, str(gt)]) == 2
    assert "`--out`" in capsys.readouterr().err
    assert main([*args, str(tmp_path / "file.txt")]) == 2
    assert "is a file" in capsys.readouterr().err
    assert gt.read_bytes() == before
    assert (tmp_path / "file.txt").read_text() == "keep"


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

    from drivemetrics.roadnet import cli, evaluate

    perturb = importlib.import_module("drivemetrics.roadnet.perturb")  # the package attribute is the function
    assert tuple(evaluate.METRICS) == cli.METRICS
    assert tuple(perturb.PERTURBATIONS) == cli.PERTURBATIONS


def test_graph_sensitivity_quick_compat_reference(tmp_path, capsys):
    write_roadtracer_graph(grid(), tmp_path / "gt.graph")
    args = ["graph-sensitivity", "--gt", str(tmp_path / "gt.graph"), "--out", str(tmp_path / "out"), "--quick"]
    args += ["--metrics", "opt_j", "tlts", "--kinds", "interruptions", "--compat", "reference", "--no-progress"]
    assert main(args) == 0
    rows = [line.split(",") for line in (tmp_path / "out" / "sensitivity.csv").read_text().splitlines()[1:]]
    opt_j = {int(k): float(v) for kind, k, metric, score, v in rows if (metric, score) == ("opt_j", "f1")}
    assert opt_j[0] == pytest.approx(1.0)
    assert opt_j[4] < 1.0
    assert "tlts (correct)" in capsys.readouterr().out


def test_graph_eval_compat_warns_about_metrics_without_compat_mode(tmp_path, capsys):
    write_roadtracer_graph(grid(), tmp_path / "gt.graph")
    args = ["graph-eval", "--gt", str(tmp_path / "gt.graph"), "--pred", str(tmp_path / "gt.graph"), "--no-progress"]
    metrics = ["--metrics", "opt_j", "subg", "junct", "--set", "subg.n_subgraphs=20"]
    assert main([*args, *metrics, "--compat", "reference"]) == 0
    err = capsys.readouterr().err
    warnings = [line for line in err.splitlines() if "warning:" in line]
    assert warnings == [  # the command's name first, as every command's warning (issue 50)
        "drivemetrics graph-eval: warning: --compat reference: subg, junct have no compat mode and are scored in "
        "the default mode"
    ]
    assert main([*args, *metrics]) == 0  # no compat: no warning
    assert "warning" not in capsys.readouterr().err
    assert main([*args, "--metrics", "opt_j", "ccq", "--compat", "reference"]) == 0  # all have a compat mode
    assert "warning" not in capsys.readouterr().err
    from drivemetrics.roadnet.evaluate import METRICS, metrics_without_compat

    assert metrics_without_compat(METRICS) == ["apls", "subg", "junct"]


def test_graph_eval_json_refuses_to_overwrite_an_input(tmp_path, capsys):
    write_roadtracer_graph(grid(), tmp_path / "gt.graph")
    args = ["graph-eval", "--gt", str(tmp_path / "gt.graph"), "--pred", str(tmp_path / "gt.graph")]
    assert main([*args, "--metrics", "opt_j", "--json", str(tmp_path / "gt.graph"), "--no-progress"]) == 2
    assert "refusing to overwrite" in capsys.readouterr().err
    assert (tmp_path / "gt.graph").read_text().startswith("0.000000 0.000000")


def test_graph_eval_window_border_protocol_and_sizes(tmp_path):
    # grid 0..600 px; window [100, 700) shifted to the origin, then border 50: [50, 550) of the shifted tile
    write_roadtracer_graph(grid(), tmp_path / "gt.graph")
    out = tmp_path / "r.json"
    base = ["graph-eval", "--gt", str(tmp_path / "gt.graph"), "--pred", str(tmp_path / "gt.graph"), "--no-progress"]
    window = ["--window", "100", "100", "700", "700", "--border", "50", "--metrics", "opt_j"]
    assert main([*base, *window, "--compat", "reference", "--json", str(out)]) == 0
    tile = json.loads(out.read_text())["tiles"]["gt"]
    # shifted grid nodes at -100, 100, 300, 500; inside [50, 550): 100, 300, 500 -> 3 x 3 nodes, 12 edges, plus one
    # boundary node for each of the 6 edges leaving through x = 50 or y = 50
    assert tile["graphs"] == {"gt": {"nodes": 15, "edges": 18}, "pred": {"nodes": 15, "edges": 18}}
    assert tile["opt_j"]["f1"] == pytest.approx(1.0, abs=1e-9)


def test_graph_eval_compat_reference_on_vancouver(tmp_path, fixtures_dir):
    folder = fixtures_dir / "graphs" / "roadtracer_vancouver"
    expected = json.loads((folder / "expected_metrics_delin_crop2048.json").read_text())
    out = tmp_path / "r.json"
    args = ["graph-eval", "--gt", str(folder / "gt.graph"), "--pred", str(folder / "pred_segmentation.graph")]
    args += ["--window", "-1024", "-1024", "1024", "1024", "--metrics", "opt_j", "ccq", "--no-progress"]
    assert main([*args, "--compat", "reference", "--json", str(out)]) == 0
    tile = json.loads(out.read_text())["tiles"]["gt"]
    crops = expected["crops"]
    assert tile["graphs"]["gt"] == {"nodes": crops["gt"]["n_nodes"], "edges": crops["gt"]["n_edges"]}
    assert tile["graphs"]["pred"] == {
        "nodes": crops["segmentation"]["n_nodes"],
        "edges": crops["segmentation"]["n_edges"],
    }
    optj = next(r for r in expected["results"] if r["metric"] == "optj")
    ccq = next(r for r in expected["results"] if r["metric"] == "ccq")
    assert [tile["opt_j"][k] for k in ("tp", "pp", "ap")] == [optj["tp"], optj["pp"], optj["ap"]]
    assert tile["opt_j"]["f1"] == pytest.approx(optj["f1"], abs=1e-9)
    assert tile["ccq"]["quality"] == pytest.approx(ccq["quality"], abs=1e-9)
    assert tile["ccq"]["total_gt"] == ccq["gt_pixels"]
    # the default mode crops by the paper's rule: other sizes, other numbers
    assert main([*args, "--json", str(out)]) == 0
    default = json.loads(out.read_text())["tiles"]["gt"]
    assert default["graphs"]["gt"] != tile["graphs"]["gt"]
    assert default["ccq"]["quality"] != pytest.approx(ccq["quality"], abs=1e-3)


def test_graph_eval_json_never_into_a_graph_folder_as_a_graph(tmp_path, capsys):
    """Folders of graphs: a --json among them would overwrite a tile (or be read as one by the next run)."""
    for folder in ("gt", "pred"):
        (tmp_path / folder).mkdir()
        write_roadtracer_graph(grid(), tmp_path / folder / "tile.graph")
    (tmp_path / "pred" / "other.json").write_text('{"type": "FeatureCollection", "features": []}')
    args = ["graph-eval", "--gt", str(tmp_path / "gt"), "--pred", str(tmp_path / "pred"), "--metrics", "opt_j"]
    for target in (tmp_path / "pred" / "tile.graph", tmp_path / "pred" / "other.json", tmp_path / "gt" / "s.json"):
        before = target.read_bytes() if target.exists() else None
        assert main([*args, "--no-progress", "--json", str(target)]) == 2
        assert "inside the input folder" in capsys.readouterr().err
        assert (target.read_bytes() if target.exists() else None) == before


def test_graph_eval_protocol_is_the_apls_preset(tmp_path, monkeypatch, capsys):
    """``--protocol NAME`` (the grammar's name for presets) sets ``apls.protocol``; a ``--set`` given too wins."""
    import drivemetrics.roadnet.evaluate as evaluate

    write_roadtracer_graph(grid(), tmp_path / "gt.graph")
    write_roadtracer_graph(grid(), tmp_path / "pred.graph")
    seen = []
    real = evaluate.evaluate_dataset

    def recording(pairs, metrics, options, *args, **kwargs):
        seen.append(options["apls"].get("protocol"))
        return real(pairs, metrics, options, *args, **kwargs)

    monkeypatch.setattr(evaluate, "evaluate_dataset", recording)
    argv = ["graph-eval", "--gt", str(tmp_path / "gt.graph"), "--pred", str(tmp_path / "pred.graph")]
    argv += ["--metrics", "apls", "--no-progress"]
    assert main([*argv, "--protocol", "sat2graph"]) == 0
    assert main([*argv, "--protocol", "sat2graph", "--set", "apls.protocol=cosmiq"]) == 0
    assert main(argv) == 0
    capsys.readouterr()
    assert seen == ["sat2graph", "cosmiq", None]
