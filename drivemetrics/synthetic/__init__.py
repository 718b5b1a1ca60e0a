"""Seeded synthetic scenes for tests and the demo: roads, ego lanes, GT masks and detector-like confidences.

Road frame (KITTI-ROAD): X right, Z forward, metres. Modules: :mod:`~drivemetrics.synthetic.road_scene` (road
geometry, BEV / perspective GT rendering, the embedded KITTI camera, the mean-of-GT prior),
:mod:`~drivemetrics.synthetic.confidence` (detector error models), :mod:`~drivemetrics.synthetic.scenes` (one-call
road and ego-lane scenes) and :mod:`~drivemetrics.synthetic.kitti_export` (KITTI-ROAD folders for the CLI) and
:mod:`~drivemetrics.synthetic.road_network` (road-network graphs in pixels for the graph metrics).
"""

from drivemetrics._internal.lazy import lazy_exports

_EXPORTS = {
    "baseline_prior": "drivemetrics.synthetic.road_scene",
    "Centerline": "drivemetrics.synthetic.road_scene",
    "default_image_from_road": "drivemetrics.synthetic.road_scene",
    "DETECTOR_PRESETS": "drivemetrics.synthetic.confidence",
    "DetectorModel": "drivemetrics.synthetic.confidence",
    "ego_lane_scenes": "drivemetrics.synthetic.scenes",
    "kitti_calib_text": "drivemetrics.synthetic.kitti_export",
    "kitti_gt_image": "drivemetrics.synthetic.road_scene",
    "KITTI_IMAGE_SIZE": "drivemetrics.synthetic.road_scene",
    "KITTI_UM_000000_IMAGE_FROM_ROAD": "drivemetrics.synthetic.road_scene",
    "make_road": "drivemetrics.synthetic.road_scene",
    "make_road_network": "drivemetrics.synthetic.road_network",
    "mean_gt_prior": "drivemetrics.synthetic.road_scene",
    "Profile": "drivemetrics.synthetic.road_scene",
    "render_bev": "drivemetrics.synthetic.road_scene",
    "render_perspective": "drivemetrics.synthetic.road_scene",
    "RenderedScene": "drivemetrics.synthetic.road_scene",
    "road_points_from_pixels": "drivemetrics.synthetic.road_scene",
    "RoadCoordinates": "drivemetrics.synthetic.road_scene",
    "RoadGeometry": "drivemetrics.synthetic.road_scene",
    "sample_detector": "drivemetrics.synthetic.confidence",
    "sample_road_geometry": "drivemetrics.synthetic.road_scene",
    "SCENE_KINDS": "drivemetrics.synthetic.road_scene",
    "synthetic_scenes": "drivemetrics.synthetic.scenes",
    "SyntheticDetector": "drivemetrics.synthetic.confidence",
    "write_kitti_road_folder": "drivemetrics.synthetic.kitti_export",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
