"""Lane subcommands of the ``drivemetrics`` command: ``tusimple-eval``, ``culane-eval``."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def _tusimple_eval(args: argparse.Namespace) -> int:
    from drivemetrics._files import atomic_write_text, check_output_path
    from drivemetrics.lane.tusimple import evaluate_tusimple_files

    if args.json:
        check_output_path(args.json, input_files=[args.pred, args.gt], option="--json")
    overall, per_image = evaluate_tusimple_files(
        args.pred, args.gt, ego_only=args.ego_only, image_width=args.image_width, fp_mode=args.fp_mode
    )
    for name in ("Accuracy", "FP", "FN", "F1"):
        print(f"{name:<8} {overall[name]:.6f}")
    print(f"images   {len(per_image)}")
    if args.json:
        payload = {"overall": overall, "per_image": per_image} if args.per_image else overall
        atomic_write_text(args.json, json.dumps(payload, indent=1) + "\n")
    return 0


def _culane_eval(args: argparse.Namespace) -> int:
    from drivemetrics.lane.culane import evaluate_culane_dirs

    names = None
    if args.list:
        lines = Path(args.list).read_text(encoding="utf-8").split()
        names = [name if name.endswith(".lines.txt") else str(Path(name).with_suffix(".lines.txt")) for name in lines]
        names = [name.lstrip("/") for name in names]
    result = evaluate_culane_dirs(
        args.pred, args.gt, names, args.height, args.width, args.line_width, args.iou, chunk=args.chunk
    )
    for key in ("precision", "recall", "f1"):
        print(f"{key:<10} {result[key]:.6f}")
    print(f"TP {result['tp']}  FP {result['fp']}  FN {result['fn']}  images {result['images']}")
    if args.json:
        out = Path(args.json)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return 0


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
    parser.add_argument("--pred", required=True, help="prediction JSON-lines file")
    parser.add_argument("--gt", required=True, help="label JSON-lines file")
    parser.add_argument("--json", default=None, metavar="OUT", help="also write {Accuracy, FP, FN, F1} to OUT")
    parser.add_argument("--per-image", action="store_true", help="with --json, add the per-image scores")
    parser.add_argument("--ego-only", action="store_true", help="score only the ego-left and ego-right lanes")
    parser.add_argument("--image-width", type=float, default=1280.0, help="image width for --ego-only (pixels)")
    parser.add_argument(
        "--fp-mode",
        choices=("official", "unmatched"),
        default="official",
        help="official: FP = n_pred - n_matched (may be negative); unmatched: predictions that are no GT's match",
    )
    parser.set_defaults(func=_tusimple_eval)

    culane = subparsers.add_parser(
        "culane-eval",
        help="CULane lane precision / recall / F1 of a folder of .lines.txt predictions",
        description=(
            "Draw every lane `line-width` px wide on a height x width image, match predictions to GT lanes one-to-one "
            "(Hungarian, max IoU), count a pair with IoU > --iou as TP; precision / recall / F1 from the totals."
        ),
    )
    culane.add_argument("--pred", required=True, help="folder of predicted <image>.lines.txt files")
    culane.add_argument("--gt", required=True, help="folder of GT <image>.lines.txt files")
    culane.add_argument("--list", default=None, help="file listing the images to score (default: every GT file)")
    culane.add_argument("--height", type=int, default=590)
    culane.add_argument("--width", type=int, default=1640)
    culane.add_argument("--line-width", type=float, default=30.0, help="drawn lane width in pixels")
    culane.add_argument("--iou", type=float, default=0.5, help="IoU a matched pair must exceed")
    culane.add_argument("--chunk", type=int, default=16, help="images drawn per batch")
    culane.add_argument("--json", default=None, metavar="OUT", help="also write the scores to OUT")
    culane.set_defaults(func=_culane_eval)
