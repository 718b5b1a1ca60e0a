"""Command-line options shared by the subcommands (kept light: imported while building the parser)."""

from __future__ import annotations

import argparse
import math
import os
import re
from collections.abc import Callable

__all__ = [
    "INPUT_KINDS",
    "GrammarHelpFormatter",
    "add_compat",
    "add_device",
    "add_input",
    "add_no_progress",
    "add_output",
    "add_threads",
    "add_workers",
    "check_device",
    "device_name",
    "hide_aliases",
    "number_in",
    "positive_int",
    "progress_setting",
    "resolve_workers",
]

#: The device strings ``--device`` accepts (checked at parse time, without importing torch).
_DEVICE = re.compile(r"(cpu|cuda|mps|xpu)(:[0-9]+)?")


def positive_int(text: str) -> int:
    """argparse type: an int >= 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


#: the seeds numpy's and Python's generators take from every command: ``0 <= seed < 2 ** 32``
SEED_RANGE = (0, 2**32 - 1)


def number_in(low: float, high: float, *, kind: type = float, low_open: bool = False) -> Callable[[str], float | int]:
    """argparse type: a finite ``kind`` (``float`` or ``int``) in ``[low, high]`` (``(low, high]`` with
    ``low_open``). Anything else is a usage error naming the option, e.g. ``argument --width: must be an integer
    in [1, 100000], got 1000000000`` (the input quoted to at most 80 characters)."""
    name = "an integer" if kind is int else "a number"
    bounds = f"{'(' if low_open else '['}{low:g}, {high:g}]"

    def parse(text: str) -> float | int:
        try:
            value = kind(text)
        except (ValueError, OverflowError):
            raise argparse.ArgumentTypeError(f"must be {name} in {bounds}, got {text[:80]!r}") from None
        if not math.isfinite(value) or value < low or (low_open and value == low) or value > high:
            raise argparse.ArgumentTypeError(f"must be {name} in {bounds}, got {text[:80]}")
        return value

    parse.__name__ = kind.__name__
    return parse


def add_workers(parser: argparse.ArgumentParser, what: str, auto: bool = False) -> None:
    """``--workers N`` (default ``None``). ``auto``: the command passes ``None`` on to
    :func:`drivemetrics._internal.pool.map_in_processes`, whose cost model starts a pool only where it pays;
    otherwise ``None`` means one per CPU core (:func:`resolve_workers`)."""
    default = (
        f"one process unless the measured time of the first jobs says a pool of up to {os.cpu_count()} pays"
        if auto
        else f"one per CPU core, here {os.cpu_count()}"
    )
    parser.add_argument("--workers", type=positive_int, default=None, metavar="N", help=f"{what} (default: {default})")


def add_threads(parser: argparse.ArgumentParser, what: str) -> None:
    """``--threads N`` (default ``None``: one per usable core) for a command whose pool is threads of one process:
    ``--workers`` means processes in every command (issue 46). ``--workers N`` is still accepted here, hidden, as
    the old spelling of ``--threads N``: ``benchmarks/workers.py`` passes ``--workers`` to every pooled command of
    this checkout and of an older one (``--before``). The action carries ``pool = "threads"``: the command grammar
    (``tests/test_cli_grammar.py``) accepts ``--threads`` in place of ``--workers`` only on such an action."""
    action = parser.add_argument(
        "--threads",
        "--workers",
        type=positive_int,
        default=None,
        dest="threads",
        metavar="N",
        help=f"{what} (default and most: one per usable core, here {os.cpu_count()})",
    )
    hide_aliases(action, "--workers")
    action.pool = "threads"  # type: ignore[attr-defined]  # the grammar's mark: --threads instead of --workers


def resolve_workers(workers: int | None) -> int:
    """``workers`` or, when not given, the number of CPU cores."""
    return workers if workers is not None else (os.cpu_count() or 1)


def add_compat(parser: argparse.ArgumentParser, reference: str) -> None:
    """``--compat {default,reference}`` (default ``default``); ``reference`` says what the released tool does."""
    from drivemetrics._internal.compat import COMPAT_MODES

    parser.add_argument(
        "--compat",
        choices=COMPAT_MODES,
        default="default",
        help=f"default: the paper's definition with the library's fixes; reference: {reference}",
    )


def add_no_progress(parser: argparse.ArgumentParser) -> None:
    """``--no-progress``: the one progress rule of the commands (see :mod:`drivemetrics._internal.progress`)."""
    parser.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress bar (default: a bar on stderr when stdout and stderr are terminals, rank 0 only)",
    )


def progress_setting(args: argparse.Namespace) -> bool | None:
    """What a command passes as ``progress``: ``False`` with ``--no-progress``, else ``None`` (the terminal rule)."""
    return False if getattr(args, "no_progress", False) else None


#: what an input argument names (checked by :func:`drivemetrics._internal.files.check_input_kinds` before a command
#: runs): a file, a folder, or either (read as a folder of files or as one file)
INPUT_KINDS = ("file", "folder", "file or folder")


def add_input(
    parser: argparse.ArgumentParser, flag: str, kind: str, *, aliases: tuple[str, ...] = (), **kwargs: object
) -> None:
    """``parser.add_argument(flag, **kwargs)`` for an input path, recording that it names a ``kind`` (one of
    :data:`INPUT_KINDS`): a folder given where a file is expected (or a file where a folder is) is then refused in
    one line naming ``flag`` before any work. ``aliases``: old spellings, accepted and hidden (:func:`hide_aliases`)."""
    if kind not in INPUT_KINDS:
        raise ValueError(f"`kind` must be one of {INPUT_KINDS}, got {kind!r}")
    action = parser.add_argument(flag, *aliases, **kwargs)  # type: ignore[arg-type]
    hide_aliases(action, *aliases)
    kinds = dict(parser.get_default("input_kinds") or {})
    kinds[action.dest] = (flag, kind)
    parser.set_defaults(input_kinds=kinds)


def add_output(
    parser: argparse.ArgumentParser, flag: str, *, aliases: tuple[str, ...] = (), **kwargs: object
) -> argparse.Action:
    """``parser.add_argument(flag, *aliases, **kwargs)`` for an output path (file or folder), recording it for the one
    output rule (:func:`drivemetrics._internal.files.check_outputs`: it must not be, contain or sit inside an input),
    whose refusals name ``flag``. ``aliases`` are old spellings: they parse, ``--help`` omits them
    (:func:`hide_aliases`). The usual names (``--json``, ``--figures``, ``--write-stats``, ``--out``, ``--output``)
    are checked without it, named after their ``dest``."""
    action = parser.add_argument(flag, *aliases, **kwargs)  # type: ignore[arg-type]
    if aliases:
        hide_aliases(action, *aliases)
    flags = dict(parser.get_default("output_flags") or {})
    flags[action.dest] = flag
    parser.set_defaults(output_flags=flags)
    return action


def device_name(text: str) -> str:
    """argparse type: a torch device string such as ``cpu``, ``cuda`` or ``cuda:1``."""
    if not _DEVICE.fullmatch(text):
        raise argparse.ArgumentTypeError(f"not a device: {text!r} (use cpu, cuda, cuda:N, mps or xpu)")
    return text


def add_device(parser: argparse.ArgumentParser, what: str, default: str | None = "cpu", default_text: str = "") -> None:
    """``--device NAME`` (default ``cpu``), checked by :func:`device_name` (and :func:`check_device` before work).

    ``default=None`` is for a command whose default path is host code without torch (numpy), as
    ``kitti-object-eval`` and ``openlanev2-eval``: ``default_text`` then says what runs without the option."""
    shown = default_text or f"default {default}"
    parser.add_argument("--device", type=device_name, default=default, metavar="NAME", help=f"{what} ({shown})")


def check_device(name: str) -> None:
    """Raise ``ValueError`` naming ``--device`` when this host cannot run on ``name`` (before any work is done).

    The CPU needs no check, so a host-code command (numpy) calls this without importing torch."""
    kind, _, index = name.partition(":")
    if kind == "cpu":
        return
    import torch

    backend = getattr(torch, kind, None)
    available = backend is not None and bool(getattr(backend, "is_available", lambda: False)())
    if not available:
        raise ValueError(f"--device {name}: no {kind} device on this host (torch {torch.__version__})")
    count = int(getattr(backend, "device_count", lambda: 1)())
    if index and int(index) >= count:
        raise ValueError(f"--device {name}: this host has {count} {kind} device(s)")


def hide_aliases(action: argparse.Action, *aliases: str) -> argparse.Action:
    """Mark ``aliases`` (extra option strings of ``action``) as old spellings: they parse, ``--help`` omits them.

    The commands' grammar (``docs/pages/conventions.md``) names one thing one way (``--gt``, ``--pred``, ``--out``);
    an old spelling stays accepted where scripts use it, shown nowhere (:class:`GrammarHelpFormatter`).
    """
    missing = [alias for alias in aliases if alias not in action.option_strings]
    if missing:
        raise ValueError(f"`aliases` must be option strings of the action, got {missing}")
    action.hidden_aliases = frozenset(aliases)  # type: ignore[attr-defined]
    return action


class GrammarHelpFormatter(argparse.HelpFormatter):
    """The subcommands' help: the description wrapped, the epilog's examples as written, old spellings left out."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if text.startswith("example"):  # the epilog: one command a line, copy-paste runnable
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)

    def _format_action_invocation(self, action: argparse.Action) -> str:
        hidden = getattr(action, "hidden_aliases", frozenset())
        if hidden:
            import copy

            action = copy.copy(action)
            action.option_strings = [o for o in action.option_strings if o not in hidden]
        return super()._format_action_invocation(action)
