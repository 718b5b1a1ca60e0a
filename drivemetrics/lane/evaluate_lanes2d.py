"""LLAMAS and CurveLanes folders against their ground truth (``llamas-eval``, ``curvelanes-eval``), on numpy.

The frames are read and scored chunk by chunk on numpy arrays with OpenCV and SciPy
(:mod:`drivemetrics.lane.llamas_scoring`, :mod:`drivemetrics.lane.curvelanes_scoring`): torch is never imported
on the CPU, so a command starts in a fraction of a second and its worker processes fork
(:func:`drivemetrics._internal.pool.map_in_processes`). With ``device`` (a torch device) the array math of the IoUs
runs there (the lanes are still drawn by OpenCV on the host: it is the official rasteriser); under torchrun each
rank scores its shard of the frames and the per-frame rows are gathered (torch is imported by the process group
set-up then). :mod:`drivemetrics.lane.evaluate` re-exports both functions.
"""

from __future__ import annotations

import math
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from drivemetrics._internal.compat import Compat, check_compat
from drivemetrics._internal.gc_pause import gc_paused
from drivemetrics._internal.progress import progress_bar

if TYPE_CHECKING:
    from drivemetrics._internal.distributed import Shard

#: ``curvelanes-eval --protocol``: CondLaneNet's F1 at score > 0.5, vega's max F1 over the score thresholds (the same
#: counts), or also UFLDv2's C++ variant.
CurveLanesProtocol = Literal["condlanenet", "vega", "ufldv2"]
CURVELANES_PROTOCOLS: tuple[CurveLanesProtocol, ...] = ("condlanenet", "vega", "ufldv2")

__all__ = [
    "CURVELANES_PROTOCOLS",
    "CurveLanesProtocol",
    "evaluate_curvelanes_dirs",
    "evaluate_llamas_dirs",
    "rank_is_main",
    "score_frames",
]


def _rank_shard() -> Shard | None:
    """This rank's shard under torchrun, ``None`` in one process (the distributed module, and torch, are imported
    only by the command's process group set-up)."""
    module = sys.modules.get("drivemetrics._internal.distributed")
    return None if module is None else module.current_shard()


def rank_is_main() -> bool:
    """Whether this process reports: one process, or rank 0 under torchrun."""
    shard = _rank_shard()
    return shard is None or shard.is_main


def _map_chunks(fn: Callable[[list[str]], Any], chunks: list[list[str]], workers: int | None) -> Iterator[Any]:
    """``fn(chunk)`` for every chunk, in order: in this process (``workers == 1``) or in a pool (forked where no
    torch is loaded; ``None``: where the measured time of the first chunks says it pays)."""
    if workers == 1 or len(chunks) <= 1:
        yield from map(fn, chunks)
        return
    from drivemetrics._internal.pool import map_in_processes

    yield from map_in_processes(fn, chunks, workers)


def _gather_rows(shard: Shard, rows: np.ndarray, count: int) -> np.ndarray:
    """Every rank's per-frame int rows (``shard.take`` order) in frame order."""
    import torch

    from drivemetrics._internal.ragged import RaggedRows

    ragged = RaggedRows.from_frames(list(rows), (rows.shape[1],), torch.int64)  # one row per frame
    frames = shard.gather_frames(shard.indices(count), rows=ragged)
    return frames.fields["rows"].rows.cpu().numpy().reshape(count, rows.shape[1])


def score_frames(
    fn: Callable[[list[str]], tuple[np.ndarray, list[str]]],
    names: list[str],
    width: int,
    chunk: int,
    workers: int | None,
    progress: bool | None,
    desc: str,
) -> tuple[np.ndarray, list[str]]:
    """Per-frame int rows (``width`` columns) of ``names`` and the notes of ``fn``, chunk by chunk, with progress;
    under torchrun this rank's shard, gathered in frame order."""
    if chunk < 1 or (workers is not None and workers < 1):
        raise ValueError(f"`chunk` and `workers` must be >= 1, got {chunk}, {workers}")
    shard = _rank_shard()
    mine = names if shard is None else shard.take(names)
    chunks = [mine[i : i + chunk] for i in range(0, len(mine), chunk)]
    parts, notes = [], []
    main = shard is None or shard.is_main
    with progress_bar(len(mine), desc, "frame", progress if main else False) as bar:
        for part, part_notes in _map_chunks(fn, chunks, workers):
            parts.append(part)
            notes.extend(part_notes)
            bar.update(len(part))
    rows = np.concatenate(parts) if parts else np.zeros((0, width), dtype=np.int64)
    if shard is not None and shard.world > 1:
        rows = _gather_rows(shard, rows, len(names))
    return rows, notes


