"""The map kernel written once (``vectormap/lines.py``, ``evaluate_flat``): equal to plain loops, and the same bits on
numpy arrays and on tensors."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
import torch

from drivemetrics.polyline import resample_by_count, resample_by_spacing
from drivemetrics.vectormap.evaluate import evaluate_flat, evaluate_map_samples, read_resampled
from drivemetrics.vectormap.io import MapSample, pack_samples
from drivemetrics.vectormap.lines import (
    FlatLines,
    ap_from_rows,
    bounded_chamfer,
    candidate_pairs,
    flatten_samples,
    match_flat,
    resample_flat,
    resample_lines,
)
from drivemetrics.vectormap.protocol import MapProtocol, get_protocol
from drivemetrics.vectormap.scoring import vector_map_ap_from_matches, vector_map_matches

AV2 = get_protocol("av2-cvpr23")
COUNT = MapProtocol("count", ("a", "b"), resample="count", num_samples=7, fallback=False, dims="2d")


def _random_lines(rng: np.random.Generator, num: int) -> list[np.ndarray]:
    """Lines of 1-12 points, with repeated points, exact multiples of the spacing and axis-parallel runs."""
    lines = []
    for k in range(num):
        count = int(rng.integers(1, 13))
        steps = rng.normal(0, 2.0, (count, 2))
        if k % 5 == 0:
            steps[rng.random(count) < 0.3] = 0.0  # zero-length segments
        if k % 7 == 0:
            steps = np.round(steps / 0.3) * 0.3  # lengths near multiples of 0.3
        lines.append(np.cumsum(steps, 0) + rng.uniform(-20, 20, 2))
    return lines


def _geos_resample(line: np.ndarray, positions: list[float]) -> np.ndarray:
    """GEOS' ``interpolate`` by a plain loop: running segment ends summed in order, first end > position."""
    lengths, ends, total = [], [], 0.0
    for p, q in itertools.pairwise(line):
        dx, dy = q[0] - p[0], q[1] - p[1]
        lengths.append(math.sqrt(dx * dx + dy * dy))
        total += lengths[-1]
        ends.append(total)
    out = []
    for x in positions:
        index = sum(end <= x for end in ends)
        if index >= len(ends):
            out.append(line[-1])
            continue
        start = ends[index - 1] if index else 0.0
        p0, p1 = line[index], line[index + 1]
        fraction = 0.0 if lengths[index] <= 0 else (x - start) / lengths[index]
        out.append(p0 + fraction * (p1 - p0))
    return np.array(out)


def _positions(line: np.ndarray, proto: MapProtocol) -> list[float]:
    total = 0.0
    for p, q in itertools.pairwise(line):
        total += math.sqrt((q[0] - p[0]) * (q[0] - p[0]) + (q[1] - p[1]) * (q[1] - p[1]))
    if proto.resample == "count":
        step = total / (proto.num_samples - 1)
        return [i * step for i in range(proto.num_samples - 1)] + [total]
    return [0.0, *np.arange(proto.spacing, total, proto.spacing).tolist(), total]


@pytest.mark.parametrize("proto", [AV2, COUNT], ids=["spacing", "count"])
def test_resample_flat_equals_a_plain_geos_loop_and_the_torch_kernels(proto):
    rng = np.random.default_rng(0)
    lines = _random_lines(rng, 300)
    counts = np.array([len(line) for line in lines])
    samples, sample_counts = resample_flat(np.concatenate(lines), counts, proto)
    offsets = np.concatenate([[0], np.cumsum(sample_counts)])
    for k, line in enumerate(lines):
        mine = samples[offsets[k] : offsets[k + 1]]
        expected = _geos_resample(line, _positions(line, proto))
        assert mine.shape == expected.shape, k
        assert np.array_equal(mine, expected), k  # bit for bit
        padded = torch.from_numpy(line)[None]
        if proto.resample == "count":
            reference = resample_by_count(padded, torch.tensor([len(line)]), num_samples=proto.num_samples)[0]
        else:
            out, count = resample_by_spacing(padded, torch.tensor([len(line)]), spacing=proto.spacing)
            reference = out[0, : int(count[0])]
        # torch's vectorised square root may round the last bit of a segment length differently
        np.testing.assert_allclose(mine, reference.numpy(), rtol=0, atol=1e-12)


