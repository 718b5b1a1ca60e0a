"""Type stub of :mod:`drivemetrics.synthetic` (its names are exported lazily at run time)."""

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
