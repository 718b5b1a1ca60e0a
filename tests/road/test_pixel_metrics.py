"""The torchmetrics wrappers: pooling over updates, forward/reset, state size, BEV space, real-data conformance."""

from __future__ import annotations

import copy
import pickle
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
import torch
from torchmetrics import MetricCollection

from drivemetrics.geometry import BevGrid, bev_sample_pixels
from drivemetrics.road import RoadPixelAveragePrecision, RoadPixelMaxFScore, RoadPixelMetrics

from .devkit_oracle import devkit_pooled

DEVKIT_THRESH = np.arange(256) / 255.0


def _call(fn: Any, frame: Sequence[Any], **keywords: Any) -> Any:
    """``fn(preds, target, valid=valid, **keywords)`` for a ``(preds, target, valid)`` frame (arrays or tensors)."""
    preds, target, valid = (torch.as_tensor(x) for x in frame)
    return fn(preds, target, valid=valid, **keywords)


def _frames(seed: int, batch: int = 2, height: int = 12, width: int = 15):
    rng = np.random.default_rng(seed)
    target = rng.random((batch, height, width)) < 0.4
    conf = np.clip(0.5 + 0.4 * (target - 0.5) + rng.normal(0, 0.3, target.shape), 0, 1)
    values = np.round(conf * 255).astype(np.uint8)
    valid = rng.random(target.shape) > 0.1
    return values, target, valid


def test_pooled_over_updates_equals_devkit(device):
    metric = RoadPixelMetrics().to(device)
    all_values, all_target, all_valid = [], [], []
    for seed in range(4):
        values, target, valid = _frames(seed, batch=1 + seed % 2)
        preds = torch.from_numpy(values)
        preds = preds.float() / 255 if seed % 2 else preds  # mixed input types pool into the same counters
        metric.update(preds.to(device), torch.from_numpy(target).to(device), valid=torch.from_numpy(valid).to(device))
        all_values += list(values)
        all_target += list(target)
        all_valid += list(valid)
    scores = metric.compute()
    oracle = devkit_pooled(all_target, [v.astype("f4") / 255 for v in all_values], DEVKIT_THRESH, all_valid)
    assert scores["max_f"].item() == pytest.approx(oracle["max_f"], abs=1e-12)
    assert scores["average_precision"].item() == pytest.approx(oracle["average_precision"], abs=1e-12)
    assert scores["best_threshold"].item() == oracle["best_threshold"]
    assert scores["total_positives"].item() == oracle["total_positives"]
    assert scores["precision"].shape == (256,)
    assert scores["max_f"].device.type == device.type


def test_fixed_threshold_keys_match_brute_force():
    values, target, valid = _frames(9)
    probs = torch.from_numpy(values).double() / 255
    probs[0, 0, :3] = 0.5  # exact ties at the fixed threshold count as road
    metric = RoadPixelMetrics(fixed_threshold=0.5)
    metric.update(probs, torch.from_numpy(target), valid=torch.from_numpy(valid))
    scores = metric.compute()
    road = probs.numpy() >= 0.5
    tp = np.sum(road & target & valid)
    fp = np.sum(road & ~target & valid)
    fn = np.sum(~road & target & valid)
    assert scores["f_measure_fixed"].item() == pytest.approx(2 * tp / (2 * tp + fp + fn), abs=1e-15)
    assert scores["precision_fixed"].item() == pytest.approx(tp / (tp + fp), abs=1e-15)
    assert scores["iou_fixed"].item() == pytest.approx(tp / (tp + fp + fn), abs=1e-15)
    assert scores["fixed_threshold"].item() == 0.5
    # the fixed threshold does not enter the MaxF search
    assert scores["thresholds"].numel() == 256


def test_forward_returns_batch_value_and_accumulates():
    a = _frames(1)
    b = _frames(2)
    metric = RoadPixelMetrics()
    batch_a = _call(metric, a)
    batch_b = _call(metric, b)
    only_b = RoadPixelMetrics()
    _call(only_b.update, b)
    assert batch_b["max_f"].item() == only_b.compute()["max_f"].item()
    both = devkit_pooled([*a[1], *b[1]], [v.astype("f4") / 255 for v in [*a[0], *b[0]]], DEVKIT_THRESH, [*a[2], *b[2]])
    assert metric.compute()["max_f"].item() == pytest.approx(both["max_f"], abs=1e-12)
    assert batch_a["max_f"].item() != pytest.approx(batch_b["max_f"].item(), abs=1e-6)
    metric.reset()
    assert int(metric.tp.sum()) == 0


