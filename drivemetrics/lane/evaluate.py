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


# ------------------------------------------------------------------------------------------------------------ LLAMAS

_LLAMAS_SHORT = ".*with fewer than 2 distinct points dropped"


def _score_llamas_chunk(
    keys: list[str], labels_dir: str, pred_dir: str, line_width: float, ious: tuple[Any, ...], compat: Compat
) -> tuple[np.ndarray, list[str]]:
    """``(F, 2 + 10 * len(ious))`` int rows ``[n_gt, n_pred, TP at IoU 0.50 .. 0.95 per IoU kind]`` of a chunk of
    LLAMAS frames, and the default mode's notes."""
    from drivemetrics.lane.culane import IOU_RANGE, counts_from_matches
    from drivemetrics.lane.io import pad_lanes, read_culane_file, read_llamas_label
    from drivemetrics.lane.llamas import llamas_label_lanes, llamas_matches

    gts, preds, notes = [], [], []
    for key in keys:
        label_path = Path(labels_dir, key + ".json")
        lanes, label_notes = llamas_label_lanes(read_llamas_label(label_path), compat=compat, where=str(label_path))
        gts.append(lanes)
        notes.extend(label_notes)
        pred_path = Path(pred_dir, key + ".lines.txt")
        if not pred_path.is_file():
            raise FileNotFoundError(
                f"LLAMAS prediction not found: {pred_path} (the official evaluator raises too; write an empty file "
                "for a frame without lanes)"
            )
        lines = read_culane_file(pred_path)
        for number, lane in enumerate(lines, start=1):
            if len(lane) >= 2 and not (lane[1:] != lane[:-1]).any():
                if compat == "reference":
                    raise ValueError(
                        f"{pred_path}:{number}: all points of the lane are equal (the official splprep raises "
                        "`1 <= k= 0 <=5 must hold`)"
                    )
                notes.append(f"{pred_path}:{number}: all points equal, lane dropped")
        preds.append(lines)
    rows = [np.array([[len(g), 0] for g in gts], dtype=np.int64)]
    pred_t, pred_m = pad_lanes(preds)
    gt_t, gt_m = pad_lanes(gts)
    for kind in ious:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=_LLAMAS_SHORT)
            m = llamas_matches(
                pred_t, gt_t, preds_mask=pred_m, target_mask=gt_m, line_width=line_width, iou=kind, compat=compat
            )
        rows[0][:, 1] = m["num_pred"].cpu().numpy()
        rows.append(torch.stack([counts_from_matches(m, t)["tp"] for t in IOU_RANGE], -1).cpu().numpy())
    return np.concatenate(rows, axis=1), notes


def _gather_rows(shard: Shard, rows: np.ndarray, count: int) -> np.ndarray:
    """Every rank's per-frame int rows (``shard.take`` order) in frame order."""
    ragged = RaggedRows.from_frames(list(rows), (rows.shape[1],), torch.int64)  # one row per frame
    frames = shard.gather_frames(shard.indices(count), rows=ragged)
    return frames.fields["rows"].rows.cpu().numpy().reshape(count, rows.shape[1])


def _score_frames(
    fn: Callable[[list[str]], tuple[np.ndarray, list[str]]],
    names: list[str],
    width: int,
    chunk: int,
    workers: int | None,
    progress: bool | None,
    desc: str,
) -> tuple[np.ndarray, list[str]]:
    """Per-frame rows of ``names`` (this rank's shard under torchrun, gathered), chunk by chunk, with progress."""
    if chunk < 1 or (workers is not None and workers < 1):
        raise ValueError(f"`chunk` and `workers` must be >= 1, got {chunk}, {workers}")
    shard = current_shard()
    mine = shard.take(names)
    chunks = [mine[i : i + chunk] for i in range(0, len(mine), chunk)]
    parts, notes = [], []
    with progress_bar(len(mine), desc, "frame", progress if shard.is_main else False) as bar:
        for part, part_notes in _map_chunks(fn, chunks, workers):
            parts.append(part)
            notes.extend(part_notes)
            bar.update(len(part))
    rows = np.concatenate(parts) if parts else np.zeros((0, width), dtype=np.int64)
    if shard.world > 1:
        rows = _gather_rows(shard, rows, len(names))
    return rows, notes


def _prf(tp: int, fp: int, fn: int) -> dict[str, object]:
    scores = precision_recall_f1(torch.tensor(tp), torch.tensor(fp), torch.tensor(fn))
    return {**{k: float(v) for k, v in scores.items()}, "tp": tp, "fp": fp, "fn": fn}


