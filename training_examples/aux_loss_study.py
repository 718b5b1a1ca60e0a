"""Which driving-oriented auxiliary lane loss lowers the closed-loop deviation? A powered, seed-paired study.

The task, the network and the held-out curvature shift are those of ``loss_study.py`` (``RowLaneNet``; few
training clips with gentle curves, occlusions and label noise; held-out clips with sharper curves and clean
labels). Every setting trains the same detector with the baseline loss (cross-entropy over the column bins + L1 /
10 px) plus ``weight x`` one auxiliary loss on the soft-argmax lane points:

* ``none``: the baseline;
* ``LookaheadLaneLoss``: center, heading and width on the road over 0.5 s to 2 s of travel;
* ``ControlWeightedLoss``: a per-point L1 weighted by the frozen control sensitivity ``|d PSLD / d u|`` of each
  ground-truth point (CAPO-style; weights computed once from the training labels);
* ``ExpectedPSLDLoss``: PSLD averaged over random speeds, controllers and start offsets / yaw (DRP's noise);
* ``BEVLineIoULoss``: per-line IoU on the road with a tolerance growing with distance and a near-range weight;
* ``PSLDLoss``: the plain smooth PSLD (the previous study's loss) for reference.

**Weight rule (training data only).** Before the study, baseline runs on ``pilot_seeds`` (not study seeds) probe,
at ``probes`` evenly spaced steps, the gradient norms (network parameters) of the base loss and of each auxiliary
loss on one fixed *training* batch; each loss's weight is the median ratio ``||grad base|| / ||grad aux||``,
rounded to one significant digit (the balance point: equal gradient norms). No held-out number is used to pick a
weight or a design.

**Pairing and statistics.** A seed fixes the data, the initial weights and the batch order, so every setting of a
seed sees the same everything but its loss. Per setting and metric: mean, 95 % t-interval over seeds, and the
paired difference to the baseline with its 95 % t-interval. Power: the smallest E2E-LD difference the design
detects with power 0.8 (two-sided paired t-test at 0.05, exact noncentral t), from the committed 5-seed study's
paired SD (before this study) and from this study's paired SDs (after).

Held-out scores per run as ``loss_study.py``: TuSimple accuracy / F1 (4 px), CULane F1, PSLD (m per step) and
E2E-LD (m, mean over clips). Seeds run in ``--jobs`` processes (one CPU thread each); the JSON is rewritten after
every seed, so an interrupted study leaves a usable partial result. Run::

    python training_examples/aux_loss_study.py --quick --json examples_out/aux_loss_study.json   # pipeline check
    python training_examples/aux_loss_study.py --jobs 2 --out benchmarks/results/aux_loss_study     # the full study
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import sys
import time
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling examples' models and data

from lane_psld_aux import RowLaneNet
from loss_study import FULL as LOSS_STUDY_FULL
from loss_study import LANE_METRICS, lane_data, lane_scores, t_interval

from drivemetrics.lane import BEVLineIoULoss, ControlWeightedLoss, ExpectedPSLDLoss, LookaheadLaneLoss, PSLDLoss
from drivemetrics.synthetic.lane_clips import LaneClips

REPO = Path(__file__).resolve().parents[1]
FULL_COMMAND = "python training_examples/aux_loss_study.py --jobs 2 --out benchmarks/results/aux_loss_study"
SETTINGS = ("none", "LookaheadLaneLoss", "ControlWeightedLoss", "ExpectedPSLDLoss", "BEVLineIoULoss", "PSLDLoss")

FULL: dict[str, Any] = {
    "seeds": list(range(40)),
    "pilot_seeds": [1000, 1001, 1002],
    "lane": {**LOSS_STUDY_FULL["lane"], "test": {"clips": 16, "frames": 20}},
    "losses": {
        "LookaheadLaneLoss": {"window": [0.5, 2.0], "weights": [1.0, 1.0, 1.0]},
        "ControlWeightedLoss": {"smoothing": 2, "floor": 0.1},
        "ExpectedPSLDLoss": {"samples": 3, "speed_spread": 0.15, "offset_std": 0.3, "yaw_std_deg": 1.0},
        "BEVLineIoULoss": {"radius": 0.15, "radius_growth": 0.01, "near_weight": 1.0, "near_distance": 15.0},
        "PSLDLoss": {},
    },
}
QUICK: dict[str, Any] = {
    **FULL,
    "seeds": [0, 1],
    "pilot_seeds": [1000],
    "lane": {
        **FULL["lane"],
        "train": {"clips": 4, "frames": 4},
        "test": {"clips": 2, "frames": 8},
        "steps": 12,
        "e2e_frames": 8,
        "probes": 2,
    },
}
#: The committed 5-seed study (before this one): paired SD of the E2E-LD difference (PSLD weight 50 - baseline)
#: and the baseline mean, from benchmarks/results/loss_study/loss_study.json; the a-priori power analysis uses them.
PRIOR_STUDY = REPO / "benchmarks" / "results" / "loss_study" / "loss_study.json"


# ----------------------------------------------------------------------------------------------------- the runs


class AuxRun:
    """One ``RowLaneNet`` with the base loss and ``weight x`` one auxiliary loss (``"none"``: none)."""

    def __init__(self, config: dict[str, Any], clips: LaneClips, loss: str, weight: float) -> None:
        lane = config["lane"]
        self.net = RowLaneNet(clips.h_samples, lane["width"], lane["downsample"])
        self.h_samples = clips.h_samples.double()
        self.image_from_road = clips.image_from_road.double()
        self.z_samples = clips.z_samples.double()
        self.loss_name, self.weight = loss, weight
        self.aux = make_aux_losses(config, self.z_samples)

    def lanes_uv(self, logits: Tensor) -> Tensor:
        """``(B, 2, N, 2)`` lane points ``(u, v)`` in pixels (float64)."""
        u = self.net.to_pixels(logits.double())
        return torch.stack([u, self.h_samples.expand_as(u)], -1)

    def target_uv(self, lanes: Tensor) -> Tensor:
        """Ground-truth points ``(B, 2, N, 2)`` of row-wise x ``(B, 2, N)`` (NaN = absent)."""
        lanes = lanes.double()
        return torch.stack([lanes, self.h_samples.expand_as(lanes)], -1)

    def base_loss(self, logits: Tensor, lanes: Tensor) -> Tensor:
        """Cross-entropy over the column bins + L1 / 10 px of the soft-argmax x (as ``loss_study.py``)."""
        d = self.net.downsample
        seen = ~torch.isnan(lanes)
        target_bin = ((lanes - (d - 1) / 2) / d).round().clamp(0, logits.shape[-1] - 1).long()
        ce = torch.nn.functional.cross_entropy(logits.flatten(0, 2), torch.where(seen, target_bin, -100).flatten())
        return ce + (self.net.to_pixels(logits) - lanes)[seen].abs().mean() / 10.0

    def aux_loss(self, name: str, uv: Tensor, batch: dict[str, Tensor]) -> Tensor:
        """Auxiliary loss ``name`` of predicted points ``uv`` on a batch."""
        target = self.target_uv(batch["lanes"])
        fn, h = self.aux[name], self.image_from_road
        if name == "LookaheadLaneLoss":
            return fn(uv, target, image_from_road=h, speed=batch["speed"])
        if name == "ControlWeightedLoss":
            return fn(uv, target, weights=batch["control_weights"])
        if name == "ExpectedPSLDLoss":
            return fn(uv, batch["center"], speed=batch["speed"], image_from_road=h)
        if name == "BEVLineIoULoss":
            return fn(uv, target, image_from_road=h)
        return fn(uv, batch["center"], speed=batch["speed"], image_from_road=h)  # PSLDLoss

    def loss(self, batch: dict[str, Tensor]) -> Tensor:
        logits = self.net(batch["images"])
        loss = self.base_loss(logits, batch["lanes"])
        if self.loss_name != "none":
            loss = loss + self.weight * self.aux_loss(self.loss_name, self.lanes_uv(logits), batch)
        return loss

    def probe(self, batch: dict[str, Tensor]) -> dict[str, Any]:
        """Base and auxiliary losses on ``batch``: parameter-gradient norms, their ratio and cosine, and the share
        of each auxiliary gradient per image row."""
        params = [p for p in self.net.parameters() if p.requires_grad]
        logits = self.net(batch["images"])
        base = self.base_loss(logits, batch["lanes"])
        g_base = torch.cat([g.flatten() for g in torch.autograd.grad(base, params, retain_graph=True)]).double()
        out: dict[str, Any] = {"base_loss": float(base.detach()), "grad_norm_base": float(g_base.norm())}
        for name in self.aux:
            uv = self.lanes_uv(logits)
            value = self.aux_loss(name, uv, batch)
            g_uv, *g = torch.autograd.grad(value, [uv, *params], retain_graph=True)
            flat = torch.cat([x.flatten() for x in g]).double()
            norm = float(flat.norm())
            rows = g_uv[..., 0].abs().sum((0, 1))
            out[name] = {
                "loss": float(value.detach()),
                "grad_norm": norm,
                "grad_ratio": float(g_base.norm()) / max(norm, 1e-300),
                "grad_cosine": float(g_base @ flat / max(float(g_base.norm()) * norm, 1e-300)),
                "row_share": (rows / rows.sum().clamp_min(1e-300)).tolist(),
            }
        return out


def make_aux_losses(config: dict[str, Any], z_samples: Tensor) -> dict[str, torch.nn.Module]:
    """The auxiliary losses with the study's options (``validate_args=False``: no host syncs in training)."""
    o, horizon = config["losses"], config["lane"]["horizon_frames"]
    return {
        "LookaheadLaneLoss": LookaheadLaneLoss(window=tuple(o["LookaheadLaneLoss"]["window"]),
                                               weights=tuple(o["LookaheadLaneLoss"]["weights"]), validate_args=False),
        "ControlWeightedLoss": ControlWeightedLoss(horizon_frames=horizon, validate_args=False,
                                                   **o["ControlWeightedLoss"]),
        "ExpectedPSLDLoss": ExpectedPSLDLoss(input_type="points", z_samples=z_samples, horizon_frames=horizon,
                                             validate_args=False, **o["ExpectedPSLDLoss"]),
        "BEVLineIoULoss": BEVLineIoULoss(validate_args=False, **o["BEVLineIoULoss"]),
        "PSLDLoss": PSLDLoss("points", z_samples=z_samples, horizon_frames=horizon, validate_args=False),
    }  # fmt: skip


