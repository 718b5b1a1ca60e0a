"""Synthetic scenes written in the KITTI-ROAD layout evaluate through the file-based CLI like in memory."""

from __future__ import annotations

import json

import pytest
import torch

from drivemetrics.cli import main
from drivemetrics.geometry.calib import read_kitti_calib
from drivemetrics.geometry.homography import image_from_road_calib
from drivemetrics.road.pixel import RoadPixelMetrics
from drivemetrics.synthetic import (
    default_image_from_road,
    kitti_calib_text,
    render_perspective,
    sample_detector,
    sample_road_geometry,
    write_kitti_road_folder,
)


def test_calib_text_reproduces_the_homography(tmp_path):
    path = tmp_path / "um_000000.txt"
    path.write_text(kitti_calib_text())
    h = image_from_road_calib(read_kitti_calib(path))
    torch.testing.assert_close(h, default_image_from_road(), atol=1e-9, rtol=1e-12)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    gen = torch.Generator().manual_seed(2)
    roads = sample_road_geometry(2, gen)
    scene = render_perspective(roads, detector=sample_detector("blurry_far", roads, gen))
    root = tmp_path_factory.mktemp("synthetic_kitti")
    keys = write_kitti_road_folder(root, scene, category="um_road")
    return root, keys, scene


def test_written_folder_layout(dataset):
    root, keys, _ = dataset
    assert keys == ["um_road_000000", "um_road_000001"]
    for key in keys:
        assert (root / "gt_image_2" / f"{key}.png").is_file()
        assert (root / "results" / f"{key}.png").is_file()
    assert (root / "calib" / "um_000001.txt").is_file()


@pytest.mark.parametrize("space", ["perspective", "bev"])
def test_road_eval_cli_on_synthetic_folder_matches_in_memory_metric(dataset, space, tmp_path):
    root, _, scene = dataset
    out = tmp_path / "scores.json"
    code = main(["road-eval", "--data", str(root), "--results", str(root / "results"), "--space", space,
                 "--json", str(out), "--no-progress"])  # fmt: skip
    assert code == 0
    scores = json.loads(out.read_text())["um_road"]
    preds = (scene.confidence * 255).round().to(torch.uint8)
    if space == "perspective":
        metric = RoadPixelMetrics()
        metric.update(preds, scene.road, valid=scene.valid)
    else:
        metric = RoadPixelMetrics(space="bev")
        metric.update(preds, scene.road, valid=scene.valid, homography=default_image_from_road().expand(2, 3, 3))
    expected = metric.compute()
    # the CLI's JSON keeps the devkit's names (MaxF, AvgPrec, PRE_wp, ...)
    for key, devkit_name in (("max_f", "MaxF"), ("average_precision", "AvgPrec"), ("precision_wp", "PRE_wp")):
        assert scores[devkit_name] == pytest.approx(float(expected[key]), abs=1e-6)
    assert scores["totalPosNum"] == int(expected["total_positives"])


def test_bad_category_and_results(dataset, tmp_path):
    _, _, scene = dataset
    with pytest.raises(ValueError, match="category"):
        write_kitti_road_folder(tmp_path, scene, category="um_sky")
    with pytest.raises(ValueError, match="results"):
        write_kitti_road_folder(tmp_path, scene, results=scene.confidence[:, :10])
