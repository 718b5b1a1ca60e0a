"""KITTI-ROAD files: names and folder layout, PNG ground truth and results, calibration lookup.

File names (KITTI-ROAD): images ``image_2/<cat>_<idx6>.png``, calibration ``calib/<cat>_<idx6>.txt``, ground
truth ``gt_image_2/<cat>_<type>_<idx6>.png`` with ``cat`` in um / umm / uu and ``type`` road (or lane, um only);
results carry the ground truth's name. Ground-truth PNGs are RGB: magenta (255, 0, 255) road, red (255, 0, 0)
valid non-road, black don't care. As in the devkit, a pixel is road iff its blue channel is > 0 and evaluated
iff its red channel is > 0.

Results are 8-bit PNG confidence maps (0..255, ``p = v / 255``), read as greyscale like the devkit's
``cv2.imread(path, 0)``; colour PNGs are converted with Pillow's ITU-R 601 luma (identical for grey colours,
possibly one level off OpenCV's conversion for other colours), 16-bit PNGs are rejected.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from PIL import Image

from drivemetrics._internal.files import atomic_save_png, load_image
from drivemetrics._internal.png import decode_png_array

if TYPE_CHECKING:
    from torch import Tensor

__all__ = [
    "ROAD_CATEGORIES",
    "KittiRoadLayout",
    "calib_file_for",
    "category_frames",
    "find_layout",
    "gt_masks",
    "parse_gt_name",
    "read_confidence_array",
    "read_confidence_png",
    "read_gt_png",
    "read_gt_red_blue",
    "write_png",
]

#: The evaluated combinations of category and type, in the devkit's order (plus the ego-lane).
ROAD_CATEGORIES: tuple[str, ...] = ("um_road", "umm_road", "uu_road", "um_lane")


_GT_NAME = re.compile(r"^(um|umm|uu)_(road|lane)_(\d{6})$")


def parse_gt_name(name: str) -> tuple[str, str, str]:
    """``"um_road_000012"`` (or a path / ``.png`` name) -> ``("um", "road", "000012")``.

    Raises:
        ValueError: the name is not ``<um|umm|uu>_<road|lane>_<6 digits>``.
    """
    key = Path(name).name.split(".")[0]
    match = _GT_NAME.match(key)
    if match is None:
        raise ValueError(f"not a KITTI-ROAD ground-truth name (<um|umm|uu>_<road|lane>_<6 digits>): {name!r}")
    return match.group(1), match.group(2), match.group(3)


def calib_file_for(calib_dir: str | Path, key: str) -> Path:
    """The calibration file of a frame key, as the devkit's ``transform2BEV`` finds it.

    ``calib_dir/<key>.txt`` first; else, for a three-tag key, the type tag is dropped: ``um_road_000012`` ->
    ``um_000012.txt``.

    Raises:
        FileNotFoundError: naming the files tried.
    """
    calib_dir = Path(calib_dir)
    key = Path(key).name.split(".")[0]
    tried = [calib_dir / f"{key}.txt"]
    tags = key.split("_")
    if len(tags) == 3:
        tried.append(calib_dir / f"{tags[0]}_{tags[2]}.txt")
    for path in tried:
        if path.is_file():
            return path
    raise FileNotFoundError(f"no calibration file for {key!r}: tried {', '.join(str(p) for p in tried)}")


@dataclass(frozen=True)
class KittiRoadLayout:
    """Where the ground truth and calibration of a KITTI-ROAD split live."""

    root: Path
    gt_dir: Path
    calib_dir: Path | None


def find_layout(data_dir: str | Path, need_calib: bool = False) -> KittiRoadLayout:
    """Locate ``gt_image_2/`` (and ``calib/``) in ``data_dir`` or ``data_dir/training``.

    Raises:
        FileNotFoundError: ``data_dir`` does not exist.
        ValueError: neither layout is present, or ``calib/`` is missing while ``need_calib``.
    """
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise FileNotFoundError(f"data folder not found: {data_dir}")
    for root in (data_dir, data_dir / "training"):
        if (root / "gt_image_2").is_dir():
            calib = root / "calib"
            if need_calib and not calib.is_dir():
                raise ValueError(f"{root} has gt_image_2/ but no calib/ (needed for the BEV evaluation)")
            return KittiRoadLayout(root, root / "gt_image_2", calib if calib.is_dir() else None)
    raise ValueError(
        f"unknown KITTI-ROAD layout in {data_dir}: expected {data_dir}/gt_image_2/ (and calib/) or "
        f"{data_dir}/training/gt_image_2/ (and calib/)"
    )


def category_frames(gt_dir: str | Path, category: str) -> list[str]:
    """Sorted ground-truth keys of one category (e.g. ``["um_road_000000", ...]``) in ``gt_dir``."""
    if category not in ROAD_CATEGORIES:
        raise ValueError(f"unknown category {category!r}; expected one of {', '.join(ROAD_CATEGORIES)}")
    return sorted(p.stem for p in Path(gt_dir).glob(f"{category}_*.png") if _GT_NAME.match(p.stem))


def _open_gt(path: Path) -> Image.Image:
    """The decoded ground-truth PNG as an RGB or RGBA Pillow image (palette PNGs converted)."""
    img = load_image(path, what="ground-truth PNG")
    if img.mode == "P":
        return img.convert("RGB")
    if img.mode not in ("RGB", "RGBA"):
        raise ValueError(
            f"{path}: ground truth must be an 8-bit colour PNG (magenta road, red non-road, black don't care), "
            f"got mode {img.mode}"
        )
    return img


def read_gt_png(path: str | Path) -> Tensor:
    """A ground-truth PNG as a ``uint8`` tensor ``(3, H, W)`` in RGB order.

    Raises:
        FileNotFoundError: missing file.
        ValueError: not a colour PNG.
    """
    import torch

    rgb = np.array(_open_gt(Path(path)))[..., :3]
    return torch.from_numpy(rgb).permute(2, 0, 1).contiguous()


def read_gt_red_blue(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """The red and blue channels (``uint8`` ``(H, W)``, views of one decoded image) of a ground-truth PNG: all the
    evaluation needs.

    Cheaper than :func:`read_gt_png`: libspng decodes where installed (:mod:`drivemetrics._internal.png`), else Pillow
    extracts the two bands without building an RGB array.
    """
    rgb = decode_png_array(path)
    if rgb is not None and rgb.ndim == 3:
        return rgb[..., 0], rgb[..., 2]
    img = _open_gt(path)
    return np.array(img.getchannel(0)), np.array(img.getchannel(2))


def gt_masks(gt_rgb: Tensor) -> tuple[Tensor, Tensor]:
    """``(road, valid)`` bool masks (``(..., H, W)``) from RGB ground truth ``(..., 3, H, W)``.

    Road: blue channel > 0; valid: red channel > 0 (the devkit's rules, on RGB instead of OpenCV's BGR).
    """
    if gt_rgb.ndim < 3 or gt_rgb.shape[-3] != 3:
        raise ValueError(f"`gt_rgb` must have shape ... x 3 x H x W, got {tuple(gt_rgb.shape)}")
    return gt_rgb[..., 2, :, :] > 0, gt_rgb[..., 0, :, :] > 0


def read_confidence_array(path: str | Path) -> np.ndarray:
    """A result PNG as a ``uint8`` numpy array ``(H, W)`` (confidence ``v / 255``), like ``cv2.imread(path, 0)``.

    Raises:
        FileNotFoundError: missing file.
        ValueError: a 16-bit or floating-point PNG.
    """
    gray = decode_png_array(path)
    if gray is not None and gray.ndim == 2:
        return gray
    img = load_image(path, what="result PNG")
    if img.mode not in ("L", "1", "P", "RGB", "RGBA", "LA"):
        raise ValueError(f"{path}: results must be 8-bit PNGs (greyscale 0..255), got mode {img.mode}")
    if img.mode != "L":
        img = img.convert("L")
    return np.array(img)


def read_confidence_png(path: str | Path) -> Tensor:
    """:func:`read_confidence_array` as a ``uint8`` tensor ``(H, W)``.

    Raises:
        FileNotFoundError: missing file.
        ValueError: a 16-bit or floating-point PNG.
    """
    import torch

    return torch.from_numpy(read_confidence_array(path))


def write_png(path: str | Path, image: Tensor) -> None:
    """Write a ``uint8`` ``(H, W)`` (greyscale) or ``(3, H, W)`` (RGB) tensor as PNG, creating folders."""
    import torch

    if image.dtype != torch.uint8 or image.ndim not in (2, 3) or (image.ndim == 3 and image.shape[0] != 3):
        raise ValueError(f"`image` must be uint8 H x W or 3 x H x W, got {image.dtype} {tuple(image.shape)}")
    array = image.detach().cpu().numpy()
    if array.ndim == 3:
        array = np.ascontiguousarray(array.transpose(1, 2, 0))
    atomic_save_png(path, array)
