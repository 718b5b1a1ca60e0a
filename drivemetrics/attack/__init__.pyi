"""Type stub of :mod:`drivemetrics.attack` (its names are exported lazily at run time)."""

from drivemetrics.attack.drp import (
    DriveClips,
    DRPConfig,
    DRPEvaluation,
    DRPResult,
    EOTNoise,
    LaneModel,
    drp_attack,
    evaluate_patch,
    lane_offsets,
    render_drive,
    simulate_drive,
)
from drivemetrics.attack.patch import (
    PatchSpec,
    check_image_size,
    composite_patch,
    image_from_texture,
    project_perturbation,
    road_pixel_mask,
)

__all__ = [
    "DRPConfig",
    "DRPEvaluation",
    "DRPResult",
    "DriveClips",
    "EOTNoise",
    "LaneModel",
    "PatchSpec",
    "check_image_size",
    "composite_patch",
    "drp_attack",
    "evaluate_patch",
    "image_from_texture",
    "lane_offsets",
    "project_perturbation",
    "render_drive",
    "road_pixel_mask",
    "simulate_drive",
]
