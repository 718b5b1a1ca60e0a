"""Geometry: KITTI calibration, road-plane homographies, the BEV grid and image <-> BEV warps.

Road frame (KITTI-ROAD convention): X right, Y down, Z forward, metres; the road is the plane Y = 0.
"""

from drivemetrics.geometry.bev import BevGrid

__all__ = ["BevGrid"]
