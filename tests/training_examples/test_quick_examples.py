"""The examples without their own tests run in quick mode as `make examples` runs them; their JSON is checked."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO_ROOT


def _run_quick(example: str, tmp_path: Path, *extra: str) -> dict[str, Any]:
    """``python training_examples/<example>.py --quick --json TMP ...`` in a subprocess; the written JSON."""
    out = tmp_path / f"{example}.json"
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    command = [sys.executable, str(REPO_ROOT / "training_examples" / f"{example}.py"), "--quick", "--json", str(out)]
    done = subprocess.run([*command, *extra], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(out.read_text())


def _finite(values: dict[str, float]) -> bool:
    return all(isinstance(v, float) and math.isfinite(v) for v in values.values())


@pytest.mark.slow
def test_drp_attack_quick(tmp_path):
    report = _run_quick("drp_attack", tmp_path, "--out", str(tmp_path / "out"), "--no-figures")
    assert set(report) == {"device", "families", "iterations_per_s"}
    assert set(report["families"]) == {"segmentation", "rowwise", "polynomial", "anchor"}
    keys = {"benign_max_deviation_m", "attacked_max_deviation_m", "zero_budget_max_deviation_m", "success_rate"}
    for family, row in report["families"].items():
        clips = row.pop("clips")
        assert set(row) == keys, family
        assert _finite(row), family
        assert row["zero_budget_max_deviation_m"] == pytest.approx(row["benign_max_deviation_m"], abs=1e-9), family
        assert 0 <= row["success_rate"] <= 1, family
        # per clip: the means above are their means
        assert [c["clip"] for c in clips] == list(range(len(clips)))
        mean = sum(c["attacked_max_deviation_m"] for c in clips) / len(clips)
        assert mean == pytest.approx(row["attacked_max_deviation_m"], rel=1e-9), family
        assert sum(c["success"] for c in clips) / len(clips) == pytest.approx(row["success_rate"]), family
    assert math.isfinite(report["iterations_per_s"])
    assert report["iterations_per_s"] > 0
    assert len(list((tmp_path / "out" / "detectors").glob("*.pt"))) == 4  # the cache of trained detectors
    # --no-figures: only the raw patch textures, one per family
    assert sorted(p.name for p in (tmp_path / "out").glob("*.png")) == sorted(
        f"patch_texture_{family}.png" for family in report["families"]
    )


@pytest.mark.slow
def test_soft_f_loss_quick(tmp_path):
    result = _run_quick("soft_f_loss", tmp_path)
    assert result.keys() == {"example", "quick", "steps", "loss_space", "before", "after"}
    settings = {k: result[k] for k in ("example", "quick", "steps", "loss_space")}
    assert settings == {"example": "soft_f_loss", "quick": True, "steps": 50, "loss_space": "perspective"}
    for when in ("before", "after"):
        assert result[when].keys() == {"max_f", "average_precision", "f_measure_fixed"}
        assert _finite(result[when]), when
    assert result["after"]["max_f"] > result["before"]["max_f"]  # the soft-F loss trains the segmenter


@pytest.mark.slow
def test_psld_aux_loss_quick(tmp_path):
    result = _run_quick("psld_aux_loss", tmp_path)
    assert result.keys() == {"example", "quick", "steps", "baseline", "psld_aux"}
    assert (result["example"], result["quick"], result["steps"]) == ("psld_aux_loss", True, 40)
    for run in ("baseline", "psld_aux"):
        assert result[run].keys() == {"line_l1_m", "psld"}
        assert _finite(result[run]), run
        assert result[run]["line_l1_m"] > 0, run
        assert result[run]["psld"] >= 0, run
    assert result["psld_aux"]["psld"] != result["baseline"]["psld"]  # the auxiliary loss changes the model


@pytest.mark.slow
def test_lane3d_matching_quick(tmp_path):
    result = _run_quick("lane3d_matching", tmp_path)
    assert result.keys() == {"example", "quick", "steps", "before", "after"}
    assert (result["example"], result["quick"], result["steps"]) == ("lane3d_matching", True, 200)
    for when in ("before", "after"):
        assert _finite(result[when]), when
    assert result["before"]["f_score"] < 0.2
    assert result["after"]["f_score"] > 0.7  # the matching loss on 3D lanes raises the OpenLane F-score
    assert result["after"]["z_error_far"] < result["before"]["z_error_far"]
