"""Lane section of ``drivemetrics demo``: TuSimple / CULane scores next to PSLD and E2E-LD on synthetic clips.

Scenarios = synthetic clips (:mod:`drivemetrics.synthetic.lane_clips`) x detector error models. The detector is
the painted-line detector of the synthetic images with an error model applied in the road frame
(:class:`~drivemetrics.synthetic.lane_clips.NoisyLaneDetector`), each scenario drawing its own signed error scale
(0.25 to 1.75 times the model, either direction), so the scenarios spread. TuSimple's 20 px threshold and CULane's
30 px lane width are scaled from 1280 / 1640 px wide images to the 256 px synthetic frames. For every scenario
the section reports the conventional TuSimple accuracy / F1 and CULane F1 of the recorded frames (ego lanes),
PSLD (per-frame closed-loop deviation, mean over frames) and E2E-LD (closed loop over the whole clip with view
synthesis), then the Pearson r of each metric with E2E-LD over all scenarios, and plots the simulated
trajectories.
"""

from __future__ import annotations

from pathlib import Path

import torch

from drivemetrics._internal.extras import pyplot_for_files
from drivemetrics._internal.files import atomic_save_figure
from drivemetrics.lane.culane import culane_counts, lanes_from_rows
from drivemetrics.lane.tusimple import tusimple_f1, tusimple_image_scores
from drivemetrics.synthetic.lane_clips import (
    NOISE_MODELS,
    LaneNoise,
    NoisyLaneDetector,
    PaintedLineDetector,
    make_lane_clips,
)

__all__ = ["evaluate_scenarios", "run"]


def _scaled(noise: LaneNoise, scale: torch.Tensor) -> LaneNoise:
    """The noise model with its errors multiplied by a signed per-scenario scale (``|scale|`` for jitter and range).

    A larger ``|scale|`` shortens the range: ``max_range * (1.5 - |scale| / 2)``.
    """
    magnitude = scale.abs()
    max_range = None if noise.max_range is None else noise.max_range * (1.5 - 0.5 * magnitude)
    return LaneNoise(
        lateral_bias=noise.lateral_bias * scale,
        heading_error=noise.heading_error * scale,
        curvature_error=noise.curvature_error * scale,
        jitter=noise.jitter * magnitude,
        max_range=max_range,
    )


def _scenario_noise(names: list[str], scale: torch.Tensor, clips_per_model: int) -> LaneNoise:
    """One :class:`LaneNoise` with a value per scenario: each named model scaled by its clips' ``scale``."""
    fields: dict[str, list[torch.Tensor]] = {"lateral_bias": [], "heading_error": [], "curvature_error": []}
    fields |= {"jitter": [], "max_range": []}
    for i, name in enumerate(names):
        noisy = _scaled(NOISE_MODELS[name], scale[i * clips_per_model : (i + 1) * clips_per_model])
        for key in fields:
            value = getattr(noisy, key)
            default = 1e9 if key == "max_range" else 0.0
            value = default if value is None else value
            fields[key].append(torch.as_tensor(value, dtype=torch.float64).expand(clips_per_model))
    return LaneNoise(**{key: torch.cat(values) for key, values in fields.items()})


