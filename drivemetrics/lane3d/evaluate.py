"""Evaluating OpenLane (v1) 3D lane folders: read the frames of a test list, pack them, score them in batches.

Under ``torchrun`` (the ``openlane3d-eval`` command, see :mod:`drivemetrics._internal.distributed`) each rank
reads and scores the frames ``rank, rank + world, ...``; the per-frame rows are gathered so that every rank holds
the one-process result.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from drivemetrics._internal.compat import Compat, check_compat
from drivemetrics._internal.distributed import bytes_to_strings, current_shard, strings_to_bytes
from drivemetrics._internal.pool import check_workers_or_auto, map_in_processes
from drivemetrics._internal.progress import progress_bar
from drivemetrics._internal.ragged import RaggedRows
from drivemetrics.lane3d.io import Lane3DFrame, read_openlane_gt, read_openlane_pred, read_test_list
from drivemetrics.lane3d.openlane import (
    COUNT_NAMES,
    ERROR_NAMES,
    openlane3d_gt_to_ground,
    openlane3d_matches,
    openlane3d_scores,
)

__all__ = ["evaluate_openlane3d_files", "evaluate_openlane3d_frames", "pack_lanes"]

#: Frames read and scored together (one kernel batch; one job of a worker process).
CHUNK_FRAMES = 256
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
    batch = len(frames)
    lanes = max((len(f) for f in frames), default=0)
    points = max((lane.shape[0] for f in frames for lane in f), default=0)
    out = np.zeros((batch, lanes, max(points, 1), 3))
    lengths = np.zeros((batch, lanes), dtype=np.int64)
    for b, frame in enumerate(frames):
        for k, lane in enumerate(frame):
            out[b, k, : lane.shape[0]] = lane
            lengths[b, k] = lane.shape[0]
    return torch.from_numpy(out).to(device), torch.from_numpy(lengths).to(device)


def _pack_values(values: Sequence[Sequence[Any]], lanes: int, points: int | None, dtype: Any) -> Tensor:
    shape = (len(values), lanes) if points is None else (len(values), lanes, points)
    out = np.zeros(shape, dtype=dtype)
    for b, frame in enumerate(values):
        for k, v in enumerate(frame):
            if points is None:
                out[b, k] = v
            else:
                out[b, k, : len(v)] = v
    return torch.from_numpy(out)


def _score_batch(gt: Sequence[Lane3DFrame], preds: Sequence[Lane3DFrame], compat: Compat, device: Any) -> dict:
    target, target_lengths = pack_lanes([f.points for f in gt], device)
    pred, pred_lengths = pack_lanes([f.points for f in preds], device)
    visibility = _pack_values([f.visibility or [] for f in gt], target.shape[1], target.shape[2], np.float64)
    extrinsic = torch.from_numpy(np.stack([f.extrinsic for f in gt])).to(device)  # type: ignore[arg-type]
    target = openlane3d_gt_to_ground(target, extrinsic)
    return openlane3d_matches(
        pred,
        _pack_values([f.categories for f in preds], pred.shape[1], None, np.int64).to(device),
        target,
        _pack_values([f.categories for f in gt], target.shape[1], None, np.int64).to(device),
        pred_lengths,
        target_lengths,
        visibility.to(device),
        compat,
    )


def evaluate_openlane3d_frames(
    gt: Sequence[Lane3DFrame],
    preds: Sequence[Lane3DFrame],
    compat: Compat = "default",
    device: torch.device | str = "cpu",
    batch_size: int = 256,
    progress: bool | None = False,
) -> dict[str, Any]:
    """Score frames already read (in this process): predictions are paired with annotations by ``file_path``, as
    the evaluator does.

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
    check_compat(compat)
    by_path = {f.file_path: f for f in gt}
    for f in preds:
        if f.file_path not in by_path:
            raise ValueError(f"prediction file_path {f.file_path!r} is not in the annotations")
    paired = [by_path[f.file_path] for f in preds]
    counts, pair_rows = [], []
    with progress_bar(len(preds), "openlane3d-eval", "frames", progress) as bar:
        for start in range(0, len(preds), batch_size):
            stop = min(start + batch_size, len(preds))
            out = _score_batch(paired[start:stop], preds[start:stop], compat, device)
            counts.extend(out["counts"].cpu())
            frame_of_pair = out["pairs"][:, 0].cpu()
            errors = out["pair_errors"].cpu()
            pair_rows.extend(errors[frame_of_pair == b] for b in range(stop - start))
            bar.update(stop - start)
    return _report(
        [f.file_path for f in preds],
        RaggedRows.from_frames(counts, (6,), torch.int64),
        RaggedRows.from_frames(pair_rows, (4,), torch.float64),
    )


