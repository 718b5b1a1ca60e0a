"""A row-wise lane detector trained with and without the PSLD auxiliary loss; what does PSLD buy on held-out clips?

The detector reads a synthetic lane frame (``drivemetrics.synthetic.lane_clips``: curved roads, painted lines,
the vehicle wandering in its lane) and predicts, for each TuSimple-like row ``h_samples``, a distribution over the
image columns for the ego-left and the ego-right line (row-wise classification, as UFLD-style detectors do); the
soft-argmax of each row is the line's x. Two runs with the same seeds, data and steps (PyTorch Lightning):

* ``baseline``: cross-entropy over the columns + L1 on the soft-argmax x (pixels);
* ``+ PSLD``: the same + ``psld_weight * PSLDLoss("points")`` on the soft-argmax lane points (pixels, through
  the camera homography): the differentiable per-frame simulated lateral deviation of a vehicle steered for one
  frame by the predicted lane center.

Validation logs TuSimple accuracy / F1 (``TuSimpleAccuracy``, ``TuSimpleF1Score`` in one ``MetricCollection``) and
``PSLD`` each epoch with ``self.log`` / ``self.log_dict`` on Metric objects. After training, on
held-out clips, both detectors are scored with TuSimple accuracy / FP / FN / F1 (ego lanes), PSLD (mean over
frames) and the closed-loop E2E-LD (the detector steers the simulated vehicle through the clip's synthesised
views). Run::

    python training_examples/lane_psld_aux.py --quick --json out.json --figure out.png
    python training_examples/lane_psld_aux.py --config drivemetrics/configs/lane_psld_aux.yaml --seed 1

Needs ``pip install 'drivemetrics[lightning]'``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import pytorch_lightning as pl
import torch
import torch.nn.functional as F
import yaml
from torch import Tensor, nn
from torch.utils.data import DataLoader, TensorDataset
from torchmetrics import MetricCollection

from drivemetrics.configs import config_path
from drivemetrics.functional import e2e_ld
from drivemetrics.lane import PSLD, PSLDLoss, TuSimpleAccuracy, TuSimpleF1Score, TuSimpleMetrics
from drivemetrics.lane.geometry import center_from_image_lanes, soft_argmax_rows

REPO = Path(__file__).resolve().parents[1]
CONFIG = config_path("lane_psld_aux.yaml")
TUSIMPLE_WIDTH = 1280.0  # the official 20 px point threshold is for 1280-pixel-wide images


# ------------------------------------------------------------------------------------------------------------ data


def load_clips(clips: int, frames: int, seed: int) -> dict[str, Any]:
    """Synthetic clips flattened to frames: ``images`` ``F x 1 x H x W``, ``lanes`` ``F x 2 x N`` ego-line x
    (pixels) at ``h_samples``, ``center`` ``F x M`` GT lane center (metres) at ``z_samples``, ``speed`` ``F``;
    plus the clips themselves (for E2E-LD)."""
    from drivemetrics.synthetic.lane_clips import make_lane_clips

    data = make_lane_clips(batch=clips, frames=frames, seed=seed)
    left, right = data.ego_lanes
    return {
        "images": data.images.flatten(0, 1),
        "lanes": data.lanes_image[:, :, [left, right]].flatten(0, 1).float(),
        "center": data.center_road.flatten(0, 1),
        "speed": data.speed[:, None].expand(clips, frames).flatten(),
        "clips": data,
    }


# ----------------------------------------------------------------------------------------------------------- model


class RowLaneNet(nn.Module):
    """``B x 1 x H x W`` frame -> ``B x 2 x N x W/d`` row-wise column logits of the ego-left / ego-right lines.

    Dilated convolutions on the frame averaged down by ``d = downsample`` (plus coordinate channels); the feature
    rows at the ``h_samples`` rows are mapped to two logit channels over the low-resolution columns.
    """

    def __init__(self, h_samples: Tensor, width: int = 16, downsample: int = 4) -> None:
        super().__init__()
        self.downsample = downsample
        layers: list[nn.Module] = []
        channels = 3
        for dilation in (1, 2, 4, 8):
            layers += [nn.Conv2d(channels, width, 3, padding=dilation, dilation=dilation), nn.ReLU()]
            channels = width
        self.features = nn.Sequential(*layers)
        self.head = nn.Conv2d(width, 2, 1)
        self.register_buffer("rows", (h_samples.double() / downsample).floor().long(), persistent=False)

    def forward(self, images: Tensor) -> Tensor:
        x = F.avg_pool2d(images, self.downsample)
        b, _, h, w = x.shape
        v = torch.linspace(-1, 1, h, device=x.device, dtype=x.dtype)[:, None].expand(h, w)
        u = torch.linspace(-1, 1, w, device=x.device, dtype=x.dtype)[None, :].expand(h, w)
        feats = self.features(torch.cat([x, torch.stack([u, v]).expand(b, 2, h, w)], 1))
        return self.head(feats[:, :, self.rows])  # B x 2 x N x W/d

    def to_pixels(self, logits: Tensor) -> Tensor:
        """Soft-argmax column of the low-resolution logits, in full-resolution pixels (``B x 2 x N``)."""
        return self.downsample * soft_argmax_rows(logits) + (self.downsample - 1) / 2


class LaneDetector(pl.LightningModule):
    """The row-wise detector; ``psld_weight > 0`` adds the PSLD auxiliary loss.

    Args:
        h_samples: ``N`` rows (pixels). image_from_road: ``3 x 3`` camera homography. z_samples: ``M`` distances
            (metres) of the GT center profiles. width: channels. downsample: input pooling factor (and column
            bin width, pixels). lr: Adam learning rate.
        psld_weight: weight of ``PSLDLoss`` (0: baseline). horizon_frames: PSLD horizon (frames at 20 Hz).
        image_width: frame width (pixels), to scale TuSimple's 20 px threshold.
    """

    def __init__(
        self,
        h_samples: Tensor,
        image_from_road: Tensor,
        z_samples: Tensor,
        width: int = 16,
        downsample: int = 4,
        lr: float = 3e-3,
        psld_weight: float = 0.0,
        horizon_frames: int = 10,
        image_width: int = 256,
    ) -> None:
        super().__init__()
        self.save_hyperparameters(ignore=["h_samples", "image_from_road", "z_samples"])
        self.net = RowLaneNet(h_samples, width, downsample)
        self.register_buffer("h_samples", h_samples.double(), persistent=False)
        self.register_buffer("image_from_road", image_from_road.double(), persistent=False)
        self.register_buffer("z_samples", z_samples.double(), persistent=False)
        self.psld_loss = PSLDLoss("points", z_samples=z_samples.double(), horizon_frames=horizon_frames)
        threshold = 20.0 * image_width / TUSIMPLE_WIDTH
        self.pixel_threshold = threshold
        self.val_tusimple = MetricCollection(
            {
                "tusimple_accuracy": TuSimpleAccuracy(pixel_threshold=threshold),
                "tusimple_f1": TuSimpleF1Score(pixel_threshold=threshold),
            },
            prefix="val/",
            compute_groups=[["tusimple_accuracy", "tusimple_f1"]],
        )
        self.val_psld = PSLD(z_samples=z_samples.double(), horizon_frames=horizon_frames)

    def lanes_uv(self, logits: Tensor) -> Tensor:
        """``B x 2 x N x 2`` lane points ``(u, v)`` in pixels (float64) from the row logits."""
        u = self.net.to_pixels(logits.double())
        return torch.stack([u, self.h_samples.expand_as(u)], -1)

    def center(self, logits: Tensor) -> Tensor:
        """Predicted lane-center profile ``B x M`` (metres) at ``z_samples``."""
        return center_from_image_lanes(self.lanes_uv(logits), self.image_from_road, self.z_samples)

    def detect(self, images: Tensor) -> Tensor:
        """Detector interface of :func:`~drivemetrics.lane.e2e.e2e_ld`: images -> ``B x 2 x N x 2`` points."""
        with torch.no_grad():
            return self.lanes_uv(self.net(images.float()))

    def training_step(self, batch: tuple[Tensor, ...], batch_idx: int) -> Tensor:
        images, lanes, center, speed = batch
        logits = self.net(images)
        d = self.net.downsample
        seen = ~torch.isnan(lanes)  # a GT line can leave the image on a sharp curve: those points are not trained
        target_bin = ((lanes - (d - 1) / 2) / d).round().clamp(0, logits.shape[-1] - 1).long()
        target_bin = torch.where(seen, target_bin, -100)  # cross_entropy's ignore_index
        ce = F.cross_entropy(logits.flatten(0, 2), target_bin.flatten())
        l1 = (self.net.to_pixels(logits) - lanes)[seen].abs().mean() / 10.0  # pixels / 10
        loss = ce + l1
        self.log("train/ce", ce)
        self.log("train/l1_px", l1 * 10.0)
        if self.hparams.psld_weight > 0:
            aux = self.psld_loss(self.lanes_uv(logits), center, speed=speed, image_from_road=self.image_from_road)
            self.log("train/psld_loss", aux)
            loss = loss + self.hparams.psld_weight * aux
        self.log("train/loss", loss)
        return loss

    def validation_step(self, batch: tuple[Tensor, ...], batch_idx: int) -> None:
        images, lanes, center, speed = batch
        logits = self.net(images)
        x = self.net.to_pixels(logits)
        self.val_tusimple.update(x, lanes, h_samples=self.h_samples)
        self.log_dict(self.val_tusimple)
        self.val_psld.update(self.center(logits), center, speed=speed)
        self.log("val/psld", self.val_psld)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)


# ---------------------------------------------------------------------------------------------------- run and report


def held_out_scores(model: LaneDetector, test: dict[str, Any], e2e_frames: int) -> dict[str, float]:
    """TuSimple accuracy / FP / FN / F1, PSLD and E2E-LD of a trained detector on held-out clips."""
    model.eval()
    with torch.no_grad():
        logits = torch.cat([model.net(chunk) for chunk in test["images"].split(64)])
        tusimple = TuSimpleMetrics(pixel_threshold=model.pixel_threshold)
        tusimple.update(model.net.to_pixels(logits), test["lanes"], h_samples=model.h_samples)
        psld = PSLD(z_samples=model.z_samples, horizon_frames=model.hparams.horizon_frames)
        psld.update(model.center(logits), test["center"], speed=test["speed"])
        clips = test["clips"]
        e2e = e2e_ld(
            clips.images,
            clips.center_road,
            speed=clips.speed,
            detector=model.detect,
            image_from_road=clips.image_from_road,
            recorded_poses=clips.poses,
            frames=e2e_frames,
            z_samples=clips.z_samples,
        )
    scores = {f"tusimple_{k}": float(v) for k, v in tusimple.compute().items()}
    return {**scores, "psld": float(psld.compute()), "e2e_ld": float(e2e.mean()), "e2e_ld_max": float(e2e.max())}


def train_one(config: dict[str, Any], psld_weight: float, train: dict[str, Any], val: dict[str, Any]) -> LaneDetector:
    """Train one detector (seeded by ``config["seed"]``, so both runs start from the same weights and batches)."""
    pl.seed_everything(config["seed"], verbose=False)
    clips = train["clips"]
    model = LaneDetector(clips.h_samples, clips.image_from_road, clips.z_samples, psld_weight=psld_weight,
                         **config["model"])  # fmt: skip
    loader_gen = torch.Generator().manual_seed(config["seed"])
    keys = ("images", "lanes", "center", "speed")
    train_loader = DataLoader(
        TensorDataset(*(train[k] for k in keys)), batch_size=config["batch_size"], shuffle=True, generator=loader_gen
    )
    val_loader = DataLoader(TensorDataset(*(val[k] for k in keys)), batch_size=64)
    trainer = pl.Trainer(
        accelerator="cpu",
        devices=1,
        max_epochs=config["max_epochs"],
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
        default_root_dir=REPO / "examples_out" / "lane_psld_aux",
    )
    trainer.fit(model, train_loader, val_loader)
    model.history = {k: float(v) for k, v in trainer.callback_metrics.items()}  # type: ignore[attr-defined]
    return model


def write_json(path: str | Path, payload: dict[str, Any]) -> None:
    """Write ``payload`` atomically (temp file in the target folder, then rename)."""
    from drivemetrics._internal.files import atomic_write_text

    atomic_write_text(path, json.dumps(payload, indent=2, sort_keys=True) + "\n")


def save_figure(path: str | Path, models: dict[str, LaneDetector], test: dict[str, Any], scores: dict) -> None:
    """A held-out frame with both detectors' lanes, and the held-out scores side by side."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 3.4), gridspec_kw={"width_ratios": [1.6, 1]})
    frame = test["images"][7]
    axes[0].imshow(frame[0].numpy(), cmap="gray", vmin=0, vmax=1)
    rows = test["clips"].h_samples.numpy()
    for i, lane in enumerate(test["lanes"][7]):
        axes[0].plot(lane.numpy(), rows, "-", color="lime", lw=2.5, label="ground truth" if i == 0 else None)
    for (name, model), colour in zip(models.items(), ("tab:orange", "tab:red"), strict=True):
        with torch.no_grad():
            x = model.net.to_pixels(model.net(frame[None]))[0]
        for i, lane in enumerate(x):
            axes[0].plot(lane.numpy(), rows, "o", ms=2.5, color=colour, label=name if i == 0 else None)
    axes[0].legend(loc="lower left", fontsize=8)
    axes[0].set_title("held-out frame: ego lines")
    axes[0].axis("off")
    names = ("tusimple_accuracy", "tusimple_f1", "psld", "e2e_ld")
    width = 0.38
    for i, (name, colour) in enumerate(zip(scores, ("tab:orange", "tab:red"), strict=True)):
        values = [scores[name][k] * (100 if k in ("psld", "e2e_ld") else 1) for k in names]
        bars = axes[1].bar([j + (i - 0.5) * width for j in range(len(names))], values, width, color=colour, label=name)
        axes[1].bar_label(bars, fmt="%.3f", fontsize=7)
    axes[1].set_xticks(range(len(names)), ["TuSimple acc", "TuSimple F1", "PSLD [cm]", "E2E-LD [cm]"], fontsize=8)
    axes[1].legend(fontsize=8)
    axes[1].set_title("held-out clips")
    fig.tight_layout()
    from drivemetrics._internal.files import atomic_save_figure

    atomic_save_figure(fig, path, dpi=110)  # creates missing folders
    plt.close(fig)