def test_state_is_constant_size_counters():
    metric = RoadPixelMetrics()
    sizes_before = {k: v.numel() for k, v in metric.metric_state.items()}
    for seed in range(3):
        _call(metric.update, _frames(seed, batch=3))
    sizes_after = {k: v.numel() for k, v in metric.metric_state.items()}
    counters = {"tp": 257, "fp": 257, "fn": 257, "tn": 257}  # 256 + the fixed threshold
    assert sizes_before == sizes_after == {**counters, "counting_config": 257 + 7}
    assert all(metric.metric_state[k].dtype == torch.int64 for k in counters)
    assert all(metric._reductions[k].__name__ == "dim_zero_sum" for k in counters)
    assert metric.state_dict() == {}


def test_scalar_wrappers_and_collection():
    frames = [tuple(torch.from_numpy(x) for x in _frames(s)) for s in range(2)]
    full = RoadPixelMetrics()
    collection = MetricCollection(
        {
            "maxf": RoadPixelMaxFScore(),
            "ap": RoadPixelAveragePrecision(),
            "ap_int": RoadPixelAveragePrecision(integrated=True),
        }
    )
    for frame in frames:
        _call(full.update, frame)
        _call(collection.update, frame)
    expected = full.compute()
    got = collection.compute()
    assert got["maxf"].ndim == 0
    assert got["maxf"].item() == expected["max_f"].item()
    assert got["ap"].item() == expected["average_precision"].item()
    assert got["ap_int"].item() == expected["average_precision_integrated"].item()


def test_pickle_clone_and_custom_threshold_count():
    metric = RoadPixelMetrics(thresholds=11, fixed_threshold=0.3)
    _call(metric.update, _frames(4))
    clone = pickle.loads(pickle.dumps(metric))
    assert clone.compute()["max_f"].item() == metric.compute()["max_f"].item()
    assert copy.deepcopy(metric).compute()["best_threshold"].item() == metric.compute()["best_threshold"].item()
    assert metric.tp.numel() == 11  # 0.3 = 3/10 is already one of the thresholds
    assert metric.compute()["thresholds"].numel() == 11


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"beta": 0}, "`beta` must be"),
        ({"fixed_threshold": 1.5}, "`fixed_threshold` must be"),
        ({"space": "image"}, "`space` must be one of"),
        ({"space": "bev", "warp_mode": "cubic"}, "`warp_mode` must be one of"),
        ({"thresholds": [0.3, 0.1]}, "strictly increasing"),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        RoadPixelMetrics(**kwargs)


def test_homography_rules():
    frame = [torch.from_numpy(x) for x in _frames(0)]
    perspective = RoadPixelMetrics()
    _call(perspective.update, frame, homography=torch.eye(3))  # ignored: perspective and BEV metrics share collections
    plain = RoadPixelMetrics()
    _call(plain.update, frame)
    assert torch.equal(perspective.tp, plain.tp)
    with pytest.raises(ValueError, match="needs `homography`"):
        _call(RoadPixelMetrics(space="bev").update, frame)
    with pytest.raises(TypeError, match="`grid` must be a BevGrid"):
        RoadPixelMetrics(space="bev", grid=(10, 10))


def _toy_homography() -> torch.Tensor:
    """A camera 1.6 m above a small grid looking forward: image_from_road for a 40 x 60 image."""
    fx = fy = 30.0
    cu, cv, height = 30.0, 5.0, 1.6
    # u = fx X / Z + cu, v = fy * height / Z + cv  ->  [u w, v w, w] = H [X, Z, 1]
    return torch.tensor([[fx, cu, 0.0], [0.0, cv, fy * height], [0.0, 1.0, 0.0]], dtype=torch.float64)


