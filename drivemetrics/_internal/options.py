"""Command-line options shared by the subcommands (kept light: imported while building the parser)."""

from __future__ import annotations

import argparse
import os


def positive_int(text: str) -> int:
    """argparse type: an int >= 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def add_workers(parser: argparse.ArgumentParser, what: str) -> None:
    """``--workers N`` (default ``None``: one per CPU core, see :func:`resolve_workers`)."""
    parser.add_argument(
        "--workers",
        type=positive_int,
        default=None,
        metavar="N",
        help=f"{what} (default: one per CPU core, here {os.cpu_count()})",
    )


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
