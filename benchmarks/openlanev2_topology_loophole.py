"""Measurement: does a submission raise OpenLane-V2's topology scores without predicting better topology?

Each *exploit* rewrites the honest predictions of a set of frames without looking at the ground truth; the script
prints the headline scores of the honest and of the rewritten predictions in both modes of
:func:`drivemetrics.lanetopology.openlanev2.openlanev2_scores` (``reference`` = the devkit 2.1.0, ``default``).

Exploits:

- ``under``: every relation confidence ``s`` becomes ``0.4 s`` (an under-confident model, issue 39);
- ``remap``: ``(s + 1[s > 0.05]) / 2``: same order, every value above 0.05 into (0.5, 1], the others into
  [0, 0.5] (devkit issue #128, "version 1.1m"); ``under+remap``: ``remap`` of the under-confident model;
- ``rescale``: ``0.5 + d + (0.5 - d) * s`` (``d = 1e-3``): same order, every pair now a predicted edge;
- ``all_pairs``: every relation confidence becomes 0.75 (every pair predicted, all tied); ``half``: every
  relation ``0.5 + float32 eps``; ``none``: every relation 0;
- ``duplicates``: every predicted lane gets two copies shifted 1.5 m left and right, with 1 % of its confidence and
  its relations (copies of its rows and columns), i.e. low-confidence extra lanes that may match ground truth the
  original missed;
- ``duplicates_norel``: the same copies with every relation of a copy 0 (they predict no topology at all);
- ``duplicates+rescale``: ``duplicates`` then ``rescale``.

And one *oracle* rewrite that looks at the ground truth (an upper bound of what extra lanes can do, not an
exploit): ``gt_copies``: 5 copies of random GT lanes per frame at confidence 0.01, their relations 0.01.

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


def map_relations(pred: dict[str, Any], track: str, fn: Callable[[np.ndarray], np.ndarray]) -> dict[str, Any]:
    """``fn`` applied to every relation confidence."""
    out = dict(pred)
    for key in _TOPO[track]:
        out[key] = fn(np.asarray(pred[key], dtype=np.float64))
    return out


def remap(values: np.ndarray) -> np.ndarray:
    """``p + 1[p > 0.05]`` kept in [0, 1]."""
    return (values + (values > 0.05)) / 2


def gt_copies(pred: dict[str, Any], gt: dict[str, Any], track: str, rng: np.random.Generator) -> dict[str, Any]:
    """Five copies of random GT lanes at confidence 0.01, every relation of a copy 0.01 (an oracle rewrite)."""
    source = gt[_LANE[track]]
    if not source:
        return pred
    out = dict(pred)
    lanes = list(pred[_LANE[track]])
    copies = [dict(copy.deepcopy(source[k]), confidence=0.01) for k in rng.integers(0, len(source), 5)]
    out[_LANE[track]] = lanes + copies
    old, new = len(lanes), len(lanes) + len(copies)
    ll_key, lt_key = _TOPO[track]
    num_te = len(pred["traffic_element"])
    ll, lt = np.full((new, new), 0.01), np.full((new, num_te), 0.01)
    ll[:old, :old] = np.asarray(pred[ll_key], dtype=np.float64).reshape(old, old)
    lt[:old] = np.asarray(pred[lt_key], dtype=np.float64).reshape(old, num_te)
    out[ll_key], out[lt_key] = ll, lt
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
    "under": lambda p, t: map_relations(p, t, lambda s: 0.4 * s),
    "remap": lambda p, t: map_relations(p, t, remap),
    "under+remap": lambda p, t: map_relations(p, t, lambda s: remap(0.4 * s)),
    "rescale": rescale,
    "all_pairs": all_pairs,
    "half": lambda p, t: map_relations(p, t, lambda s: np.full_like(s, 0.5 + float(np.finfo(np.float32).eps))),
    "none": lambda p, t: map_relations(p, t, np.zeros_like),
    "duplicates": duplicates,
    "duplicates_norel": lambda p, t: duplicates(p, t, relations=False),
    "duplicates+rescale": lambda p, t: rescale(duplicates(p, t), t),
}


def scores(preds: list[Any], gts: list[Any], track: str, compat: str) -> dict[str, float]:
    values = openlanev2_scores(preds, gts, track=track, compat=compat)  # type: ignore[arg-type]
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
        rng = np.random.default_rng(0)
        cheat = scores([gt_copies(p, g, track, rng) for p, g in zip(preds, gts, strict=True)], gts, track, compat)
        out[compat]["gt_copies"] = {k: cheat[k] - honest[k] for k in cheat}
        print(
            f"    {'gt_copies (oracle)':<19} " + " ".join(f"{k} {v:+.4f}" for k, v in out[compat]["gt_copies"].items())
        )
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
