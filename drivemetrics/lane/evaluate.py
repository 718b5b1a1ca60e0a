"""Lane dataset evaluation: a CULane folder of ``.lines.txt`` files (``culane-eval``) and a TuSimple JSON-lines
file (``tusimple-eval``) against their ground truth. File reading is in :mod:`drivemetrics.lane.io`."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import torch

from drivemetrics._internal.compat import Compat, check_compat
from drivemetrics._internal.compute import precision_recall_f1
from drivemetrics._internal.distributed import Shard, current_shard
from drivemetrics._internal.limits import check_canvas
from drivemetrics._internal.progress import progress_bar
from drivemetrics._internal.ragged import RaggedRows
from drivemetrics.lane.culane import culane_matches
from drivemetrics.lane.evaluate_lanes2d import evaluate_curvelanes_dirs, evaluate_llamas_dirs
from drivemetrics.lane.io import TuSimpleRecords, frame_key, lane_name, read_culane_frames, read_tusimple_json
from drivemetrics.lane.tusimple import select_ego_lanes, tusimple_f1, tusimple_image_scores

__all__ = [
    "evaluate_culane_dirs",
    "evaluate_curvelanes_dirs",
    "evaluate_llamas_dirs",
    "evaluate_tusimple_files",
    "score_culane_dirs",
    "threshold_key",
]

_DROPPED_WARNING = ".*with fewer than 2 points dropped"


def _map_chunks(fn: Callable[[list[str]], object], chunks: list[list[str]], workers: int | None) -> Iterator:
    """``fn(chunk)`` for every chunk, in order, in ``workers`` spawned processes (1: in this process; ``None``: a
    pool only where the measured time of the first chunks says it pays)."""
    if workers == 1 or len(chunks) <= 1:
        yield from map(fn, chunks)
        return
    from drivemetrics._internal.pool import map_in_processes  # spawned workers, terminated on Ctrl-C

    yield from map_in_processes(fn, chunks, workers)


def _score_chunk(
    names: list[str],
    gt_dir: str,
    pred_dir: str,
    height: int,
    width: int,
    line_width: float,
    compat: Compat,
    device: str = "cpu",
) -> tuple[list[tuple[int, int, np.ndarray]], dict[str, int]]:
    """(scored GT lanes, scored predicted lanes, matched IoU per GT line) of every frame of a chunk read from its
    files, and the lanes of < 2 points the kernel dropped (default mode; the totals are warned about once).
    ``device``: where the chunk is matched (its files are read on the host)."""
    preds, preds_mask, target, target_mask = read_culane_frames(names, gt_dir, pred_dir)
    preds, preds_mask, target, target_mask = (t.to(device) for t in (preds, preds_mask, target, target_mask))
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=_DROPPED_WARNING)
        result = culane_matches(
            preds,
            target,
            height=height,
            width=width,
            line_width=line_width,
            preds_mask=preds_mask,
            target_mask=target_mask,
            compat=compat,
        )
    n_gt, n_pred = result["num_gt"].tolist(), result["num_pred"].tolist()
    lines = target_mask.sum(-1).tolist()
    matched = result["matched_iou"].cpu().numpy()
    dropped = {"pred": int(preds_mask.sum()) - sum(n_pred), "gt": sum(lines) - sum(n_gt)}
    frames = [(g, p, matched[i, :n]) for i, (g, p, n) in enumerate(zip(n_gt, n_pred, lines, strict=True))]
    return frames, dropped


def score_culane_dirs(
    pred_dir: str | Path,
    gt_dir: str | Path,
    names: list[str],
    height: int = 590,
    width: int = 1640,
    line_width: float = 30.0,
    compat: Compat = "default",
    chunk: int = 64,
    workers: int | None = 1,
    progress: bool | None = False,
    device: str = "cpu",
) -> dict[str, object]:
    """Match every listed frame: ``{"n_gt", "n_pred"}`` (``F`` int arrays of scored lanes), ``"matched"`` (list of
    per-GT-line matched IoU arrays, NaN = unmatched or dropped) and ``"dropped"`` (``{"pred", "gt"}`` lanes of < 2
    points dropped in the default mode). Files are read by :func:`drivemetrics.lane.io.read_culane_frames` and
    scored by :func:`drivemetrics.lane.culane.culane_matches` in either ``compat`` mode. ``names``: relative
    ``.lines.txt`` paths; a missing prediction file is a frame without lanes.
    ``progress``: a tqdm bar over the frames (``None``: only when stdout and stderr are terminals).
    ``device``: where the chunks are matched (a torch device name; the files are read on the host).
    """
    check_compat(compat)
    pred_dir, gt_dir = Path(pred_dir), Path(gt_dir)
    if not gt_dir.is_dir():
        raise FileNotFoundError(f"GT folder not found: {gt_dir}")
    if not pred_dir.is_dir():
        raise FileNotFoundError(f"prediction folder not found: {pred_dir}")
    if chunk < 1 or (workers is not None and workers < 1):
        raise ValueError(f"`chunk` and `workers` must be >= 1, got {chunk}, {workers}")
    if compat == "reference":  # OpenCV draws the lanes: checked before any file is read
        from drivemetrics.lane.culane_official import load_cv2

        load_cv2()
    chunks = [names[i : i + chunk] for i in range(0, len(names), chunk)]
    n_gt, n_pred, matched = [], [], []
    dropped = {"pred": 0, "gt": 0}
    # worker processes run torch on one thread each (the pool's initializer; a chunk's tensors are small)
    score = partial(
        _score_chunk,
        gt_dir=str(gt_dir),
        pred_dir=str(pred_dir),
        height=height,
        width=width,
        line_width=line_width,
        compat=compat,
        device=str(device),
    )
    parts = _map_chunks(score, chunks, workers)
    with progress_bar(len(names), "culane-eval", "image", progress) as bar:
        for part, part_dropped in parts:
            for g, p, m in part:
                n_gt.append(g)
                n_pred.append(p)
                matched.append(m)
            for key in part_dropped:
                dropped[key] += part_dropped[key]
            bar.update(len(part))
    _warn_dropped(dropped, stacklevel=3)
    return {
        "n_gt": np.array(n_gt, dtype=np.int64),
        "n_pred": np.array(n_pred, dtype=np.int64),
        "matched": matched,
        "dropped": dropped,
    }


def _warn_dropped(dropped: dict[str, int], stacklevel: int) -> None:
    if dropped["gt"] or dropped["pred"]:
        warnings.warn(
            f"{dropped['pred']} predicted and {dropped['gt']} GT lane(s) with fewer than 2 points dropped "
            "(compat='reference' scores them as lanes with IoU 0, as the official tool)",
            stacklevel=stacklevel,
        )


def _gather_scored(shard: Shard, scored: dict[str, Any], count: int) -> dict[str, Any]:
    """The :func:`score_culane_dirs` results of every rank's frames (``shard.take(names)``), in frame order."""
    counts = RaggedRows.from_frames(
        [[g, p] for g, p in zip(scored["n_gt"].tolist(), scored["n_pred"].tolist(), strict=True)], (2,), torch.int64
    )
    matched = RaggedRows.from_frames([np.asarray(m, dtype=np.float64) for m in scored["matched"]], (), torch.float64)
    frames = shard.gather_frames(shard.indices(count), counts=counts, matched=matched)
    both = frames.fields["counts"].rows.cpu().numpy()
    dropped = shard.sum(torch.tensor([scored["dropped"]["pred"], scored["dropped"]["gt"]])).tolist()
    return {
        "n_gt": both[:, 0].copy(),
        "n_pred": both[:, 1].copy(),
        "matched": [m.cpu().numpy() for m in frames.fields["matched"].split()],
        "dropped": {"pred": dropped[0], "gt": dropped[1]},
    }