def evaluate_llamas_dirs(
    pred_dir: str | Path,
    labels_dir: str | Path,
    *,
    line_width: float = 30.0,
    iou: str = "pixel",
    compat: Compat = "default",
    chunk: int = 64,
    workers: int | None = 1,
    per_image: bool = False,
    progress: bool | None = False,
) -> dict[str, object]:
    """LLAMAS precision / recall / F1 (the CULane metric) of a folder of ``.lines.txt`` predictions.

    Args:
        pred_dir: ``<seq>/<name>.lines.txt`` per label (a missing file raises ``FileNotFoundError``, as the
            official evaluator; an empty file is a frame without lanes).
        labels_dir: the labels' folder (``labels/valid``): every ``*.json`` below it is a frame, keyed
            ``<seq>/<name>`` (:func:`drivemetrics.lane.io.read_llamas_keys`).
        line_width: drawn lane width (30).
        iou: ``"pixel"`` (official), ``"shapely"`` (the evaluator's unofficial IoU) or ``"both"``.
        compat: ``"default"`` or ``"reference"`` (:mod:`drivemetrics.lane.llamas`).
        chunk, workers, progress: frames per batch, processes, a tqdm bar (as :func:`evaluate_culane_dirs`).
        per_image: add ``"per_frame": {key: {"tp", "fp", "fn"}}`` (pixel IoU; with ``"unofficial"`` counts when
            the shapely IoU is scored too).

    Returns:
        ``{"pooled": {precision, recall, f1, tp, fp, fn}, "multi_threshold": {"mF1", "F1@50", "F1@75",
        "per_threshold": [...]}, "images"}`` for the first IoU kind, ``"pooled_unofficial"`` when the shapely IoU
        is scored, ``"notes"`` (default mode: what was handled where the official code crashes).
    """
    from drivemetrics.lane.culane import IOU_RANGE
    from drivemetrics.lane.io import read_llamas_keys
    from drivemetrics.lane.llamas import IOU_KINDS

    check_compat(compat)
    kinds = ("pixel", "shapely") if iou == "both" else (iou,)
    if not all(k in IOU_KINDS for k in kinds):
        raise ValueError(f"`iou` must be 'pixel', 'shapely' or 'both', got {iou!r}")
    pred_dir, labels_dir = Path(pred_dir), Path(labels_dir)
    if not pred_dir.is_dir():
        raise FileNotFoundError(f"prediction folder not found: {pred_dir}")
    keys = read_llamas_keys(labels_dir)
    if "pixel" in kinds:
        from drivemetrics.lane.culane_official import load_cv2

        load_cv2("the LLAMAS pixel IoU")
    if "shapely" in kinds:
        from drivemetrics._internal.extras import require

        require("llamas", "shapely.geometry", "llamas-eval --iou shapely")
    score = partial(
        _score_llamas_chunk,
        labels_dir=str(labels_dir),
        pred_dir=str(pred_dir),
        line_width=line_width,
        ious=kinds,
        compat=compat,
    )
    rows, notes = _score_frames(score, keys, 2 + 10 * len(kinds), chunk, workers, progress, "llamas-eval")
    n_gt, n_pred = int(rows[:, 0].sum()), int(rows[:, 1].sum())

    def block(k: int) -> tuple[dict[str, object], dict[str, object]]:
        tps = rows[:, 2 + 10 * k : 12 + 10 * k].sum(0)
        per = [
            {"iou_threshold": t, **_prf(int(tp), n_pred - int(tp), n_gt - int(tp))}
            for t, tp in zip(IOU_RANGE, tps, strict=True)
        ]
        multi = {
            "mF1": float(np.mean([p["f1"] for p in per])),
            "F1@50": per[0]["f1"],
            "F1@75": per[5]["f1"],
            "per_threshold": per,
        }
        return {k2: per[0][k2] for k2 in ("precision", "recall", "f1", "tp", "fp", "fn")}, multi

    result: dict[str, object] = {"images": len(keys)}
    for k, kind in enumerate(kinds):
        pooled, multi = block(k)
        name = "pooled" if k == 0 else "pooled_unofficial"
        if kind == "shapely" and k == 0:
            result["iou"] = "shapely"
        result[name] = pooled
        result["multi_threshold" if k == 0 else "multi_threshold_unofficial"] = multi
    if per_image:
        frames: dict[str, dict[str, object]] = {}
        for key, row in zip(keys, rows.tolist(), strict=True):
            tp = row[2]
            entry: dict[str, object] = {"tp": tp, "fp": row[1] - tp, "fn": row[0] - tp}
            if len(kinds) == 2:
                tp2 = row[12]
                entry["unofficial"] = {"tp": tp2, "fp": row[1] - tp2, "fn": row[0] - tp2}
            frames[key] = entry
        result["per_frame"] = frames
    if compat == "default":
        result["notes"] = notes
        if notes:
            warnings.warn(
                f"{len(notes)} case(s) where the official evaluator crashes were handled: {notes[0]}"
                + (" ..." if len(notes) > 1 else ""),
                stacklevel=2,
            )
    return result


