"""The ``openlane3d-eval``, ``apollo3d-eval`` and ``once3d-eval`` subcommands."""

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
    """Add the ``openlane3d-eval``, ``apollo3d-eval`` and ``once3d-eval`` subcommands."""
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
    _register_apollo(subparsers)
    _register_once(subparsers)


def _nan(value: object) -> str:
    return f"{value:>12.6f}" if isinstance(value, float) else f"{'nan':>12}"


def _apollo3d_eval(args: argparse.Namespace) -> int:
    # host code on numpy: torch is imported only to check a --device other than the CPU
    from drivemetrics._internal.files import atomic_write_text, check_output_path
    from drivemetrics._internal.options import check_device
    from drivemetrics.lane3d.evaluate import current_rank_shard, evaluate_apollo3d_files

    check_device(args.device)
    if args.json:
        check_output_path(args.json, input_files=[args.gt, args.pred], option="--json", is_folder=False)
    result = evaluate_apollo3d_files(
        args.gt,
        args.pred,
        compat=args.compat,
        workers=args.workers,
        device=args.device,
        progress=progress_setting(args),
    )
    shard = current_rank_shard()
    if shard is not None and not shard.is_main:  # torchrun: rank 0 reports
        return 0
    m = result["metrics"]
    print(f"Apollo 3D Lane Synthetic ({len(result['per_frame'])} frames, compat={args.compat})")
    print("Metrics: AP, F-score, x error (close), x error (far), z error (close), z error (far)")
    for label, prefix, f_key in (("Laneline", "", "F_score"), ("Centerline", "centerline_", "centerline_F")):
        ap = m["laneline_AP"] if not prefix else m["centerline_AP"]
        values = [ap, m[f_key]] + [
            m[prefix + k] for k in ("x_error_close", "x_error_far", "z_error_close", "z_error_far")
        ]
        print(f"{label + ':':<12}" + " ".join(_nan(v) for v in values))
    print(
        f"max-F probability threshold {m['max_F_prob_th']:.2f}: "
        f"recall {m['recall']:.6f}, precision {m['precision']:.6f}"
    )
    if args.json:
        atomic_write_text(args.json, json.dumps({"compat": args.compat, **result}, indent=1) + "\n")
    return 0


def _register_apollo(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "apollo3d-eval",
        epilog="example:\n  drivemetrics apollo3d-eval --gt test.json --pred test_pred_file.json --compat reference"
        " --json apollo3d.json",
        help="Apollo 3D Lane Synthetic: AP, max F, x / z errors (--compat reference: Gen-LaneNet eval_3D_lane.py)",
        description=(
            "Score Gen-LaneNet-format predictions (JSON lines: raw_file, laneLines, laneLines_prob, centerLines, "
            "centerLines_prob) against an Apollo 3D Lane Synthetic test.json: AP over the 19 probability thresholds, "
            "max F and the x / z errors near (y <= 40 m) and far at its threshold, for lane lines and centre lines. "
            "--json writes the metrics, the per-threshold curves and per-frame counts. Under torchrun each rank "
            "scores its shard of the frames; rank 0 reports."
        ),
    )
    add_input(parser, "--gt", "file", required=True, metavar="TEST_JSON", help="GT file (JSON lines, test.json)")
    add_input(parser, "--pred", "file", required=True, metavar="PRED_JSON", help="prediction file (JSON lines)")
    add_compat(parser, "Gen-LaneNet's tools/eval_3D_lane.py (commit 45c6cc4), quirks included")
    parser.add_argument("--json", default=None, metavar="OUT", help="also write metrics and per-frame values to OUT")
    add_workers(parser, "processes scoring chunks of 256 frames", auto=True)
    add_device(parser, "accepted for the command grammar (the kernels are host code: numpy and SciPy)")
    add_no_progress(parser)
    parser.set_defaults(func=_apollo3d_eval, sharded=True)


def _once3d_eval(args: argparse.Namespace) -> int:
    # host code on numpy: torch is imported only to check a --device other than the CPU
    from drivemetrics._internal.files import atomic_write_text, check_output_path
    from drivemetrics._internal.options import check_device
    from drivemetrics.lane3d.evaluate import current_rank_shard, evaluate_once3d_files

    check_device(args.device)
    if args.json:
        check_output_path(args.json, input_files=[args.gt, args.pred], option="--json", is_folder=False)
    result = evaluate_once3d_files(
        args.gt,
        args.pred,
        compat=args.compat,
        workers=args.workers,
        device=args.device,
        progress=progress_setting(args),
    )
    shard = current_rank_shard()
    if shard is not None and not shard.is_main:  # torchrun: rank 0 reports
        return 0
    print(f"ONCE-3DLanes ({len(result['per_frame'])} frames, compat={args.compat})")
    print(f"  {'prob_thresh':>11} {'F1':>12} {'precision':>12} {'recall':>12} {'D error':>12}")
    for row in result["table"]:
        values = " ".join(_nan(row[k]) for k in ("F1", "precision", "recall", "distance_error"))
        print(f"  {row['prob_thresh']:>11} {values}")
    if result["missing_predictions"]:
        print(f"  {len(result['missing_predictions'])} GT frame(s) without a prediction file, scored as empty")
    if args.json:
        atomic_write_text(args.json, json.dumps({"compat": args.compat, **result}, indent=1) + "\n")
    return 0


def _register_once(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "once3d-eval",
        epilog="example:\n  drivemetrics once3d-eval --gt once/gt --pred once/pred --json once3d.json",
        help="ONCE-3DLanes: F1, precision, recall, distance error per score threshold (--compat reference available)",
        description=(
            "Score an ONCE-3DLanes prediction folder against its GT folder (<sequence>/cam01/<timestamp>.json each): "
            "the table of F1, precision, recall and distance error at the score thresholds 0.10 ... 0.95 (papers "
            "quote the 0.95 row). --json writes the table, the 0.95 row and per-frame counts. Under torchrun each "
            "rank scores its shard of the frames; rank 0 reports."
        ),
    )
    add_input(parser, "--gt", "folder", required=True, metavar="DIR", help="GT folder (<sequence>/cam01/*.json)")
    add_input(parser, "--pred", "folder", required=True, metavar="DIR", help="prediction folder, same layout")
    add_compat(parser, "once_3dlanes_benchmark's evaluation/eval_utils.py (commit 7582fbb, munkres 1.1.4)")
    parser.add_argument("--json", default=None, metavar="OUT", help="also write the table and per-frame values to OUT")
    add_workers(parser, "processes reading and scoring chunks of 256 frames", auto=True)
    add_device(parser, "accepted for the command grammar (the kernels are host code: OpenCV raster, Munkres)")
    add_no_progress(parser)
    parser.set_defaults(func=_once3d_eval, sharded=True)