def _totals(n_gt: np.ndarray, n_pred: np.ndarray, matched: list[np.ndarray], threshold: float) -> dict[str, object]:
    tp = int(sum(int((m > threshold).sum()) for m in matched))
    fp, fn = int(n_pred.sum()) - tp, int(n_gt.sum()) - tp
    scores = precision_recall_f1(torch.tensor(tp), torch.tensor(fp), torch.tensor(fn))
    return {**{k: float(v) for k, v in scores.items()}, "tp": tp, "fp": fp, "fn": fn}


def threshold_key(t: float) -> str:
    """The result key of an IoU threshold (``0.50``), as the per-threshold tables spell it."""
    return f"{t:.2f}"


def evaluate_culane_dirs(
    pred_dir: str | Path,
    gt_dir: str | Path,
    names: list[str] | None = None,
    height: int = 590,
    width: int = 1640,
    line_width: float = 30.0,
    iou_threshold: float | Sequence[float] = 0.5,
    chunk: int = 64,
    compat: Compat = "default",
    workers: int | None = 1,
    per_image: bool = False,
    categories: dict[str, list[str]] | None = None,
    progress: bool | None = False,
    device: str = "cpu",
) -> dict[str, object]:
    """CULane precision / recall / F1 of a folder of ``.lines.txt`` predictions against a GT folder.

    Args:
        pred_dir, gt_dir: folders holding ``<name>.lines.txt`` files (sub-folders allowed).
        names: list entries (``/driver_x/y/00000.jpg``) or relative ``.lines.txt`` paths of the GT files to score
            (default: every ``*.lines.txt`` under ``gt_dir``, or the union of ``categories``); a missing prediction
            file counts as no lanes.
        height, width, line_width: as :func:`culane_matches`.
        iou_threshold: one threshold or several (scored in one pass: the matching does not depend on it).
        chunk: frames per batch (bounds memory); workers: processes reading and scoring files (``None``: one
            process unless the measured time of the first chunks says a pool pays).
        compat: ``"default"`` or ``"reference"`` (the official C++ tool's numbers).
        progress: a tqdm bar over the frames on stderr (``None``: only when stdout and stderr are terminals).
        per_image: add ``"per_image": {frame: {"tp", "fp", "fn"}}`` at the first threshold; ``frame`` is the name
            as given (list entry or path under ``gt_dir``) without extension.
        categories: ``{row name: names}``, e.g. the CULane test splits; each row is scored from the same matches.
        device: where the frames are matched (a torch device name such as ``"cuda"``; files are read on the host).

    Returns:
        ``{"precision", "recall", "f1", "tp", "fp", "fn"}`` at the first threshold, ``"images"``,
        ``"iou_thresholds"``, ``"by_threshold": {"0.50": {...}, ...}``, the mean F1 over the thresholds when there
        are several (``"mean_f1"``; the CLI calls it ``mF1`` for :data:`IOU_RANGE`), ``"dropped_lanes"`` (default
        mode), and
        ``"per_image"`` / ``"categories"``.
    """
    thresholds = (
        [float(iou_threshold)] if isinstance(iou_threshold, (int, float)) else [float(t) for t in iou_threshold]
    )
    if not thresholds or not all(0 <= t < 1 for t in thresholds):
        raise ValueError(f"`iou_threshold` must be one or more values in [0, 1), got {iou_threshold}")
    check_canvas(height, width, "`height` x `width` (--height, --width)", line_width)
    gt_dir = Path(gt_dir)
    if names is None and categories:
        names = list(dict.fromkeys(n for rows in categories.values() for n in rows))
    if names is None:
        if not gt_dir.is_dir():
            raise FileNotFoundError(f"GT folder not found: {gt_dir}")
        names = sorted(p.relative_to(gt_dir).as_posix() for p in gt_dir.rglob("*.lines.txt"))
    if not names:
        raise ValueError(f"no `.lines.txt` files to evaluate under {gt_dir}")
    frames: dict[str, str] = {}  # lane file -> frame name as given (the first spelling of a file wins)
    for n in names:
        frames.setdefault(lane_name(n), frame_key(n))
    names = list(frames)
    shard = current_shard()  # under torchrun: this rank matches its shard of the frames, then all are gathered
    with warnings.catch_warnings():
        if shard.world > 1:  # one warning with the totals, from rank 0
            warnings.filterwarnings("ignore", message=_DROPPED_WARNING)
        shown = progress if shard.is_main else False  # rank 0 shows its shard's progress
        scored = score_culane_dirs(
            pred_dir, gt_dir, shard.take(names), height, width, line_width, compat, chunk, workers, shown, device
        )
    if shard.world > 1:
        scored = _gather_scored(shard, scored, len(names))
        if shard.is_main:
            _warn_dropped(scored["dropped"], stacklevel=2)
    n_gt, n_pred, matched = scored["n_gt"], scored["n_pred"], scored["matched"]

    def table(select: np.ndarray | None = None) -> dict[str, object]:
        g, p = (n_gt, n_pred) if select is None else (n_gt[select], n_pred[select])
        m = matched if select is None else [matched[i] for i in select]
        rows = {threshold_key(t): _totals(g, p, m, t) for t in thresholds}
        out: dict[str, object] = {"images": len(g), "by_threshold": rows}
        if len(thresholds) > 1:
            out["mean_f1"] = float(np.mean([r["f1"] for r in rows.values()]))
        return out

    overall = table()
    result: dict[str, object] = {
        **overall["by_threshold"][threshold_key(thresholds[0])],
        "images": len(names),
        "iou_thresholds": thresholds,
        **{k: v for k, v in overall.items() if k != "images"},
    }
    if compat == "default":
        result["dropped_lanes"] = scored["dropped"]
    if categories:
        index = {n: i for i, n in enumerate(names)}
        result["categories"] = {
            row: table(np.array([index[lane_name(n)] for n in dict.fromkeys(rows)], dtype=np.int64))
            for row, rows in categories.items()
        }
    if per_image:
        t0 = thresholds[0]
        result["per_image"] = {}
        for name, g, p, m in zip(names, n_gt, n_pred, matched, strict=True):
            tp = int((m > t0).sum())
            result["per_image"][frames[name]] = {"tp": tp, "fp": int(p) - tp, "fn": int(g) - tp}
    return result


