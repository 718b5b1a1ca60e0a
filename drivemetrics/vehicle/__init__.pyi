"""Type stub of :mod:`drivemetrics.vehicle` (its names are exported lazily at run time)."""

from drivemetrics.vehicle.bicycle import OPENPILOT_MOCK_V066, RAV4_2017, BicycleState, KinematicBicycle, VehicleParams
from drivemetrics.vehicle.single_track import single_track_step

__all__ = [
    "OPENPILOT_MOCK_V066",
    "RAV4_2017",
    "BicycleState",
    "KinematicBicycle",
    "VehicleParams",
    "single_track_step",
]