def seed_data(config: dict[str, Any], seed: int) -> tuple[dict[str, Tensor], dict[str, Tensor], LaneClips]:
    """``loss_study.py``'s training frames (noisy labels) and held-out clips, plus the frozen control-sensitivity
    weights of the training labels (``control_weights``)."""
    train, test, clips = lane_data(config["lane"], seed)
    o = config["losses"]["ControlWeightedLoss"]
    loss = ControlWeightedLoss(horizon_frames=config["lane"]["horizon_frames"], **o)
    lanes = train["lanes"].double()
    target = torch.stack([lanes, clips.h_samples.double().expand_as(lanes)], -1)
    train["control_weights"] = loss.sensitivity(target, train["center"], speed=train["speed"],
                                                image_from_road=clips.image_from_road.double(),
                                                z_samples=clips.z_samples.double())  # fmt: skip
    return train, test, clips


KEYS = ("images", "lanes", "center", "speed", "control_weights")


def train_run(config: dict[str, Any], data: dict[str, Tensor], clips: LaneClips, loss: str, weight: float, seed: int,
              probes: bool = False) -> tuple[AuxRun, list[dict[str, Any]]]:  # fmt: skip
    """Train one detector (seeded: same initial weights and batches for every setting); optional probes."""
    lane = config["lane"]
    torch.manual_seed(seed)
    run = AuxRun(config, clips, loss, weight)
    opt = torch.optim.Adam(run.net.parameters(), lr=lane["lr"])
    gen = torch.Generator().manual_seed(seed)
    count, size, steps = len(data["images"]), lane["batch_size"], lane["steps"]
    probe_batch = {k: data[k][:size] for k in KEYS}
    probe_steps = {round(i * steps / (lane["probes"] - 1)) for i in range(lane["probes"])} if probes else set()
    found: list[dict[str, Any]] = []
    order, cursor = torch.randperm(count, generator=gen), 0
    torch.manual_seed(10_000_000 + seed)  # the ExpectedPSLDLoss draws: the same stream for every setting
    for step in range(steps + 1):
        if step in probe_steps:
            found.append({"step": step, **run.probe(probe_batch)})
        if step == steps:
            break
        if cursor + size > count:
            order, cursor = torch.randperm(count, generator=gen), 0
        index = order[cursor : cursor + size]
        cursor += size
        loss_value = run.loss({k: data[k][index] for k in KEYS})
        opt.zero_grad()
        loss_value.backward()
        opt.step()
    return run, found


