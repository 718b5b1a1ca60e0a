"""The ``drivemetrics`` console command.

Each domain that offers subcommands has a module ``drivemetrics/<domain>/cli.py`` with a function
``register(subparsers)`` that adds its subcommands; each subcommand sets ``func`` (``args -> int`` exit code)
with ``parser.set_defaults(func=...)``. Domains are listed in :data:`DOMAINS`; a domain without a ``cli``
module is skipped.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from collections.abc import Sequence

DOMAINS = ("road", "lane", "attack", "graph", "detection")


def _domain_modules(kind: str) -> list[str]:
    """Names of the existing ``drivemetrics.<domain>.<kind>`` modules, in :data:`DOMAINS` order."""
    names = []
    for domain in DOMAINS:
        name = f"drivemetrics.{domain}.{kind}"
        if importlib.util.find_spec(f"drivemetrics.{domain}") and importlib.util.find_spec(name):
            names.append(name)
    return names


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every domain's subcommands."""
    parser = argparse.ArgumentParser(
        prog="drivemetrics", description="Driving-oriented metrics and losses for road, lane and lane-graph perception."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    demo = sub.add_parser("demo", help="run every domain's demo on synthetic scenes (no download)")
    demo.add_argument("--out", default="demo_out", help="folder for figures and tables (default: demo_out)")
    demo.add_argument("--seed", type=int, default=0, help="seed of the synthetic scenes")
    demo.add_argument("--quick", action="store_true", help="smaller scenes, for tests")
    demo.add_argument(
        "--only", nargs="*", default=None, metavar="DOMAIN", help=f"run only these sections, from {', '.join(DOMAINS)}"
    )
    demo.set_defaults(func=_run_demo)
    for name in _domain_modules("cli"):
        importlib.import_module(name).register(sub)
    return parser


def _run_demo(args: argparse.Namespace) -> int:
    from drivemetrics.demo import run_demo

    return run_demo(out_dir=args.out, seed=args.seed, quick=args.quick, only=args.only)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console command; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (ValueError, FileNotFoundError, KeyError) as err:
        print(f"drivemetrics {args.command}: error: {err}", file=sys.stderr)
        return 2
