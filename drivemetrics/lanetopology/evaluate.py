"""Dataset evaluation for OpenLane-V2: files in, scores out (the ``openlanev2-eval`` command's engine)."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from drivemetrics._internal import arrays
from drivemetrics._internal.compat import Compat, check_compat
from drivemetrics._internal.gc_pause import gc_paused
from drivemetrics._internal.pool import check_workers_or_auto, map_in_processes
from drivemetrics._internal.progress import progress_bar
from drivemetrics.lanetopology.frames import Track
from drivemetrics.lanetopology.io import detect_track, read_ground_truth, read_predictions, token_name
from drivemetrics.lanetopology.scoring import devkit_name, frame_statistics, scores_from_statistics

if TYPE_CHECKING:
    from drivemetrics._internal.distributed import Shard

__all__ = ["current_rank_shard", "evaluate_openlanev2", "evaluate_openlanev2_files"]

#: padded lane points (frames x most lanes x longest lane, each side) one job may hold: jobs are cut by this size
#: as well as by ``frames_per_job``, so one large frame never pads a whole chunk of frames to its size
JOB_POINTS = 1 << 21
_LINE_FIELDS = ("points", "centerline", "left_laneline", "right_laneline")


def _frame_size(frame: Mapping[str, Any]) -> tuple[int, int]:
    """``(lanes, points of the longest lane)`` of a frame's devkit dict (0 for what is malformed: parsed later)."""
    lanes = frame.get("lane_centerline", frame.get("lane_segment"))
    if not isinstance(lanes, Sequence) or isinstance(lanes, (str, bytes)):
        return 0, 0
    longest = 0
    for lane in lanes:
        if isinstance(lane, Mapping):
            for name in _LINE_FIELDS:
                value = lane.get(name)
                if isinstance(value, (list, tuple)) or arrays.is_ndarray(value):
                    longest = max(longest, len(value))
    return len(lanes), longest


def _job_bounds(
    preds: Mapping[Any, Mapping[str, Any]], target: Mapping[Any, Mapping[str, Any]], tokens: list[Any], most: int
) -> list[range]:
    """Consecutive frames cut into jobs of at most ``most`` frames and :data:`JOB_POINTS` padded points per side."""
    out: list[range] = []
    start = 0
    big = [0, 0, 0, 0]  # prediction lanes, prediction points, GT lanes, GT points
    for k, token in enumerate(tokens):
        sizes = (*_frame_size(preds[token]), *_frame_size(target[token]))
        grown = [max(a, b) for a, b in zip(big, sizes, strict=True)]
        count = k - start + 1
        if k > start and (count > most or count * max(grown[0] * grown[1], grown[2] * grown[3]) > JOB_POINTS):
            out.append(range(start, k))
            start, grown = k, list(sizes)
        big = grown
    if start < len(tokens):
        out.append(range(start, len(tokens)))
    return out


def current_rank_shard() -> Shard | None:
    """This rank's :class:`~drivemetrics._internal.distributed.Shard` under torchrun, ``None`` in one process.

    Without torchrun the distributed module (and torch) is never imported: only the command's process group setup
    (:func:`~drivemetrics._internal.distributed.distributed_from_env`) imports it, before any shard exists.
    """
    module = sys.modules.get("drivemetrics._internal.distributed")
    return None if module is None else module.current_shard()


def _chunk_statistics(job: tuple[list[Any], list[Any], Track, Compat, Any]) -> dict[str, np.ndarray]:
    preds, target, track, compat, device = job
    with gc_paused():
        return frame_statistics(preds, target, track, compat, device)


def _gather_parts(
    shard: Shard, parts: list[dict[str, np.ndarray]], count: int, template: dict[str, np.ndarray]
) -> list[dict[str, np.ndarray]]:
    """Every rank's job statistics (``parts`` of ``shard.take(jobs)``) on every rank, in job order, so that the
    sums run in the one-process order. ``template``: the statistics of no frame (their shapes)."""
    import torch

    from drivemetrics._internal.ragged import RaggedRows

    fields = {}
    for name, empty in template.items():
        width = empty.shape[1] if name == "ap_rows" else empty.size
        rows = [np.asarray(p[name], dtype=np.float64).reshape(-1, width) for p in parts]
        fields[name] = RaggedRows.from_frames(rows, (width,), torch.float64)
    frames = shard.gather_frames(shard.indices(count), **fields)
    split = {name: frames.fields[name].split() for name in template}
    shapes = {name: (-1, 3) if name == "ap_rows" else empty.shape for name, empty in template.items()}
    return [{name: split[name][i].numpy().reshape(shapes[name]) for name in template} for i in range(len(frames))]