# -------------------------------------------------------------------------------------------------------- CurveLanes


def _score_curvelanes_chunk(
    names: list[str],
    valid_dir: str,
    pred_dir: str,
    sizes: dict[str, tuple[float, float]],
    thresholds: tuple[float, ...],
    compat: Compat,
) -> tuple[np.ndarray, list[str]]:
    """``(F, 1 + 2 T)`` int rows ``[n_gt, hits per threshold, n_pred per threshold]`` and notes."""
    from drivemetrics.lane.curvelanes import curvelanes_matches
    from drivemetrics.lane.io import pad_lanes, read_curvelanes_label, read_curvelanes_pred

    gts, preds, scores, p_sizes, notes = [], [], [], [], []
    for name in names:
        label = Path(valid_dir, "labels", name + ".lines.json")
        lanes, n_empty = read_curvelanes_label(label, compat)
        if n_empty and compat == "default":
            notes.append(f"{label}: {n_empty} empty lane(s) skipped")
        gts.append(lanes)
        path = Path(pred_dir, name + ".lines.json")
        if not path.is_file():
            raise FileNotFoundError(f'CurveLanes prediction not found: {path} (write {{"Lines": []}} for none)')
        p, s, size = read_curvelanes_pred(path)
        kept = [len(lane) > 0 and not v <= min(thresholds) for lane, v in zip(p, s, strict=True)]
        if compat == "reference" and lanes and any(kept):  # the official calc_iou runs: name the file where its
            # spline turns a zero chord into NaN (a prediction only when some threshold keeps it)
            for where, frame_lanes, used in ((label, lanes, [True] * len(lanes)), (path, p, kept)):
                for k, (lane, use) in enumerate(zip(frame_lanes, used, strict=True)):
                    if use and len(lane) >= 3 and not (lane[1:] != lane[:-1]).any(axis=1).all():
                        raise ValueError(
                            f"{where}: Lines[{k}] repeats a point (chord length 0: the official spline makes NaN "
                            "and calc_iou raises `cannot convert float NaN to integer`)"
                        )
        if size is None:
            if compat == "reference":
                raise ValueError(f"{path}: no `Shape` (the metric reads the prediction's size from it)")
            size = sizes[name]
        preds.append(p)
        scores.append(s)
        p_sizes.append(size)
    n_lanes = max([len(p) for p in preds] + [1])
    score_t = torch.full((len(names), n_lanes), torch.nan, dtype=torch.float64)
    mask = torch.zeros((len(names), n_lanes), dtype=torch.bool)
    for i, (p, s) in enumerate(zip(preds, scores, strict=True)):
        score_t[i, : len(s)] = torch.tensor(s, dtype=torch.float64)
        mask[i, : len(p)] = torch.tensor([len(lane) > 0 for lane in p], dtype=torch.bool)
    m = curvelanes_matches(
        pad_lanes(preds)[0],
        pad_lanes(gts)[0],
        image_size=torch.tensor([sizes[n] for n in names], dtype=torch.float64),
        preds_size=torch.tensor(p_sizes, dtype=torch.float64),
        scores=score_t,
        preds_mask=mask,
        score_thresholds=thresholds,
        compat=compat,
    )
    rows = np.concatenate([m["num_gt"][:, None].cpu().numpy(), m["hits"].cpu().numpy(), m["num_pred"].cpu().numpy()], 1)
    return rows, notes


