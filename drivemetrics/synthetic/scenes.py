"""One-call synthetic scenes: random roads + a synthetic detector, rendered in BEV or in perspective."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from drivemetrics.geometry.bev import BevGrid
from drivemetrics.synthetic.confidence import DetectorModel, sample_detector
from drivemetrics.synthetic.road_scene import (
    KITTI_IMAGE_SIZE,
    SCENE_KINDS,
    RenderedScene,
    RoadGeometry,
    render_bev,
    render_perspective,
    sample_road_geometry,
)

__all__ = ["ego_lane_scenes", "synthetic_scenes"]


def synthetic_scenes(
    batch_size: int,
    generator: torch.Generator | None = None,
    *,
    detector: DetectorModel | str | None = "good",
    space: str = "bev",
    grid: BevGrid | None = None,
    image_from_road: Tensor | None = None,
    image_size: tuple[int, int] = KITTI_IMAGE_SIZE,
    kinds: Sequence[str] = SCENE_KINDS,
    narrowing_probability: float = 0.3,
    dtype: torch.dtype = torch.float32,
    device: torch.device | str | None = None,
) -> tuple[RoadGeometry, RenderedScene]:
    """Random road scenes (:func:`sample_road_geometry`) with a detector's confidence, seeded by ``generator``.

    Args:
        batch_size: number of scenes ``B``.
        generator: random source for the geometry and the detector's random parts.
        detector: a :class:`DetectorModel`, a preset name of ``DETECTOR_PRESETS`` or None (no confidence).
        space: ``"bev"`` (``(B, rows, cols)`` on ``grid``) or ``"perspective"`` (``(B, H, W)``).
        grid, image_from_road, image_size: as in :func:`render_bev` / :func:`render_perspective`.
        kinds, narrowing_probability: passed to :func:`sample_road_geometry`.

    Returns:
        ``(geometry, scene)``; ``scene.road`` / ``scene.lane`` are the GT, ``scene.valid`` the evaluation area and
        ``scene.confidence`` the detector output in [0, 1].

    Examples:
        >>> import torch
        >>> from drivemetrics.geometry import BevGrid
        >>> grid = BevGrid(x_min=-4.0, x_max=4.0, z_min=6.0, z_max=14.0, resolution=1.0)
        >>> from drivemetrics.synthetic import synthetic_scenes
        >>> geometry, scene = synthetic_scenes(2, torch.Generator().manual_seed(0), grid=grid)
        >>> tuple(scene.road.shape), scene.road.dtype, tuple(scene.confidence.shape)
        ((2, 8, 8), torch.bool, (2, 8, 8))
    """
    if space not in ("bev", "perspective"):
        raise ValueError(f"`space` must be 'bev' or 'perspective', got {space!r}")
    geometry = sample_road_geometry(
        batch_size, generator, kinds=kinds, narrowing_probability=narrowing_probability, dtype=dtype, device=device
    )
    det = None if detector is None else sample_detector(detector, geometry, generator)
    if space == "bev":
        return geometry, render_bev(geometry, grid, image_from_road, image_size, detector=det)
    return geometry, render_perspective(geometry, image_from_road, image_size, detector=det)


def ego_lane_scenes(
    batch_size: int,
    generator: torch.Generator | None = None,
    *,
    detector: DetectorModel | str | None = "lane_potholes",
    space: str = "bev",
    grid: BevGrid | None = None,
    image_from_road: Tensor | None = None,
    image_size: tuple[int, int] = KITTI_IMAGE_SIZE,
    kinds: Sequence[str] = ("s_curve", "curve", "clothoid", "straight"),
    narrowing_probability: float = 0.5,
    dtype: torch.dtype = torch.float32,
    device: torch.device | str | None = None,
) -> tuple[RoadGeometry, RenderedScene]:
    """Ego-lane scenes for the driving-corridor metric: S-curves, narrowing lanes, pot-holes in the confidence.

    The GT is ``scene.lane``; the default detector (``"lane_potholes"``) punches holes into the ego lane's
    confidence. Arguments as in :func:`synthetic_scenes`. For the baseline prior (mean of GT masks over many
    scenes) see :func:`baseline_prior` with ``target="lane"``.

    Examples:
        >>> import torch
        >>> from drivemetrics.geometry import BevGrid
        >>> grid = BevGrid(x_min=-4.0, x_max=4.0, z_min=6.0, z_max=14.0, resolution=1.0)
        >>> from drivemetrics.synthetic import ego_lane_scenes
        >>> geometry, scene = ego_lane_scenes(2, torch.Generator().manual_seed(0), grid=grid)
        >>> tuple(scene.lane.shape), tuple(scene.confidence.shape)  # GT: the ego lane
        ((2, 8, 8), (2, 8, 8))
    """
    if isinstance(detector, DetectorModel) and detector.target != "lane":
        raise ValueError("`detector` for ego-lane scenes must have target='lane'")
    return synthetic_scenes(
        batch_size,
        generator,
        detector=detector,
        space=space,
        grid=grid,
        image_from_road=image_from_road,
        image_size=image_size,
        kinds=kinds,
        narrowing_probability=narrowing_probability,
        dtype=dtype,
        device=device,
    )
