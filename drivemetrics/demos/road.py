"""The road section of ``drivemetrics demo``: synthetic detectors scored with the KITTI-ROAD pixel metrics.

Scenes come from :mod:`drivemetrics.synthetic` (random roads seen by the embedded KITTI um_000000 camera). Each
synthetic detector produces 8-bit confidence maps (like KITTI result PNGs) and is evaluated pooled over the scenes

- in perspective (:class:`~drivemetrics.road.pixel.RoadPixelMetrics`),
- in BEV the KITTI-server way: prediction and GT warped with the devkit's lookup (``space="bev"``),
- in BEV rendered directly from the scene (exact BEV GT; confidences evaluated at the cell centers).

A mean-of-GT baseline prior (the KITTI-ROAD "location potential") built from other random scenes is scored too.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import Tensor

from drivemetrics._internal.extras import pyplot_for_files
from drivemetrics._internal.files import atomic_save_figure
from drivemetrics.demos.corridor import corridor_section
from drivemetrics.geometry.bev import BevGrid
from drivemetrics.road.pixel import RoadPixelMetrics
from drivemetrics.synthetic import (
    KITTI_IMAGE_SIZE,
    baseline_prior,
    default_image_from_road,
    render_bev,
    render_perspective,
    sample_detector,
    sample_road_geometry,
)

__all__ = ["BASELINE", "DEMO_DETECTORS", "evaluate_detectors", "format_table", "run"]

#: The detectors of the demo: preset name -> label.
DEMO_DETECTORS: dict[str, str] = {
    "good": "good",
    "blurry_far": "blurry far range",
    "shadowed": "shadow-sensitive",
    "sidewalk_happy": "sidewalk-happy",
}
BASELINE = "mean-of-GT prior"


def _to_uint8(confidence: Tensor) -> Tensor:
    """Quantise confidences in [0, 1] like a KITTI result PNG (``round(255 p)``)."""
    return (confidence * 255).round().to(torch.uint8)


def evaluate_detectors(
    seed: int = 0, num_scenes: int = 8, prior_scenes: int = 32, grid: BevGrid | None = None
) -> dict[str, dict[str, dict[str, Tensor]]]:
    """Score the demo detectors and the baseline prior on ``num_scenes`` random scenes.

    Returns ``{label: {"perspective": scores, "bev": scores, "bev_rendered": scores}}`` with the dicts of
    :class:`RoadPixelMetrics`. ``bev`` warps the perspective maps the devkit way; ``bev_rendered`` scores maps
    rendered directly on the BEV grid (GT exact there, don't care outside the camera view).
    """
    grid = BevGrid() if grid is None else grid
    gen = torch.Generator().manual_seed(seed)
    geometry = sample_road_geometry(num_scenes, gen)
    camera = default_image_from_road()
    homographies = camera.expand(num_scenes, 3, 3)
    persp_gt = render_perspective(geometry)
    bev_gt = render_bev(geometry, grid)
    prior_gen = torch.Generator().manual_seed(seed + 1)
    prior_persp = baseline_prior(prior_scenes, prior_gen, target="road", space="perspective")
    prior_bev = baseline_prior(prior_scenes, prior_gen, target="road", space="bev", grid=grid)

    maps: dict[str, tuple[Tensor, Tensor]] = {}
    for preset, label in DEMO_DETECTORS.items():
        detector = sample_detector(preset, geometry, gen)
        # the confidence is a function of the road point: reuse the projections of the GT renderings
        persp_conf = detector.confidence(geometry, persp_gt.coords, persp_gt.x, persp_gt.z, persp_gt.on_ground)
        bev_conf = detector.confidence(geometry, bev_gt.coords, bev_gt.x, bev_gt.z, bev_gt.on_ground)
        maps[label] = (persp_conf, bev_conf)
    maps[BASELINE] = (prior_persp.expand(num_scenes, -1, -1), prior_bev.expand(num_scenes, -1, -1))

    results: dict[str, dict[str, dict[str, Tensor]]] = {}
    for label, (persp_conf, bev_conf) in maps.items():
        persp = RoadPixelMetrics()
        persp.update(_to_uint8(persp_conf), persp_gt.road, valid=persp_gt.valid)
        bev = RoadPixelMetrics(space="bev", grid=grid)
        bev.update(_to_uint8(persp_conf), persp_gt.road, valid=persp_gt.valid, homography=homographies)
        rendered = RoadPixelMetrics()
        rendered.update(_to_uint8(bev_conf), bev_gt.road, valid=bev_gt.valid)
        results[label] = {"perspective": persp.compute(), "bev": bev.compute(), "bev_rendered": rendered.compute()}
    results["_maps"] = {
        "scene0": {"persp_gt": persp_gt.road[0], "bev_gt": bev_gt.road[0], "bev_valid": bev_gt.valid[0]}
    }
    for label, (persp_conf, bev_conf) in maps.items():
        results["_maps"][label] = {"persp": persp_conf[0], "bev": bev_conf[0]}  # type: ignore[dict-item]
    return results


def format_table(results: dict[str, dict[str, dict[str, Tensor]]]) -> str:
    """The demo table: MaxF, AP (11-point), PRE / REC at the working point, perspective vs BEV, in %."""
    head = (
        f"{'detector':<20} | {'perspective':^27} | {'BEV (devkit warp)':^27} | {'BEV rendered':^13}\n"
        f"{'':<20} | {'max_f':>6} {'AP':>6} {'PRE':>6} {'REC':>6} | {'max_f':>6} {'AP':>6} {'PRE':>6} {'REC':>6} |"
        f" {'max_f':>6} {'AP':>6}"
    )
    lines = [head, "-" * len(head.splitlines()[1])]
    for label, spaces in results.items():
        if label.startswith("_"):
            continue
        cells = []
        for space in ("perspective", "bev"):
            s = spaces[space]
            cells.append(
                " ".join(
                    f"{100 * float(s[k]):6.2f}" for k in ("max_f", "average_precision", "precision_wp", "recall_wp")
                )
            )
        r = spaces["bev_rendered"]
        cells.append(f"{100 * float(r['max_f']):6.2f} {100 * float(r['average_precision']):6.2f}")
        lines.append(f"{label:<20} | " + " | ".join(cells))
    return "\n".join(lines)


def _figures(results: dict[str, dict[str, dict[str, Tensor]]], out_dir: Path, grid: BevGrid) -> list[Path]:
    plt = pyplot_for_files()

    written = []
    labels = [k for k in results if not k.startswith("_")]
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
    for ax, space, title in zip(
        axes, ("perspective", "bev", "bev_rendered"), ("perspective", "BEV (devkit warp)", "BEV rendered"), strict=True
    ):
        for label in labels:
            s = results[label][space]
            kept = s["recall"] > 0
            recall, precision = s["recall"][kept].cpu().numpy(), s["precision"][kept].cpu().numpy()
            ax.plot(recall, precision, label=f"{label} (MaxF {100 * float(s['max_f']):.1f})")
        ax.set(xlabel="recall", ylabel="precision", title=title, xlim=(0, 1), ylim=(0, 1.02))
        ax.legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    written.append(out_dir / "road_pr_curves.png")
    atomic_save_figure(fig, written[-1], dpi=90)
    plt.close(fig)

    maps = results["_maps"]
    extent = (grid.x_min, grid.x_max, grid.z_min, grid.z_max)
    fig, axes = plt.subplots(1, len(labels), figsize=(3 * len(labels), 5.5))
    for ax, label in zip(axes, labels, strict=True):
        conf = maps[label]["bev"].float().masked_fill(~maps["scene0"]["bev_valid"], float("nan"))
        ax.imshow(conf.cpu().numpy(), extent=extent, vmin=0, vmax=1, cmap="magma")
        gt = maps["scene0"]["bev_gt"].float().flip(0).cpu().numpy()
        ax.contour(gt, levels=[0.5], colors="cyan", extent=extent)
        ax.set(title=label, xlabel="X [m]")
    axes[0].set_ylabel("Z [m]")
    fig.suptitle("BEV confidence (scene 0), GT road boundary in cyan; blank: outside the camera view")
    fig.tight_layout()
    written.append(out_dir / "road_bev_overlays.png")
    atomic_save_figure(fig, written[-1], dpi=80)
    plt.close(fig)

    fig, axes = plt.subplots(len(labels), 1, figsize=(8, 2.3 * len(labels)))
    for ax, label in zip(axes, labels, strict=True):
        ax.imshow(maps[label]["persp"].float().cpu().numpy(), vmin=0, vmax=1, cmap="magma")
        ax.contour(maps["scene0"]["persp_gt"].float().cpu().numpy(), levels=[0.5], colors="cyan")
        ax.set_title(label, fontsize=9)
        ax.axis("off")
    fig.tight_layout()
    written.append(out_dir / "road_perspective.png")
    atomic_save_figure(fig, written[-1], dpi=80)
    plt.close(fig)
    return written


def run(out_dir: Path, seed: int = 0, quick: bool = False, figures: bool = True) -> str:
    """Evaluate the synthetic detectors, save figures under ``out_dir`` (``figures=True``), return the table.

    ``quick=True`` uses 2 scenes and a prior from 4 scenes (a few seconds); otherwise 16 scenes and 64.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    grid = BevGrid()
    results = evaluate_detectors(seed, num_scenes=2 if quick else 16, prior_scenes=4 if quick else 64, grid=grid)
    if figures:
        _figures(results, out_dir, grid)
    h, w = KITTI_IMAGE_SIZE
    text = [
        f"KITTI-ROAD pixel metrics on {2 if quick else 16} synthetic scenes ({h} x {w} px, KITTI um_000000 camera; "
        f"BEV {grid.rows} x {grid.cols} cells of {grid.resolution} m), pooled, in %:",
        format_table(results),
        "BEV (devkit warp): perspective maps warped like the KITTI server; BEV rendered: maps drawn on the grid.",
    ]
    text.append(corridor_section(out_dir, seed, quick, figures=figures))
    return "\n".join(text)
