import json
import math
import os
import pickle

import networkx as nx
import numpy as np
import pytest

from drivemetrics._internal.limits import short_repr
from drivemetrics.roadnet.io import (
    UnsafePickleError,
    read_geojson,
    read_graph,
    read_networkx_pickle,
    read_roadtracer_graph,
    read_sat2graph_pickle,
    safe_pickle_load,
    to_graph,
    write_roadtracer_graph,
)


def _edge_set(g):
    return {tuple(sorted((g.nodes[u]["pos"], g.nodes[v]["pos"]))) for u, v in g.edges}


# ---------------------------------------------------------------- RoadTracer text


def test_roadtracer_text_by_hand(tmp_path):
    path = tmp_path / "t.graph"
    path.write_text("0 0\n10.5 0\n10.5 -3\n\n0 1\n1 0\n1 2\n2 1\n")
    g = read_roadtracer_graph(path)
    assert g.number_of_nodes() == 3
    assert g.number_of_edges() == 2  # both directions collapse
    assert g.nodes[1]["pos"] == (10.5, 0.0)
    assert g.nodes[2]["pos"] == (10.5, -3.0)
    assert set(map(frozenset, g.edges)) == {frozenset((0, 1)), frozenset((1, 2))}


def test_roadtracer_text_with_windows_line_ends(tmp_path):
    path = tmp_path / "w.graph"
    path.write_bytes(b"0.000000 0.000000\r\n3.000000 4.000000\r\n\r\n0 1\r\n1 0\r\n")  # as the released writer
    g = read_roadtracer_graph(path)
    assert (g.number_of_nodes(), g.number_of_edges()) == (2, 1)
    assert g.nodes[1]["pos"] == (3.0, 4.0)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("0 0\n1\n\n0 1\n", r"t\.graph:2: expected two numbers"),
        ("0 0\n1 x\n\n0 1\n", r"t\.graph:2: expected two coordinates"),
        ("0 0\n1 nan\n\n0 1\n", r"t\.graph:2: node position"),
        ("0 0\n1 1\n\n0 1.5\n", r"t\.graph:4: expected two integer node indices"),
        ("0 0\n1 1\n\n0 7\n", r"`edges` indices must lie in 0..1"),
    ],
)
def test_roadtracer_malformed_lines(tmp_path, text, match):
    path = tmp_path / "t.graph"
    path.write_text(text)
    with pytest.raises(ValueError, match=match):
        read_roadtracer_graph(path)


def test_roadtracer_write_read_round_trip(tmp_path):
    g = nx.Graph()
    g.add_node("a", pos=(1.25, 2.5))
    g.add_node("b", pos=(3.0, -4.0))
    g.add_node("c", pos=(0.0, 0.0))
    g.add_edges_from([("a", "b"), ("b", "c")])
    write_roadtracer_graph(g, tmp_path / "x.graph")
    back = read_roadtracer_graph(tmp_path / "x.graph")
    assert _edge_set(back) == _edge_set(g)


