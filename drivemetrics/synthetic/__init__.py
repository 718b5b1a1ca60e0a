"""Seeded synthetic scenes for tests and the demo: roads, ego lanes, GT masks and detector-like confidences.

Road frame (KITTI-ROAD): X right, Z forward, metres. Modules: :mod:`~drivemetrics.synthetic.road_scene` (road
geometry, BEV / perspective GT rendering, the embedded KITTI camera, the mean-of-GT prior),
:mod:`~drivemetrics.synthetic.confidence` (detector error models), :mod:`~drivemetrics.synthetic.scenes` (one-call
road and ego-lane scenes) and :mod:`~drivemetrics.synthetic.kitti_export` (KITTI-ROAD folders for the CLI) and
:mod:`~drivemetrics.synthetic.road_network` (road-network graphs in pixels for the graph metrics).
"""

from drivemetrics.synthetic.confidence import DETECTOR_PRESETS, DetectorModel, SyntheticDetector, sample_detector
from drivemetrics.synthetic.kitti_export import kitti_calib_text, write_kitti_road_folder
from drivemetrics.synthetic.road_network import make_road_network
from drivemetrics.synthetic.road_scene import (
    KITTI_IMAGE_SIZE,
    KITTI_UM_000000_IMAGE_FROM_ROAD,
    SCENE_KINDS,
    Centerline,
    Profile,
    RenderedScene,
    RoadCoordinates,
    RoadGeometry,
    baseline_prior,
    default_image_from_road,
    kitti_gt_image,
    make_road,
    mean_gt_prior,
    render_bev,
    render_perspective,
    road_points_from_pixels,
    sample_road_geometry,
)
from drivemetrics.synthetic.scenes import ego_lane_scenes, synthetic_scenes

__all__ = [
    "DETECTOR_PRESETS",
    "KITTI_IMAGE_SIZE",
    "KITTI_UM_000000_IMAGE_FROM_ROAD",
    "SCENE_KINDS",
    "Centerline",
    "DetectorModel",
    "Profile",
    "RenderedScene",
    "RoadCoordinates",
    "RoadGeometry",
    "SyntheticDetector",
    "baseline_prior",
    "default_image_from_road",
    "ego_lane_scenes",
    "kitti_calib_text",
    "kitti_gt_image",
    "make_road",
    "make_road_network",
    "mean_gt_prior",
    "render_bev",
    "render_perspective",
    "road_points_from_pixels",
    "sample_detector",
    "sample_road_geometry",
    "synthetic_scenes",
    "write_kitti_road_folder",
]
