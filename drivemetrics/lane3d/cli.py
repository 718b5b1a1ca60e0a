"""The ``openlane3d-eval`` subcommand."""

from __future__ import annotations

import argparse
import json
import math

from drivemetrics._internal.options import (
    add_compat,
    add_device,
    add_input,
    add_no_progress,
    add_workers,
    progress_setting,
)

__all__ = ["TABLE", "register"]

#: Rows of the printed table (the official printout's order).
TABLE = (
    ("F_score", "F-score"),
    ("recall", "recall"),
    ("precision", "precision"),
    ("category_accuracy", "category accuracy"),
    ("x_error_close", "x error close (m)"),
    ("x_error_far", "x error far (m)"),
    ("z_error_close", "z error close (m)"),
    ("z_error_far", "z error far (m)"),
)


def _openlane3d_eval(args: argparse.Namespace) -> int:
    import torch

    from drivemetrics._internal.distributed import current_shard
    from drivemetrics._internal.files import atomic_write_text, check_output_path
    from drivemetrics._internal.options import check_device
    from drivemetrics.lane3d.evaluate import evaluate_openlane3d_files

    check_device(args.device)
    if args.json:
        check_output_path(args.json, input_files=[args.list], option="--json", is_folder=False)
    torch.set_num_threads(1)  # many small kernels: threads only contend
    result = evaluate_openlane3d_files(
        args.gt,
        args.pred,
        args.list,
        compat=args.compat,
        workers=args.workers,
        device=args.device,
        progress=progress_setting(args),
    )
    if not current_shard().is_main:  # torchrun: rank 0 reports
        return 0
    metrics = result["metrics"]
    print(f"OpenLane 3D lanes ({len(result['per_frame'])} frames, compat={args.compat})")
    print("=" * 44)
    for key, label in TABLE:
        value = metrics[key]
        print(f"  {label:<22} {value:>12.6f}" if not math.isnan(value) else f"  {label:<22} {'nan':>12}")
    print("-" * 44)
    print(
        f"  recall hits {metrics['n_recall_hits']} / {metrics['n_gt']} GT lanes, precision hits "
        f"{metrics['n_precision_hits']} / {metrics['n_pred']} predicted, categories {metrics['n_category_correct']} "
        f"/ {metrics['n_matched']} pairs"
    )
    if args.json:
        out = {"compat": args.compat, "metrics": metrics, "per_frame": result["per_frame"]}
        atomic_write_text(args.json, json.dumps(out, indent=1) + "\n")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``openlane3d-eval`` subcommand."""
    parser = subparsers.add_parser(
        "openlane3d-eval",
        epilog="example:\n  drivemetrics openlane3d-eval "
        "--gt lane3d_1000/test --pred pred --list test_list.txt --json openlane.json",
        help="OpenLane (v1) 3D lanes: F-score, category accuracy, x / z errors (--compat reference: eval_3D_lane.py)",
        description=(
            "Score OpenLane 3D lane predictions: for each line of the test list, GT/<line>.json (annotation, camera "
            "frame with visibility) against PRED/<line>.json (official 'lane_lines' or PersFormer 'laneLines' + "
            "'laneLines_prob'), 'jpg' replaced by 'json'. Prints the F-score, recall, precision, category accuracy "
            "and x / z errors near (y <= 40 m) and far; --json writes them with the counts and per-frame values. "
            "Under torchrun each rank reads and scores its shard of the frames; rank 0 reports."
        ),
    )
    add_input(parser, "--gt", "folder", required=True, metavar="DIR", help="annotation folder (lane3d_1000 layout)")
    add_input(parser, "--pred", "folder", required=True, metavar="DIR", help="prediction folder, same layout")
    add_input(parser, "--list", "file", required=True, metavar="FILE", help="test list, one image path per line")
    add_compat(parser, "OpenLane's eval_3D_lane.py (commit 8a0ce6b), quirks included")
    parser.add_argument("--json", default=None, metavar="OUT", help="also write metrics and per-frame values to OUT")
    add_workers(parser, "processes reading and scoring chunks of 256 frames", auto=True)
    add_device(parser, "torch device of the kernels")
    add_no_progress(parser)
    parser.set_defaults(func=_openlane3d_eval, sharded=True)
