"""KITTI-ROAD folder evaluation: pooled pixel scores per category (perspective or BEV), BEV conversion of result
folders, and the driving-corridor table over a KITTI-ROAD folder. File reading and writing is in
:mod:`drivemetrics.road.io`.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from drivemetrics._internal import arrays
from drivemetrics._internal.compat import Compat, check_compat
from drivemetrics._internal.files import InputFiles, atomic_save_png, check_output_path, load_image, present_file
from drivemetrics._internal.limits import check_image_fits_camera, png_size
from drivemetrics._internal.pool import (
    check_workers_or_auto,
    map_in_processes,
    one_torch_thread_per_worker,
    parallel_map,
)
from drivemetrics.geometry.bev import BevGrid
from drivemetrics.road.corridor_config import CorridorConfig
from drivemetrics.road.io import (
    ROAD_CATEGORIES,
    calib_file_for,
    category_frames,
    find_layout,
    gt_masks,
    read_confidence_array,
    read_confidence_png,
    read_gt_png,
    read_gt_red_blue,
)
from drivemetrics.road.pixel_scores import (
    PixelCounts,
    buckets_from_value_histograms,
    counts_from_histograms,
    devkit_scores,
    threshold_grid,
    value_histograms,
)

if TYPE_CHECKING:  # road-eval on the CPU runs on numpy arrays and never imports torch; the tensor paths import it
    from torch import Tensor

#: The road categories pooled into the extra ``urban_road`` entry (all their frames' pixels together).
URBAN_ROAD_PARTS: tuple[str, ...] = ("um_road", "umm_road", "uu_road")

#: The keys returned per category by the evaluation (values are fractions, not percent); the CLI prints and writes
#: them under the devkit's names (:data:`DEVKIT_NAMES`).
RESULT_KEYS: tuple[str, ...] = (
    "max_f",
    "average_precision",
    "precision_wp",
    "recall_wp",
    "fpr_wp",
    "fnr_wp",
    "accuracy_wp",
    "best_threshold",
    "total_positives",
    "total_negatives",
)

__all__ = [
    "DEVKIT_NAMES",
    "RESULT_KEYS",
    "SPACES",
    "URBAN_ROAD_PARTS",
    "corridor_table",
    "evaluate_results",
    "format_corridor_table",
    "format_scores_table",
    "frame_counts",
    "kitti_corridor_table",
    "transform_to_bev",
]

SPACES: tuple[str, ...] = ("perspective", "bev")

#: The devkit's name of each result key (``road-eval`` prints and writes these).
DEVKIT_NAMES: dict[str, str] = {
    "max_f": "MaxF",
    "average_precision": "AvgPrec",
    "precision_wp": "PRE_wp",
    "recall_wp": "REC_wp",
    "fpr_wp": "FPR_wp",
    "fnr_wp": "FNR_wp",
    "accuracy_wp": "A_wp",
    "best_threshold": "BestThresh",
    "total_positives": "totalPosNum",
    "total_negatives": "totalNegNum",
}


# ---------------------------------------------------------------------------------------------- names and layout


# -------------------------------------------------------------------------------------------------------- PNGs


# -------------------------------------------------------------------------------------------------- evaluation


def _progress(items: Sequence[str], enabled: bool | None, desc: str) -> Iterable[str]:
    from drivemetrics._internal.progress import progress_iter

    return progress_iter(items, len(items), desc, "frame", enabled)  # None: only on a terminal


def _match_size(pred: Any, gt_hw: tuple[int, ...], name: str, crop: bool) -> Any:
    """``pred`` (``(H, W)``, numpy or tensor) cropped to ``gt_hw`` when ``crop`` allows it; ValueError otherwise."""
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
        gt_rgb: ``uint8`` ``(3, H, W)`` ground truth (RGB).
        pred: ``uint8`` ``(H, W)`` confidences.
        image_from_road: ``(3, 3)`` float64 homography: evaluate in the BEV, both maps warped the devkit way
            (unseen cells become black, i.e. don't care).
        grid: the BEV grid (default: the KITTI-ROAD grid).

    Returns:
        :class:`PixelCounts` of shape ``T = 256``.
    """
    from drivemetrics.geometry.warp import warp_image_to_bev
    from drivemetrics.road.pixel_counting import pixel_counts

    if image_from_road is not None:
        gt_rgb = warp_image_to_bev(gt_rgb.unsqueeze(0), image_from_road, grid, mode="devkit")[0][0]
        pred = warp_image_to_bev(pred[None, None], image_from_road, grid, mode="devkit")[0][0, 0]
    road, valid = gt_masks(gt_rgb)
    return pixel_counts(pred.unsqueeze(0), road.unsqueeze(0), valid=valid.unsqueeze(0)).sum(0)


