"""Command-line options shared by the subcommands (kept light: imported while building the parser)."""

from __future__ import annotations

import argparse
import os
import re

#: The device strings ``--device`` accepts (checked at parse time, without importing torch).
_DEVICE = re.compile(r"(cpu|cuda|mps|xpu)(:[0-9]+)?")


def positive_int(text: str) -> int:
    """argparse type: an int >= 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


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


def device_name(text: str) -> str:
    """argparse type: a torch device string such as ``cpu``, ``cuda`` or ``cuda:1``."""
    if not _DEVICE.fullmatch(text):
        raise argparse.ArgumentTypeError(f"not a device: {text!r} (use cpu, cuda, cuda:N, mps or xpu)")
    return text


def add_device(parser: argparse.ArgumentParser, what: str) -> None:
    """``--device NAME`` (default ``cpu``), checked by :func:`device_name` (and :func:`check_device` before work)."""
    parser.add_argument("--device", type=device_name, default="cpu", metavar="NAME", help=f"{what} (default cpu)")


def check_device(name: str) -> None:
    """Raise ``ValueError`` naming ``--device`` when this host cannot run on ``name`` (before any work is done)."""
    import torch

    kind, _, index = name.partition(":")
    if kind == "cpu":
        return
    backend = getattr(torch, kind, None)
    available = backend is not None and bool(getattr(backend, "is_available", lambda: False)())
    if not available:
        raise ValueError(f"--device {name}: no {kind} device on this host (torch {torch.__version__})")
    count = int(getattr(backend, "device_count", lambda: 1)())
    if index and int(index) >= count:
        raise ValueError(f"--device {name}: this host has {count} {kind} device(s)")
