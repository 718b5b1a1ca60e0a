"""Logging the metric object from a LightningModule's validation step gives the pooled value."""

from __future__ import annotations

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from drivemetrics.functional import road_pixel_scores
from drivemetrics.road import RoadPixelAveragePrecision, RoadPixelMaxFScore, SoftFMeasureLoss

pl = pytest.importorskip("pytorch_lightning")
pytestmark = pytest.mark.filterwarnings("ignore:.*LeafSpec.*")  # inside pytorch_lightning, not ours


def _dataset(seed: int, n: int = 6, size: int = 12) -> TensorDataset:
    g = torch.Generator().manual_seed(seed)
    target = torch.zeros(n, size, size, dtype=torch.bool)
    for i in range(n):
        target[i, size // 2 - i % 3 :] = True
    features = torch.randn(n, 2, size, size, generator=g)
    features[:, 0] += target.float()
    return TensorDataset(features, target)


class TinyRoadModule(pl.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.net = torch.nn.Conv2d(2, 1, kernel_size=3, padding=1)
        self.loss = SoftFMeasureLoss(from_logits=True)
        self.val_maxf = RoadPixelMaxFScore()
        self.val_ap = RoadPixelAveragePrecision()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.net(x))[:, 0]

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = self.loss(self.net(x), y)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.val_maxf.update(self(x), y)
        self.val_ap.update(self(x), y)
        self.log("val_maxf", self.val_maxf, on_step=False, on_epoch=True)
        self.log("val_ap", self.val_ap, on_step=False, on_epoch=True)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def test_logged_metric_is_the_pooled_value(tmp_path):
    torch.manual_seed(0)
    model = TinyRoadModule()
    train = DataLoader(_dataset(0), batch_size=3)
    val = DataLoader(_dataset(1), batch_size=2)  # 3 validation batches
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
    trainer.fit(model, train, val)
    logged = trainer.callback_metrics
    with torch.no_grad():
        outputs = [(model(x), y) for x, y in val]
    pooled = road_pixel_scores(torch.cat([p for p, _ in outputs]), torch.cat([y for _, y in outputs]))
    per_batch = [road_pixel_scores(p, y)["max_f"].item() for p, y in outputs]
    assert logged["val_maxf"].item() == pytest.approx(pooled["max_f"].item(), abs=1e-6)
    assert logged["val_ap"].item() == pytest.approx(pooled["average_precision"].item(), abs=1e-6)
    assert logged["val_maxf"].item() != pytest.approx(sum(per_batch) / len(per_batch), abs=1e-6)
    assert model.val_maxf.update_count == 0  # Lightning reset the metric after the epoch
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # nothing written to disk
