"""``drivemetrics lanegraph-eval`` (UrbanLaneGraph)."""

from __future__ import annotations

import argparse

from drivemetrics._internal.options import (
    SEED_RANGE,
    add_input,
    add_no_progress,
    add_workers,
    number_in,
    progress_setting,
)

__all__ = ["register"]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the lane-graph subcommand."""
    lg = subparsers.add_parser(
        "lanegraph-eval",
        epilog="example:\n  drivemetrics lanegraph-eval "
        "--gt annotations.pickle --pred submission.pickle --task successor --json lg.json",
        help="UrbanLaneGraph evaluation (TOPO/GEO, APLS, SDA, graph IoU; planning MMD/MED/SR)",
        description="Score an UrbanLaneGraph submission pickle R[city][split][sample_id] -> nx.DiGraph against the "
        "annotations: per-sample values, the mean per city and the mean over cities (NaN ignored). Pickles are read "
        "with a restricted unpickler. --compat reference reproduces the released evaluator's numbers, bugs included.",
    )
    add_input(lg, "--gt", "file", required=True, help="annotation pickle")
    add_input(lg, "--pred", "file", required=True, help="submission pickle")
    lg.add_argument("--task", required=True, choices=("successor", "full", "planning"), help="benchmark task")
    lg.add_argument("--split", default="eval", help="split to evaluate (default eval)")
    lg.add_argument(
        "--compat", choices=("default", "reference"), default="default", help="the released evaluator's numbers"
    )
    lg.add_argument("--json", default=None, metavar="OUT", help="write overall / per-city / per-sample JSON here")
    lg.add_argument("--figures", default=None, metavar="DIR", help="write one PNG per sample (GT and prediction)")
    add_workers(lg, "processes scoring the samples", auto=True)
    lg.add_argument(
        "--seed",
        type=number_in(*SEED_RANGE, kind=int),
        default=0,
        help="seed of APLS source sampling and planning (default 0)",
    )
    add_no_progress(lg)
    lg.set_defaults(func=_run_lanegraph, sharded=True)


def _run_lanegraph(args: argparse.Namespace) -> int:
    from pathlib import Path

    from drivemetrics._internal.extras import pyplot_for_files
    from drivemetrics._internal.files import check_output_path
    from drivemetrics.lanegraph.evaluate import evaluate_submission, format_tables, prepare_sample, write_json
    from drivemetrics.lanegraph.io import load_lanegraph_pickle
    from drivemetrics.lanegraph.plot import figure_path, plot_sample

    if args.figures:  # the optional dependencies, before any work
        pyplot_for_files()
    if args.compat == "reference" and args.task != "planning":
        from drivemetrics.lanegraph.reference import load_cv2

        load_cv2()
    inputs = [args.gt, args.pred]
    if args.json:
        check_output_path(args.json, input_files=inputs, option="--json", is_folder=False)
    if args.figures:
        check_output_path(args.figures, input_files=inputs, option="--figures", is_folder=True)
    gt_data = load_lanegraph_pickle(args.gt, "`--gt` annotations")
    pred_data = load_lanegraph_pickle(args.pred, "`--pred` submission")
    figures: list[tuple[Path, object, object, object]] = []  # (path, sample id, GT, prediction)
    if args.figures:  # every figure path checked before any computing
        for city, splits in gt_data.items():
            preds = (pred_data.get(city) or {}).get(args.split) or {}
            for sample_id, gt in (splits.get(args.split) or {}).items():
                if sample_id in preds:
                    figures.append((figure_path(args.figures, sample_id), sample_id, gt, preds[sample_id]))
    result = evaluate_submission(
        pred_data,
        gt_data,
        args.task,
        split=args.split,
        compat=args.compat,
        workers=args.workers,
        progress=progress_setting(args),
        seed=args.seed,
    )
    from drivemetrics._internal.distributed import current_shard

    if not current_shard().is_main:  # torchrun: rank 0 reports
        return 0
    n = len(result["samples"])
    mode = " [compat=reference]" if args.compat == "reference" else ""
    print(f"{n} sample(s), {len(result['missing'])} without prediction{mode}")
    print(format_tables(result))
    if args.json:
        write_json(result, args.json, inputs)
        print(f"wrote {args.json}")
    if args.figures:
        for path, sample_id, gt, pred in figures:
            p, g = prepare_sample(pred, gt, sample_id, args.task)
            plot_sample(p, g, path, title=str(sample_id))
        print(f"wrote figures to {args.figures}")
    return 0