def _safe_ratio(num: float, den: float) -> float:
    return num / den if den > 0 else 0.0


def _prf(tp: int, fp: int, fn: int) -> dict[str, object]:
    """Precision, recall, F1 (0 when undefined) in float64, the same operations as
    :func:`drivemetrics._internal.compute.precision_recall_f1`, and the counts."""
    precision = _safe_ratio(float(tp), float(tp + fp))
    recall = _safe_ratio(float(tp), float(tp + fn))
    f1 = _safe_ratio(2 * precision * recall, precision + recall)
    return {"precision": precision, "recall": recall, "f1": f1, "tp": tp, "fp": fp, "fn": fn}


def _check_device(device: str | None) -> Any:
    """``None`` (numpy) or the torch device ``device`` names (checked before any work)."""
    if device is None:
        return None
    import torch

    from drivemetrics._internal.options import check_device

    check_device(str(device))
    return torch.device(device)


# ------------------------------------------------------------------------------------------------------------ LLAMAS


def _distinct_points(lane: np.ndarray) -> int:
    """Points that differ from their predecessor, plus the first."""
    return 1 + int((lane[1:] != lane[:-1]).any(axis=1).sum()) if len(lane) else 0


def _score_llamas_chunk(keys: list[str], *args: Any, **kwargs: Any) -> tuple[np.ndarray, list[str]]:
    """:func:`_llamas_chunk_rows` without automatic garbage collection (each frame makes many small dicts and
    arrays, none in a cycle: the collector's passes over them cost a few per cent of the time)."""
    with gc_paused():
        return _llamas_chunk_rows(keys, *args, **kwargs)


