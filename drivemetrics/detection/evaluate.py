"""The KITTI object evaluation of two folders (labels and results, one ``<frame>.txt`` per frame): what
``kitti-object-eval`` runs. The AP kernel itself is :func:`drivemetrics.detection.kitti_ap.evaluate_kitti_objects`.

The label and the result folder are read and parsed side by side in two forked children (one per core) while this
process imports the evaluation; neither needs torch (the evaluation runs on numpy). Under ``torchrun`` every rank
reads its shard of the frames and rank 0 evaluates them all.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from drivemetrics.detection.kitti_ap import Overlaps

__all__ = ["evaluate_kitti_object_folders", "frame_names", "read_list"]


def read_list(path: str) -> list[str]:
    file = Path(path)
    if not file.is_file():
        raise FileNotFoundError(f"--list file not found: {file}")
    names = []
    from drivemetrics._internal.files import read_text

    for line_no, line in enumerate(read_text(file, what="--list file").splitlines(), start=1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) != 1:
            raise ValueError(f"{file}:{line_no}: expected one frame name per line, got {line!r}")
        names.append(fields[0][:-4] if fields[0].endswith(".txt") else fields[0])
    if not names:
        raise ValueError(f"--list file {file} names no frame")
    return names


def _gather_frames(shard: Any, gts: list, dets: list, count: int) -> tuple[list, list]:
    """Every rank's frames (``KittiObjects``) on every rank, in frame order: numbers as float64 rows, types as
    UTF-8 bytes (:mod:`drivemetrics._internal.distributed`)."""
    import torch

    from drivemetrics._internal.distributed import bytes_to_strings, strings_to_bytes
    from drivemetrics._internal.ragged import RaggedRows
    from drivemetrics.detection.io import KittiObjects

    def fields(prefix: str, objects: list, columns: int) -> dict[str, RaggedRows]:
        values = RaggedRows.from_frames([o.to_array() for o in objects], (columns,), torch.float64)
        types = RaggedRows.from_frames([strings_to_bytes(o.type) for o in objects], (), torch.uint8)
        return {f"{prefix}_values": values, f"{prefix}_types": types}

    frames = shard.gather_frames(shard.indices(count), **fields("gt", gts, 14), **fields("det", dets, 15))
    out = []
    for prefix in ("gt", "det"):
        values, types = frames.fields[f"{prefix}_values"].split(), frames.fields[f"{prefix}_types"].split()
        out.append(
            [KittiObjects.from_array(bytes_to_strings(t), v.numpy()) for t, v in zip(types, values, strict=True)]
        )
    return out[0], out[1]


def frame_names(gt_dir: Path, list_file: str | None) -> list[str]:
    """The frames to evaluate: those of ``--list``, else every ``.txt`` of the label folder, sorted; no repeats."""
    if list_file:
        frames = read_list(list_file)
    else:
        with os.scandir(gt_dir) as entries:
            frames = sorted(e.name[:-4] for e in entries if e.name.endswith(".txt") and len(e.name) > 4)
    frames = list(dict.fromkeys(frames))
    if not frames:
        raise ValueError(f"--gt folder {gt_dir} holds no .txt label file")
    return frames


def evaluate_kitti_object_folders(
    gt_dir: str | Path,
    det_dir: str | Path,
    *,
    list_file: str | None = None,
    overlaps: Overlaps = "strict",
    threads: int = 1,
    progress: bool | None = False,
    device: str | None = None,
) -> tuple[dict, int] | None:
    """The official KITTI object evaluation of the result folder ``det_dir`` against the label folder ``gt_dir``.

    Args:
        gt_dir / det_dir: label and result folders (``<frame>.txt``, the devkit's formats).
        list_file: the frames to evaluate, one name per line (default: every ``.txt`` of ``gt_dir``, sorted).
        overlaps: ``"strict"`` or ``"loose"`` (:func:`~drivemetrics.detection.kitti_ap.evaluate_kitti_objects`).
        threads: threads evaluating the (class, kind) curves in parallel.
        device: ``None``: numpy on the CPU, without torch; a torch device name: the overlaps and the matching there
            (:func:`~drivemetrics.detection.kitti_ap.evaluate_kitti_objects`).
        progress: a progress bar over the labels read and the curves (``None``: only on a terminal).

    Returns:
        ``(result, frames)``: :func:`~drivemetrics.detection.kitti_ap.evaluate_kitti_objects`'s result (AP as
        fractions in [0, 1]) and the number of frames; ``None`` on a ``torchrun`` rank other than 0.

    Examples:
        >>> import tempfile
        >>> from pathlib import Path
        >>> from drivemetrics.detection.evaluate import evaluate_kitti_object_folders
        >>> line = "Car 0.00 0 -1.57 100.00 150.00 300.00 250.00 1.50 1.60 4.00 1.00 1.70 15.00 -1.57"
        >>> root = Path(tempfile.mkdtemp())
        >>> for folder, text in (("label_2", line), ("results", line + " 0.9")):
        ...     (root / folder).mkdir()
        ...     for i in range(40):
        ...         _ = (root / folder / f"{i:06d}.txt").write_text(text + "\\n")
        >>> result, frames = evaluate_kitti_object_folders(root / "label_2", root / "results")
        >>> frames, result["car"]["3d"]["moderate"]["ap_r40"]
        (40, 0.975)
    """
    from drivemetrics._internal.read_ahead import read_ahead_all
    from drivemetrics.detection.io import read_object_table

    gt_dir, det_dir = Path(gt_dir), Path(det_dir)
    for name, folder in (("--gt", gt_dir), ("--det", det_dir)):
        if not folder.is_dir():
            raise FileNotFoundError(f"{name} folder not found: {folder}")
    frames = frame_names(gt_dir, list_file)
    mine = frames
    sharded = os.environ.get("WORLD_SIZE", "1").strip() not in ("", "0", "1")  # torchrun: ranks share the frames
    if sharded:  # this rank's frames (torch is imported: the readers run in this process)
        from drivemetrics._internal.distributed import current_shard

        mine = current_shard().take(frames)
        progress = progress if current_shard().is_main else False
    # one process: the label and the result folder are read and parsed side by side in two forked children (one
    # per core) while this process imports the evaluation; neither needs torch (the evaluation runs on numpy).
    # One progress bar (the labels'): two would overwrite each other on the terminal.
    readers = [
        (read_object_table, (gt_dir, mine, False, "error", progress)),
        (read_object_table, (det_dir, mine, True, "warn", False)),
    ]
    with read_ahead_all(readers) as (gt_pending, det_pending):
        from drivemetrics.detection.kitti_ap import evaluate_kitti_objects

        gt_table = gt_pending.result()  # a label error first, as when the folders are read one after the other
        det_table = det_pending.result()
    if det_table.absent:
        from drivemetrics._internal.progress import warning_line

        warning_line(det_table.absent_message())
    groundtruth, detections = gt_table, det_table  # one table per folder: evaluated without building the frames
    if sharded:
        from drivemetrics._internal.distributed import current_shard

        shard = current_shard()
        if shard.world > 1:  # torchrun: every rank read its shard of the frames
            gts, dets = _gather_frames(
                shard, list(gt_table.frames().values()), list(det_table.frames().values()), len(frames)
            )
            if not shard.is_main:
                return None
            groundtruth, detections = gts, dets
    result = evaluate_kitti_objects(
        detections, groundtruth, overlaps=overlaps, threads=threads, progress=progress, device=device
    )
    return result, len(frames)