def test_resample_flat_in_steps_equals_one_step(monkeypatch):
    import drivemetrics.vectormap.lines as flat

    lines = _random_lines(np.random.default_rng(1), 50)
    points, counts = np.concatenate(lines), np.array([len(line) for line in lines])
    whole = resample_flat(points, counts, AV2)
    monkeypatch.setattr(flat, "LINES_PER_STEP", 7)
    stepped = resample_flat(points, counts, AV2)
    assert all(np.array_equal(a, b) for a, b in zip(whole, stepped, strict=True))


def test_resample_flat_refuses_a_line_needing_too_many_samples():
    with pytest.raises(ValueError, match="more than max_map_line_points=10 "):
        resample_flat(np.array([[0.0, 0.0], [10.0, 0.0]]), np.array([2]), AV2, max_samples=10)


def _chamfer_loop(a: np.ndarray, b: np.ndarray) -> float:
    """scipy's cdist distances (root of the summed squares), nearest per point, sequential means."""
    d = np.sqrt((a[:, None, 0] - b[None, :, 0]) ** 2 + (a[:, None, 1] - b[None, :, 1]) ** 2)
    forward = sum(d.min(1).tolist()) / len(a)
    backward = sum(d.min(0).tolist()) / len(b)
    return (forward + backward) / 2


def test_bounded_chamfer_is_exact_within_reach_and_inf_only_beyond():
    rng = np.random.default_rng(2)
    base = _random_lines(rng, 40)
    preds = [line + rng.normal(0, 0.8, line.shape) for line in base]
    flat_preds = FlatLines(
        np.concatenate(preds), np.array([len(x) for x in preds]), np.zeros(40, int), np.zeros(40, int)
    )
    flat_gt = FlatLines(np.concatenate(base), np.array([len(x) for x in base]), np.zeros(40, int), np.zeros(40, int))
    flat_preds, flat_gt = resample_lines(flat_preds, AV2), resample_lines(flat_gt, AV2)
    pred_index, gt_index = candidate_pairs(flat_preds, flat_gt, 1)
    assert len(pred_index) == 40 * 40
    distance = bounded_chamfer(flat_preds, flat_gt, pred_index, gt_index, 1.5)
    pred_off, gt_off = flat_preds.offsets, flat_gt.offsets
    within = 0
    for k, (i, j) in enumerate(zip(pred_index, gt_index, strict=True)):
        exact = _chamfer_loop(
            flat_preds.points[pred_off[i] : pred_off[i + 1]], flat_gt.points[gt_off[j] : gt_off[j + 1]]
        )
        if math.isinf(distance[k]):
            assert exact > 1.5
        else:
            assert distance[k] == exact  # bit for bit
            within += exact <= 1.5
    assert within >= 30  # the test pairs lines within reach, not only far ones


def _random_frames(seed: int, num_frames: int, classes: tuple[str, ...]) -> tuple[list[MapSample], list[MapSample]]:
    rng = np.random.default_rng(seed)
    gt, preds = [], []
    for f in range(num_frames):
        lines = [line for line in _random_lines(rng, int(rng.integers(0, 8))) if len(line) >= 2]
        labels = [classes[int(rng.integers(len(classes)))] for _ in lines]
        gt.append(MapSample(f"t{f}", lines, labels))
        shifted = [line + rng.normal(0, 0.6, line.shape) for line in lines if rng.random() < 0.8]
        extra = _random_lines(rng, int(rng.integers(0, 3)))  # 1-point lines among them: dropped
        pred_lines = shifted + extra
        pred_labels = [classes[int(rng.integers(len(classes)))] for _ in pred_lines]
        scores = np.round(rng.random(len(pred_lines)), 2).tolist()  # ties in score
        preds.append(MapSample(f"t{f}", pred_lines, pred_labels, scores))
    return gt, preds


