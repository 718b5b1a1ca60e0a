"""Apollo 3D Lane Synthetic and ONCE-3DLanes classes logged from a LightningModule: the epoch values are the
functional kernels' on all validation frames (pooled counts, not a mean of per-batch values)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset
from torchmetrics import MetricCollection

from drivemetrics.functional import apollo3d_matches, apollo3d_scores, once3d_matches, once3d_scores
from drivemetrics.lane3d import (
    Apollo3DAveragePrecision,
    Apollo3DMaxFScore,
    Apollo3DXErrorClose,
    Apollo3DXErrorFar,
    Apollo3DZErrorClose,
    ONCE3DDistanceError,
    ONCE3DF1Score,
    ONCE3DPrecision,
    ONCE3DRecall,
)
from drivemetrics.lane3d.apollo import APOLLO_THRESHOLDS
from drivemetrics.lane3d.once import ONCE_THRESHOLDS
from drivemetrics.lane3d.packed import packed_from_padded

pl = pytest.importorskip("pytorch_lightning")
pytestmark = pytest.mark.filterwarnings("ignore:.*LeafSpec.*", "ignore:.*does not have many workers.*")

N_FRAMES = 5  # validation batches of 2, 2, 1 frames


def _data() -> TensorDataset:
    g = torch.Generator().manual_seed(48)
    # Apollo: ground frame, three GT lanes 3.5 m apart (y 4-90 m), the last hidden beyond 50 m; predictions shifted
    # 0-1.2 m sideways, 0-0.2 m up, a false lane, probabilities spread over the 19 thresholds
    y = torch.linspace(4.0, 90.0, 12)
    x = torch.tensor([-3.5, 0.0, 3.5])[:, None].expand(3, 12)
    gt = torch.stack([x, y.expand(3, -1), torch.zeros(3, 12)], -1).expand(N_FRAMES, -1, -1, -1).double()
    visibility = torch.ones(N_FRAMES, 3, 12, dtype=torch.float64)
    visibility[:, 2, 7:] = 0.0
    shift = torch.rand(N_FRAMES, 3, 1, 1, generator=g, dtype=torch.float64) * torch.tensor([1.2, 0.0, 0.2])
    preds = torch.cat([gt + shift, gt[:, :1] + torch.tensor([7.0, 0.0, 0.0])], 1)
    probs = torch.rand(N_FRAMES, 4, generator=g, dtype=torch.float64)
    # ONCE: camera frame (x right, y down, z forward), GT lanes 3.6 m apart at z 3-40 m; predictions 0-0.4 m off
    z = torch.linspace(3.0, 40.0, 12)
    cx = torch.tensor([-3.6, 0.0, 3.6])[:, None].expand(3, 12)
    once_gt = torch.stack([cx, torch.full((3, 12), 1.6), z.expand(3, -1)], -1).expand(N_FRAMES, -1, -1, -1)
    once_shift = torch.rand(N_FRAMES, 3, 1, 1, generator=g) * torch.tensor([0.4, 0.0, 0.0])
    once_preds = torch.cat([once_gt + once_shift, once_gt[:, :1] + torch.tensor([7.2, 0.0, 0.0])], 1)
    scores = 0.4 + 0.6 * torch.rand(N_FRAMES, 4, generator=g)
    return TensorDataset(preds, probs, gt.clone(), visibility, once_preds, scores, once_gt.clone())


class Lane3DModule(pl.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.zeros(()))
        self.apollo_ap = Apollo3DAveragePrecision(compat="reference")
        self.apollo_x_close = Apollo3DXErrorClose(compat="reference")
        self.once_f1 = ONCE3DF1Score(score_threshold=0.6, compat="reference")
        self.once_distance = ONCE3DDistanceError(score_threshold=0.6)
        self.apollo = MetricCollection(
            [Apollo3DMaxFScore(), Apollo3DXErrorFar(), Apollo3DZErrorClose()], prefix="apollo/"
        )
        self.once = MetricCollection(
            [ONCE3DPrecision(score_threshold=0.6), ONCE3DRecall(score_threshold=0.6)], prefix="once/"
        )

    def training_step(self, batch, batch_idx):
        loss = (self.weight - 1.0) ** 2
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        preds, probs, gt, visibility, once_preds, scores, once_gt = batch
        a_preds, a_target = {"points": preds, "scores": probs}, {"points": gt, "visibility": visibility}
        o_preds, o_target = {"points": once_preds, "scores": scores}, {"points": once_gt}
        self.apollo_ap(a_preds, a_target)
        self.apollo_x_close(a_preds, a_target)
        self.once_f1(o_preds, o_target)
        self.once_distance(o_preds, o_target)
        self.apollo.update(a_preds, a_target)
        self.once.update(o_preds, o_target)
        for name in ("apollo_ap", "apollo_x_close", "once_f1", "once_distance"):
            self.log(f"val/{name}", getattr(self, name), on_step=False, on_epoch=True)
        self.log_dict(self.apollo, on_step=False, on_epoch=True)
        self.log_dict(self.once, on_step=False, on_epoch=True)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def _apollo(preds, probs, gt, visibility, compat):
    p = packed_from_padded(preds, None, probs, name="preds")
    g = packed_from_padded(gt, None, visibility=visibility, name="target")
    out = apollo3d_matches(p, g, frames=preds.shape[0], compat=compat)
    t = len(APOLLO_THRESHOLDS)
    sums = np.zeros((t, 4))
    np.add.at(sums, out["pair_threshold"], out["pair_errors"])
    return apollo3d_scores(out["counts"].sum(0), sums, np.bincount(out["pair_threshold"], minlength=t), compat=compat)


def _once(preds, scores, gt, compat):
    p = packed_from_padded(preds, None, scores, name="preds")
    g = packed_from_padded(gt, None, name="target")
    out = once3d_matches(p, g, frames=preds.shape[0], compat=compat)
    row = next(k for k, t in enumerate(ONCE_THRESHOLDS) if abs(t - 0.6) < 1e-9)
    return {
        k: float(v[row])
        for k, v in once3d_scores(out["counts"].sum(0), out["distance_sum"].sum(0), compat=compat).items()
    }


def test_logged_lane3d_values_are_the_functional_ones(tmp_path):
    data = _data()
    model = Lane3DModule()
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
    trainer.fit(model, DataLoader(TensorDataset(torch.zeros(2, 1)), batch_size=1), DataLoader(data, batch_size=2))
    logged = {k: v.item() for k, v in trainer.callback_metrics.items()}

    preds, probs, gt, visibility, once_preds, scores, once_gt = data.tensors
    ref = _apollo(preds, probs, gt, visibility, "reference")
    fixed = _apollo(preds, probs, gt, visibility, "default")
    once_ref = _once(once_preds, scores, once_gt, "reference")
    once_fixed = _once(once_preds, scores, once_gt, "default")
    expected = {
        "val/apollo_ap": ref["ap"],
        "val/apollo_x_close": ref["x_error_close"],
        "apollo/Apollo3DMaxFScore": fixed["max_f"],
        "apollo/Apollo3DXErrorFar": fixed["x_error_far"],
        "apollo/Apollo3DZErrorClose": fixed["z_error_close"],
        "val/once_f1": once_ref["F1"],
        "val/once_distance": once_fixed["distance_error"],
        "once/ONCE3DPrecision": once_fixed["precision"],
        "once/ONCE3DRecall": once_fixed["recall"],
    }
    for name, value in expected.items():
        assert logged[name] == pytest.approx(float(value), abs=1e-6), name
    assert 0 < ref["ap"] < 1
    assert 0 < fixed["max_f"] < 1
    assert 0 < once_ref["F1"] < 1
    assert 0 < once_fixed["distance_error"] < 0.3

    # pooled over the epoch, not a mean of per-batch values
    batches = [slice(0, 2), slice(2, 4), slice(4, 5)]
    mean_ap = np.mean([_apollo(preds[b], probs[b], gt[b], visibility[b], "reference")["ap"] for b in batches])
    assert logged["val/apollo_ap"] != pytest.approx(mean_ap, abs=1e-6)
    assert len(model.apollo.compute_groups) == 1
    assert len(model.once.compute_groups) == 1
    assert model.apollo_ap.update_count == 0  # Lightning reset it after the epoch
