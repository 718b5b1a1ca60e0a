"""DRP-style dirt-patch attack on four small lane detectors, evaluated closed loop on held-out synthetic clips.

Trains (or loads from ``--out``) one small detector per family (segmentation, row-wise classification,
polynomial, anchor; :mod:`drivemetrics.synthetic.lane_detectors`) on synthetic lane clips, then attacks each on
held-out clips with :func:`drivemetrics.attack.drp_attack`, and prints per family the benign and attacked max
lateral deviation from the lane center, E2E-LD, the zero-budget deviation (must equal the benign one) and the
success rate (a side of the car crossed an ego-lane line). Writes per family the raw optimised darkening
(``patch_texture_<family>.png``, always), and unless ``--no-figures`` a patch figure, a trajectory figure and a strip
of patched frames (clip 0) into ``--out``. The JSON holds the means over clips and, under each family's ``clips``,
the per-clip values. Settings: ``drivemetrics/configs/drp_attack.yaml``
(``drivemetrics config drp_attack`` prints it).

Run: ``PYTHONPATH=. python training_examples/drp_attack.py --quick --json out.json``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import time
from pathlib import Path

import torch

from drivemetrics.attack import DriveClips, DRPConfig, EOTNoise, PatchSpec, drp_attack, evaluate_patch, render_drive
from drivemetrics.configs import config_path
from drivemetrics.synthetic.lane_clips import LaneCamera, make_lane_clips
from drivemetrics.synthetic.lane_detectors import FAMILIES, LaneDetector, make_detector, train_detector

ROOT = Path(__file__).resolve().parents[1]
ARCH = 2  # detector architecture version, part of the cache key of the saved detectors


def load_config(path: Path, quick: bool) -> dict:
    import yaml

    if not path.is_file():
        raise FileNotFoundError(f"config file not found: {path}")
    with open(path) as handle:
        config = yaml.safe_load(handle)
    if not isinstance(config, dict) or not {"train", "attack"} <= set(config):
        raise ValueError(f"{path}: expected a mapping with `train` and `attack` sections")
    if quick:
        merge(config, config.get("quick", {}))
    return config


def merge(base: dict, override: dict) -> None:
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            merge(base[key], value)
        else:
            base[key] = value


def write_atomic(path: Path, data: bytes) -> None:
    from drivemetrics._internal.files import atomic_write_bytes

    atomic_write_bytes(path, data)


def lane_camera(config: dict) -> LaneCamera:
    """The synthetic camera of the config's ``camera`` section (default 256 x 128 px)."""
    return LaneCamera(**config.get("camera", {}))


def vanishing_point(camera: LaneCamera) -> tuple[float, float]:
    """``(u, v)`` pixels where the straight road ahead vanishes (the anchors' common point)."""
    return camera.cx, camera.cy - camera.focal * math.tan(camera.pitch)


def h_samples(camera: LaneCamera) -> torch.Tensor:
    """Detector rows: from just below the horizon to the bottom, every 4 px at 128 rows (scaled with the height)."""
    step = 4.0 * camera.height / 128
    start = math.ceil(vanishing_point(camera)[1] + 1.5 * step)
    return torch.arange(float(start), camera.height, step)


def detectors(config: dict, out: Path, retrain: bool) -> tuple[dict[str, LaneDetector], float]:
    """Train the four detectors, or load them from ``out`` when trained with the same settings."""
    train = config["train"]
    settings = {"train": train, "camera": config.get("camera", {}), "seed": config["seed"], "arch": ARCH}
    key = hashlib.sha1(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:10]
    camera = lane_camera(config)
    clips = None
    models, seconds = {}, 0.0
    for family in FAMILIES:
        path = out / "detectors" / f"{family}-{key}.pt"
        torch.manual_seed(config["seed"])
        model = make_detector(family, h_samples(camera), (camera.height, camera.width), vanishing_point(camera))
        if path.is_file() and not retrain:
            model.load_state_dict(torch.load(path))
        else:
            if clips is None:
                clips = make_lane_clips(
                    train["clips"],
                    train["frames"],
                    seed=config["seed"] + 1,
                    camera=camera,
                    max_wander=train["max_wander"],
                    h_samples=h_samples(camera),
                )
                images = clips.images.flatten(0, 1)
                target = clips.lanes_image[:, :, list(clips.ego_lanes)].flatten(0, 1).float()
            start = time.perf_counter()
            train_detector(model, images, target, train["steps"], train["batch_size"], train["lr"], config["seed"])
            seconds += time.perf_counter() - start
            buffer = __import__("io").BytesIO()
            torch.save(model.state_dict(), buffer)
            write_atomic(path, buffer.getvalue())
        models[family] = model.eval()
    return models, seconds