def test_read_graph_unknown_and_missing(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_graph(tmp_path / "nope.graph")
    (tmp_path / "x.csv").write_text("1,2")
    with pytest.raises(ValueError, match="unknown graph format"):
        read_graph(tmp_path / "x.csv")


# ---------------------------------------------------------------- GeoJSON


def _write_geojson(path, features):
    path.write_text(json.dumps({"type": "FeatureCollection", "features": features}))


def test_geojson_shared_vertices_make_a_junction(tmp_path):
    line = {"type": "LineString", "coordinates": [[0, 0], [1, 0], [2, 0]]}
    branch = {"type": "MultiLineString", "coordinates": [[[1, 0], [1, 1]], [[5, 5], [6, 6]]]}
    point = {"type": "Point", "coordinates": [9, 9]}
    feats = [{"type": "Feature", "geometry": geom, "properties": {}} for geom in (line, branch, point)]
    _write_geojson(tmp_path / "a.geojson", feats)
    g = read_geojson(tmp_path / "a.geojson", coordinates="raw")
    assert g.number_of_nodes() == 6  # (0,0) (1,0) (2,0) (1,1) (5,5) (6,6); the point is ignored
    assert g.number_of_edges() == 4
    deg = {g.nodes[n]["pos"]: d for n, d in g.degree}
    assert deg[(1.0, 0.0)] == 3


def test_geojson_lonlat_to_metres(tmp_path):
    # two points 0.001 deg of longitude apart at latitude 36.17 (Las Vegas): 6378137 * pi/180 * 0.001 * cos(lat)
    lat = 36.17
    feats = [{"type": "Feature", "geometry": {"type": "LineString", "coordinates": [[-115.0, lat], [-114.999, lat]]}}]
    _write_geojson(tmp_path / "a.geojson", feats)
    g = read_geojson(tmp_path / "a.geojson")
    (p0, p1) = (g.nodes[0]["pos"], g.nodes[1]["pos"])
    expected = 6378137.0 * math.pi / 180.0 * 0.001 * math.cos(math.radians(lat))
    assert math.dist(p0, p1) == pytest.approx(expected, rel=1e-9)
    assert g.graph["origin_lonlat"] == pytest.approx((-114.9995, lat))


def test_geojson_bad_input(tmp_path):
    (tmp_path / "a.geojson").write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        read_geojson(tmp_path / "a.geojson")
    (tmp_path / "b.geojson").write_text('{"type": "Feature"}')
    with pytest.raises(ValueError, match="FeatureCollection"):
        read_geojson(tmp_path / "b.geojson")
    with pytest.raises(ValueError, match="coordinates"):
        read_geojson(tmp_path / "b.geojson", coordinates="utm")


@pytest.mark.parametrize(
    ("document", "match"),
    [
        ({"type": "FeatureCollection", "features": 1}, "'features' list, got 'features': int"),
        ([1, 2], "'features' list, got list"),
        ({"features": [1]}, "feature 0 must be a JSON object, got int"),
        ({"features": [{"geometry": 1}]}, "feature 0: 'geometry' must be a JSON object or null, got int"),
        ({"features": [{"geometry": {"type": "LineString", "coordinates": 5}}]}, "'coordinates' must be a list"),
        ({"features": [{"geometry": {"type": "MultiLineString", "coordinates": [5]}}]}, "malformed coordinates"),
        ({"features": [{"geometry": {"type": "LineString", "coordinates": [[0, 0], [1]]}}]}, "malformed coordinates"),
        ({"features": [{"geometry": {"type": "LineString", "coordinates": [[0, {}], [1, 1]]}}]}, "malformed"),
    ],
)
def test_geojson_wrong_types_are_one_value_error_naming_the_file(tmp_path, document, match):
    path = tmp_path / "s.geojson"
    path.write_text(json.dumps(document))
    with pytest.raises(ValueError, match=match) as info:
        read_geojson(path)
    assert str(info.value).startswith(f"{path}: ")


def test_geojson_null_geometry_is_skipped(tmp_path):
    path = tmp_path / "s.geojson"
    line = {"geometry": {"type": "LineString", "coordinates": [[0, 0], [1, 1]]}}
    path.write_text(json.dumps({"features": [None, {"geometry": None}, line]}))
    assert read_geojson(path, coordinates="raw").number_of_edges() == 1


# ---------------------------------------------------------------- pickles


class _Evil:
    def __reduce__(self):
        return (os.system, ("touch PWNED_BY_PICKLE",))


class _EvalEvil:
    def __reduce__(self):
        return (eval, ("__import__('os').getcwd()",))


@pytest.mark.parametrize("payload", [_Evil(), _EvalEvil(), {"graph": [1, 2, _Evil()]}])
def test_malicious_pickle_is_refused(tmp_path, monkeypatch, payload):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "evil.p"
    path.write_bytes(pickle.dumps(payload))
    with pytest.raises(UnsafePickleError, match="refusing to unpickle global"):
        safe_pickle_load(path)
    with pytest.raises(UnsafePickleError):
        read_graph(path)
    assert not (tmp_path / "PWNED_BY_PICKLE").exists()


def test_restricted_pickle_reads_graphs_and_numpy(tmp_path):
    g = nx.DiGraph()
    g.add_node(0, pos=np.array([1.0, 2.0]))
    g.add_node(1, pos=np.array([3.0, 5.0]))
    g.add_edge(0, 1)
    obj = {"city": {"eval": {"s0": g}}, "score": np.float64(0.5), "ids": np.arange(3)}
    path = tmp_path / "ok.pickle"
    path.write_bytes(pickle.dumps(obj))
    back = read_networkx_pickle(path)
    assert back["score"] == 0.5
    assert back["ids"].tolist() == [0, 1, 2]
    h = back["city"]["eval"]["s0"]
    assert isinstance(h, nx.DiGraph)
    assert h.nodes[1]["pos"].tolist() == [3.0, 5.0]


def test_read_graph_dispatches_pickles(tmp_path):
    g = nx.Graph()
    g.add_node("a", pos=np.array([0.0, 0.0]))
    g.add_node("b", pos=np.array([5.0, 0.0]))
    g.add_edge("a", "b")
    (tmp_path / "one.gpickle").write_bytes(pickle.dumps(g))
    out = read_graph(tmp_path / "one.gpickle")
    assert (out.number_of_nodes(), out.number_of_edges()) == (2, 1)
    (tmp_path / "many.pickle").write_bytes(pickle.dumps({"city": {"eval": {"x": g}}}))
    with pytest.raises(ValueError, match="read_networkx_pickle"):
        read_graph(tmp_path / "many.pickle")


def test_to_graph_converts_without_mutating():
    g = nx.MultiDiGraph()
    g.add_node("x", pos=np.array([1.0, 2.0]))
    g.add_node("y", pos=[4.0, 6.0])
    g.add_edge("x", "y")
    g.add_edge("y", "x")
    g.add_edge("x", "x")
    before = {n: np.array(d["pos"]).tolist() for n, d in g.nodes(data=True)}
    out = to_graph(g, scale=0.5)
    assert {n: np.array(d["pos"]).tolist() for n, d in g.nodes(data=True)} == before
    assert g.number_of_edges() == 3
    assert type(out) is nx.Graph
    assert out.number_of_edges() == 1
    assert out.nodes[1]["pos"] == (2.0, 3.0)
    assert out.nodes[1]["source_id"] == "y"


def test_to_graph_errors():
    g = nx.Graph()
    g.add_node(0)
    with pytest.raises(ValueError, match="no 'pos'"):
        to_graph(g)
    g.nodes[0]["pos"] = (np.nan, 1.0)
    with pytest.raises(ValueError, match="two finite numbers"):
        to_graph(g)
    with pytest.raises(TypeError, match="networkx graph"):
        to_graph({0: [1]})


def test_sat2graph_dict_by_hand(tmp_path):
    adjacency = {(10, 20): [(10, 30)], (10, 30): [(10, 20), (15, 30)], (15, 30): [(10, 30)]}
    path = tmp_path / "g.p"
    path.write_bytes(pickle.dumps(adjacency, protocol=2))
    g = read_sat2graph_pickle(path)
    assert g.number_of_nodes() == 3
    assert g.number_of_edges() == 2
    assert {g.nodes[n]["pos"] for n in g} == {(20.0, 10.0), (30.0, 10.0), (30.0, 15.0)}  # (row, col) -> (x, y)
    assert {read_sat2graph_pickle(path, swap_xy=False).nodes[n]["pos"] for n in g} == {
        (10.0, 20.0),
        (10.0, 30.0),
        (15.0, 30.0),
    }
    assert read_graph(path).number_of_edges() == 2


@pytest.mark.parametrize(
    ("data", "match"),
    [
        ({(0, 0): 5}, r"neighbours of node \(0, 0\) must be a list of \(x, y\) pairs, got int"),
        ({(0, 0): [(1,)]}, "node key .* is not an"),
        ({(0, 0): [{}]}, "node key {} is not an"),
    ],
)
def test_sat2graph_wrong_types_are_one_value_error_naming_the_file(tmp_path, data, match):
    path = tmp_path / "g.p"
    path.write_bytes(pickle.dumps(data, protocol=2))
    with pytest.raises(ValueError, match=match) as info:
        read_graph(path)
    assert str(info.value).startswith(f"{path}: ")


@pytest.mark.parametrize("pos", [{}, "ab", None, [1], object])
def test_networkx_pickle_with_a_bad_pos_names_the_file(tmp_path, pos):
    g = nx.Graph()
    g.add_node(0, pos=pos)
    path = tmp_path / "g.pickle"
    path.write_bytes(pickle.dumps(g))
    if pos is object:  # not loadable by the restricted unpickler: refused, also a ValueError
        with pytest.raises(ValueError, match=str(path)):
            read_graph(path)
        return
    with pytest.raises(ValueError, match="'pos' must be two finite numbers") as info:
        read_graph(path)
    assert str(info.value).startswith(f"{path}: ")


def test_error_messages_cap_reprs():
    from drivemetrics.graph.geometry import validate_graph

    huge = "x" * 5_000_000
    nested: tuple = ()
    for _ in range(25):
        nested = (nested, nested)  # 2**25 leaves: the full repr would not fit in memory
    for value in (huge, nested, 10**5000):
        assert len(short_repr(value)) <= 80
    g = nx.Graph()
    g.add_node(huge, pos=huge)
    for check in (to_graph, lambda graph: validate_graph(graph, "gt")):
        with pytest.raises(ValueError, match="'pos' must be two") as info:
            check(g)
        assert len(str(info.value)) < 300


def test_long_keys_and_lines_are_cut_in_messages(tmp_path):
    path = tmp_path / "g.p"
    path.write_bytes(pickle.dumps({("a" * 1_000_000, 0): []}, protocol=2))
    with pytest.raises(ValueError, match="is not an") as info:
        read_graph(path)
    assert len(str(info.value)) < 120 + len(str(path))
    text = tmp_path / "g.graph"
    text.write_text("1 " + "y" * 1_000_000 + "\n")
    with pytest.raises(ValueError, match="expected two coordinates") as info:
        read_roadtracer_graph(text)
    assert len(str(info.value)) < 150 + len(str(text))


# ---------------------------------------------------------------- real fixtures


def test_roadtracer_fixtures(fixtures_dir):
    folder = fixtures_dir / "graphs" / "roadtracer_vancouver"
    counts = {
        "gt.graph": (3587, 4224),
        "pred_roadtracer.graph": (16338, 17030),
        "pred_segmentation.graph": (2172, None),
    }
    for name, (n_nodes, n_edges) in counts.items():
        g = read_graph(folder / name)
        assert g.number_of_nodes() == n_nodes
        if n_edges is not None:
            assert g.number_of_edges() == n_edges
        pos = np.array([g.nodes[n]["pos"] for n in g])
        assert np.isfinite(pos).all()
    # the text lists every edge in both directions: count the distinct undirected pairs independently
    lines = (folder / "gt.graph").read_text().split("\n\n", 1)[1].split()
    pairs = {frozenset(map(int, lines[i : i + 2])) for i in range(0, len(lines), 2)}
    assert len(pairs) == 4224


def test_geojson_fixtures(fixtures_dir):
    files = sorted((fixtures_dir / "graphs" / "spacenet_vegas").glob("*/*.geojson"))
    assert len(files) == 14
    for path in files:
        g = read_geojson(path)
        data = json.loads(path.read_text())
        vertices = set()
        for feature in data["features"]:
            geom = feature["geometry"]
            parts = [geom["coordinates"]] if geom["type"] == "LineString" else geom["coordinates"]
            vertices.update(tuple(v[:2]) for part in parts for v in part)
        assert g.number_of_nodes() == len(vertices)
        pos = np.array([g.nodes[n]["pos"] for n in g])
        assert np.abs(pos).max() < 2000  # a SpaceNet tile is 400 m wide; metres about its center


def test_sat2graph_fixtures(fixtures_dir):
    folder = fixtures_dir / "graphs" / "sat2graph_tile"
    gt = read_graph(folder / "gt.p")
    assert (gt.number_of_nodes(), gt.number_of_edges()) == (3696, 3975)
    prop = read_sat2graph_pickle(folder / "prop.p")  # Python-2 pickle with numpy.int64 keys
    assert prop.number_of_nodes() == 4518
    pos = np.array([prop.nodes[n]["pos"] for n in prop])
    assert pos.min() >= 0
    assert pos.max() <= 2048


def test_lanegraph_fixtures(fixtures_dir):
    folder = fixtures_dir / "lanegraph"
    gt = read_networkx_pickle(folder / "annotations_successor_lgp_eval.pickle")
    sub = read_networkx_pickle(folder / "submission_succ_lgp_eval.pickle")
    assert sorted(gt) == ["austin", "detroit", "miami", "paloalto", "pittsburgh", "washington"]
    assert {city: len(gt[city]["eval"]) for city in gt} == {
        "austin": 100,
        "detroit": 61,
        "miami": 100,
        "paloalto": 100,
        "pittsburgh": 100,
        "washington": 100,
    }
    for city in gt:
        assert set(sub[city]["eval"]) == set(gt[city]["eval"])
        for graph in list(gt[city]["eval"].values())[:5]:
            assert isinstance(graph, nx.DiGraph)
            g = to_graph(graph)
            assert 11 <= g.number_of_nodes() <= 57
    full = read_networkx_pickle(folder / "submission_full_lgp_eval.pickle")
    (graph,) = [g for city in full.values() for g in city["eval"].values()]
    assert graph.number_of_nodes() == 5214
    assert graph.number_of_edges() == 5553
    g = to_graph(graph)
    assert g.number_of_nodes() == 5214
    assert isinstance(graph.nodes[next(iter(graph))]["pos"], np.ndarray)  # the source graph is untouched


def test_restricted_unpickler_allow_list_is_small():
    from drivemetrics._internal.safe_pickle import _ALLOWED_BUILTINS

    assert not {"eval", "exec", "getattr", "open", "__import__", "compile"} & _ALLOWED_BUILTINS
