"""Write synthetic scenes as a KITTI-ROAD style folder (GT PNGs, calibration, result PNGs) for the file-based tools.

The folder works with ``drivemetrics road-eval --data DIR --results DIR/results [--space bev]``, so the whole
file path (PNG encoding, calibration lookup, BEV warp) can be exercised without the KITTI download.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from drivemetrics._internal.files import atomic_save_png, atomic_write_text
from drivemetrics.synthetic.road_scene import RenderedScene, default_image_from_road, kitti_gt_image

__all__ = ["kitti_calib_text", "write_kitti_road_folder"]

#: ``fy`` of the KITTI camera, used for the calibration's (irrelevant for the road plane) Y column of ``P2``.
_FOCAL_Y = 721.5377


def kitti_calib_text(image_from_road: Tensor | None = None) -> str:
    """A KITTI-ROAD calibration file whose road homography ``(P2 R0_rect inv(Tr_cam_to_road))[:, [0, 2, 3]]`` is
    ``image_from_road`` (default: the embedded um_000000 camera).

    It uses ``R0_rect = I`` and ``Tr_cam_to_road = [I | 0]``, so ``P2``'s X, Z and translation columns are the
    homography's columns; the Y column (unused on the road plane Y = 0) is ``(0, fy, 0)``.

    Examples:
        >>> from drivemetrics.synthetic import kitti_calib_text
        >>> [line.split(":")[0] for line in kitti_calib_text().splitlines()[1:]]
        ['P2', 'R0_rect', 'Tr_cam_to_road']
    """
    h = default_image_from_road() if image_from_road is None else image_from_road.detach().cpu().double()
    if h.shape != (3, 3):
        raise ValueError(f"`image_from_road` must have shape 3 x 3, got {tuple(h.shape)}")
    y_col = torch.tensor([0.0, _FOCAL_Y, 0.0], dtype=torch.float64)
    p2 = torch.stack([h[:, 0], y_col, h[:, 1], h[:, 2]], 1)

    def row(values: Tensor) -> str:
        return " ".join(f"{v:.12e}" for v in values.flatten().tolist())

    eye = torch.eye(3, dtype=torch.float64)
    return (
        "# synthetic KITTI-ROAD calibration written by drivemetrics.synthetic\n"
        f"P2: {row(p2)}\n"
        f"R0_rect: {row(eye)}\n"
        f"Tr_cam_to_road: {row(torch.cat([eye, torch.zeros(3, 1, dtype=torch.float64)], 1))}\n"
    )


def write_kitti_road_folder(
    out_dir: str | Path,
    scene: RenderedScene,
    results: Tensor | None = None,
    category: str = "um_road",
    image_from_road: Tensor | None = None,
    start_index: int = 0,
) -> list[str]:
    """Write perspective scenes as ``out_dir/{gt_image_2, calib, results}`` in the KITTI-ROAD layout.

    Args:
        out_dir: the dataset folder (created).
        scene: a perspective :class:`RenderedScene` (``(B, H, W)``); ``*_road`` categories use ``scene.road``,
            ``um_lane`` uses ``scene.lane``; ``scene.valid`` is the red (evaluated) area.
        results: optional ``(B, H, W)`` confidences (float in [0, 1], quantised as ``round(255 p)``, or uint8),
            written as 8-bit result PNGs to ``out_dir/results`` (default: ``scene.confidence`` when present).
        category: ``um_road``, ``umm_road``, ``uu_road`` or ``um_lane``.
        image_from_road: the camera of the scenes (``(3, 3)``; default: the embedded KITTI camera).
        start_index: number of the first frame (``<category>_<index:06d>.png``).

    Returns:
        The frame keys written, e.g. ``["um_road_000000", ...]``.

    Examples:
        >>> import tempfile
        >>> import torch
        >>> from drivemetrics.geometry import image_from_road_homography, intrinsic_matrix
        >>> from drivemetrics.synthetic import synthetic_scenes, write_kitti_road_folder
        >>> H = image_from_road_homography(intrinsic_matrix(100.0, 100.0, 63.5, 26.0), camera_height=1.5)
        >>> generator = torch.Generator().manual_seed(0)
        >>> _, scene = synthetic_scenes(1, generator, space="perspective", image_from_road=H, image_size=(64, 128))
        >>> write_kitti_road_folder(tempfile.mkdtemp(), scene, image_from_road=H)  # the frame names written
        ['um_road_000000']
    """
    if category not in ("um_road", "umm_road", "uu_road", "um_lane"):
        raise ValueError(f"`category` must be um_road, umm_road, uu_road or um_lane, got {category!r}")
    target = scene.lane if category.endswith("_lane") else scene.road
    if target.ndim != 3:
        raise ValueError(f"`scene` masks must be B x H x W, got {tuple(target.shape)}")
    if results is None:
        results = scene.confidence
    if results is not None:
        if results.shape != target.shape:
            raise ValueError(f"`results` must have shape {tuple(target.shape)}, got {tuple(results.shape)}")
        if results.dtype != torch.uint8:
            if not results.is_floating_point() or bool((results < 0).any()) or bool((results > 1).any()):
                raise ValueError("`results` must be uint8 or floating confidences in [0, 1]")
            results = (results * 255).round().to(torch.uint8)
    out = Path(out_dir)
    for sub in ("gt_image_2", "calib") + (("results",) if results is not None else ()):
        (out / sub).mkdir(parents=True, exist_ok=True)
    gt = kitti_gt_image(target, scene.valid).permute(0, 2, 3, 1).cpu().numpy()
    cat = category.split("_")[0]
    calib = kitti_calib_text(image_from_road)
    keys = []
    for i in range(target.shape[0]):  # one file per frame
        index = start_index + i
        key = f"{category}_{index:06d}"
        atomic_save_png(out / "gt_image_2" / f"{key}.png", np.ascontiguousarray(gt[i]))
        atomic_write_text(out / "calib" / f"{cat}_{index:06d}.txt", calib)
        if results is not None:
            atomic_save_png(out / "results" / f"{key}.png", np.ascontiguousarray(results[i].cpu().numpy()))
        keys.append(key)
    return keys
