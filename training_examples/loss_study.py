"""Do the driving-oriented losses help? PSLD as an auxiliary lane loss and soft F in BEV, over seeds, with intervals.

**Lane study.** The row-wise detector of ``lane_psld_aux.py`` (``RowLaneNet``: column logits per row for the
ego-left and ego-right line, soft-argmax x) is trained on a task that leaves room to improve:

* few training clips (``train.clips`` x ``train.frames``), gentle curves (``|k0| <= 1/500`` 1/m) and a large
  lateral wander (up to ``wander`` metres off the lane center);
* partial occlusions: dark or bright boxes (vehicles, shadows) over the road in half of the frames;
* label noise: each training frame's GT lines get a lateral bias, a heading error and jitter on the road plane
  before they are projected to the image (the PSLD target is the center of the same noisy lines);
* held-out clips from another curvature range: ``1/500 <= |k0| <= 1/250`` (sharper than any training clip), with
  the same occlusions and clean labels.

Loss: cross-entropy over the column bins + L1 / 10 px on the soft-argmax x (the baseline), plus
``weight * PSLDLoss("points")`` on the soft-argmax lane points. The weights are 0 and three values a decade apart
centered on the **balance point** ``w*``: the median, over the baseline runs and their probe steps, of the ratio of
gradient norms ``||grad base loss|| / ||grad PSLD loss||`` (network parameters, one fixed training batch), rounded
to one significant digit. Each run also records, at the probe steps, the cosine between the two gradients and what
the PSLD gradient pushes on: its share per image row and its *alignment* with the error of each lane point
(``sum g_i sign(x_i - x_gt_i) / sum |g_i|``: +1 = every point pulled towards its GT, 0 = no relation).

Held-out scores per run: TuSimple accuracy and F1 (ego lines, 20 px scaled to the 256-px frames: 4 px), CULane F1
(30-px lines scaled to 4.7 px, IoU 0.5), PSLD (m per step, mean over frames) and E2E-LD (m, mean over clips; the
detector steers the simulated vehicle through views synthesised from the clip).

**Road study.** The segmentation net of ``road_segmentation.py`` (``TinySegNet``, road + ego lane) trained with the
soft F-measure loss measured in perspective, in BEV, or the mean of both ("mix"), on the synthetic KITTI-like
scenes. Held-out scores: perspective MaxF and BEV MaxF of the road, and the ego-lane driving-corridor lateral
precision, longitudinal F1 and hitrate at 20 / 30 / 40 m.

Every setting runs the same seeds (a seed fixes the data, the initial weights and the batch order, so settings are
paired by seed). Reported per setting: mean, sample standard deviation and the 95 % t-interval of the mean over
seeds, and the paired difference to the baseline with its 95 % t-interval. Plain PyTorch loops on one CPU thread
(the runs are small; a Lightning ``Trainer`` per run would cost more than the run). Run::

    python training_examples/loss_study.py --quick --out examples_out/loss_study     # ~2 min, 3 seeds
    python training_examples/loss_study.py --jobs 2 --out benchmarks/results/loss_study  # the committed full run

It writes ``loss_study.json`` (or ``--json PATH``), ``loss_study_lane.png`` and ``loss_study_road.png`` under
``--out``.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling examples' models

from lane_psld_aux import RowLaneNet
from road_segmentation import TinySegNet, synthetic_frames

from drivemetrics.functional import (
    culane_f1,
    driving_corridor_scores,
    e2e_ld,
    psld,
    road_pixel_scores,
    tusimple_metrics,
)
from drivemetrics.geometry import BevGrid
from drivemetrics.lane import PSLDLoss
from drivemetrics.lane.culane import lanes_from_rows
from drivemetrics.lane.geometry import center_from_image_lanes
from drivemetrics.road import SoftFMeasureLoss
from drivemetrics.road.bev_inputs import pixel_inputs_to_bev
from drivemetrics.synthetic.lane_clips import (
    LaneClips,
    LaneNoise,
    make_lane_clips,
    perturb_road_lanes,
    road_lanes_to_image,
)

REPO = Path(__file__).resolve().parents[1]
FULL_COMMAND = "python training_examples/loss_study.py --jobs 2 --out benchmarks/results/loss_study"

FULL: dict[str, Any] = {
    "seeds": [0, 1, 2, 3, 4],
    "lane": {
        "train": {"clips": 12, "frames": 8},
        "test": {"clips": 8, "frames": 20},
        "steps": 200,
        "batch_size": 16,
        "lr": 3e-3,
        "width": 16,
        "downsample": 4,
        "horizon_frames": 10,
        "e2e_frames": 20,
        "train_max_curvature": 1 / 500,
        "test_curvature": [1 / 500, 1 / 250],
        "wander": 0.8,
        "occlusion_probability": 0.5,
        "label_noise": {"lateral_bias_m": 0.1, "heading_error_deg": 0.5, "jitter_m": 0.05},
        "probes": 5,
    },
    "road": {
        "train_frames": 64,
        "test_frames": 32,
        "steps": 160,
        "batch_size": 8,
        "lr": 0.01,
        "width": 12,
        "image_scale": 0.125,
        "bev_resolution": 0.25,
        "corridor_threshold": 0.5,
        "settings": {"perspective": [1.0, 0.0], "bev": [0.0, 1.0], "mix": [0.5, 0.5]},
    },
}

QUICK: dict[str, Any] = {
    "seeds": [0, 1, 2],
    "lane": {
        **FULL["lane"],
        "train": {"clips": 8, "frames": 6},
        "test": {"clips": 4, "frames": 10},
        "steps": 80,
        "e2e_frames": 10,
        "probes": 3,
    },
    "road": {**FULL["road"], "train_frames": 48, "test_frames": 16, "steps": 50},
}

LANE_METRICS = ("tusimple_accuracy", "tusimple_f1", "culane_f1", "psld", "e2e_ld")
CORRIDOR_METRICS = tuple(
    f"corridor_{name}_{d}m" for name in ("precision_lat", "f1_long", "hitrate") for d in (20, 30, 40)
)
ROAD_METRICS = ("maxf", "bev_maxf", *CORRIDOR_METRICS)
TUSIMPLE_WIDTH = 1280.0  # TuSimple's 20 px threshold is for 1280-px images
CULANE_WIDTH = 1640.0  # CULane's 30 px lines are for 1640-px images


# ---------------------------------------------------------------------------------------------------- statistics


def t_interval(values: list[float], level: float = 0.95) -> dict[str, Any]:
    """Mean, sample standard deviation and the ``level`` t-interval of the mean of ``values`` (at least 2)."""
    from scipy import stats

    n = len(values)
    if n < 2:
        raise ValueError(f"a t-interval needs at least 2 values, got {n}")
    x = torch.tensor(values, dtype=torch.float64)
    mean, sd = float(x.mean()), float(x.std(unbiased=True))
    half = float(stats.t.ppf(0.5 + level / 2, n - 1)) * sd / math.sqrt(n)
    return {"mean": mean, "sd": sd, "ci95": [mean - half, mean + half], "n": n, "values": [float(v) for v in values]}


def summarise(runs: list[dict[str, Any]], key: str, setting: Any, baseline: Any, metrics: tuple[str, ...]) -> dict:
    """Per metric: the t-interval over seeds of the runs of ``setting`` and of the paired difference to
    ``baseline`` (same seed)."""
    mine = {r["seed"]: r["scores"] for r in runs if r[key] == setting}
    base = {r["seed"]: r["scores"] for r in runs if r[key] == baseline}
    seeds = sorted(mine)
    out: dict[str, Any] = {"seeds": seeds, "metrics": {}, "difference_to_baseline": {}}
    for name in metrics:
        out["metrics"][name] = t_interval([mine[s][name] for s in seeds])
        if setting != baseline:
            out["difference_to_baseline"][name] = t_interval([mine[s][name] - base[s][name] for s in seeds])
    return out


# ------------------------------------------------------------------------------------------------------ lane data


def occlude(images: Tensor, probability: float, gen: torch.Generator) -> Tensor:
    """Boxes of uniform grey (vehicles, shadows) over the road in a ``probability`` share of ``(F, 1, H, W)``
    frames: one or two per frame, 16 to 48 px wide and 8 to 20 px tall, below the horizon."""
    out = images.clone()
    frames, _, height, width = images.shape
    hit = torch.rand(frames, generator=gen) < probability
    boxes = 1 + (torch.rand(frames, generator=gen) < 0.5).long()
    for f in torch.nonzero(hit).flatten().tolist():  # a handful of boxes per clip; cost bounded by the frames
        for _ in range(int(boxes[f])):
            w, h = (16 + 32 * torch.rand(1, generator=gen)).long().item(), (8 + 12 * torch.rand(1, generator=gen))
            h = int(h.item())
            u = int(torch.randint(0, width - w, (1,), generator=gen))
            v = int(torch.randint(height // 2, height - h, (1,), generator=gen))
            out[f, :, v : v + h, u : u + w] = 0.05 + 0.5 * torch.rand(1, generator=gen).item()
    return out


def lane_frames(clips: LaneClips, images: Tensor, lanes_road: Tensor | None = None) -> dict[str, Tensor]:
    """Frames of the clips: ``images`` ``(F, 1, H, W)``, ego-line x ``lanes`` ``(F, 2, N)`` pixels at the rows,
    center profile ``center`` ``(F, M)`` metres, ``speed`` ``(F,)``; from ``lanes_road`` (noisy labels) when given,
    else the clips' own GT."""
    left, right = clips.ego_lanes
    b, t = clips.images.shape[:2]
    if lanes_road is None:
        lanes, center = clips.lanes_image[:, :, [left, right]], clips.center_road
    else:
        width = clips.images.shape[-1]
        lanes = road_lanes_to_image(lanes_road[:, :, [left, right]], clips.z_samples, clips.image_from_road,
                                    clips.h_samples, width)  # fmt: skip
        center = 0.5 * (lanes_road[:, :, left] + lanes_road[:, :, right])
    return {
        "images": images.flatten(0, 1),
        "lanes": lanes.flatten(0, 1).float(),
        "center": center.flatten(0, 1),
        "speed": clips.speed[:, None].expand(b, t).flatten(),
    }


