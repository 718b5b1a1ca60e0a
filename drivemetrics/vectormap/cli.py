"""Vectorised-map subcommand of the ``drivemetrics`` command: ``map-eval``."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from drivemetrics._internal.options import (
    add_compat,
    add_device,
    add_input,
    add_no_progress,
    positive_int,
    progress_setting,
)

if TYPE_CHECKING:
    from drivemetrics.vectormap.evaluate import MapEvaluation

__all__ = ["register"]


def _map_eval(args: argparse.Namespace) -> int:
    from drivemetrics._internal.files import atomic_write_text, check_output_path
    from drivemetrics.vectormap.evaluate import flat_path_applies, running_sharded

    if args.json:
        check_output_path(args.json, input_files=[args.gt, args.pred], option="--json", is_folder=False)
    result: MapEvaluation | None
    if flat_path_applies(args.protocol, args.device) and not running_sharded():
        result = _evaluate_on_numpy(args)  # one process (not torchrun): numpy, torch never imported
    else:
        result = _evaluate_on_torch(args)
    if result is None:  # torchrun: rank 0 reports
        return 0
    from drivemetrics._internal.limits import short_repr

    unknown, missing = result.unknown_samples, result.missing_samples
    if unknown:
        print(
            f"warning: {len(unknown)} prediction sample(s) have no GT sample and were ignored "
            f"(first: {short_repr(unknown[0])})",
            file=sys.stderr,
        )
    if missing:
        print(
            f"note: {len(missing)} GT sample(s) have no prediction and count as empty "
            f"(first: {short_repr(missing[0])})",
            file=sys.stderr,
        )
    report = result.report
    thresholds = [k for k in next(iter(report["classes"].values())) if k.startswith("AP@")]
    header = f"{'class':<14}{'preds':>7}{'gts':>6}" + "".join(f"{t:>9}" for t in thresholds) + f"{'AP':>9}"
    print(f"protocol: {args.protocol}")
    print(header)
    for name, entry in report["classes"].items():
        values = "".join(f"{entry[t]:>9.4f}" for t in thresholds)
        print(f"{name:<14}{entry['num_preds']:>7}{entry['num_gts']:>6}{values}{entry['AP']:>9.4f}")
    print(f"mAP = {report['mAP']:.4f}")
    if args.json:
        out = dict(report)
        out["protocol"] = args.protocol
        out["unknown_samples"] = result.unknown_samples
        out["missing_samples"] = result.missing_samples
        atomic_write_text(args.json, json.dumps(out, indent=2) + "\n")
    return 0


def _evaluate_on_numpy(args: argparse.Namespace) -> MapEvaluation:
    """Two forked readers read, check and resample the GT and the prediction file side by side, then the samples
    are matched in forked processes (no torch anywhere)."""
    from drivemetrics._internal.memory import keep_freed_memory
    from drivemetrics._internal.read_ahead import read_ahead_all
    from drivemetrics.vectormap.evaluate import evaluate_flat, read_resampled

    keep_freed_memory()  # array temporaries reused, not faulted in again (inherited by the forked processes)
    calls = [(read_resampled, (args.gt, "gt", args.protocol)), (read_resampled, (args.pred, "pred", args.protocol))]
    with read_ahead_all(calls) as (gt_pending, pred_pending):
        pass
    gt, preds = gt_pending.result(), pred_pending.result()
    return evaluate_flat(
        gt, preds, args.protocol, args.workers, progress_setting(args), names=(str(args.gt), str(args.pred))
    )


def _evaluate_on_torch(args: argparse.Namespace) -> MapEvaluation | None:
    """The other protocols and devices: the files read in a forked child while torch imports, matched with the
    tensor kernels; ``None`` on the ranks other than 0 under torchrun."""
    from drivemetrics._internal.read_ahead import read_ahead
    from drivemetrics.vectormap.io import read_map_files

    with read_ahead(read_map_files, args.gt, args.pred, args.protocol) as inputs:  # reads while torch imports
        from drivemetrics._internal.options import check_device
        from drivemetrics.vectormap.evaluate import evaluate_map_samples

        check_device(args.device)
        gt, preds = inputs.result()
    result = evaluate_map_samples(
        gt,
        preds,
        args.protocol,
        args.device,
        workers=args.workers,
        progress=progress_setting(args),
        names=(str(args.gt), str(args.pred)),
    )
    from drivemetrics._internal.distributed import current_shard

    return result if current_shard().is_main else None


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the vectorised-map subcommands."""
    parser = subparsers.add_parser(
        "map-eval",
        help="vectorised HD-map Chamfer AP (MapTR nuScenes, Argoverse 2 CVPR 2023) from their native JSON files",
        description=(
            "Per-class Chamfer AP at 0.5 / 1.0 / 1.5 m and mAP of predicted map polylines. --protocol nuscenes-maptr "
            "reads MapTR's GT annotation and results JSON and equals its evaluator; av2-cvpr23 reads the CVPR 2023 "
            "challenge GT and submission JSON and equals its evaluator; default reads either with the library's "
            "fixes (fall-back matching, no buffer prefilter, NaN for classes without GT). Predictions are paired "
            "with GT samples by token; a GT sample without predictions counts as empty, prediction samples without "
            "GT are reported and ignored. Under torchrun each rank matches its shard of the samples; rank 0 reports."
        ),
        epilog="example:\n  drivemetrics map-eval --protocol nuscenes-maptr --gt gt.json --pred results.json"
        " --json map.json",
    )
    parser.add_argument(
        "--protocol", choices=("default", "nuscenes-maptr", "av2-cvpr23"), default="default", help="evaluation protocol"
    )
    add_input(parser, "--gt", "file", required=True, help="GT JSON (MapTR annotation file or Argoverse 2 challenge GT)")
    add_input(parser, "--pred", "file", required=True, help="prediction JSON (MapTR results or challenge submission)")
    parser.add_argument(
        "--json", metavar="OUT", help='write {"mAP": ..., "classes": {name: {"AP", "AP@0.5", ...}}} here'
    )
    add_compat(
        parser,
        "the same numbers: --protocol picks the released evaluator to reproduce (accepted like every command's "
        "--compat)",
    )
    add_device(parser, "torch device for the evaluation")
    parser.add_argument(
        "--workers",
        type=positive_int,
        default=None,
        metavar="N",
        help="processes matching batches of samples (CPU; default: av2-cvpr23 forks one per core for large inputs "
        "(no torch); the other protocols match batches in one thread per core in one process, as a spawned process "
        "would first import torch)",
    )
    add_no_progress(parser)
    parser.set_defaults(func=_map_eval, sharded=True)
