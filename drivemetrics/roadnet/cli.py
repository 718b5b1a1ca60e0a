"""``drivemetrics graph-eval`` and ``drivemetrics graph-sensitivity`` (road networks)."""

from __future__ import annotations

import argparse
import json

from drivemetrics._internal.options import (
    SEED_RANGE,
    add_device,
    add_input,
    add_no_progress,
    add_workers,
    number_in,
    progress_setting,
)

__all__ = ["METRICS", "PERTURBATIONS", "apply_settings", "check_setting", "register", "warn_default_mode"]

# Light at import (``drivemetrics graph-eval --help`` must not load scipy / torch): the library is imported in the
# run functions, and these names are copies of the keys of drivemetrics.roadnet.evaluate.METRICS and
# drivemetrics.roadnet.perturb.PERTURBATIONS (a test keeps them equal).
METRICS: tuple[str, ...] = ("opt_p", "opt_j", "opt_g", "apls", "tlts", "subg", "junct", "ccq")
PERTURBATIONS: tuple[str, ...] = (
    "interruptions",
    "overconnections",
    "node_perturbations",
    "doubled_pred",
    "doubled_gt",
    "false_positives",
)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the graph subcommands."""
    ev = subparsers.add_parser(
        "graph-eval",
        epilog="example:\n  drivemetrics graph-eval "
        "--gt gt_graphs --pred pred_graphs --metrics apls opt_j --json graphs.json",
        help="evaluate predicted road graphs against ground truth (one pair or folders matched by name)",
        description="Score predicted road graphs with OPT-P/J/G, APLS, TLTS, SUBG, JUNCT and CCQ. Folders are "
        "matched by file stem; a GT tile without prediction is scored as an empty prediction.",
    )
    add_input(ev, "--gt", "file or folder", required=True, help="ground-truth graph file or folder")
    add_input(ev, "--pred", "file or folder", required=True, help="predicted graph file or folder")
    ev.add_argument(
        "--metrics", nargs="+", default=list(METRICS), metavar="NAME", help=f"from {', '.join(METRICS)} (default all)"
    )
    ev.add_argument("--json", default=None, metavar="OUT", help="write per-tile and aggregated results as JSON")
    add_workers(ev, "processes scoring the tiles", auto=True)
    add_device(
        ev,
        "torch device of CCQ's raster and dilation, the one metric on tensors (the graph metrics are host code); "
        "the same as --set ccq.device=NAME",
        default=None,
        default_text="default: the CPU",
    )
    ev.add_argument(
        "--seed", type=number_in(*SEED_RANGE, kind=int), default=0, help="seed of the sampled metrics (default 0)"
    )
    ev.add_argument(
        "--window",
        nargs=4,
        type=number_in(-1e9, 1e9),
        default=None,
        metavar=("XMIN", "YMIN", "XMAX", "YMAX"),
        help="crop both graphs to this window, then shift it to the origin (RoadTracer protocol: the city's "
        "8192 px region)",
    )
    ev.add_argument(
        "--border",
        type=number_in(0, 1e9),
        default=0.0,
        help="then crop [B, size - B) of the shifted window (default: shrink the GT's extent), px; protocol: 260",
    )
    ev.add_argument(
        "--compat",
        choices=["default", "reference"],
        default="default",
        help="reproduce the released code (lcit/metrics_delin): its crop, OPT-J, OPT-P, OPT-G, TLTS and CCQ "
        "(APLS, JUNCT and SUBG: scored in the default mode, with a warning; Sat2Graph's released APLS: "
        "--protocol sat2graph --set apls.compat=reference)",
    )
    ev.add_argument(
        "--protocol",
        choices=("cosmiq", "sat2graph"),
        default=None,
        help="APLS preset: cosmiq (SpaceNet's apls.py) or sat2graph (Sat2Graph's); the same as "
        "--set apls.protocol=NAME (default: the APLS default, cosmiq)",
    )
    add_no_progress(ev)
    ev.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="METRIC.KEY=VALUE",
        help="metric option, e.g. apls.max_snap_dist=25 or apls.protocol=sat2graph (repeatable)",
    )
    ev.set_defaults(func=_run_eval)

    se = subparsers.add_parser(
        "graph-sensitivity",
        epilog="example:\n  drivemetrics graph-sensitivity --gt gt_graph.pickle --out sensitivity --quick",
        help="sensitivity of every graph metric to synthetic errors (Citraro et al. Fig. 5)",
        description="Perturb a GT graph with k = 0..K errors of each type, score every metric, write a PNG grid of "
        "curves and a CSV, and print how flat each metric is per error type.",
    )
    add_input(se, "--gt", "file", required=True, help="ground-truth graph file")
    se.add_argument(
        "--out", default="graph_sensitivity", metavar="DIR", help="output folder (default graph_sensitivity)"
    )
    se.add_argument(
        "--k-max", type=number_in(1, 10_000, kind=int), default=20, help="largest number of errors K (default 20)"
    )
    se.add_argument(
        "--k-step", type=number_in(1, 10_000, kind=int), default=4, help="step between error counts (default 4)"
    )
    se.add_argument(
        "--crop",
        type=number_in(0, 1e6),
        default=2048.0,
        help="side of the centered window cut from the GT, px (0: whole graph)",
    )
    se.add_argument(
        "--samples",
        type=number_in(1, 1_000_000, kind=int),
        default=200,
        help="random draws of OPT-G / SUBG / TLTS / APLS sources",
    )
    se.add_argument(
        "--kinds", nargs="+", default=list(PERTURBATIONS), metavar="KIND", help="error types to inject (default all)"
    )
    se.add_argument("--metrics", nargs="+", default=list(METRICS), metavar="NAME", help="metrics (default all)")
    se.add_argument("--seed", type=number_in(*SEED_RANGE, kind=int), default=0, help="seed of the perturbations")
    se.add_argument("--quick", action="store_true", help="K = 4, step 2, 1024 px crop, 50 samples (for tests)")
    se.add_argument("--compat", choices=["default", "reference"], default="default", help="score as the released code")
    add_no_progress(se)
    se.add_argument("--set", action="append", default=[], metavar="METRIC.KEY=VALUE", help="metric option (repeatable)")
    se.set_defaults(func=_run_sensitivity)


def _seeded_options(seed: int) -> dict[str, dict]:
    return {name: {"seed": seed} for name in ("opt_p", "opt_g", "apls", "tlts", "subg")}


def _parse_value(text: str) -> object:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return {"none": None, "true": True, "false": False}.get(text.lower(), text)


def apply_settings(options: dict[str, dict], settings: list[str]) -> dict[str, dict]:
    """Add ``METRIC.KEY=VALUE`` settings to per-metric options (numbers, true / false / none, else strings)."""
    for item in settings:
        key, sep, value = item.partition("=")
        metric, dot, name = key.partition(".")
        if not sep or not dot or metric not in METRICS or not name:
            raise ValueError(f"`--set` expects METRIC.KEY=VALUE with METRIC in {sorted(METRICS)}, got {item!r}")
        options.setdefault(metric, {})[name] = check_setting(metric, name, _parse_value(value), item)
    return options


def check_setting(metric: str, name: str, value: object, item: str) -> object:
    """``value``, after checking that ``metric`` has an option ``name`` and, when its default is a number, that
    ``value`` is a number too (``--set opt_j.d_max=abc`` is refused before any work)."""
    import inspect
    import math

    from drivemetrics.roadnet.evaluate import METRICS as FUNCTIONS

    parameters = inspect.signature(FUNCTIONS[metric]).parameters
    if name not in parameters or name in ("preds", "target"):
        accepted = sorted(set(parameters) - {"preds", "target"})
        raise ValueError(f"`--set {item[:80]}`: {metric} has no option {name!r}; it accepts {accepted}")
    default = parameters[name].default
    is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if isinstance(default, (int, float)) and not isinstance(default, bool) and not is_number:
        raise ValueError(f"`--set {item[:80]}`: {metric}.{name} must be a number (default {default})")
    if is_number and not math.isfinite(value):
        raise ValueError(f"`--set {item[:80]}`: {metric}.{name} must be a finite number")
    return value


def warn_default_mode(metrics: list[str], compat: str) -> None:
    """With ``compat``, print one line to stderr naming the chosen metrics that have no compat mode."""
    from drivemetrics.roadnet.evaluate import metrics_without_compat

    plain = metrics_without_compat(metrics) if compat == "reference" else []
    if plain:
        from drivemetrics._internal.progress import warning_line

        warning_line(f"--compat {compat}: {', '.join(plain)} have no compat mode and are scored in the default mode")


def _run_eval(args: argparse.Namespace) -> int:
    from drivemetrics._internal.files import atomic_write_text, check_output_path
    from drivemetrics.roadnet.evaluate import GRAPH_SUFFIXES, evaluate_dataset, find_pairs, format_table

    if args.json:
        inputs = [args.gt, args.pred]
        check_output_path(
            args.json,
            input_files=inputs,
            input_dirs=inputs,
            read_suffixes=GRAPH_SUFFIXES,
            option="--json",
            is_folder=False,
        )
    pairs, orphans = find_pairs(args.gt, args.pred)
    missing = [name for name, _, p in pairs if p is None]
    presets = [f"apls.protocol={args.protocol}"] if args.protocol else []  # --set given after it wins
    devices = [f"ccq.device={args.device}"] if args.device else []  # --set given after it wins
    options = apply_settings(_seeded_options(args.seed), [*presets, *devices, *args.set])
    ccq_device = options.get("ccq", {}).get("device")
    if ccq_device is not None:
        from drivemetrics._internal.options import check_device

        check_device(str(ccq_device))  # before any work: one line naming --device
    warn_default_mode(args.metrics, args.compat)
    per_tile, scores = evaluate_dataset(
        pairs,
        args.metrics,
        options,
        workers=args.workers,
        progress=progress_setting(args),
        window=tuple(args.window) if args.window else None,
        border=args.border,
        compat=args.compat,
    )
    print(f"{len(pairs)} tile(s)" + (f", {len(missing)} without prediction (scored empty)" if missing else ""))
    if orphans:
        print(f"ignored {len(orphans)} prediction(s) without GT: {', '.join(orphans[:5])}")
    print(format_table(scores))
    if args.json:
        payload = {"aggregate": scores, "tiles": per_tile, "missing_predictions": missing, "ignored": orphans}
        atomic_write_text(args.json, json.dumps(payload, indent=2, default=float))
        print(f"wrote {args.json}")
    return 0


def _run_sensitivity(args: argparse.Namespace) -> int:
    from drivemetrics._internal.extras import pyplot_for_files
    from drivemetrics._internal.files import check_output_path

    pyplot_for_files()  # it ends with a figure: matplotlib is checked before any work
    from drivemetrics.graph.geometry import crop, graph_arrays
    from drivemetrics.roadnet.io import read_graph
    from drivemetrics.roadnet.sensitivity import (
        fast_options,
        flatness_table,
        plot_sensitivity,
        run_sensitivity,
        write_csv,
    )

    k_max, k_step, side, samples = args.k_max, args.k_step, args.crop, args.samples
    if args.quick:
        k_max, k_step, side, samples = 4, 2, 1024.0, 50
    if k_max < 1 or k_step < 1:
        raise ValueError(f"`--k-max` and `--k-step` must be >= 1, got {k_max} and {k_step}")
    # every output checked before any computing
    out = check_output_path(args.out, input_files=[args.gt], option="--out", is_folder=True)
    if out.exists() and not out.is_dir():
        raise ValueError(f"`--out` {args.out} is a file; graph-sensitivity writes into a folder")
    for name in ("sensitivity.csv", "sensitivity.png"):
        check_output_path(out / name, input_files=[args.gt], option="--out")
    gt = read_graph(args.gt)
    if side > 0:
        pos = graph_arrays(gt).pos
        cx, cy = (pos.min(axis=0) + pos.max(axis=0)) / 2
        gt = crop(gt, cx - side / 2, cy - side / 2, cx + side / 2, cy + side / 2, compat=args.compat)
    if gt.number_of_edges() == 0:
        raise ValueError("the (cropped) GT graph has no edge")
    options = fast_options(samples)
    for name, extra in _seeded_options(args.seed).items():
        options.setdefault(name, {}).update(extra)
    options = apply_settings(options, args.set)
    warn_default_mode(args.metrics, args.compat)
    rows = run_sensitivity(
        gt,
        list(range(0, k_max + 1, k_step)),
        args.kinds,
        args.metrics,
        options,
        seed=args.seed,
        progress=progress_setting(args),
        compat=args.compat,
    )
    out.mkdir(parents=True, exist_ok=True)
    write_csv(rows, out / "sensitivity.csv")
    plot_sensitivity(rows, out / "sensitivity.png")
    print(flatness_table(rows))
    print(f"wrote {out / 'sensitivity.csv'} and {out / 'sensitivity.png'}")
    return 0
