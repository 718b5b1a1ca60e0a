"""A Lightning fit logs the scalar Metric classes with ``self.log`` and ``log_dict``; epoch values = functionals."""

from __future__ import annotations

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset
from torchmetrics import Metric, MetricCollection

from drivemetrics._internal.metric import DictFamilyLogCheck
from drivemetrics.functional import culane_f1, road_pixel_scores, tusimple_metrics
from drivemetrics.lane import (
    CULaneF1Score,
    CULanePrecision,
    CULaneRecall,
    TuSimpleAccuracy,
    TuSimpleF1Score,
    TuSimpleFalseNegatives,
    TuSimpleFalsePositives,
)
from drivemetrics.road import RoadPixelAveragePrecision, RoadPixelMaxFScore

pl = pytest.importorskip("pytorch_lightning")
pytestmark = pytest.mark.filterwarnings("ignore:.*LeafSpec.*", "ignore:.*does not have many workers.*")

N_FRAMES = 5  # batches of 2, 2, 1: per-batch means differ from the pooled values
CULANE = {"height": 64, "width": 168, "line_width": 6.0}
H_SAMPLES = torch.arange(160.0, 720.0, 20.0)


def _validation_data() -> TensorDataset:
    g = torch.Generator().manual_seed(7)
    road_target = torch.rand(N_FRAMES, 8, 10, generator=g) < 0.4
    road_preds = (0.5 * road_target + 0.6 * torch.rand(road_target.shape, generator=g)).clamp(0, 1)
    lane_x = 200.0 + 250.0 * torch.arange(4.0)[None, :, None] + 0.3 * H_SAMPLES + torch.zeros(N_FRAMES, 4, 1)
    tusimple_preds = lane_x + torch.randn(lane_x.shape, generator=g) * torch.linspace(3, 25, N_FRAMES)[:, None, None]
    y = torch.linspace(20.0, 58.0, 8)
    culane_target = torch.stack(
        [torch.tensor([20.0, 60.0, 100.0, 140.0])[:, None] + 0.8 * (y - 20.0), y.expand(4, -1)], dim=-1
    ).expand(N_FRAMES, -1, -1, -1)
    culane_preds = (
        culane_target
        + torch.randn(culane_target.shape, generator=g) * torch.linspace(0.2, 4, N_FRAMES)[:, None, None, None]
    )
    culane_preds[1, 2:] = torch.nan  # two missed lanes
    h_samples = H_SAMPLES.expand(N_FRAMES, -1)
    return TensorDataset(road_preds, road_target, tusimple_preds, lane_x, h_samples, culane_preds, culane_target)


class LoggingModule(pl.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.zeros(()))
        self.maxf = RoadPixelMaxFScore(thresholds=32)
        self.tusimple_accuracy = TuSimpleAccuracy()
        self.tusimple_f1 = TuSimpleF1Score()
        self.culane_f1 = CULaneF1Score(**CULANE)
        tusimple = [TuSimpleAccuracy(), TuSimpleFalsePositives(), TuSimpleFalseNegatives(), TuSimpleF1Score()]
        self.tusimple = MetricCollection(tusimple, prefix="col/")
        culane = [CULanePrecision(**CULANE), CULaneRecall(**CULANE), CULaneF1Score(**CULANE)]
        self.culane = MetricCollection(culane, prefix="col/")
        self.road = MetricCollection(
            [RoadPixelMaxFScore(thresholds=32), RoadPixelAveragePrecision(thresholds=32)], prefix="col/"
        )

    def training_step(self, batch, batch_idx):
        loss = (self.weight - 1.0) ** 2
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        road_preds, road_target, tusimple_preds, tusimple_target, h_samples, culane_preds, culane_target = batch
        self.maxf(road_preds, road_target)
        self.tusimple_accuracy(tusimple_preds, tusimple_target, h_samples=h_samples)
        self.tusimple_f1(tusimple_preds, tusimple_target, h_samples=h_samples)
        self.culane_f1(culane_preds, culane_target)
        self.log("val/maxf", self.maxf, on_step=False, on_epoch=True)
        self.log("val/tusimple_accuracy", self.tusimple_accuracy, on_step=False, on_epoch=True)
        self.log("val/tusimple_f1", self.tusimple_f1, on_step=False, on_epoch=True)
        self.log("val/culane_f1", self.culane_f1, on_step=False, on_epoch=True)
        self.tusimple.update(tusimple_preds, tusimple_target, h_samples=h_samples)
        self.culane.update(culane_preds, culane_target)
        self.road.update(road_preds, road_target)
        self.log_dict(self.tusimple, on_step=False, on_epoch=True)
        self.log_dict(self.culane, on_step=False, on_epoch=True)
        self.log_dict(self.road, on_step=False, on_epoch=True)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def test_fit_logs_scalar_metrics_and_collections(tmp_path):
    data = _validation_data()
    model = LoggingModule()
    trainer = pl.Trainer(
        max_epochs=1,
        accelerator="cpu",
        devices=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=tmp_path,
    )
    train = DataLoader(TensorDataset(torch.zeros(2, 1)), batch_size=1)
    trainer.fit(model, train, DataLoader(data, batch_size=2))
    logged = {k: v.item() for k, v in trainer.callback_metrics.items()}

    road_preds, road_target, tusimple_preds, tusimple_target, h_samples, culane_preds, culane_target = data.tensors
    road = road_pixel_scores(road_preds, road_target, thresholds=32)
    tusimple = tusimple_metrics(tusimple_preds, tusimple_target, h_samples=h_samples)
    culane = culane_f1(culane_preds, culane_target, **CULANE)
    expected = {
        "val/maxf": road["max_f"],
        "col/RoadPixelMaxFScore": road["max_f"],
        "col/RoadPixelAveragePrecision": road["average_precision"],
        "val/tusimple_accuracy": tusimple["accuracy"],
        "val/tusimple_f1": tusimple["f1"],
        "val/culane_f1": culane["f1"],
        "col/TuSimpleAccuracy": tusimple["accuracy"],
        "col/TuSimpleFalsePositives": tusimple["fp"],
        "col/TuSimpleFalseNegatives": tusimple["fn"],
        "col/TuSimpleF1Score": tusimple["f1"],
        "col/CULanePrecision": culane["precision"],
        "col/CULaneRecall": culane["recall"],
        "col/CULaneF1Score": culane["f1"],
    }
    for name, value in expected.items():
        assert logged[name] == pytest.approx(value.item(), abs=1e-6), name

    # pooled over the epoch, not a mean of per-batch values
    batches = [slice(0, 2), slice(2, 4), slice(4, 5)]
    mean_f1 = sum(culane_f1(culane_preds[b], culane_target[b], **CULANE)["f1"].item() for b in batches) / 3
    assert logged["val/culane_f1"] != pytest.approx(mean_f1, abs=1e-6)
    assert 0 < tusimple["accuracy"].item() < 1
    assert 0 < culane["f1"].item() < 1
    # the scalar classes of one family counted once per batch (one compute group), and Lightning reset them
    assert len(model.tusimple.compute_groups) == 1
    assert len(model.culane.compute_groups) == 1
    assert model.maxf.update_count == 0
    assert model.tusimple_f1.update_count == 0