def lane_data(config: dict[str, Any], seed: int) -> tuple[dict[str, Tensor], dict[str, Any], LaneClips]:
    """Training frames (occluded, noisy labels) and held-out clips (sharper curves, occluded, clean labels)."""
    gen = torch.Generator().manual_seed(50_000 + seed)
    train = make_lane_clips(config["train"]["clips"], config["train"]["frames"], seed=10_000 + seed,
                            max_curvature=config["train_max_curvature"], max_wander=config["wander"])  # fmt: skip
    noise = config["label_noise"]
    shape = train.lanes_road.shape[:2]  # one error per frame
    label_noise = LaneNoise(
        lateral_bias=noise["lateral_bias_m"] * torch.randn(shape, generator=gen, dtype=torch.float64),
        heading_error=math.radians(noise["heading_error_deg"]) * torch.randn(shape, generator=gen, dtype=torch.float64),
        jitter=noise["jitter_m"],
    )
    noisy_road = perturb_road_lanes(train.lanes_road, train.z_samples, label_noise, gen)
    train_images = occlude(train.images.flatten(0, 1), config["occlusion_probability"], gen).view_as(train.images)
    train_frames = lane_frames(train, train_images, noisy_road)

    test = held_out_clips(config, seed)
    test.images = occlude(test.images.flatten(0, 1), config["occlusion_probability"], gen).view_as(test.images)
    return train_frames, lane_frames(test, test.images), test


