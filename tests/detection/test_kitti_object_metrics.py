"""KittiObjectMetrics / KittiObjectAveragePrecision: per-frame accumulation equals the functional evaluation."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch

from drivemetrics.detection import KittiObjectAveragePrecision, KittiObjectMetrics
from drivemetrics.detection.io import KittiObjects, read_kitti_object_folder
from drivemetrics.detection.kitti_object import KITTI_TYPES
from drivemetrics.functional import evaluate_kitti_objects
from tests.ddp import run_distributed
from tests.detection import kitti_oracle


def _labels(fixtures_dir, n):
    path = fixtures_dir / "kitti_object" / "label_2"
    if not path.is_dir():
        pytest.skip("kitti_object fixtures absent")
    return list(read_kitti_object_folder(path, [f"{i:06d}" for i in range(n)]).values())


def _as_dict(frame: KittiObjects, pred: bool) -> dict[str, torch.Tensor]:
    out = {
        "labels": torch.tensor([KITTI_TYPES.index(t) for t in frame.type], dtype=torch.long),
        "boxes": torch.from_numpy(frame.bbox),
        "dimensions": torch.from_numpy(frame.dimensions).float(),  # float32 inputs are accepted
        "location": torch.from_numpy(frame.location),
        "rotation_y": torch.from_numpy(frame.rotation_y),
        "alpha": torch.from_numpy(frame.alpha),
    }
    if pred:
        out["scores"] = torch.from_numpy(frame.score)
    else:
        out["truncated"] = torch.from_numpy(frame.truncated)
        out["occluded"] = torch.from_numpy(frame.occluded).long()
    return out


def _dets(gts):
    """Synthetic detections restricted to the metric's type vocabulary."""
    return kitti_oracle.jitter_detections(gts, seed=5)


def test_streaming_dict_inputs_equal_functional(fixtures_dir):
    gts = _labels(fixtures_dir, 40)
    dets = _dets(gts)
    metric = KittiObjectMetrics()
    for start in range(0, 40, 7):  # uneven batches
        metric.update(
            [_as_dict(d, True) for d in dets[start : start + 7]], [_as_dict(g, False) for g in gts[start : start + 7]]
        )
    values = metric.compute()
    # float32 dimensions change the 3D numbers slightly: compare 2D / AOS / BEV exactly, 3D within 1e-3 %
    dims32 = [
        KittiObjects.from_array(
            f.type, np.concatenate([f.to_array()[:, :7], f.dimensions.astype(np.float32), f.to_array()[:, 10:]], 1)
        )
        for f in dets
    ]
    expected = evaluate_kitti_objects(dims32, gts, only_detected=False)
    assert len(values) == 3 * 4 * 3 * 2
    for cls in ("car", "pedestrian", "cyclist"):
        for metric_name in ("2d", "aos", "bev", "3d"):
            for diff in ("easy", "moderate", "hard"):
                for points in ("r11", "r40"):
                    got = values[f"{cls}_{metric_name}_{diff}_{points}"]
                    assert got.dtype == torch.float64
                    assert got.item() == pytest.approx(expected[cls][metric_name][diff][f"ap_{points}"], abs=1e-9)
    assert values["car_2d_moderate_r40"] > 0.1


def test_kitti_objects_inputs_and_scalar_ap(fixtures_dir):
    gts = _labels(fixtures_dir, 30)
    dets = _dets(gts)
    expected = evaluate_kitti_objects(dets, gts, overlaps="loose", only_detected=False)
    ap = KittiObjectAveragePrecision(
        cls="pedestrian", metric="bev", difficulty="hard", recall_points=11, overlaps="loose"
    )
    ap.update(dets, gts)
    assert ap.compute().item() == pytest.approx(expected["pedestrian"]["bev"]["hard"]["ap_r11"], abs=1e-12)
    full = KittiObjectMetrics(overlaps="loose")
    full.update(dets, gts)
    assert full.compute()["pedestrian_bev_hard_r11"].item() == pytest.approx(ap.compute().item(), abs=1e-12)


