"""Lane subcommands of the ``drivemetrics`` command: ``tusimple-eval``, ``culane-eval``."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

from drivemetrics._internal.options import (
    add_compat,
    add_input,
    add_no_progress,
    add_workers,
    number_in,
    progress_setting,
)

__all__ = ["CULANE_DEVKIT_NAMES", "register"]

#: Python result keys -> the names LaneEval prints (the CLI and its JSON keep them).
_TUSIMPLE_NAMES = {"accuracy": "Accuracy", "fp": "FP", "fn": "FN", "f1": "F1"}


def _tusimple_eval(args: argparse.Namespace) -> int:
    from drivemetrics._internal.files import atomic_write_text, check_output_path
    from drivemetrics.lane.evaluate import evaluate_tusimple_files

    if args.json:
        check_output_path(args.json, input_files=[args.pred, args.gt], option="--json", is_folder=False)
    overall, per_image = evaluate_tusimple_files(
        args.pred,
        args.gt,
        ego_only=args.ego_only,
        image_width=args.image_width,
        compat=args.compat,
        progress=progress_setting(args),
    )
    overall = {devkit: overall[key] for key, devkit in _TUSIMPLE_NAMES.items()}  # the devkit's names
    for name, value in overall.items():
        print(f"{name:<8} {value:.6f}")
    print(f"images   {len(per_image)}")
    if args.json:
        payload = {"overall": overall, "per_image": per_image} if args.per_image else overall
        atomic_write_text(args.json, json.dumps(payload, indent=1) + "\n")
    return 0


def _category_lists(paths: Sequence[str]) -> dict[str, list[str]]:
    """``{row name: entries as written}`` of list files and folders of list files (CULane ``list/test_split``)."""
    import re

    from drivemetrics.lane.io import read_culane_list

    files: list[Path] = []
    for item in paths:
        path = Path(item)
        if path.is_dir():
            found = sorted(path.glob("*.txt"))
            if not found:
                raise FileNotFoundError(f"--list folder {path} holds no .txt list files")
            files.extend(found)
        elif path.is_file():
            files.append(path)
        else:
            raise FileNotFoundError(f"--list: no such file or folder: {path}")
    rows: dict[str, list[str]] = {}
    for path in files:
        name = re.sub(r"^test\d+_", "", path.stem)
        if name in rows:
            raise ValueError(f"--list: two lists give the row name {name!r} ({path})")
        rows[name] = read_culane_list(path, as_written=True)
    return rows


def _f1_label(t: float) -> str:
    return f"F1@{round(t * 100):d}"


def _culane_eval(args: argparse.Namespace) -> int:
    if args.compat == "reference":  # OpenCV draws the lanes: checked before anything is read
        from drivemetrics.lane.culane_official import load_cv2

        load_cv2()
    import torch

    from drivemetrics.lane.culane import IOU_RANGE
    from drivemetrics.lane.evaluate import evaluate_culane_dirs, threshold_key

    # a chunk's tensors are small: one thread per process, parallel work through --workers
    torch.set_num_threads(1)

    from drivemetrics._internal.files import atomic_write_text, check_output_path

    if args.json:
        inputs = [args.pred, args.gt, *(args.list or [])]
        check_output_path(
            args.json, input_files=inputs, input_dirs=inputs, read_suffixes=(".txt",), option="--json", is_folder=False
        )
    thresholds = list(IOU_RANGE) if args.iou_range else list(dict.fromkeys(args.iou or [0.5]))
    if args.iou_range and args.iou:
        raise ValueError("give either --iou or --iou-range, not both")
    categories = _category_lists(args.list) if args.list else None
    table = categories is not None and (len(categories) > 1 or any(Path(p).is_dir() for p in args.list))
    names = None
    if categories is not None and not table:
        names = next(iter(categories.values()))
        categories = None
    result = evaluate_culane_dirs(
        args.pred,
        args.gt,
        names,
        args.height,
        args.width,
        args.line_width,
        thresholds,
        chunk=args.chunk,
        compat=args.compat,
        workers=args.workers,
        per_image=args.per_image,
        categories=categories,
        progress=progress_setting(args),
    )
    from drivemetrics._internal.distributed import current_shard

    if not current_shard().is_main:  # torchrun: rank 0 reports
        return 0
    shown = thresholds if len(thresholds) <= 3 else [t for t in thresholds if t in (0.5, 0.75)]
    iou_range = tuple(sorted(thresholds)) == IOU_RANGE  # the papers' mF1 is the mean F1 over IoU 0.50:0.05:0.95
    mean_key = "mean_f1"
    mean_label = "mF1" if iou_range else "mean F1"
    if table:
        header = f"{'category':<12} {'images':>7} {'TP':>7} {'FP':>7} {'FN':>7} " + " ".join(
            f"{_f1_label(t):>7}" for t in shown
        )
        if len(thresholds) > 1:
            header += f" {mean_label:>7}"
        print(header)
        rows = {**result["categories"], "total": result}
        for name, row in rows.items():
            first = row["by_threshold"][threshold_key(thresholds[0])]
            n_gt = first["tp"] + first["fn"]
            if n_gt == 0:  # CULane's cross: no GT lanes, papers report the FP count
                cells = f"{'-':>7} {first['fp']:>7} {'-':>7} " + " ".join(f"{'-':>7}" for _ in shown)
                cells += f" {'-':>7}" if len(thresholds) > 1 else ""
            else:
                cells = f"{first['tp']:>7} {first['fp']:>7} {first['fn']:>7} " + " ".join(
                    f"{100 * row['by_threshold'][threshold_key(t)]['f1']:>7.2f}" for t in shown
                )
                cells += f" {100 * row[mean_key]:>7.2f}" if len(thresholds) > 1 else ""
            print(f"{name:<12} {row['images']:>7} {cells}")
        print("F1 in %; a category without GT lanes (cross) is reported as its FP count")
    else:
        for key in ("precision", "recall", "f1"):
            print(f"{key:<10} {result[key]:.6f}")
        for t in shown if len(thresholds) > 1 else []:
            print(f"{_f1_label(t):<10} {result['by_threshold'][threshold_key(t)]['f1']:.6f}")
        if len(thresholds) > 1:
            print(f"{mean_label:<10} {result[mean_key]:.6f}")
        print(f"TP {result['tp']}  FP {result['fp']}  FN {result['fn']}  images {result['images']}")
    if args.json:
        output = _with_devkit_names(result) if iou_range else result
        atomic_write_text(args.json, json.dumps(output, indent=1) + "\n")
    return 0


#: The papers' names of CULane result keys where they differ (``--iou-range`` JSON).
CULANE_DEVKIT_NAMES = {"mean_f1": "mF1"}


def _with_devkit_names(result: dict) -> dict:
    """``result`` with :data:`CULANE_DEVKIT_NAMES` applied to its keys and to those of its categories."""
    renamed = {CULANE_DEVKIT_NAMES.get(k, k): v for k, v in result.items()}
    if isinstance(result.get("categories"), dict):
        renamed["categories"] = {name: _with_devkit_names(row) for name, row in result["categories"].items()}
    return renamed


def _add_canvas_options(culane: argparse.ArgumentParser) -> None:
    """``culane-eval``'s canvas: ``--height``, ``--width`` and ``--line-width``, each with its range."""
    pixels = number_in(1, 100_000, kind=int)
    culane.add_argument("--height", type=pixels, default=590, help="canvas height, px (default 590)")
    culane.add_argument("--width", type=pixels, default=1640, help="canvas width, px (default 1640)")
    width = number_in(0, 1000, low_open=True)
    culane.add_argument(
        "--line-width", type=width, default=30.0, help="drawn lane width, px (in (0, 1000], default 30)"
    )


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the lane subcommands."""
    parser = subparsers.add_parser(
        "tusimple-eval",
        help="TuSimple lane accuracy / FP / FN / F1 of a prediction file (official LaneEval rules)",
        description=(
            "Score TuSimple JSON-lines predictions (raw_file, lanes, run_time in ms) against labels (raw_file, "
            "lanes, h_samples). Prints Accuracy, FP, FN (per-image averages, as the official evaluator) and F1 "
            "(harmonic mean of 1 - FP and 1 - FN), all as fractions."
        ),
    )
    add_input(parser, "--pred", "file", required=True, help="prediction JSON-lines file")
    add_input(parser, "--gt", "file", required=True, help="label JSON-lines file")
    parser.add_argument("--json", default=None, metavar="OUT", help="also write {Accuracy, FP, FN, F1} to OUT")
    parser.add_argument("--per-image", action="store_true", help="with --json, add the per-image scores")
    add_no_progress(parser)
    parser.add_argument("--ego-only", action="store_true", help="score only the ego-left and ego-right lanes")
    parser.add_argument(
        "--image-width",
        type=number_in(0, 100_000, low_open=True),
        default=1280.0,
        help="image width for --ego-only (pixels, in (0, 100000])",
    )
    add_compat(
        parser,
        "the official FP = n_pred - n_matched (may be negative); default counts the predictions that are no GT "
        "lane's best match",
    )
    parser.set_defaults(func=_tusimple_eval)

    culane = subparsers.add_parser(
        "culane-eval",
        help="CULane lane precision / recall / F1 of a folder of .lines.txt predictions",
        description=(
            "Interpolate every lane with a natural cubic spline, draw it `line-width` px wide on a height x width "
            "image, match predictions to GT lanes one-to-one (max total IoU), count a pair with IoU > --iou as TP; "
            "precision / recall / F1 from the totals. --compat reference reproduces the official C++ evaluator "
            "(needs opencv-python-headless: pip install drivemetrics[culane])."
        ),
    )
    add_input(
        culane,
        "--pred",
        "folder",
        required=True,
        help="folder of predicted <image>.lines.txt files (missing = no lanes)",
    )
    add_input(culane, "--gt", "folder", required=True, help="folder of GT <image>.lines.txt files")
    add_input(
        culane,
        "--list",
        "file or folder",
        nargs="+",
        default=None,
        metavar="LIST",
        help="list file(s) of the images to score (default: every GT file); several files or a folder such as "
        "list/test_split give one table row each (row name = file name without the testN_ prefix)",
    )
    _add_canvas_options(culane)
    culane.add_argument(
        "--iou",
        type=number_in(0, 1),
        nargs="+",
        default=None,
        metavar="T",
        help="IoU threshold(s) a matched pair must exceed (0.5)",
    )
    culane.add_argument(
        "--iou-range", action="store_true", help="score IoU 0.50:0.05:0.95 in one pass: F1@50, F1@75 and mF1"
    )
    add_compat(culane, "the official C++ evaluator's numbers (0/1-point lanes count, its spline and rounding, OpenCV)")
    culane.add_argument(
        "--chunk", type=number_in(1, 100_000, kind=int), default=64, help="images scored per batch (default 64)"
    )
    add_workers(culane, "processes reading and scoring the files (torch runs one thread per process)", auto=True)
    culane.add_argument("--per-image", action="store_true", help="with --json, add per-image TP / FP / FN")
    add_no_progress(culane)
    culane.add_argument("--json", default=None, metavar="OUT", help="also write the scores to OUT")
    culane.set_defaults(func=_culane_eval, sharded=True)
