"""Property-based fuzzing of every file reader: any bytes either parse or raise the documented error type.

The documented error for a bad file is ``ValueError`` (``UnsafePickleError`` is one; invalid UTF-8 is one too)
naming the file; never another exception, a hang or unbounded memory. The default budget is small
(``make test``); set ``DRIVEMETRICS_FUZZ_EXAMPLES`` (e.g. 5000) for a longer run.
"""

from __future__ import annotations

import io
import json
import os
import pickle
import zlib

import networkx as nx
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.fuzz

EXAMPLES = int(os.environ.get("DRIVEMETRICS_FUZZ_EXAMPLES", "60"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    derandomize=True,
)


def _mutations(seed: bytes) -> st.SearchStrategy[bytes]:
    """Random bytes, and a valid file cut short or with bytes flipped or inserted (reaches deeper parser paths)."""

    def mutate(args: tuple[int, int, int, bytes]) -> bytes:
        cut, at, op, noise = args
        data = seed[: max(cut % (len(seed) + 1), 0)] if op == 0 else seed
        at = at % (len(data) + 1)
        if op == 1:
            return data[:at] + noise + data[at + len(noise) :]
        if op == 2:
            return data[:at] + noise + data[at:]
        return data

    positions = st.integers(0, 10**6)
    mutated = st.tuples(positions, positions, st.integers(0, 2), st.binary(min_size=1, max_size=8)).map(mutate)
    return st.one_of(st.binary(max_size=400), mutated)


def _expect_value_error_or_result(read, path, data):
    path.write_bytes(data)
    try:
        read(path)
    except ValueError as err:
        message = str(err)
        assert message, "a ValueError without a message"


TUSIMPLE = (
    json.dumps({"raw_file": "clips/a/1.jpg", "lanes": [[-2, 100, 110], [5, -2, 7]], "h_samples": [240, 250, 260]})
    + "\n"
).encode()


@FUZZ
@given(data=_mutations(TUSIMPLE))
def test_tusimple_json_lines(tmp_path_factory, data):
    from drivemetrics.lane.io import read_tusimple_json

    _expect_value_error_or_result(read_tusimple_json, tmp_path_factory.mktemp("ts") / "pred.json", data)


CULANE = b"100.5 580 120.25 560 140 540 \n700 580 690 560\n"


@FUZZ
@given(data=_mutations(CULANE))
def test_culane_lines(tmp_path_factory, data):
    from drivemetrics.lane.io import read_culane_lines

    _expect_value_error_or_result(read_culane_lines, tmp_path_factory.mktemp("cu") / "a.lines.txt", data)


CALIB = (
    "P0: " + " ".join(["1.0"] * 12) + "\nP1: " + " ".join(["1.0"] * 12) + "\nP2: 721.5 0 609.5 44.8 0 721.5 172.8 "
    "0.2 0 0 1 0.003\nP3: "
    + " ".join(["1.0"] * 12)
    + "\nR0_rect: 1 0 0 0 1 0 0 0 1\nTr_velo_to_cam: "
    + " ".join(["0.5"] * 12)
    + "\nTr_imu_to_velo: "
    + " ".join(["0.5"] * 12)
    + "\nTr_cam_to_road: 1 0 0 0 0 1 0 -1.6 0 0 1 0\n"
).encode()


@FUZZ
@given(data=_mutations(CALIB))
def test_kitti_calib(tmp_path_factory, data):
    from drivemetrics.geometry.calib import read_kitti_calib

    _expect_value_error_or_result(read_kitti_calib, tmp_path_factory.mktemp("ca") / "um_000000.txt", data)


ROADTRACER = b"0 0\n10 0\n10 10\n\n0 1\n1 2\n"


@FUZZ
@given(data=_mutations(ROADTRACER))
def test_roadtracer_graph(tmp_path_factory, data):
    from drivemetrics.roadnet.io import read_roadtracer_graph

    _expect_value_error_or_result(read_roadtracer_graph, tmp_path_factory.mktemp("rt") / "g.graph", data)


GEOJSON = json.dumps(
    {
        "type": "FeatureCollection",
        "features": [{"type": "Feature", "geometry": {"type": "LineString", "coordinates": [[0, 0], [1, 1], [2, 0]]}}],
    }
).encode()


@FUZZ
@given(data=_mutations(GEOJSON))
def test_geojson(tmp_path_factory, data):
    from drivemetrics.roadnet.io import read_geojson

    _expect_value_error_or_result(read_geojson, tmp_path_factory.mktemp("gj") / "g.geojson", data)


def _graph_pickle() -> bytes:
    graph = nx.DiGraph()
    graph.add_node(0, pos=np.array([1.0, 2.0]))
    graph.add_node(1, pos=np.array([5.0, 2.0]))
    graph.add_edge(0, 1)
    return pickle.dumps({"austin": {"eval": {"0_0_0": graph}}}, protocol=4)


@FUZZ
@given(data=_mutations(_graph_pickle()))
def test_graph_pickles(tmp_path_factory, data):
    from drivemetrics.roadnet.io import read_graph, read_networkx_pickle

    folder = tmp_path_factory.mktemp("pk")
    _expect_value_error_or_result(read_networkx_pickle, folder / "sub.pickle", data)
    _expect_value_error_or_result(read_graph, folder / "g.p", data)


def _png(mode: str, shape: tuple[int, ...]) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(np.arange(np.prod(shape), dtype=np.uint8).reshape(shape), mode=None).convert(mode).save(
        buffer, format="PNG"
    )
    return buffer.getvalue()


@FUZZ
@given(data=_mutations(_png("L", (6, 7))))
def test_result_png(tmp_path_factory, data):
    from drivemetrics.road.io import read_confidence_png

    _expect_value_error_or_result(read_confidence_png, tmp_path_factory.mktemp("png") / "um_road_000000.png", data)


@FUZZ
@given(data=_mutations(_png("RGB", (6, 7, 3))))
def test_gt_png(tmp_path_factory, data):
    from drivemetrics.road.io import read_gt_png

    _expect_value_error_or_result(read_gt_png, tmp_path_factory.mktemp("gt") / "um_road_000000.png", data)


def test_png_with_a_huge_declared_size_is_refused_quickly(tmp_path):
    """A 60-byte PNG header claiming 100000 x 100000 pixels: Pillow's decompression-bomb guard, as a ValueError."""
    from drivemetrics.road.io import read_confidence_png

    def chunk(kind: bytes, body: bytes) -> bytes:
        return len(body).to_bytes(4, "big") + kind + body + zlib.crc32(kind + body).to_bytes(4, "big")

    header = (100_000).to_bytes(4, "big") * 2 + bytes([8, 0, 0, 0, 0])
    data = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"")) + chunk(b"IEND", b"")
    path = tmp_path / "um_road_000000.png"
    path.write_bytes(data)
    with pytest.raises(ValueError, match=r"um_road_000000\.png"):
        read_confidence_png(path)