# ------------------------------------------------------------------------------------------------ weight rule


def balance_weights(config: dict[str, Any], log: Any) -> dict[str, Any]:
    """The weight rule: baseline runs on the pilot seeds, gradient-norm ratios on a training batch (no held-out
    data), median per loss, one significant digit."""
    probes: list[dict[str, Any]] = []
    for seed in config["pilot_seeds"]:
        train, _, clips = seed_data(config, seed)
        _, found = train_run(config, train, clips, "none", 0.0, seed, probes=True)
        probes += found
        ratios = ", ".join(f"{n} {found[-1][n]['grad_ratio']:.3g}" for n in config["losses"])
        log(f"pilot seed {seed}: gradient-norm ratio base / aux at the last probe: {ratios}")
    out: dict[str, Any] = {"rule": "median over pilot baseline probes of ||grad base|| / ||grad aux|| (network "
                           "parameters, one fixed training batch), rounded to one significant digit",
                           "pilot_seeds": config["pilot_seeds"], "probes": len(probes), "losses": {}}  # fmt: skip
    for name in config["losses"]:
        ratios = torch.tensor([p[name]["grad_ratio"] for p in probes], dtype=torch.float64)
        median = float(ratios.median())
        exponent = math.floor(math.log10(median))
        weight = float(f"{round(median / 10**exponent) * 10**exponent:.1g}")
        rows = torch.tensor([p[name]["row_share"] for p in probes]).mean(0)
        out["losses"][name] = {
            "weight": weight,
            "grad_norm_ratio_median": median,
            "grad_norm_ratio_range": [float(ratios.min()), float(ratios.max())],
            "grad_cosine_mean": float(torch.tensor([p[name]["grad_cosine"] for p in probes]).mean()),
            "row_share_mean": rows.tolist(),
            "top3_row_share": float(rows.sort(descending=True).values[:3].sum()),
        }
    return out