def _llamas_chunk_rows(
    keys: list[str],
    labels_dir: str,
    pred_dir: str,
    line_width: float,
    ious: tuple[Any, ...],
    compat: Compat,
    device: Any = None,
) -> tuple[np.ndarray, list[str]]:
    """``(F, 2 + 10 * len(ious))`` int rows ``[n_gt, n_pred, TP at IoU 0.50 .. 0.95 per IoU kind]`` of a chunk of
    LLAMAS frames, and the default mode's notes."""
    from drivemetrics.lane.io import read_culane_file, read_llamas_label
    from drivemetrics.lane.llamas_scoring import IOU_RANGE, frame_matched_ious, llamas_labels_lanes

    thresholds = np.array(IOU_RANGE)
    rows = np.zeros((len(keys), 2 + 10 * len(ious)), dtype=np.int64)
    notes: list[str] = []
    # the chunk's labels first, their lanes built in one pass (as the official evaluator loads every label before
    # any prediction, a bad label is named before a bad prediction file)
    label_paths = [Path(labels_dir, key + ".json") for key in keys]
    gt_frames = llamas_labels_lanes(
        [read_llamas_label(p) for p in label_paths], compat=compat, wheres=[str(p) for p in label_paths]
    )
    for f, (key, (gts, label_notes)) in enumerate(zip(keys, gt_frames, strict=True)):
        notes.extend(label_notes)
        pred_path = Path(pred_dir, key + ".lines.txt")
        try:
            lanes = read_culane_file(pred_path)
        except FileNotFoundError:
            raise FileNotFoundError(
                f"LLAMAS prediction not found: {pred_path} (the official evaluator raises too; write an empty file "
                "for a frame without lanes)"
            ) from None
        preds = []
        for number, lane in enumerate(lanes, start=1):
            if len(lane) < 2:  # load_prediction: lines of < 2 points are no lanes
                continue
            if _distinct_points(lane) < 2:
                if compat == "reference":
                    raise ValueError(
                        f"{pred_path}:{number}: all points of the lane are equal (the official splprep raises "
                        "`1 <= k= 0 <=5 must hold`)"
                    )
                notes.append(f"{pred_path}:{number}: all points equal, lane dropped")
                continue
            preds.append(lane)
        rows[f, 0], rows[f, 1] = len(gts), len(preds)
        for k, kind in enumerate(ious):
            matched = frame_matched_ious(gts, preds, line_width, kind, device, where=str(pred_path))
            with np.errstate(invalid="ignore"):
                rows[f, 2 + 10 * k : 12 + 10 * k] = (matched[None, :] > thresholds[:, None]).sum(1)
    return rows, notes


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
    device: str | None = None,
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
        chunk, workers, progress: frames per batch, processes, a tqdm bar (as
            :func:`drivemetrics.lane.evaluate.evaluate_culane_dirs`).
        per_image: add ``"per_frame": {key: {"tp", "fp", "fn"}}`` (pixel IoU; with ``"unofficial"`` counts when
            the shapely IoU is scored too).
        device: a torch device for the pixel IoU's intersections (None: numpy on the CPU, torch never imported).

    Returns:
        ``{"pooled": {precision, recall, f1, tp, fp, fn}, "multi_threshold": {"mF1", "F1@50", "F1@75",
        "per_threshold": [...]}, "images"}`` for the first IoU kind, ``"pooled_unofficial"`` when the shapely IoU
        is scored, ``"notes"`` (default mode: what was handled where the official code crashes).
    """
    from drivemetrics.lane.io import read_llamas_keys
    from drivemetrics.lane.llamas_scoring import IOU_KINDS

    check_compat(compat)
    kinds = ("pixel", "shapely") if iou == "both" else (iou,)
    if not all(k in IOU_KINDS for k in kinds):
        raise ValueError(f"`iou` must be 'pixel', 'shapely' or 'both', got {iou!r}")
    torch_device = _check_device(device)
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
        device=torch_device,
    )
    rows, notes = score_frames(score, keys, 2 + 10 * len(kinds), chunk, workers, progress, "llamas-eval")
    return _llamas_result(rows, keys, kinds, per_image, compat, notes)


def _llamas_result(
    rows: np.ndarray, keys: list[str], kinds: tuple[str, ...], per_image: bool, compat: Compat, notes: list[str]
) -> dict[str, object]:
    """The JSON of :func:`evaluate_llamas_dirs` from the per-frame rows of :func:`_score_llamas_chunk`."""
    from drivemetrics.lane.llamas_scoring import IOU_RANGE

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
                stacklevel=3,
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
    device: Any = None,
    ufldv2: bool = False,
) -> tuple[np.ndarray, list[str]]:
    """``(F, 1 + 2 T)`` int rows ``[n_gt, hits per threshold, n_pred per threshold]`` (and ``[tp, fp, fn]`` of
    the UFLDv2 C++ variant at the first threshold with ``ufldv2``) and notes."""
    from drivemetrics.lane.curvelanes_scoring import score_lane_frames, ufldv2_counts
    from drivemetrics.lane.io import read_curvelanes_label, read_curvelanes_pred

    gts, preds, scores, p_sizes, notes, empty = [], [], [], [], [], []
    for name in names:
        label = Path(valid_dir, "labels", name + ".lines.json")
        lanes, n_empty = read_curvelanes_label(label, compat)
        empty.append(n_empty)
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
    kept_lanes = [[lane for lane in p if len(lane)] for p in preds]  # a lane of 0 points is no lane
    kept_scores = [
        np.array([v for lane, v in zip(p, s, strict=True) if len(lane)]) for p, s in zip(preds, scores, strict=True)
    ]
    hits, n_pred, n_gt = score_lane_frames(
        gts,
        np.array([sizes[n] for n in names], dtype=np.float64).reshape(-1, 2),
        kept_lanes,
        kept_scores,
        np.array(p_sizes, dtype=np.float64).reshape(-1, 2),
        thresholds,
        compat=compat,
        device=device,
    )
    rows = [n_gt[:, None], hits, n_pred]
    if ufldv2:  # the lanes UFLDv2's writer keeps: score > the primary threshold, unscored lanes always
        kept_01 = [
            [lane for lane, v in zip(p, s, strict=True) if np.isnan(v) or v > thresholds[0]]
            for p, s in zip(kept_lanes, kept_scores, strict=True)
        ]
        rows.append(
            ufldv2_counts(
                gts,
                np.array([sizes[n] for n in names], dtype=np.float64).reshape(-1, 2),
                kept_01,
                np.array(p_sizes, dtype=np.float64).reshape(-1, 2),
                empty,
            )
        )
    return np.concatenate(rows, 1), notes


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
    device: str | None = None,
    protocol: CurveLanesProtocol = "condlanenet",
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
        device: a torch device for the mask IoUs' intersections (None: numpy on the CPU, torch never imported).
        protocol: ``"condlanenet"`` or ``"vega"`` (the same numbers; the command's headline differs) or
            ``"ufldv2"``: also UFLDv2's C++ variant (:func:`drivemetrics.lane.curvelanes_scoring.ufldv2_counts`) at
            ``score_threshold``, under ``"ufldv2"``.

    Returns:
        ``{"pooled": {precision, recall, f1, hit_num, pr_num, gt_num}, "per_score_threshold": {"0.1": ...},
        "vega_max_f1", "vega_max_f1_threshold", "images"}`` (and ``"ufldv2": {precision, recall, f1, tp, fp,
        fn}``, ``"per_frame"``, ``"notes"``).
    """
    from drivemetrics.lane.curvelanes_scoring import SCORE_THRESHOLDS
    from drivemetrics.lane.io import curvelanes_image_sizes, read_curvelanes_list

    check_compat(compat)
    if protocol not in CURVELANES_PROTOCOLS:
        raise ValueError(f"`protocol` must be one of {CURVELANES_PROTOCOLS}, got {protocol!r}")
    torch_device = _check_device(device)
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
        device=torch_device,
        ufldv2=protocol == "ufldv2",
    )
    t_count = len(thresholds)
    width = 1 + 2 * t_count + (3 if protocol == "ufldv2" else 0)
    rows, notes = score_frames(score, names, width, chunk, workers, progress, "curvelanes-eval")
    return _curvelanes_result(rows, names, thresholds, listed, score_threshold, protocol, compat, per_image, notes)


