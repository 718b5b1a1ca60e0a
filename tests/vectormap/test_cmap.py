"""The C-mAP Metric classes (vectormap/cmap.py): equal to the file evaluation on the fixture, the same whatever the
batching, and a clear error for a scene split across processes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from drivemetrics.vectormap.cmap import (
    ConsistentMapAPMetrics,
    ConsistentMapAveragePrecision,
    ConsistentMapMeanAveragePrecision,
)
from drivemetrics.vectormap.examples import consistent_map_example_inputs
from drivemetrics.vectormap.io import read_map_preds, read_maptracker_samples

CLASSES = ("ped_crossing", "divider", "boundary")


def _pad(frames_lines, with_scores):
    """One frame's lines (list of (array, class id, score)) as the batch dict of one frame."""
    n = max(1, len(frames_lines))
    width = max([len(p) for p, _, _ in frames_lines] + [2])
    points = torch.zeros(1, n, width, 2, dtype=torch.float64)
    lengths = torch.zeros(1, n, dtype=torch.int64)
    labels = torch.zeros(1, n, dtype=torch.int64)
    scores = torch.zeros(1, n, dtype=torch.float64)
    for k, (p, label, score) in enumerate(frames_lines):
        points[0, k, : len(p)] = torch.from_numpy(np.asarray(p, dtype=np.float64))
        lengths[0, k], labels[0, k], scores[0, k] = len(p), label, score
    out = {"points": points, "lengths": lengths, "labels": labels}
    if with_scores:
        out["scores"] = scores
    return out


def _fixture_updates(folder: Path, roi: str):
    root = folder / "cases" / roi
    frames, gt, _ = read_maptracker_samples(root / "samples.json")
    preds = {s.token: s for s in read_map_preds(root / "submission_vector.json", "av2")}
    for frame, target in zip(frames, gt, strict=True):
        pred = preds[frame.token]
        pose = torch.eye(4, dtype=torch.float64)
        pose[:3, :3] = torch.from_numpy(frame.rotation)
        pose[:3, 3] = torch.from_numpy(frame.translation)
        gt_lines = [(p, CLASSES.index(n), 0.0) for p, n in zip(target.points, target.labels, strict=True)]
        pred_lines = [(p, CLASSES.index(n), s) for p, n, s in zip(pred.points, pred.labels, pred.scores, strict=True)]
        yield _pad(pred_lines, True), _pad(gt_lines, False), frame.scene, pose[None]


@pytest.mark.parametrize("roi", ["60x30", "100x50"])
def test_metric_frame_by_frame_equals_the_official_numbers(fixtures_dir, roi):
    """Frames updated one at a time (interleaving nothing: scenes in order) give the tools' C-mAP and mAP."""
    folder = fixtures_dir / "maptracker_cmap"
    if not folder.is_dir():
        pytest.skip("maptracker_cmap fixture absent")
    expected = json.loads((folder / "expected.json").read_text())[roi]
    metric = ConsistentMapAPMetrics(roi=roi, compat="reference")
    for preds, target, scene, pose in _fixture_updates(folder, roi):
        metric.update(preds, target, scene=[scene], pose=pose)
    out = metric.compute()
    assert out["cmap"].item() == pytest.approx(expected["cmap"]["mAP"], abs=1e-6, rel=0)
    assert out["map"].item() == pytest.approx(expected["plain"]["mAP"], abs=1e-6, rel=0)
    thr = expected["cmap"]["thresholds"][0]
    want = expected["cmap"]["per_class"]["divider"][f"AP@{thr}"]
    assert out[f"cap_divider_{thr:g}"].item() == pytest.approx(want, abs=1e-6, rel=0)


def test_batching_does_not_change_the_value():
    """One batch of three frames, or three batches of one, or the scene's frames interleaved with another
    scene's: the same values (a scene's frames keep their order)."""
    inputs = consistent_map_example_inputs()
    whole = ConsistentMapAPMetrics()
    whole.update(**inputs)
    single = ConsistentMapAPMetrics()
    interleaved = ConsistentMapAPMetrics()
    for k in range(3):
        part = {
            "preds": {key: value[k : k + 1] for key, value in inputs["preds"].items()},
            "target": {key: value[k : k + 1] for key, value in inputs["target"].items()},
            "scene": inputs["scene"][k : k + 1],
            "pose": inputs["pose"][k : k + 1],
        }
        single.update(**part)
        interleaved.update(**part)
        interleaved.update(**{**part, "scene": ["scene-2"]})
    a, b, c = whole.compute(), single.compute(), interleaved.compute()
    assert a.keys() == b.keys() == c.keys()
    for key in a:
        assert a[key].item() == b[key].item(), key
        assert a[key].item() == c[key].item(), key  # two identical scenes: the same APs


def test_scalar_classes_pick_their_value():
    inputs = consistent_map_example_inputs()
    family = ConsistentMapAPMetrics()
    family.update(**inputs)
    values = family.compute()
    assert ConsistentMapMeanAveragePrecision()(**inputs).item() == values["cmap"].item()
    one = ConsistentMapAveragePrecision("boundary", threshold=1.0, consistent=False)(**inputs)
    assert one.item() == values["ap_boundary_1"].item() == pytest.approx(1 / 3)
    assert values["ap_divider"].item() == 1.0
    with pytest.raises(ValueError, match="`threshold` must be one of"):
        ConsistentMapAveragePrecision("divider", threshold=2.0)


def test_scene_split_across_processes_is_an_error(monkeypatch):
    """Frames of one scene updated on two processes: compute names the scene (tracks cannot be linked)."""
    inputs = consistent_map_example_inputs()
    metric = ConsistentMapAPMetrics()
    first = {
        **inputs,
        "preds": {k: v[:2] for k, v in inputs["preds"].items()},
        "target": {k: v[:2] for k, v in inputs["target"].items()},
        "scene": inputs["scene"][:2],
        "pose": inputs["pose"][:2],
    }
    metric.update(**first)
    monkeypatch.setattr(torch.distributed, "is_initialized", lambda: True)
    monkeypatch.setattr(torch.distributed, "get_rank", lambda group=None: 1)
    last = {
        **inputs,
        "preds": {k: v[2:] for k, v in inputs["preds"].items()},
        "target": {k: v[2:] for k, v in inputs["target"].items()},
        "scene": inputs["scene"][2:],
        "pose": inputs["pose"][2:],
    }
    metric.update(**last)
    monkeypatch.undo()
    with pytest.raises(ValueError, match="frames from processes 0 and 1"):
        metric.compute()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"pose": torch.eye(4)[None]}, "`pose` must be"),
        ({"scene": ["a"]}, "`scene` must hold one id per frame"),
        ({"scene": [1.5, 2.5, 3.5]}, "`scene` must be one name"),
    ],
)
def test_update_checks_its_arguments(change, message):
    inputs = {**consistent_map_example_inputs(), **change}
    with pytest.raises(ValueError, match=message):
        ConsistentMapAPMetrics().update(**inputs)


def test_update_checks_values():
    inputs = consistent_map_example_inputs()
    bad = {**inputs, "preds": {**inputs["preds"], "scores": inputs["preds"]["scores"] + 2}}
    with pytest.raises(ValueError, match=r"`preds\['scores'\]` must lie in \[0, 1\]"):
        ConsistentMapAPMetrics().update(**bad)
    bad = {**inputs, "target": {**inputs["target"], "labels": inputs["target"]["labels"] + 5}}
    with pytest.raises(ValueError, match="class ids"):
        ConsistentMapAPMetrics().update(**bad)