# ----------------------------------------------------------------------------------------------------- power


def detectable_difference(sd: float, n: int, power: float = 0.8, alpha: float = 0.05) -> float:
    """Smallest true mean paired difference a two-sided paired t-test at ``alpha`` finds with ``power`` (exact,
    noncentral t), for ``n`` pairs with difference SD ``sd``."""
    from scipy import optimize, stats

    df = n - 1
    crit = stats.t.ppf(1 - alpha / 2, df)

    def achieved(effect: float) -> float:
        nc = effect / (sd / math.sqrt(n))
        value = float(stats.nct.sf(crit, df, nc) + stats.nct.cdf(-crit, df, nc))
        return (1.0 if math.isnan(value) else value) - power  # scipy's nct gives NaN far in the tail (power ~ 1)

    return float(optimize.brentq(achieved, 1e-12 * sd, (crit + 10.0) * sd / math.sqrt(n)))


def prior_power(seeds: int) -> dict[str, Any]:
    """A-priori power from the committed 5-seed study (before this one): its paired E2E-LD SD (weight 50 vs 0)."""
    if not PRIOR_STUDY.exists():
        return {}
    lane = json.loads(PRIOR_STUDY.read_text())["lane"]
    base = lane["settings"][0]["metrics"]["e2e_ld"]["mean"]
    sds = {f"{s['weight']:g}": s["difference_to_baseline"]["e2e_ld"]["sd"] for s in lane["settings"][1:]}
    sd = sds.get("50", next(iter(sds.values())))
    mde = detectable_difference(sd, seeds)
    return {"source": str(PRIOR_STUDY.relative_to(REPO)), "paired_sd_e2e_ld": sd, "baseline_e2e_ld": base,
            "seeds": seeds, "detectable_difference_m": mde, "detectable_relative": mde / base,
            "seeds_for_20_percent": _seeds_for(0.2 * base, sd)}  # fmt: skip


