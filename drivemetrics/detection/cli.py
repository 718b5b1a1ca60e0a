"""Detection subcommand of the ``drivemetrics`` command: ``kitti-object-eval``."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from drivemetrics._internal.options import (
    add_compat,
    add_input,
    add_no_progress,
    add_workers,
    device_name,
    hide_aliases,
    progress_setting,
    resolve_workers,
)

__all__ = ["KITTI_DEVKIT_NAMES", "STATS_NAMES", "format_stats", "format_table", "register", "with_devkit_names"]

#: Stats file suffix of each metric, as the official C++ names them.
STATS_NAMES = {"2d": "detection", "aos": "orientation", "bev": "detection_ground", "3d": "detection_3d"}


def _atomic_write(path: Path, text: str) -> None:
    """Write ``text`` to a temporary file in ``path``'s folder, then rename it over ``path``."""
    from drivemetrics._internal.files import atomic_write_text

    atomic_write_text(path, text)


def format_stats(curves: list[list[float]]) -> str:
    """A ``stats_<class>_<metric>.txt`` body as the C++ ``saveStats`` writes it: one line per difficulty,
    each value ``%f`` followed by a space."""
    return "".join("".join(f"{v:f} " for v in row) + "\n" for row in curves)


def format_table(result: dict) -> str:
    """The AP table: per class, one row per metric, R11 and R40 for easy / moderate / hard."""
    from drivemetrics.detection.evaluate import DIFFICULTIES

    lines = []
    for cls, per_metric in result.items():
        lines.append(f"{cls.capitalize()}")
        lines.append(f"{'':8}" + "".join(f"{d:>20}" for d in DIFFICULTIES))
        lines.append(f"{'AP':8}" + "".join(f"{'R11':>10}{'R40':>10}" for _ in DIFFICULTIES))
        for metric, per_diff in per_metric.items():
            values = "".join(f"{per_diff[d]['ap_r11']:>10.4f}{per_diff[d]['ap_r40']:>10.4f}" for d in DIFFICULTIES)
            lines.append(f"{metric:8}{values}")
        lines.append("")
    return "\n".join(lines)


def _read_list(path: str) -> list[str]:
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


def _frame_names(gt_dir: Path, list_file: str | None) -> list[str]:
    """The frames to evaluate: those of ``--list``, else every ``.txt`` of the label folder, sorted; no repeats."""
    if list_file:
        frames = _read_list(list_file)
    else:
        with os.scandir(gt_dir) as entries:
            frames = sorted(e.name[:-4] for e in entries if e.name.endswith(".txt") and len(e.name) > 4)
    frames = list(dict.fromkeys(frames))
    if not frames:
        raise ValueError(f"--gt folder {gt_dir} holds no .txt label file")
    return frames


def _kitti_object_eval(args: argparse.Namespace) -> int:
    from drivemetrics._internal.read_ahead import read_ahead_all
    from drivemetrics.detection.io import read_object_table

    if args.device is not None:
        from drivemetrics._internal.options import check_device

        check_device(args.device)  # before any work: one line naming --device
    gt_dir, det_dir = Path(args.gt), Path(args.det)
    for name, folder in (("--gt", gt_dir), ("--pred", det_dir)):
        if not folder.is_dir():
            raise FileNotFoundError(f"{name} folder not found: {folder}")
    inputs = {gt_dir.resolve(), det_dir.resolve()}
    if args.write_stats and Path(args.write_stats).resolve() in inputs:
        raise ValueError("--out must not be the --gt or --pred folder (the stats would be read as frames)")
    if args.json:
        from drivemetrics._internal.files import check_output_path

        lists = [args.list] if args.list else []
        check_output_path(
            args.json,
            input_files=lists,
            input_dirs=[gt_dir, det_dir],
            read_suffixes=(".txt",),
            option="--json",
            is_folder=False,
        )
    frames = _frame_names(gt_dir, args.list)
    mine = frames
    progress = progress_setting(args)
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
        from drivemetrics.detection.evaluate import evaluate_kitti_objects

        gt_table = gt_pending.result()  # a label error first, as when the folders are read one after the other
        det_table = det_pending.result()
    if det_table.absent:
        print(f"warning: {det_table.absent_message()}", file=sys.stderr)
    groundtruth, detections = gt_table, det_table  # one table per folder: evaluated without building the frames
    if sharded:
        from drivemetrics._internal.distributed import current_shard

        shard = current_shard()
        if shard.world > 1:  # torchrun: every rank read its shard of the frames
            gts, dets = _gather_frames(
                shard, list(gt_table.frames().values()), list(det_table.frames().values()), len(frames)
            )
            if not shard.is_main:
                return 0
            groundtruth, detections = gts, dets
    result = evaluate_kitti_objects(
        detections,
        groundtruth,
        overlaps=args.overlaps,
        workers=resolve_workers(args.workers),
        progress=progress,
        device=args.device,
    )
    print(f"{len(frames)} frames, overlaps: {args.overlaps}")
    if not result:
        print("no class was evaluated (no detection of Car, Pedestrian or Cyclist with a usable box)")
    print(format_table(result))
    if args.write_stats:
        out = Path(args.write_stats)
        for cls, per_metric in result.items():
            for metric, per_diff in per_metric.items():
                curves = [per_diff[d]["curve"] for d in ("easy", "moderate", "hard")]
                _atomic_write(out / f"stats_{cls}_{STATS_NAMES[metric]}.txt", format_stats(curves))
    if args.json:
        _atomic_write(Path(args.json), json.dumps(with_devkit_names(result), indent=1) + "\n")
    return 0