def test_every_logged_class_plots():
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = _validation_data().tensors
    metrics = [
        (RoadPixelMaxFScore(thresholds=32), data[0:2], {}),
        (TuSimpleAccuracy(), data[2:4], {"h_samples": data[4]}),
        (TuSimpleF1Score(), data[2:4], {"h_samples": data[4]}),
        (CULaneF1Score(**CULANE), data[5:7], {}),
    ]
    try:
        for metric, inputs, keywords in metrics:
            values = [
                metric(*(x[part] for x in inputs), **{k: v[part] for k, v in keywords.items()})
                for part in (slice(None, 2), slice(2, None))
            ]
            fig, ax = metric.plot(values)
            assert len(ax.lines) >= 1, type(metric).__name__
            assert fig is ax.figure
    finally:
        plt.close("all")


class _CountMetrics(DictFamilyLogCheck, Metric):
    """A dict family: ``{"total", "mean"}`` of the values seen."""

    def __init__(self) -> None:
        super().__init__()
        self.add_state("total", torch.zeros(()), dist_reduce_fx="sum")
        self.add_state("count", torch.zeros(()), dist_reduce_fx="sum")

    def update(self, values: torch.Tensor) -> None:
        self.total += values.sum()
        self.count += values.numel()

    def compute(self) -> dict[str, torch.Tensor]:
        return {"total": self.total, "mean": self.total / self.count}


class CountMean(_CountMetrics):
    """Its scalar class."""

    def compute(self) -> torch.Tensor:
        return super().compute()["mean"]


class _LogsWhat(pl.LightningModule):
    def __init__(self, metric: Metric) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.zeros(()))
        self.metric = metric
        self.batches_logged = 0

    def validation_step(self, batch, batch_idx):
        self.metric(batch[0])  # forward: the dict is in _forward_cache, as in a training_step
        self.log("val/metric", self.metric)
        self.batches_logged += 1


def _validate(model: pl.LightningModule, tmp_path) -> None:
    trainer = pl.Trainer(
        accelerator="cpu",
        devices=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=tmp_path,
    )
    trainer.validate(model, DataLoader(TensorDataset(torch.arange(6.0)), batch_size=2), verbose=False)


def test_logging_a_dict_family_fails_at_the_log_call_naming_its_scalar_classes(tmp_path):
    model = _LogsWhat(_CountMetrics())
    with pytest.raises(TypeError, match=r"_CountMetrics returns a dict .* scalar classes \(CountMean\)"):
        _validate(model, tmp_path)
    assert model.batches_logged == 0  # the first self.log call raised, not the end of the epoch


def test_its_scalar_class_logs_and_the_family_still_works_outside_lightning(tmp_path):
    model = _LogsWhat(CountMean())
    _validate(model, tmp_path)
    assert model.batches_logged == 3
    family = _CountMetrics()
    assert family(torch.tensor([1.0, 3.0]))["mean"] == 2.0  # forward reads and writes _forward_cache as usual
    assert family._forward_cache["total"] == 4.0
    assert family.compute()["total"] == 4.0