def _seeds_for(effect: float, sd: float) -> int:
    n = 3
    while detectable_difference(sd, n) > effect and n < 10_000:
        n += 1
    return n


def posterior_power(settings: list[dict[str, Any]]) -> dict[str, Any]:
    """Per setting: the E2E-LD difference detectable with power 0.8 at this study's seeds and paired SD."""
    base = settings[0]["metrics"]["e2e_ld"]["mean"]
    out = {}
    for s in settings[1:]:
        d = s["difference_to_baseline"]["e2e_ld"]
        mde = detectable_difference(d["sd"], d["n"])
        out[s["loss"]] = {"paired_sd": d["sd"], "seeds": d["n"], "detectable_difference_m": mde,
                          "detectable_relative": mde / base}  # fmt: skip
    return out


# ------------------------------------------------------------------------------------------------------ study


def one_seed(config: dict[str, Any], weights: dict[str, float], seed: int) -> list[dict[str, Any]]:
    """Every setting on one seed (one process, one thread)."""
    torch.set_num_threads(1)
    train, test, clips = seed_data(config, seed)
    runs = []
    for loss in SETTINGS:
        start = time.perf_counter()
        weight = weights.get(loss, 0.0)
        run, _ = train_run(config, train, clips, loss, weight, seed)
        scores = lane_scores(run, test, clips, config["lane"])
        runs.append({"loss": loss, "weight": weight, "seed": seed, "scores": scores,
                     "seconds": round(time.perf_counter() - start, 2)})  # fmt: skip
    return runs


def summarise(runs: list[dict[str, Any]], weights: dict[str, float]) -> list[dict[str, Any]]:
    """Per setting: metrics and paired differences to the baseline over the seeds done by every setting."""
    by = {(r["loss"], r["seed"]): r["scores"] for r in runs}
    seeds = sorted({r["seed"] for r in runs if all((loss, r["seed"]) in by for loss in SETTINGS)})
    out = []
    if len(seeds) < 2:
        return out
    for loss in SETTINGS:
        entry: dict[str, Any] = {"loss": loss, "weight": weights.get(loss, 0.0), "seeds": seeds, "metrics": {},
                                 "difference_to_baseline": {}}  # fmt: skip
        for m in LANE_METRICS:
            entry["metrics"][m] = t_interval([by[(loss, s)][m] for s in seeds])
            if loss != "none":
                entry["difference_to_baseline"][m] = t_interval([by[(loss, s)][m] - by[("none", s)][m] for s in seeds])
        if loss != "none":
            base = entry["metrics"]["e2e_ld"]["mean"] - entry["difference_to_baseline"]["e2e_ld"]["mean"]
            d = entry["difference_to_baseline"]
            entry["relative_e2e_ld_change"] = d["e2e_ld"]["mean"] / base
            lower = d["e2e_ld"]["mean"] <= -0.2 * base and d["e2e_ld"]["ci95"][1] < 0
            f1_kept = d["tusimple_f1"]["mean"] >= -0.01 and d["culane_f1"]["mean"] >= -0.01
            entry["goal_met"] = bool(lower and f1_kept)
        out.append(entry)
    return out