def held_out_clips(config: dict[str, Any], seed: int, rounds: int = 8) -> LaneClips:
    """``test.clips`` clips with ``low <= |k0| <= high`` (``test_curvature``, 1/m): drawn with ``|k0| <= high`` in
    rounds of ``2 x test.clips`` clips (seeded), keeping those with ``|k0| >= low``; at most ``rounds`` rounds."""
    low, high = config["test_curvature"]
    count = config["test"]["clips"]
    kept: list[LaneClips] = []
    found = 0
    for attempt in range(rounds):
        pool = make_lane_clips(2 * count, config["test"]["frames"], seed=30_000 + 100 * seed + attempt,
                               max_curvature=high, max_wander=config["wander"])  # fmt: skip
        keep = torch.nonzero(pool.curvature[:, 0].abs() >= low).flatten()[: count - found]
        kept.append(_select_clips(pool, keep))
        found += len(keep)
        if found == count:
            break
    else:
        raise RuntimeError(f"only {found} of {rounds * 2 * count} held-out clips have |k0| >= {low}")
    per_clip = ("images", "lanes_image", "lanes_road", "poses", "lateral_offset", "speed", "curvature", "lane_width")
    joined = {name: torch.cat([getattr(c, name) for c in kept]) for name in per_clip}
    return replace(kept[0], **joined)


def _select_clips(clips: LaneClips, keep: Tensor) -> LaneClips:
    """The clips ``keep`` of a batch (a new :class:`LaneClips`)."""
    per_clip = ("images", "lanes_image", "lanes_road", "poses", "lateral_offset", "speed", "curvature", "lane_width")
    return replace(clips, **{name: getattr(clips, name)[keep] for name in per_clip})


# ----------------------------------------------------------------------------------------------------- lane model