def attack_config(config: dict) -> DRPConfig:
    a = config["attack"]
    return DRPConfig(
        patch=PatchSpec(**a["patch"]),
        linf=a["linf"],
        l2=a["l2"],
        top_k=a["top_k"],
        direction="right" if a["direction"] == "auto" else a["direction"],
        iterations=a["iterations"],
        lr=a["lr"],
        optimizer=a["optimizer"],
        eot_samples=a["eot_samples"],
        eot=EOTNoise(),
        scheme=a["scheme"],
        target_deviation=a["target_deviation"],
        car_width=a["car_width"],
        seed=config["seed"],
    )


def held_out_clips(config: dict) -> DriveClips:
    a = config["attack"]
    camera = lane_camera(config)
    clips = make_lane_clips(
        a["clips"], a["frames"], seed=config["seed"] + 1000, camera=camera, max_wander=a["max_wander"]
    )
    return DriveClips(
        images=clips.images,
        speed=clips.speed,
        image_from_road=clips.image_from_road,
        recorded_poses=clips.poses,
        lane_center=clips.center_road,
        z_samples=clips.z_samples,
        lane_width=clips.lane_width,
    )


def clip_rows(ev) -> list[dict]:
    """Per-clip benign / attacked max deviation (m), E2E-LD (m, None without a lane center) and success."""

    def values(x: torch.Tensor | None) -> list:
        return [None] * ev.success.shape[0] if x is None else x.tolist()

    columns = {
        "benign_max_deviation_m": values(ev.benign_max_deviation),
        "attacked_max_deviation_m": values(ev.attacked_max_deviation),
        "benign_e2e_ld_m": values(ev.benign_e2e_ld),
        "attacked_e2e_ld_m": values(ev.attacked_e2e_ld),
        "benign_success": values(ev.benign_success),
        "success": values(ev.success),
    }
    return [{"clip": i, **{key: column[i] for key, column in columns.items()}} for i in range(ev.success.shape[0])]


def save_texture(path: Path, perturbation: torch.Tensor, linf: float) -> None:
    """The raw darkening ``(B, C, rows, cols)`` as an 8-bit PNG scaled by the budget (0 = none, 255 = ``linf``).

    Clips side by side (each ``cols`` pixels wide), texture row 0 = far end of the patch; RGB for three channels,
    otherwise grey (the channel mean).
    """
    from drivemetrics._internal.files import atomic_save_png

    delta = perturbation.detach().double().cpu()
    if delta.shape[1] != 3:
        delta = delta.mean(1, keepdim=True)
    scale = 255.0 / linf if linf > 0 else 0.0
    image = torch.cat(list((delta * scale).round().clamp(0, 255).to(torch.uint8)), -1)  # C x rows x (B * cols)
    atomic_save_png(path, image.permute(1, 2, 0).squeeze(-1).contiguous().numpy())


def save_figures(out: Path, family: str, drive: DriveClips, result, spec: PatchSpec) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ev = result.evaluation
    patch = result.perturbation[0].mean(0)
    fig, ax = plt.subplots(figsize=(2, 6))
    ax.imshow(
        1 - patch,
        cmap="gray",
        vmin=0,
        vmax=1,
        extent=(-spec.width / 2, spec.width / 2, spec.start, spec.start + spec.length),
    )
    ax.set(title=f"{family}\ndarkening", xlabel="X (m)", ylabel="Z ahead of start (m)")
    save_fig(fig, out / f"patch_{family}.png")
    fig, ax = plt.subplots(figsize=(7, 3))
    dist = torch.arange(ev.benign_offsets.shape[1]) / 20.0
    half = float(drive.lane_width[0]) / 2
    ax.axhline(half, color="k", lw=2)
    ax.axhline(-half, color="k", lw=2)
    ax.plot(dist, ev.benign_offsets[0], label="benign")
    ax.plot(dist, ev.attacked_offsets[0], label="attacked")
    ax.set(xlabel="time (s)", ylabel="offset from lane center (m, right +)", title=f"{family}: clip 0")
    ax.legend()
    save_fig(fig, out / f"trajectory_{family}.png")
    frames = render_drive(drive, ev.attacked_poses, result.perturbation, spec)[0, ::3, 0]
    fig, axes = plt.subplots(1, frames.shape[0], figsize=(2.2 * frames.shape[0], 1.4))
    for i, ax in enumerate(axes):
        ax.imshow(frames[i], cmap="gray", vmin=0, vmax=1)
        ax.set_axis_off()
        ax.set_title(f"t = {3 * i / 20:.2f} s", fontsize=7)
    save_fig(fig, out / f"frames_{family}.png")


