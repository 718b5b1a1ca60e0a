"""The auxiliary-loss study: its power analysis, its pairing by seed, and the quick mode's output (the pipeline,
not the effect)."""

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
from training_examples import aux_loss_study as study


def test_detectable_difference_lies_between_the_normal_and_the_t_approximations():
    # paired t-test, alpha 0.05 two-sided, power 0.8: the z-approximation (1.95996 + 0.84162) sd / sqrt(n) is a
    # lower bound; (t_0.975 + t_0.8) sd / sqrt(n) with n - 1 dof (tables: 2.20099 + 0.87634 for n = 12) is within
    # 1 % of the exact (noncentral t) value
    got = study.detectable_difference(1.0, 12)
    assert (1.95996 + 0.84162) / math.sqrt(12) < got
    assert got == pytest.approx((2.20099 + 0.87634) / math.sqrt(12), rel=0.01)
    assert study.detectable_difference(2.0, 12) == pytest.approx(2 * got)
    big = study.detectable_difference(1.0, 400)
    assert big == pytest.approx((1.95996 + 0.84162) / math.sqrt(400), rel=0.01)


def test_summarise_pairs_by_seed_and_flags_the_goal():
    runs = []
    for seed, base in ((0, 0.10), (1, 0.12), (2, 0.14), (3, 0.16)):
        for loss in study.SETTINGS:
            scores = dict.fromkeys(study.LANE_METRICS, 0.5)
            scores["e2e_ld"] = base if loss == "none" else base * (0.5 if loss == "LookaheadLaneLoss" else 1.1)
            runs.append({"loss": loss, "seed": seed, "scores": scores})
    runs.append({"loss": "none", "seed": 4, "scores": dict.fromkeys(study.LANE_METRICS, 0.5)})  # unpaired: left out
    settings = study.summarise(runs, {"LookaheadLaneLoss": 0.3})
    assert [s["loss"] for s in settings] == list(study.SETTINGS)
    assert settings[0]["seeds"] == [0, 1, 2, 3]
    assert settings[0]["difference_to_baseline"] == {}
    look = settings[1]
    assert look["weight"] == 0.3
    assert look["difference_to_baseline"]["e2e_ld"]["values"] == pytest.approx([-0.05, -0.06, -0.07, -0.08])
    assert look["relative_e2e_ld_change"] == pytest.approx(-0.5)
    assert look["goal_met"] is True
    assert settings[2]["goal_met"] is False  # 10 % worse


@pytest.mark.slow
def test_quick_mode_output(tmp_path):
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    script = str(REPO_ROOT / "training_examples" / "aux_loss_study.py")
    done = subprocess.run([sys.executable, script, "--quick", "--out", str(out)], capture_output=True, text=True,
                          cwd=tmp_path, env=env, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert sorted(p.name for p in out.iterdir()) == ["aux_loss_study.json", "aux_loss_study.png"]
    result = json.loads((out / "aux_loss_study.json").read_text())
    lane = result["lane"]
    assert [s["loss"] for s in lane["settings"]] == ["none", *study.SETTINGS[1:]]
    assert lane["seeds_done"] == result["seeds"]
    weights = {name: info["weight"] for name, info in result["weight_rule"]["losses"].items()}
    assert set(weights) == set(study.SETTINGS[1:])
    assert all(w > 0 for w in weights.values())
    by = {(r["loss"], r["seed"]): r["scores"] for r in lane["runs"]}
    for setting in lane["settings"]:
        assert setting["seeds"] == result["seeds"]
        assert setting["weight"] == weights.get(setting["loss"], 0.0)
        for name in ("e2e_ld", "psld", "tusimple_f1", "tusimple_accuracy", "culane_f1"):
            stats = setting["metrics"][name]
            assert stats["values"] == [by[(setting["loss"], s)][name] for s in result["seeds"]]
            assert stats["ci95"][0] <= stats["mean"] <= stats["ci95"][1]
            if setting["loss"] != "none":
                diff = setting["difference_to_baseline"][name]
                expected = [by[(setting["loss"], s)][name] - by[("none", s)][name] for s in result["seeds"]]
                assert diff["values"] == pytest.approx(expected)
    assert result["machine"]["jobs"] == 1
    assert result["seconds"] > 0
