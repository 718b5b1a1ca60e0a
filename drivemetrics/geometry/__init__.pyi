"""Type stub of :mod:`drivemetrics.geometry` (its names are exported lazily at run time)."""

from drivemetrics.geometry.bev import BevGrid
from drivemetrics.geometry.calib import (
    KITTI_CALIB_SHAPES,
    ROAD_CALIB_KEYS,
    parse_kitti_calib,
    read_kitti_calib,
    stack_calibs,
)
from drivemetrics.geometry.camera import (
    apply_homography,
    homography_from_correspondences,
    horizon_row,
    image_from_road_homography,
    image_to_road,
    intrinsic_matrix,
    normalize_image_from_road,
    road_to_camera_rotation,
    road_to_image,
    shifted_view_homography,
    synthesize_shifted_view,
    view_road_mask,
)
from drivemetrics.geometry.homography import (
    check_road_homography,
    image_from_bev_cell,
    image_from_road,
    image_from_road_calib,
    road_from_bev_cell,
)
from drivemetrics.geometry.pose import compose_pose, relative_pose, road_from_world, world_from_road
from drivemetrics.geometry.warp import (
    WARP_MODES,
    WarpMode,
    bev_sample_pixels,
    devkit_cell_centers,
    warp_bev_to_image,
    warp_image_to_bev,
)

__all__ = [
    "KITTI_CALIB_SHAPES",
    "ROAD_CALIB_KEYS",
    "WARP_MODES",
    "BevGrid",
    "WarpMode",
    "apply_homography",
    "bev_sample_pixels",
    "check_road_homography",
    "compose_pose",
    "devkit_cell_centers",
    "homography_from_correspondences",
    "horizon_row",
    "image_from_bev_cell",
    "image_from_road",
    "image_from_road_calib",
    "image_from_road_homography",
    "image_to_road",
    "intrinsic_matrix",
    "normalize_image_from_road",
    "parse_kitti_calib",
    "read_kitti_calib",
    "relative_pose",
    "road_from_bev_cell",
    "road_from_world",
    "road_to_camera_rotation",
    "road_to_image",
    "shifted_view_homography",
    "stack_calibs",
    "synthesize_shifted_view",
    "view_road_mask",
    "warp_bev_to_image",
    "warp_image_to_bev",
    "world_from_road",
]