#: The devkit's names of the per-difficulty keys (the JSON of ``kitti-object-eval`` uses them).
KITTI_DEVKIT_NAMES = {"ap_r11": "AP_R11", "ap_r40": "AP_R40"}


def with_devkit_names(result: dict) -> dict:
    """``{class: {metric: {difficulty: {...}}}}`` with the innermost keys renamed by :data:`KITTI_DEVKIT_NAMES`."""
    return {
        cls: {
            metric: {
                diff: {KITTI_DEVKIT_NAMES.get(k, k): v for k, v in entry.items()} for diff, entry in per_diff.items()
            }
            for metric, per_diff in per_metric.items()
        }
        for cls, per_metric in result.items()
    }


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the detection subcommands."""
    parser = subparsers.add_parser(
        "kitti-object-eval",
        help="KITTI object AP (2D, AOS, BEV, 3D; R11 and R40), exactly as the official C++ evaluate_object",
        description=(
            "Evaluate a KITTI object result folder (16-column lines with score) against a label folder: the official "
            "protocol (difficulties, Van / Person_sitting and DontCare handling, greedy matching, 41 recall "
            "thresholds), AP over 11 and 40 recall points per class, metric and difficulty. Every frame of the GT "
            "folder (or of --list) is evaluated; a frame without a result file counts as no detections (warning). "
            "Classes / metrics are evaluated only when detected, AOS only if no detection has alpha = -10, as the C++."
        ),
        epilog="example:\n  drivemetrics kitti-object-eval --gt training/label_2 --pred results/data --json kitti.json",
    )
    add_input(parser, "--gt", "folder", required=True, help="label folder (label_2): <frame>.txt, 15 columns")
    add_input(
        parser,
        "--pred",
        "folder",
        aliases=("--det",),
        dest="det",
        metavar="DIR",
        required=True,
        help="result folder: <frame>.txt, 16 columns (with score)",
    )
    add_input(parser, "--list", "file", help="file of frame names (one per line, e.g. 000123) to evaluate")
    parser.add_argument(
        "--json", metavar="OUT", help="write {class: {metric: {difficulty: {curve, AP_R11, AP_R40}}}} here (AP in %%)"
    )
    hide_aliases(
        parser.add_argument(
            "--out",
            "--write-stats",
            dest="write_stats",
            metavar="DIR",
            help="write the C++'s stats_<class>_<detection|orientation|detection_ground|detection_3d>.txt files here",
        ),
        "--write-stats",
    )
    parser.add_argument(
        "--device",
        type=device_name,
        default=None,
        metavar="NAME",
        help="torch device of the overlaps and the matching (default: numpy on the CPU, without torch)",
    )
    add_compat(
        parser,
        "the same numbers: both modes are the official C++ evaluate_object (accepted like every command's --compat)",
    )
    parser.add_argument(
        "--overlaps",
        choices=("strict", "loose"),
        default="strict",
        help="minimum overlaps: strict (official, 0.7/0.5/0.5) or loose (BEV/3D 0.5/0.25/0.25)",
    )
    add_workers(parser, "threads evaluating classes / metrics in parallel")
    add_no_progress(parser)
    parser.set_defaults(func=_kitti_object_eval, sharded=True)
