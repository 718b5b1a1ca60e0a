"""Measurement: does a submission raise OpenLane-V2's topology scores without predicting better topology?

Each *exploit* rewrites the honest predictions of a set of frames without looking at the ground truth; the script
prints the headline scores of the honest and of the rewritten predictions in both modes of
:func:`drivemetrics.lanetopology.openlanev2.openlanev2_scores` (``reference`` = the devkit 2.1.0, ``default``).

Exploits:

- ``rescale``: every relation confidence ``s`` becomes ``0.5 + d + (0.5 - d) * s`` (``d = 1e-3``): same order,
  every pair now a predicted edge;
- ``all_pairs``: every relation confidence becomes 0.75 (every pair predicted, all tied);
- ``duplicates``: every predicted lane gets two copies shifted 1.5 m left and right, with 1 % of its confidence and
  its relations (copies of its rows and columns), i.e. low-confidence extra lanes that may match ground truth the
  original missed;
- ``duplicates_norel``: the same copies with every relation of a copy 0 (they predict no topology at all);
- ``duplicates+rescale``: ``duplicates`` then ``rescale``.

Frame sets: the fixture's centerline and lane-segment frames (``../shared/fixtures/openlanev2`` or
``$DRIVEMETRICS_FIXTURES``) and the synthetic centerline frames of ``benchmarks/openlanev2.py`` (``make_frames``;
their relation confidences are random, i.e. an uninformative topology head).

Run ``python benchmarks/openlanev2_topology_loophole.py [--synthetic 200]``.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from openlanev2 import make_frames  # the benchmark's synthetic frames (benchmarks/ on sys.path)

from drivemetrics.lanetopology.openlanev2 import openlanev2_scores

_TOPO = {"centerline": ("topology_lclc", "topology_lcte"), "lanesegment": ("topology_lsls", "topology_lste")}
_LANE = {"centerline": "lane_centerline", "lanesegment": "lane_segment"}
_SHOWN = {
    "centerline": ("det_l", "top_ll", "top_lt", "ols"),
    "lanesegment": ("det_ls", "top_lsls", "top_lste", "olus"),
}
_DELTA = 1e-3


def rescale(pred: dict[str, Any], track: str) -> dict[str, Any]:
    """Every relation confidence mapped into ``(0.5, 1]`` keeping its order."""
    out = dict(pred)
    for key in _TOPO[track]:
        values = np.asarray(pred[key], dtype=np.float64)
        out[key] = 0.5 + _DELTA + (0.5 - _DELTA) * values
    return out


def all_pairs(pred: dict[str, Any], track: str) -> dict[str, Any]:
    """Every relation confidence 0.75."""
    out = dict(pred)
    for key in _TOPO[track]:
        out[key] = np.full(np.asarray(pred[key], dtype=np.float64).shape, 0.75)
    return out


def _shifted(item: dict[str, Any], dy: float) -> dict[str, Any]:
    out = copy.deepcopy(item)
    for key in ("points", "centerline", "left_laneline", "right_laneline"):
        if key in out:
            out[key] = np.asarray(out[key], dtype=np.float64) + np.array([0.0, dy, 0.0])
    out["confidence"] = 0.01 * float(item["confidence"])
    return out


def duplicates(pred: dict[str, Any], track: str, relations: bool = True) -> dict[str, Any]:
    """Two low-confidence copies (1.5 m left and right) of every predicted lane, with its relations (or none)."""
    out = dict(pred)
    lanes = list(pred[_LANE[track]])
    out[_LANE[track]] = lanes + [_shifted(x, dy) for dy in (1.5, -1.5) for x in lanes]
    source = np.tile(np.arange(len(lanes)), 3)  # the original lane of every output lane
    ll_key, lt_key = _TOPO[track]
    ll = np.asarray(pred[ll_key], dtype=np.float64).reshape(len(lanes), len(lanes))
    lt = np.asarray(pred[lt_key], dtype=np.float64).reshape(len(lanes), len(pred["traffic_element"]))
    copy_ll, copy_lt = ll[np.ix_(source, source)], lt[source]
    if not relations:  # the copies relate to nothing
        copy_ll[len(lanes) :] = 0.0
        copy_ll[:, len(lanes) :] = 0.0
        copy_lt[len(lanes) :] = 0.0
    out[ll_key], out[lt_key] = copy_ll, copy_lt
    return out


EXPLOITS: dict[str, Callable[[dict[str, Any], str], dict[str, Any]]] = {
    "rescale": rescale,
    "all_pairs": all_pairs,
    "duplicates": duplicates,
    "duplicates_norel": lambda p, t: duplicates(p, t, relations=False),
    "duplicates+rescale": lambda p, t: rescale(duplicates(p, t), t),
}


def scores(preds: list[Any], gts: list[Any], track: str, compat: str) -> dict[str, float]:
    values = openlanev2_scores(preds, gts, track, compat)  # type: ignore[arg-type]
    return {k: float(values[k]) for k in _SHOWN[track]}


def report(name: str, preds: list[Any], gts: list[Any], track: str) -> dict[str, Any]:
    """Print and return the honest scores and each exploit's change, both modes."""
    out: dict[str, Any] = {}
    for compat in ("reference", "default"):
        honest = scores(preds, gts, track, compat)
        print(f"{name} [{compat}] honest " + " ".join(f"{k} {v:.4f}" for k, v in honest.items()))
        out[compat] = {"honest": honest}
        for exploit, rewrite in EXPLOITS.items():
            cheat = scores([rewrite(p, track) for p in preds], gts, track, compat)
            delta = {k: cheat[k] - honest[k] for k in cheat}
            out[compat][exploit] = delta
            print(f"    {exploit:<19} " + " ".join(f"{k} {v:+.4f}" for k, v in delta.items()))
    return out


def _fixture_root() -> Path:
    env = os.environ.get("DRIVEMETRICS_FIXTURES")
    base = Path(env) if env else Path(__file__).resolve().parents[1].parent / "shared" / "fixtures"
    return base / "openlanev2"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--synthetic", type=int, default=200, help="number of synthetic frames (0: none)")
    parser.add_argument("--json", type=Path, help="write the numbers here")
    args = parser.parse_args()
    results: dict[str, Any] = {}
    root = _fixture_root()
    for track in ("centerline", "lanesegment"):
        path = root / f"{track}_cases.json"
        if path.is_file():
            frames = json.loads(path.read_text())["frames"]
            gts, preds = [f["gt"] for f in frames], [f["pred"] for f in frames]
            results[f"fixture_{track}"] = report(f"fixture {track}", preds, gts, track)
    if args.synthetic:
        gt, submission = make_frames(args.synthetic, 11)
        gts = [v["annotation"] for v in gt.values()]
        preds = [v["predictions"] for v in submission["results"].values()]
        results["synthetic"] = report(f"synthetic x{args.synthetic}", preds, gts, "centerline")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
