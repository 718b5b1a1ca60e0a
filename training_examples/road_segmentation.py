"""Road segmentation under Lightning, logging the KITTI-ROAD metrics and the driving corridor every validation epoch.

A small convolutional net predicts two maps per image, road and ego lane, and is trained with the soft F-measure
loss (``SoftFMeasureLoss``; in the image or on the road plane, ``--model.loss_space bev``). Data: the library's
synthetic KITTI-like scenes (each frame with its own camera height and pitch, so its own road homography), or a
KITTI-ROAD folder (``--data.root DIR`` with ``image_2/``, ``gt_image_2/``, ``calib/``; frames are downscaled and
the homography from each frame's calibration is scaled with them). Each validation epoch logs, with ``self.log`` /
``self.log_dict`` on Metric objects (Lightning syncs them across processes, computes and resets them):

* ``val/maxf``, ``val/ap``, ``val/bev_maxf``, ``val/bev_ap``: one ``MetricCollection`` of ``RoadPixelMaxFScore`` /
  ``RoadPixelAveragePrecision`` in perspective and BEV (per-frame homographies passed to ``update``);
* ``val/corridor_*``: driving-corridor lateral precision, longitudinal F1 and hitrate at 20 / 30 / 40 m of the
  predicted ego lane (warped to BEV): ``DrivingCorridorLateralPrecision``, ``DrivingCorridorLongitudinalF1Score``,
  ``DrivingCorridorHitRate``, which share ``DrivingCorridorMetrics``'s counters (one corridor fit per batch);
* ``val/soft_f_loss``: the training loss on the validation frames (``MeanMetric``).

Run (``LightningCLI``; defaults from ``drivemetrics/configs/road_segmentation.yaml``;
``drivemetrics config road_segmentation`` prints it)::

    python training_examples/road_segmentation.py --quick --json out.json --figure out.png
    python training_examples/road_segmentation.py --model.loss_space bev --trainer.max_epochs 20
    python training_examples/road_segmentation.py --data.root /data/kitti_road   # a KITTI-ROAD folder
    python training_examples/road_segmentation.py --trainer.devices 2 --trainer.strategy ddp_spawn  # DDP (gloo)

``--ckpt_path FILE`` resumes from a Lightning checkpoint. Needs ``pip install 'drivemetrics[lightning]'``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any, Literal

import pytorch_lightning as pl
import torch
import torch.nn.functional as F
from pytorch_lightning.cli import LightningCLI
from torch import Tensor, nn
from torch.utils.data import DataLoader, Dataset
from torchmetrics import MeanMetric, MetricCollection

from drivemetrics.configs import config_path
from drivemetrics.geometry import BevGrid, image_from_road_homography, intrinsic_matrix
from drivemetrics.road import (
    CorridorConfig,
    DrivingCorridorHitRate,
    DrivingCorridorLateralPrecision,
    DrivingCorridorLongitudinalF1Score,
    RoadPixelAveragePrecision,
    RoadPixelMaxFScore,
    SoftFMeasureLoss,
)
from drivemetrics.road.bev_inputs import pixel_inputs_to_bev

CONFIG = config_path("road_segmentation.yaml")
KITTI_SIZE = (375, 1242)  # (H, W) of a KITTI-ROAD image; frames are resized to image_scale times this
KITTI_CAMERA = {"focal": 721.5377, "cx": 609.5593, "cy": 172.854, "height": 1.65}
QUICK_ARGS = [
    "--trainer.enable_checkpointing=false",
    "--trainer.max_epochs=8",
    "--data.train_frames=64",
    "--data.val_frames=16",
]


# ------------------------------------------------------------------------------------------------------------ data


class FrameDataset(Dataset):
    """Frames stored as tensors with a common first dimension; items are dicts of one frame each."""

    def __init__(self, tensors: dict[str, Tensor]) -> None:
        sizes = {len(t) for t in tensors.values()}
        if len(sizes) != 1:
            raise ValueError(f"all tensors must have the same number of frames, got {sizes}")
        self.tensors = tensors

    def __len__(self) -> int:
        return len(next(iter(self.tensors.values())))

    def __getitem__(self, index: int) -> dict[str, Tensor]:
        return {key: value[index] for key, value in self.tensors.items()}


def camera_image(road: Tensor, lane: Tensor, sidewalk: Tensor, on_ground: Tensor, gen: torch.Generator) -> Tensor:
    """A ``B x 3 x H x W`` RGB rendering of the masks: sky, grass, sidewalk, asphalt, white ego-lane lines, noise."""
    b, h, w = road.shape
    colour = torch.empty(b, 3, h, w)
    colour[:] = torch.tensor([0.30, 0.42, 0.20])[:, None, None]  # grass
    for mask, rgb in ((sidewalk, (0.62, 0.60, 0.56)), (road, (0.36, 0.36, 0.38)), (~on_ground, (0.60, 0.72, 0.92))):
        colour = torch.where(mask[:, None], torch.tensor(rgb)[:, None, None], colour)
    edge = lane & ~(torch.roll(lane, 1, -1) & torch.roll(lane, -1, -1))  # the lane's left / right border pixels
    colour = torch.where(edge[:, None], torch.tensor(0.92), colour)
    brightness = 0.8 + 0.4 * torch.rand(b, 1, 1, 1, generator=gen)
    return (colour * brightness + 0.06 * torch.randn(b, 3, h, w, generator=gen)).clamp(0, 1)


def synthetic_frames(count: int, seed: int, image_scale: float) -> dict[str, Tensor]:
    """Synthetic KITTI-like frames at ``image_scale`` of the KITTI size, each with its own camera.

    Returns ``image`` ``B x 3 x H x W`` float, ``road`` / ``lane`` / ``valid`` ``B x H x W`` bool and
    ``homography`` ``B x 3 x 3`` float64 (image-from-road of each frame).
    """
    from drivemetrics.synthetic import render_perspective, sample_road_geometry

    gen = torch.Generator().manual_seed(seed)
    size = (round(KITTI_SIZE[0] * image_scale), round(KITTI_SIZE[1] * image_scale))
    f = KITTI_CAMERA["focal"] * image_scale
    cx, cy = (KITTI_CAMERA["cx"] + 0.5) * image_scale - 0.5, (KITTI_CAMERA["cy"] + 0.5) * image_scale - 0.5
    height = KITTI_CAMERA["height"] + 0.08 * (torch.rand(count, generator=gen, dtype=torch.float64) - 0.5)
    pitch = 0.02 * (torch.rand(count, generator=gen, dtype=torch.float64) - 0.5)  # radians
    homography = image_from_road_homography(intrinsic_matrix(f, f, cx, cy).double(), height, pitch)
    geometry = sample_road_geometry(count, gen, kinds=("straight", "curve", "clothoid", "s_curve"))
    scene = render_perspective(geometry, homography, size)
    image = camera_image(scene.road, scene.lane, scene.sidewalk, scene.on_ground, gen)
    return {"image": image, "road": scene.road, "lane": scene.lane, "valid": scene.valid, "homography": homography}


def kitti_frames(root: str | Path, image_scale: float) -> dict[str, Tensor]:
    """The frames of a KITTI-ROAD folder, resized to ``image_scale`` of the KITTI size; tensors as
    :func:`synthetic_frames`, plus ``has_lane`` ``B`` bool (an ``um_lane`` ground truth exists; else ``lane`` is
    empty and that frame's lane is neither trained nor scored)."""
    import numpy as np

    from drivemetrics._internal.files import load_image
    from drivemetrics.geometry import image_from_road_calib, read_kitti_calib
    from drivemetrics.road.io import calib_file_for, category_frames, find_layout, gt_masks, read_gt_png

    layout = find_layout(root, need_calib=True)
    keys = [k for cat in ("um_road", "umm_road", "uu_road") for k in category_frames(layout.gt_dir, cat)]
    if not keys:
        raise ValueError(f"no um_road / umm_road / uu_road ground truth in {layout.gt_dir}")
    size = (round(KITTI_SIZE[0] * image_scale), round(KITTI_SIZE[1] * image_scale))
    out: dict[str, list[Tensor]] = {k: [] for k in ("image", "road", "lane", "valid", "homography", "has_lane")}
    for key in keys:
        cat, _, number = key.split("_")
        image_path = layout.root / "image_2" / f"{cat}_{number}.png"
        if not image_path.is_file():
            raise FileNotFoundError(f"camera image missing for {key}: {image_path}")
        pixels = np.array(load_image(image_path, what="camera image").convert("RGB"))  # a writable copy
        rgb = torch.from_numpy(pixels).permute(2, 0, 1).float() / 255
        h, w = rgb.shape[-2:]
        road, valid = gt_masks(read_gt_png(layout.gt_dir / f"{key}.png"))
        lane_path = layout.gt_dir / f"{cat}_lane_{number}.png"
        lane = gt_masks(read_gt_png(lane_path))[0] if lane_path.is_file() else torch.zeros_like(road)
        sx, sy = size[1] / w, size[0] / h
        scale = torch.tensor([[sx, 0, 0.5 * sx - 0.5], [0, sy, 0.5 * sy - 0.5], [0, 0, 1]], dtype=torch.float64)
        calib = read_kitti_calib(calib_file_for(layout.calib_dir, key))
        out["homography"].append(scale @ image_from_road_calib(calib))
        out["image"].append(F.interpolate(rgb[None], size=size, mode="bilinear", antialias=True)[0])
        masks = torch.stack([road, lane, valid]).float()[None]
        road, lane, valid = (F.interpolate(masks, size=size, mode="nearest")[0] > 0.5).unbind(0)
        out["road"].append(road)
        out["lane"].append(lane)
        out["valid"].append(valid)
        out["has_lane"].append(torch.tensor(lane_path.is_file()))
    return {k: torch.stack(v) for k, v in out.items()}


class RoadDataModule(pl.LightningDataModule):
    """Synthetic KITTI-like scenes (default) or a KITTI-ROAD folder.

    Args:
        root: a KITTI-ROAD folder (``image_2``, ``gt_image_2``, ``calib``, or a ``training/`` folder holding
            them); ``None``: synthetic scenes.
        image_scale: frames are resized to this fraction of the KITTI size (375 x 1242).
        train_frames, val_frames: number of synthetic frames (ignored with ``root``).
        val_every: with ``root``, every ``val_every``-th frame is held out for validation (all frames are used for
            both when there are fewer than ``val_every``).
        batch_size: frames per batch (per process).
        seed: seed of the synthetic scenes (validation uses ``seed + 1``).
    """

    def __init__(
        self,
        root: str | None = None,
        image_scale: float = 0.125,
        train_frames: int = 128,
        val_frames: int = 16,
        val_every: int = 4,
        batch_size: int = 8,
        seed: int = 0,
    ) -> None:
        super().__init__()
        if not 0 < image_scale <= 1:
            raise ValueError(f"`image_scale` must lie in (0, 1], got {image_scale}")
        self.save_hyperparameters()
        self.train_set: FrameDataset | None = None
        self.val_set: FrameDataset | None = None

    def setup(self, stage: str | None = None) -> None:
        if self.train_set is not None:
            return
        hp = self.hparams
        if hp.root is None:
            self.train_set = FrameDataset(synthetic_frames(hp.train_frames, hp.seed, hp.image_scale))
            self.val_set = FrameDataset(synthetic_frames(hp.val_frames, hp.seed + 1, hp.image_scale))
            return
        frames = kitti_frames(hp.root, hp.image_scale)
        count = len(frames["image"])
        held_out = torch.arange(count) % hp.val_every == hp.val_every - 1
        if count < hp.val_every:
            held_out = torch.ones(count, dtype=torch.bool)
            self.train_set = FrameDataset(frames)
        else:
            self.train_set = FrameDataset({k: v[~held_out] for k, v in frames.items()})
        self.val_set = FrameDataset({k: v[held_out] for k, v in frames.items()})

    def train_dataloader(self) -> DataLoader:
        # no shuffling: the synthetic frames are already random, and a resumed run then sees the same batches
        return DataLoader(self.train_set, batch_size=self.hparams.batch_size, shuffle=False)

    def val_dataloader(self) -> DataLoader:
        return DataLoader(self.val_set, batch_size=self.hparams.batch_size, shuffle=False)


# ----------------------------------------------------------------------------------------------------------- model


class TinySegNet(nn.Module):
    """RGB + normalised pixel coordinates -> 2 logit maps (road, ego lane); dilated 3 x 3 convolutions."""

    def __init__(self, width: int = 16) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        channels = 5
        for dilation in (1, 2, 4, 8, 1):
            layers += [nn.Conv2d(channels, width, 3, padding=dilation, dilation=dilation), nn.ReLU()]
            channels = width
        layers.append(nn.Conv2d(width, 2, 1))
        self.net = nn.Sequential(*layers)

    def forward(self, image: Tensor) -> Tensor:
        b, _, h, w = image.shape
        v = torch.linspace(-1, 1, h, device=image.device, dtype=image.dtype)[:, None].expand(h, w)
        u = torch.linspace(-1, 1, w, device=image.device, dtype=image.dtype)[None, :].expand(h, w)
        coords = torch.stack([u, v]).expand(b, 2, h, w)
        return self.net(torch.cat([image, coords], 1))


class RoadSegmenter(pl.LightningModule):
    """Road + ego-lane segmentation trained with the soft F-measure loss; logs the KITTI-ROAD and corridor metrics.

    Args:
        loss_space: ``"perspective"`` or ``"bev"``: where the soft F-measure loss is measured.
        lane_weight: weight of the ego-lane loss next to the road loss.
        lr: Adam learning rate.
        width: channels of the net.
        bev_resolution: cell size (metres) of the BEV grid (the KITTI extent, X in [-10, 10], Z in [6, 46] m).
        corridor_threshold: ego-lane confidence threshold of the driving-corridor fit.
    """

    def __init__(
        self,
        loss_space: Literal["perspective", "bev"] = "perspective",
        lane_weight: float = 1.0,
        lr: float = 0.01,
        width: int = 12,
        bev_resolution: float = 0.25,
        corridor_threshold: float = 0.5,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.grid = BevGrid(resolution=bev_resolution)
        self.net = TinySegNet(width)
        self.loss_fn = SoftFMeasureLoss(from_logits=True, space=loss_space, grid=self.grid, reduction="none")
        grid = self.grid
        self.val_pixel = MetricCollection(
            {
                "maxf": RoadPixelMaxFScore(),
                "ap": RoadPixelAveragePrecision(),
                "bev_maxf": RoadPixelMaxFScore(space="bev", grid=grid),
                "bev_ap": RoadPixelAveragePrecision(space="bev", grid=grid),
            },
            prefix="val/",
            compute_groups=[["maxf", "ap"], ["bev_maxf", "bev_ap"]],  # one count per space, from the first batch
        )
        config = CorridorConfig()
        classes = {
            "precision_lat": DrivingCorridorLateralPrecision,
            "f1_long": DrivingCorridorLongitudinalF1Score,
            "hitrate": DrivingCorridorHitRate,
        }
        scores = {
            f"corridor_{name}_{d:g}m": cls(corridor_threshold, grid, config, distance=d)
            for name, cls in classes.items()
            for d in config.distances
        }
        self.val_corridor = MetricCollection(scores, prefix="val/", compute_groups=[list(scores)])  # one fit
        self.val_loss = MeanMetric()

    def forward(self, image: Tensor) -> Tensor:
        """``B x 2 x H x W`` probabilities (road, ego lane)."""
        return torch.sigmoid(self.net(image))

    def _loss(self, logits: Tensor, batch: dict[str, Tensor]) -> Tensor:
        valid, homography = batch["valid"], batch["homography"]
        homography = homography if self.hparams.loss_space == "bev" else None
        road = self.loss_fn(logits[:, 0], batch["road"], valid=valid, homography=homography)
        has_lane = batch.get("has_lane", torch.ones_like(road, dtype=torch.bool))
        lane = self.loss_fn(logits[:, 1], batch["lane"], valid=valid & has_lane[:, None, None], homography=homography)
        lane = (lane * has_lane).sum() / has_lane.sum().clamp_min(1)
        return road.mean() + self.hparams.lane_weight * lane

    def training_step(self, batch: dict[str, Tensor], batch_idx: int) -> Tensor:
        loss = self._loss(self.net(batch["image"]), batch)
        self.log("train/soft_f_loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch: dict[str, Tensor], batch_idx: int) -> None:
        logits = self.net(batch["image"])
        probs = torch.sigmoid(logits)
        valid, homography = batch["valid"], batch["homography"]
        self.val_loss.update(self._loss(logits, batch), weight=len(logits))
        self.log("val/soft_f_loss", self.val_loss)
        self.val_pixel.update(probs[:, 0], batch["road"], valid=valid, homography=homography)
        self.log_dict(self.val_pixel)
        has_lane = batch.get("has_lane", torch.ones(len(logits), dtype=torch.bool, device=logits.device))
        lane, lane_gt, lane_valid = pixel_inputs_to_bev(probs[:, 1], batch["lane"], valid, homography, self.grid)
        # frames with a lane ground truth (KITTI: um_lane); a batch without any adds nothing
        self.val_corridor.update(lane[has_lane], lane_gt[has_lane], valid=lane_valid[has_lane])
        # logged in every step: under DDP every rank must log (and so sync) the same metrics
        self.log_dict(self.val_corridor)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)


# ---------------------------------------------------------------------------------------------------- run and report


class MetricHistory(pl.Callback):
    """Keeps the logged ``val/*`` values of every validation epoch and the epochs / steps trained (for the JSON and
    the figure).

    Under ``ddp_spawn`` the training runs in child processes, so the main process's trainer and callback see none of
    it: at the end of the fit, rank 0 writes ``history``, ``epochs`` and ``global_steps`` to ``share`` (a JSON file),
    which :meth:`trained` reads back in the main process.
    """

    def __init__(self, share: Path | None = None) -> None:
        self.share = share
        self.epochs: list[dict[str, float]] = []
        self.summary: dict[str, Any] = {"epochs": 0, "global_steps": 0, "history": self.epochs}

    def on_validation_epoch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if trainer.sanity_checking:
            return
        values = {k: float(v) for k, v in trainer.callback_metrics.items() if k.startswith("val/")}
        self.epochs.append({"epoch": trainer.current_epoch, **values})

    def on_fit_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self.summary = {"epochs": trainer.current_epoch, "global_steps": trainer.global_step, "history": self.epochs}
        if self.share is not None and trainer.is_global_zero:
            write_json(self.share, self.summary)

    def trained(self) -> dict[str, Any]:
        """``epochs``, ``global_steps`` and ``history`` of the fit: rank 0's from ``share`` when it wrote them
        there (a spawned run), else this process's own."""
        if self.share is not None and self.share.is_file() and self.share.stat().st_size > 0:
            return json.loads(self.share.read_text())
        return self.summary


def write_json(path: str | Path, payload: dict[str, Any]) -> None:
    """Write ``payload`` atomically (temp file in the target folder, then rename)."""
    from drivemetrics._internal.files import atomic_write_text

    atomic_write_text(path, json.dumps(payload, indent=2, sort_keys=True) + "\n")


def save_figure(path: str | Path, model: RoadSegmenter, data: RoadDataModule, history: list[dict[str, float]]) -> None:
    """One validation frame with the predicted road / ego lane, and the logged metrics over the epochs."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data.setup("validate")  # after a ddp_spawn run the main process has not built the data yet
    frame = data.val_set[0]
    with torch.no_grad():
        probs = model(frame["image"][None].to(model.device))[0].cpu()
    fig, axes = plt.subplots(1, 2, figsize=(12, 3.2), gridspec_kw={"width_ratios": [2.2, 1]})
    overlay = frame["image"].permute(1, 2, 0).clone()
    overlay[..., 2] = torch.maximum(overlay[..., 2], probs[0])  # road in blue
    overlay[..., 0] = torch.maximum(overlay[..., 0], probs[1])  # ego lane in red
    axes[0].imshow(overlay.numpy())
    axes[0].set_title("validation frame: predicted road (blue) and ego lane (red)")
    axes[0].axis("off")
    epochs = [h["epoch"] + 1 for h in history]
    for key in ("val/maxf", "val/bev_maxf", "val/corridor_hitrate_30m", "val/corridor_precision_lat_30m"):
        axes[1].plot(epochs, [h[key] for h in history], marker="o", label=key.removeprefix("val/"))
    axes[1].set_xlabel("epoch")
    axes[1].set_ylim(0, 1.02)
    axes[1].legend(loc="lower right", fontsize=8)
    axes[1].set_title("logged each validation epoch")
    fig.tight_layout()
    from drivemetrics._internal.files import atomic_save_figure

    atomic_save_figure(fig, path, dpi=110)  # creates missing folders
    plt.close(fig)


def run(argv: list[str] | None = None) -> tuple[LightningCLI, dict[str, Any]]:
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


def _run(argv: list[str]) -> tuple[LightningCLI, dict[str, Any]]:
    """Parse the arguments, train, and return the CLI object and the final metrics (also written by ``--json``)."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--quick", action="store_true", help="a short CPU run (well under a minute)")
    parser.add_argument("--json", metavar="PATH", help="write the final metrics to this JSON file")
    parser.add_argument("--figure", metavar="PATH", help="save a PNG: a validation frame and the metric curves")
    parser.add_argument("--ckpt_path", metavar="FILE", help="resume training from this Lightning checkpoint")
    ours, rest = parser.parse_known_args(argv)
    handle, share = tempfile.mkstemp(prefix="road_segmentation_", suffix=".json")  # rank 0's history (ddp_spawn)
    os.close(handle)
    try:
        return _fit(ours, rest, MetricHistory(Path(share)))
    finally:
        Path(share).unlink(missing_ok=True)


def _fit(ours: argparse.Namespace, rest: list[str], history: MetricHistory) -> tuple[LightningCLI, dict[str, Any]]:
    """Build the ``LightningCLI``, train, and collect the result."""
    with warnings.catch_warnings():  # we always pass `args` (our own flags are taken out): not a mistake here
        warnings.filterwarnings("ignore", message=".*LightningCLI's args parameter.*")
        cli = LightningCLI(
            RoadSegmenter,
            RoadDataModule,
            args=(QUICK_ARGS if ours.quick else []) + rest,  # explicit arguments win over --quick
            run=False,
            parser_kwargs={"default_config_files": [str(CONFIG)]},
            trainer_defaults={"callbacks": [history]},
            save_config_callback=None,
        )
    start = time.perf_counter()
    cli.trainer.fit(cli.model, datamodule=cli.datamodule, ckpt_path=ours.ckpt_path)
    seconds = time.perf_counter() - start
    final = {k: float(v) for k, v in cli.trainer.callback_metrics.items() if k.startswith("val/")}
    trained = history.trained()
    result = {
        "example": "road_segmentation",
        "quick": ours.quick,
        "data": "synthetic" if cli.datamodule.hparams.root is None else str(cli.datamodule.hparams.root),
        "loss_space": cli.model.hparams.loss_space,
        "epochs": trained["epochs"],
        "global_steps": trained["global_steps"],
        "world_size": cli.trainer.world_size,
        "seconds": round(seconds, 2),
        "final": final,
        "history": trained["history"],
    }
    if cli.trainer.is_global_zero:
        if ours.json:
            write_json(ours.json, result)
        if ours.figure:
            save_figure(ours.figure, cli.model, cli.datamodule, trained["history"])
    return cli, result


def main() -> None:
    _, result = run()
    width = max(len(k) for k in result["final"])
    for key, value in sorted(result["final"].items()):
        print(f"{key:<{width}}  {value:.4f}")
    print(f"({result['epochs']} epochs, {result['global_steps']} steps, {result['seconds']:.1f} s)")


if __name__ == "__main__":
    main()
