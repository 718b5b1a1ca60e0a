"""KITTI-ROAD dataset tools: file layout, PNG ground truth and results, calibration lookup, pooled evaluation.

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

import contextlib
import itertools
import os
import re
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import numpy as np
import torch
from PIL import Image
from torch import Tensor

from drivemetrics._files import InputFiles, atomic_save_png, check_output_path, load_image
from drivemetrics._png import decode_png_array
from drivemetrics.geometry.bev import BevGrid
from drivemetrics.geometry.calib import read_kitti_calib
from drivemetrics.geometry.homography import image_from_road_calib
from drivemetrics.geometry.warp import warp_image_to_bev
from drivemetrics.road.pixel import (
    PixelCounts,
    bucket_histograms,
    counts_from_histograms,
    kitti_thresholds,
    pixel_counts,
    scores_from_counts,
)

#: The evaluated combinations of category and type, in the devkit's order (plus the ego-lane).
ROAD_CATEGORIES: tuple[str, ...] = ("um_road", "umm_road", "uu_road", "um_lane")

#: The road categories pooled into the extra ``urban_road`` entry (all their frames' pixels together).
URBAN_ROAD_PARTS: tuple[str, ...] = ("um_road", "umm_road", "uu_road")

#: The keys written per category by the evaluation (the devkit's names; values are fractions, not percent).
RESULT_KEYS: tuple[str, ...] = (
    "MaxF",
    "AvgPrec",
    "PRE_wp",
    "REC_wp",
    "FPR_wp",
    "FNR_wp",
    "A_wp",
    "BestThresh",
    "totalPosNum",
    "totalNegNum",
)

__all__ = [
    "RESULT_KEYS",
    "ROAD_CATEGORIES",
    "SPACES",
    "URBAN_ROAD_PARTS",
    "KittiRoadLayout",
    "calib_file_for",
    "category_frames",
    "evaluate_results",
    "find_layout",
    "format_scores_table",
    "frame_counts",
    "gt_masks",
    "parallel_map",
    "parse_gt_name",
    "read_confidence_png",
    "read_gt_png",
    "transform_to_bev",
    "write_png",
]

_GT_NAME = re.compile(r"^(um|umm|uu)_(road|lane)_(\d{6})$")
SPACES: tuple[str, ...] = ("perspective", "bev")


# ---------------------------------------------------------------------------------------------- names and layout


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


# -------------------------------------------------------------------------------------------------------- PNGs


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
    """A ground-truth PNG as a ``uint8`` tensor ``3 x H x W`` in RGB order.

    Raises:
        FileNotFoundError: missing file.
        ValueError: not a colour PNG.
    """
    rgb = np.array(_open_gt(Path(path)))[..., :3]
    return torch.from_numpy(rgb).permute(2, 0, 1).contiguous()


def _read_gt_red_blue(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """The red and blue channels (``uint8`` ``H x W``) of a ground-truth PNG: all the evaluation needs.

    Cheaper than :func:`read_gt_png`: libspng decodes where installed (:mod:`drivemetrics._png`), else Pillow
    extracts the two bands without building an RGB array.
    """
    rgb = decode_png_array(path)
    if rgb is not None and rgb.ndim == 3:
        return np.ascontiguousarray(rgb[..., 0]), np.ascontiguousarray(rgb[..., 2])
    img = _open_gt(path)
    return np.array(img.getchannel(0)), np.array(img.getchannel(2))


def gt_masks(gt_rgb: Tensor) -> tuple[Tensor, Tensor]:
    """``(road, valid)`` bool masks (``... x H x W``) from RGB ground truth ``... x 3 x H x W``.

    Road: blue channel > 0; valid: red channel > 0 (the devkit's rules, on RGB instead of OpenCV's BGR).
    """
    if gt_rgb.ndim < 3 or gt_rgb.shape[-3] != 3:
        raise ValueError(f"`gt_rgb` must have shape ... x 3 x H x W, got {tuple(gt_rgb.shape)}")
    return gt_rgb[..., 2, :, :] > 0, gt_rgb[..., 0, :, :] > 0


def read_confidence_png(path: str | Path) -> Tensor:
    """A result PNG as a ``uint8`` tensor ``H x W`` (confidence ``v / 255``), like ``cv2.imread(path, 0)``.

    Raises:
        FileNotFoundError: missing file.
        ValueError: a 16-bit or floating-point PNG.
    """
    gray = decode_png_array(path)
    if gray is not None and gray.ndim == 2:
        return torch.from_numpy(gray)
    img = load_image(path, what="result PNG")
    if img.mode not in ("L", "1", "P", "RGB", "RGBA", "LA"):
        raise ValueError(f"{path}: results must be 8-bit PNGs (greyscale 0..255), got mode {img.mode}")
    if img.mode != "L":
        img = img.convert("L")
    gray = np.array(img)
    return torch.from_numpy(gray)


def write_png(path: str | Path, image: Tensor) -> None:
    """Write a ``uint8`` ``H x W`` (greyscale) or ``3 x H x W`` (RGB) tensor as PNG, creating folders."""
    if image.dtype != torch.uint8 or image.ndim not in (2, 3) or (image.ndim == 3 and image.shape[0] != 3):
        raise ValueError(f"`image` must be uint8 H x W or 3 x H x W, got {image.dtype} {tuple(image.shape)}")
    array = image.detach().cpu().numpy()
    if array.ndim == 3:
        array = np.ascontiguousarray(array.transpose(1, 2, 0))
    atomic_save_png(path, array)


# -------------------------------------------------------------------------------------------------- evaluation


def _progress(items: Sequence[str], enabled: bool | None, desc: str) -> Iterable[str]:
    if enabled is False:
        return items
    from tqdm import tqdm

    # enabled=None: tqdm decides (shown on a terminal, hidden otherwise)
    return tqdm(items, desc=desc, unit="frame", disable=None if enabled is None else not enabled, leave=False)


_Item = TypeVar("_Item")
_Result = TypeVar("_Result")


def _check_workers(workers: int | None) -> int:
    """``workers`` as a positive int (``None``: ``os.cpu_count()``)."""
    if workers is None:
        return os.cpu_count() or 1
    if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
        raise ValueError(f"`workers` must be a positive int (or None for one per CPU core), got {workers!r}")
    return workers


@contextlib.contextmanager
def _one_torch_thread_per_worker() -> Iterator[None]:
    """torch's intra-op threads set to 1 while frames are processed in parallel (restored after).

    Frame-level threads replace op-level ones: a frame's ops are small, and intra-op threads spinning on a busy
    machine cost more CPU than they save (measured: 1.7x the user time with one worker on 2 loaded cores).
    """
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def parallel_map(
    fn: Callable[[_Item], _Result], items: Iterable[_Item], workers: int | None = None
) -> Iterator[_Result]:
    """``fn(item)`` for every item, in order, computed by ``workers`` threads (default: one per CPU core).

    Meant for file decoding (Pillow and torch release the GIL while they work). At most ``2 * workers`` items are
    in flight, so memory stays bounded whatever the number of items; ``workers=1`` runs in the calling thread.
    An exception of ``fn`` is raised here (for the first failing item in order) and the queued items are dropped.
    """
    workers = _check_workers(workers)
    if workers == 1:
        yield from map(fn, items)
        return
    pool = ThreadPoolExecutor(workers, thread_name_prefix="drivemetrics-read")
    try:
        todo = iter(items)
        pending = deque(pool.submit(fn, item) for item in itertools.islice(todo, 2 * workers))
        while pending:
            result = pending.popleft().result()
            pending.extend(pool.submit(fn, item) for item in itertools.islice(todo, 1))
            yield result
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _match_size(pred: Tensor, gt_hw: tuple[int, int], name: str, crop: bool) -> Tensor:
    """``pred`` (``H x W``) cropped to ``gt_hw`` when ``crop`` allows it; ValueError otherwise."""
    if tuple(pred.shape) == gt_hw:
        return pred
    if crop and pred.shape[0] >= gt_hw[0] and pred.shape[1] >= gt_hw[1]:
        return pred[: gt_hw[0], : gt_hw[1]]
    hint = " (--crop only crops results larger than the ground truth)" if crop else "; pass --crop to crop it"
    if tuple(pred.shape) == BevGrid().shape:
        hint += " (results must be perspective maps: --space bev warps them to the BEV itself)"
    raise ValueError(
        f"result {name} is {pred.shape[0]} x {pred.shape[1]} but its ground truth is {gt_hw[0]} x {gt_hw[1]}{hint}"
    )


def frame_counts(
    gt_rgb: Tensor,
    pred: Tensor,
    image_from_road: Tensor | None = None,
    grid: BevGrid | None = None,
) -> PixelCounts:
    """Devkit counts at the 256 thresholds for one frame, in perspective or (with a homography) BEV.

    Args:
        gt_rgb: ``uint8`` ``3 x H x W`` ground truth (RGB).
        pred: ``uint8`` ``H x W`` confidences.
        image_from_road: ``3 x 3`` float64 homography: evaluate in the BEV, both maps warped the devkit way
            (unseen cells become black, i.e. don't care).
        grid: the BEV grid (default: the KITTI-ROAD grid).

    Returns:
        :class:`PixelCounts` of shape ``T = 256``.
    """
    if image_from_road is not None:
        gt_rgb = warp_image_to_bev(gt_rgb.unsqueeze(0), image_from_road, grid, mode="devkit")[0][0]
        pred = warp_image_to_bev(pred[None, None], image_from_road, grid, mode="devkit")[0][0, 0]
    road, valid = gt_masks(gt_rgb)
    return pixel_counts(pred.unsqueeze(0), road.unsqueeze(0), valid.unsqueeze(0)).sum(0)


@dataclass(frozen=True)
class _Frame:
    """One frame to evaluate: its key, files and (for the BEV) calibration file."""

    key: str
    gt_path: Path
    result_path: Path
    calib_path: Path | None


def _frame_histogram(frame: _Frame, crop: bool, grid: BevGrid | None, thresholds: Tensor) -> Tensor:
    """Bucket histogram ``2 x (T + 1)`` (negatives, positives; see :func:`bucket_histograms`) of one frame.

    The same counts as :func:`frame_counts` on :func:`read_gt_png` / :func:`read_confidence_png`, read for less:
    only the ground truth's red (valid) and blue (road) channels are extracted, all uint8, and the BEV warp moves
    the three planes in one gather.
    """
    red, blue = _read_gt_red_blue(frame.gt_path)
    pred = _match_size(read_confidence_png(frame.result_path), red.shape, frame.key, crop)
    planes = torch.stack((torch.from_numpy(red), torch.from_numpy(blue), pred))
    if frame.calib_path is not None:
        homography = image_from_road_calib(read_kitti_calib(frame.calib_path))
        planes = warp_image_to_bev(planes.unsqueeze(0), homography, grid, mode="devkit")[0][0]
    valid, road, pred = planes[0:1] > 0, planes[1:2] > 0, planes[2:3]
    return bucket_histograms(pred, road, valid, thresholds, per_image=False)[0]


def evaluate_results(
    data_dir: str | Path,
    results_dir: str | Path,
    space: str = "perspective",
    crop: bool = False,
    categories: Sequence[str] = ROAD_CATEGORIES,
    grid: BevGrid | None = None,
    devkit_float32: bool = False,
    progress: bool | None = None,
    log: Callable[[str], None] | None = None,
    workers: int | None = None,
) -> dict[str, dict[str, float]]:
    """Evaluate a folder of result PNGs against KITTI-ROAD ground truth, pooled per category (the devkit's way).

    The frames are decoded and counted by a pool of ``workers`` threads (PNG decoding and the counting kernels
    release the GIL), a few frames at a time, so memory does not grow with the number of frames; torch's own
    intra-op threads are set to 1 meanwhile (``torch.set_num_threads``, restored on return).

    Args:
        data_dir: holds ``gt_image_2/`` and ``calib/`` (or ``training/`` with them).
        results_dir: the result PNGs, named like the ground truth, at its top level.
        space: ``"perspective"`` (the devkit's ``evaluateRoad``) or ``"bev"`` (ground truth and results
            warped with each frame's calibration by the devkit's lookup, then evaluated the same way).
        crop: allow results larger than their ground truth, cropped to it at the top-left (the devkit's
            ``computeBaseline`` writes 376 x 1242 maps); otherwise a size mismatch is an error.
        categories: which of :data:`ROAD_CATEGORIES` to evaluate; those without ground truth files or without
            any result file are skipped (and logged).
        grid: the BEV grid for ``space="bev"`` (default: the KITTI-ROAD grid).
        devkit_float32: working-point values from float32 counts, as the devkit computes them.
        progress: show a tqdm bar (``None``: only on a terminal).
        log: called with one line per skipped category (default: silent).
        workers: threads reading and counting frames (default: ``os.cpu_count()``; 1: no thread).

    Returns:
        ``{category: {key: value}}`` with :data:`RESULT_KEYS`; values are fractions, ``BestThresh`` is
        ``k / 255``; ``totalPosNum`` / ``totalNegNum`` are pixel (or cell) counts. When um_road, umm_road and
        uu_road are all evaluated, an extra entry ``urban_road`` pools the pixels of all their frames (one best
        threshold overall; not a devkit category: the KITTI server's URBAN_ROAD aggregation is not public).

    Raises:
        ValueError: unknown space or category, unknown layout, a size mismatch, a category whose results are
            only partly present, or no result at all.
        FileNotFoundError: missing folders or calibration files.
    """
    if space not in SPACES:
        raise ValueError(f"`space` must be one of {', '.join(SPACES)}, got {space!r}")
    unknown = [c for c in categories if c not in ROAD_CATEGORIES]
    if unknown:
        raise ValueError(f"unknown categories {unknown}; expected some of {', '.join(ROAD_CATEGORIES)}")
    layout = find_layout(data_dir, need_calib=space == "bev")
    results_dir = Path(results_dir)
    if not results_dir.is_dir():
        raise FileNotFoundError(f"results folder not found: {results_dir}")
    log = log or (lambda _line: None)
    workers = _check_workers(workers)
    frames: list[tuple[str, _Frame]] = []
    for category in categories:
        keys = category_frames(layout.gt_dir, category)
        if not keys:
            log(f"{category}: no ground truth in {layout.gt_dir}, skipped")
            continue
        missing = [k for k in keys if not (results_dir / f"{k}.png").is_file()]
        if len(missing) == len(keys):
            log(f"{category}: no result files in {results_dir}, skipped")
            continue
        if missing:
            shown = ", ".join(f"{k}.png" for k in missing[:5]) + (" ..." if len(missing) > 5 else "")
            raise ValueError(
                f"{category}: {len(missing)} of {len(keys)} result files are missing in {results_dir} ({shown}); "
                "the devkit would drop the whole category"
            )
        for key in keys:
            calib = None
            if space == "bev":
                assert layout.calib_dir is not None
                calib = calib_file_for(layout.calib_dir, key)  # a missing file fails before any decoding
            frames.append((category, _Frame(key, layout.gt_dir / f"{key}.png", results_dir / f"{key}.png", calib)))
    thresholds = kitti_thresholds()
    histograms: dict[str, Tensor] = {}

    def count(frame: _Frame) -> Tensor:
        return _frame_histogram(frame, crop, grid, thresholds)

    bar = _progress([c for c, _ in frames], progress, f"road-eval ({space})")  # advances as frames complete
    with _one_torch_thread_per_worker():
        for hist, category in zip(parallel_map(count, [f for _, f in frames], workers), bar, strict=True):
            histograms[category] = hist if category not in histograms else histograms[category] + hist
    totals = {category: counts_from_histograms(hist) for category, hist in histograms.items()}
    if not totals:
        raise ValueError(f"no result PNG named like the ground truth in {layout.gt_dir} was found in {results_dir}")
    if all(c in totals for c in URBAN_ROAD_PARTS):
        parts = [totals[c] for c in URBAN_ROAD_PARTS]
        totals["urban_road"] = PixelCounts(*(sum(counts) for counts in zip(*parts, strict=True)))
    scores: dict[str, dict[str, float]] = {}
    for category, total in totals.items():
        result = scores_from_counts(total, devkit_float32=devkit_float32)
        scores[category] = {k: float(result[k]) for k in RESULT_KEYS}
        scores[category]["totalPosNum"] = int(result["totalPosNum"])
        scores[category]["totalNegNum"] = int(result["totalNegNum"])
    return scores


def format_scores_table(scores: dict[str, dict[str, float]], space: str = "perspective") -> str:
    """The devkit's printed properties (percent, ``%4.2f``) as a table, one row per category."""
    props = ("MaxF", "AvgPrec", "PRE_wp", "REC_wp", "FPR_wp", "FNR_wp", "A_wp")
    header = f"{'category':<10} " + " ".join(f"{p:>8}" for p in props) + f" {'BestThresh':>10}"
    lines = [f"KITTI-ROAD evaluation ({space}), percent", header]
    for category, s in scores.items():
        cells = " ".join(f"{100 * s[p]:>8.2f}" for p in props)
        best = s["BestThresh"]
        best_text = f"{round(best * 255):>6d}/255" if best == best else f"{'nan':>10}"
        lines.append(f"{category:<10} {cells} {best_text}")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------ BEV transform


def _warp_file_to_bev(
    path: Path, calib_dir: Path, output_dir: Path, grid: BevGrid | None, inputs: InputFiles | None = None
) -> Path:
    """Warp one PNG to the BEV (its calibration by :func:`calib_file_for`) and write it atomically; the path.

    ``inputs``: the command's input files; the output is refused (``ValueError``) if it resolves to one of them.
    """
    calib = calib_file_for(calib_dir, path.stem)
    homography = image_from_road_calib(read_kitti_calib(calib))
    img = load_image(path, what="input PNG")
    if img.mode == "P":
        img = img.convert("RGB")
    if img.mode not in ("L", "RGB", "RGBA", "LA", "1"):
        raise ValueError(f"{path}: expected an 8-bit PNG, got mode {img.mode}")
    array = np.array(img.convert("L") if img.mode == "1" else img)
    image = torch.from_numpy(array)
    image = image[None, None] if image.ndim == 2 else image.permute(2, 0, 1)[None]
    bev = warp_image_to_bev(image, homography, grid, mode="devkit")[0][0]
    array_out = bev[0].numpy() if bev.shape[0] == 1 else np.ascontiguousarray(bev.permute(1, 2, 0).numpy())
    out = output_dir / f"{path.stem}.png"
    if inputs is not None:
        inputs.check(out, "output_dir file")
        InputFiles([calib]).check(out, "output_dir file")
    atomic_save_png(out, array_out)
    return out


def transform_to_bev(
    calib_dir: str | Path,
    input_dir: str | Path,
    output_dir: str | Path,
    grid: BevGrid | None = None,
    progress: bool | None = None,
    workers: int | None = None,
) -> list[Path]:
    """Warp every ``*.png`` of ``input_dir`` to the BEV like the devkit's ``transform2BEV`` (for submission).

    Each file's calibration is found with :func:`calib_file_for`; the image is read unchanged (8-bit grey or
    colour) and warped with the devkit's lookup (unseen cells 0), then written to ``output_dir/<name>.png``
    (a temporary file renamed into place). ``workers`` threads (default: ``os.cpu_count()``) decode, warp and
    encode a few files at a time.

    Returns:
        The written paths.

    Raises:
        FileNotFoundError: missing folders or calibration; ValueError: no PNG in ``input_dir``, a non-8-bit PNG,
        or ``output_dir`` is ``input_dir`` or one of its files is an input (through a link): the inputs would be
        overwritten.
    """
    input_dir, output_dir, calib_dir = Path(input_dir), Path(output_dir), Path(calib_dir)
    for folder, what in ((calib_dir, "calibration"), (input_dir, "input")):
        if not folder.is_dir():
            raise FileNotFoundError(f"{what} folder not found: {folder}")
    check_output_path(output_dir, input_dirs=[input_dir, calib_dir], option="output_dir")
    files = sorted(input_dir.glob("*.png"))
    if not files:
        raise ValueError(f"no .png files in {input_dir}")
    inputs = InputFiles(files)
    for path in files:  # before any work: no output may be an input (e.g. through a link in output_dir)
        inputs.check(output_dir / f"{path.stem}.png", "output_dir file")
    output_dir.mkdir(parents=True, exist_ok=True)

    def warp(path: Path) -> Path:
        return _warp_file_to_bev(path, calib_dir, output_dir, grid, inputs)

    bar = _progress([str(f) for f in files], progress, "to BEV")
    with _one_torch_thread_per_worker():
        return [out for out, _ in zip(parallel_map(warp, files, workers), bar, strict=True)]