class LaneRun:
    """One detector (``RowLaneNet``) with its losses; ``weight`` scales ``PSLDLoss`` (0: baseline)."""

    def __init__(self, config: dict[str, Any], clips: LaneClips, weight: float) -> None:
        self.net = RowLaneNet(clips.h_samples, config["width"], config["downsample"])
        self.h_samples = clips.h_samples.double()
        self.image_from_road = clips.image_from_road.double()
        self.z_samples = clips.z_samples.double()
        self.weight = weight
        self.psld_loss = PSLDLoss("points", z_samples=self.z_samples, horizon_frames=config["horizon_frames"],
                                  validate_args=False)  # fmt: skip

    def lanes_uv(self, logits: Tensor) -> Tensor:
        """``(B, 2, N, 2)`` lane points ``(u, v)`` in pixels (float64)."""
        u = self.net.to_pixels(logits.double())
        return torch.stack([u, self.h_samples.expand_as(u)], -1)

    def base_loss(self, logits: Tensor, lanes: Tensor) -> Tensor:
        """Cross-entropy over the column bins + L1 / 10 px of the soft-argmax x (as ``lane_psld_aux.py``)."""
        d = self.net.downsample
        seen = ~torch.isnan(lanes)
        target_bin = ((lanes - (d - 1) / 2) / d).round().clamp(0, logits.shape[-1] - 1).long()
        ce = F.cross_entropy(logits.flatten(0, 2), torch.where(seen, target_bin, -100).flatten())
        return ce + (self.net.to_pixels(logits) - lanes)[seen].abs().mean() / 10.0

    def aux_loss(self, logits: Tensor, center: Tensor, speed: Tensor) -> Tensor:
        """The smooth PSLD of the soft-argmax lane points (m per step)."""
        return self.psld_loss(self.lanes_uv(logits), center, speed=speed, image_from_road=self.image_from_road)

    def loss(self, batch: tuple[Tensor, ...]) -> Tensor:
        images, lanes, center, speed = batch
        logits = self.net(images)
        loss = self.base_loss(logits, lanes)
        if self.weight > 0:
            loss = loss + self.weight * self.aux_loss(logits, center, speed)
        return loss

    def probe(self, batch: tuple[Tensor, ...]) -> dict[str, Any]:
        """Both losses on ``batch``, their parameter-gradient norms and cosine, and what the PSLD gradient pushes on
        (share of its magnitude per row, alignment with each lane point's error)."""
        images, lanes, center, speed = batch
        params = [p for p in self.net.parameters() if p.requires_grad]
        logits = self.net(images)
        base = self.base_loss(logits, lanes)
        x = self.net.to_pixels(logits.double())
        uv = torch.stack([x, self.h_samples.expand_as(x)], -1)
        aux = self.psld_loss(uv, center, speed=speed, image_from_road=self.image_from_road)
        g_base = torch.autograd.grad(base, params, retain_graph=True)
        g_aux_x, *g_aux = torch.autograd.grad(aux, [x, *params])
        flat_base = torch.cat([g.flatten() for g in g_base]).double()
        flat_aux = torch.cat([g.flatten() for g in g_aux]).double()
        norm_base, norm_aux = float(flat_base.norm()), float(flat_aux.norm())
        cosine = float(flat_base @ flat_aux / max(norm_base * norm_aux, 1e-300))
        seen = ~torch.isnan(lanes)
        error_sign = torch.sign(x.detach() - torch.nan_to_num(lanes.double()))
        g = torch.where(seen, g_aux_x, 0.0)
        magnitude = g.abs().sum()
        alignment = float((g * error_sign).sum() / magnitude) if magnitude > 0 else 0.0
        row_share = (g.abs().sum((0, 1)) / magnitude.clamp_min(1e-300)).tolist()
        return {
            "base_loss": float(base.detach()),
            "psld_loss": float(aux.detach()),
            "grad_norm_base": norm_base,
            "grad_norm_psld": norm_aux,
            "grad_ratio": norm_base / max(norm_aux, 1e-300),
            "grad_cosine": cosine,
            "psld_alignment": alignment,
            "psld_row_share": row_share,
        }


def train_lane(config: dict[str, Any], data: dict[str, Tensor], clips: LaneClips, weight: float, seed: int):
    """Train one detector (seeded: same initial weights and batches for every weight); return it and its probes."""
    torch.manual_seed(seed)
    run = LaneRun(config, clips, weight)
    opt = torch.optim.Adam(run.net.parameters(), lr=config["lr"])
    keys = ("images", "lanes", "center", "speed")
    gen = torch.Generator().manual_seed(seed)
    count = len(data["images"])
    probe_batch = tuple(data[k][: config["batch_size"]] for k in keys)
    steps = config["steps"]
    probe_steps = {round(i * steps / (config["probes"] - 1)) for i in range(config["probes"])}
    probes = []
    order = torch.randperm(count, generator=gen)
    cursor = 0
    for step in range(steps + 1):
        if step in probe_steps:
            probes.append({"step": step, **run.probe(probe_batch)})
        if step == steps:
            break
        if cursor + config["batch_size"] > count:
            order, cursor = torch.randperm(count, generator=gen), 0
        index = order[cursor : cursor + config["batch_size"]]
        cursor += config["batch_size"]
        loss = run.loss(tuple(data[k][index] for k in keys))
        opt.zero_grad()
        loss.backward()
        opt.step()
    return run, probes