KITTI_LABEL = (
    b"Car 0.00 0 -1.58 587.01 173.33 614.12 200.12 1.65 1.67 3.64 -0.65 1.71 46.70 -1.59\n"
    b"Pedestrian 0.00 0 0.21 423.17 173.67 433.17 224.03 1.60 0.38 0.30 -5.12 1.85 30.00 0.04\n"
    b"DontCare -1 -1 -10 503.89 169.71 590.61 190.13 -1 -1 -1 -1000 -1000 -1000 -10\n"
)


@FUZZ
@given(data=_mutations(KITTI_LABEL))
def test_kitti_object_labels(tmp_path_factory, data):
    from drivemetrics.detection.io import read_kitti_objects

    _expect_value_error_or_result(read_kitti_objects, tmp_path_factory.mktemp("ko") / "000000.txt", data)


@FUZZ
@given(data=_mutations(KITTI_LABEL.replace(b"\n", b" 0.9\n")))
def test_kitti_object_results(tmp_path_factory, data):
    from drivemetrics.detection.io import read_kitti_objects

    path = tmp_path_factory.mktemp("kr") / "000000.txt"
    _expect_value_error_or_result(lambda p: read_kitti_objects(p, with_score=True), path, data)


@FUZZ
@given(data=_mutations(CALIB))
def test_kitti_object_calib(tmp_path_factory, data):
    from drivemetrics.detection.io import read_kitti_object_calib

    _expect_value_error_or_result(read_kitti_object_calib, tmp_path_factory.mktemp("oc") / "000000.txt", data)


def _lane_graph_submission() -> bytes:
    graph = nx.DiGraph()
    graph.add_node(0, pos=np.array([10.0, 20.0]))
    graph.add_node(1, pos=np.array([60.0, 20.0]))
    graph.add_edge(0, 1)
    return pickle.dumps({"austin": {"eval": {"austin_83_34021_46605": graph}}}, protocol=4)


@FUZZ
@given(data=_mutations(_lane_graph_submission()))
def test_lane_graph_pickles(tmp_path_factory, data):
    from drivemetrics.lanegraph.io import load_lanegraph_pickle

    path = tmp_path_factory.mktemp("lg") / "submission.pickle"
    _expect_value_error_or_result(lambda p: load_lanegraph_pickle(p, "`--pred` submission"), path, data)


# ---------------------------------------------------------------------------------------------------------------
# structurally wrong JSON: a valid document with one value replaced by any JSON value (byte mutations rarely make
# well-formed JSON of the wrong shape, which is where readers used to fail with TypeError / AttributeError)

_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.floats() | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)


def _paths(doc: object, prefix: tuple = ()) -> list[tuple]:
    """Every path (keys / indices) to a value inside ``doc``, the root included."""
    out = [prefix]
    if isinstance(doc, dict):
        for key, value in doc.items():
            out += _paths(value, (*prefix, key))
    elif isinstance(doc, list):
        for index, value in enumerate(doc):
            out += _paths(value, (*prefix, index))
    return out


def _replaced(doc: object, path: tuple, value: object) -> object:
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(doc, dict):
        return {**doc, head: _replaced(doc[head], rest, value)}
    return [_replaced(v, rest, value) if i == head else v for i, v in enumerate(doc)]


def _json_mutations(doc: object) -> st.SearchStrategy[bytes]:
    paths = _paths(doc)
    return st.tuples(st.integers(0, len(paths) - 1), _JSON_VALUES).map(
        lambda args: json.dumps(_replaced(doc, paths[args[0]], args[1])).encode()
    )


def _expect_value_error_naming_the_file(read, path, data):
    path.write_bytes(data)
    try:
        read(path)
    except ValueError as err:
        message = str(err)
    else:
        return
    assert path.name in message, f"the error does not name the file: {message}"


@FUZZ
@given(data=_json_mutations(json.loads(TUSIMPLE)))
def test_tusimple_json_of_the_wrong_shape(tmp_path_factory, data):
    from drivemetrics.lane.io import read_tusimple_json

    _expect_value_error_naming_the_file(read_tusimple_json, tmp_path_factory.mktemp("tsj") / "pred.json", data)


@FUZZ
@given(data=_json_mutations(json.loads(GEOJSON)))
def test_geojson_of_the_wrong_shape(tmp_path_factory, data):
    from drivemetrics.roadnet.io import read_geojson

    _expect_value_error_naming_the_file(read_geojson, tmp_path_factory.mktemp("gjj") / "g.geojson", data)