@dataclass(frozen=True)
class _Frame:
    """One frame to evaluate: its key, files and (for the BEV) calibration file."""

    key: str
    gt_path: Path
    result_path: Path
    calib_path: Path | None


def _frame_planes(frame: _Frame, crop: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(red, blue, preds)`` of one frame in the image, ``uint8`` ``(H, W)`` numpy arrays: only the ground truth's
    red (valid) and blue (road) channels are extracted; the result is cropped when ``crop`` allows it."""
    red, blue = read_gt_red_blue(frame.gt_path)
    preds = _match_size(read_confidence_array(frame.result_path), red.shape, frame.key, crop)
    return red, blue, preds


def _frame_histogram(frame: _Frame, crop: bool, grid: BevGrid) -> np.ndarray:
    """Raw-value histograms ``(2, 256)`` (valid non-road, road; :func:`value_histograms`) of one frame, on numpy
    arrays (no torch): in the image, or (with a calibration file) in the BEV warped by the devkit's lookup table."""
    planes = _frame_planes(frame, crop)
    if frame.calib_path is not None:
        from drivemetrics.geometry.devkit_lookup import devkit_lookup, image_from_road_array, warp_planes_to_bev

        homography = image_from_road_array(frame.calib_path)
        lookup = devkit_lookup(homography, planes[0].shape, grid, str(frame.calib_path))
        planes = tuple(warp_planes_to_bev(np.stack(planes), lookup))
    red, blue, preds = planes
    return value_histograms(preds, red, blue)


def _frame_histogram_on(frame: _Frame, planes: tuple[np.ndarray, ...], grid: BevGrid, device: str) -> Tensor:
    """:func:`_frame_histogram` of decoded planes on a torch ``device`` (the BEV by the tensor warp's devkit mode)."""
    stacked = arrays.on_device(np.stack(planes), device)
    if frame.calib_path is not None:
        from drivemetrics.geometry.homography import image_from_road_calib_file
        from drivemetrics.geometry.warp import warp_image_to_bev

        homography = image_from_road_calib_file(frame.calib_path).to(stacked.device)
        stacked = warp_image_to_bev(stacked[None], homography, grid, mode="devkit")[0][0]
    return value_histograms(stacked[2], stacked[0], stacked[1])


def _frames_to_evaluate(
    layout: Any, results_dir: Path, space: str, categories: Sequence[str], log: Callable[[str], None]
) -> list[tuple[str, _Frame]]:
    """``(category, frame)`` of every frame to evaluate, in category order; categories without ground truth or
    without any result are logged and skipped, a partly missing category is an error."""
    frames: list[tuple[str, _Frame]] = []
    for category in categories:
        keys = category_frames(layout.gt_dir, category)
        if not keys:
            log(f"{category}: no ground truth in {layout.gt_dir}, skipped")
            continue
        missing = [k for k in keys if not present_file(results_dir / f"{k}.png", "result PNG")]
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
    return frames


def _category_histograms(
    frames: list[tuple[str, _Frame]],
    crop: bool,
    grid: BevGrid,
    workers: int | None,
    device: str | None,
    bar: Iterable[str],
) -> dict[str, Any]:
    """Raw-value histograms ``(2, 256)`` per category, summed over its frames as they come (bounded memory).

    ``device`` None: each frame decoded and counted on numpy by ``workers`` processes (forked: this process has no
    torch); a torch device: the frames decoded by the processes, warped and counted there.
    """
    jobs = [frame for _, frame in frames]
    if device is None:
        results: Iterable[Any] = map_in_processes(
            functools.partial(_frame_histogram, crop=crop, grid=grid), jobs, workers
        )
    else:
        decoded = map_in_processes(functools.partial(_frame_planes, crop=crop), jobs, workers)
        results = (
            _frame_histogram_on(frame, planes, grid, device) for frame, planes in zip(jobs, decoded, strict=True)
        )
    histograms: dict[str, Any] = {}
    with contextlib.nullcontext() if device is None else one_torch_thread_per_worker():  # a frame's ops are small
        for hist, (category, _), _ in zip(results, frames, bar, strict=True):
            histograms[category] = hist if category not in histograms else histograms[category] + hist
    return histograms


def evaluate_results(
    data_dir: str | Path,
    results_dir: str | Path,
    space: str = "perspective",
    crop: bool = False,
    categories: Sequence[str] = ROAD_CATEGORIES,
    grid: BevGrid | None = None,
    compat: Compat = "default",
    progress: bool | None = None,
    log: Callable[[str], None] | None = None,
    workers: int | None = None,
    device: str | None = None,
) -> dict[str, dict[str, float]]:
    """Evaluate a folder of result PNGs against KITTI-ROAD ground truth, pooled per category (the devkit's way).

    Each frame is decoded and counted into a 512-bin histogram (8-bit value x road / non-road of the valid pixels)
    as it comes, so memory does not grow with the number of frames; the histograms of a category are summed, and
    the devkit's scores come from the sums. Without ``device`` everything runs on numpy arrays, without importing
    torch, in ``workers`` forked processes; with a torch ``device`` the same kernels
    (:mod:`drivemetrics.road.pixel_scores`) count tensors there (the BEV warped by the tensor warp's devkit
    mode). Both give the same numbers.

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
        compat: ``"reference"``: working-point values from float32 counts, as the devkit computes them.
        progress: show a tqdm bar (``None``: only on a terminal).
        log: called with one line per skipped category (default: silent).
        workers: processes decoding and counting the frames (``None``: the pool's measured policy,
            :func:`~drivemetrics._internal.pool.map_in_processes`: one process unless the time of the first
            frames says a pool on the free cores pays; 1: this process only).
        device: ``None`` (numpy, no torch) or a torch device (``"cpu"``, ``"cuda"``...) counting tensors.

    Returns:
        ``{category: {key: value}}`` with :data:`RESULT_KEYS`; values are fractions, ``best_threshold`` is
        ``k / 255``; ``total_positives`` / ``total_negatives`` are pixel (or cell) counts. When um_road, umm_road and
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
    reference = check_compat(compat)
    workers = check_workers_or_auto(workers)
    layout = find_layout(data_dir, need_calib=space == "bev")
    results_dir = Path(results_dir)
    if not results_dir.is_dir():
        raise FileNotFoundError(f"results folder not found: {results_dir}")
    frames = _frames_to_evaluate(layout, results_dir, space, categories, log or (lambda _line: None))
    bar = _progress([c for c, _ in frames], progress, f"road-eval ({space})")  # advances as frames complete
    histograms = _category_histograms(frames, crop, grid or BevGrid(), workers, device, bar)
    if not histograms:
        raise ValueError(f"no result PNG named like the ground truth in {layout.gt_dir} was found in {results_dir}")
    thresholds = threshold_grid(256)
    if device is not None:
        thresholds = arrays.on_device(thresholds, next(iter(histograms.values())).device)
    totals = {c: counts_from_histograms(buckets_from_value_histograms(h, thresholds)) for c, h in histograms.items()}
    if all(c in totals for c in URBAN_ROAD_PARTS):
        parts = [totals[c] for c in URBAN_ROAD_PARTS]
        totals["urban_road"] = PixelCounts(*(sum(counts) for counts in zip(*parts, strict=True)))
    scores: dict[str, dict[str, float]] = {}
    for category, total in totals.items():
        result = devkit_scores(total, thresholds, reference=reference)
        scores[category] = {k: float(result[k]) for k in RESULT_KEYS}
        scores[category]["total_positives"] = int(result["total_positives"])
        scores[category]["total_negatives"] = int(result["total_negatives"])
    return scores


def format_scores_table(scores: dict[str, dict[str, float]], space: str = "perspective") -> str:
    """The devkit's printed properties (percent, ``%4.2f``) as a table, one row per category, headed by the devkit's
    names (:data:`DEVKIT_NAMES`); ``scores`` as :func:`evaluate_results` returns them."""
    props = ("max_f", "average_precision", "precision_wp", "recall_wp", "fpr_wp", "fnr_wp", "accuracy_wp")
    header = f"{'category':<10} " + " ".join(f"{DEVKIT_NAMES[p]:>8}" for p in props) + f" {'BestThresh':>10}"
    lines = [f"KITTI-ROAD evaluation ({space}), percent", header]
    for category, s in scores.items():
        cells = " ".join(f"{100 * s[p]:>8.2f}" for p in props)
        best = s["best_threshold"]
        best_text = f"{round(best * 255):>6d}/255" if best == best else f"{'nan':>10}"
        lines.append(f"{category:<10} {cells} {best_text}")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------ BEV transform


def _warp_planes_on(planes: np.ndarray, calib: Path, grid: BevGrid | None, device: str) -> np.ndarray:
    """``(C, H, W)`` uint8 planes warped to the BEV by the tensor warp's devkit mode on a torch ``device``."""
    from drivemetrics.geometry.homography import image_from_road_calib_file
    from drivemetrics.geometry.warp import warp_image_to_bev

    image = arrays.on_device(np.ascontiguousarray(planes), device)[None]
    homography = image_from_road_calib_file(calib).to(image.device)
    return arrays.to_numpy(warp_image_to_bev(image, homography, grid, mode="devkit")[0][0])


def _warp_file_to_bev(
    path: Path,
    calib_dir: Path,
    output_dir: Path,
    grid: BevGrid | None,
    inputs: InputFiles | None = None,
    device: str | None = None,
) -> Path:
    """Warp one PNG to the BEV (its calibration by :func:`calib_file_for`) and write it atomically; the path.

    ``inputs``: the command's input files; the output is refused (``ValueError``) if it resolves to one of them.
    ``device``: ``None`` warps on numpy (no torch), a torch device warps there (decoded and encoded on the host).
    """
    from drivemetrics.geometry.calib import read_kitti_calib_arrays
    from drivemetrics.geometry.devkit_lookup import devkit_lookup, image_from_road_array, warp_planes_to_bev

    calib = calib_file_for(calib_dir, path.stem)
    homography = image_from_road_array(calib)
    size = png_size(path)
    if size is not None:  # before decoding: the image must be one of the calibration's camera
        p2 = read_kitti_calib_arrays(calib)["P2"]
        check_image_fits_camera(path, *size, (float(p2[0, 2]), float(p2[1, 2])), calib)
    img = load_image(path, what="input PNG")
    if img.mode == "P":
        img = img.convert("RGB")
    if img.mode not in ("L", "RGB", "RGBA", "LA", "1"):
        raise ValueError(f"{path}: expected an 8-bit PNG, got mode {img.mode}")
    array = np.array(img.convert("L") if img.mode == "1" else img)
    planes = array[None] if array.ndim == 2 else array.transpose(2, 0, 1)
    if device is None:
        bev = warp_planes_to_bev(planes, devkit_lookup(homography, array.shape[:2], grid, str(calib)))
    else:
        bev = _warp_planes_on(planes, calib, grid, device)
    array_out = bev[0] if array.ndim == 2 else np.ascontiguousarray(bev.transpose(1, 2, 0))
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
    threads: int | None = None,
    device: str | None = None,
) -> list[Path]:
    """Warp every ``*.png`` of ``input_dir`` to the BEV like the devkit's ``transform2BEV`` (for submission).

    Each file's calibration is found with :func:`calib_file_for`; the image is read unchanged (8-bit grey or
    colour) and warped with the devkit's lookup (unseen cells 0), then written to ``output_dir/<name>.png``
    (a temporary file renamed into place). ``threads`` threads (default and most: one per usable core) decode, warp
    (numpy, without torch: :mod:`drivemetrics.geometry.devkit_lookup`; with a torch ``device``, the tensor warp's
    devkit mode there: the same pixels) and encode a few files at a time.

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
    check_output_path(output_dir, input_dirs=[input_dir, calib_dir], option="output_dir", is_folder=True)
    files = sorted(input_dir.glob("*.png"))
    if not files:
        raise ValueError(f"no .png files in {input_dir}")
    inputs = InputFiles(files)
    for path in files:  # before any work: no output may be an input (e.g. through a link in output_dir)
        inputs.check(output_dir / f"{path.stem}.png", "output_dir file")
    output_dir.mkdir(parents=True, exist_ok=True)

    def warp(path: Path) -> Path:
        return _warp_file_to_bev(path, calib_dir, output_dir, grid, inputs, device)

    bar = _progress([str(f) for f in files], progress, "to BEV")
    return [out for out, _ in zip(parallel_map(warp, files, threads), bar, strict=True)]


def corridor_table(
    preds: Tensor | Sequence[Tensor],
    target: Tensor | Sequence[Tensor],
    valid: Tensor | Sequence[Tensor] | None = None,
    *,
    threshold: float,
    grid: BevGrid | None = None,
    config: CorridorConfig | None = None,
    batch_size: int = 32,
) -> dict[str, float]:
    """The paper's Table IV for a set of BEV frames: ``{precision_lat,f1_long,hitrate}_{d}m`` and ``mean_length``.

    Args:
        preds: ``(N, H, W)`` confidence maps (or a sequence of ``(H, W)`` maps), float in [0, 1] or uint8.
        target: the ground-truth ego-lanes (``um_lane``), same layout. valid: optional masks of evaluated cells.
        threshold: the working point of the pixel evaluation (e.g. the MaxF threshold), in (0, 1].
        batch_size: frames fitted at once.
    """
    import torch

    from drivemetrics._internal.validation import check_tensor

    def stack(x: Tensor | Sequence[Tensor] | None, name: str) -> Tensor | None:
        if x is None or arrays.is_tensor(x):
            return x
        if len(x) == 0:
            raise ValueError(f"`{name}` holds no frames")
        return torch.stack([check_tensor(v, name) for v in x])

    preds_t, target_t, valid_t = stack(preds, "preds"), stack(target, "target"), stack(valid, "valid")
    if preds_t is None or target_t is None:
        raise ValueError("`preds` and `target` are required")
    if preds_t.shape[0] != target_t.shape[0] or (valid_t is not None and valid_t.shape[0] != preds_t.shape[0]):
        raise ValueError("`preds`, `target` and `valid` must hold the same number of frames")
    if preds_t.shape[0] == 0:
        raise ValueError("`preds` holds no frames")
    from drivemetrics.road.corridor import DrivingCorridorMetrics  # torchmetrics only when the corridor is asked

    metric = DrivingCorridorMetrics(threshold, grid=grid, config=config).to(preds_t.device)
    for i in range(0, preds_t.shape[0], batch_size):
        part = slice(i, i + batch_size)
        metric.update(preds_t[part], target_t[part], valid=None if valid_t is None else valid_t[part])
    return {k: float(v) for k, v in metric.compute().items()}


def kitti_corridor_table(
    data_dir: str | Path,
    results_dir: str | Path,
    *,
    threshold: float,
    category: str = "um_lane",
    crop: bool = False,
    grid: BevGrid | None = None,
    config: CorridorConfig | None = None,
) -> dict[str, float]:
    """Table IV for KITTI-ROAD result PNGs of ``category`` (``um_lane``), in the BEV, like ``road-eval``.

    Ground truth and results are warped to ``grid`` with each frame's calibration by the devkit's lookup (cells
    unseen by the camera become don't-care); the corridor is fitted to each result and scored against the
    ego-lane ground truth, pooled over the frames.

    Args:
        data_dir: folder with ``gt_image_2/`` and ``calib/`` (or ``training/`` with them).
        results_dir: 8-bit confidence PNGs named like the ground truth (``um_lane_000000.png`` ...).
        threshold: the working point, e.g. ``best_threshold`` of the BEV pixel evaluation of the same results;
            a cell is a detection when ``value / 255 >= threshold``.
        crop: crop results larger than their ground truth (top-left) instead of failing.

    Returns:
        The dict of :func:`corridor_table`.
    """
    from drivemetrics.geometry.homography import image_from_road_calib_file
    from drivemetrics.geometry.warp import warp_image_to_bev

    grid = grid if grid is not None else BevGrid()
    layout = find_layout(data_dir, need_calib=True)
    keys = category_frames(layout.gt_dir, category)
    if not keys:
        raise ValueError(f"no {category} ground truth in {layout.gt_dir}")
    results = Path(results_dir)
    missing = [k for k in keys if not present_file(results / f"{k}.png", "result PNG")]
    if missing:
        raise FileNotFoundError(f"{len(missing)} of {len(keys)} {category} results missing in {results}: {missing[:3]}")
    preds, lanes, valids = [], [], []
    assert layout.calib_dir is not None  # need_calib
    for key in keys:
        gt = read_gt_png(layout.gt_dir / f"{key}.png")
        pred = _match_size(read_confidence_png(results / f"{key}.png"), tuple(gt.shape[1:]), key, crop)
        homography = image_from_road_calib_file(calib_file_for(layout.calib_dir, key))
        lane, valid = gt_masks(warp_image_to_bev(gt[None], homography, grid, mode="devkit")[0][0])
        preds.append(warp_image_to_bev(pred[None, None], homography, grid, mode="devkit")[0][0, 0])
        lanes.append(lane)
        valids.append(valid)
    return corridor_table(preds, lanes, valids, threshold=threshold, grid=grid, config=config)


def format_corridor_table(scores: dict[str, float], distances: Sequence[float] = (20.0, 30.0, 40.0)) -> str:
    """Table IV as text: rows Precision_lat, F1_long, Hitrate (percent); columns the distances."""
    head = f"{'':15s}" + "".join(f"{f'{d:g} m':>9s}" for d in distances)
    lines = [head]
    for key, label in (("precision_lat", "Precision_lat"), ("f1_long", "F1_long"), ("hitrate", "Hitrate")):
        lines.append(f"{label:15s}" + "".join(f"{100 * scores[f'{key}_{d:g}m']:8.1f}%" for d in distances))
    return "\n".join(lines)