def lane_scores(run: LaneRun, test: dict[str, Tensor], clips: LaneClips, config: dict[str, Any]) -> dict[str, float]:
    """Held-out TuSimple accuracy / F1, CULane F1, PSLD and E2E-LD of a trained detector."""
    width, height = clips.images.shape[-1], clips.images.shape[-2]
    with torch.no_grad():
        logits = torch.cat([run.net(chunk) for chunk in test["images"].split(64)])
        x = run.net.to_pixels(logits).double()
        gt = test["lanes"].double()
        tusimple = tusimple_metrics(x, gt, h_samples=run.h_samples, pixel_threshold=20.0 * width / TUSIMPLE_WIDTH)
        culane = culane_f1(lanes_from_rows(x, run.h_samples), lanes_from_rows(gt, run.h_samples), height=height,
                           width=width, line_width=30.0 * width / CULANE_WIDTH)  # fmt: skip
        center = center_from_image_lanes(run.lanes_uv(logits), run.image_from_road, run.z_samples)
        psld_value = psld(
            center,
            test["center"],
            speed=test["speed"],
            z_samples=run.z_samples,
            horizon_frames=config["horizon_frames"],
        )

        def detect(images: Tensor) -> Tensor:
            return run.lanes_uv(run.net(images.float()))

        e2e = e2e_ld(clips.images, clips.center_road, speed=clips.speed, detector=detect,
                     image_from_road=clips.image_from_road, recorded_poses=clips.poses,
                     frames=config["e2e_frames"], z_samples=clips.z_samples)  # fmt: skip
    return {
        "tusimple_accuracy": float(tusimple["accuracy"]),
        "tusimple_f1": float(tusimple["f1"]),
        "culane_f1": float(culane["f1"]),
        "psld": float(psld_value),
        "e2e_ld": float(e2e.mean()),
    }


def balance_point(probes: list[dict[str, Any]]) -> dict[str, Any]:
    """The weight at which PSLD's gradient norm equals the base loss's: the median ratio, to one significant digit."""
    ratios = torch.tensor([p["grad_ratio"] for p in probes], dtype=torch.float64)
    losses = torch.tensor([p["base_loss"] / max(p["psld_loss"], 1e-300) for p in probes], dtype=torch.float64)
    median = float(ratios.median())
    exponent = math.floor(math.log10(median))
    rounded = round(median / 10**exponent) * 10**exponent
    return {
        "grad_norm_ratio_median": median,
        "grad_norm_ratio_range": [float(ratios.min()), float(ratios.max())],
        "loss_ratio_median": float(losses.median()),
        "weight": float(f"{rounded:.1g}"),
        "probes": len(probes),
    }


def lane_study(config: dict[str, Any], seeds: list[int], log: Any) -> dict[str, Any]:
    """Baselines first (they measure the balance point), then the three PSLD weights; every run on every seed."""
    data = {seed: lane_data(config, seed) for seed in seeds}
    runs: list[dict[str, Any]] = []

    def one(weight: float, seed: int) -> None:
        start = time.perf_counter()
        train, test, clips = data[seed]
        run, probes = train_lane(config, train, clips, weight, seed)
        scores = lane_scores(run, test, clips, config)
        runs.append({"weight": weight, "seed": seed, "scores": scores, "probes": probes,
                     "seconds": round(time.perf_counter() - start, 2)})  # fmt: skip
        log(f"lane weight {weight:g} seed {seed}: " + ", ".join(f"{k} {v:.4f}" for k, v in scores.items()))

    for seed in seeds:
        one(0.0, seed)
    balance = balance_point([p for r in runs for p in r["probes"]])
    center = balance["weight"]
    weights = [0.0, center / 10, center, center * 10]
    weights = [float(f"{w:.3g}") for w in weights]
    for weight in weights[1:]:
        for seed in seeds:
            one(weight, seed)
    settings = [{"weight": w, **summarise(runs, "weight", w, 0.0, LANE_METRICS)} for w in weights]
    gradients = []
    for w in weights:
        probes = [p for r in runs if r["weight"] == w for p in r["probes"]]
        rows = torch.tensor([p["psld_row_share"] for p in probes]).mean(0)
        gradients.append({
            "weight": w,
            "grad_cosine": t_interval([p["grad_cosine"] for p in probes]),
            "psld_alignment": t_interval([p["psld_alignment"] for p in probes]),
            "psld_row_share_mean": rows.tolist(),
        })  # fmt: skip
    return {
        "config": config,
        "seeds": seeds,
        "balance": balance,
        "weights": weights,
        "h_samples": data[seeds[0]][2].h_samples.tolist(),
        "settings": settings,
        "gradients": gradients,
        "runs": runs,
    }


# ----------------------------------------------------------------------------------------------------------- road


