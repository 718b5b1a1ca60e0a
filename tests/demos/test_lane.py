from __future__ import annotations

import pytest

from drivemetrics.demos.lane import evaluate_scenarios, run
from drivemetrics.synthetic.lane_clips import NOISE_MODELS


@pytest.fixture(scope="module")
def result():
    return evaluate_scenarios(seed=0, quick=True)


def test_accurate_detector_scores_best(result):
    per = result["clips_per_model"]
    names = result["names"]
    accurate = names.index("accurate")
    sl = slice(accurate * per, (accurate + 1) * per)
    # a near-perfect detector: tiny deviations, near-perfect conventional scores
    assert float(result["e2e"][sl].max()) < 0.03
    assert float(result["psld"][sl].max()) < 1e-3
    assert float(result["accuracy"][sl].min()) > 0.95
    biased = names.index("lateral bias 0.3 m")
    sl_b = slice(biased * per, (biased + 1) * per)
    assert float(result["e2e"][sl_b].min()) > float(result["e2e"][sl].max())
    assert float(result["psld"][sl_b].min()) > float(result["psld"][sl].max())


def test_psld_tracks_e2e(result):
    from drivemetrics.lane.stats import pearson_r

    assert pearson_r(result["psld"], result["e2e"]).r > 0.8


def test_run_writes_figures_and_table(tmp_path, result, monkeypatch):
    import drivemetrics.demos.lane as demo

    monkeypatch.setattr(demo, "evaluate_scenarios", lambda seed, quick: result)
    text = run(tmp_path, seed=0, quick=True)
    for name in NOISE_MODELS:
        assert name in text
    assert "PSLD" in text
    assert "r = " in text
    assert (tmp_path / "lane_trajectories.png").stat().st_size > 1000
    assert (tmp_path / "lane_accuracy_vs_e2e.png").is_file()
    assert (tmp_path / "lane_paths.png").is_file()