def save_fig(fig, path: Path) -> None:
    import matplotlib.pyplot as plt

    from drivemetrics._internal.files import atomic_save_figure

    atomic_save_figure(fig, path, dpi=100, bbox_inches="tight")
    plt.close(fig)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=config_path("drp_attack.yaml"))
    parser.add_argument(
        "--quick",
        action="store_true",
        help="few clips and iterations: 20-40 s on a busy 2-core CPU with the detectors cached in --out, "
        "training them adds about 15 s",
    )
    parser.add_argument("--json", type=Path, default=None, help="write the results as JSON to this path")
    parser.add_argument("--out", type=Path, default=ROOT / "examples_out" / "drp_attack", help="figures + detectors")
    parser.add_argument("--retrain", action="store_true", help="train the detectors even if saved ones exist")
    parser.add_argument("--no-figures", action="store_true")
    args = parser.parse_args(argv)
    config = load_config(args.config, args.quick)
    torch.set_num_threads(int(config.get("threads", 1)))
    models, train_s = detectors(config, args.out, args.retrain)
    drive = held_out_clips(config)
    attack = attack_config(config)
    zero = DRPConfig(**{**attack.__dict__, "linf": 0.0})
    report: dict = {"device": str(drive.images.device), "families": {}}
    rates = []
    print(f"detectors trained in {train_s:.1f} s; attacking {drive.images.shape[0]} held-out clips")
    header = ("family", "benign dev", "attacked", "zero-budget", "E2E benign", "E2E att.", "success", "it/s")
    print("{:<13} {:>10} {:>9} {:>11} {:>10} {:>9} {:>8} {:>6}".format(*header))
    for family, model in models.items():
        lane_model = model.lane_model()
        for p in model.parameters():
            p.requires_grad_(False)
        rows, cols = attack.patch.shape
        blank = torch.zeros(drive.images.shape[0], attack.channels, rows, cols)
        zero_ev = evaluate_patch(drive, lane_model, blank, zero)
        # push the car the way its benign drive already leans (the attacker knows the benign drive)
        lean = float(zero_ev.benign_offsets.mean())
        direction = attack.direction if config["attack"]["direction"] != "auto" else ("right" if lean >= 0 else "left")
        result = drp_attack(drive, lane_model, DRPConfig(**{**attack.__dict__, "direction": direction}))
        rates.append(result.iterations_per_s)
        ev = result.evaluation
        row = {
            "benign_max_deviation_m": float(ev.benign_max_deviation.mean()),
            "attacked_max_deviation_m": float(ev.attacked_max_deviation.mean()),
            "zero_budget_max_deviation_m": float(zero_ev.attacked_max_deviation.mean()),
            "success_rate": float(ev.success.double().mean()),
        }
        row["clips"] = clip_rows(ev)
        report["families"][family] = row
        print(
            f"{family:<13} {row['benign_max_deviation_m']:>10.3f} {row['attacked_max_deviation_m']:>9.3f} "
            f"{row['zero_budget_max_deviation_m']:>11.3f} {float(ev.benign_e2e_ld.mean()):>10.3f} "
            f"{float(ev.attacked_e2e_ld.mean()):>9.3f} {row['success_rate']:>8.2f} {result.iterations_per_s:>6.2f}"
        )
        save_texture(args.out / f"patch_texture_{family}.png", result.perturbation, attack.linf)
        if not args.no_figures:
            save_figures(args.out, family, drive, result, attack.patch)
    report["iterations_per_s"] = sum(rates) / len(rates)
    if args.json is not None:
        write_atomic(args.json, (json.dumps(report, indent=2) + "\n").encode())
    return report


if __name__ == "__main__":
    main()
