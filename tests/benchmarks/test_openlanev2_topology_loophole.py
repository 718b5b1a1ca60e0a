"""benchmarks/openlanev2_topology_loophole.py: the exploits it measures raise the devkit's (reference) topology
scores and do not raise the default mode's (the measured claim of docs/pages/domains/lanetopology.md)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "openlanev2_topology_loophole.py"


@pytest.fixture(scope="module")
def loophole() -> ModuleType:
    spec = importlib.util.spec_from_file_location("openlanev2_topology_loophole", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["openlanev2_topology_loophole"] = module
    spec.loader.exec_module(module)
    return module


def _gain(module: ModuleType, preds: list[Any], gts: list[Any], track: str, exploit: str, compat: str) -> dict:
    honest = module.scores(preds, gts, track, compat)
    cheat = module.scores([module.EXPLOITS[exploit](p, track) for p in preds], gts, track, compat)
    return {k: cheat[k] - honest[k] for k in honest}


def test_rescaled_relations_gain_in_reference_only(loophole: ModuleType) -> None:
    gt, submission = loophole.make_frames(120, 11)  # random relation confidences: an uninformative head
    gts = [v["annotation"] for v in gt.values()]
    preds = [v["predictions"] for v in submission["results"].values()]
    ref = _gain(loophole, preds, gts, "centerline", "rescale", "reference")
    fixed = _gain(loophole, preds, gts, "centerline", "rescale", "default")
    assert ref["top_ll"] > 0.02
    assert ref["top_lt"] > 0.02
    assert ref["ols"] > 0.01
    assert fixed["ols"] <= 0.0


@pytest.mark.parametrize("track", ["centerline", "lanesegment"])
def test_extra_lanes_with_copied_relations_gain_in_reference_only(
    loophole: ModuleType, fixtures_dir: Path, track: str
) -> None:
    path = fixtures_dir / "openlanev2" / f"{track}_cases.json"
    if not path.is_file():
        pytest.skip("openlanev2 fixtures absent")
    frames = json.loads(path.read_text())["frames"]
    preds, gts = [f["pred"] for f in frames], [f["gt"] for f in frames]
    score = "ols" if track == "centerline" else "olus"
    ref = _gain(loophole, preds, gts, track, "duplicates", "reference")
    fixed = _gain(loophole, preds, gts, track, "duplicates", "default")
    assert ref[score] > 0.02
    assert fixed[score] < 0.0
