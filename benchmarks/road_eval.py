"""End-to-end KITTI-ROAD evaluation: ``drivemetrics road-eval`` (a fresh process, start-up included) vs a plain loop.

Builds a 289-frame KITTI-ROAD-shaped folder in a temporary directory (95 um, 96 umm, 98 uu frames, as the
training split): ground truth and calibration are the fixture frames (``$DRIVEMETRICS_FIXTURES/kitti_road`` or
``../shared/fixtures/kitti_road``) replicated under new names, results are the ground truth's road channel blurred
(Gaussian, radius 8 px) and written as 8-bit PNGs.

The baseline, run in the same process and timed the same way (a fresh interpreter from the command line), is
the plain per-image loop a user would write with the devkit's algorithm: per frame, Pillow decodes the ground
truth and the result, ``v / 255`` as float32, ``np.histogram`` of the road and non-road confidences over the 256
thresholds; for BEV, each frame's devkit lookup table (``BirdsEyeView.compute``: float32 cell centers through the
calibration homography, truncation, 1-based offset) warps both maps first. Both must give the same MaxF per
category. Two more rows bound what any tool can do: the floor (the same PNGs decoded by Pillow in one thread per
core, nothing else) and a torch-free sketch of the perspective evaluation (numpy ``bincount`` counting in the same
threads, MaxF only, no checks; its MaxF asserted equal too). The CLI (numpy, no torch) is timed with its default
``--workers`` (the pool's measured policy: forked processes on the free cores once the first frames' time says
they pay), ``--workers 1`` and ``--workers 2``, with Pillow forced, and with ``--device cpu`` (the tensor path,
torch imported). The commands run interleaved (one run of each per round) and the best of the rounds is kept.
Wall time is the target; the CPU time of each process and its workers (user + system) is printed too, as a
shared machine's load inflates wall time.

    python benchmarks/road_eval.py            # 289 frames, perspective and BEV, best of 2 rounds
    python benchmarks/road_eval.py --scale 5  # 1,445 frames (the fixture frames replicated 5 times as many)
    python benchmarks/road_eval.py --quick    # 40 frames, 1 run
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image, ImageFilter

from drivemetrics._internal.png import fast_decoder

REPO_ROOT = Path(__file__).resolve().parents[1]
#: Frames per category in the KITTI-ROAD training split (289 in all).
SPLIT = {"um": 95, "umm": 96, "uu": 98}
#: Fixture frames each category's frames are copied from (cycled).
SOURCES = {"um": ["um_000000"], "umm": ["umm_000000"], "uu": ["uu_000000", "uu_000093"]}


def fixtures_kitti_road() -> Path:
    root = Path(os.environ.get("DRIVEMETRICS_FIXTURES", REPO_ROOT.parent / "shared" / "fixtures"))
    folder = root / "kitti_road" / "training"
    if not (folder / "gt_image_2").is_dir():
        sys.exit(f"KITTI-ROAD fixtures not found in {folder}: set DRIVEMETRICS_FIXTURES")
    return folder


def build_folder(out: Path, scale: float = 1.0) -> Path:
    """``out/data/{gt_image_2,calib}`` and ``out/results`` with ``sum(SPLIT) * scale`` frames; returns ``out``."""
    source = fixtures_kitti_road()
    gt_dir, calib_dir, results = out / "data" / "gt_image_2", out / "data" / "calib", out / "results"
    for folder in (gt_dir, calib_dir, results):
        folder.mkdir(parents=True)
    for cat, count in SPLIT.items():
        blurred = {}
        for frame in SOURCES[cat]:
            key = frame.replace("_", "_road_")
            road = np.asarray(Image.open(source / "gt_image_2" / f"{key}.png").convert("RGB"))[..., 2] > 0
            mask = Image.fromarray((road * 255).astype(np.uint8))
            blurred[frame] = results / f"_{frame}.png"
            mask.filter(ImageFilter.GaussianBlur(8)).save(blurred[frame])
        for i in range(max(1, round(count * scale))):
            frame = SOURCES[cat][i % len(SOURCES[cat])]
            key = f"{cat}_road_{i:06d}"
            shutil.copyfile(source / "gt_image_2" / f"{frame.replace('_', '_road_')}.png", gt_dir / f"{key}.png")
            shutil.copyfile(source / "calib" / f"{frame}.txt", calib_dir / f"{cat}_{i:06d}.txt")
            shutil.copyfile(blurred[frame], results / f"{key}.png")
        for path in blurred.values():
            path.unlink()
    return out


# ------------------------------------------------------------------------------------- baseline: the plain loop

BASELINE = r'''
import glob, json, os, sys
import numpy as np
from PIL import Image

data, results, space = sys.argv[1:4]
thresh = np.arange(256) / 255.0
edges = np.concatenate(([-np.inf], thresh, [np.inf]))


def bev_lookup(calib_path, shape):
    """The devkit's BirdsEyeView.compute lookup: (rows, cols) of the sampled pixels and the valid cells."""
    calib = {}
    for line in open(calib_path):
        if ":" in line:
            key, values = line.split(":", 1)
            calib[key] = np.array([float(v) for v in values.split()])
    p2 = calib["P2"].reshape(3, 4)
    r0 = np.eye(4)
    r0[:3, :3] = calib["R0_rect"].reshape(3, 3)
    tr = np.eye(4)
    tr[:3, :4] = calib["Tr_cam_to_road"].reshape(3, 4)
    tr33 = (p2 @ r0 @ np.linalg.inv(tr))[:, [0, 2, 3]]
    x = np.arange(-10 + 0.025, 10, 0.05)
    z = np.arange(46 - 0.025, 6, -0.05)
    xx, zz = np.meshgrid(x, z)
    xx, zz = xx.astype("f4"), zz.astype("f4")
    pts = np.stack([xx.ravel(), zz.ravel(), np.ones(xx.size, "f4")])
    uvw = tr33 @ pts
    u, v = uvw[0] / uvw[2], uvw[1] / uvw[2]
    h, w = shape
    valid = (u >= 1) & (u <= w) & (v >= 1) & (v <= h)
    rows = v[valid].astype("u4") - 1
    cols = u[valid].astype("u4") - 1
    return rows, cols, valid.reshape(xx.shape)


