"""Vehicle models shared by the corridor metric (road) and the closed-loop lane metrics (lane)."""

from drivemetrics.vehicle.single_track import single_track_step

__all__ = ["single_track_step"]
