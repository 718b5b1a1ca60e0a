"""Functional KITTI-ROAD pixel kernels against the devkit transcription, hand values and brute force."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from drivemetrics.road.pixel import (
    counts_at_threshold,
    fixed_threshold_scores,
    kitti_thresholds,
    pixel_counts,
    road_pixel_scores,
    scores_from_counts,
)

from .devkit_oracle import devkit_eval_image, devkit_pooled

DEVKIT_THRESH = np.arange(256) / 255.0


def _random_frames(seed: int, batch: int = 3, height: int = 17, width: int = 23, levels: int = 256):
    """Smooth-ish random confidence maps correlated with a random target, plus a random valid mask."""
    rng = np.random.default_rng(seed)
    target = rng.random((batch, height, width)) < rng.uniform(0.1, 0.6)
    noise = rng.normal(0.0, rng.uniform(0.1, 0.5), size=target.shape)
    conf = np.clip(0.5 + (target - 0.5) * rng.uniform(0.2, 1.0) + noise, 0, 1)
    values = np.round(conf * (levels - 1)).astype(np.int64) * (255 // (levels - 1))
    valid = rng.random(target.shape) > 0.15
    return values.astype(np.uint8), target, valid


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("as_float", [False, True])
def test_matches_devkit_oracle_on_random_frames(seed, as_float, device):
    values, target, valid = _random_frames(seed, levels=[256, 256, 5, 2][seed % 4])
    probs32 = np.clip(values.astype("f4") / np.iinfo(np.uint8).max, 0.0, 1.0)  # the devkit's reading
    oracle = devkit_pooled(list(target), list(probs32), DEVKIT_THRESH, list(valid))
    preds = torch.from_numpy(probs32 if as_float else values).to(device)
    scores = road_pixel_scores(preds, torch.from_numpy(target).to(device), valid=torch.from_numpy(valid).to(device))
    assert scores["max_f"].item() == pytest.approx(oracle["max_f"], abs=1e-12)
    assert scores["average_precision"].item() == pytest.approx(oracle["average_precision"], abs=1e-12)
    assert scores["best_threshold"].item() == oracle["best_threshold"]
    assert scores["best_threshold_index"].item() == oracle["index"]
    assert scores["total_positives"].item() == oracle["total_positives"]
    assert scores["total_negatives"].item() == oracle["total_negatives"]
    for key in ("TP", "FP", "FN", "TN"):
        assert scores[f"{key.lower()}_wp"].item() == oracle[key]
    tp, fp, fn, tn = oracle["TP"], oracle["FP"], oracle["FN"], oracle["TN"]
    exact = {
        "precision_wp": tp / (tp + fp),
        "recall_wp": tp / (tp + fn),
        "fpr_wp": fp / (fp + tn),
        "fnr_wp": fn / (tp + fn),
        "accuracy_wp": (tp + tn) / (tp + fp + fn + tn),
        "iou_wp": tp / (tp + fp + fn),
    }
    for key, value in exact.items():
        assert scores[key].item() == pytest.approx(value, abs=1e-12), key
    kept = scores["recall"].cpu().numpy() > 0
    np.testing.assert_allclose(scores["recall"].cpu().numpy()[kept], oracle["recall"], rtol=0, atol=1e-15)
    np.testing.assert_allclose(scores["precision"].cpu().numpy()[kept], oracle["precision"], rtol=0, atol=1e-15)


@pytest.mark.parametrize("seed", range(4))
def test_reference_compat_working_point_is_bit_exact(seed):
    values, target, valid = _random_frames(100 + seed)
    probs32 = values.astype("f4") / 255
    oracle = devkit_pooled(list(target), list(probs32), DEVKIT_THRESH, list(valid))
    scores = road_pixel_scores(
        torch.from_numpy(values), torch.from_numpy(target), valid=torch.from_numpy(valid), compat="reference"
    )
    for key in ("precision_wp", "recall_wp", "fpr_wp", "fnr_wp", "accuracy_wp", "iou_wp"):
        assert scores[key].dtype == torch.float32
        assert scores[key].item() == oracle[f"{key}32"].item(), key


def test_per_image_counts_match_devkit_histograms():
    values, target, valid = _random_frames(7, batch=4)
    counts = pixel_counts(torch.from_numpy(values), torch.from_numpy(target), valid=torch.from_numpy(valid))
    assert counts.tp.shape == (4, 256)
    for i in range(4):
        fn, fp, pos, neg = devkit_eval_image(target[i], values[i].astype("f4") / 255, DEVKIT_THRESH, valid[i])
        np.testing.assert_array_equal(counts.fn[i].numpy(), fn)
        np.testing.assert_array_equal(counts.fp[i].numpy(), fp)
        np.testing.assert_array_equal((counts.tp + counts.fn)[i].numpy(), np.full(256, pos))
        np.testing.assert_array_equal((counts.fp + counts.tn)[i].numpy(), np.full(256, neg))


def test_hand_computed_binary_prediction():
    """kitti_road.md section 7: 50 GT pixels, prediction = 40 TP + 10 FP, 0/255 map."""
    target = torch.zeros(10, 10, dtype=torch.bool)
    target.view(-1)[:50] = True
    preds = torch.zeros(10, 10, dtype=torch.uint8)
    preds.view(-1)[10:60] = 255
    scores = road_pixel_scores(preds, target)
    assert scores["max_f"].item() == pytest.approx(0.7999999999492, abs=1e-13)
    assert scores["average_precision"].item() == pytest.approx(0.7454545454531456, abs=1e-13)  # (9*0.8 + 2*0.5) / 11
    assert scores["best_threshold"].item() == 1 / 255  # ties over k = 1..255: the lowest wins
    assert scores["precision_wp"].item() == pytest.approx(0.8)
    assert scores["recall_wp"].item() == pytest.approx(0.8)
    assert scores["fpr_wp"].item() == pytest.approx(10 / 50)
    assert scores["accuracy_wp"].item() == pytest.approx(80 / 100)
    assert scores["iou_wp"].item() == pytest.approx(40 / 60)
    # integrated AP: recall 1 at k = 0 with precision 0.5, recall 0.8 with precision 0.8 for k >= 1
    assert scores["average_precision_integrated"].item() == pytest.approx(0.2 * 0.5 + 0.8 * 0.8, abs=1e-15)


def test_threshold_rule_every_uint8_value_and_its_float32_image(device):
    """Road at threshold k iff v >= k, for uint8 v and for float32 v/255 (which rounds up, so ties count)."""
    v = torch.arange(256, dtype=torch.uint8, device=device).view(1, 1, 256)
    target = torch.ones_like(v, dtype=torch.bool)
    expected_tp = 256 - torch.arange(256)  # #{v : v >= k}
    for preds in (v, v.float() / 255, v.double() / 255, (v.float() / 255).half()):
        counts = pixel_counts(preds, target)
        if preds.dtype == torch.float16:  # half cannot hold every v/255: compare with its own exact values
            exact = preds.double().view(-1, 1) >= kitti_thresholds(device=device).view(1, -1)
            torch.testing.assert_close(counts.tp[0].cpu(), exact.sum(0).cpu())
        else:
            torch.testing.assert_close(counts.tp[0].cpu(), expected_tp, msg=str(preds.dtype))


def test_float32_tie_and_just_below():
    p64 = torch.tensor(64 / 255, dtype=torch.float32)
    below = torch.nextafter(p64, torch.tensor(0.0))
    preds = torch.stack([p64, below]).view(2, 1, 1)
    counts = pixel_counts(preds, torch.ones(2, 1, 1, dtype=torch.bool))
    assert counts.tp[0, 64].item() == 1  # fl32(64/255) counts at threshold 64
    assert counts.tp[1, 64].item() == 0  # the float32 just below does not
    assert counts.tp[1, 63].item() == 1


@pytest.mark.parametrize("thresholds", [[0.0, 0.25, 0.5, 0.75, 1.0], [0.1, 0.3, 0.3000001, 0.9], 11])
def test_custom_thresholds_match_brute_force(thresholds, device):
    rng = np.random.default_rng(3)
    preds = rng.choice([0.0, 0.1, 0.25, 0.3, 0.5, 0.55, 0.75, 0.9, 1.0], size=(2, 9, 11)).astype(np.float64)
    preds = np.where(rng.random(preds.shape) < 0.3, rng.random(preds.shape), preds)
    target = rng.random(preds.shape) < 0.4
    valid = rng.random(preds.shape) < 0.8
    thr = np.arange(thresholds) / (thresholds - 1) if isinstance(thresholds, int) else np.asarray(thresholds)
    counts = pixel_counts(
        torch.from_numpy(preds).to(device),
        torch.from_numpy(target).to(device),
        valid=torch.from_numpy(valid).to(device),
        thresholds=thresholds,
    )
    for i in range(2):
        for k, t in enumerate(thr):
            road = preds[i] >= t
            assert counts.tp[i, k].item() == np.sum(road & target[i] & valid[i])
            assert counts.fp[i, k].item() == np.sum(road & ~target[i] & valid[i])
            assert counts.fn[i, k].item() == np.sum(~road & target[i] & valid[i])
            assert counts.tn[i, k].item() == np.sum(~road & ~target[i] & valid[i])


def test_counts_at_threshold_and_fixed_scores():
    preds = torch.tensor([[[0.2, 0.5, 0.7, 0.49]]])
    target = torch.tensor([[[0, 1, 1, 1]]])
    counts = counts_at_threshold(preds, target, threshold=0.5)
    assert [c.item() for c in counts] == [2, 0, 1, 1]
    fixed = fixed_threshold_scores(counts)
    assert fixed["f_measure"].item() == pytest.approx(2 * 2 / (2 * 2 + 1))
    assert fixed["iou"].item() == pytest.approx(2 / 3)


def test_valid_mask_ignores_pixels_completely():
    values, target, _ = _random_frames(11)
    valid = np.ones_like(target)
    valid[:, :5] = False
    full = road_pixel_scores(torch.from_numpy(values[:, 5:]), torch.from_numpy(target[:, 5:]))
    masked = road_pixel_scores(torch.from_numpy(values), torch.from_numpy(target), valid=torch.from_numpy(valid))
    for key in ("max_f", "average_precision", "best_threshold", "total_positives", "total_negatives", "precision_wp"):
        assert masked[key].item() == full[key].item()


def test_pooled_is_not_mean_of_images_and_batched_scores_equal_single():
    values, target, valid = _random_frames(5, batch=3)
    per_image = pixel_counts(torch.from_numpy(values), torch.from_numpy(target), valid=torch.from_numpy(valid))
    batched = scores_from_counts(per_image)
    assert batched["max_f"].shape == (3,)
    for i in range(3):
        single = road_pixel_scores(
            torch.from_numpy(values[i]), torch.from_numpy(target[i]), valid=torch.from_numpy(valid[i])
        )
        for key in ("max_f", "average_precision", "average_precision_integrated", "best_threshold", "fpr_wp"):
            assert batched[key][i].item() == single[key].item(), key
    pooled = scores_from_counts(per_image.sum())
    oracle = devkit_pooled(list(target), list(values.astype("f4") / 255), DEVKIT_THRESH, list(valid))
    assert pooled["max_f"].item() == pytest.approx(oracle["max_f"], abs=1e-12)
    assert pooled["max_f"].item() != pytest.approx(batched["max_f"].mean().item(), abs=1e-9)


def test_integrated_ap_matches_step_area_brute_force():
    values, target, valid = _random_frames(21, batch=2)
    scores = road_pixel_scores(torch.from_numpy(values), torch.from_numpy(target), valid=torch.from_numpy(valid))
    # brute force: sort distinct operating points by recall, area of the right-continuous step curve
    p = values[valid].astype(np.int64)
    y = target[valid]
    area = 0.0
    previous_recall = 0.0
    for k in range(255, -1, -1):  # from the strictest threshold to the loosest: recall grows
        road = p >= k
        tp = np.sum(road & y)
        if tp == 0:
            continue
        recall = tp / y.sum()
        area += (recall - previous_recall) * tp / road.sum()
        previous_recall = recall
    assert scores["average_precision_integrated"].item() == pytest.approx(area, abs=1e-12)


def test_beta_changes_the_working_point():
    values, target, valid = _random_frames(2)
    args = (torch.from_numpy(values), torch.from_numpy(target))
    f1 = road_pixel_scores(*args, valid=torch.from_numpy(valid))
    f2 = road_pixel_scores(*args, valid=torch.from_numpy(valid), beta=2.0)
    oracle = devkit_pooled(list(target), list(values.astype("f4") / 255), DEVKIT_THRESH, list(valid), beta=2.0)
    assert f2["max_f"].item() == pytest.approx(oracle["max_f"], abs=1e-12)
    assert f2["best_threshold"].item() == oracle["best_threshold"]
    assert f2["recall_wp"].item() >= f1["recall_wp"].item()


def test_empty_ground_truth_gives_nan_with_warning():
    preds = torch.rand(1, 4, 4)
    with pytest.warns(RuntimeWarning, match="no valid ground-truth road pixel"):
        scores = road_pixel_scores(preds, torch.zeros(1, 4, 4))
    assert math.isnan(scores["max_f"].item())
    assert math.isnan(scores["average_precision"].item())
    assert scores["total_negatives"].item() == 16
    with pytest.warns(RuntimeWarning):
        scores = road_pixel_scores(preds, torch.ones(1, 4, 4), valid=torch.zeros(1, 4, 4))
    assert math.isnan(scores["max_f"].item())
    assert scores["total_positives"].item() == 0


@pytest.mark.parametrize(
    ("preds", "target", "valid", "error", "match"),
    [
        (torch.rand(2, 4, 4), torch.ones(2, 4, 5), None, ValueError, "`preds` and `target` must have the same shape"),
        (torch.rand(2, 4, 4), torch.ones(2, 4, 4), torch.ones(2, 4), ValueError, "`preds` and `valid`"),
        (torch.rand(1, 2, 4, 4), torch.ones(1, 2, 4, 4), None, ValueError, "`preds` must have shape B x H x W"),
        (torch.full((1, 2, 2), math.nan), torch.ones(1, 2, 2), None, ValueError, "`preds` contains NaN"),
        (
            torch.full((1, 2, 2), 1.5),
            torch.ones(1, 2, 2),
            None,
            ValueError,
            r"`preds` must hold confidences in \[0, 1\]",
        ),
        (torch.full((1, 2, 2), -0.1), torch.ones(1, 2, 2), None, ValueError, r"in \[0, 1\]"),
        (torch.ones(1, 2, 2, dtype=torch.int32), torch.ones(1, 2, 2), None, TypeError, "float tensor in"),
        (torch.rand(1, 2, 2), torch.full((1, 2, 2), 2), None, ValueError, "`target` must be binary"),
        (torch.rand(1, 2, 2), torch.ones(1, 2, 2), torch.full((1, 2, 2), 0.5), ValueError, "`valid` must be binary"),
        (np.zeros((2, 2)), torch.ones(2, 2), None, TypeError, "`preds` must be a torch.Tensor"),
    ],
)
def test_bad_inputs_raise_clear_errors(preds, target, valid, error, match):
    with pytest.raises(error, match=match):
        pixel_counts(preds, target, valid=valid)


@pytest.mark.parametrize(
    ("thresholds", "match"),
    [
        ([0.5, 0.2], "strictly increasing"),
        ([0.0, 1.5], r"in \[0, 1\]"),
        (1, "int >= 2"),
        ([], "non-empty"),
        ("abc", "must be None, an int"),
    ],
)
def test_bad_thresholds(thresholds, match):
    with pytest.raises((ValueError, TypeError), match=match):
        pixel_counts(torch.rand(1, 2, 2), torch.ones(1, 2, 2), thresholds=thresholds)


def test_scores_from_counts_checks_its_arguments():
    counts = pixel_counts(torch.rand(1, 3, 3), torch.ones(1, 3, 3)).sum()
    with pytest.raises(ValueError, match="`thresholds` has 5 values"):
        scores_from_counts(counts, thresholds=5)
    with pytest.raises(ValueError, match="`beta` must be"):
        scores_from_counts(counts, beta=0.0)
    with pytest.raises(ValueError, match="same shape"):
        scores_from_counts((counts.tp, counts.fp[:3], counts.fn, counts.tn))


@pytest.mark.parametrize(
    "thresholds",
    [
        None,
        11,
        101,
        1001,
        [*(k / 255 for k in range(256)), 0.5],
        [0.0, 0.1, 0.5, 0.7, 0.9],
        [*(k / 10 for k in range(11))],
    ],
)
def test_float_buckets_equal_exact_comparison(thresholds):
    """Every fast path gives the exact count of thresholds <= p, at the float32 neighbours of each threshold."""
    from drivemetrics.road.pixel import confidence_buckets, format_thresholds

    thr = format_thresholds(sorted(set(thresholds)) if isinstance(thresholds, list) else thresholds)
    near = thr.float()
    up = torch.nextafter(near, torch.tensor(2.0))
    down = torch.nextafter(near, torch.tensor(-1.0))
    g = torch.Generator().manual_seed(0)
    preds = torch.cat([near, up, down, torch.rand(5000, generator=g), torch.tensor([0.0, 1.0])]).clamp(0, 1)
    expected = torch.bucketize(preds.double(), thr, right=True)  # exact: float32 -> float64 is exact
    got = confidence_buckets(preds.view(1, 1, -1), thr).view(-1)
    torch.testing.assert_close(got.long(), expected)
    got16 = confidence_buckets(preds.half().view(1, 1, -1), thr).view(-1)
    torch.testing.assert_close(got16.long(), torch.bucketize(preds.half().double(), thr, right=True))


@pytest.mark.parametrize("block", [0, 7, 4096])
@pytest.mark.parametrize("as_float", [False, True])
@pytest.mark.parametrize("with_valid", [False, True])
def test_block_and_vectorised_paths_agree_with_the_oracle(monkeypatch, block, as_float, with_valid):
    """block 0 runs the one-pass batched path that GPUs use (image offsets in chunks of <= 32 images)."""
    import drivemetrics.road.pixel_counting as pixel

    monkeypatch.setattr(pixel, "CPU_BLOCK_PIXELS", block)
    values, target, valid = _random_frames(31, batch=70, height=5, width=9)
    preds = torch.from_numpy(values)
    preds = preds.float() / 255 if as_float else preds
    valid_t = torch.from_numpy(valid) if with_valid else None
    thr = np.sort(np.append(DEVKIT_THRESH, 0.5))
    counts = pixel_counts(preds, torch.from_numpy(target), valid=valid_t, thresholds=thr.tolist())
    for i in (0, 31, 32, 63, 64, 69):
        fn, fp, _, _ = devkit_eval_image(target[i], values[i].astype("f4") / 255, thr, valid[i] if with_valid else None)
        np.testing.assert_array_equal(counts.fn[i].numpy(), fn)
        np.testing.assert_array_equal(counts.fp[i].numpy(), fp)
    pooled = pixel.bucket_histograms(
        preds, torch.from_numpy(target), valid_t, pixel.format_thresholds(None), per_image=False
    )
    per_image = pixel.bucket_histograms(
        preds, torch.from_numpy(target), valid_t, pixel.format_thresholds(None), per_image=True
    )
    torch.testing.assert_close(pooled[0], per_image.sum(0))


@pytest.mark.parametrize("thresholds", [[0.3, 0.6], [0.5], [0.0, 1.0], 5, [0.2, 0.2001, 0.2002, 0.9]])
def test_uint8_maps_with_custom_thresholds_match_brute_force(thresholds):
    rng = np.random.default_rng(8)
    values = rng.integers(0, 256, size=(3, 6, 7)).astype(np.uint8)
    target = rng.random(values.shape) < 0.5
    thr = np.arange(thresholds) / (thresholds - 1) if isinstance(thresholds, int) else np.asarray(thresholds)
    counts = pixel_counts(torch.from_numpy(values), torch.from_numpy(target), thresholds=thresholds)
    p = values.astype(np.float64) / 255  # uint8 v means p = v / 255
    for k, t in enumerate(thr):
        road = p >= t
        np.testing.assert_array_equal(counts.tp[:, k].numpy(), (road & target).sum((1, 2)))
        np.testing.assert_array_equal(counts.fp[:, k].numpy(), (road & ~target).sum((1, 2)))


@pytest.mark.parametrize("block", [0, 4096])
@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32, torch.float64])
def test_inputs_are_not_modified(monkeypatch, block, dtype):
    import drivemetrics.road.pixel_counting as pixel

    monkeypatch.setattr(pixel, "CPU_BLOCK_PIXELS", block)
    values, target, valid = (torch.from_numpy(x) for x in _random_frames(40, batch=3))
    preds = values if dtype == torch.uint8 else (values.to(dtype) / 255)
    copies = [x.clone() for x in (preds, target, valid)]
    for valid_arg in (None, valid):
        pixel_counts(preds, target, valid=valid_arg, thresholds=[*(k / 255 for k in range(128)), 0.7, 0.8])
        road_pixel_scores(preds, target, valid=valid_arg)
    for original, copy in zip((preds, target, valid), copies, strict=True):
        assert torch.equal(original, copy)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.uint8, torch.float16, torch.float32, torch.float64])
@pytest.mark.parametrize("thresholds", [None, [*(k / 255 for k in range(256)), 0.5], [0.1, 0.35, 0.9]])
def test_cuda_counts_equal_cpu_counts(dtype, thresholds):
    values, target, valid = (torch.from_numpy(x) for x in _random_frames(50, batch=70, height=12, width=33))
    preds = values if dtype == torch.uint8 else (values.double() / 255).to(dtype)
    thr = sorted(set(thresholds)) if isinstance(thresholds, list) else thresholds
    for valid_arg in (None, valid):
        cpu = pixel_counts(preds, target, valid=valid_arg, thresholds=thr)
        gpu = pixel_counts(
            preds.cuda(), target.cuda(), valid=None if valid_arg is None else valid_arg.cuda(), thresholds=thr
        )
        for a, b in zip(cpu, gpu, strict=True):
            torch.testing.assert_close(a, b.cpu(), rtol=0, atol=0)
