"""The ``openlanev2-eval`` subcommand."""

from __future__ import annotations

import argparse
import json
import math

from drivemetrics._internal.options import add_device, add_input, add_no_progress, add_workers, progress_setting

__all__ = ["HEADLINE", "register"]

HEADLINE = {
    "centerline": ("det_l", "det_t", "top_ll", "top_lt", "ols", "f_score"),
    "lanesegment": ("det_ls", "det_a", "det_t", "top_lsls", "top_lste", "olus"),
}


def _openlanev2_eval(args: argparse.Namespace) -> int:
    from drivemetrics._internal.files import atomic_write_text, check_output_path
    from drivemetrics._internal.read_ahead import read_ahead_all
    from drivemetrics.lanetopology import io

    if args.device is not None:
        from drivemetrics._internal.options import check_device

        check_device(args.device)  # before any work: one line naming --device
    if args.json:
        check_output_path(args.json, input_files=[args.gt, args.pred], option="--json", is_folder=False)
    # the scoring runs on numpy arrays and never imports torch (nor scipy unless an F-score assignment needs it);
    # two forked readers read and check the two pickles side by side while the scoring modules import
    readers = [(io.read_ground_truth, (args.gt,)), (io.read_predictions, (args.pred,))]
    with read_ahead_all(readers) as (target_read, preds_read):
        from drivemetrics.lanetopology.evaluate import current_rank_shard, evaluate_openlanev2, json_report
        from drivemetrics.lanetopology.scoring import devkit_name

        target, preds = target_read.result(), preds_read.result()
    track = args.track or io.detect_track(target, args.gt)
    scores = evaluate_openlanev2(
        preds,
        target,
        track,
        args.compat,
        args.workers,
        device=args.device,
        sources=(args.pred, args.gt),
        progress=progress_setting(args),
    )
    shard = current_rank_shard()
    if shard is not None and not shard.is_main:  # torchrun: rank 0 reports
        return 0
    title = "OpenLane-V2 Score" if track == "centerline" else "OpenLane-V2 UniScore"
    print(f"{title} ({track} track, compat={args.compat})")
    for key in HEADLINE[track]:
        name, value = devkit_name(key), scores[key]
        print(f"  {name:<10} {value:.6f}" if not math.isnan(value) else f"  {name:<10} nan")
    if args.json:
        atomic_write_text(args.json, json.dumps(json_report(track, scores, HEADLINE[track]), indent=1) + "\n")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``openlanev2-eval`` subcommand."""
    parser = subparsers.add_parser(
        "openlanev2-eval",
        help="OpenLane-V2 OLS / OLUS with sub-scores (devkit 2.1.0 with --compat reference)",
        description=(
            "Score OpenLane-V2 predictions: the devkit's ground-truth collection pickle (or a fixture JSON) against "
            "a submission pickle (or a fixture JSON). Prints the headline scores; --json writes them with the "
            "per-threshold values."
        ),
        epilog="example:\n  drivemetrics openlanev2-eval --gt data_dict_subset_A_val.pkl --pred submission.pkl"
        " --json ols.json",
    )
    add_input(parser, "--gt", "file", required=True, help="ground truth: devkit collection .pkl or fixture .json")
    add_input(parser, "--pred", "file", required=True, help="predictions: devkit submission .pkl or fixture .json")
    parser.add_argument(
        "--track",
        choices=("centerline", "lanesegment"),
        default=None,
        help="the task to score: centerline (OpenLane-V2 v1.x) or lanesegment (v2.x; default: detected from the "
        "ground truth's keys)",
    )
    parser.add_argument(
        "--compat",
        choices=("default", "reference"),
        default="default",
        help="reference: reproduce the devkit 2.1.0, faults included; default: the documented fixes",
    )
    parser.add_argument("--json", default=None, metavar="OUT", help="also write the scores as JSON to OUT")
    add_workers(parser, "processes scoring chunks of frames", auto=True)
    add_device(
        parser,
        "torch device of the lane distances",
        default=None,
        default_text="default: numpy on the CPU, without torch",
    )
    add_no_progress(parser)
    parser.set_defaults(func=_openlanev2_eval, sharded=True)
