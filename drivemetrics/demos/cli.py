"""The ``demo`` subcommand."""

from __future__ import annotations

import argparse

from drivemetrics._internal.options import SEED_RANGE, number_in
from drivemetrics.demos import SECTIONS, run_demo

__all__ = ["register"]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``demo`` to the ``drivemetrics`` command."""
    demo = subparsers.add_parser(
        "demo",
        epilog="example:\n  drivemetrics demo --only road lane --out demo_out",
        help="run every domain's demo on synthetic scenes (no download)",
    )
    demo.add_argument(
        "--out", default="demo_out", metavar="DIR", help="folder for figures and tables (default: demo_out)"
    )
    demo.add_argument("--seed", type=number_in(*SEED_RANGE, kind=int), default=0, help="seed of the synthetic scenes")
    demo.add_argument("--quick", action="store_true", help="smaller scenes, for tests")
    demo.add_argument(
        "--only",
        nargs="*",
        default=None,
        metavar="SECTION",
        help=f"run only these sections, from {', '.join(SECTIONS)}",
    )
    demo.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    return run_demo(out_dir=args.out, seed=args.seed, quick=args.quick, only=args.only)
