"""Vectorised-map AP: both presets against the official numbers (fixture), the prefilter, the default fixes, the
Metric classes."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from drivemetrics.vectormap.evaluate import evaluate_map_files
from drivemetrics.vectormap.map_ap import (
    VectorMapAPMetrics,
    VectorMapAveragePrecision,
    VectorMapMeanAveragePrecision,
    vector_map_ap,
    vector_map_matches,
)
from drivemetrics.vectormap.protocol import PROTOCOLS, MapProtocol
from tests.vectormap.padding import pad_by_hand


@pytest.fixture(scope="module")
def map_fixtures(fixtures_dir):
    root = fixtures_dir / "map_ap"
    if not (root / "expected.json").is_file():
        pytest.skip("map_ap fixtures absent")
    return root


def test_nuscenes_maptr_preset_equals_the_official_numbers(map_fixtures):
    expected = json.loads((map_fixtures / "expected.json").read_text())["nuscenes_maptr"]["detail"]
    case = map_fixtures / "cases" / "nuscenes_maptr"
    report = evaluate_map_files(case / "gt.json", case / "pred.json", "nuscenes-maptr").report
    for name, entry in report["classes"].items():
        for thr in ("0.5", "1.0", "1.5"):
            assert entry[f"AP@{thr}"] == pytest.approx(expected[f"NuscMap_chamfer/{name}_AP_thr_{thr}"], abs=1e-6)
        assert entry["AP"] == pytest.approx(expected[f"NuscMap_chamfer/{name}_AP"], abs=1e-6)
    assert report["mAP"] == pytest.approx(expected["NuscMap_chamfer/mAP"], abs=1e-6)
    counts = json.loads((map_fixtures / "expected.json").read_text())["nuscenes_maptr"]["eval_map"]["0.5"]["classes"]
    for name, entry in report["classes"].items():
        assert entry["num_gts"] == counts[name]["num_gts"]
        assert entry["num_preds"] == counts[name]["num_dets"]


def test_av2_cvpr23_preset_equals_the_official_numbers(map_fixtures):
    expected = json.loads((map_fixtures / "expected.json").read_text())["av2_cvpr23"]
    case = map_fixtures / "cases" / "av2_cvpr23"
    result = evaluate_map_files(case / "gt.json", case / "pred.json", "av2-cvpr23")
    for name, entry in result.report["classes"].items():
        for key in ("AP@0.5", "AP@1.0", "AP@1.5", "AP", "num_gts", "num_preds"):
            assert entry[key] == pytest.approx(expected["per_class"][name][key], abs=1e-6)
        assert entry["AP"] == pytest.approx(expected["returned"][name], abs=1e-6)
    assert result.report["mAP"] == pytest.approx(expected["mAP"], abs=1e-6)
    assert result.unknown_samples == ["00000007999999"]


def _frame(preds, target, labels_p=None, labels_t=None, scores=None):
    p = torch.tensor(preds, dtype=torch.float64).unsqueeze(0)
    t = torch.tensor(target, dtype=torch.float64).unsqueeze(0)
    lp = torch.tensor([labels_p or [0] * p.shape[1]])
    lt = torch.tensor([labels_t or [0] * t.shape[1]])
    s = torch.tensor([scores or list(np.linspace(0.9, 0.1, p.shape[1]))], dtype=torch.float64)
    return {"points": p, "labels": lp, "scores": s}, {"points": t, "labels": lt}


def _batch(points, lengths, labels, scores=None):
    out = {"points": points, "lengths": lengths, "labels": labels}
    return out if scores is None else {**out, "scores": scores}


def test_buffer_prefilter_rejects_lines_meeting_end_to_end():
    # GT along x in [0, 1]; prediction in [1.2, 2.2] on the same line: Chamfer 0.7 m (within 1.0 and 1.5 m), but
    # the flat-capped buffers end at x = 1 and x = 1.2 and never meet: MapTR counts a false positive
    inputs = _frame([[[1.2, 0.0], [2.2, 0.0]]], [[[0.0, 0.0], [1.0, 0.0]]])
    maptr = vector_map_matches(*inputs, protocol="nuscenes-maptr")
    default = vector_map_matches(*inputs, protocol="default")
    assert maptr["true_positive"].tolist() == [[False, False, False]]
    assert default["true_positive"].tolist() == [[False, True, True]]
    # the same lines touching end to end (gap 0): the buffers touch, the pair is scored
    touching = vector_map_matches(
        *_frame([[[1.0, 0.0], [2.0, 0.0]]], [[[0.0, 0.0], [1.0, 0.0]]]), protocol="nuscenes-maptr"
    )
    assert touching["true_positive"].tolist() == [[True, True, True]]  # Chamfer 0.5 m, inclusive


def test_prefilter_changes_which_gt_is_nearest():
    # GT 0 meets the prediction end to end (Chamfer 0.75, rejected by the buffers); GT 1 runs parallel 1.2 m away
    # (Chamfer 1.2, buffers meet): with the prefilter the nearest scored GT is GT 1 -> TP at 1.5 only
    pred = [[[1.5, 0.0], [2.5, 0.0]]]
    target = [[[0.0, 0.0], [1.0, 0.0]], [[1.5, 1.2], [2.5, 1.2]]]
    maptr = vector_map_matches(*_frame(pred, target), protocol="nuscenes-maptr")
    nearest_only = vector_map_matches(*_frame(pred, target), protocol=MapProtocol("x", ("a", "b", "c"), fallback=False))
    assert maptr["true_positive"].tolist() == [[False, False, True]]
    assert nearest_only["true_positive"].tolist() == [[False, True, True]]


def test_default_falls_back_and_reports_nan_for_classes_without_gt():
    # two predictions near one GT each, but both nearest to GT 0
    target = [[[0.0, 0.0], [0.0, 10.0]], [[1.6, 0.0], [1.6, 10.0]]]
    pred = [[[0.2, 0.0], [0.2, 10.0]], [[0.7, 0.0], [0.7, 10.0]]]
    reference = vector_map_ap(*_frame(pred, target), protocol="av2-cvpr23")
    default = vector_map_ap(*_frame(pred, target), protocol="default")
    # at 1.0 m: reference TP, FP (no fall-back); default TP, TP (the second takes GT 1 at 0.9 m)
    assert reference["ap_per_threshold"][0].tolist() == [0.5, 0.5, 0.5]
    assert default["ap_per_threshold"][0].tolist() == [0.5, 1.0, 1.0]
    assert torch.isnan(default["ap"][1:]).all()
    assert default["map"].item() == pytest.approx(2.5 / 3)
    assert reference["ap"][1:].tolist() == [0.0, 0.0]
    assert reference["map"].item() == pytest.approx(0.5 / 3)


def test_inclusive_threshold_and_classes_do_not_meet():
    # Chamfer exactly 0.5 m (exact in binary): inclusive -> TP at 0.5
    inputs = _frame([[[0.5, 0.0], [0.5, 4.0]]], [[[0.0, 0.0], [0.0, 4.0]]])
    assert vector_map_matches(*inputs, protocol="av2-cvpr23")["true_positive"].tolist() == [[True, True, True]]
    other_class = _frame([[[0.0, 0.0], [0.0, 4.0]]], [[[0.0, 0.0], [0.0, 4.0]]], labels_p=[1], labels_t=[0])
    assert vector_map_matches(*other_class)["true_positive"].tolist() == [[False, False, False]]


def test_batched_equals_frame_by_frame_and_metric_accumulates():
    g = torch.Generator().manual_seed(0)
    frames, num, points = 6, 5, 7
    target = torch.cumsum(torch.randn(frames, num, points, 2, generator=g), 2) * 2
    preds = target + 0.6 * torch.randn(frames, num, 1, 2, generator=g)
    t_len = torch.randint(0, 2, (frames, num), generator=g) * points
    p_len = torch.full((frames, num), points)
    labels = torch.randint(0, 3, (frames, num), generator=g)
    scores = torch.rand(frames, num, generator=g)
    batch_p, batch_t = _batch(preds, p_len, labels, scores), _batch(target, t_len, labels)
    whole = vector_map_matches(batch_p, batch_t)
    parts = [
        vector_map_matches(
            _batch(preds[i : i + 1], p_len[i : i + 1], labels[i : i + 1], scores[i : i + 1]),
            _batch(target[i : i + 1], t_len[i : i + 1], labels[i : i + 1]),
        )
        for i in range(frames)
    ]
    assert torch.equal(whole["true_positive"], torch.cat([p["true_positive"] for p in parts]))
    assert torch.equal(whole["num_targets"], sum(p["num_targets"] for p in parts))
    metric = VectorMapAPMetrics()
    for i in range(0, frames, 2):
        s = slice(i, i + 2)
        metric.update(_batch(preds[s], p_len[s], labels[s], scores[s]), _batch(target[s], t_len[s], labels[s]))
    functional = vector_map_ap(batch_p, batch_t)
    result = metric.compute()
    torch.testing.assert_close(result["map"], functional["map"], equal_nan=True)
    torch.testing.assert_close(result["ap_ped_crossing_1"], functional["ap_per_threshold"][1, 1], equal_nan=True)
    mean_metric = VectorMapMeanAveragePrecision()
    class_metric = VectorMapAveragePrecision("boundary", threshold=1.5)
    for m in (mean_metric, class_metric):
        m.update(batch_p, batch_t)
    torch.testing.assert_close(mean_metric.compute(), functional["map"], equal_nan=True)
    torch.testing.assert_close(class_metric.compute(), functional["ap_per_threshold"][2, 2], equal_nan=True)


def test_bad_input_is_named():
    p, t = _frame([[[0.0, 0.0], [1.0, 0.0]]], [[[0.0, 0.0], [1.0, 0.0]]])
    with pytest.raises(ValueError, match=r'preds\["labels"\]'):
        vector_map_matches({**p, "labels": p["labels"] + 5}, t)
    with pytest.raises(ValueError, match="2-D"):
        vector_map_matches({**p, "points": torch.zeros(1, 1, 2, 3)}, t, protocol="av2-cvpr23")
    with pytest.raises(ValueError, match="must agree"):
        vector_map_matches({**p, "points": torch.zeros(1, 1, 2, 3)}, t)
    with pytest.raises(ValueError, match="NaN"):
        vector_map_matches({**p, "points": p["points"] * torch.nan}, t)
    with pytest.raises(ValueError, match=r"`preds` lacks \['scores'\]"):
        vector_map_matches({"points": p["points"], "labels": p["labels"]}, t)
    with pytest.raises(TypeError, match="dict of batched tensors or a list of per-frame dicts"):
        vector_map_matches(p["points"], t)
    with pytest.raises(ValueError, match="protocol"):
        VectorMapAPMetrics(protocol="nuscenes")
    with pytest.raises(ValueError, match="class_name"):
        VectorMapAveragePrecision("lane")


def test_three_d_default_uses_z():
    # same (x, y), 1.2 m apart in z: 3-D default sees it, 2-D presets would not
    base = [[[0.0, 0.0, 0.0], [0.0, 10.0, 0.0]]]
    lifted = [[[0.0, 0.0, 1.2], [0.0, 10.0, 1.2]]]
    out = vector_map_matches(*_frame(lifted, base))
    assert out["true_positive"].tolist() == [[False, False, True]]


@pytest.mark.parametrize("protocol", ["default", "nuscenes-maptr", "av2-cvpr23"])
def test_tied_scores_do_not_depend_on_frame_order(protocol):
    """A true positive in one frame and a false positive in another, both scored 0.5, two GT lines: in arrival
    order the AP at 1 m would be 0.5 (TP first) or 0.25 (FP first); ordered by content it is 0.25 either way."""
    line = torch.tensor([[[0.0, 0.0], [0.0, 10.0]]])
    label, score, gt = torch.tensor([[0]]), torch.tensor([[0.5]]), {"points": line[None], "labels": torch.tensor([[0]])}
    hit = ({"points": line[None] + 0.2, "labels": label, "scores": score}, gt)
    miss = ({"points": line[None] + 5.0, "labels": label, "scores": score}, gt)
    values = []
    for frames in ((hit, miss), (miss, hit)):
        metric = VectorMapAveragePrecision(PROTOCOLS[protocol].class_names[0], threshold=1.0, protocol=protocol)
        for frame in frames:
            metric.update(*frame)
        values.append(metric.compute().item())
    assert values == [0.25, 0.25]


def _per_frame_batch(seed: int, ragged: bool) -> tuple[list[dict], list[dict]]:
    """Per-frame dicts (torchmetrics' detection convention); ``ragged``: frames differ in line and point counts."""
    g = torch.Generator().manual_seed(seed)
    preds, target = [], []
    for b in range(4):
        lines, points = (2 + b, 3 + 2 * b) if ragged else (4, 6)
        gt = torch.cumsum(torch.randn(lines, points, 2, generator=g), 1) * 2
        labels = torch.randint(0, 3, (lines,), generator=g)
        preds.append(
            {
                "points": gt + 0.8 * torch.randn(lines, 1, 2, generator=g),
                "labels": labels,
                "scores": torch.rand(lines, generator=g),
            }
        )
        target.append({"points": gt, "labels": labels})
    return preds, target


@pytest.mark.parametrize("ragged", [False, True])
@pytest.mark.parametrize("protocol", ["default", "nuscenes-maptr", "av2-cvpr23"])
def test_per_frame_dicts_give_the_batched_numbers(protocol, ragged):
    preds, target = _per_frame_batch(11, ragged)
    if ragged:
        batched_p, batched_t = pad_by_hand(preds), pad_by_hand(target)
    else:  # equal shapes: plain stacking, no lengths
        batched_p = {k: torch.stack([f[k] for f in preds]) for k in preds[0]}
        batched_t = {k: torch.stack([f[k] for f in target]) for k in target[0]}
    expected = vector_map_ap(batched_p, batched_t, protocol=protocol)
    assert expected["num_preds"].sum() > 0
    assert torch.isfinite(expected["map"])
    for key, value in vector_map_ap(preds, target, protocol=protocol).items():
        torch.testing.assert_close(value, expected[key], rtol=0, atol=0, equal_nan=True)
    family, batched_family = VectorMapAPMetrics(protocol=protocol), VectorMapAPMetrics(protocol=protocol)
    family.update(preds[:2], target[:2])
    family.update(preds[2:], target[2:])
    batched_family.update(batched_p, batched_t)
    for key, value in family.compute().items():
        torch.testing.assert_close(value, batched_family.compute()[key], rtol=0, atol=0, equal_nan=True)


def test_bad_per_frame_input_is_named():
    preds, target = _per_frame_batch(2, ragged=True)
    with pytest.raises(ValueError, match=r"`preds` is an empty list"):
        vector_map_ap([], target)
    with pytest.raises(TypeError, match=r"`target\[1\]` must be a dict"):
        vector_map_ap(preds, [target[0], target[1]["points"], *target[2:]])
    with pytest.raises(ValueError, match=r"`preds\[2\]` has keys"):
        vector_map_ap([*preds[:2], {"points": preds[2]["points"], "labels": preds[2]["labels"]}, preds[3]], target)
    with pytest.raises(ValueError, match=r'`preds\[0\]\["points"\]` must be a tensor of shape \(M, Q, D\)'):
        vector_map_ap([{**preds[0], "points": preds[0]["points"][0]}, *preds[1:]], target)
    with pytest.raises(ValueError, match=r'`preds\[1\]\["scores"\]` must be a tensor of shape \(3,\)'):
        vector_map_ap([preds[0], {**preds[1], "scores": preds[1]["scores"][:1]}, *preds[2:]], target)
    with pytest.raises(ValueError, match=r"must share D"):
        vector_map_ap(preds, [{**target[0], "points": torch.zeros(2, 3, 3)}, *target[1:]])
    with pytest.raises(ValueError, match=r'`target\[3\]\["labels"\]` is torch.float32'):
        vector_map_ap(preds, [*target[:3], {**target[3], "labels": target[3]["labels"].float()}])
    with pytest.raises(ValueError, match="same frames"):
        vector_map_ap(preds[:3], target)


def test_a_class_name_means_the_same_class_under_every_protocol():
    """Issue 50: label ids follow MAP_CLASSES under every preset, so ``"divider"`` (label 0 in the example inputs)
    scores the divider whatever the protocol: 0.6 m off, found above 0.6 m (AP 2/3 at 0.5 / 1.0 / 1.5 m)."""
    from drivemetrics.vectormap import PROTOCOLS, MapProtocol, VectorMapAveragePrecision, vector_map_example_inputs
    from drivemetrics.vectormap.protocol import MAP_CLASSES

    for name, protocol in PROTOCOLS.items():
        # label id i is MAP_CLASSES[i] under every preset (a new class of a new benchmark goes at the end)
        assert protocol.class_names == MAP_CLASSES[: len(protocol.class_names)], (name, protocol.class_names)
        if "divider" in protocol.class_names:
            value = VectorMapAveragePrecision("divider", protocol=name)(**vector_map_example_inputs())
            found = sum(t > 0.6 for t in protocol.thresholds) / len(protocol.thresholds)  # the divider is 0.6 m off
            assert value.item() == pytest.approx(found), name
    with pytest.raises(ValueError, match="`class_name` must be one of"):
        VectorMapAveragePrecision("divider", protocol=MapProtocol("lanes-only", ("lane",)))
