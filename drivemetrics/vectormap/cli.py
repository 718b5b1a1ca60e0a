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


#: protocols that need ``--roi`` (the preset is ``<protocol>-<roi>``)
RANGED = ("streammapnet", "maptracker")


def _map_eval(args: argparse.Namespace) -> int:
    from drivemetrics._internal.files import atomic_write_text, check_output_path

    if args.json:
        check_output_path(args.json, input_files=[args.gt, args.pred], option="--json", is_folder=False)
    if args.protocol in RANGED and args.roi is None:
        raise ValueError(f"--protocol {args.protocol} needs --roi 60x30 or --roi 100x50 (its perception range)")
    if args.protocol not in RANGED and args.roi is not None:
        raise ValueError(f"--roi applies to --protocol {' or '.join(RANGED)}, not {args.protocol}")
    if args.compat == "reference" and args.protocol == "default":
        raise ValueError(
            "--compat reference needs the --protocol of a released evaluator (nuscenes-maptr, av2-cvpr23, "
            "streammapnet, maptracker); --protocol default is the library's own definition"
        )
    if args.protocol == "maptracker":
        return _maptracker_eval(args)
    from drivemetrics.vectormap.evaluate import flat_path_applies, running_sharded

    family = args.protocol
    if family in RANGED:
        args.protocol = f"{family}-{args.roi}"
    result: MapEvaluation | None
    if flat_path_applies(args.protocol, args.device) and not running_sharded():
        result = _evaluate_on_numpy(args)  # one process (not torchrun): numpy, torch never imported
    else:
        result = _evaluate_on_torch(args)
    if result is None:  # torchrun: rank 0 reports
        return 0
    from drivemetrics._internal.limits import short_repr
    from drivemetrics._internal.progress import warning_line

    unknown, missing = result.unknown_samples, result.missing_samples
    if unknown:
        warning_line(
            f"{len(unknown)} prediction sample(s) have no GT sample and were ignored (first: {short_repr(unknown[0])})"
        )
    if missing:
        warning_line(
            f"{len(missing)} GT sample(s) have no prediction and count as empty (first: {short_repr(missing[0])})",
            kind="note",
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
        if family in RANGED:  # the keys of StreamMapNet's fixture comparison, beside the usual ones
            out["roi"] = args.roi
            out["per_class"] = report["classes"]
        out["unknown_samples"] = result.unknown_samples
        out["missing_samples"] = result.missing_samples
        atomic_write_text(args.json, json.dumps(out, indent=2) + "\n")
    return 0


def _maptracker_eval(args: argparse.Namespace) -> int:
    """C-mAP and plain mAP (MapTracker): sample list with poses and GT, submission; scenes sharded under torchrun."""
    from drivemetrics._internal.files import atomic_write_text
    from drivemetrics._internal.options import check_device
    from drivemetrics._internal.progress import warning_line
    from drivemetrics.vectormap.consistency import evaluate_cmap
    from drivemetrics.vectormap.io import read_map_preds, read_maptracker_samples

    if args.device != "cpu":  # the scoring runs on the CPU; a device this host lacks is still an error
        check_device(args.device)
    frames, gt, roi = read_maptracker_samples(args.gt)
    if roi is not None and f"{roi[0]}x{roi[1]}" != args.roi:
        raise ValueError(f"{args.gt}: roi_size is {roi[0]}x{roi[1]}, but --roi is {args.roi}")
    preds = read_map_preds(args.pred, "av2")
    compat = args.compat or "default"
    try:
        result = evaluate_cmap(frames, gt, preds, args.roi, compat, details=bool(args.json), workers=args.workers)
    except ValueError as error:
        raise ValueError(f"{args.pred}: {error}") from None
    distributed = sys.modules.get("drivemetrics._internal.distributed")  # imported by torchrun's set-up only
    if distributed is not None and not distributed.current_shard().is_main:
        return 0
    if result["unknown_samples"]:
        unknown = result["unknown_samples"]
        warning_line(f"{len(unknown)} prediction sample(s) have no GT sample and were ignored (first: {unknown[0]})")
    if result["missing_samples"]:
        missing = result["missing_samples"]
        warning_line(
            f"{len(missing)} GT sample(s) have no prediction and count as empty (first: {missing[0]})", kind="note"
        )
    thresholds = [f"AP@{t}" for t in result["cmap"]["thresholds"]]
    print(f"protocol: maptracker-{args.roi} (compat {compat})")
    print(f"{'class':<14}{'mode':<7}{'preds':>7}{'gts':>6}" + "".join(f"{t:>9}" for t in thresholds) + f"{'AP':>9}")
    for name in result["cmap"]["per_class"]:
        for mode in ("cmap", "plain"):
            entry = result[mode]["per_class"][name]
            values = "".join(f"{entry[t]:>9.4f}" for t in thresholds)
            print(f"{name:<14}{mode:<7}{entry['num_preds']:>7}{entry['num_gts']:>6}{values}{entry['AP']:>9.4f}")
    print(
        f"C-mAP = {result['cmap']['mAP']:.4f}   mAP (same predictions, no consistency) = {result['plain']['mAP']:.4f}"
    )
    if args.json:
        out = {"protocol": "maptracker", "roi": args.roi, "compat": compat, **result}
        atomic_write_text(args.json, json.dumps(out) + "\n")
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
        threads=args.threads,
    )
    from drivemetrics._internal.distributed import current_shard

    return result if current_shard().is_main else None


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the vectorised-map subcommands."""
    parser = subparsers.add_parser(
        "map-eval",
        help="vectorised HD-map Chamfer AP (MapTR, Argoverse 2 CVPR 2023, StreamMapNet) and MapTracker's C-mAP",
        description=(
            "Per-class Chamfer AP at 0.5 / 1.0 / 1.5 m and mAP of predicted map polylines. --protocol nuscenes-maptr "
            "reads MapTR's GT annotation and results JSON and equals its evaluator; av2-cvpr23 reads the CVPR 2023 "
            "challenge GT and submission JSON and equals its evaluator; default reads either with the library's "
            "fixes (fall-back matching, no buffer prefilter, NaN for classes without GT). Predictions are paired "
            "with GT samples by token; a GT sample without predictions counts as empty, prediction samples without "
            "GT are reported and ignored. --protocol streammapnet --roi 60x30|100x50 reads StreamMapNet's GT cache "
            "and submission and equals its vector_eval; --protocol maptracker --roi ... reads MapTracker's sample "
            "list (poses, GT) and submission and reports C-mAP and the plain mAP (--compat reference: equal to its "
            "tools). Under torchrun each rank matches its shard of the samples (maptracker: of the scenes, kept "
            "whole); rank 0 reports."
        ),
        epilog="example:\n  drivemetrics map-eval --protocol nuscenes-maptr --gt gt.json --pred results.json"
        " --json map.json",
    )
    parser.add_argument(
        "--protocol",
        choices=("default", "nuscenes-maptr", "av2-cvpr23", "streammapnet", "maptracker"),
        default="default",
        help="evaluation protocol (streammapnet: StreamMapNet's vector_eval; maptracker: MapTracker's C-mAP and its "
        "plain mAP, on the CPU whatever --device (tracks rasterised with OpenCV); both need --roi)",
    )
    parser.add_argument(
        "--roi",
        choices=("60x30", "100x50"),
        default=None,
        help="perception range of --protocol streammapnet / maptracker: 60x30 (thresholds 0.5 / 1.0 / 1.5 m) or "
        "100x50 (1.0 / 1.5 / 2.0 m)",
    )
    add_compat(
        parser,
        "--protocol maptracker: MapTracker's tools (GT cut to 20 points, predictions of frames without GT of their "
        "class dropped, a missing token an error); the other released protocols are exact presets already, so "
        "reference only confirms them (--protocol default has no released tool)",
    )
    add_input(
        parser,
        "--gt",
        "file",
        required=True,
        help="GT: MapTR annotation JSON, Argoverse 2 challenge GT, StreamMapNet's GT cache (tmp_gts_*.pkl or its "
        "JSON form) or MapTracker's sample list with poses (samples.json)",
    )
    add_input(
        parser,
        "--pred",
        "file",
        required=True,
        help="prediction JSON (MapTR results, or the challenge / StreamMapNet / MapTracker submission_vector.json)",
    )
    parser.add_argument(
        "--json", metavar="OUT", help='write {"mAP": ..., "classes": {name: {"AP", "AP@0.5", ...}}} here'
    )
    add_device(parser, "torch device for the evaluation")
    parser.add_argument(
        "--workers",
        type=positive_int,
        default=None,
        metavar="N",
        help="processes matching the samples (CPU; default: the measured auto policy, which starts a pool only "
        "once the timed first jobs say that it pays for its start-up: forked on the torch-free path of av2-cvpr23 "
        "and the streammapnet presets, spawned (importing torch) for the other protocols)",
    )
    threads = parser.add_argument(
        "--threads",
        type=positive_int,
        default=None,
        metavar="N",
        help="threads matching batches of samples in each process, on the tensor path (--protocol default, "
        "nuscenes-maptr, or a --device; default: one per core in the command's process, one in each worker "
        "process)",
    )
    threads.pool = "threads"  # type: ignore[attr-defined]  # the grammar's mark: a thread pool, beside --workers
    add_no_progress(parser)
    parser.set_defaults(func=_map_eval, sharded=True)
