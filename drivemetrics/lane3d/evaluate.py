"""Evaluating OpenLane (v1) 3D lane folders: read the frames of a test list, pack them, score them in batches.

Frames are packed lane after lane (no padding over the lanes of a frame) and scored :data:`BATCH_FRAMES` at a
time by the kernels of :mod:`drivemetrics.lane3d.openlane`; the per-frame results stay arrays until the report.

Predictions are paired with annotations by ``file_path``, as the evaluator does (the last annotation of a path
wins). Files are read and scored in chunks of :data:`CHUNK_FRAMES` lines (in worker processes where that pays); a
prediction that names the annotation of another line is scored afterwards with that annotation, so the chunks
change no result.

Under ``torchrun`` (the ``openlane3d-eval`` command, see :mod:`drivemetrics._internal.distributed`) each rank
reads and scores the frames ``rank, rank + world, ...``; the per-frame rows are gathered so that every rank holds
the one-process result.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import torch
from torch import Tensor

from drivemetrics._internal.compat import Compat, check_compat
from drivemetrics._internal.distributed import bytes_to_strings, current_shard, strings_to_bytes
from drivemetrics._internal.gc_pause import gc_paused
from drivemetrics._internal.pool import check_workers_or_auto, map_in_processes, one_torch_thread_per_worker
from drivemetrics._internal.progress import progress_bar
from drivemetrics._internal.ragged import RaggedRows
from drivemetrics.lane3d.io import Lane3DFrame, read_openlane_gt, read_openlane_pred, read_test_list
from drivemetrics.lane3d.openlane import COUNT_NAMES, DEFAULT_FIXES, openlane3d_lane_matches, openlane3d_scores
from drivemetrics.lane3d.pairs import ERROR_NAMES
from drivemetrics.lane3d.resample import OpenLane3DLanes

__all__ = ["evaluate_openlane3d_files", "evaluate_openlane3d_frames", "pack_lanes"]

#: Lines read and scored together (one job of a worker process).
CHUNK_FRAMES = 256
#: Frames scored by one call of the kernels.
BATCH_FRAMES = 256
#: Below this many frames the files are read in this process (a worker costs more to start than it saves).
MIN_FRAMES_FOR_PROCESSES = 1024
FRAME_COUNT_KEYS = ("r_lane", "p_lane", "c_lane", "cnt_gt", "cnt_pred", "match_num")


def pack_lanes(frames: Sequence[Sequence[np.ndarray]], device: torch.device | str = "cpu") -> tuple[Tensor, Tensor]:
    """Pad lists of ``(n, 3)`` lanes into ``(B, L, N, 3)`` float64 points and ``(B, L)`` int64 point counts.

    Examples:
        >>> import numpy as np
        >>> points, lengths = pack_lanes([[np.zeros((2, 3)), np.ones((3, 3))], []])
        >>> tuple(points.shape), lengths.tolist()
        ((2, 2, 3, 3), [[2, 3], [0, 0]])
    """
    lanes_per_frame = np.fromiter(map(len, frames), np.int64, len(frames))
    lanes = [np.asarray(lane, dtype=np.float64).reshape(-1, 3) for frame in frames for lane in frame]
    lengths = np.fromiter(map(len, lanes), np.int64, len(lanes))
    frame = np.repeat(np.arange(len(frames)), lanes_per_frame)
    index = np.arange(len(lanes)) - np.repeat(np.cumsum(lanes_per_frame) - lanes_per_frame, lanes_per_frame)
    out = np.zeros((len(frames), int(lanes_per_frame.max(initial=0)), max(int(lengths.max(initial=0)), 1), 3))
    padded = np.zeros(out.shape[:2], dtype=np.int64)
    padded[frame, index] = lengths
    if lanes:
        lane_of_point = np.repeat(np.arange(len(lanes)), lengths)
        slot = np.arange(lane_of_point.shape[0]) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        out[frame[lane_of_point], index[lane_of_point], slot] = np.concatenate(lanes)
    return torch.from_numpy(out).to(device), torch.from_numpy(padded).to(device)


def _frames_to_lanes(frames: Sequence[Lane3DFrame], annotations: bool, device: Any) -> OpenLane3DLanes:
    """The lanes of ``frames`` lane after lane (annotations: moved to the ground frame, with their visibility).

    The points are built as ``(3, T)`` coordinate planes (one concatenation of all lanes), and ``points`` is their
    ``(T, 3)`` view, which the resampling reads without a copy."""
    lanes_per_frame = np.fromiter((len(f.points) for f in frames), np.int64, len(frames))
    arrays = [lane for f in frames for lane in f.points]
    lengths = np.fromiter(map(len, arrays), np.int64, len(arrays))
    frame = np.repeat(np.arange(len(frames)), lanes_per_frame)
    index = np.arange(len(arrays)) - np.repeat(np.cumsum(lanes_per_frame) - lanes_per_frame, lanes_per_frame)
    labels = np.fromiter(itertools.chain.from_iterable(f.categories for f in frames), np.int64, len(arrays))
    planes = np.ascontiguousarray((np.concatenate(arrays) if arrays else np.zeros((0, 3))).T, dtype=np.float64)
    visibility = None
    if annotations:
        extrinsic = np.concatenate([f.extrinsic for f in frames]).reshape(-1, 4, 4) if frames else np.zeros((0, 4, 4))
        planes = _camera_to_ground(planes, extrinsic, np.bincount(frame, lengths, len(frames)).astype(np.int64))
        flat = [v for f in frames for v in (f.visibility or [])]
        visibility = torch.from_numpy(np.concatenate(flat) if flat else np.zeros(0)).to(device)
    present = lengths > 0
    if not present.all():  # empty lanes: no point, never evaluated
        frame, index, labels, lengths = frame[present], index[present], labels[present], lengths[present]
    return OpenLane3DLanes(
        torch.from_numpy(planes).to(device).T,
        torch.from_numpy(lengths).to(device),
        torch.from_numpy(frame).to(device),
        torch.from_numpy(index).to(device),
        torch.from_numpy(labels).to(device),
        visibility,
    )


def _camera_to_ground(planes: np.ndarray, extrinsic: np.ndarray, points_per_frame: np.ndarray) -> np.ndarray:
    """:func:`~drivemetrics.lane3d.openlane.openlane3d_gt_to_ground` of packed points: ``(3, T)`` camera-frame
    coordinate planes, ``(B, 4, 4)`` extrinsics, ``(B,)`` points per frame (frame after frame); ``(3, T)``."""
    rotation = extrinsic[:, :3, :3]

    def rotated(row: int) -> np.ndarray:  # row ``row`` of R @ p for every point
        out = np.repeat(rotation[:, row, 0], points_per_frame) * planes[0]
        out += np.repeat(rotation[:, row, 1], points_per_frame) * planes[1]
        out += np.repeat(rotation[:, row, 2], points_per_frame) * planes[2]
        return out

    ground = np.empty_like(planes)
    np.negative(rotated(1), out=ground[0])
    ground[1] = rotated(0)
    np.add(rotated(2), np.repeat(extrinsic[:, 2, 3], points_per_frame), out=ground[2])
    return ground


class _Scored(NamedTuple):
    """Per-frame results as arrays: ``counts`` ``(F, 6)`` int64 (:data:`FRAME_COUNT_KEYS`), ``pairs`` ``(F,)``
    counted pairs per frame, ``errors`` ``(K, 4)`` float64 per pair, frame after frame (:data:`ERROR_NAMES`)."""

    counts: np.ndarray
    pairs: np.ndarray
    errors: np.ndarray

    @staticmethod
    def concat(parts: Sequence[_Scored]) -> _Scored:
        if not parts:
            return _Scored(np.zeros((0, 6), np.int64), np.zeros(0, np.int64), np.zeros((0, 4)))
        return _Scored(*(np.concatenate(values) for values in zip(*parts, strict=True)))


def _score_batch(
    gt: Sequence[Lane3DFrame], preds: Sequence[Lane3DFrame], fixes: frozenset[str], device: Any
) -> _Scored:
    target = _frames_to_lanes(gt, True, device)
    out = openlane3d_lane_matches(_frames_to_lanes(preds, False, device), target, frames=len(preds), fixes=fixes)
    pairs = torch.bincount(out["pairs"][:, 0], minlength=len(preds))
    return _Scored(out["counts"].cpu().numpy(), pairs.cpu().numpy(), out["pair_errors"].cpu().numpy())


def _fixes(compat: Compat) -> frozenset[str]:
    return frozenset() if check_compat(compat) else DEFAULT_FIXES


def _paired(gt: Sequence[Lane3DFrame], preds: Sequence[Lane3DFrame]) -> list[Lane3DFrame]:
    """The annotation of each prediction, by ``file_path`` (the last one of a path, as the evaluator's dict)."""
    by_path = {f.file_path: f for f in gt}
    for f in preds:
        if f.file_path not in by_path:
            raise ValueError(f"prediction file_path {f.file_path!r} is not in the annotations")
    return [by_path[f.file_path] for f in preds]


def _score_frames(
    gt: Sequence[Lane3DFrame],
    preds: Sequence[Lane3DFrame],
    fixes: frozenset[str],
    device: Any,
    batch_size: int,
    progress: bool | None,
) -> _Scored:
    paired = _paired(gt, preds)
    parts = []
    # many small kernels: intra-op threads only spin (2 threads on 2 cores: 5x the wall time at load 3)
    with one_torch_thread_per_worker(), progress_bar(len(preds), "openlane3d-eval", "frames", progress) as bar:
        for start in range(0, len(preds), batch_size):
            stop = min(start + batch_size, len(preds))
            parts.append(_score_batch(paired[start:stop], preds[start:stop], fixes, device))
            bar.update(stop - start)
    return _Scored.concat(parts)


def evaluate_openlane3d_frames(
    gt: Sequence[Lane3DFrame],
    preds: Sequence[Lane3DFrame],
    compat: Compat = "default",
    device: torch.device | str = "cpu",
    batch_size: int = BATCH_FRAMES,
    progress: bool | None = False,
) -> dict[str, Any]:
    """Score frames already read (in this process): predictions are paired with annotations by ``file_path``, as
    the evaluator does. torch runs with one intra-op thread meanwhile (restored on return): the kernels are many
    small ones, on which threads only spin.

    Args:
        gt: annotations (:func:`~drivemetrics.lane3d.io.read_openlane_gt`), camera frame.
        preds: predictions, one per annotation (any order), ground frame.
        compat: ``"default"`` or ``"reference"`` (``eval_3D_lane.py``).
        device: where the kernels run.
        batch_size: frames per kernel call.
        progress: a progress bar (``None``: on a terminal only).

    Returns:
        ``{"metrics": {F_score, recall, precision, category_accuracy, four errors, six counts}, "per_frame":
        [{file_path, r_lane, p_lane, c_lane, cnt_gt, cnt_pred, match_num, x_error_close, ...}]}`` in the order of
        ``preds``; the per-frame errors are the lists of per-pair values (``-1`` where a pair has none).

    Examples:
        >>> import numpy as np
        >>> lane = np.array([[10.0, 0.0, -2.0], [60.0, 0.0, -2.0]])  # camera frame: 10 and 60 m ahead, 2 m down
        >>> gt = Lane3DFrame("a.jpg", [lane], [1], [np.ones(2)], np.diag([1.0, 1.0, 1.0, 1.0]))
        >>> gt.extrinsic[2, 3] = 2.0  # the camera 2 m above the ground
        >>> pred = Lane3DFrame("a.jpg", [np.array([[0.1, 10.0, 0.0], [0.1, 60.0, 0.0]])], [1])
        >>> evaluate_openlane3d_frames([gt], [pred])["metrics"]["F_score"]
        1.0
    """
    if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
        raise ValueError(f"`batch_size` must be a positive int, got {batch_size!r}")
    scored = _score_frames(gt, preds, _fixes(compat), device, batch_size, progress)
    return _report([f.file_path for f in preds], scored)


def _report(file_paths: Sequence[str], scored: _Scored) -> dict[str, Any]:
    """The result dict from the per-frame arrays; the error means are taken over the pairs in frame order, as the
    evaluator's ``np.average``."""
    has = scored.errors > -1 + 1e-6  # NaN errors are left out too
    # numpy's sum of the values kept, as the tool's np.average: the same bits
    sums = np.array([scored.errors[has[:, k], k].sum() for k in range(len(ERROR_NAMES))])
    scores = openlane3d_scores(torch.from_numpy(scored.counts), torch.from_numpy(sums), torch.from_numpy(has.sum(0)))
    r_lane, p_lane, c_lane, cnt_gt, cnt_pred, match_num = FRAME_COUNT_KEYS
    x_close, x_far, z_close, z_far = ERROR_NAMES
    with gc_paused():
        ends = np.cumsum(scored.pairs).tolist()
        starts = [0, *ends[:-1]]
        xc, xf, zc, zf = scored.errors.T.tolist()
        per_frame = [  # one dict display per frame (several times faster than filling each dict)
            {
                "file_path": path,
                r_lane: r,
                p_lane: p,
                c_lane: c,
                cnt_gt: g,
                cnt_pred: n,
                match_num: m,
                x_close: xc[start:end],
                x_far: xf[start:end],
                z_close: zc[start:end],
                z_far: zf[start:end],
            }
            for path, (r, p, c, g, n, m), start, end in zip(
                file_paths, scored.counts.tolist(), starts, ends, strict=True
            )
        ]
    return {"metrics": _json_metrics(scores), "per_frame": per_frame}


def _json_metrics(scores: dict[str, Tensor]) -> dict[str, Any]:
    """The scores under the evaluator's names (``F_score``, ...): floats, and ints for the counts."""
    return {
        ("F_score" if name == "f_score" else name): (int(value) if name in COUNT_NAMES else float(value))
        for name, value in scores.items()
    }


class _Chunk(NamedTuple):
    """One job's result: the annotations' ``file_path`` of its lines, the line of the annotation each prediction
    was scored with (``-1``: none of the chunk has its path; its row is a placeholder) and the per-frame arrays."""

    gt_paths: list[str]
    pred_paths: list[str]
    gt_used: list[int]
    scored: _Scored


def _score_files(job: tuple[list[int], list[tuple[str, str]], frozenset[str], str]) -> _Chunk:
    """Read and score one chunk of lines (in a worker process or here), each prediction with the annotation of its
    path among the chunk's (the others are left to :func:`_rescore`)."""
    lines, files, fixes, device = job
    gt = [read_openlane_gt(path) for path, _ in files]
    preds = [read_openlane_pred(path) for _, path in files]
    by_path = {frame.file_path: k for k, frame in enumerate(gt)}  # the last one of a path, as the evaluator's dict
    local = [by_path.get(frame.file_path, -1) for frame in preds]
    found = [k for k, j in enumerate(local) if j >= 0]
    part = _score_batch([gt[local[k]] for k in found], [preds[k] for k in found], fixes, device)
    counts = np.zeros((len(files), 6), dtype=np.int64)
    pairs = np.zeros(len(files), dtype=np.int64)
    counts[found], pairs[found] = part.counts, part.pairs
    return _Chunk(
        [frame.file_path for frame in gt],
        [frame.file_path for frame in preds],
        [lines[j] if j >= 0 else -1 for j in local],
        _Scored(counts, pairs, part.errors),
    )


def _annotation_lines(mine: Sequence[int], gt_paths: Sequence[str]) -> dict[str, int]:
    """``file_path`` -> the test-list line of its annotation over the whole list (the last line of a path, as the
    evaluator's dict); under torchrun the ranks exchange the paths of their lines."""
    shard = current_shard()
    if shard.world > 1:
        names = [strings_to_bytes([path]) for path in gt_paths]
        frames = shard.gather_frames(list(mine), names=RaggedRows.from_frames(names, (), torch.uint8))
        mine = frames.keys.tolist()
        gt_paths = [bytes_to_strings(name)[0] for name in frames.fields["names"].split()]
    return {path: line for line, path in zip(mine, gt_paths, strict=True)}


def _rescore(
    scored: _Scored,
    todo: list[tuple[int, str, str]],
    fixes: frozenset[str],
    device: str,
) -> _Scored:
    """``scored`` with the frames ``(position, annotation file, prediction file)`` of ``todo`` scored again."""
    gt = [read_openlane_gt(path) for _, path, _ in todo]
    preds = [read_openlane_pred(path) for _, _, path in todo]
    fixed = _score_batch(gt, preds, fixes, device)
    counts, pairs = scored.counts.copy(), scored.pairs.copy()
    pieces = np.split(scored.errors, np.cumsum(scored.pairs)[:-1]) if len(pairs) else []
    ends = np.cumsum(fixed.pairs)
    for k, (position, _, _) in enumerate(todo):
        counts[position], pairs[position] = fixed.counts[k], fixed.pairs[k]
        pieces[position] = fixed.errors[ends[k] - fixed.pairs[k] : ends[k]]
    return _Scored(counts, pairs, np.concatenate(pieces) if pieces else scored.errors)


def evaluate_openlane3d_files(
    gt_dir: str | Path,
    pred_dir: str | Path,
    test_list: str | Path,
    compat: Compat = "default",
    workers: int | None = 1,
    device: torch.device | str = "cpu",
    progress: bool | None = False,
) -> dict[str, Any]:
    """Read the frames of a test list from the annotation and prediction folders and score them.

    Each line ``L`` names ``gt_dir/L'`` and ``pred_dir/L'`` with ``L' = L.replace("jpg", "json")``. Each prediction
    is scored with the annotation of its ``file_path`` among all the lines (the last one of a path), as the
    evaluator does. Frames are read and scored in chunks of :data:`CHUNK_FRAMES` lines (by ``workers`` processes
    from :data:`MIN_FRAMES_FOR_PROCESSES` frames on; ``workers=None``: a pool only where the measured time of the
    first chunks says it pays, see :func:`~drivemetrics._internal.pool.map_in_processes`); a prediction naming the
    annotation of another chunk is scored after them. Under torchrun each rank reads and scores only its shard of
    the lines. Returns the dict of :func:`evaluate_openlane3d_frames`.

    Raises:
        ValueError: a file that cannot be read as its format (naming the file and the field), or a prediction
            whose ``file_path`` names no annotation of the list (naming the prediction file).

    Examples:
        >>> import json, os, tempfile
        >>> gt = {"file_path": "s/1.jpg", "extrinsic": [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 2], [0, 0, 0, 1]],
        ...       "lane_lines": [{"xyz": [[10, 60], [0, 0], [-2, -2]], "visibility": [1, 1], "category": 1}]}
        >>> pred = {"file_path": "s/1.jpg", "lane_lines": [{"xyz": [[0, 10, 0], [0, 60, 0]], "category": 1}]}
        >>> with tempfile.TemporaryDirectory() as d:
        ...     for sub, data in (("gt", gt), ("pred", pred)):
        ...         os.makedirs(os.path.join(d, sub, "s"))
        ...         _ = open(os.path.join(d, sub, "s", "1.json"), "w").write(json.dumps(data))
        ...     _ = open(os.path.join(d, "list.txt"), "w").write("s/1.jpg\\n")
        ...     out = evaluate_openlane3d_files(f"{d}/gt", f"{d}/pred", f"{d}/list.txt")
        >>> out["metrics"]["F_score"], out["metrics"]["n_gt"]
        (1.0, 1)
    """
    fixes = _fixes(compat)
    lines = read_test_list(test_list)
    shard = current_shard()
    mine = shard.indices(len(lines))
    files = [
        (str(Path(gt_dir) / lines[i].replace("jpg", "json")), str(Path(pred_dir) / lines[i].replace("jpg", "json")))
        for i in mine
    ]
    jobs = [
        (mine[start : start + CHUNK_FRAMES], files[start : start + CHUNK_FRAMES], fixes, str(device))
        for start in range(0, len(files), CHUNK_FRAMES)
    ]
    # a worker process costs a second or more to start (it imports torch): worth it from a few chunks on
    workers = check_workers_or_auto(workers)
    if len(files) < MIN_FRAMES_FOR_PROCESSES:
        workers = 1
    elif workers is not None:
        workers = min(workers, len(jobs))
    chunks: list[_Chunk] = []
    with one_torch_thread_per_worker(), progress_bar(len(files), "openlane3d-eval", "frames", progress) as bar:
        for chunk in map_in_processes(_score_files, jobs, workers):
            chunks.append(chunk)
            bar.update(len(chunk.gt_paths))
    gt_paths = [path for chunk in chunks for path in chunk.gt_paths]
    pred_paths = [path for chunk in chunks for path in chunk.pred_paths]
    gt_used = [line for chunk in chunks for line in chunk.gt_used]
    scored = _Scored.concat([chunk.scored for chunk in chunks])
    annotation = _annotation_lines(mine, gt_paths)
    todo = []
    for position, (path, used) in enumerate(zip(pred_paths, gt_used, strict=True)):
        line = annotation.get(path)
        if line is None:
            raise ValueError(f"{files[position][1]}: file_path {path!r} names no annotation of the test list")
        if line != used:  # the annotation of another chunk (or a later line of the same path)
            todo.append((position, str(Path(gt_dir) / lines[line].replace("jpg", "json")), files[position][1]))
    if todo:
        with one_torch_thread_per_worker():
            scored = _rescore(scored, todo, fixes, str(device))
    if shard.world == 1:
        return _report(pred_paths, scored)
    # every rank's frames on every rank, in the test-list order: the one-process report
    single = torch.ones(len(pred_paths), dtype=torch.int64)
    frames = shard.gather_frames(
        mine,
        counts=RaggedRows(torch.from_numpy(scored.counts), single),
        errors=RaggedRows(torch.from_numpy(scored.errors), torch.from_numpy(scored.pairs)),
        names=RaggedRows.from_frames([strings_to_bytes([p]) for p in pred_paths], (), torch.uint8),
    )
    paths = [bytes_to_strings(name)[0] for name in frames.fields["names"].split()]
    errors = frames.fields["errors"]
    gathered = _Scored(frames.fields["counts"].rows.numpy(), errors.lengths.numpy(), errors.rows.numpy())
    return _report(paths, gathered)