@pytest.mark.parametrize("mode", ["devkit", "nearest", "bilinear"])
def test_bev_space_equals_oracle_on_independently_warped_maps(mode):
    grid = BevGrid(x_min=-2.0, x_max=2.0, z_min=4.0, z_max=12.0, resolution=0.2)
    values, target, valid = _frames(5, batch=2, height=40, width=60)
    homography = _toy_homography().expand(2, 3, 3)
    metric = RoadPixelMetrics(space="bev", grid=grid, warp_mode=mode)
    preds = torch.from_numpy(values)
    metric.update(preds, torch.from_numpy(target), valid=torch.from_numpy(valid), homography=homography)
    scores = metric.compute()
    # oracle: labels through geom's nearest/devkit lookup table, numpy indexing, devkit pooling
    label_mode = "nearest" if mode == "bilinear" else mode
    row, col, seen = (t.numpy() for t in bev_sample_pixels(homography, (40, 60), grid, mode=label_mode))
    b = np.arange(2)[:, None, None]
    target_bev = np.where(seen, target[b, row, col], False)
    valid_bev = seen & valid[b, row, col]
    if mode == "bilinear":
        from drivemetrics.geometry import warp_image_to_bev

        probs, seen_bilinear = warp_image_to_bev(preds.float().unsqueeze(1) / 255, homography, grid, mode="bilinear")
        probs = probs[:, 0].numpy()
        valid_bev &= seen_bilinear.numpy()
    else:
        probs = np.where(seen, values[b, row, col], 0).astype("f4") / 255
    oracle = devkit_pooled(list(target_bev), list(probs), DEVKIT_THRESH, list(valid_bev))
    assert scores["total_positives"].item() == oracle["total_positives"]
    assert scores["total_negatives"].item() == oracle["total_negatives"]
    assert scores["max_f"].item() == pytest.approx(oracle["max_f"], abs=1e-12)
    assert scores["average_precision"].item() == pytest.approx(oracle["average_precision"], abs=1e-12)


def _kitti_baseline(fixtures_dir):
    """The devkit's location-potential baseline from the 4 fixture frames (kitti_road.md section 7)."""
    from PIL import Image

    from drivemetrics.geometry import image_from_road_calib, read_kitti_calib

    root = fixtures_dir / "kitti_road" / "training"
    names = ["um_road_000000", "umm_road_000000", "uu_road_000000", "uu_road_000093"]
    gts = [np.array(Image.open(root / "gt_image_2" / f"{n}.png").convert("RGB")) for n in names]
    prior = np.zeros((376, 1242), np.float32)
    for gt in gts:
        prior[: gt.shape[0], : gt.shape[1]] += gt[:, :, 2] > 0
    prior8 = (prior / len(gts) * 255).astype("u1")
    for name, gt in zip(names, gts, strict=True):
        h, w = gt.shape[:2]
        calib = read_kitti_calib(root / "calib" / (name.replace("_road", "") + ".txt"))
        yield (
            torch.from_numpy(prior8[:h, :w].copy()),
            torch.from_numpy(gt[:, :, 2] > 0),
            torch.from_numpy(gt[:, :, 0] > 0),
            image_from_road_calib(calib),
        )


@pytest.mark.parametrize(
    ("space", "expected"),
    [
        (
            "perspective",
            {
                "max_f": 0.8634450850048166,
                "average_precision": 0.9167009977958855,
                "precision_wp": 0.8671165109,
                "recall_wp": 0.8598045707,
            },
        ),
        ("bev", {"max_f": 0.8036932039144153, "average_precision": 0.8368548662661625, "precision_wp": 0.7342315316}),
    ],
)
def test_kitti_fixture_conformance(fixtures_dir, space, expected):
    metric = RoadPixelMetrics(space=space, compat="reference")
    for preds, road, valid, homography in _kitti_baseline(fixtures_dir):
        metric.update(preds, road, valid=valid, homography=homography if space == "bev" else None)
    scores = metric.compute()
    assert scores["best_threshold"].item() == 64 / 255
    assert scores["max_f"].item() == pytest.approx(expected["max_f"], abs=1e-12)
    assert scores["average_precision"].item() == pytest.approx(expected["average_precision"], abs=1e-12)
    assert scores["precision_wp"].item() == pytest.approx(expected["precision_wp"], abs=1e-9)
    if "recall_wp" in expected:
        assert scores["recall_wp"].item() == pytest.approx(expected["recall_wp"], abs=1e-9)


