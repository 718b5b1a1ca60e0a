"""Benchmark: each dataset command's reader against the parsing floor of its format, on the same bytes.

For every input format the library reads, the library's reader (file read, parse, every check and limit) is timed
next to the fastest parser that installs as a wheel, doing the parse alone with no checks (the floor):

- OpenLane-V2 devkit pickles (1,000 frames of 11-point lanes, ground truth + submission): the restricted,
  bounded unpickler (``openlanev2-eval``'s reader) vs C ``pickle.loads`` (which would run any code in the file);
- MapTR JSON (``--map-samples`` 6,019 samples, GT + results): ``map-eval``'s readers (text to per-sample arrays)
  vs ``json.loads``, ``orjson.loads`` and ``msgspec.json.decode`` (where installed) of the same bytes;
- CULane ``.lines.txt`` (2,000 frames, GT + predictions): ``read_culane_frames`` (checked, padded tensors)
  vs reading each file and one ``numpy`` conversion of all its numbers;
- KITTI object labels (7,481 frames of 8 objects): ``parse_kitti_objects`` vs one ``numpy`` conversion of all the
  numeric columns of a file; and the folder table ``kitti-object-eval`` parses (the files' bytes, joined) vs
  ``float`` on every number of the joined text and one ``numpy`` conversion of them.

Median of ``--repeat`` (default 3) runs each, in the same process, interleaved. Printed: one line per format with
both times and the ratio (how far the reader is from its floor). Run ``python benchmarks/parse_floor.py``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import pickle
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))


def _median_seconds(fn: Callable[[], object], repeat: int) -> float:
    """Median wall time; the cyclic GC is paused as the library's readers pause it (else a parse of many small
    containers pays for collections that walk everything parsed so far)."""
    times = []
    for _ in range(repeat):
        gc.collect()
        gc.disable()
        try:
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        finally:
            gc.enable()
    return float(np.median(times))


def _json_floors() -> dict[str, Callable[[bytes], object]]:
    floors: dict[str, Callable[[bytes], object]] = {"json": json.loads}
    try:
        import orjson

        floors["orjson"] = orjson.loads
    except ImportError:
        pass
    try:
        import msgspec

        floors["msgspec"] = msgspec.json.decode
    except ImportError:
        pass
    return floors


def _report(name: str, library: float, floors: dict[str, float]) -> None:
    best = min(floors, key=floors.__getitem__)
    others = ", ".join(f"{k} {v:.3f} s" for k, v in floors.items())
    print(
        f"{name}: reader {library:.3f} s, floor {floors[best]:.3f} s ({best}) = {library / floors[best]:.1f}x; {others}"
    )


def bench_openlanev2(tmp: Path, repeat: int) -> None:
    from openlanev2 import make_frames

    from drivemetrics.lanetopology.io import read_ground_truth, read_predictions

    gt, submission = make_frames(1000, 11)
    gt_path, pred_path = tmp / "gt.pkl", tmp / "pred.pkl"
    gt_path.write_bytes(pickle.dumps(gt))
    pred_path.write_bytes(pickle.dumps(submission))
    library = _median_seconds(lambda: (read_ground_truth(gt_path), read_predictions(pred_path)), repeat)
    floor = _median_seconds(lambda: (pickle.loads(gt_path.read_bytes()), pickle.loads(pred_path.read_bytes())), repeat)
    _report("OpenLane-V2 pickles, 1,000 frames", library, {"pickle (C, unrestricted)": floor})


def bench_maptr_json(tmp: Path, samples: int, repeat: int) -> None:
    from vectormap_ap import make_synthetic

    from drivemetrics.vectormap.io import read_map_gt, read_map_preds

    gt, pred = make_synthetic(samples)
    gt_path, pred_path = tmp / "gt.json", tmp / "pred.json"
    gt_path.write_text(json.dumps(gt))
    pred_path.write_text(json.dumps(pred))
    library = _median_seconds(lambda: (read_map_gt(gt_path), read_map_preds(pred_path)), repeat)
    floors = {
        name: _median_seconds(lambda parse=parse: (parse(gt_path.read_bytes()), parse(pred_path.read_bytes())), repeat)
        for name, parse in _json_floors().items()
    }
    _report(f"MapTR JSON, {samples:,} samples", library, floors)


def bench_culane(tmp: Path, repeat: int) -> None:
    from culane import make_dataset

    from drivemetrics.lane.io import read_culane_frames

    names = [n.lstrip("/").replace(".jpg", ".lines.txt") for n in make_dataset(tmp / "culane", 2000)]
    gt_dir, pred_dir = str(tmp / "culane" / "gt"), str(tmp / "culane" / "pred")

    def floor() -> None:
        for directory in (gt_dir, pred_dir):
            for n in names:
                with open(os.path.join(directory, n), "rb") as f:
                    np.array(f.read().split(), dtype=np.float64)

    library = _median_seconds(lambda: read_culane_frames(names, gt_dir, pred_dir), repeat)
    _report(
        "CULane text, 2,000 frames", library, {"numpy (all numbers of a file at once)": _median_seconds(floor, repeat)}
    )


def bench_kitti(repeat: int) -> None:
    from drivemetrics.detection.io import parse_kitti_objects

    rng = np.random.default_rng(0)
    texts = []
    for _ in range(7481):
        rows = rng.uniform(0, 100, (8, 14)).round(2)
        texts.append("".join("Car " + " ".join(f"{v:.2f}" for v in row) + "\n" for row in rows))

    def floor() -> None:
        for text in texts:
            fields = text.split()
            np.array(fields, dtype=object).reshape(-1, 15)[:, 1:].astype(np.float64)

    library = _median_seconds(lambda: [parse_kitti_objects(t, "x.txt", with_score=False) for t in texts], repeat)
    _report("KITTI labels, 7,481 frames", library, {"numpy (one conversion per file)": _median_seconds(floor, repeat)})

    from drivemetrics.detection.io import _parse_plain_table

    contents = [t.encode() for t in texts]

    def float_all() -> None:
        numbers = (b"\n".join(contents) + b"\n").split()
        del numbers[::15]
        np.fromiter(map(float, numbers), dtype=np.float64, count=len(numbers))

    def numpy_all() -> None:
        np.array((b"\n".join(contents) + b"\n").split()).reshape(-1, 15)[:, 1:].astype(np.float64)

    table = _median_seconds(lambda: _parse_plain_table(contents, with_score=False), repeat)
    floors = {"float on every number": _median_seconds(float_all, repeat), "numpy": _median_seconds(numpy_all, repeat)}
    _report("KITTI label folder as one table (kitti-object-eval), 7,481 frames", table, floors)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--map-samples", type=int, default=6019)
    args = parser.parse_args()
    print(f"load {os.getloadavg()[0]:.1f}, {time.strftime('%Y-%m-%d %H:%M %Z')}")
    with tempfile.TemporaryDirectory() as tmp:
        bench_openlanev2(Path(tmp), args.repeat)
        bench_maptr_json(Path(tmp), args.map_samples, args.repeat)
        bench_culane(Path(tmp), args.repeat)
        bench_kitti(args.repeat)
    print(f"load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
