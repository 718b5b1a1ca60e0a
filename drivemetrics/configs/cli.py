"""The ``config`` subcommand: list the shipped configs or print one."""

from __future__ import annotations

import argparse

from drivemetrics.configs import config_names, read_config

__all__ = ["register"]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``config`` to the ``drivemetrics`` command."""
    config = subparsers.add_parser(
        "config",
        epilog="example:\n  drivemetrics config corridor > my_corridor.toml",
        help="list the shipped configs, or print one (drivemetrics config corridor > my_corridor.toml)",
        description="Without NAME, list the configs shipped in the package; with NAME, print that config.",
    )
    config.add_argument("name", nargs="?", metavar="NAME", help="a listed config; the suffix may be left out")
    config.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    if args.name is None:
        print("\n".join(config_names()))
    else:
        print(read_config(args.name), end="")
    return 0