def train_road(config: dict[str, Any], data: dict[str, Tensor], mix: list[float], seed: int) -> TinySegNet:
    """Train one segmenter with ``mix[0] * perspective + mix[1] * BEV`` soft-F losses (road + ego lane)."""
    torch.manual_seed(seed)
    net = TinySegNet(config["width"])
    grid = BevGrid(resolution=config["bev_resolution"])
    losses = {space: SoftFMeasureLoss(from_logits=True, space=space, grid=grid, validate_args=False)
              for space in ("perspective", "bev")}  # fmt: skip
    opt = torch.optim.Adam(net.parameters(), lr=config["lr"])
    gen = torch.Generator().manual_seed(seed)
    count, size = len(data["image"]), config["batch_size"]
    order, cursor = torch.randperm(count, generator=gen), 0
    for _ in range(config["steps"]):
        if cursor + size > count:
            order, cursor = torch.randperm(count, generator=gen), 0
        batch = {k: v[order[cursor : cursor + size]] for k, v in data.items()}
        cursor += size
        logits = net(batch["image"])
        loss = logits.new_zeros(())
        for (space, loss_fn), share in zip(losses.items(), mix, strict=True):
            if share > 0:
                homography = batch["homography"] if space == "bev" else None
                road = loss_fn(logits[:, 0], batch["road"], valid=batch["valid"], homography=homography)
                lane = loss_fn(logits[:, 1], batch["lane"], valid=batch["valid"], homography=homography)
                loss = loss + share * (road + lane)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return net


def road_scores(net: TinySegNet, test: dict[str, Tensor], config: dict[str, Any]) -> dict[str, float]:
    """Held-out perspective / BEV MaxF of the road and the ego-lane corridor scores at 20 / 30 / 40 m."""
    grid = BevGrid(resolution=config["bev_resolution"])
    with torch.no_grad():
        probs = torch.sigmoid(net(test["image"]))
    valid, homography = test["valid"], test["homography"]
    maxf = road_pixel_scores(probs[:, 0], test["road"], valid=valid)["max_f"]
    road_bev, road_target, road_valid = pixel_inputs_to_bev(probs[:, 0], test["road"], valid, homography, grid)
    bev_maxf = road_pixel_scores(road_bev, road_target, valid=road_valid)["max_f"]
    lane_bev, lane_target, lane_valid = pixel_inputs_to_bev(probs[:, 1], test["lane"], valid, homography, grid)
    corridor = driving_corridor_scores(
        lane_bev, lane_target, valid=lane_valid, threshold=config["corridor_threshold"], grid=grid
    )
    scores = {"maxf": float(maxf), "bev_maxf": float(bev_maxf)}
    return {**scores, **{f"corridor_{k}": float(v) for k, v in corridor.items()}}


def road_study(config: dict[str, Any], seeds: list[int], log: Any) -> dict[str, Any]:
    """Every loss space on every seed."""
    runs = []
    for seed in seeds:
        train = synthetic_frames(config["train_frames"], 20_000 + seed, config["image_scale"])
        test = synthetic_frames(config["test_frames"], 40_000 + seed, config["image_scale"])
        for name, mix in config["settings"].items():
            start = time.perf_counter()
            scores = road_scores(train_road(config, train, mix, seed), test, config)
            seconds = round(time.perf_counter() - start, 2)
            runs.append({"loss": name, "seed": seed, "scores": scores, "seconds": seconds})
            log(f"road {name} seed {seed}: maxf {scores['maxf']:.4f} bev_maxf {scores['bev_maxf']:.4f} "
                f"hitrate_30m {scores['corridor_hitrate_30m']:.4f}")  # fmt: skip
    names = list(config["settings"])
    settings = [{"loss": name, **summarise(runs, "loss", name, names[0], ROAD_METRICS)} for name in names]
    return {"config": config, "seeds": seeds, "baseline": names[0], "settings": settings, "runs": runs}


def _road_worker(config: dict[str, Any], seeds: list[int]) -> dict[str, Any]:
    """:func:`road_study` in a child process (``--jobs 2``), on one thread."""
    torch.set_num_threads(1)
    return road_study(config, seeds, lambda line: print(line, flush=True))


# -------------------------------------------------------------------------------------------------------- figures


