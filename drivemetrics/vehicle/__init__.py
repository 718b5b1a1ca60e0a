"""Vehicle models shared by the corridor metric (road) and the closed-loop lane metrics (lane)."""

from drivemetrics._internal.lazy import lazy_exports

_EXPORTS = {
    "BicycleState": "drivemetrics.vehicle.bicycle",
    "KinematicBicycle": "drivemetrics.vehicle.bicycle",
    "OPENPILOT_MOCK_V066": "drivemetrics.vehicle.bicycle",
    "RAV4_2017": "drivemetrics.vehicle.bicycle",
    "VehicleParams": "drivemetrics.vehicle.bicycle",
    "single_track_step": "drivemetrics.vehicle.single_track",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