def evaluate_scenarios(seed: int = 0, quick: bool = False) -> dict[str, object]:
    """Compute every metric on clips x noise models; returns per-scenario tensors and names."""
    from drivemetrics.lane.e2e import e2e_ld
    from drivemetrics.lane.geometry import center_from_image_lanes
    from drivemetrics.lane.psld import psld

    clips_per_model, frames = (3, 10) if quick else (8, 20)
    names = list(NOISE_MODELS)
    clips = make_lane_clips(batch=clips_per_model, frames=frames, seed=seed, z_samples=torch.arange(0.0, 101.0))
    k = len(names)
    n = k * clips_per_model  # scenario s = model (s // clips) x clip (s % clips)
    gen = torch.Generator().manual_seed(seed + 1)
    magnitude = 0.25 + 1.5 * torch.rand(n, generator=gen, dtype=torch.float64)
    sign = torch.where(torch.rand(n, generator=gen) < 0.5, -1.0, 1.0).to(torch.float64)
    scale = sign * magnitude
    noise = _scenario_noise(names, scale, clips_per_model)
    detector = NoisyLaneDetector(PaintedLineDetector(clips.h_samples), noise, clips.image_from_road, seed=seed)

    images = clips.images.repeat(k, 1, 1, 1, 1)
    target_lanes = clips.lanes_image[:, :, list(clips.ego_lanes)].repeat(k, 1, 1, 1)  # S x T x 2 x N
    center = clips.center_road.repeat(k, 1, 1)
    speed = clips.speed.repeat(k)
    poses = clips.poses.repeat(k, 1, 1)

    # Per-frame detections on the recorded frames (one call per time step: the noise is per scenario).
    detections = torch.stack([detector(images[:, t]) for t in range(frames)], dim=1).double()  # S x T x 2 x N x 2
    flat_pred = detections[..., 0].flatten(0, 1)
    flat_gt = target_lanes.flatten(0, 1)
    # TuSimple's 20 px threshold is for 1280 px wide images: 4 px at 256 px.
    scores = tusimple_image_scores(
        flat_pred,
        flat_gt,
        h_samples=clips.h_samples,
        preds_mask=torch.ones(flat_pred.shape[:2], dtype=torch.bool),
        pixel_threshold=20.0 * clips.images.shape[-1] / 1280,
    )
    accuracy = scores["accuracy"].reshape(n, frames).mean(1)
    tusimple_fp = scores["fp"].reshape(n, frames).mean(1)
    tusimple_fn = scores["fn"].reshape(n, frames).mean(1)
    f1 = tusimple_f1(tusimple_fp, tusimple_fn)
    # CULane F1 at this image size: 30 px at 1640 px wide -> 5 px at 256 px.
    pred_pts = lanes_from_rows(flat_pred, clips.h_samples)
    gt_pts = lanes_from_rows(flat_gt, clips.h_samples)
    short_pred = (~torch.isnan(flat_pred)).sum(-1) >= 2
    short_gt = (~torch.isnan(flat_gt)).sum(-1) >= 2
    size = {"height": 128, "width": 256, "line_width": 5.0, "iou_threshold": 0.5}
    counts = culane_counts(pred_pts, gt_pts, **size, preds_mask=short_pred, target_mask=short_gt)
    tp, fp, fn = (c.reshape(n, frames).sum(1).double() for c in (counts["tp"], counts["fp"], counts["fn"]))
    culane = torch.where(tp > 0, 2 * tp / (2 * tp + fp + fn), 0.0)

    center_pred = center_from_image_lanes(
        detections.flatten(0, 1), clips.image_from_road, clips.z_samples, max_distance=60.0
    )
    speeds = speed.repeat_interleave(frames)
    psld_frames = psld(center_pred, center.flatten(0, 1), speed=speeds, z_samples=clips.z_samples, reduction="none")
    psld_value = psld_frames.reshape(n, frames).mean(1)
    e2e = e2e_ld(
        images.double(),
        center,
        speed=speed,
        detector=detector,
        image_from_road=clips.image_from_road,
        recorded_poses=poses,
        z_samples=clips.z_samples,
        return_details=True,
    )
    return {
        "names": names,
        "clips_per_model": clips_per_model,
        "scale": scale,
        "accuracy": accuracy,
        "f1": f1,
        "culane_f1": culane,
        "psld": psld_value,
        "e2e": e2e["e2e_ld"],
        "deviation": e2e["deviation"],
        "poses": e2e["poses"],
        "reference_poses": e2e["reference_poses"],
        "dt": clips.dt,
    }