def lane_figure(path: Path, lane: dict[str, Any]) -> None:
    """E2E-LD (and PSLD) against the PSLD weight with 95 % intervals; TuSimple accuracy against E2E-LD per run."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from drivemetrics._internal.files import atomic_save_figure

    weights = lane["weights"]
    positions = list(range(len(weights)))
    labels = ["0 (baseline)"] + [f"{w:g}" for w in weights[1:]]
    colours = plt.get_cmap("viridis")([i / max(len(weights) - 1, 1) for i in positions])
    fig, axes = plt.subplots(1, 4, figsize=(19, 3.9))
    for ax, metric, unit in ((axes[0], "e2e_ld", "E2E-LD [m]"), (axes[1], "psld", "PSLD [m per step]")):
        for i, setting in enumerate(lane["settings"]):
            stats = setting["metrics"][metric]
            low, high = stats["ci95"]
            ax.errorbar(i, stats["mean"], yerr=[[stats["mean"] - low], [high - stats["mean"]]], fmt="o", capsize=4,
                        color=colours[i])  # fmt: skip
            ax.plot([i] * stats["n"], stats["values"], ".", color=colours[i], alpha=0.4)
        ax.set_xticks(positions, labels)
        ax.set_xlabel(f"PSLD weight (balance point {lane['balance']['weight']:g})")
        ax.set_ylabel(unit)
        ax.set_title(f"held-out {metric.replace('_', '-').upper()}: mean, 95 % t-interval, runs")
    for i, w in enumerate(weights):
        runs = [r for r in lane["runs"] if r["weight"] == w]
        axes[2].scatter([r["scores"]["e2e_ld"] for r in runs], [r["scores"]["tusimple_accuracy"] for r in runs],
                        color=colours[i], label=labels[i])  # fmt: skip
    axes[2].set_xlabel("E2E-LD [m]")
    axes[2].set_ylabel("TuSimple accuracy")
    axes[2].set_title("per run: conventional accuracy vs closed loop")
    axes[2].legend(title="PSLD weight", fontsize=8)
    distance = row_distances(lane["h_samples"])
    for i, g in enumerate(lane["gradients"]):
        axes[3].plot(distance, g["psld_row_share_mean"], "o-", ms=3, color=colours[i], label=labels[i])
    axes[3].set_xscale("log")
    axes[3].set_xticks([4, 6, 10, 20, 30, 50], ["4", "6", "10", "20", "30", "50"])
    axes[3].minorticks_off()
    axes[3].set_xlabel("distance of the row on the road [m]")
    axes[3].set_ylabel("share of |d PSLD / d x|")
    axes[3].set_title("where the PSLD gradient acts (probe batch)")
    axes[3].legend(title="runs with weight", fontsize=8)
    fig.tight_layout()
    atomic_save_figure(fig, path, dpi=100)
    plt.close(fig)


def row_distances(h_samples: list[float]) -> list[float]:
    """Road distance (metres) of each image row at the image center column (the synthetic clips' camera)."""
    from drivemetrics.geometry import image_to_road
    from drivemetrics.synthetic.lane_clips import LaneCamera

    camera = LaneCamera()
    rows = torch.tensor(h_samples, dtype=torch.float64)
    points = torch.stack([torch.full_like(rows, camera.cx), rows], -1)
    return image_to_road(camera.image_from_road(), points)[0][:, 1].tolist()


def road_figure(path: Path, road: dict[str, Any]) -> None:
    """Each held-out road score per loss space: mean with its 95 % interval, and the runs."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from drivemetrics._internal.files import atomic_save_figure

    fig, ax = plt.subplots(figsize=(13, 3.8))
    count = len(road["settings"])
    width = 0.8 / count
    for i, setting in enumerate(road["settings"]):
        for j, metric in enumerate(ROAD_METRICS):
            stats = setting["metrics"][metric]
            x = j + (i - (count - 1) / 2) * width
            low, high = stats["ci95"]
            ax.bar(x, stats["mean"], width, color=f"C{i}", label=setting["loss"] if j == 0 else None, alpha=0.7)
            ax.errorbar(x, stats["mean"], yerr=[[stats["mean"] - low], [high - stats["mean"]]], color="k", capsize=2)
    ax.set_xticks(range(len(ROAD_METRICS)), [m.replace("corridor_", "") for m in ROAD_METRICS], fontsize=8, rotation=15)
    ax.set_ylim(0, 1.05)
    ax.set_title("held-out road scores by soft-F loss space: mean and 95 % t-interval over seeds")
    ax.legend(title="soft F in", fontsize=8)
    fig.tight_layout()
    atomic_save_figure(fig, path, dpi=100)
    plt.close(fig)


# -------------------------------------------------------------------------------------------------------- driver


def run(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the study (arguments as on the command line) on one CPU thread (restored afterwards)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 seeds, short runs (about 2 minutes)")
    parser.add_argument("--out", default=str(REPO / "examples_out" / "loss_study"), help="folder of JSON and figures")
    parser.add_argument("--json", metavar="PATH", help="write the JSON here instead of OUT/loss_study.json")
    parser.add_argument("--only", choices=("lane", "road"), help="run only one of the two studies")
    parser.add_argument("--report", metavar="JSON", help="tables and figures (under --out) of a finished study")
    parser.add_argument("--jobs", type=int, choices=(1, 2), default=1,
                        help="2: the road study runs in a second process, beside the lane study")  # fmt: skip
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if args.report:  # tables and figures of a finished study
        import json

        report = json.loads(Path(args.report).read_text())
        if "lane" in report:
            lane_figure(Path(args.out) / "loss_study_lane.png", report["lane"])
        if "road" in report:
            road_figure(Path(args.out) / "loss_study_road.png", report["road"])
        return report
    config = QUICK if args.quick else FULL
    out = Path(args.out)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    start = time.perf_counter()
    try:
        result: dict[str, Any] = {
            "study": "loss_study",
            "quick": args.quick,
            "command": FULL_COMMAND if not args.quick else "python training_examples/loss_study.py --quick",
            "seeds": config["seeds"],
            "torch": torch.__version__,
            "threads": 1,
        }
        road_job = pool = None
        if args.only in (None, "road") and args.jobs == 2:
            import multiprocessing

            pool = multiprocessing.get_context("spawn").Pool(1)
            road_job = pool.apply_async(_road_worker, (config["road"], config["seeds"]))
        if args.only in (None, "lane"):
            result["lane"] = lane_study(config["lane"], config["seeds"], lambda line: print(line, flush=True))
            lane_figure(out / "loss_study_lane.png", result["lane"])
        if args.only in (None, "road"):
            result["road"] = road_job.get() if road_job else road_study(config["road"], config["seeds"], print)
            road_figure(out / "loss_study_road.png", result["road"])
    finally:
        torch.set_num_threads(threads)
        if pool is not None:  # also stops the road study when the lane study failed
            pool.terminate()
            pool.join()
    result["seconds"] = round(time.perf_counter() - start, 1)
    import json

    from drivemetrics._internal.files import atomic_write_text

    atomic_write_text(Path(args.json) if args.json else out / "loss_study.json", json.dumps(result, indent=1) + "\n")
    return result


def _cell(stats: dict[str, Any], scale: float = 1.0, digits: int = 3) -> str:
    """``mean [low, high]`` of a t-interval, scaled."""
    low, high = (scale * v for v in stats["ci95"])
    return f"{scale * stats['mean']:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


LANE_COLUMNS = (  # metric, heading, scale, digits
    ("tusimple_accuracy", "TuSimple acc", 1.0, 3),
    ("tusimple_f1", "TuSimple F1", 1.0, 3),
    ("culane_f1", "CULane F1", 1.0, 3),
    ("psld", "PSLD [mm/step]", 1000.0, 2),
    ("e2e_ld", "E2E-LD [cm]", 100.0, 1),
)


def markdown_tables(result: dict[str, Any]) -> str:
    """README-ready tables (mean and 95 % t-interval over seeds) of a study's JSON."""
    lines: list[str] = []
    if "lane" in result:
        lane = result["lane"]
        balance = lane["balance"]
        lines += [
            f"Lane, seeds {lane['seeds']}; balance point {balance['weight']:g} (median gradient-norm ratio "
            f"{balance['grad_norm_ratio_median']:.3g}, range {balance['grad_norm_ratio_range'][0]:.3g} to "
            f"{balance['grad_norm_ratio_range'][1]:.3g}; loss-magnitude ratio {balance['loss_ratio_median']:.3g})",
            "",
            "| PSLD weight | " + " | ".join(c[1] for c in LANE_COLUMNS) + " |",
            "|---" * (len(LANE_COLUMNS) + 1) + "|",
        ]
        for s in lane["settings"]:
            cells = [_cell(s["metrics"][m], scale, digits) for m, _, scale, digits in LANE_COLUMNS]
            lines.append(f"| {s['weight']:g} | " + " | ".join(cells) + " |")
        lines += ["", "| difference to weight 0 (paired by seed) | " + " | ".join(c[1] for c in LANE_COLUMNS) + " |"]
        lines.append("|---" * (len(LANE_COLUMNS) + 1) + "|")
        for s in lane["settings"][1:]:
            cells = [_cell(s["difference_to_baseline"][m], scale, digits) for m, _, scale, digits in LANE_COLUMNS]
            lines.append(f"| {s['weight']:g} | " + " | ".join(cells) + " |")
        lines += ["", "| PSLD weight | cos(grad base, grad PSLD) | PSLD gradient alignment with the point errors |"]
        lines.append("|---|---|---|")
        for g in lane["gradients"]:
            lines.append(f"| {g['weight']:g} | {_cell(g['grad_cosine'])} | {_cell(g['psld_alignment'])} |")
    if "road" in result:
        road = result["road"]
        names = [s["loss"] for s in road["settings"]]
        lines += ["", f"Road, seeds {road['seeds']}", ""]
        lines.append("| held-out score | " + " | ".join(f"soft F in {n}" for n in names) + " | "
                     + " | ".join(f"{n} - {names[0]}" for n in names[1:]) + " |")  # fmt: skip
        lines.append("|---" * (2 * len(names)) + "|")
        for metric in ROAD_METRICS:
            cells = [_cell(s["metrics"][metric]) for s in road["settings"]]
            cells += [_cell(s["difference_to_baseline"][metric]) for s in road["settings"][1:]]
            lines.append(f"| {metric} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    result = run()
    print(markdown_tables(result))
    print(f"({result['seconds']:.0f} s, seeds {result['seeds']})")


if __name__ == "__main__":
    main()
