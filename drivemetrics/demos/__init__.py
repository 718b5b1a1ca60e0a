"""``drivemetrics demo``: one section per domain, on synthetic scenes made by the library (no download).

The demos sit above the metric domains: they import ``synthetic`` and the domains, and no domain imports them.
Each section is a module ``drivemetrics.demos.<section>`` with
``run(out_dir: pathlib.Path, seed: int, quick: bool, figures: bool) -> str``: it writes its figures under
``out_dir`` (when ``figures``) and returns the text (tables) to print. The road section includes the
driving-corridor section (``demos.corridor``). Without matplotlib (the ``plot`` extra) the demo prints every table
and one line saying that the figures need the extra.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Sequence
from pathlib import Path

from drivemetrics._internal.extras import available, missing_extra_message

#: The demo sections, in the order they run.
SECTIONS: tuple[str, ...] = ("road", "lane", "graph")


def run_demo(
    out_dir: str | Path = "demo_out", seed: int = 0, quick: bool = False, only: Sequence[str] | None = None
) -> int:
    """Run the demo sections (all, or those in ``only``), print their tables; returns 0.

    The figures need matplotlib (``pip install 'drivemetrics[plot]'``); without it every table is printed and the
    last line says so.
    """
    sections = list(SECTIONS)
    if only:
        unknown = set(only) - set(SECTIONS)
        if unknown:
            raise ValueError(f"`only` names unknown demo sections {sorted(unknown)}; known: {', '.join(SECTIONS)}")
        sections = [s for s in SECTIONS if s in only]
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise ValueError(f"`--out` {out} is a file; the demo writes its figures into a folder")
    out.mkdir(parents=True, exist_ok=True)
    figures = available("matplotlib")  # checked once, before any work
    for section in sections:
        start = time.perf_counter()
        module = importlib.import_module(f"drivemetrics.demos.{section}")
        text = module.run(out / section, seed=seed, quick=quick, figures=figures)
        print(f"\n=== {section} ({time.perf_counter() - start:.1f} s) ===\n{text}")
    if figures:
        print(f"\nfigures written to {out.resolve()}")
    else:
        missing = missing_extra_message("plot", "matplotlib", "drawing the demo's figures")
        print(f"\n{missing} (the tables above are complete)")
    return 0
