"""Geometry: KITTI calibration, road-plane homographies, the BEV grid and image <-> BEV warps.

Road frame (KITTI-ROAD convention): X right, Y down, Z forward, metres; the road is the plane Y = 0.
"""

from drivemetrics._internal.lazy import lazy_exports

_EXPORTS = {
    "BevGrid": "drivemetrics.geometry.bev",
    "KITTI_CALIB_SHAPES": "drivemetrics.geometry.calib",
    "ROAD_CALIB_KEYS": "drivemetrics.geometry.calib",
    "WARP_MODES": "drivemetrics.geometry.warp",
    "WarpMode": "drivemetrics.geometry.warp",
    "apply_homography": "drivemetrics.geometry.camera",
    "bev_sample_pixels": "drivemetrics.geometry.warp",
    "check_road_homography": "drivemetrics.geometry.homography",
    "compose_pose": "drivemetrics.geometry.pose",
    "devkit_cell_centers": "drivemetrics.geometry.warp",
    "homography_from_correspondences": "drivemetrics.geometry.camera",
    "horizon_row": "drivemetrics.geometry.camera",
    "image_from_bev_cell": "drivemetrics.geometry.homography",
    "image_from_road": "drivemetrics.geometry.homography",
    "image_from_road_calib": "drivemetrics.geometry.homography",
    "image_from_road_homography": "drivemetrics.geometry.camera",
    "image_to_road": "drivemetrics.geometry.camera",
    "intrinsic_matrix": "drivemetrics.geometry.camera",
    "normalize_image_from_road": "drivemetrics.geometry.camera",
    "parse_kitti_calib": "drivemetrics.geometry.calib",
    "read_kitti_calib": "drivemetrics.geometry.calib",
    "relative_pose": "drivemetrics.geometry.pose",
    "road_from_bev_cell": "drivemetrics.geometry.homography",
    "road_from_world": "drivemetrics.geometry.pose",
    "road_to_camera_rotation": "drivemetrics.geometry.camera",
    "road_to_image": "drivemetrics.geometry.camera",
    "shifted_view_homography": "drivemetrics.geometry.camera",
    "stack_calibs": "drivemetrics.geometry.calib",
    "synthesize_shifted_view": "drivemetrics.geometry.camera",
    "view_road_mask": "drivemetrics.geometry.camera",
    "warp_bev_to_image": "drivemetrics.geometry.warp",
    "warp_image_to_bev": "drivemetrics.geometry.warp",
    "world_from_road": "drivemetrics.geometry.pose",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
