"""The corridor demo section: a clean detector beats the mean-of-GT prior, and the figures are written."""

from __future__ import annotations

import re

import pytest

from drivemetrics.demos.corridor import corridor_section


@pytest.mark.slow
def test_corridor_section_ranks_detectors_and_writes_figures(tmp_path):
    text = corridor_section(tmp_path, seed=0, quick=True)
    rows = {}
    for line in text.splitlines():
        values = re.findall(r"([\d.]+)%", line)
        if len(values) == 9:
            rows[line[:18].strip()] = [float(v) for v in values]
    assert set(rows) == {"lane_good", "lane_potholes", "lane_blurry", "mean-of-GT prior"}
    assert all(0 <= v <= 100 for values in rows.values() for v in values)
    # Table IV columns: precision 20/30/40, F1 20/30/40, hitrate 20/30/40
    assert rows["lane_good"][8] >= rows["mean-of-GT prior"][8]
    assert rows["lane_good"][2] > rows["mean-of-GT prior"][2]
    assert (tmp_path / "corridor_fig12.png").stat().st_size > 10_000
    assert (tmp_path / "corridor_fig13.png").stat().st_size > 10_000
