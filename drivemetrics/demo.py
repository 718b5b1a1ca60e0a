"""Compatibility alias: the demo moved to :mod:`drivemetrics.demos` (above the metric domains).

``from drivemetrics.demo import run_demo`` keeps working.
"""

from __future__ import annotations

from drivemetrics.demos import SECTIONS, run_demo

__all__ = ["SECTIONS", "run_demo"]