def _plot(result: dict[str, object], out_dir: Path) -> list[Path]:
    plt = pyplot_for_files()

    names: list[str] = result["names"]  # type: ignore[assignment]
    per = int(result["clips_per_model"])  # type: ignore[arg-type]
    deviation: torch.Tensor = result["deviation"]  # type: ignore[assignment]
    t = torch.arange(1, deviation.shape[1] + 1) * float(result["dt"])  # type: ignore[arg-type]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, name in enumerate(names):
        for j in range(per):
            axes[0].plot(
                t, deviation[i * per + j], color=colours[i % len(colours)], lw=1, label=name if j == 0 else None
            )
    axes[0].axhline(0.0, color="k", lw=0.8)
    axes[0].set(xlabel="time (s)", ylabel="lateral deviation from GT-driven run (m)", title="E2E-LD closed loops")
    axes[0].legend(fontsize=7)
    e2e, psld_v, acc = result["e2e"], result["psld"], result["accuracy"]
    for i, name in enumerate(names):
        sl = slice(i * per, (i + 1) * per)
        axes[1].scatter(psld_v[sl], e2e[sl], color=colours[i % len(colours)], s=14, label=name)  # type: ignore[index]
    axes[1].set(xlabel="PSLD (m)", ylabel="E2E-LD (m)", title="PSLD vs E2E-LD per scenario")
    fig.tight_layout()
    out_dir.mkdir(parents=True, exist_ok=True)
    traj = out_dir / "lane_trajectories.png"
    atomic_save_figure(fig, traj, dpi=110)
    plt.close(fig)
    poses: torch.Tensor = result["poses"]  # type: ignore[assignment]
    reference: torch.Tensor = result["reference_poses"]  # type: ignore[assignment]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(reference[0, :, 0], reference[0, :, 1], "k--", lw=1.5, label="driven by GT lanes")
    for i, name in enumerate(names):
        ax.plot(poses[i * per, :, 0], poses[i * per, :, 1], color=colours[i % len(colours)], lw=1, label=name)
    ax.set(xlabel="x (m, right)", ylabel="z (m, forward)", title="Simulated paths of the first clip (clip frame)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    paths = out_dir / "lane_paths.png"
    atomic_save_figure(fig, paths, dpi=110)
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(5, 4))
    ax.scatter(acc, e2e, s=14)  # type: ignore[arg-type]
    ax.set(xlabel="TuSimple accuracy", ylabel="E2E-LD (m)", title="Conventional accuracy vs E2E-LD")
    fig.tight_layout()
    scatter = out_dir / "lane_accuracy_vs_e2e.png"
    atomic_save_figure(fig, scatter, dpi=110)
    plt.close(fig)
    return [traj, paths, scatter]


def run(out_dir: Path, seed: int = 0, quick: bool = False, figures: bool = True) -> str:
    """Write the lane figures under ``out_dir`` (``figures=True``) and return the tables."""
    from drivemetrics.lane.stats import pearson_r

    result = evaluate_scenarios(seed, quick)
    names: list[str] = result["names"]  # type: ignore[assignment]
    per = int(result["clips_per_model"])  # type: ignore[arg-type]
    columns = ("accuracy", "f1", "culane_f1", "psld", "e2e")
    header = f"{'detector error model':<24} {'TuSimple acc':>12} {'TuSimple F1':>11} {'CULane F1':>9} "
    header += f"{'PSLD (m)':>9} {'E2E-LD (m)':>10}"
    lines = [f"{len(names) * per} scenarios = {len(names)} error models x {per} clips (random error scale)", header]
    for i, name in enumerate(names):
        sl = slice(i * per, (i + 1) * per)
        values = [float(result[c][sl].mean()) for c in columns]  # type: ignore[index]
        lines.append(
            f"{name:<24} {values[0]:>12.3f} {values[1]:>11.3f} {values[2]:>9.3f} {values[3]:>9.4f} {values[4]:>10.3f}"
        )
    lines.append("")
    lines.append("Pearson r with E2E-LD over all scenarios (p-value):")
    for column, label in (("accuracy", "TuSimple accuracy"), ("f1", "TuSimple F1"), ("culane_f1", "CULane F1")):
        lines.append(_corr_line(label, result[column], result["e2e"], pearson_r))  # type: ignore[arg-type]
    lines.append(_corr_line("PSLD", result["psld"], result["e2e"], pearson_r))  # type: ignore[arg-type]
    if figures:
        lines.append("")
        lines.extend(f"figure: {path}" for path in _plot(result, Path(out_dir)))
    return "\n".join(lines)


def _corr_line(label: str, a: torch.Tensor, b: torch.Tensor, pearson_r: object) -> str:
    try:
        corr = pearson_r(a, b)  # type: ignore[operator]
    except ValueError as err:  # e.g. a constant metric on very few scenarios
        return f"  {label:<18} undefined ({err})"
    return f"  {label:<18} r = {float(corr.r):+.3f}  (p = {float(corr.p_value):.2g})"