def figure(path: Path, lane: dict[str, Any]) -> None:
    """Per-seed paired E2E-LD differences to the baseline (dots, one per seed) with mean and 95 % interval, and
    the same for TuSimple F1."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from drivemetrics._internal.files import atomic_save_figure

    settings = lane["settings"][1:]
    fig, axes = plt.subplots(1, 2, figsize=(14, 4.2))
    for ax, metric, unit, scale in ((axes[0], "e2e_ld", "E2E-LD difference [cm]", 100.0),
                                    (axes[1], "tusimple_f1", "TuSimple F1 difference", 1.0)):  # fmt: skip
        for i, s in enumerate(settings):
            d = s["difference_to_baseline"][metric]
            jitter = torch.linspace(-0.15, 0.15, len(d["values"])).tolist()
            ax.plot([i + j for j in jitter], [scale * v for v in d["values"]], ".", color=f"C{i}", alpha=0.5)
            low, high = (scale * v for v in d["ci95"])
            ax.errorbar(i + 0.3, scale * d["mean"], yerr=[[scale * d["mean"] - low], [high - scale * d["mean"]]],
                        fmt="o", color="k", capsize=4)  # fmt: skip
        ax.axhline(0, color="grey", lw=0.8)
        if metric == "e2e_ld":
            base = lane["settings"][0]["metrics"]["e2e_ld"]["mean"]
            ax.axhline(-0.2 * scale * base, color="C3", lw=0.8, ls="--", label="goal: -20 % of the baseline")
            ax.legend(fontsize=8)
        ax.set_xticks(range(len(settings)), [f"{s['loss']}\nx {s['weight']:g}" for s in settings], fontsize=7)
        ax.set_ylabel(unit)
        ax.set_title(f"held-out {metric}: setting - baseline per seed (n = {len(settings[0]['seeds'])}), mean, 95 % CI",
                     fontsize=9)  # fmt: skip
    fig.tight_layout()
    atomic_save_figure(fig, path, dpi=100)
    plt.close(fig)


def run(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 seeds, tiny runs: checks the pipeline, not the effect")
    parser.add_argument(
        "--out", default=str(REPO / "examples_out" / "aux_loss_study"), help="folder of JSON and figure"
    )
    parser.add_argument("--json", metavar="PATH", help="write the JSON here instead of OUT/aux_loss_study.json")
    parser.add_argument("--figure", metavar="PATH", help="write the figure here instead of OUT/aux_loss_study.png")
    parser.add_argument("--jobs", type=int, default=1, help="processes running seeds side by side (1 thread each)")
    parser.add_argument("--seeds", type=int, metavar="N", help="run only the first N seeds of the design")
    parser.add_argument("--report", metavar="JSON", help="redraw the figure (under --out) of a finished study")
    parser.add_argument(
        "--weight-rule",
        metavar="JSON",
        help="take the weight rule's output from an earlier run's "
        "JSON (same pilot seeds and config) instead of rerunning the pilot",
    )
    parser.add_argument("--deadline", metavar="HH:MM", help="UTC time: start no seed that would not finish by then "
                        "(estimated from the slowest seed so far); the seeds done make the result")  # fmt: skip
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    out = Path(args.out)
    json_path = Path(args.json) if args.json else out / "aux_loss_study.json"
    figure_path = Path(args.figure) if args.figure else out / "aux_loss_study.png"
    if args.report:
        result = json.loads(Path(args.report).read_text())
        figure(figure_path, result["lane"])
        return result
    if args.jobs < 1:
        parser.error("--jobs must be >= 1")
    config = json.loads(json.dumps(QUICK if args.quick else FULL))
    if args.seeds is not None:
        if args.seeds < 2:
            parser.error("--seeds must be >= 2")
        config["seeds"] = config["seeds"][: args.seeds]
    log = print
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    start = time.perf_counter()
    from drivemetrics._internal.files import atomic_write_text

    result: dict[str, Any] = {
        "study": "aux_loss_study",
        "quick": args.quick,
        "command": FULL_COMMAND if not args.quick else "python training_examples/aux_loss_study.py --quick",
        "argv": ["python", "training_examples/aux_loss_study.py", *(sys.argv[1:] if argv is None else argv)],
        "seeds": config["seeds"],
        "config": config,
        "machine": {
            "platform": platform.platform(),
            "processor": platform.processor() or platform.machine(),
            "cpus": __import__("os").cpu_count(),
            "jobs": args.jobs,
            "threads_per_job": 1,
            "torch": torch.__version__,
        },
        "power_prior": prior_power(len(config["seeds"])),
    }
    try:
        if args.weight_rule:
            earlier = json.loads(Path(args.weight_rule).read_text())
            if earlier["config"]["pilot_seeds"] != config["pilot_seeds"] or earlier["config"]["lane"] != config["lane"]:
                parser.error(f"--weight-rule {args.weight_rule}: pilot seeds or lane config differ from this run's")
            weights_info = {**earlier["weight_rule"], "from": args.weight_rule}
        else:
            weights_info = balance_weights(config, lambda line: log(line, flush=True))
        weights = {name: info["weight"] for name, info in weights_info["losses"].items()}
        result["weight_rule"] = weights_info
        log(f"weights: {weights}", flush=True)
        runs: list[dict[str, Any]] = []

        def write() -> None:
            settings = summarise(runs, weights)
            result["lane"] = {"settings": settings, "runs": runs, "seeds_done": sorted({r["seed"] for r in runs})}
            if settings:
                result["power_posterior"] = posterior_power(settings)
            result["seconds"] = round(time.perf_counter() - start, 1)
            atomic_write_text(json_path, json.dumps(result, indent=1) + "\n")

        if args.jobs == 1:
            for seed in config["seeds"]:
                runs += one_seed(config, weights, seed)
                log(_seed_line(runs, seed), flush=True)
                write()
        else:
            import multiprocessing

            deadline = _deadline(args.deadline) if args.deadline else None
            slowest = 0.0
            with multiprocessing.get_context("spawn").Pool(args.jobs) as pool:
                pending = list(config["seeds"])
                flying: dict[int, tuple[Any, float]] = {}
                while pending or flying:
                    while pending and len(flying) < args.jobs:
                        if deadline is not None and time.time() + 1.1 * slowest > deadline:
                            log(f"deadline {args.deadline}: seeds {pending} not started", flush=True)
                            result["seeds_not_started"] = pending
                            pending = []
                            break
                        seed = pending.pop(0)
                        flying[seed] = (pool.apply_async(one_seed, (config, weights, seed)), time.time())
                    done = [seed for seed, (job, _) in flying.items() if job.ready()]
                    for seed in done:
                        job, started = flying.pop(seed)
                        runs += job.get()
                        slowest = max(slowest, time.time() - started)
                        log(_seed_line(runs, seed), flush=True)
                        write()
                    if not done:
                        time.sleep(2.0)
        write()
        if result["lane"]["settings"]:
            figure(figure_path, result["lane"])
    finally:
        torch.set_num_threads(threads)
    return result


def _deadline(text: str) -> float:
    """Epoch seconds of the next ``HH:MM`` UTC (today, or tomorrow when already past)."""
    import datetime as dt

    hours, minutes = (int(x) for x in text.split(":"))
    now = dt.datetime.now(dt.timezone.utc)
    when = now.replace(hour=hours, minute=minutes, second=0, microsecond=0)
    if when < now:
        when += dt.timedelta(days=1)
    return when.timestamp()


def _seed_line(runs: list[dict[str, Any]], seed: int) -> str:
    mine = [r for r in runs if r["seed"] == seed]
    cells = (f"{r['loss']} {100 * r['scores']['e2e_ld']:.1f} cm ({r['seconds']:.0f} s)" for r in mine)
    return f"seed {seed}: " + ", ".join(cells)


def _cell(stats: dict[str, Any], scale: float = 1.0, digits: int = 3) -> str:
    low, high = (scale * v for v in stats["ci95"])
    return f"{scale * stats['mean']:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


def markdown_table(result: dict[str, Any]) -> str:
    """README-ready table: per setting the held-out E2E-LD, its paired difference and the F1 differences."""
    settings = result["lane"]["settings"]
    if not settings:
        return "(fewer than 2 seeds done)"
    head = ["loss", "weight", "E2E-LD [cm]", "E2E-LD - baseline [cm]", "relative", "TuSimple F1 - baseline",
            "CULane F1 - baseline", "PSLD - baseline [mm/step]"]  # fmt: skip
    lines = ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    for s in settings:
        d = s["difference_to_baseline"]
        if not d:
            lines.append(f"| none (baseline) | 0 | {_cell(s['metrics']['e2e_ld'], 100, 2)} | | | | | |")
            continue
        lines.append(f"| {s['loss']} | {s['weight']:g} | {_cell(s['metrics']['e2e_ld'], 100, 2)} | "
                     f"{_cell(d['e2e_ld'], 100, 2)} | {100 * s['relative_e2e_ld_change']:+.0f} % | "
                     f"{_cell(d['tusimple_f1'])} | {_cell(d['culane_f1'])} | "
                     f"{_cell(d['psld'], 1000, 3)} |")  # fmt: skip
    return "\n".join(lines)


def main() -> None:
    result = run()
    print(markdown_table(result))
    print(f"({result['seconds']:.0f} s, seeds {result['lane']['seeds_done']})")


if __name__ == "__main__":
    main()
