"""Attack: DRP-style adversarial dirt patches on the road, optimised and evaluated in closed loop."""

from drivemetrics._internal.lazy import lazy_exports

_EXPORTS = {
    "DRPConfig": "drivemetrics.attack.drp",
    "DRPEvaluation": "drivemetrics.attack.drp",
    "DRPResult": "drivemetrics.attack.drp",
    "DriveClips": "drivemetrics.attack.drp",
    "EOTNoise": "drivemetrics.attack.drp",
    "LaneModel": "drivemetrics.attack.drp",
    "PatchSpec": "drivemetrics.attack.patch",
    "check_image_size": "drivemetrics.attack.patch",
    "composite_patch": "drivemetrics.attack.patch",
    "drp_attack": "drivemetrics.attack.drp",
    "evaluate_patch": "drivemetrics.attack.drp",
    "image_from_texture": "drivemetrics.attack.patch",
    "lane_offsets": "drivemetrics.attack.drp",
    "project_perturbation": "drivemetrics.attack.patch",
    "render_drive": "drivemetrics.attack.drp",
    "road_pixel_mask": "drivemetrics.attack.patch",
    "simulate_drive": "drivemetrics.attack.drp",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