def test_functional_and_module_give_the_same_dict():
    from drivemetrics.functional import road_pixel_scores

    values, target, valid = (torch.from_numpy(x) for x in _frames(12, batch=3))
    probs = values.float() / 255
    metric = RoadPixelMetrics(thresholds=51, beta=0.5, fixed_threshold=0.35)
    metric.update(probs, target, valid=valid)
    module = metric.compute()
    functional = road_pixel_scores(probs, target, valid=valid, thresholds=51, beta=0.5, fixed_threshold=0.35)
    assert module.keys() == functional.keys()
    for key in module:
        torch.testing.assert_close(module[key], functional[key], equal_nan=True, rtol=0, atol=0, msg=key)
    assert 0 < module["f_measure_fixed"].item() < 1


def test_collection_never_merges_differently_configured_counters():
    """Equal first batches must not put a perspective and a BEV metric (or two threshold sets) in one group."""
    grid = BevGrid(x_min=-2.0, x_max=2.0, z_min=4.0, z_max=12.0, resolution=0.2)
    homography = _toy_homography()
    collection = MetricCollection(
        {
            "persp": RoadPixelMaxFScore(),
            "bev": RoadPixelMaxFScore(space="bev", grid=grid),
            "shifted": RoadPixelMaxFScore(thresholds=[(k + 0.25) / 256 for k in range(256)]),  # same state shapes
            "ap": RoadPixelAveragePrecision(),
        }
    )
    empty = torch.zeros(1, 40, 60)
    # a first batch that counts nothing anywhere: every counter stays 0
    collection.update(empty, empty.bool(), valid=torch.zeros(1, 40, 60, dtype=torch.bool), homography=homography)
    frames = [torch.from_numpy(x) for x in _frames(6, batch=1, height=40, width=60)]
    _call(collection.update, frames, homography=homography)
    groups = [sorted(g) for g in collection.compute_groups.values()]
    assert ["ap", "persp"] in groups
    assert ["bev"] in groups
    assert ["shifted"] in groups
    persp = RoadPixelMaxFScore()
    _call(persp.update, frames)
    assert collection.compute()["persp"].item() == persp.compute().item()


def test_without_fixed_threshold():
    frame = [torch.from_numpy(x) for x in _frames(13)]
    metric = RoadPixelMetrics(fixed_threshold=None)
    metric.update(frame[0].float() / 255, frame[1], valid=frame[2])
    scores = metric.compute()
    assert "f_measure_fixed" not in scores
    assert metric.tp.numel() == 256
    with_fixed = RoadPixelMetrics()
    with_fixed.update(frame[0].float() / 255, frame[1], valid=frame[2])
    assert scores["max_f"].item() == with_fixed.compute()["max_f"].item()
    with pytest.raises(ValueError, match="`fixed_threshold` must be None or a number"):
        RoadPixelMetrics(fixed_threshold=True)


def test_plot_draws_the_kept_curve_and_the_working_point():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metric = RoadPixelMetrics()
    _call(metric.update, _frames(14))
    scores = metric.compute()
    fig, ax = metric.plot()
    curve, point = ax.get_lines()
    kept = scores["recall"] > 0
    np.testing.assert_array_equal(curve.get_xdata(), scores["recall"][kept].numpy())
    np.testing.assert_array_equal(curve.get_ydata(), scores["precision"][kept].numpy())
    assert point.get_xdata()[0] == scores["recall_wp"].item()
    plt.close(fig)


def test_forward_with_preds_that_require_grad():
    values, target, valid = (torch.from_numpy(x) for x in _frames(15))
    probs = (values.float() / 255).requires_grad_(True)
    metric = RoadPixelMetrics()
    batch = metric(probs, target, valid=valid)  # forward runs update with grad enabled
    assert not batch["max_f"].requires_grad
    assert batch["max_f"].item() == metric.compute()["max_f"].item()
