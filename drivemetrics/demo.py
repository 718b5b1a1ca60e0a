"""``drivemetrics demo``: every domain's demo section on synthetic scenes made by the library.

A domain contributes a section with a module ``drivemetrics/<domain>/demo.py`` defining
``run(out_dir: pathlib.Path, seed: int, quick: bool) -> str``: it writes its figures under ``out_dir`` and
returns the text (tables) to print.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Sequence
from pathlib import Path

from drivemetrics.cli import _domain_modules


def run_demo(
    out_dir: str | Path = "demo_out", seed: int = 0, quick: bool = False, only: Sequence[str] | None = None
) -> int:
    """Run the demo sections (all, or the domains in ``only``), print their tables; returns 0."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    modules = _domain_modules("demo")
    if only:
        unknown = set(only) - {m.split(".")[1] for m in modules}
        if unknown:
            raise ValueError(f"`only` names unknown demo sections {sorted(unknown)}")
        modules = [m for m in modules if m.split(".")[1] in only]
    for name in modules:
        domain = name.split(".")[1]
        start = time.perf_counter()
        text = importlib.import_module(name).run(out / domain, seed=seed, quick=quick)
        print(f"\n=== {domain} ({time.perf_counter() - start:.1f} s) ===\n{text}")
    print(f"\nfigures written to {out.resolve()}")
    return 0
