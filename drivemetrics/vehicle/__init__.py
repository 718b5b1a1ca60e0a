"""Vehicle models shared by the corridor metric (road) and the closed-loop lane metrics (lane)."""

from drivemetrics.vehicle.bicycle import RAV4_2017, BicycleState, KinematicBicycle, VehicleParams
from drivemetrics.vehicle.single_track import single_track_step

__all__ = ["RAV4_2017", "BicycleState", "KinematicBicycle", "VehicleParams", "single_track_step"]
