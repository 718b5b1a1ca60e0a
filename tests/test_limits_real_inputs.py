"""Issue 35: every input limit (:mod:`drivemetrics._internal.limits`) admits the largest real input of its kind.

One test per limit, on the real fixture where there is one and on synthetic inputs at the real datasets' sizes
where that is cheap; docs/pages/promises.md ("Limits and the data they guard") lists the same sizes. The hostile
inputs these limits refuse are in tests/test_bounded_cost.py, tests/test_fuzz_cost.py and tests/test_limits.py.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from drivemetrics._internal.limits import (
    Limits,
    check_coordinates,
    check_graph_extent,
    check_graph_size,
    check_image_size,
    json_depth,
    load_json,
)

DEFAULTS = Limits()


def test_the_defaults_are_the_documented_ones():
    assert (
        Limits(
            max_png_pixels=50_000_000,
            max_lane_points=10_000,
            max_lanes_per_frame=64,
            max_abs_coordinate=1_000_000_000,
            max_graph_nodes=2_000_000,
            max_graph_edges=4_000_000,
            max_graph_extent=32_768,
            max_json_depth=64,
            max_json_int_digits=20,
            max_lane3d_points=5_000,
            max_lane3d_lanes=200,
            max_lane3d_abs_metres=1_000_000,
            max_map_line_points=1_000,
            max_map_lines_per_frame=1_000,
            max_map_frames=200_000,
            max_map_coordinate=1_000,
            max_objects_per_frame=1_000,
            max_graph_area=128_000_000,
            max_samples_per_mb=10_000,
        )
        == DEFAULTS
    )


def test_max_png_pixels_admits_the_largest_camera_images(fixtures_dir):
    from drivemetrics.road.io import read_confidence_png

    # KITTI-ROAD 1242 x 375, CULane 1640 x 590, nuScenes 1600 x 900, OpenLane / Waymo front camera 1920 x 1280,
    # Argoverse 2 ring cameras 2048 x 1550; a 4K frame for good measure
    for width, height in ((1242, 375), (1640, 590), (1600, 900), (1920, 1280), (2048, 1550), (3840, 2160)):
        check_image_size("frame.png", width, height)
    png = fixtures_dir / "kitti_road" / "training" / "gt_image_2" / "um_road_000000.png"
    assert read_confidence_png(png).shape == (375, 1242)


def test_lane_limits_admit_the_densest_real_frames(tmp_path):
    from drivemetrics.lane.io import read_culane_lines, read_tusimple_json

    # CULane: one point per pixel row of the 590 px image (annotations have one every 10 rows), 64 lanes (the
    # test set has at most 4 GT lanes, detectors output a handful after NMS)
    lane = " ".join(f"{800 + 0.1 * y:.1f} {y}" for y in range(590))
    path = tmp_path / "a.lines.txt"
    path.write_text((lane + "\n") * DEFAULTS.max_lanes_per_frame)
    assert tuple(read_culane_lines(path).shape[:2]) == (64, 590)
    # TuSimple: 56 h_samples (the 2017 test set), 5 GT lanes at most, here 64 predicted lanes
    record = {"raw_file": "clips/0530/1/20.jpg", "lanes": [[-2] * 56] * 64, "run_time": 10}
    (tmp_path / "pred.json").write_text(json.dumps(record) + "\n")
    assert tuple(read_tusimple_json(tmp_path / "pred.json").lanes.shape) == (1, 64, 56)


def test_max_abs_coordinate_admits_city_coordinates_and_far_lane_ends(full_tile):

    # UrbanLaneGraph: full tiles sit at city offsets of tens of thousands of px (austin_83_34021_46605)
    graph = full_tile
    pos = np.array([graph.nodes[n]["pos"] for n in graph.nodes])
    check_coordinates(pos - (34_021, 46_605), "tile")
    check_coordinates([34_021.0, 46_605.0], "offsets")
    # CULane predictions extrapolated far off the 1640 x 590 canvas
    check_coordinates([-1e5, 1e6], "a.lines.txt")


@pytest.fixture(scope="module")
def full_tile(fixtures_dir):
    """The UrbanLaneGraph full-LGP example tile (5,214 nodes at 360-5,660 px, offsets 34,021, 46,605 px)."""
    from drivemetrics.lanegraph.io import load_lanegraph_pickle

    data = load_lanegraph_pickle(fixtures_dir / "lanegraph" / "submission_full_lgp_eval.pickle")
    return data["austin"]["eval"]["austin_83_34021_46605"]


@pytest.fixture(scope="module")
def road_graphs(fixtures_dir):
    """The largest road graphs of the fixtures, read once (the reader checks max_graph_nodes / _edges)."""
    from drivemetrics.roadnet.io import read_graph

    names = ("roadtracer_vancouver/gt.graph", "sat2graph_tile/gt.p", "sat2graph_tile/prop.p")
    return {name: read_graph(fixtures_dir / "graphs" / name) for name in names}


def test_graph_size_limits_admit_the_largest_real_graphs(road_graphs, full_tile):

    sizes = {name: (g.number_of_nodes(), g.number_of_edges()) for name, g in road_graphs.items()}
    graph = full_tile
    sizes["full-LGP tile"] = (graph.number_of_nodes(), graph.number_of_edges())
    assert sizes["full-LGP tile"] == (5214, 5553)
    assert max(n for n, _ in sizes.values()) < DEFAULTS.max_graph_nodes / 100
    # a whole RoadTracer city graph (OSM, ~30 km x 30 km at 0.6 m/px) has a few 100,000 nodes
    check_graph_size(500_000, 1_000_000, "city.graph")


def test_max_graph_extent_admits_regions_tiles_and_full_lane_graph_tiles(road_graphs, full_tile):
    from drivemetrics.graph.geometry import graph_arrays
    from drivemetrics.lanegraph.evaluate import prepare_checked_sample

    spans = {}
    for name, graph in road_graphs.items():
        pos = graph_arrays(graph).pos
        check_graph_extent(pos, name)
        spans[name] = float((pos.max(axis=0) - pos.min(axis=0)).max())
    assert spans["roadtracer_vancouver/gt.graph"] > 8_000  # the whole 8192 px RoadTracer region, and more
    # a RoadTracer region (8192 px) and a SpaceNet-3 tile (1300 px), as graph-eval windows them
    check_graph_extent(np.array([[0.0, 0.0], [8192.0, 8192.0]]), "region")
    graph = full_tile
    _, gt = prepare_checked_sample(graph, graph, "austin", "austin_83_34021_46605", "full")  # 5,300 px
    assert gt.number_of_nodes() == 5214


def test_json_limits_admit_every_fixture_file_and_long_timestamps(fixtures_dir):
    depths = {}
    for path in sorted(fixtures_dir.rglob("*.json")):
        text = path.read_text()
        depths[path.relative_to(fixtures_dir).as_posix()] = json_depth(text)
        # JSON lines, one record per image, as the official tools read them: TuSimple's files and the Apollo
        # 3D Lane Synthetic test.json (and the predictions written in its format)
        tusimple = path.parent.name == "tusimple" and path.name != "expected_official.json"
        apollo = path.parent.as_posix().endswith("apollo3d/cases") and path.name != "manifest.json"
        lines = tusimple or apollo
        for record in filter(None, text.splitlines() if lines else [text]):
            load_json(record, path)
    assert len(depths) >= 10
    assert max(depths.values()) <= DEFAULTS.max_json_depth // 4
    # nuScenes / Waymo timestamps are 16 digits (microseconds), Argoverse 2 / OpenLane-V2 ones 18 (nanoseconds)
    assert load_json('{"timestamp": 315967376859506000, "t": 1533151603547590}', "x") == {
        "timestamp": 315967376859506000,
        "t": 1533151603547590,
    }
    assert load_json(str(2**63 - 1), "x") == 2**63 - 1  # the largest int64: 19 digits


@pytest.mark.parametrize(
    ("dataset", "frames"),
    [("CULane test", 34_680), ("KITTI object training", 7_481), ("nuScenes val", 6_019), ("OpenLane-V2 val", 4_806)],
)
def test_no_limit_counts_frames(dataset, frames, tmp_path):
    """A dataset's frame count meets no limit (cost is linear in the frames): the list of the CULane test set,
    and map-eval's GT reader on as many samples as the dataset's evaluation split (one polyline each)."""
    from drivemetrics.lane.io import read_culane_list
    from drivemetrics.vectormap.io import read_map_gt

    names = [f"driver_100_30frame/{k:08d}.MP4/{k:05d}.jpg" for k in range(frames)]
    (tmp_path / "list.txt").write_text("\n".join(names) + "\n")
    assert len(read_culane_list(tmp_path / "list.txt")) == frames
    vectors = [{"pts": [[0.0, 0.0], [0.0, 10.0]], "pts_num": 2, "cls_name": "divider", "type": 0}]
    gt = {"GTs": [{"sample_token": f"s{k}", "vectors": vectors} for k in range(frames)]}
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    assert len(read_map_gt(tmp_path / "gt.json", "maptr")) == frames


def test_lane3d_limits_admit_real_openlane_frames(fixtures_dir, tmp_path):
    """OpenLane (v1) annotations: a few hundred points per lane at most (the fixture's longest: 186), up to about 20
    lanes per frame (the fixture: 6), coordinates within 200 m; tested at 2,000 points, 100 lanes, 1,000 m."""
    from drivemetrics.lane3d.io import read_openlane_gt, read_openlane_pred

    cases = fixtures_dir / "openlane3d" / "cases"
    if cases.is_dir():
        for path in sorted((cases / "gt").rglob("*.json"))[:60]:
            read_openlane_gt(path)
    lane = {"xyz": [[1_000.0 * (k % 2), 0.1 * k, 0.0] for k in range(2_000)], "category": 1}
    (tmp_path / "p.json").write_text(json.dumps({"file_path": "a.jpg", "lane_lines": [lane] * 100}))
    frame = read_openlane_pred(tmp_path / "p.json")
    assert len(frame.points) == 100
    assert frame.points[0].shape == (2_000, 3)


def test_map_limits_admit_every_map_and_openlanev2_fixture(fixtures_dir):
    """The map and OpenLane-V2 fixtures read with the default limits, far from each one (sizes measured here)."""
    from drivemetrics.lanetopology.io import read_ground_truth, read_predictions
    from drivemetrics.vectormap.io import read_map_gt, read_map_preds

    lines, points, extent = 0, 0, 0.0
    for protocol, fmt in (("nuscenes_maptr", "maptr"), ("av2_cvpr23", "av2")):
        folder = fixtures_dir / "map_ap" / "cases" / protocol
        for sample in [*read_map_gt(folder / "gt.json", fmt), *read_map_preds(folder / "pred.json", fmt)]:
            lines = max(lines, len(sample.points))
            points = max([points, *(len(p) for p in sample.points)])
            extent = max([extent, *(float(abs(p).max()) for p in sample.points)])
    for track in ("centerline", "lanesegment"):
        path = fixtures_dir / "openlanev2" / f"{track}_cases.json"
        for frame in [*read_ground_truth(path).values(), *read_predictions(path).values()]:
            lanes = frame.get("lane_centerline", frame.get("lane_segment"))
            lines = max(lines, len(lanes))
    assert lines <= DEFAULTS.max_map_lines_per_frame // 10
    assert points <= DEFAULTS.max_map_line_points // 10
    assert extent <= DEFAULTS.max_map_coordinate / 4


def test_the_budgets_of_issue_51_admit_the_real_inputs(fixtures_dir):
    # lane-graph pickles: 561 samples in 1.4 MB (the budget: 1,000 + 10,000 per MB); road graphs: their area
    from drivemetrics._internal.limits import check_graph_area
    from drivemetrics.graph.geometry import graph_arrays  # moved to the shared graph package (issue 46)
    from drivemetrics.lanegraph.io import load_lanegraph_pickle
    from drivemetrics.roadnet.evaluate import GRAPH_SUFFIXES
    from drivemetrics.roadnet.io import read_graph

    pickles = sorted((fixtures_dir / "lanegraph").glob("*.pickle"))
    assert pickles
    for path in pickles:
        load_lanegraph_pickle(path)
    graphs = [p for p in sorted(fixtures_dir.rglob("*")) if p.suffix in GRAPH_SUFFIXES and "lanegraph" not in p.parts]
    checked = 0
    for path in graphs:
        try:
            graph = read_graph(path)
        except ValueError:
            continue  # not a road graph file (e.g. a JSON of another kind)
        if graph.number_of_nodes():
            check_graph_area(graph_arrays(graph).pos, path)
            checked += 1
    assert checked
