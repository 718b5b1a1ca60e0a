"""A Metric class starts fast (issue 50): its first import loads torch and torchmetrics' base class only.

``drivemetrics._internal.torchmetrics_base`` imports ``torchmetrics.metric`` without the package's ``__init__``
(every torchmetrics metric, ``scipy.signal``, ``scipy.stats``) and without ``matplotlib.pyplot``; torchmetrics then
completes itself on first use. Each check runs in a fresh interpreter (subprocess).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


def _run(code: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "MPLBACKEND": "Agg"}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_a_metric_class_loads_neither_scipy_signal_nor_matplotlib_nor_the_torchmetrics_metrics():
    out = _run(
        """
        import sys
        from drivemetrics.road import RoadPixelMaxFScore
        RoadPixelMaxFScore()
        heavy = ("scipy.signal", "scipy.stats", "matplotlib", "torchmetrics.functional", "torchmetrics.classification")
        print(sorted(name for name in heavy if name in sys.modules))
        """
    )
    assert out.strip() == "[]"


@pytest.mark.parametrize("torchmetrics_first", [False, True])
def test_torchmetrics_works_as_usual_after_the_early_base_class(torchmetrics_first):
    """Its package, its own metrics and their plots, MetricCollection, one log handler; in either order of use."""
    out = _run(
        f"""
        import logging
        import torch
        from drivemetrics.road import RoadPixelMaxFScore, RoadPixelMetrics, road_pixel_example_inputs
        if {torchmetrics_first}:
            from torchmetrics.classification import BinaryAccuracy  # a submodule before the package completes
            metric = BinaryAccuracy()
            metric.update(torch.tensor([1, 0]), torch.tensor([1, 1]))
            print(type(metric.plot()[0]).__name__)
        ours = RoadPixelMaxFScore()
        ours.update(**road_pixel_example_inputs())
        print(type(ours.plot()[0]).__name__)
        import torchmetrics
        from torchmetrics import MetricCollection
        from torchmetrics.classification import BinaryAccuracy
        metric = BinaryAccuracy()
        metric.update(torch.tensor([1, 0]), torch.tensor([1, 1]))
        print(type(metric.plot()[0]).__name__, float(metric.compute()))
        print(issubclass(RoadPixelMetrics, torchmetrics.Metric), "MetricCollection" in dir(torchmetrics),
              len(logging.getLogger("torchmetrics").handlers))
        collection = MetricCollection([RoadPixelMaxFScore()])
        collection.update(**road_pixel_example_inputs())
        print(sorted(collection.compute()))
        """
    )
    lines = out.strip().splitlines()
    assert lines[-4:] == ["Figure", "Figure 0.5", "True True 1", "['RoadPixelMaxFScore']"], out
    if torchmetrics_first:
        assert lines[0] == "Figure"


def test_nothing_changes_where_torchmetrics_was_imported_first():
    out = _run(
        """
        import torchmetrics
        from drivemetrics.road import RoadPixelMaxFScore
        early = "_drivemetrics_module_complete" in vars(torchmetrics)
        print(issubclass(RoadPixelMaxFScore, torchmetrics.Metric), early)
        """
    )
    assert out.strip() == "True False"