def _curvelanes_result(
    rows: np.ndarray,
    names: list[str],
    thresholds: tuple[float, ...],
    listed: tuple[float, ...],
    score_threshold: float,
    protocol: str,
    compat: Compat,
    per_image: bool,
    notes: list[str],
) -> dict[str, object]:
    """The JSON of :func:`evaluate_curvelanes_dirs` from the per-frame rows of :func:`_score_curvelanes_chunk`."""
    t_count = len(thresholds)
    gt = int(rows[:, 0].sum())
    hits = rows[:, 1 : 1 + t_count].sum(0)
    n_pred = rows[:, 1 + t_count : 1 + 2 * t_count].sum(0)

    def entry(j: int) -> dict[str, object]:
        h, p = int(hits[j]), int(n_pred[j])
        if compat == "reference":  # vega's epsilon in every denominator
            eps = sys.float_info.epsilon
            precision, recall = h / (p + eps), h / (gt + eps)
            f1 = 2 * precision * recall / (precision + recall + eps)
        else:
            s = _prf(h, p - h, gt - h)
            precision, recall, f1 = float(s["precision"]), float(s["recall"]), float(s["f1"])  # type: ignore[arg-type]
        return {"precision": precision, "recall": recall, "f1": f1, "hit_num": h, "pr_num": p, "gt_num": gt}

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
    if protocol == "ufldv2":
        tp, fp, fn = (int(v) for v in rows[:, 1 + 2 * t_count :].sum(0))
        if compat == "reference":  # the C++: -1 for an empty denominator, F = 2PR / (P + R), no guard
            precision = tp / (tp + fp) if tp + fp else -1.0
            recall = tp / (tp + fn) if tp + fn else -1.0
            f1 = 2 * precision * recall / (precision + recall) if precision + recall else math.nan
            result["ufldv2"] = {"precision": precision, "recall": recall, "f1": f1, "tp": tp, "fp": fp, "fn": fn}
        else:
            result["ufldv2"] = _prf(tp, fp, fn)
    if per_image:
        frames: dict[str, dict[str, object]] = {}
        for name, r in zip(names, rows.tolist(), strict=True):
            frames[name] = {"hit": int(r[1]), "pr_num": int(r[1 + t_count]), "gt_num": int(r[0])}
            if protocol == "ufldv2":
                frames[name]["ufldv2"] = dict(zip(("tp", "fp", "fn"), r[1 + 2 * t_count :], strict=True))
        result["per_frame"] = frames
    if compat == "default":
        result["notes"] = notes
    return result
