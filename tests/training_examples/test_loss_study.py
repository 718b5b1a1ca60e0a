"""The loss study: its statistics (hand-computed t-intervals, paired differences, the balance point) and the
structure of the quick mode's output (run as ``make examples`` runs it)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest

pytest.importorskip("pytorch_lightning")
pytest.importorskip("scipy")

from tests.conftest import REPO_ROOT
from training_examples import loss_study as study


def test_t_interval_matches_a_hand_computation():
    out = study.t_interval([1.0, 2.0, 3.0, 4.0, 5.0])
    # mean 3, sd sqrt(2.5), t(0.975, 4 dof) = 2.7764451 (tables): half width 2.7764451 * sqrt(2.5) / sqrt(5)
    half = 2.7764451 * math.sqrt(2.5) / math.sqrt(5)
    assert out["mean"] == pytest.approx(3.0)
    assert out["sd"] == pytest.approx(math.sqrt(2.5))
    assert out["ci95"] == pytest.approx([3.0 - half, 3.0 + half], rel=1e-6)
    assert out["n"] == 5
    assert out["values"] == [1.0, 2.0, 3.0, 4.0, 5.0]
    two = study.t_interval([0.0, 2.0])  # t(0.975, 1 dof) = 12.7062047; sd sqrt(2), half = 12.706 * sqrt(2) / sqrt(2)
    assert two["ci95"] == pytest.approx([1.0 - 12.7062047, 1.0 + 12.7062047], rel=1e-6)


def test_t_interval_needs_two_values():
    with pytest.raises(ValueError, match="at least 2"):
        study.t_interval([1.0])


def test_summarise_pairs_the_runs_by_seed():
    runs = [
        {"w": 0, "seed": 0, "scores": {"m": 1.0}},
        {"w": 0, "seed": 1, "scores": {"m": 3.0}},
        {"w": 1, "seed": 1, "scores": {"m": 3.5}},  # out of order: pairing is by seed, not by position
        {"w": 1, "seed": 0, "scores": {"m": 1.5}},
    ]
    out = study.summarise(runs, "w", 1, 0, ("m",))
    assert out["seeds"] == [0, 1]
    assert out["metrics"]["m"]["values"] == [1.5, 3.5]
    difference = out["difference_to_baseline"]["m"]
    assert difference["values"] == [0.5, 0.5]
    assert difference["sd"] == 0.0
    assert difference["ci95"] == [0.5, 0.5]
    assert study.summarise(runs, "w", 0, 0, ("m",))["difference_to_baseline"] == {}


def test_balance_point_is_the_median_gradient_ratio_to_one_digit():
    probes = [
        {"grad_ratio": r, "base_loss": 2.0, "psld_loss": 0.01} for r in (120.0, 260.0, 310.0, 90.0, 270.0)
    ]  # median 260 -> 300
    out = study.balance_point(probes)
    assert out["grad_norm_ratio_median"] == 260.0
    assert out["weight"] == 300.0
    assert out["grad_norm_ratio_range"] == [90.0, 310.0]
    assert out["loss_ratio_median"] == pytest.approx(200.0)
    assert study.balance_point([{"grad_ratio": 0.0234, "base_loss": 1.0, "psld_loss": 1.0}])["weight"] == 0.02


@pytest.mark.slow
def test_quick_mode_output(tmp_path):
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    command = [sys.executable, str(REPO_ROOT / "training_examples" / "loss_study.py"), "--quick", "--out", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # writes under --out only
    assert sorted(p.name for p in out.iterdir()) == ["loss_study.json", "loss_study_lane.png", "loss_study_road.png"]
    result = json.loads((out / "loss_study.json").read_text())
    seeds = result["seeds"]
    assert result["quick"] is True
    assert len(seeds) >= 3
    assert len(set(seeds)) == len(seeds)

    lane = result["lane"]
    assert lane["seeds"] == seeds
    center = lane["balance"]["weight"]
    assert center > 0
    assert lane["weights"] == pytest.approx([0.0, center / 10, center, center * 10], rel=1e-2)
    assert len(lane["runs"]) == len(lane["weights"]) * len(seeds)
    _check_settings(lane["settings"], lane["runs"], "weight", lane["weights"], study.LANE_METRICS, seeds)
    for run in lane["runs"]:
        scores = run["scores"]
        assert 0 <= scores["tusimple_accuracy"] <= 1
        assert 0 <= scores["tusimple_f1"] <= 1
        assert 0 <= scores["culane_f1"] <= 1
        assert scores["psld"] >= 0
        assert scores["e2e_ld"] >= 0
        assert [p["step"] for p in run["probes"]] == sorted({p["step"] for p in run["probes"]})
        for probe in run["probes"]:
            assert -1 - 1e-9 <= probe["grad_cosine"] <= 1 + 1e-9
            assert -1 - 1e-9 <= probe["psld_alignment"] <= 1 + 1e-9
            assert len(probe["psld_row_share"]) == len(lane["h_samples"])
    assert [g["weight"] for g in lane["gradients"]] == lane["weights"]

    road = result["road"]
    assert road["seeds"] == seeds
    losses = ["perspective", "bev", "mix"]
    assert len(road["runs"]) == len(losses) * len(seeds)
    _check_settings(road["settings"], road["runs"], "loss", losses, study.ROAD_METRICS, seeds)


def _check_settings(settings, runs, key, expected, metrics, seeds):
    """Every setting lists the seeds; its values are its runs' scores; the mean lies in its interval; the paired
    difference is the difference of the means."""
    assert [s[key] for s in settings] == expected
    baseline = settings[0]
    for setting in settings:
        assert setting["seeds"] == sorted(seeds)
        assert set(setting["metrics"]) == set(metrics)
        for name, stats in setting["metrics"].items():
            by_seed = {r["seed"]: r["scores"][name] for r in runs if r[key] == setting[key]}
            assert stats["values"] == [by_seed[s] for s in sorted(seeds)], (setting[key], name)
            assert stats["n"] == len(seeds)
            assert stats["mean"] == pytest.approx(sum(stats["values"]) / len(seeds), abs=1e-12)
            low, high = stats["ci95"]
            assert low <= stats["mean"] + 1e-12, (setting[key], name)
            assert stats["mean"] <= high + 1e-12, (setting[key], name)
        if setting is baseline:
            assert setting["difference_to_baseline"] == {}
            continue
        for name, stats in setting["difference_to_baseline"].items():
            expected_mean = setting["metrics"][name]["mean"] - baseline["metrics"][name]["mean"]
            assert stats["mean"] == pytest.approx(expected_mean, abs=1e-12), (setting[key], name)