def evaluate_tusimple_files(
    pred_path: str | Path,
    gt_path: str | Path,
    ego_only: bool = False,
    image_width: float = 1280.0,
    compat: Compat = "default",
    progress: bool | None = False,
    device: str | torch.device = "cpu",
) -> tuple[dict[str, float], list[dict[str, object]]]:
    """Score a TuSimple prediction file against a label file (``LaneEval.bench_one_submit`` semantics).

    Every label ``raw_file`` needs exactly one prediction with the same ``raw_file`` (order may differ) and the
    same number of values per lane as the label's ``h_samples``. ``progress``: a tqdm bar over the three stages
    (read the labels, read the predictions, score every image in one batch) on stderr (``None``: only when stdout
    and stderr are terminals). ``device``: where the images are scored (the files are read on the host; the
    scores come back as Python floats).

    Returns:
        ``({"accuracy", "fp", "fn", "f1"}, per_image)`` with fractions, and per image
        ``{"raw_file", "accuracy", "fp", "fn"}``.
    """
    if not (isinstance(image_width, (int, float)) and 0 < image_width < float("inf")):
        raise ValueError(f"`image_width` (--image-width) must be a positive finite number of pixels, got {image_width}")
    with progress_bar(3, "tusimple-eval", "stage", progress) as bar:
        bar.set_postfix_str("reading labels")
        gt = read_tusimple_json(gt_path, require_h_samples=True)
        bar.update()
        bar.set_postfix_str("reading predictions")
        rows = None if gt.h_samples is None else gt.h_samples.shape[1]
        pred = read_tusimple_json(pred_path, require_h_samples=False, max_points=rows)
        bar.update()
        bar.set_postfix_str(f"scoring {len(gt.raw_files)} images")
        result = _score_tusimple_records(gt, pred, pred_path, gt_path, ego_only, image_width, compat, device)
        bar.update()
    return result


