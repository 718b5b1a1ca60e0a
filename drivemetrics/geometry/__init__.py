"""Geometry: KITTI calibration, road-plane homographies, the BEV grid and image <-> BEV warps.

Road frame (KITTI-ROAD convention): X right, Y down, Z forward, metres; the road is the plane Y = 0.
"""

from drivemetrics.geometry.bev import BevGrid
from drivemetrics.geometry.calib import (
    KITTI_CALIB_SHAPES,
    ROAD_CALIB_KEYS,
    parse_kitti_calib,
    read_kitti_calib,
    stack_calibs,
)
from drivemetrics.geometry.homography import (
    check_road_homography,
    image_from_bev_cell,
    image_from_road,
    image_from_road_calib,
    road_from_bev_cell,
)
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
    "bev_sample_pixels",
    "check_road_homography",
    "devkit_cell_centers",
    "image_from_bev_cell",
    "image_from_road",
    "image_from_road_calib",
    "parse_kitti_calib",
    "read_kitti_calib",
    "road_from_bev_cell",
    "stack_calibs",
    "warp_bev_to_image",
    "warp_image_to_bev",
]