def warp(image, lookup):
    rows, cols, valid = lookup
    out = np.zeros(valid.shape + image.shape[2:], image.dtype)
    out[valid] = image[rows, cols]
    return out


scores = {}
for cat in ("um_road", "umm_road", "uu_road"):
    total_fn = np.zeros(256)
    total_fp = np.zeros(256)
    pos_num = neg_num = 0
    for gt_path in sorted(glob.glob(os.path.join(data, "gt_image_2", cat + "_*.png"))):
        key = os.path.basename(gt_path)[:-4]
        gt = np.asarray(Image.open(gt_path).convert("RGB"))
        prob = np.asarray(Image.open(os.path.join(results, key + ".png")).convert("L"))
        if space == "bev":
            tags = key.split("_")
            lookup = bev_lookup(os.path.join(data, "calib", tags[0] + "_" + tags[2] + ".txt"), gt.shape[:2])
            gt, prob = warp(gt, lookup), warp(prob, lookup)
        road, valid = gt[..., 2] > 0, gt[..., 0] > 0
        prob = np.clip(prob.astype("f4") / 255.0, 0.0, 1.0)
        fn_hist = np.histogram(prob[road & valid], bins=edges)[0]
        fp_hist = np.histogram(prob[~road & valid], bins=edges)[0]
        total_fn += np.cumsum(fn_hist)[:256]
        total_fp += np.flipud(np.cumsum(np.flipud(fp_hist)))[1:257]
        pos_num += int(np.sum(road & valid))
        neg_num += int(np.sum(~road & valid))
    tp = pos_num - total_fn
    recall = tp / float(pos_num)
    precision = tp / (tp + total_fp + 1e-10)
    f = 2 * precision * recall / (precision + recall + 1e-10)
    scores[cat] = float(f.max())