@pytest.mark.parametrize(
    ("module", "refused"),
    [
        ("pytorch_lightning.trainer.connectors.logger_connector.result", True),
        ("lightning.pytorch.loops.somewhere_new", True),  # any module of Lightning's packages, wherever it moves
        ("pytorch_lightning", True),
        ("lightning.fabric.utilities", False),
        ("pytorch_lightning_extras.reader", False),
        ("my_project.callbacks", False),
    ],
)
def test_the_check_keys_on_the_reading_package_not_on_a_module_path(module, refused):
    family, scalar = _CountMetrics(), CountMean()
    family(torch.tensor([1.0]))
    read = {"__name__": module}
    if refused:
        with pytest.raises(TypeError, match="_CountMetrics returns a dict"):
            exec("family._forward_cache", read, {"family": family})
    else:
        exec("cache = family._forward_cache", read, out := {"family": family})
        assert out["cache"]["total"] == 1.0
    exec("scalar._forward_cache", read, {"scalar": scalar})  # a scalar class is never refused


def test_a_real_family_names_its_scalar_classes(tmp_path):
    from drivemetrics.road import RoadPixelMetrics

    class LogsRoad(pl.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.weight = torch.nn.Parameter(torch.zeros(()))
            self.road = RoadPixelMetrics(thresholds=8)

        def validation_step(self, batch, batch_idx):
            self.road.update(batch[0], batch[1])  # update only: nothing in _forward_cache yet
            self.log("val/road", self.road)

    data = TensorDataset(torch.rand(4, 6, 6), torch.rand(4, 6, 6) > 0.5)
    trainer = pl.Trainer(
        accelerator="cpu", devices=1, logger=False, enable_progress_bar=False, default_root_dir=tmp_path
    )
    with pytest.raises(TypeError, match=r"RoadPixelMetrics returns a dict .*RoadPixelMaxFScore"):
        trainer.validate(LogsRoad(), DataLoader(data, batch_size=2), verbose=False)


# ----------------------------------------------------------------------------------------------------------------
# strategy="ddp_spawn": the workers share the parent's state memory (issue 35)

#: batches (of the battery's registered inputs) each of the two spawned ranks validates: uneven
SPAWN_SPLIT = [[0, 1, 2], [3]]


def _scalar_classes() -> list[type[Metric]]:
    """Every exported class that returns one value (a scalar class of every family, and the scalar metrics)."""
    from tests.test_metric_battery import METRIC_CLASSES, _reference

    return [cls for cls in METRIC_CLASSES if isinstance(_reference(cls).total_raw, torch.Tensor)]


class SpawnValidation(pl.LightningModule):
    """Validates every given class on the battery's batches; rank r of 2 sees ``SPAWN_SPLIT[r]``, one process all."""

    def __init__(self, classes: list[type[Metric]]) -> None:
        super().__init__()
        from tests.metric_inputs import make_case

        self.weight = torch.nn.Parameter(torch.zeros(()))
        self.metrics = torch.nn.ModuleDict(
            {cls.__name__: cls(**make_case(cls).init_kwargs) for cls in classes}  # held by the parent: shared
        )

    def val_dataloader(self) -> DataLoader:
        batches = SPAWN_SPLIT[self.global_rank] if self.trainer.world_size == 2 else [0, 1, 2, 3]
        return DataLoader(batches, batch_size=None)

    def validation_step(self, batch_index, _):
        from tests.metric_inputs import make_case

        for name, metric in self.metrics.items():
            args, kwargs = make_case(type(metric)).batches[int(batch_index)]
            metric.update(*args, **kwargs)
            self.log(f"val/{name}", metric, on_step=False, on_epoch=True, batch_size=1)


@pytest.mark.slow
@pytest.mark.ddp
@pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")
def test_ddp_spawn_logs_the_one_process_value_of_every_scalar_class(tmp_path):
    """Two CPU processes (gloo), uneven data, states shared with the parent: the values of one process."""
    from tests.test_metric_battery import _reference

    classes = _scalar_classes()
    trainer = pl.Trainer(
        strategy="ddp_spawn",
        accelerator="cpu",
        devices=2,
        use_distributed_sampler=False,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=tmp_path,
    )
    model = SpawnValidation(classes)
    (logged,) = trainer.validate(model, verbose=False)
    mismatched = {}
    for cls in classes:
        expected = _reference(cls).total_raw.double().item()
        got = logged[f"val/{cls.__name__}"]
        if got != pytest.approx(expected, rel=1e-6, abs=1e-9, nan_ok=True):
            mismatched[cls.__name__] = (got, expected)
    assert not mismatched, f"ddp_spawn logged (value, one-process value): {mismatched}"
    for name, metric in model.metrics.items():  # the parent's instances: the workers did not write into them
        assert metric.update_count == 0, name
        for state, default in metric._defaults.items():
            value = getattr(metric, state)
            assert value == [] if isinstance(default, list) else torch.equal(value, default), f"{name}.{state}"
