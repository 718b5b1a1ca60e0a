"""Detection subcommand of the ``drivemetrics`` command: ``kitti-object-eval``."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from drivemetrics._internal.options import (
    add_compat,
    add_device,
    add_input,
    add_no_progress,
    add_output,
    add_threads,
    progress_setting,
    resolve_workers,
)

__all__ = [
    "KITTI_DEVKIT_NAMES",
    "STATS_NAMES",
    "format_stats",
    "format_table",
    "json_result",
    "register",
    "with_devkit_names",
]

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
    """The AP table: per class, one row per metric, R11 and R40 for easy / moderate / hard, in % (as the devkit and
    every KITTI paper print it; the heading says so). ``result`` holds fractions (the API's unit); each is printed
    ``* 100``, which gives the devkit's ``sum / 40 * 100`` bit for bit (the same operations in the same order)."""
    from drivemetrics.detection.kitti_ap import DIFFICULTIES

    lines = []
    for cls, per_metric in result.items():
        lines.append(f"{cls.capitalize()}")
        lines.append(f"{'':8}" + "".join(f"{d:>20}" for d in DIFFICULTIES))
        lines.append(f"{'AP in %':8}" + "".join(f"{'R11':>10}{'R40':>10}" for _ in DIFFICULTIES))
        for metric, per_diff in per_metric.items():
            percent = [(per_diff[d]["ap_r11"] * 100, per_diff[d]["ap_r40"] * 100) for d in DIFFICULTIES]
            values = "".join(f"{r11:>10.4f}{r40:>10.4f}" for r11, r40 in percent)
            lines.append(f"{metric:8}{values}")
        lines.append("")
    return "\n".join(lines)


def _kitti_object_eval(args: argparse.Namespace) -> int:
    from drivemetrics.detection.evaluate import evaluate_kitti_object_folders

    if args.device is not None:
        from drivemetrics._internal.options import check_device

        check_device(args.device)  # before any work: one line naming --device
    gt_dir, det_dir = Path(args.gt), Path(args.det)
    for name, folder in (("--gt", gt_dir), ("--pred", det_dir)):
        if not folder.is_dir():
            raise FileNotFoundError(f"{name} folder not found: {folder}")
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
    done = evaluate_kitti_object_folders(
        gt_dir,
        det_dir,
        list_file=args.list,
        overlaps=args.overlaps,
        threads=resolve_workers(args.threads),
        progress=progress_setting(args),
        device=args.device,
    )
    if done is None:  # torchrun: another rank reports
        return 0
    result, frames = done
    print(f"{frames} frames, overlaps: {args.overlaps}")
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
        _atomic_write(Path(args.json), json.dumps(json_result(result), indent=1) + "\n")
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


def json_result(result: dict) -> dict:
    """The ``--json`` document: :func:`with_devkit_names` of ``result``: ``AP_R11`` / ``AP_R40`` and ``curve`` as
    fractions (0-1, the unit of the Python API and of every command's JSON). The printed table and the
    ``stats_*.txt`` files stay as the devkit writes them (AP in %, the curves as fractions)."""
    return with_devkit_names(result)


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
        "--json",
        metavar="OUT",
        help=(
            "write {class: {metric: {difficulty: {curve, AP_R11, AP_R40}}}} here; AP as fractions 0-1 as in every "
            "command's JSON (the printed table and the --out stats files keep the devkit's %%)"
        ),
    )
    add_output(
        parser,
        "--out",
        aliases=("--write-stats",),
        dest="write_stats",
        metavar="DIR",
        help="write the C++'s stats_<class>_<detection|orientation|detection_ground|detection_3d>.txt files here",
    )
    add_device(
        parser,
        "torch device of the overlaps and the matching",
        default=None,
        default_text="default: numpy on the CPU, without torch",
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
    add_threads(parser, "threads evaluating classes / metrics in parallel")
    add_no_progress(parser)
    parser.set_defaults(func=_kitti_object_eval, sharded=True)