print(json.dumps(scores))
'''


# ------------------------------------------------------------ the floor: decoding alone, in threads, no counting

DECODE_FLOOR = r"""
import glob, os, sys
from concurrent.futures import ThreadPoolExecutor
import numpy as np
from PIL import Image

data, results, workers = sys.argv[1], sys.argv[2], int(sys.argv[3])


def decode(gt_path):
    gt = Image.open(gt_path)
    gt.load()
    bands = np.asarray(gt.getchannel(0)), np.asarray(gt.getchannel(2))
    return bands, np.asarray(Image.open(os.path.join(results, os.path.basename(gt_path))))


with ThreadPoolExecutor(workers) as pool:
    for _ in pool.map(decode, sorted(glob.glob(os.path.join(data, "gt_image_2", "*_road_*.png")))):
        pass
"""


# ------------------------------- a torch-free sketch: what a numpy-only CLI could do at best (MaxF only, no checks)

NUMPY_SKETCH = r"""
import glob, json, os, sys
from concurrent.futures import ThreadPoolExecutor
import numpy as np
from PIL import Image

import drivemetrics.cli  # noqa: F401  (the real CLI's start-up, without torch)

data, results, workers = sys.argv[1], sys.argv[2], int(sys.argv[3])


def histogram(gt_path):
    gt = Image.open(gt_path)
    gt.load()
    red, blue = np.asarray(gt.getchannel(0)), np.asarray(gt.getchannel(2))
    value = np.asarray(Image.open(os.path.join(results, os.path.basename(gt_path))))
    code = value.astype(np.uint16) | ((blue > 0).view(np.uint8).astype(np.uint16) << 8)
    return np.bincount(code[red > 0], minlength=512)


scores = {}
with ThreadPoolExecutor(workers) as pool:
    for cat in ("um_road", "umm_road", "uu_road"):
        hist = sum(pool.map(histogram, sorted(glob.glob(os.path.join(data, "gt_image_2", cat + "_*.png")))))
        tp, fp = np.cumsum(hist[256:][::-1])[::-1], np.cumsum(hist[:256][::-1])[::-1]
        precision, recall = tp / (tp + fp + 1e-10), tp / hist[256:].sum()
        scores[cat] = float((2 * precision * recall / (precision + recall + 1e-10)).max())
print(json.dumps(scores))
"""


def run_timed(argv: list[str], extra_env: dict[str, str] | None = None) -> tuple[float, float, str]:
    """``(wall s, CPU s of the child and its workers (user + system), stdout)`` of one run of ``argv``."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), **(extra_env or {})}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, check=True, capture_output=True, text=True, env=env, cwd=REPO_ROOT)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.stdout


def cli_argv(folder: Path, space: str, out: Path, workers: int | None, device: str | None) -> list[str]:
    """``drivemetrics road-eval`` on the built folder, the three road categories, writing ``out``."""
    cli = [sys.executable, "-m", "drivemetrics", "road-eval", "--gt", str(folder / "data")]
    cli += ["--pred", str(folder / "results"), "--space", space, "--no-progress", "--json", str(out)]
    cli += ["--categories", "um_road", "umm_road", "uu_road"]
    if workers is not None:
        cli += ["--workers", str(workers)]
    if device is not None:
        cli += ["--device", device]
    return cli


def commands(folder: Path, tmp: Path, cpus: int, space: str, torch_row: bool, pillow_row: bool) -> dict[str, dict]:
    """The timed commands of one space: label -> ``{argv, env, check}`` (``check``: the JSON file to compare)."""
    data, results = str(folder / "data"), str(folder / "results")
    rows: dict[str, dict] = {
        "plain loop (Pillow + np.histogram)": {"argv": [sys.executable, "-c", BASELINE, data, results, space]}
    }
    if space == "perspective":
        rows[f"floor: Pillow decoding only, {cpus} threads"] = {
            "argv": [sys.executable, "-c", DECODE_FLOOR, data, results, str(cpus)]
        }
        rows[f"sketch: numpy only, {cpus} threads"] = {
            "argv": [sys.executable, "-c", NUMPY_SKETCH, data, results, str(cpus)],
            "stdout": True,
        }
    settings: list[tuple[int | None, str | None, str]] = [(None, None, "auto"), (1, None, "auto"), (2, None, "auto")]
    if pillow_row:
        settings.append((None, None, "pillow"))
    if torch_row and space == "perspective":  # the tensor path on the CPU, for comparison (its BEV warps are slow)
        settings.append((None, "cpu", "auto"))
    for workers, device, decoder in settings:
        out = tmp / f"scores_{space}_{workers}_{device}_{decoder}.json"
        used = "pillow" if decoder == "pillow" else fast_decoder()
        label = f"road-eval --workers {workers or 'auto (default)'}{f' --device {device}' if device else ''}, {used}"
        rows[label] = {
            "argv": cli_argv(folder, space, out, workers, device),
            "env": {"DRIVEMETRICS_PNG_DECODER": decoder},
            "json": out,
        }
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="40 frames, one run each")
    parser.add_argument("--scale", type=float, default=1.0, help="frames = 289 x scale (5: 1,445 frames)")
    parser.add_argument("--repeat", type=int, default=2, help="rounds, each command once per round, best kept")
    parser.add_argument("--spaces", nargs="+", default=["perspective", "bev"], choices=("perspective", "bev"))
    parser.add_argument("--no-torch-row", action="store_true", help="skip the `--device cpu` (tensor path) row")
    parser.add_argument("--no-pillow-row", action="store_true", help="skip the row with Pillow forced as decoder")
    parser.add_argument("--out", type=Path, help="write the rows, loads and settings here as JSON")
    args = parser.parse_args()
    repeat = 1 if args.quick else args.repeat
    record: dict = {"date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "rows": []}
    with tempfile.TemporaryDirectory() as tmp:
        folder = build_folder(Path(tmp), scale=40 / 289 if args.quick else args.scale)
        frames = len(list((folder / "data" / "gt_image_2").glob("*.png")))
        cpus = os.cpu_count() or 1
        record.update(frames=frames, cpus=cpus, repeat=repeat, load_before=os.getloadavg())
        print(f"{frames} frames of ~375 x 1242, {cpus} CPU(s); wall time of a fresh process, best of {repeat} rounds")
        print(f"{'space':<12} {'command':<52} {'wall s':>7} {'frames/s':>9} {'vs loop':>8} {'CPU s':>6}")
        for space in args.spaces:
            rows = commands(folder, Path(tmp), cpus, space, not args.no_torch_row, not args.no_pillow_row)
            timings: dict[str, list[tuple[float, float, str]]] = {label: [] for label in rows}
            for _ in range(repeat):  # interleaved: one run of every command per round
                for label, row in rows.items():
                    timings[label].append(run_timed(row["argv"], row.get("env")))
            loop = "plain loop (Pillow + np.histogram)"
            expected = json.loads(timings[loop][0][2])
            loop_s = min(t[0] for t in timings[loop])
            for label, row in rows.items():
                wall, cpu = min(t[0] for t in timings[label]), min(t[1] for t in timings[label])
                got = None
                if "json" in row:
                    got = {cat: v["MaxF"] for cat, v in json.loads(row["json"].read_text()).items()}
                elif row.get("stdout"):
                    got = json.loads(timings[label][0][2])
                for cat, value in expected.items():  # the loop's categories (the command adds urban_road)
                    if got is not None:
                        assert abs(got[cat] - value) < 1e-9, (space, label, cat, got[cat], value)
                ratio = loop_s / wall
                shown = "" if label == loop else f"{ratio:.2f}x"
                print(f"{space:<12} {label:<52} {wall:>7.2f} {frames / wall:>9.1f} {shown:>8} {cpu:>6.2f}")
                runs = [round(t[0], 3) for t in timings[label]]
                record["rows"].append(
                    {"space": space, "command": label, "wall_s": wall, "cpu_s": cpu, "vs_loop": ratio, "runs_s": runs}
                )
        record["load_after"] = os.getloadavg()
        print("MaxF of every category equal to the loop's (|diff| < 1e-9)")
        print(f"load average before {record['load_before']}, after {record['load_after']}")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(record, indent=2) + "\n")


if __name__ == "__main__":
    main()