def load_config(path: str | Path, quick: bool) -> dict[str, Any]:
    """The YAML config; ``quick`` applies its ``quick:`` overrides."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"config file not found: {path}")
    config = yaml.safe_load(path.read_text())
    quick_overrides = config.pop("quick", {}) or {}
    if quick:
        for key, value in quick_overrides.items():
            if isinstance(value, dict):
                config[key] = {**config.get(key, {}), **value}
            else:
                config[key] = value
    required = ("seed", "psld_weight", "max_epochs", "batch_size", "train", "val", "test", "e2e_frames", "model")
    missing = [k for k in required if k not in config]
    if missing:
        raise ValueError(f"{path}: missing keys {', '.join(missing)}")
    return config


def run(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the example (arguments as on the command line); ``--quick`` runs on one CPU thread (small tensors: a
    second thread costs more than it saves), restored afterwards."""
    argv = sys.argv[1:] if argv is None else argv
    threads = torch.get_num_threads()
    if "--quick" in argv:
        torch.set_num_threads(1)
    try:
        return _run(argv)
    finally:
        torch.set_num_threads(threads)


def _run(argv: list[str]) -> dict[str, Any]:
    """Train both detectors and return (and optionally write) the held-out scores."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default=str(CONFIG), help="YAML config (default: the shipped lane_psld_aux.yaml)")
    parser.add_argument("--quick", action="store_true", help="a short CPU run (well under a minute)")
    parser.add_argument("--json", metavar="PATH", help="write the final metrics to this JSON file")
    parser.add_argument("--figure", metavar="PATH", help="save a PNG: a held-out frame and the scores")
    parser.add_argument("--seed", type=int, help="override the config's seed")
    parser.add_argument("--psld-weight", type=float, help="override the config's PSLD loss weight")
    args = parser.parse_args(argv)
    config = load_config(args.config, args.quick)
    if args.seed is not None:
        config["seed"] = args.seed
    if args.psld_weight is not None:
        config["psld_weight"] = args.psld_weight
    if not config["psld_weight"] > 0:
        raise ValueError(f"psld_weight must be > 0 (the baseline is the run without it), got {config['psld_weight']}")

    start = time.perf_counter()
    seed = config["seed"]
    train = load_clips(config["train"]["clips"], config["train"]["frames"], seed=1000 + seed)
    val = load_clips(config["val"]["clips"], config["val"]["frames"], seed=2000 + seed)
    test = load_clips(config["test"]["clips"], config["test"]["frames"], seed=3000 + seed)
    models = {
        "baseline": train_one(config, 0.0, train, val),
        "+ PSLD": train_one(config, config["psld_weight"], train, val),
    }
    scores = {name: held_out_scores(model, test, config["e2e_frames"]) for name, model in models.items()}
    result = {
        "example": "lane_psld_aux",
        "quick": args.quick,
        "config": {k: v for k, v in config.items() if k != "quick"},
        "held_out_frames": len(test["images"]),
        "seconds": round(time.perf_counter() - start, 2),
        "baseline": scores["baseline"],
        "psld_aux": scores["+ PSLD"],
        "last_validation": {"baseline": models["baseline"].history, "psld_aux": models["+ PSLD"].history},
    }
    if args.json:
        write_json(args.json, result)
    if args.figure:
        save_figure(args.figure, models, test, {"baseline": scores["baseline"], "+ PSLD": scores["+ PSLD"]})
    return result


def main() -> None:
    result = run()
    names = list(result["baseline"])
    print(f"{'held-out':<20} {'baseline':>10} {'+ PSLD':>10}")
    for name in names:
        print(f"{name:<20} {result['baseline'][name]:10.4f} {result['psld_aux'][name]:10.4f}")
    print(f"({result['held_out_frames']} held-out frames, {result['seconds']:.1f} s)")


if __name__ == "__main__":
    main()
