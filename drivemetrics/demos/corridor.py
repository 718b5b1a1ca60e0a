"""Demo section of the driving corridor: Table IV and Figs. 12 / 13 of Fritsch et al. (2013) on synthetic scenes.

The road demo calls :func:`corridor_section`.
"""

from __future__ import annotations

from pathlib import Path

import torch

from drivemetrics._internal.extras import pyplot_for_files
from drivemetrics._internal.files import atomic_save_figure
from drivemetrics.geometry.bev import BevGrid
from drivemetrics.road.corridor import DrivingCorridorMetrics, fit_driving_corridor
from drivemetrics.road.corridor_config import CorridorConfig

__all__ = ["corridor_section"]

_DETECTORS = ("lane_good", "lane_potholes", "lane_blurry")


def _scenes(num: int, seed: int, detector: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    from drivemetrics.synthetic import ego_lane_scenes

    # the same seed gives the same roads for every detector (geometry is drawn first)
    _, scene = ego_lane_scenes(num, torch.Generator().manual_seed(seed), detector=detector)
    assert scene.confidence is not None
    return scene.confidence, scene.lane, scene.valid


def corridor_section(out_dir: Path, seed: int, quick: bool, figures: bool = True) -> str:
    """Fit corridors for several synthetic detectors and the mean-of-GT baseline; write figures, return tables.

    With ``figures=True`` writes ``corridor_fig12.png`` (fitted corridors over BEV confidence and ground truth, like
    the paper's Fig. 12) and ``corridor_fig13.png`` (integrated precision / F1 / hitrate over the distance, Fig. 13)
    under ``out_dir``. Returns Table IV (percent) for each method.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    grid, config, threshold = BevGrid(), CorridorConfig(), 0.5
    num = 4 if quick else 8
    from drivemetrics.synthetic import mean_gt_prior

    methods: dict[str, tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = {}
    for detector in _DETECTORS:
        methods[detector] = _scenes(num, seed, detector)
    _, lanes, valid = methods[_DETECTORS[0]]
    # the KITTI baseline: the mean of ground-truth ego lanes of other scenes (a location prior)
    _, prior_lanes, prior_valid = _scenes(2 * num, seed + 1000, "lane_good")
    prior = mean_gt_prior(prior_lanes, prior_valid)
    methods["mean-of-GT prior"] = (prior.expand_as(lanes).contiguous(), lanes, valid)

    header = f"{'method':18s}" + "".join(
        f"{f'{name}@{d:g}':>10s}" for name in ("Prec", "F1", "HR") for d in config.distances
    )
    lines = [f"Driving corridor (Table IV), {num} synthetic ego-lane scenes, threshold {threshold}", header]
    curves, fits = {}, {}
    for name, (conf, target, mask) in methods.items():
        metric = DrivingCorridorMetrics(threshold, grid=grid, config=config)
        metric.update(conf, target, valid=mask)
        scores = metric.compute()
        curves[name] = metric.compute_curves()
        fits[name] = fit_driving_corridor(conf[:3], mask[:3], threshold=threshold, grid=grid, config=config)
        cells = [
            f"{100 * scores[f'{key}_{d:g}m'].item():9.1f}%"
            for key in ("precision_lat", "f1_long", "hitrate")
            for d in config.distances
        ]
        lines.append(f"{name:18s}" + "".join(cells) + f"   mean length {scores['mean_length'].item():.1f} m")
    if figures:
        _figures(out_dir, grid, methods, fits, curves)
        lines.append(f"figures: {out_dir / 'corridor_fig12.png'}, {out_dir / 'corridor_fig13.png'}")
    return "\n".join(lines)


def _figures(out_dir: Path, grid: BevGrid, methods: dict, fits: dict, curves: dict) -> None:
    plt = pyplot_for_files()

    extent = (grid.x_min, grid.x_max, grid.z_min, grid.z_max)
    names = list(methods)
    fig, axes = plt.subplots(3, len(names), figsize=(3.0 * len(names), 11), squeeze=False)
    for col, name in enumerate(names):
        conf, target, _ = methods[name]
        fit = fits[name]
        for row in range(3):
            ax = axes[row][col]
            ax.imshow(conf[row].cpu().numpy(), cmap="gray", vmin=0, vmax=1, extent=extent)
            xs, zs = (t.numpy() for t in grid.cell_centers())
            ax.contour(xs, zs, target[row].float().cpu().numpy(), levels=[0.5], colors="lime", linewidths=0.8)
            n = int(fit.num_stages[row]) * (fit.path.shape[1] - 1) // fit.wheel_angles.shape[1] + 1
            for side, colour in ((fit.left, "red"), (fit.right, "red")):
                ax.plot(side[row, :n, 0].cpu().numpy(), side[row, :n, 1].cpu().numpy(), color=colour, linewidth=1.2)
            ax.set_xlim(grid.x_min, grid.x_max)
            ax.set_ylim(grid.z_min, grid.z_max)
            ax.set_title(f"{name}\nframe {row}: {float(fit.length[row]):.1f} m", fontsize=8)
            ax.tick_params(labelsize=6)
    fig.suptitle("Driving corridor (red) over BEV confidence, GT ego lane (green)", fontsize=10)
    fig.tight_layout()
    atomic_save_figure(fig, out_dir / "corridor_fig12.png", dpi=90)
    plt.close(fig)

    fig, axes = plt.subplots(1, 3, figsize=(12, 3.5))
    for name, curve in curves.items():
        for ax, key in zip(axes, ("precision_lat", "f1_long", "hitrate"), strict=True):
            ax.plot(curve["z"].cpu().numpy(), curve[key].cpu().numpy(), label=name)
    for ax, title in zip(axes, ("integrated lateral precision", "integrated longitudinal F1", "hitrate"), strict=True):
        ax.set_title(title)
        ax.set_xlabel("distance d (m)")
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    atomic_save_figure(fig, out_dir / "corridor_fig13.png", dpi=90)
    plt.close(fig)