def _score_tusimple_records(
    gt: TuSimpleRecords,
    pred: TuSimpleRecords,
    pred_path: str | Path,
    gt_path: str | Path,
    ego_only: bool,
    image_width: float,
    compat: Compat,
    device: str | torch.device = "cpu",
) -> tuple[dict[str, float], list[dict[str, object]]]:
    """The body of :func:`evaluate_tusimple_files` once both files are read."""
    if gt.h_samples is None:  # pragma: no cover - guaranteed by require_h_samples
        raise ValueError(f"{gt_path}: labels need `h_samples`")
    if len(set(gt.raw_files)) != len(gt.raw_files):
        raise ValueError(f"{gt_path}: duplicate `raw_file` entries")
    index = {}
    for i, name in enumerate(pred.raw_files):
        if name in index:
            raise ValueError(f"{pred_path}:{pred.line_numbers[i]}: duplicate prediction for `{name}`")
        index[name] = i
    missing = [name for name in gt.raw_files if name not in index]
    if missing:
        raise ValueError(f"{pred_path}: no prediction for {len(missing)} label image(s), e.g. `{missing[0]}`")
    if len(pred.raw_files) != len(gt.raw_files):
        extra = sorted(set(pred.raw_files) - set(gt.raw_files))
        raise ValueError(f"{pred_path}: predictions for images that are not in the labels, e.g. `{extra[0]}`")
    order = torch.tensor([index[name] for name in gt.raw_files])
    n_rows = (~torch.isnan(gt.h_samples)).sum(1)
    pred_lanes, pred_mask = pred.lanes[order], pred.lane_mask[order]
    wrong_length = pred_mask & (pred.lane_lengths[order] != n_rows[:, None])
    if bool(wrong_length.any()):
        b, k = (int(v) for v in wrong_length.nonzero()[0])
        line = pred.line_numbers[int(order[b])]
        length = int(pred.lane_lengths[order][b, k])
        raise ValueError(
            f"{pred_path}:{line}: lanes[{k}] has {length} values but the label's `h_samples` has {int(n_rows[b])} rows"
        )
    n = gt.lanes.shape[2]
    if pred_lanes.shape[2] < n:
        pad = torch.full((*pred_lanes.shape[:2], n - pred_lanes.shape[2]), torch.nan, dtype=torch.float64)
        pred_lanes = torch.cat([pred_lanes, pad], dim=2)
    pred_lanes = pred_lanes[:, :, :n]
    run_time = pred.run_time[order].to(device) if pred.run_time is not None else None
    pred_lanes, pred_mask = pred_lanes.to(device), pred_mask.to(device)
    gt_lanes, gt_mask, h_samples = gt.lanes.to(device), gt.lane_mask.to(device), gt.h_samples.to(device)
    if ego_only:
        pred_mask = select_ego_lanes(pred_lanes, pred_mask, image_width)
        gt_mask = select_ego_lanes(gt_lanes, gt_mask, image_width)
    scores = tusimple_image_scores(
        pred_lanes,
        gt_lanes,
        h_samples=h_samples,
        run_time=run_time,
        preds_mask=pred_mask,
        target_mask=gt_mask,
        compat=compat,
    )
    scores = {key: value.cpu() for key, value in scores.items()}  # one read-back of the device
    per_image = [
        {"raw_file": name, "accuracy": float(a), "fp": float(p), "fn": float(f)}
        for name, a, p, f in zip(gt.raw_files, scores["accuracy"], scores["fp"], scores["fn"], strict=True)
    ]
    fp, fn = scores["fp"].mean(), scores["fn"].mean()
    overall = {
        "accuracy": float(scores["accuracy"].mean()),
        "fp": float(fp),
        "fn": float(fn),
        "f1": float(tusimple_f1(fp, fn)),
    }
    return overall, per_image