def test_match_flat_and_ap_from_rows_equal_the_torch_kernels():
    gt, preds = _random_frames(3, 60, AV2.class_names)
    flat_gt = resample_lines(flatten_samples(gt, AV2.class_names, 2, with_scores=False), AV2)
    flat_preds = flatten_samples(preds, AV2.class_names, 2, with_scores=True)
    flat_preds = resample_lines(flat_preds.take(np.flatnonzero(flat_preds.counts >= 2)), AV2)
    rows, num_targets = match_flat(flat_preds, flat_gt, AV2)
    packed_gt, packed_preds = pack_samples(gt, AV2.class_names, 2), pack_samples(preds, AV2.class_names, 2)
    torch_out = vector_map_matches(packed_preds, packed_gt, protocol=AV2)
    assert rows[:, 0].tolist() == torch_out["scores"].tolist()
    assert rows[:, 1].astype(int).tolist() == torch_out["labels"].tolist()
    assert (rows[:, 2:] > 0.5).tolist() == torch_out["true_positive"].tolist()
    assert num_targets.tolist() == torch_out["num_targets"].tolist()
    assert rows[:, 2:].any()
    assert not rows[:, 2:].all()
    mine = ap_from_rows(rows, num_targets, AV2)
    reference = vector_map_ap_from_matches(
        torch_out["scores"], torch_out["labels"], torch_out["true_positive"], torch_out["num_targets"], protocol=AV2
    )
    np.testing.assert_allclose(mine["ap_per_threshold"], reference["ap_per_threshold"].numpy(), rtol=0, atol=1e-15)
    assert mine["num_preds"].tolist() == reference["num_preds"].tolist()


@pytest.mark.parametrize("proto", [AV2, COUNT, get_protocol("streammapnet-100x50")], ids=["spacing", "count", "smn"])
def test_the_kernel_gives_the_same_bits_on_numpy_arrays_and_on_tensors(proto, monkeypatch):
    # issue 46: one kernel, called with numpy arrays (map-eval's CPU path) and with tensors (any device); steps of 7
    # lines, so the stepped resampling is covered on both
    import drivemetrics.vectormap.lines as lines_module

    monkeypatch.setattr(lines_module, "LINES_PER_STEP", 7)
    gt, preds = _random_frames(5, 30, proto.class_names)
    flat_gt = flatten_samples(gt, proto.class_names, 2, with_scores=False)
    flat_preds = flatten_samples(preds, proto.class_names, 2, with_scores=True)
    flat_preds = flat_preds.take(np.flatnonzero(flat_preds.counts >= 2))
    on_numpy = [resample_lines(lines, proto) for lines in (flat_preds, flat_gt)]
    on_torch = [resample_lines(lines.apply(torch.from_numpy), proto) for lines in (flat_preds, flat_gt)]
    for a, b in zip(on_numpy, on_torch, strict=True):
        assert torch.is_tensor(b.points)
        assert torch.is_tensor(b.counts)
        assert np.array_equal(a.points, b.points.numpy())
        assert np.array_equal(a.counts, b.counts.numpy())
    pairs = candidate_pairs(*on_numpy, len(proto.class_names))
    torch_pairs = candidate_pairs(*on_torch, len(proto.class_names))
    assert [p.tolist() for p in pairs] == [p.tolist() for p in torch_pairs]
    distance = bounded_chamfer(*on_numpy, *pairs, 1.5)
    torch_distance = bounded_chamfer(*on_torch, *torch_pairs, 1.5)
    assert np.array_equal(distance, torch_distance.numpy())
    assert np.isfinite(distance).any()
    assert np.isinf(distance).any()
    rows, num_targets = match_flat(*on_numpy, proto)
    torch_rows, torch_num_targets = match_flat(*on_torch, proto)
    assert torch.is_tensor(torch_rows)
    assert np.array_equal(rows, torch_rows.numpy())
    assert np.array_equal(num_targets, torch_num_targets.numpy())
    assert 0 < rows[:, 2:].sum() < rows[:, 2:].size


def test_match_flat_refuses_the_fallback_rule():
    with pytest.raises(ValueError, match="references' rule only"):
        match_flat(
            FlatLines(np.zeros((0, 2)), *[np.zeros(0, int)] * 3),
            FlatLines(np.zeros((0, 2)), *[np.zeros(0, int)] * 3),
            get_protocol("default"),
        )


