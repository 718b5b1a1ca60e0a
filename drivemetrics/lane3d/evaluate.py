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

import contextlib
import itertools
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from drivemetrics._internal.compat import Compat, check_compat
from drivemetrics._internal.gc_pause import gc_paused
from drivemetrics._internal.pool import check_workers_or_auto, map_in_processes, one_torch_thread_per_worker
from drivemetrics._internal.progress import progress_bar
from drivemetrics.lane3d.io import Lane3DFrame, read_openlane_gt, read_openlane_pred, read_test_list

if TYPE_CHECKING:
    import torch
    from torch import Tensor

    from drivemetrics._internal.distributed import Shard
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
        >>> from drivemetrics.lane3d.evaluate import pack_lanes
        >>> points, lengths = pack_lanes([[np.zeros((2, 3)), np.ones((3, 3))], []])
        >>> tuple(points.shape), lengths.tolist()
        ((2, 2, 3, 3), [[2, 3], [0, 0]])
    """
    import torch

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
    import torch

    from drivemetrics.lane3d.resample import OpenLane3DLanes

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
    import torch

    from drivemetrics.lane3d.openlane import openlane3d_lane_matches

    target = _frames_to_lanes(gt, True, device)
    out = openlane3d_lane_matches(_frames_to_lanes(preds, False, device), target, frames=len(preds), fixes=fixes)
    pairs = torch.bincount(out["pairs"][:, 0], minlength=len(preds))
    return _Scored(out["counts"].cpu().numpy(), pairs.cpu().numpy(), out["pair_errors"].cpu().numpy())


def _fixes(compat: Compat) -> frozenset[str]:
    from drivemetrics.lane3d.openlane import DEFAULT_FIXES

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
        >>> from drivemetrics.lane3d.io import Lane3DFrame
        >>> from drivemetrics.lane3d.evaluate import evaluate_openlane3d_frames
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
    import torch

    from drivemetrics.lane3d.openlane import openlane3d_scores
    from drivemetrics.lane3d.pairs import ERROR_NAMES

    has = scored.errors > -1 + 1e-6  # NaN errors are left out too
    # numpy's sum of the values kept, as the tool's np.average: the same bits
    sums = np.array([scored.errors[has[:, k], k].sum() for k in range(len(ERROR_NAMES))])
    scores = openlane3d_scores(
        torch.from_numpy(scored.counts), torch.from_numpy(sums), torch.from_numpy(has.sum(0)), validate_args=False
    )
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
    from drivemetrics.lane3d.openlane import COUNT_NAMES

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
    import torch

    from drivemetrics._internal.distributed import bytes_to_strings, current_shard, strings_to_bytes
    from drivemetrics._internal.ragged import RaggedRows

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
        >>> from drivemetrics.lane3d.evaluate import evaluate_openlane3d_files
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
    import torch

    from drivemetrics._internal.distributed import bytes_to_strings, current_shard, strings_to_bytes
    from drivemetrics._internal.ragged import RaggedRows

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


# ---------------------------------------------------------------------------------------------------------------------
# Apollo 3D Lane Synthetic and ONCE-3DLanes


#: Frames scored by one job of the Apollo / ONCE evaluations.
SCORED_CHUNK_FRAMES = 256


def current_rank_shard() -> Shard | None:
    """This rank's :class:`~drivemetrics._internal.distributed.Shard` under torchrun, ``None`` in one process: the
    Apollo / ONCE evaluations run on numpy and import neither torch nor the distributed module (the command's
    process-group setup imports it first)."""
    module = sys.modules.get("drivemetrics._internal.distributed")
    return None if module is None else module.current_shard()


def _torch_threads() -> contextlib.AbstractContextManager[None]:
    """One torch intra-op thread while frames are scored, where torch is loaded (it is not on the CPU path)."""
    return one_torch_thread_per_worker() if "torch" in sys.modules else contextlib.nullcontext()


def _gather_rows(mine: Sequence[int], fixed: dict[str, np.ndarray], ragged: dict[str, tuple[np.ndarray, np.ndarray]]):
    """Per-frame rows of every rank on every rank, in frame order (torchrun); the arrays as given otherwise."""
    shard = current_rank_shard()
    if shard is None or shard.world == 1:
        return fixed, ragged
    import torch

    from drivemetrics._internal.ragged import RaggedRows

    fields = {
        k: RaggedRows(torch.from_numpy(v.reshape(len(mine), -1)), torch.ones(len(mine), dtype=torch.int64))
        for k, v in fixed.items()
    }
    fields.update(
        {k: RaggedRows(torch.from_numpy(rows), torch.from_numpy(lengths)) for k, (rows, lengths) in ragged.items()}
    )
    frames = shard.gather_frames(list(mine), **fields)
    out_fixed = {k: frames.fields[k].rows.numpy().reshape(-1, *v.shape[1:]) for k, v in fixed.items()}
    out_ragged = {k: (frames.fields[k].rows.numpy(), frames.fields[k].lengths.numpy()) for k in ragged}
    return out_fixed, out_ragged


def _score_apollo_chunk(job: tuple[list[Any], list[Any], str]) -> dict[str, np.ndarray]:
    from drivemetrics.lane3d.apollo_scoring import apollo3d_matches
    from drivemetrics.lane3d.packed import pack_lane_lists

    gts, preds, compat = job
    out: dict[str, np.ndarray] = {}
    for kind in (0, 1):
        g = pack_lane_lists([f[kind].points for f in gts], visibility=[f[kind].visibility for f in gts])
        p = pack_lane_lists([f[kind].points for f in preds], scores=[f[kind].scores for f in preds])
        res = apollo3d_matches(p, g, frames=len(preds), compat=compat)  # type: ignore[arg-type]
        out[f"counts{kind}"] = res["counts"]
        rows = np.concatenate([res["pair_threshold"][:, None].astype(np.float64), res["pair_errors"]], 1)
        out[f"pairs{kind}"] = rows
        out[f"pair_lengths{kind}"] = np.bincount(res["pair_frame"], minlength=len(preds)).astype(np.int64)
    return out


def evaluate_apollo3d_files(
    gt_file: str | Path,
    pred_file: str | Path,
    compat: Compat = "default",
    workers: int | None = 1,
    device: torch.device | str = "cpu",
    progress: bool | None = False,
) -> dict[str, Any]:
    """Score a Gen-LaneNet prediction file against an Apollo 3D Lane Synthetic ``test.json`` (lane lines and centre
    lines), as ``tools/eval_3D_lane.py``'s ``__main__`` does: the 19-threshold sweep, AP, max F and the x / z errors
    at its threshold; centre lines at the lane-line max-F threshold.

    Predictions are paired with the GT by ``raw_file`` and scored in prediction-file order. ``"reference"``: fewer
    prediction lines than GT lines, or a ``raw_file`` not in the GT, raises (the tool stops); ``"default"``: a GT
    frame without a prediction is scored as an empty prediction (all its lanes missed). The kernels are host code
    (numpy, SciPy's assignment); ``device`` is accepted for the command grammar.

    Returns:
        ``{"metrics": {laneline_AP, max_F_prob_th, F_score, recall, precision, x/z errors, centerline_...},
        "per_threshold": {...}, "per_frame": [{raw_file, laneline_per_threshold, centerline_per_threshold,
        laneline_at_maxF, centerline_at_maxF}]}`` (the keys of the fixture's ``compare.py``).

    Examples:
        >>> import json, os, tempfile
        >>> from drivemetrics.lane3d.evaluate import evaluate_apollo3d_files
        >>> gt = {"raw_file": "a.jpg", "laneLines": [[[1.8, 3, 0], [1.8, 100, 0]]], "laneLines_visibility": [[1, 1]],
        ...       "centerLines": [], "centerLines_visibility": []}
        >>> pred = {"raw_file": "a.jpg", "laneLines": [[[1.9, 3, 0], [1.9, 100, 0]]], "laneLines_prob": [0.9],
        ...         "centerLines": [], "centerLines_prob": []}
        >>> with tempfile.TemporaryDirectory() as d:
        ...     _ = open(os.path.join(d, "gt.json"), "w").write(json.dumps(gt) + "\\n")
        ...     _ = open(os.path.join(d, "pred.json"), "w").write(json.dumps(pred) + "\\n")
        ...     out = evaluate_apollo3d_files(os.path.join(d, "gt.json"), os.path.join(d, "pred.json"))
        >>> round(out["metrics"]["F_score"], 6), round(out["metrics"]["x_error_close"], 6)
        (0.999999, 0.1)
    """
    from drivemetrics.lane3d.apollo_scoring import APOLLO_THRESHOLDS
    from drivemetrics.lane3d.io import ScoredLanesFrame, read_apollo_gt, read_apollo_pred

    reference = check_compat(compat)
    gt = read_apollo_gt(gt_file)
    preds = read_apollo_pred(pred_file)
    gt_lines = sum(
        1 for line in Path(gt_file).read_text(encoding="utf-8", errors="replace").split("\n") if line.strip()
    )
    if reference and gt_lines != len(preds):
        raise ValueError(
            f"{pred_file}: {len(preds)} prediction lines for {gt_lines} GT lines; the official evaluator stops "
            "('We do not get the predictions of all the test tasks')"
        )
    for k, (lanes, _) in enumerate(preds):
        if lanes.name not in gt:
            raise ValueError(f"{pred_file}: line {k + 1}: raw_file {lanes.name!r} is not in {gt_file}")
    if not reference:
        seen = {lanes.name for lanes, _ in preds}
        preds = preds + [(ScoredLanesFrame(name), ScoredLanesFrame(name)) for name in gt if name not in seen]
    names = [lanes.name for lanes, _ in preds]
    shard = current_rank_shard()
    mine = list(range(len(preds))) if shard is None else shard.indices(len(preds))
    jobs = [
        (
            [gt[names[i]] for i in mine[s : s + SCORED_CHUNK_FRAMES]],
            [preds[i] for i in mine[s : s + SCORED_CHUNK_FRAMES]],
            compat,
        )
        for s in range(0, len(mine), SCORED_CHUNK_FRAMES)
    ]
    workers = check_workers_or_auto(workers)
    parts = []
    with _torch_threads(), progress_bar(len(mine), "apollo3d-eval", "frames", progress) as bar:
        for part in map_in_processes(_score_apollo_chunk, jobs, workers if len(jobs) > 1 else 1):
            parts.append(part)
            bar.update(part["counts0"].shape[0])
    t = len(APOLLO_THRESHOLDS)

    def cat(key: str, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
        return np.concatenate([p[key] for p in parts]) if parts else np.zeros(shape, dtype)

    fixed = {f"counts{k}": cat(f"counts{k}", (0, t, 4), np.int64) for k in (0, 1)}
    ragged = {
        f"pairs{k}": (cat(f"pairs{k}", (0, 5), np.float64), cat(f"pair_lengths{k}", (0,), np.int64)) for k in (0, 1)
    }
    fixed, ragged = _gather_rows(mine, fixed, ragged)
    return _apollo_report(names, fixed, ragged, compat)


def _apollo_report(
    names: list[str], fixed: dict[str, np.ndarray], ragged: dict[str, tuple[np.ndarray, np.ndarray]], compat: Compat
) -> dict[str, Any]:
    """The result dict of :func:`evaluate_apollo3d_files` from the per-frame counts and per-pair rows
    ``[threshold, 4 errors]`` of lane lines (0) and centre lines (1)."""
    from drivemetrics.lane3d.apollo_scoring import APOLLO_THRESHOLDS, ERROR_NAMES, apollo3d_scores

    t = len(APOLLO_THRESHOLDS)
    sums = {}
    for k in (0, 1):
        rows = ragged[f"pairs{k}"][0]
        s = np.zeros((t, 4))
        np.add.at(s, rows[:, 0].astype(np.int64), rows[:, 1:])
        sums[k] = (s, np.bincount(rows[:, 0].astype(np.int64), minlength=t))
    lane = apollo3d_scores(fixed["counts0"].sum(0), *sums[0], compat=compat, validate_args=False)
    center = apollo3d_scores(fixed["counts1"].sum(0), *sums[1], compat=compat, validate_args=False)
    i = lane["max_f_index"]
    metrics: dict[str, Any] = {
        "laneline_AP": lane["ap"],
        "laneline_F_max": lane["max_f"],
        "max_F_prob_th": lane["max_f_threshold"],
        "max_F_index": i,
        "F_score": lane["max_f"],
        "recall": lane["recall"],
        "precision": lane["precision"],
    }
    for name in ERROR_NAMES:
        metrics[name] = lane[name]
    metrics.update(
        centerline_AP=center["ap"],
        centerline_F_max=float(center["f_curve"][i]),  # the tool reports the centre-line F at the lane-line max-F
        centerline_F=float(center["f_curve"][i]),
        centerline_recall=float(center["recall_curve"][i]),
        centerline_precision=float(center["precision_curve"][i]),
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        for k, name in enumerate(ERROR_NAMES):
            metrics[f"centerline_{name}"] = float(sums[1][0][i, k] / sums[1][1][i])
    metrics = {k: (None if isinstance(v, float) and v != v else v) for k, v in metrics.items()}
    per_threshold = {
        "prob_th": list(APOLLO_THRESHOLDS),
        "laneline_F": lane["f_curve"].tolist(),
        "laneline_R": lane["recall_curve"].tolist(),
        "laneline_P": lane["precision_curve"].tolist(),
        "centerline_F": center["f_curve"].tolist(),
        "centerline_R": center["recall_curve"].tolist(),
        "centerline_P": center["precision_curve"].tolist(),
    }
    per_frame = []
    starts = {k: np.cumsum(ragged[f"pairs{k}"][1]) - ragged[f"pairs{k}"][1] for k in (0, 1)}
    for f, name in enumerate(names):
        row: dict[str, Any] = {"raw_file": name}
        for k, label in ((0, "laneline"), (1, "centerline")):
            counts = fixed[f"counts{k}"][f]
            row[f"{label}_per_threshold"] = counts.tolist()
            rows = ragged[f"pairs{k}"][0][starts[k][f] : starts[k][f] + ragged[f"pairs{k}"][1][f]]
            at = rows[rows[:, 0] == i]
            entry = dict(zip(("r_lane", "p_lane", "cnt_gt", "cnt_pred"), counts[i].tolist(), strict=True))
            for e, error in enumerate(ERROR_NAMES):
                entry[error] = at[:, 1 + e].tolist()
            row[f"{label}_at_maxF"] = entry
        per_frame.append(row)
    return {"metrics": metrics, "per_threshold": per_threshold, "per_frame": per_frame}


def _score_once_chunk(job: tuple[list[str], str, str, str]) -> dict[str, Any]:
    from drivemetrics.lane3d.io import ScoredLanesFrame, read_once_file
    from drivemetrics.lane3d.once_scoring import once3d_matches
    from drivemetrics.lane3d.packed import pack_lane_lists

    names, gt_dir, pred_dir, compat = job
    gts, preds, missing = [], [], []
    for name in names:
        gts.append(read_once_file(Path(gt_dir) / name, prediction=False))
        path = Path(pred_dir) / name
        if not path.is_file():
            if compat == "reference":
                raise ValueError(f"{path}: missing prediction file (the official evaluator stops: FileNotFoundError)")
            preds.append(ScoredLanesFrame(str(path)))
            missing.append(name)
            continue
        preds.append(read_once_file(path, prediction=True))
    g = pack_lane_lists([f.points for f in gts])
    p = pack_lane_lists([f.points for f in preds], scores=[f.scores for f in preds])
    try:
        out = once3d_matches(p, g, frames=len(names), compat=compat)  # type: ignore[arg-type]
    except ValueError as error:  # name the file: reference mode, a prediction of fewer than 2 points
        frame = int(str(error).split("(frame ")[1].split(")")[0]) if "(frame " in str(error) else 0
        raise ValueError(f"{Path(pred_dir) / names[frame]}: {error}") from None
    return {"counts": out["counts"], "distance_sum": out["distance_sum"], "missing": missing}


def evaluate_once3d_files(
    gt_dir: str | Path,
    pred_dir: str | Path,
    compat: Compat = "default",
    workers: int | None = 1,
    device: torch.device | str = "cpu",
    progress: bool | None = False,
) -> dict[str, Any]:
    """Score an ONCE-3DLanes prediction folder against its GT folder (``<sequence>/cam01/<timestamp>.json``): the
    18-row score-threshold table of ``evaluation/eval_utils.py`` (F1, precision, recall, distance error).

    Every GT file is scored with the prediction file of the same name (prediction files without a GT twin are
    ignored, as the tool). ``"reference"``: a missing prediction file or a prediction of fewer than 2 points raises
    (the tool stops); ``"default"``: a missing file is an empty prediction (its GT lanes missed), counted in
    ``missing_predictions``. Kernels on the host (OpenCV raster, Munkres); ``device`` is accepted for the grammar.

    Returns:
        ``{"table": [18 rows {prob_thresh, F1, precision, recall, distance_error, gt_all, pred_all, tp_all}],
        "metrics_at_0.95": the last row, "per_frame": [{file, gt_num, pred_num, tp, distance_sum}],
        "missing_predictions": [...]}`` (NaN as ``None``).

    Examples:
        >>> import json, os, tempfile
        >>> from drivemetrics.lane3d.evaluate import evaluate_once3d_files
        >>> lane = [[1.8, 1.6, z] for z in range(3, 41)]
        >>> with tempfile.TemporaryDirectory() as d:
        ...     for sub, data in (("gt", {"lanes": [lane]}), ("pred", {"lanes": [{"points": lane, "score": 0.99}]})):
        ...         os.makedirs(os.path.join(d, sub, "000001", "cam01"))
        ...         _ = open(os.path.join(d, sub, "000001", "cam01", "1.json"), "w").write(json.dumps(data))
        ...     out = evaluate_once3d_files(os.path.join(d, "gt"), os.path.join(d, "pred"))
        >>> out["metrics_at_0.95"]["F1"], out["metrics_at_0.95"]["tp_all"]
        (1.0, 1)
    """
    from drivemetrics.lane3d.io import list_once_frames
    from drivemetrics.lane3d.once_scoring import ONCE_LABELS, ONCE_THRESHOLDS, once3d_scores

    check_compat(compat)
    if not Path(pred_dir).is_dir():
        raise ValueError(f"{pred_dir}: not a folder (ONCE-3DLanes predictions)")
    names = list_once_frames(gt_dir)
    shard = current_rank_shard()
    mine = list(range(len(names))) if shard is None else shard.indices(len(names))
    jobs = [
        ([names[i] for i in mine[s : s + SCORED_CHUNK_FRAMES]], str(gt_dir), str(pred_dir), compat)
        for s in range(0, len(mine), SCORED_CHUNK_FRAMES)
    ]
    workers = check_workers_or_auto(workers)
    parts = []
    with _torch_threads(), progress_bar(len(mine), "once3d-eval", "frames", progress) as bar:
        for part in map_in_processes(_score_once_chunk, jobs, workers if len(jobs) > 1 else 1):
            parts.append(part)
            bar.update(part["counts"].shape[0])
    t = len(ONCE_THRESHOLDS)
    counts = np.concatenate([p["counts"] for p in parts]) if parts else np.zeros((0, t, 3), np.int64)
    dsum = np.concatenate([p["distance_sum"] for p in parts]) if parts else np.zeros((0, t))
    missing = [name for p in parts for name in p["missing"]]
    fixed, _ = _gather_rows(mine, {"counts": counts, "distance_sum": dsum}, {})
    counts, dsum = fixed["counts"], fixed["distance_sum"]
    total, total_d = counts.sum(0), dsum.sum(0)
    scores = once3d_scores(total, total_d, compat=compat, validate_args=False)

    def num(value: float) -> float | None:
        return None if value != value else float(value)

    table = [
        {
            "prob_thresh": float(label),
            "threshold_value": ONCE_THRESHOLDS[k],
            "F1": num(scores["F1"][k]),
            "precision": num(scores["precision"][k]),
            "recall": num(scores["recall"][k]),
            "distance_error": num(scores["distance_error"][k]),
            "gt_all": int(total[k, 0]),
            "pred_all": int(total[k, 1]),
            "tp_all": int(total[k, 2]),
            "distance_sum": float(total_d[k]),
        }
        for k, label in enumerate(ONCE_LABELS)
    ]
    per_frame = [
        {
            "file": name,
            "gt_num": counts[f, :, 0].tolist(),
            "pred_num": counts[f, :, 1].tolist(),
            "tp": counts[f, :, 2].tolist(),
            "distance_sum": dsum[f].tolist(),
        }
        for f, name in enumerate(names)
    ]
    return {"table": table, "metrics_at_0.95": table[-1], "per_frame": per_frame, "missing_predictions": missing}
