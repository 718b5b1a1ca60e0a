"""Road subcommands: ``road-eval`` (the KITTI-ROAD devkit's evaluation, perspective or BEV) and ``road-bev``."""

from __future__ import annotations

import argparse
import json
import sys

from drivemetrics._internal.options import (
    add_input,
    add_no_progress,
    add_threads,
    add_workers,
    device_name,
    hide_aliases,
    progress_setting,
)

__all__ = ["ROAD_CATEGORIES", "SPACES", "register", "run_road_bev", "run_road_eval"]

# Light at import (``drivemetrics road-eval --help`` must not load torch): the library is imported in the run
# functions, and the choices below are copies of drivemetrics.road.evaluate's constants (a test keeps them equal).
ROAD_CATEGORIES: tuple[str, ...] = ("um_road", "umm_road", "uu_road", "um_lane")
SPACES: tuple[str, ...] = ("perspective", "bev")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``road-eval`` and ``road-bev`` to the ``drivemetrics`` command."""
    _register_road_eval(subparsers)
    _register_road_bev(subparsers)


def _register_road_eval(subparsers: argparse._SubParsersAction) -> None:
    ev = subparsers.add_parser(
        "road-eval",
        help="evaluate KITTI-ROAD result PNGs (pooled MaxF, AP, working point per category), like the devkit",
        description=(
            "Evaluate 8-bit confidence PNGs named like the ground truth (um_road_000000.png ...) against "
            "KITTI-ROAD ground truth, pooled over each category's frames, as the devkit's evaluateRoad does. "
            "With --space bev, ground truth and results are first warped to the 800 x 400 BEV grid with each "
            "frame's calibration (the devkit's lookup)."
        ),
        epilog="example:\n  drivemetrics road-eval --gt data_road/training --pred results --space bev --json road.json",
    )
    add_input(
        ev,
        "--gt",
        "folder",
        aliases=("--data",),
        dest="data",
        metavar="DIR",
        required=True,
        help="folder with gt_image_2/ and calib/ (or training/ with them)",
    )
    add_input(
        ev,
        "--pred",
        "folder",
        aliases=("--results",),
        dest="results",
        metavar="DIR",
        required=True,
        help="folder with the result PNGs",
    )
    ev.add_argument("--space", choices=SPACES, default="perspective", help="evaluation space (default: perspective)")
    ev.add_argument("--json", metavar="OUT", help="also write {category: {MaxF, AvgPrec, ...}} (fractions) here")
    ev.add_argument(
        "--crop", action="store_true", help="crop results larger than their ground truth (top-left) instead of failing"
    )
    ev.add_argument(
        "--categories", nargs="+", choices=ROAD_CATEGORIES, default=list(ROAD_CATEGORIES), help="categories to evaluate"
    )
    ev.add_argument(
        "--compat",
        choices=("default", "reference"),
        default="default",
        help="reference: working-point values (PRE_wp ...) from float32 counts, exactly as the devkit prints them "
        "(default: exact float64 ratios)",
    )
    ev.add_argument(
        "--corridor",
        action="store_true",
        help="with --space bev: add the driving-corridor scores (Table IV of Fritsch et al. 2013) for um_lane, "
        "fitted at the category's BEV working point",
    )
    add_no_progress(ev)
    add_workers(ev, "processes decoding and counting the frames (forked: the CPU path imports no torch)", auto=True)
    workers = next(a for a in ev._actions if a.dest == "workers")
    workers.option_strings.append("--threads")  # its spelling while the pool was threads: accepted, hidden
    ev._option_string_actions["--threads"] = workers
    hide_aliases(workers, "--threads")
    ev.add_argument(
        "--device",
        type=device_name,
        default=None,
        metavar="NAME",
        help="torch device counting the pixels (default: numpy on the CPU, without torch; the same numbers)",
    )
    ev.set_defaults(func=run_road_eval)


def _register_road_bev(subparsers: argparse._SubParsersAction) -> None:
    """Add ``road-bev``."""
    bev = subparsers.add_parser(
        "road-bev",
        help="warp perspective PNGs to the KITTI-ROAD BEV grid (for submitting to the KITTI server)",
        description=(
            "Warp every PNG of --pred to the 800 x 400 bird's-eye view with its calibration (um_road_000012.png "
            "uses calib/um_road_000012.txt or calib/um_000012.txt), like the devkit's transform2BEV."
        ),
        epilog="example:\n  drivemetrics road-bev --calib data_road/testing/calib --pred results --out results_bev",
    )
    add_input(bev, "--calib", "folder", required=True, help="folder with the calibration .txt files")
    add_input(
        bev,
        "--pred",
        "folder",
        aliases=("--input",),
        dest="input",
        metavar="DIR",
        required=True,
        help="folder with perspective PNGs",
    )
    hide_aliases(
        bev.add_argument(
            "--out",
            "--output",
            dest="output",
            metavar="DIR",
            required=True,
            help="folder for the BEV PNGs (same names)",
        ),
        "--output",
    )
    add_no_progress(bev)
    add_threads(bev, "threads decoding PNGs")
    from drivemetrics._internal.options import add_device  # local: road-eval's options are edited apart (issue 50)

    add_device(
        bev,
        "torch device warping the images (PNGs are decoded and written on the host; the same pixels)",
        default=None,
        default_text="default: numpy on the CPU, without torch",
    )
    bev.set_defaults(func=run_road_bev)


def run_road_eval(args: argparse.Namespace) -> int:
    """``drivemetrics road-eval``: print the table, optionally write JSON; exit code 0."""
    from drivemetrics._internal.files import atomic_write_text, check_output_path
    from drivemetrics._internal.memory import keep_freed_memory
    from drivemetrics.road.evaluate import DEVKIT_NAMES, evaluate_results, format_scores_table

    keep_freed_memory()  # a few MB of temporaries per frame: without it, every frame touches fresh pages

    if args.json:
        check_output_path(
            args.json,
            input_dirs=[args.data, args.results],
            read_suffixes=(".png", ".txt"),
            option="--json",
            is_folder=False,
        )
    if args.corridor and args.space != "bev":
        raise ValueError("`--corridor` needs `--space bev` (the corridor is fitted in the bird's-eye view)")
    if args.corridor and "um_lane" not in args.categories:
        raise ValueError("`--corridor` scores the ego-lane: include um_lane in `--categories`")
    if args.device is not None:
        from drivemetrics._internal.options import check_device

        check_device(args.device)  # before any work: one line naming --device
    scores = evaluate_results(
        args.data,
        args.results,
        space=args.space,
        crop=args.crop,
        categories=args.categories,
        compat=args.compat,
        progress=progress_setting(args),
        log=lambda line: print(line, file=sys.stderr),
        workers=args.workers,
        device=args.device,
    )
    print(format_scores_table(scores, args.space))
    if args.corridor:
        if "um_lane" not in scores:
            raise ValueError("`--corridor` needs um_lane ground truth and results, and none were evaluated")
        # the devkit's working point may be 0 (everything counts as road); the corridor needs a threshold > 0
        from drivemetrics.road.evaluate import format_corridor_table, kitti_corridor_table

        threshold = max(scores["um_lane"]["best_threshold"], 1 / 255)
        table = kitti_corridor_table(args.data, args.results, threshold=threshold, crop=args.crop)
        print(f"\nDriving corridor (um_lane, BEV, threshold {threshold:.4f}):\n{format_corridor_table(table)}")
    # the JSON keeps the devkit's key names (the Python API returns snake_case keys)
    output: dict[str, dict[str, float]] = {
        cat: {DEVKIT_NAMES[k]: v for k, v in entry.items()} for cat, entry in scores.items()
    }
    if args.corridor:
        output["um_lane_corridor"] = table
    if args.json:
        # NaN (no valid road pixel in a category) becomes null, keeping the file standard JSON
        clean = {cat: {k: (None if v != v else v) for k, v in entry.items()} for cat, entry in output.items()}
        atomic_write_text(args.json, json.dumps(clean, indent=2, allow_nan=False) + "\n")
    return 0


def run_road_bev(args: argparse.Namespace) -> int:
    """``drivemetrics road-bev``: write one BEV PNG per input PNG; exit code 0."""
    from drivemetrics._internal.memory import keep_freed_memory
    from drivemetrics.road.evaluate import transform_to_bev

    keep_freed_memory()  # each PNG decoded, warped and encoded in fresh arrays
    if args.device is not None:
        from drivemetrics._internal.options import check_device

        check_device(args.device)  # before any work: one line naming --device
    written = transform_to_bev(
        args.calib, args.input, args.output, progress=progress_setting(args), threads=args.threads, device=args.device
    )
    print(f"wrote {len(written)} BEV image(s) to {args.output}")
    return 0