def test_gt_as_detections_is_100_and_missing_alpha_gives_nan_aos(fixtures_dir):
    gts = _labels(fixtures_dir, 60)
    dets = [g.with_score(1.0) for g in gts]
    metric = KittiObjectAveragePrecision(cls="car", metric="3d", difficulty="moderate")
    metric.update(dets, gts)
    assert metric.compute().item() == pytest.approx(1.0)
    full = KittiObjectMetrics()
    full.update(dets, gts)
    assert torch.isnan(full.compute()["car_aos_easy_r40"])  # DontCare rows carry alpha -10


def test_reset_pickle_and_state_dict(fixtures_dir):
    gts = _labels(fixtures_dir, 10)
    dets = _dets(gts)
    metric = KittiObjectAveragePrecision(metric="2d")
    metric.update(dets, gts)
    value = metric.compute()
    clone = pickle.loads(pickle.dumps(metric))
    assert clone.compute().item() == value.item()
    assert metric.state_dict() == {}
    metric.reset()
    assert len(metric.ragged_frames()) == 0
    metric.update(dets[:5], gts[:5])
    metric.update(dets[5:], gts[5:])
    assert metric.compute().item() == value.item()


def test_bad_arguments():
    with pytest.raises(ValueError, match="cls"):
        KittiObjectAveragePrecision(cls="truck")
    with pytest.raises(ValueError, match="recall_points"):
        KittiObjectAveragePrecision(recall_points=20)
    with pytest.raises(ValueError, match="overlaps"):
        KittiObjectMetrics(overlaps="medium")
    metric = KittiObjectMetrics()
    frame = {"labels": torch.tensor([0]), "boxes": torch.zeros(1, 4), "dimensions": torch.ones(1, 3)}
    with pytest.raises(ValueError, match=r"preds\[0\]: missing key"):
        metric.update([frame], [frame])
    frame.update(location=torch.zeros(1, 3), rotation_y=torch.zeros(1), scores=torch.ones(2))
    with pytest.raises(ValueError, match=r"preds\[0\]: `scores` must have shape 1"):
        metric.update([frame], [frame])
    with pytest.raises(ValueError, match="frames"):
        metric.update([frame], [])


def test_plot_draws_three_difficulties(fixtures_dir):
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    gts = _labels(fixtures_dir, 10)
    metric = KittiObjectMetrics()
    metric.update([g.with_score(1.0) for g in gts], gts)
    _, ax = metric.plot(cls="car", metric="2d")
    assert len(ax.get_lines()) == 3
    ap = KittiObjectAveragePrecision()
    ap.update([g.with_score(1.0) for g in gts], gts)
    fig2, ax2 = ap.plot()
    assert fig2 is not None
    assert ax2 is not None


def _ddp_worker(rank, world, gts, dets):
    metric = KittiObjectMetrics()
    ap = KittiObjectAveragePrecision(cls="car", metric="bev")
    for i in range(rank, len(gts), world):
        metric.update([dets[i]], [gts[i]])
        ap.update([dets[i]], [gts[i]])
    values = metric.compute()
    # issue 30: rank 0 updates with 6 frames, rank 1 never calls update (gloo aborted, NCCL hung)
    lonely = KittiObjectMetrics()
    if rank == 0:
        lonely.update(dets[:6], gts[:6])
    lonely_values = {k: v.item() for k, v in lonely.compute().items()}
    return {k: v.item() for k, v in values.items()}, ap.compute().item(), len(metric.ragged_frames()), lonely_values


@pytest.mark.ddp
@pytest.mark.slow
def test_two_process_sync_equals_single_process(fixtures_dir):
    gts = _labels(fixtures_dir, 25)
    dets = _dets(gts)
    results = run_distributed(_ddp_worker, gts, dets)
    single = KittiObjectMetrics()
    single.update(dets, gts)
    expected = single.compute()
    first = KittiObjectMetrics()
    first.update(dets[:6], gts[:6])
    expected_lonely = first.compute()
    for rank, (values, ap, local_frames, lonely) in enumerate(results):
        assert local_frames == len(range(rank, 25, 2))  # local state restored after the sync
        assert ap == pytest.approx(expected["car_bev_moderate_r40"].item(), abs=1e-12)
        for key, value in expected.items():
            assert values[key] == pytest.approx(value.item(), abs=1e-12, nan_ok=True), key
        for key, value in expected_lonely.items():
            assert lonely[key] == pytest.approx(value.item(), abs=1e-12, nan_ok=True), f"one rank empty: {key}"