def evaluate_openlanev2(
    preds: Mapping[Any, Mapping[str, Any]],
    target: Mapping[Any, Mapping[str, Any]],
    track: Track = "centerline",
    compat: Compat = "default",
    workers: int | None = 1,
    frames_per_job: int = 256,
    device: Any = None,
    sources: tuple[str, str] | None = None,
    progress: bool | None = False,
) -> dict[str, float]:
    """Score ``{token: prediction dict}`` against ``{token: annotation dict}`` (the devkit's per-frame dicts).

    ``workers`` processes score chunks of consecutive frames, at most ``frames_per_job`` and at most
    :data:`JOB_POINTS` padded lane points each (a large frame gets a chunk of its own); ``workers=None``: one
    process unless the measured time of the first chunks says a pool pays (see
    :func:`~drivemetrics._internal.pool.map_in_processes`). ``device`` is where the lane distances of a chunk are
    computed (all of its frames at once): ``None`` with numpy (torch is not imported), else with torch there.
    Every ground-truth frame needs a prediction (an empty one is a frame with empty lists); predictions for tokens
    not in the ground truth are refused, as the devkit does.

    ``sources``: the ``(prediction, ground-truth)`` file names, added to the frame named by an error.

    Returns:
        The snake_case keys of :func:`drivemetrics.lanetopology.scoring.scores_from_statistics`, as floats.

    Examples:
        >>> from drivemetrics.lanetopology.evaluate import evaluate_openlanev2
        >>> gt = {("val", "1", "2"): {"lane_centerline": [{"points": [[0, 0, 0], [10, 0, 0]]}],
        ...       "traffic_element": [], "topology_lclc": [[0]], "topology_lcte": []}}
        >>> pred = {("val", "1", "2"): {"lane_centerline": [{"points": [[0, 0, 0], [10, 0, 0]], "confidence": 1.0}],
        ...         "traffic_element": [], "topology_lclc": [[0.0]], "topology_lcte": []}}
        >>> evaluate_openlanev2(pred, gt, compat="reference")["det_l"]
        1.0
    """
    check_compat(compat)
    workers = check_workers_or_auto(workers)
    where = f"{sources[0]}: " if sources else ""
    missing = [t for t in target if t not in preds]
    extra = [t for t in preds if t not in target]
    if missing or extra:  # the devkit refuses both; one line with both counts
        parts = [f"predictions missing for {len(missing)} of the {len(target)} frame(s)"] if missing else []
        parts += [f"{len(extra)} predicted frame(s) not in the ground truth"] if extra else []
        first = token_name((missing or extra)[0])
        raise ValueError(f"{where}{', '.join(parts)} (first: {first})")
    tokens = list(target)

    pred_source, gt_source = (f" ({sources[0]})", f" ({sources[1]})") if sources else ("", "")

    def named(frames: Mapping[Any, Mapping[str, Any]], token: Any, source: str) -> Mapping[str, Any]:
        return {**frames[token], "token": token_name(token) + source}  # errors name the frame (and its file)

    jobs = [
        (
            [named(preds, t, pred_source) for t in tokens[part.start : part.stop]],
            [named(target, t, gt_source) for t in tokens[part.start : part.stop]],
            track,
            compat,
            device,
        )
        for part in _job_bounds(preds, target, tokens, frames_per_job)
    ]
    if not jobs:
        raise ValueError("no frames to evaluate")
    shard = current_rank_shard()  # under torchrun: this rank scores its shard of the jobs, then all are gathered
    mine = jobs if shard is None else shard.take(jobs)
    parts = []
    with gc_paused(), progress_bar(sum(len(job[0]) for job in mine), "openlanev2-eval", "frame", progress) as bar:
        # gc paused here too: a collection between two chunks would walk the caller's whole input
        for job, part in zip(mine, map_in_processes(_chunk_statistics, mine, workers), strict=True):
            parts.append(part)
            bar.update(len(job[0]))
    if shard is not None and shard.world > 1:
        parts = _gather_parts(shard, parts, len(jobs), frame_statistics([], [], track, compat))
    stats = {
        "ap_rows": np.concatenate([p["ap_rows"] for p in parts]),
        "ap_num_gt": sum(p["ap_num_gt"] for p in parts),
        "topology": sum(p["topology"] for p in parts),
        "fscore": sum(p["fscore"] for p in parts),
    }
    return scores_from_statistics(**stats, track=track, compat=compat)  # type: ignore[arg-type]


def evaluate_openlanev2_files(
    gt: str | Path,
    pred: str | Path,
    track: Track | None = None,
    compat: Compat = "default",
    workers: int | None = 1,
) -> tuple[Track, dict[str, float]]:
    """Read the ground truth (devkit pickle or fixture JSON) and predictions (submission pickle or fixture JSON),
    detect the track unless given, and score them; returns ``(track, scores)``."""
    target = read_ground_truth(gt)
    preds = read_predictions(pred)
    track = track or detect_track(target, gt)
    return track, evaluate_openlanev2(preds, target, track, compat, workers, sources=(str(pred), str(gt)))


def json_report(track: Track, scores: Mapping[str, float], headline: Sequence[str]) -> dict[str, Any]:
    """The command's JSON, in the devkit's names (:func:`~drivemetrics.lanetopology.scoring.devkit_name`):
    ``headline`` keys at the top level, the per-threshold values under ``per_threshold``.

    Examples:
        >>> from drivemetrics.lanetopology.evaluate import json_report
        >>> json_report("centerline", {"ols": 0.5, "top_ll@1.0": 0.25}, ["ols"])
        {'OLS': 0.5, 'track': 'centerline', 'per_threshold': {'TOP_ll@1.0': 0.25}}
    """
    out: dict[str, Any] = {devkit_name(name): scores[name] for name in headline}
    out["track"] = track
    out["per_threshold"] = {devkit_name(k): v for k, v in scores.items() if "@" in k}
    return out
