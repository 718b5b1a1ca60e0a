"""Lane subcommands of the ``drivemetrics`` command: ``tusimple-eval``, ``culane-eval``, ``llamas-eval``,
``curvelanes-eval``."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

from drivemetrics._internal.options import (
    add_compat,
    add_device,
    add_input,
    add_no_progress,
    add_threads,
    add_workers,
    check_device,
    number_in,
    progress_setting,
)

__all__ = ["CULANE_DEVKIT_NAMES", "register"]

#: Python result keys -> the names LaneEval prints (the CLI and its JSON keep them).
_TUSIMPLE_NAMES = {"accuracy": "Accuracy", "fp": "FP", "fn": "FN", "f1": "F1"}


def _tusimple_eval(args: argparse.Namespace) -> int:
    from drivemetrics._internal.files import atomic_write_text, check_output_path
    from drivemetrics.lane.evaluate import evaluate_tusimple_files

    check_device(args.device)  # before any work: one line naming --device
    if args.json:
        check_output_path(args.json, input_files=[args.pred, args.gt], option="--json", is_folder=False)
    if args.threads is not None:  # the images are scored in one batch: its torch threads
        import torch

        torch.set_num_threads(args.threads)
    overall, per_image = evaluate_tusimple_files(
        args.pred,
        args.gt,
        ego_only=args.ego_only,
        image_width=args.image_width,
        compat=args.compat,
        progress=progress_setting(args),
        device=args.device,
    )
    overall = {devkit: overall[key] for key, devkit in _TUSIMPLE_NAMES.items()}  # the devkit's names
    for name, value in overall.items():
        print(f"{name:<8} {value:.6f}")
    print(f"images   {len(per_image)}")
    if args.json:
        payload = {**overall, "per_image": per_image} if args.per_image else overall  # a flag adds keys, moves none
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
    check_device(args.device)  # before any work: one line naming --device
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
        device=args.device,
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


def _check_json(args: argparse.Namespace, inputs: list[str], suffixes: tuple[str, ...]) -> None:
    from drivemetrics._internal.files import check_output_path

    if args.json:
        check_output_path(
            args.json, input_files=inputs, input_dirs=inputs, read_suffixes=suffixes, option="--json", is_folder=False
        )


def _write_json(args: argparse.Namespace, result: dict) -> None:
    from drivemetrics._internal.files import atomic_write_text

    if args.json:
        atomic_write_text(args.json, json.dumps(result, indent=1) + "\n")


def _llamas_eval(args: argparse.Namespace) -> int:
    from drivemetrics.lane.evaluate_lanes2d import evaluate_llamas_dirs, rank_is_main

    if args.device is not None:  # before any work: one line naming --device
        from drivemetrics._internal.options import check_device

        check_device(args.device)
    if args.iou in ("pixel", "both"):  # the optional dependencies, before anything is read
        from drivemetrics.lane.culane_official import load_cv2

        load_cv2("the LLAMAS pixel IoU")
    if args.iou in ("shapely", "both"):
        from drivemetrics._internal.extras import require

        require("llamas", "shapely.geometry", "LLAMAS iou='shapely'")
    # numpy, OpenCV and SciPy do the work (torch is not imported without --device); parallel work via --workers
    _check_json(args, [args.pred, args.gt], (".json", ".txt"))
    from drivemetrics._internal.memory import keep_freed_memory

    keep_freed_memory()  # a frame's crops (~0.2 MB each) reuse freed memory, not fresh pages (forked workers too)
    result = evaluate_llamas_dirs(
        args.pred,
        args.gt,
        line_width=args.line_width,
        iou=args.iou,
        compat=args.compat,
        chunk=args.chunk,
        workers=args.workers,
        per_image=args.per_image,
        progress=progress_setting(args),
        device=args.device,
    )
    if not rank_is_main():  # torchrun: rank 0 reports
        return 0
    blocks = [("", result["pooled"], result["multi_threshold"])]
    if "pooled_unofficial" in result:
        blocks.append((" (shapely IoU)", result["pooled_unofficial"], result["multi_threshold_unofficial"]))
    for label, pooled, multi in blocks:
        for key in ("precision", "recall", "f1"):
            print(f"{key + label:<10} {pooled[key]:.6f}")
        print(f"F1@75{label:<5} {multi['F1@75']:.6f}")
        print(f"mF1{label:<7} {multi['mF1']:.6f}")
        print(f"TP {pooled['tp']}  FP {pooled['fp']}  FN {pooled['fn']}  frames {result['images']}")
    _write_json(args, result)
    return 0


def _image_size(text: str) -> tuple[float, float]:
    try:
        w, h = (float(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected WxH (e.g. 2560x1440), got {text[:80]!r}") from None
    if not (w > 0 and h > 0 and w < 1e6 and h < 1e6):
        raise argparse.ArgumentTypeError(f"width and height must be in (0, 1e6), got {text[:80]!r}")
    return w, h


def _curvelanes_eval(args: argparse.Namespace) -> int:
    from drivemetrics.lane.culane_official import load_cv2
    from drivemetrics.lane.evaluate_lanes2d import evaluate_curvelanes_dirs, rank_is_main

    if args.device is not None:  # before any work: one line naming --device
        from drivemetrics._internal.options import check_device

        check_device(args.device)
    load_cv2("the CurveLanes lane metric")  # before anything is read
    # numpy, OpenCV and SciPy do the work (torch is not imported without --device); parallel work via --workers
    _check_json(args, [args.pred, args.gt], (".json", ".txt"))
    from drivemetrics._internal.memory import keep_freed_memory

    keep_freed_memory()  # a chunk's masks reuse freed memory, not fresh pages (forked workers too)
    result = evaluate_curvelanes_dirs(
        args.pred,
        args.gt,
        image_size=args.image_size,
        score_threshold=args.score_threshold,
        score_thresholds=args.score_thresholds,
        compat=args.compat,
        chunk=args.chunk,
        workers=args.workers,
        per_image=args.per_image,
        progress=progress_setting(args),
        device=args.device,
        protocol=args.protocol,
    )
    if not rank_is_main():
        return 0
    pooled = result["pooled"]
    if args.protocol == "vega":
        best = result["vega_max_f1_threshold"]
        print(f"vega max F1 {result['vega_max_f1']:.6f} (score > {best:g})")
    if args.protocol == "ufldv2":
        ufld = result["ufldv2"]
        print(
            f"UFLDv2 C++ variant: precision {ufld['precision']:.6f}  recall {ufld['recall']:.6f}  F1 "
            f"{ufld['f1']:.6f}  TP {ufld['tp']}  FP {ufld['fp']}  FN {ufld['fn']}"
        )
        print("vega metric (CondLaneNet, CLRerNet):")
    for key in ("precision", "recall", "f1"):
        print(f"{key:<10} {pooled[key]:.6f}")
    print(
        f"hits {pooled['hit_num']}  predicted {pooled['pr_num']}  GT {pooled['gt_num']}  frames {result['images']}  "
        f"(score > {result['score_threshold']:g})"
    )
    _write_json(args, result)
    return 0


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
    _register_tusimple(subparsers)
    _register_culane(subparsers)
    _register_llamas(subparsers)
    _register_curvelanes(subparsers)


def _register_tusimple(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "tusimple-eval",
        help="TuSimple lane accuracy / FP / FN / F1 of a prediction file (official LaneEval rules)",
        description=(
            "Score TuSimple JSON-lines predictions (raw_file, lanes, run_time in ms) against labels (raw_file, "
            "lanes, h_samples). Prints Accuracy, FP, FN (per-image averages, as the official evaluator) and F1 "
            "(harmonic mean of 1 - FP and 1 - FN), all as fractions."
        ),
        epilog="example:\n  drivemetrics tusimple-eval --gt test_label.json --pred pred.json --json tusimple.json",
    )
    add_input(parser, "--pred", "file", required=True, help="prediction JSON-lines file")
    add_input(parser, "--gt", "file", required=True, help="label JSON-lines file")
    parser.add_argument("--json", default=None, metavar="OUT", help="also write {Accuracy, FP, FN, F1} to OUT")
    parser.add_argument(
        "--per-image", action="store_true", help="with --json, add the per-image scores under the key per_image"
    )
    add_no_progress(parser)
    add_threads(parser, "threads scoring the images (one batch; torch's intra-op threads)")
    add_device(parser, "torch device scoring the images (the files are read on the host)")
    parser.add_argument("--ego-only", action="store_true", help="score only the ego-left and ego-right lanes")
    parser.add_argument(
        "--image-width",
        type=number_in(0, 100_000, low_open=True),
        default=1280.0,
        help="image width for --ego-only (pixels, in (0, 100000], default 1280)",
    )
    add_compat(
        parser,
        "the official FP = n_pred - n_matched (may be negative); default counts the predictions that are no GT "
        "lane's best match",
    )
    parser.set_defaults(func=_tusimple_eval)


def _register_culane(subparsers: argparse._SubParsersAction) -> None:
    culane = subparsers.add_parser(
        "culane-eval",
        help="CULane lane precision / recall / F1 of a folder of .lines.txt predictions",
        description=(
            "Interpolate every lane with a natural cubic spline, draw it `line-width` px wide on a height x width "
            "image, match predictions to GT lanes one-to-one (max total IoU), count a pair with IoU > --iou as TP; "
            "precision / recall / F1 from the totals. --compat reference reproduces the official C++ evaluator "
            "(needs opencv-python-headless: pip install drivemetrics[culane])."
        ),
        epilog="examples:\n  drivemetrics culane-eval --gt culane --pred pred --list list/test.txt --json culane.json\n"
        "  drivemetrics culane-eval --gt culane --pred pred --list list/test_split --iou-range  # one row per category",
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
    add_device(
        culane, "torch device matching the lanes in every process (--compat reference draws with OpenCV on the host)"
    )
    culane.add_argument("--per-image", action="store_true", help="with --json, add per-image TP / FP / FN")
    add_no_progress(culane)
    culane.add_argument("--json", default=None, metavar="OUT", help="also write the scores (fractions) to OUT")
    culane.set_defaults(func=_culane_eval, sharded=True)


def _register_llamas(subparsers: argparse._SubParsersAction) -> None:
    from drivemetrics._internal.options import device_name

    llamas = subparsers.add_parser(
        "llamas-eval",
        epilog="example:\n  drivemetrics llamas-eval --gt labels/valid --pred pred --json llamas.json",
        help="LLAMAS lane precision / recall / F1 (the CULane metric), F1@75 and mF1 of .lines.txt predictions",
        description=(
            "Build the GT lanes l1, l0, r0, r1 from the LLAMAS labels' markers (rows 300-716), resample every "
            "predicted line with a B-spline (50 points), draw the lanes 30 px wide on 1276 x 717, match one-to-one "
            "(max total IoU), count IoU > 0.5 as TP; F1@75 and mF1 (IoU 0.50:0.05:0.95) from the same matches. "
            "--compat reference reproduces unsupervised_llamas' evaluate.py (needs opencv-python-headless)."
        ),
    )
    add_input(llamas, "--pred", "folder", required=True, help="folder of <seq>/<name>.lines.txt predictions")
    add_input(llamas, "--gt", "folder", required=True, help="LLAMAS label folder (labels/valid) of <seq>/<name>.json")
    llamas.add_argument(
        "--iou",
        "--protocol",
        dest="iou",
        choices=("pixel", "shapely", "both"),
        default="pixel",
        help="IoU: pixel (drawn lanes, the official numbers), shapely (the evaluator's unofficial area IoU, needs "
        "shapely) or both",
    )
    llamas.add_argument(
        "--line-width",
        type=number_in(0, 1000, low_open=True),  # the 1276 x 717 canvas, as culane-eval's
        default=30.0,
        help="drawn lane width in pixels (in (0, 1000], default 30)",
    )
    add_compat(
        llamas,
        "the official evaluator: lanes renamed after a drop, crashes on the cases the default handles (see the docs)",
    )
    llamas.add_argument(
        "--chunk", type=number_in(1, 100_000, kind=int), default=64, help="frames scored per batch (default 64)"
    )
    add_workers(llamas, "processes reading and scoring the files", auto=True)
    llamas.add_argument(
        "--device",
        type=device_name,
        default=None,
        metavar="NAME",
        help="torch device of the pixel IoU's intersections (a matrix product of the drawn masks; the lanes are "
        "drawn by OpenCV on the host); default: numpy on the CPU, without torch",
    )
    llamas.add_argument("--per-image", action="store_true", help="with --json, add per-frame TP / FP / FN")
    add_no_progress(llamas)
    llamas.add_argument("--json", default=None, metavar="OUT", help="also write the scores to OUT")
    llamas.set_defaults(func=_llamas_eval, sharded=True)


def _register_curvelanes(subparsers: argparse._SubParsersAction) -> None:
    from drivemetrics._internal.options import device_name

    curvelanes = subparsers.add_parser(
        "curvelanes-eval",
        epilog="example:\n  drivemetrics curvelanes-eval --gt valid --pred pred --json curvelanes.json",
        help="CurveLanes lane precision / recall / F1 (the vega lane metric) of .lines.json predictions",
        description=(
            "Scale every lane to 224 x 224, draw its chord-length natural cubic spline 5 px wide, match one-to-one "
            "(max total IoU), count IoU > 0.5 as a hit; predictions kept when score > --score-threshold (0.5); "
            "also the scores at 0.1 .. 0.9 and vega's max F1 over them. --compat reference reproduces the "
            "CondLaneNet / vega lane_metric.py (needs opencv-python-headless)."
        ),
    )
    add_input(curvelanes, "--pred", "folder", required=True, help="folder of <name>.lines.json predictions")
    add_input(
        curvelanes,
        "--gt",
        "folder",
        required=True,
        help="split folder (valid/) with valid.txt, labels/<name>.lines.json and images/ or image_sizes.json",
    )
    curvelanes.add_argument(
        "--image-size",
        type=_image_size,
        default=None,
        metavar="WxH",
        help="image size of every frame without images/<name>.jpg or an image_sizes.json entry",
    )
    curvelanes.add_argument(
        "--score-threshold",
        type=number_in(0, 1),  # scores are probabilities, as the library checks (curvelanes.py)
        default=0.5,
        help="score a kept prediction must exceed (in [0, 1], default 0.5, the papers')",
    )
    curvelanes.add_argument(
        "--score-thresholds",
        type=number_in(0, 1),
        nargs="+",
        default=None,
        metavar="T",
        help="thresholds of the per-threshold table and vega's max F1, each in [0, 1] (default 0.1 .. 0.9)",
    )
    curvelanes.add_argument(
        "--protocol",
        choices=("condlanenet", "vega", "ufldv2"),
        default="condlanenet",
        help="headline: F1 at --score-threshold (CondLaneNet, CLRerNet), also vega's max F1 over the thresholds, or "
        "also UFLDv2's C++ variant (lanes at 2560 x 1440, the CULane C++ rules on 224 x 224, 5 px, IoU > 0.5; "
        "JSON key ufldv2)",
    )
    add_compat(curvelanes, "the vega metric's epsilon in P / R / F1 and its crash on repeated points")
    curvelanes.add_argument(
        "--chunk", type=number_in(1, 100_000, kind=int), default=64, help="frames scored per batch (default 64)"
    )
    add_workers(curvelanes, "processes reading and scoring the files", auto=True)
    curvelanes.add_argument(
        "--device",
        type=device_name,
        default=None,
        metavar="NAME",
        help="torch device of the mask IoUs' intersections (a matrix product of the drawn masks; the lanes are "
        "drawn by OpenCV on the host); default: numpy on the CPU, without torch",
    )
    curvelanes.add_argument("--per-image", action="store_true", help="with --json, add per-frame hits and counts")
    add_no_progress(curvelanes)
    curvelanes.add_argument("--json", default=None, metavar="OUT", help="also write the scores to OUT")
    curvelanes.set_defaults(func=_curvelanes_eval, sharded=True)