def test_no_frames_and_empty_frames_give_zero():
    with pytest.warns(UserWarning, match="before"):
        assert KittiObjectAveragePrecision().compute().item() == 0.0
    metric = KittiObjectMetrics()
    metric.update([KittiObjects.empty(with_score=True)], [KittiObjects.empty()])
    values = metric.compute()
    assert all(v.item() == 0.0 for v in values.values())


def test_a_collection_of_aps_stores_the_frames_once_and_gives_each_its_value(fixtures_dir):
    """Several KittiObjectAveragePrecision of one table (other class, metric, difficulty, overlaps: read at compute)
    share one compute group, and each reports its own entry of the functional evaluation."""
    from torchmetrics import MetricCollection

    gts = _labels(fixtures_dir, 30)
    dets = _dets(gts)
    chosen = {
        "car_3d_moderate": {"cls": "car", "metric": "3d", "difficulty": "moderate"},
        "pedestrian_bev_hard_r11": {"cls": "pedestrian", "metric": "bev", "difficulty": "hard", "recall_points": 11},
        "car_2d_easy_loose": {"cls": "car", "metric": "2d", "difficulty": "easy", "overlaps": "loose"},
    }
    collection = MetricCollection({k: KittiObjectAveragePrecision(**v) for k, v in chosen.items()}, compute_groups=True)
    collection.update(dets[:15], gts[:15])
    collection.update(dets[15:], gts[15:])
    values = collection.compute()
    assert len(collection.compute_groups) == 1
    strict = evaluate_kitti_objects(dets, gts, only_detected=False)
    loose = evaluate_kitti_objects(dets, gts, overlaps="loose", only_detected=False)
    expected = {
        "car_3d_moderate": strict["car"]["3d"]["moderate"]["ap_r40"],
        "pedestrian_bev_hard_r11": strict["pedestrian"]["bev"]["hard"]["ap_r11"],
        "car_2d_easy_loose": loose["car"]["2d"]["easy"]["ap_r40"],
    }
    assert len({round(v, 6) for v in expected.values()}) == 3  # three different numbers to tell apart
    for name, value in expected.items():
        assert values[name].item() == pytest.approx(value, abs=1e-9), name


def test_metric_classes_return_fractions_the_table_prints_in_percent(fixtures_dir):
    """One unit (issue 50): compute() gives fractions in [0, 1] (as every other Metric class, so Lightning logs
    0.317 beside the others' fractions), and ``kitti-object-eval``'s table prints the same value x 100 under
    'AP in %', the official devkit's number (31.7419 for the fixture's detector, car 3D moderate R40)."""
    from drivemetrics.detection.cli import format_table

    gts = _labels(fixtures_dir, 100)
    frames = [f"{i:06d}" for i in range(100)]
    dets = list(read_kitti_object_folder(fixtures_dir / "kitti_object" / "det_100", frames, with_score=True).values())
    full = KittiObjectMetrics()
    full.update(dets, gts)
    values = full.compute()
    finite = [v.item() for v in values.values() if not torch.isnan(v)]
    assert finite
    assert all(0.0 <= v <= 1.0 for v in finite)
    assert KittiObjectMetrics.plot_upper_bound == 1.0
    one = KittiObjectAveragePrecision(cls="car", metric="3d", difficulty="moderate")
    one.update(dets, gts)
    ap = one.compute().item()
    assert ap == values["car_3d_moderate_r40"].item()
    assert round(ap, 6) == 0.317419  # the official 31.7419 %, as a fraction
    table = format_table(evaluate_kitti_objects(dets, gts)).splitlines()
    assert any(line.startswith("AP in %") for line in table)
    row = next(line for line in table if line.startswith("3d"))
    printed = [float(x) for x in row.split()[1:]]  # easy R11 R40, moderate R11 R40, hard R11 R40
    assert printed[3] == 31.7419
    assert printed[3] / 100 == pytest.approx(ap, abs=5e-7)
    assert printed[3] == float(f"{ap * 100:.4f}")
