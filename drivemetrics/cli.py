"""The ``drivemetrics`` console command.

The subcommands are listed in a static table, :data:`COMMANDS` (name -> module, one-line help), so that
``drivemetrics --help`` imports no domain. Only the module of the subcommand that runs is imported; it has a
function ``register(subparsers)`` that adds its subcommands, each of which sets ``func`` (``args -> int`` exit
code) with ``parser.set_defaults(func=...)``. Every other command gets a placeholder parser with its help line.
A test checks that the table and the modules' ``register`` functions agree.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import pickle
import signal
import sys
import threading
import traceback
from collections.abc import Iterator, Sequence
from types import FrameType
from typing import NoReturn

from drivemetrics import __version__

__all__ = [
    "COMMANDS",
    "EXIT_BAD_INPUT",
    "EXIT_INTERNAL_ERROR",
    "EXIT_INTERRUPTED",
    "EXIT_TERMINATED",
    "INPUT_ERRORS",
    "Terminated",
    "build_parser",
    "error_line",
    "is_input_error",
    "main",
]

#: Subcommand name -> (module that registers it, one-line help shown by ``drivemetrics --help``).
COMMANDS: dict[str, tuple[str, str]] = {
    "demo": ("drivemetrics.demos.cli", "run every domain's demo on synthetic scenes (no download)"),
    "config": (
        "drivemetrics.configs.cli",
        "list the shipped configs, or print one (drivemetrics config corridor > my_corridor.toml)",
    ),
    "road-eval": (
        "drivemetrics.road.cli",
        "evaluate KITTI-ROAD result PNGs (pooled MaxF, AP, working point per category), like the devkit",
    ),
    "road-bev": (
        "drivemetrics.road.cli",
        "warp perspective PNGs to the KITTI-ROAD BEV grid (for submitting to the KITTI server)",
    ),
    "tusimple-eval": ("drivemetrics.lane.cli", "score TuSimple JSON-lines predictions (accuracy, FP, FN, F1)"),
    "culane-eval": ("drivemetrics.lane.cli", "score CULane .lines.txt predictions (precision, recall, F1)"),
    "llamas-eval": ("drivemetrics.lane.cli", "score LLAMAS .lines.txt predictions (precision, recall, F1, mF1)"),
    "curvelanes-eval": ("drivemetrics.lane.cli", "score CurveLanes .lines.json predictions (precision, recall, F1)"),
    "kitti-object-eval": (
        "drivemetrics.detection.cli",
        "KITTI object AP (2D, AOS, BEV, 3D; R11 and R40) of a result folder, exactly as the official C++",
    ),
    "graph-eval": ("drivemetrics.roadnet.cli", "road-network metrics (CCQ, TLTS, APLS, JUNCT, SUBG, OPT-P/J/G)"),
    "lanegraph-eval": (
        "drivemetrics.lanegraph.cli",
        "UrbanLaneGraph evaluation: TOPO/GEO, APLS, SDA, graph IoU, planning (--compat reference available)",
    ),
    "map-eval": (
        "drivemetrics.vectormap.cli",
        "vectorised HD-map Chamfer AP (MapTR nuScenes, Argoverse 2 CVPR 2023) from their native JSON files",
    ),
    "openlanev2-eval": (
        "drivemetrics.lanetopology.cli",
        "OpenLane-V2 OLS / OLUS and sub-scores from devkit pickles (--compat reference: devkit 2.1.0)",
    ),
    "openlane3d-eval": (
        "drivemetrics.lane3d.cli",
        "OpenLane (v1) 3D lanes: F-score, category accuracy, x / z errors (--compat reference: eval_3D_lane.py)",
    ),
    "apollo3d-eval": (
        "drivemetrics.lane3d.cli",
        "Apollo 3D Lane Synthetic: AP, max F, x / z errors (--compat reference: Gen-LaneNet eval_3D_lane.py)",
    ),
    "once3d-eval": (
        "drivemetrics.lane3d.cli",
        "ONCE-3DLanes: F1, precision, recall, distance error per score threshold (--compat reference: eval_utils.py)",
    ),
    "graph-sensitivity": (
        "drivemetrics.roadnet.cli",
        "perturb a road network and plot how each graph metric responds",
    ),
}

#: Exit status of a command that failed on bad input (argparse uses the same for bad arguments).
EXIT_BAD_INPUT = 2
#: Exit status of a command that failed on an internal bug (printed with a hint to report it).
EXIT_INTERNAL_ERROR = 1
#: Exit status after Ctrl-C (128 + SIGINT), as shells report it.
EXIT_INTERRUPTED = 130
#: Exit status after SIGTERM (128 + SIGTERM), as shells report it.
EXIT_TERMINATED = 143

#: Exceptions that bad or oversized input raises in the readers and kernels: one line naming what is wrong, exit 2.
#: Anything else that escapes a command is an internal bug: one line with a hint to report it, exit 1.
INPUT_ERRORS: tuple[type[BaseException], ...] = (
    ValueError,  # includes UnicodeDecodeError and json.JSONDecodeError
    OSError,  # missing, unreadable, a folder where a file is expected
    KeyError,
    IndexError,
    TypeError,  # a value of the wrong type in a parsed file
    OverflowError,
    MemoryError,
    RecursionError,
    EOFError,
    pickle.UnpicklingError,
    ImportError,  # an optional dependency missing
)


class Terminated(BaseException):
    """Raised in the main thread when the process gets SIGTERM, so that every ``finally`` / ``except BaseException``
    cleanup runs (pools terminate their workers, temporary files are removed) before the command exits 143."""


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # one SIGTERM is enough: the cleanup must not be interrupted
    raise Terminated


@contextlib.contextmanager
def _sigterm_raises() -> Iterator[None]:
    """While the command runs, SIGTERM raises :class:`Terminated` (main thread only; restored after)."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "SIGTERM"):
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _ignore_sigint() -> None:
    """Ignore SIGINT from now on (main thread only): the command has stopped and only the interpreter's exit (pool
    finalizers, ``atexit``) is left, which a second Ctrl-C would interrupt with a traceback."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)


#: most characters of an error message printed: a message quoting its input is cut in the middle
MAX_ERROR_CHARS = 400


def is_input_error(err: BaseException) -> bool:
    """Whether ``err`` is what bad or oversized input raises (exit 2) rather than an internal bug (exit 1)."""
    return isinstance(err, INPUT_ERRORS) or type(err).__name__ == "OutOfMemoryError"  # torch's, a RuntimeError


def error_line(err: BaseException) -> str:
    """The message of ``err`` on one line (a ``KeyError`` without its quotes; the type where it has no text)."""
    message = str(err.args[0]) if isinstance(err, KeyError) and err.args else str(err)
    if isinstance(err, OSError) and err.filename is not None and err.strerror:  # [Errno 36] ...: 'a 100 KB name'
        name = os.fsdecode(err.filename)
        message = f"{name if len(name) <= 80 else name[:77] + '...'}: {err.strerror}"
    if isinstance(err, MemoryError) or type(err).__name__ == "OutOfMemoryError":
        detail = f" ({message})" if message else ""
        message = f"out of memory{detail}: the input is larger than this machine can evaluate"
    elif isinstance(err, RecursionError):
        message = f"input nested too deeply ({message})"
    message = " ".join(message.split())
    if len(message) > MAX_ERROR_CHARS:  # a message quoting kilobytes of input: its head and tail
        cut = f" [... {len(message) - MAX_ERROR_CHARS + 40:,} characters ...] "
        message = message[: MAX_ERROR_CHARS - 80 - len(cut)] + cut + message[-80:]
    return message if message else type(err).__name__


def _command_in(argv: Sequence[str]) -> str | None:
    """The first argument that names a command, if any (options before it are top-level options)."""
    after_limit = False  # the value of a top-level `--limit NAME=VALUE`
    for arg in argv:
        if after_limit:
            after_limit = False
            continue
        if arg == "--limit":
            after_limit = True
        elif not arg.startswith("-"):
            return arg if arg in COMMANDS else None
    return None


class _OneLineParser(argparse.ArgumentParser):
    """A usage error is one line (``drivemetrics culane-eval: error: argument --width: ...``) and exit 2, like
    every other error of the command; ``--help`` shows the usage."""

    def error(self, message: str) -> NoReturn:
        message = " ".join(message.split())
        for action in self._actions:  # argparse names an option by all its strings: the hidden aliases left out
            hidden = getattr(action, "hidden_aliases", ())
            if hidden:
                shown = "/".join(o for o in action.option_strings if o not in hidden)
                message = message.replace(f"argument {'/'.join(action.option_strings)}:", f"argument {shown}:")
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _add_global_options(parser: argparse.ArgumentParser) -> None:
    """A subcommand's parser: the help formatter of the grammar, and the global options after the subcommand too.

    ``drivemetrics culane-eval ... --limit max_lane_points=50000 --verbose`` means what the same options mean
    before ``culane-eval``; ``--limit`` values from both places add up (``main`` joins them).
    """
    from drivemetrics._internal.options import GrammarHelpFormatter

    parser.formatter_class = GrammarHelpFormatter
    parser.add_argument(
        "--verbose",
        action="store_true",
        default=argparse.SUPPRESS,
        help="on an error, show the Python traceback (as before the command)",
    )
    parser.add_argument(
        "--limit",
        dest="limit_after_command",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="raise an input limit (repeatable; as before the command, see drivemetrics --help)",
    )


#: The examples of ``drivemetrics --help`` (every ``--help`` shows one; tests/test_cli_grammar.py parses them).
TOP_EXAMPLES = (
    "examples:\n"
    "  drivemetrics demo --out demo_out  # every domain's demo on synthetic scenes\n"
    "  drivemetrics culane-eval --help  # a command's options and its own example\n"
    "  drivemetrics --limit max_lane_points=50000 culane-eval --gt culane --pred pred --json culane.json"
)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argument parser: ``command``'s module registers its real subcommands, the others are placeholders."""
    from drivemetrics._internal.options import GrammarHelpFormatter

    parser = _OneLineParser(
        prog="drivemetrics",
        description="Driving-oriented metrics and losses for road, lane and lane-graph perception.",
        epilog=TOP_EXAMPLES,
        formatter_class=GrammarHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"drivemetrics {__version__}")
    parser.add_argument(
        "--verbose", action="store_true", help="on an error, show the Python traceback, not only the one-line message"
    )
    parser.add_argument(
        "--limit",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="raise an input limit (repeatable), e.g. --limit max_lane_points=50000; names and defaults: "
        "max_png_pixels, max_lane_points, max_lanes_per_frame, max_abs_coordinate, max_graph_nodes, max_graph_edges, "
        "max_graph_extent, max_json_depth, max_json_int_digits, max_lane3d_points, max_lane3d_lanes, "
        "max_lane3d_abs_metres, max_map_line_points, max_map_lines_per_frame, max_map_frames, max_map_coordinate, "
        "max_objects_per_frame, max_samples_per_mb "
        "(see docs/pages/promises.md)",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    registered: set[str] = set()
    if command is not None:
        module = importlib.import_module(COMMANDS[command][0])
        before = set(sub.choices)
        module.register(sub)
        registered = set(sub.choices) - before
        for name in registered:
            _add_global_options(sub.choices[name])
    for name, (_, help_text) in COMMANDS.items():
        if name not in registered:
            sub.add_parser(name, help=help_text, add_help=False)
    return parser


def _run(args: argparse.Namespace) -> int:
    """Run the command; under torchrun (``WORLD_SIZE`` > 1) across the ranks when it shards its frames
    (``sharded=True`` in its parser defaults, see :mod:`drivemetrics._internal.distributed`), else on rank 0 alone."""
    from drivemetrics._internal.files import check_input_kinds, check_outputs

    check_input_kinds(args)  # a folder where a file is expected (or the reverse): one line naming the option
    check_outputs(args)  # no output is, contains or sits inside an input (the one output rule)
    if os.environ.get("WORLD_SIZE", "1").strip() in ("", "0", "1"):
        return int(args.func(args) or 0)
    if not getattr(args, "sharded", False):
        if os.environ.get("RANK", "0").strip() not in ("", "0"):
            return 0
        print(f"drivemetrics {args.command}: runs on rank 0 alone (it does not shard its frames)", file=sys.stderr)
        return int(args.func(args) or 0)
    from drivemetrics._internal.distributed import distributed_from_env

    with distributed_from_env():
        return int(args.func(args) or 0)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console command; returns the exit code.

    One error contract for every command: bad input (:data:`INPUT_ERRORS`: a malformed line, a refused pickle, a
    missing or unreadable file, an input too large for memory, a missing optional dependency) prints one line
    ``drivemetrics COMMAND: error: ...`` naming the file and exits with status 2; any other exception is an
    internal bug: one line with a hint to report it, status 1. ``--verbose`` adds the traceback. Ctrl-C exits with
    status 130 and SIGTERM with 143, both after the command has cleaned up (workers ended, temporary files removed,
    existing outputs kept).
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(_command_in(argv))
    args = parser.parse_args(argv)
    try:
        from drivemetrics._internal.limits import limit_options
        from drivemetrics._internal.progress import one_line_warnings

        limits = [*args.limit, *getattr(args, "limit_after_command", [])]
        with _sigterm_raises(), limit_options(limits), one_line_warnings(f"drivemetrics {args.command}"):
            return _run(args)
    except KeyboardInterrupt:
        _ignore_sigint()  # a second Ctrl-C must not interrupt the exit's cleanup (atexit finalizers) with a traceback
        print(f"drivemetrics {args.command}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Terminated:
        _ignore_sigint()
        print(f"drivemetrics {args.command}: terminated (SIGTERM)", file=sys.stderr)
        return EXIT_TERMINATED
    except Exception as err:
        if args.verbose:
            traceback.print_exc()
        if is_input_error(err):
            print(f"drivemetrics {args.command}: error: {error_line(err)}", file=sys.stderr)
            return EXIT_BAD_INPUT
        hint = "" if args.verbose else " (rerun with --verbose for the traceback)"
        print(
            f"drivemetrics {args.command}: internal error: {type(err).__name__}: {error_line(err)}; "
            f"this is a bug in drivemetrics, please report it with the command line{hint}",
            file=sys.stderr,
        )
        return EXIT_INTERNAL_ERROR
