"""The road section of ``drivemetrics demo`` (quick mode): it runs, writes figures, and its numbers make sense."""

from __future__ import annotations

import re

import pytest

from drivemetrics.demos import road as demo


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("road_demo")
    return out, demo.run(out, seed=0, quick=True)


def _table(text: str) -> dict[str, list[float]]:
    """Rows of the demo table: label -> [persp MaxF, AP, PRE, REC, BEV MaxF, AP, PRE, REC, rendered MaxF, AP]."""
    rows = {}
    for line in text.splitlines():
        if line.startswith("BEV (devkit warp):"):  # end of the table (other sections may follow)
            break
        parts = [p.strip() for p in line.split("|")]
        if len(parts) == 4 and re.fullmatch(r"[-\d. ]+", " ".join(parts[1:])) and parts[0]:
            rows[parts[0]] = [float(v) for v in " ".join(parts[1:]).split()]
    return rows


def test_quick_demo_writes_figures(quick_run):
    out, text = quick_run
    for name in ("road_pr_curves.png", "road_bev_overlays.png", "road_perspective.png"):
        assert (out / name).stat().st_size > 10_000
    assert "max_f" in text


def test_quick_demo_table_sanity(quick_run):
    _, text = quick_run
    rows = _table(text)
    assert set(rows) == {*demo.DEMO_DETECTORS.values(), demo.BASELINE}
    for values in rows.values():
        assert len(values) == 10
        assert all(0 <= v <= 100 for v in values)
    good = rows["good"]
    for label, values in rows.items():
        if label != "good":  # every degraded detector and the prior score below the good one, in every space
            assert good[0] > values[0]
            assert good[4] > values[4]
            assert good[8] > values[8]
    prior = rows[demo.BASELINE]
    assert all(prior[0] < v[0] for k, v in rows.items() if k != demo.BASELINE)
    # far-range blur hurts more in BEV (which weighs the far range by area) than in perspective
    blurry = rows["blurry far range"]
    assert blurry[0] - blurry[4] > 3
    # warping perspective maps to BEV (devkit lookup) and rendering BEV directly agree
    for values in rows.values():
        assert abs(values[4] - values[8]) < 3