def _report(file_paths: list[str], counts: RaggedRows, pair_errors: RaggedRows) -> dict[str, Any]:
    """The result dict from per-frame counts (one row per frame) and per-pair errors (frame after frame); the
    error means are taken over the pairs in frame order, as the evaluator's ``np.average``."""
    errors = pair_errors.rows
    has = errors > -1 + 1e-6
    scores = openlane3d_scores(counts.rows, torch.where(has, errors, 0.0).sum(0), has.sum(0))
    per_frame = []
    for k, (path, err) in enumerate(zip(file_paths, pair_errors.split(), strict=True)):
        row: dict[str, Any] = {"file_path": path}
        row.update(zip(FRAME_COUNT_KEYS, counts.rows[k].tolist(), strict=True))
        for e, name in enumerate(ERROR_NAMES):
            row[name] = err[:, e].tolist()
        per_frame.append(row)
    return {"metrics": _json_metrics(scores), "per_frame": per_frame}


def _json_metrics(scores: dict[str, Tensor]) -> dict[str, Any]:
    """The scores under the evaluator's names (``F_score``, ...): floats, and ints for the counts."""
    return {
        ("F_score" if name == "f_score" else name): (int(value) if name in COUNT_NAMES else float(value))
        for name, value in scores.items()
    }


def _score_files(job: tuple[list[tuple[str, str]], Compat, str]) -> list[dict[str, Any]]:
    """Read and score one chunk of frames (in a worker process or here); the per-frame rows."""
    files, compat, device = job
    gt = [read_openlane_gt(path) for path, _ in files]
    preds = [read_openlane_pred(path) for _, path in files]
    return evaluate_openlane3d_frames(gt, preds, compat, device, batch_size=CHUNK_FRAMES)["per_frame"]


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

    Each line ``L`` names ``gt_dir/L'`` and ``pred_dir/L'`` with ``L' = L.replace("jpg", "json")``. Frames are read
    and scored in chunks of :data:`CHUNK_FRAMES` (by ``workers`` processes from :data:`MIN_FRAMES_FOR_PROCESSES`
    frames on; ``workers=None``: a pool only where the measured time of the first chunks says it pays, see
    :func:`~drivemetrics._internal.pool.map_in_processes`); a prediction is paired by its ``file_path`` with an
    annotation of its chunk (normally the one of its own line). Under torchrun each rank reads and scores only its
    shard of the frames. Returns the dict of :func:`evaluate_openlane3d_frames`.

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
    lines = read_test_list(test_list)
    shard = current_shard()
    mine = shard.indices(len(lines))
    files = [
        (str(Path(gt_dir) / lines[i].replace("jpg", "json")), str(Path(pred_dir) / lines[i].replace("jpg", "json")))
        for i in mine
    ]
    jobs = [(files[start : start + CHUNK_FRAMES], compat, str(device)) for start in range(0, len(files), CHUNK_FRAMES)]
    # a worker process costs a second or more to start (it imports torch): worth it from a few chunks on
    workers = check_workers_or_auto(workers)
    if len(files) < MIN_FRAMES_FOR_PROCESSES:
        workers = 1
    elif workers is not None:
        workers = min(workers, len(jobs))
    rows: list[dict[str, Any]] = []
    with progress_bar(len(files), "openlane3d-eval", "frames", progress) as bar:
        for part in map_in_processes(_score_files, jobs, workers):
            rows.extend(part)
            bar.update(len(part))
    counts = RaggedRows.from_frames([[r[k] for k in FRAME_COUNT_KEYS] for r in rows], (6,), torch.int64)
    errors = [np.array([r[name] for name in ERROR_NAMES], dtype=np.float64).T.reshape(-1, 4) for r in rows]
    pair_errors = RaggedRows.from_frames(errors, (4,), torch.float64)
    if shard.world == 1:
        return _report([r["file_path"] for r in rows], counts, pair_errors)
    # every rank's frames on every rank, in the test-list order: the one-process report
    names = [strings_to_bytes([r["file_path"]]) for r in rows]
    frames = shard.gather_frames(
        mine, counts=counts, errors=pair_errors, names=RaggedRows.from_frames(names, (), torch.uint8)
    )
    paths = [bytes_to_strings(name)[0] for name in frames.fields["names"].split()]
    return _report(paths, frames.fields["counts"], frames.fields["errors"])