@pytest.mark.parametrize("workers", [1, 2])
def test_evaluate_flat_equals_evaluate_map_samples(workers):
    gt, preds = _random_frames(4, 40, AV2.class_names)
    preds = [*preds[5:], MapSample("orphan", [np.zeros((2, 2))], ["divider"], [0.5])]  # missing and unknown samples
    expected = evaluate_map_samples(gt, preds, "av2-cvpr23")
    flat_gt = resample_lines(flatten_samples(gt, AV2.class_names, 2, with_scores=False), AV2)
    flat_gt.scores = np.zeros(0)
    flat_preds = flatten_samples(preds, AV2.class_names, 2, with_scores=True)
    flat_preds = resample_lines(flat_preds.take(np.flatnonzero(flat_preds.counts >= 2)), AV2)
    result = evaluate_flat(flat_gt, flat_preds, "av2-cvpr23", workers=workers)
    assert result.unknown_samples == expected.unknown_samples == ["orphan"]
    assert result.missing_samples == expected.missing_samples
    assert result.report["classes"].keys() == expected.report["classes"].keys()
    for name, entry in expected.report["classes"].items():
        for key, value in entry.items():
            assert result.report["classes"][name][key] == pytest.approx(value, abs=1e-15), (name, key)
    assert result.report["mAP"] == pytest.approx(expected.report["mAP"], abs=1e-15)


def test_read_resampled_names_the_file_for_one_point_gt_and_3d_predictions(tmp_path):
    gt = {"log": [{"timestamp": "7", "annotation": {"divider": [[[0, 0, 0], [1, 0, 0]], [[3, 3, 0]]]}}]}
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    with pytest.raises(ValueError, match=r"gt\.json: sample 7: line 1 has 1 point"):
        read_resampled(tmp_path / "gt.json", "gt", "av2-cvpr23")
    pred = {"results": {"7": {"vectors": [[[0, 0, 0], [1, 0, 0]]], "scores": [0.5], "labels": [1]}}}
    (tmp_path / "pred.json").write_text(json.dumps(pred))
    with pytest.raises(ValueError, match=r"pred\.json: protocol 'av2-cvpr23' evaluates 2-D predictions"):
        read_resampled(tmp_path / "pred.json", "pred", "av2-cvpr23")
    with pytest.raises(ValueError, match="numpy path"):
        read_resampled(tmp_path / "pred.json", "pred", "nuscenes-maptr")


@pytest.mark.parametrize("protocol", ["av2-cvpr23", "streammapnet"])
def test_a_cpu_map_eval_run_never_imports_torch(tmp_path, protocol):
    # issue 46: the kernel is written once for numpy and torch, and the CPU path still never imports torch: a fresh
    # interpreter runs the whole command (reading, resampling, matching in forked workers, AP) and then looks
    import subprocess
    import sys
    from pathlib import Path

    from drivemetrics.vectormap.io import AV2_CLASSES

    gt, preds = _random_frames(6, 30, AV2.class_names)
    if protocol == "av2-cvpr23":
        gt_data: dict = {"log": [{"timestamp": s.token, "annotation": _by_class(s, lift=True)} for s in gt]}
    else:
        gt_data = {"gts": {s.token: _by_class(s, lift=False) for s in gt}}
    pred_data = {
        "results": {
            s.token: {
                "vectors": [line.tolist() for line in s.points],
                "scores": list(s.scores),
                "labels": [AV2_CLASSES.index(name) for name in s.labels],
            }
            for s in preds
        }
    }
    (tmp_path / "gt.json").write_text(json.dumps(gt_data))
    (tmp_path / "pred.json").write_text(json.dumps(pred_data))
    extra = ["--roi", "60x30"] if protocol == "streammapnet" else []
    argv = ["map-eval", "--protocol", protocol, *extra, "--gt", str(tmp_path / "gt.json")]
    argv += ["--pred", str(tmp_path / "pred.json"), "--json", str(tmp_path / "out.json"), "--workers", "2"]
    code = f"import sys\nfrom drivemetrics.cli import main\nassert main({argv!r}) == 0\nprint('torch' in sys.modules)\n"
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "False"
    report = json.loads((tmp_path / "out.json").read_text())
    assert 0 < report["mAP"] < 1


def _by_class(sample: MapSample, lift: bool) -> dict:
    """One sample's lines grouped by class: Argoverse 2 GT (class names, 3-D points, ``lift``) or StreamMapNet's GT
    cache (its class ids as strings, 2-D points)."""
    from drivemetrics.vectormap.io import AV2_CLASSES

    out: dict = {(name if lift else str(i)): [] for i, name in enumerate(AV2_CLASSES)}
    for line, name in zip(sample.points, sample.labels, strict=True):
        points = np.concatenate([line, np.zeros((len(line), 1))], 1) if lift else line
        out[name if lift else str(AV2_CLASSES.index(name))].append(points.tolist())
    return out