def evaluate_curvelanes_dirs(
    pred_dir: str | Path,
    valid_dir: str | Path,
    *,
    image_size: tuple[float, float] | None = None,
    score_threshold: float = 0.5,
    score_thresholds: Sequence[float] | None = None,
    compat: Compat = "default",
    chunk: int = 64,
    workers: int | None = 1,
    per_image: bool = False,
    progress: bool | None = False,
) -> dict[str, object]:
    """CurveLanes precision / recall / F1 (the vega lane metric) of a folder of ``<name>.lines.json`` predictions.

    Args:
        pred_dir: ``<name>.lines.json`` per frame (vega's ``predict_spec``; a missing file raises).
        valid_dir: the split folder: ``valid.txt`` (``images/<name>.jpg``) or ``labels/*.lines.json``; the image
            sizes from ``images/<name>.jpg`` headers, else ``image_sizes.json``, else ``image_size``.
        score_threshold: the threshold of ``"pooled"`` (0.5).
        score_thresholds: the thresholds of ``"per_score_threshold"`` and ``"vega_max_f1"`` (0.1, ..., 0.9).
        compat: ``"default"`` or ``"reference"`` (:mod:`drivemetrics.lane.curvelanes`).
        chunk, workers, progress: frames per batch, processes, a tqdm bar.
        per_image: add ``"per_frame": {name: {"hit", "pr_num", "gt_num"}}`` at ``score_threshold``.

    Returns:
        ``{"pooled": {precision, recall, f1, hit_num, pr_num, gt_num}, "per_score_threshold": {"0.1": ...},
        "vega_max_f1", "vega_max_f1_threshold", "images"}`` (and ``"per_frame"``, ``"notes"``).
    """
    from drivemetrics.lane.curvelanes import SCORE_THRESHOLDS, curvelanes_scores
    from drivemetrics.lane.io import curvelanes_image_sizes, read_curvelanes_list

    check_compat(compat)
    listed = tuple(float(t) for t in (SCORE_THRESHOLDS if score_thresholds is None else score_thresholds))
    thresholds = tuple(dict.fromkeys((float(score_threshold), *listed)))
    if not all(0 <= t <= 1 for t in thresholds):
        raise ValueError(f"score thresholds must lie in [0, 1], got {thresholds}")
    pred_dir, valid_dir = Path(pred_dir), Path(valid_dir)
    if not valid_dir.is_dir():
        raise FileNotFoundError(f"CurveLanes split folder not found: {valid_dir}")
    if not pred_dir.is_dir():
        raise FileNotFoundError(f"prediction folder not found: {pred_dir}")
    from drivemetrics.lane.culane_official import load_cv2

    load_cv2("the CurveLanes lane metric")
    names = read_curvelanes_list(valid_dir)
    sizes = curvelanes_image_sizes(valid_dir, names, image_size)
    score = partial(
        _score_curvelanes_chunk,
        valid_dir=str(valid_dir),
        pred_dir=str(pred_dir),
        sizes=sizes,
        thresholds=thresholds,
        compat=compat,
    )
    t_count = len(thresholds)
    rows, notes = _score_frames(score, names, 1 + 2 * t_count, chunk, workers, progress, "curvelanes-eval")
    gt = torch.tensor(int(rows[:, 0].sum()))
    hits = torch.from_numpy(rows[:, 1 : 1 + t_count].sum(0))
    n_pred = torch.from_numpy(rows[:, 1 + t_count :].sum(0))
    s = curvelanes_scores(hits, n_pred, gt, compat=compat)

    def entry(j: int) -> dict[str, object]:
        return {
            "precision": float(s["precision"][j]),
            "recall": float(s["recall"][j]),
            "f1": float(s["f1"][j]),
            "hit_num": int(hits[j]),
            "pr_num": int(n_pred[j]),
            "gt_num": int(gt),
        }

    per = {f"{t:g}": entry(thresholds.index(t)) for t in listed}
    best = max(listed, key=lambda t: (per[f"{t:g}"]["f1"], -t))  # vega keeps the first of equal maxima
    result: dict[str, object] = {
        "images": len(names),
        "score_threshold": float(score_threshold),
        "pooled": entry(0),
        "per_score_threshold": per,
        "vega_max_f1": per[f"{best:g}"]["f1"],
        "vega_max_f1_threshold": best,
    }
    if per_image:
        result["per_frame"] = {
            name: {"hit": int(r[1]), "pr_num": int(r[1 + t_count]), "gt_num": int(r[0])}
            for name, r in zip(names, rows.tolist(), strict=True)
        }
    if compat == "default":
        result["notes"] = notes
    return result
