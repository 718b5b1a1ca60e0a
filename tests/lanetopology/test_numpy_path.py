"""The scoring on numpy arrays (``device=None``: the ``openlanev2-eval`` command, no torch) equals the scoring on
torch tensors (the Metric classes' ``device="cpu"``) bit for bit: one scoring path, run by either library."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from drivemetrics.lanetopology.distances import lane_distance_matrices
from drivemetrics.lanetopology.scoring import devkit_name, frame_statistics
from drivemetrics.polyline.bounded_frechet import bounded_frechet_distance_pairs
from drivemetrics.polyline.matching import greedy_match_index
from drivemetrics.polyline.pairs import paired_chamfer_means

TOL = 1e-6


def _fixture_frames(fixtures_dir: Path, track: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    root = fixtures_dir / "openlanev2"
    if not root.is_dir():
        pytest.skip("openlanev2 fixtures absent")
    cases = json.loads((root / f"{track}_cases.json").read_text())
    return cases["frames"], json.loads((root / "expected.json").read_text())[track]["metrics"]


def _synthetic_frames(num_frames: int, seed: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Frames whose lanes have 2 to 60 points, predictions shifted, resampled, reversed, truncated or far off, so
    that the bands, the full programme, the bounds and the Chamfer prefilter all decide some pairs."""
    rng = np.random.default_rng(seed)
    gts, preds = [], []
    for _ in range(num_frames):
        lanes = []
        for _ in range(int(rng.integers(1, 8))):
            n = int(rng.integers(2, 61))
            start = rng.uniform([-40, -15, -1], [30, 15, 0])
            heading = rng.uniform(-0.5, 0.5)
            steps = np.c_[np.cos(heading) * np.ones(n), np.sin(heading) * np.ones(n), np.zeros(n)] * rng.uniform(0.5, 1)
            lanes.append(start + np.cumsum(steps, 0) + rng.normal(0, 0.05, (n, 3)))
        pred_lanes = []
        for lane in lanes:
            kind = rng.integers(6)
            q = lane + np.array([0, rng.normal(0, 0.8), rng.normal(0, 0.1)])
            if kind == 1:
                q = q[::-1]
            elif kind == 2:
                q = q[:: int(rng.integers(2, 4))] if len(q) > 4 else q
            elif kind == 3:
                q = q[: max(2, len(q) // 2)]
            elif kind == 4:
                q = q + np.array([rng.uniform(2, 4), 0, 0])  # near the prefilter bound
            pred_lanes.append(q)
        num_g, num_p = len(lanes), len(pred_lanes)
        gts.append(
            {
                "lane_centerline": [{"points": p.tolist()} for p in lanes],
                "traffic_element": [],
                "topology_lclc": (rng.random((num_g, num_g)) < 0.2).astype(int).tolist(),
                "topology_lcte": [[] for _ in range(num_g)],
            }
        )
        preds.append(
            {
                "lane_centerline": [
                    {"points": p.tolist(), "confidence": float(rng.choice([0.3, 0.6, 0.9]))} for p in pred_lanes
                ],
                "traffic_element": [],
                "topology_lclc": rng.random((num_p, num_p)).round(2).tolist(),
                "topology_lcte": [[] for _ in range(num_p)],
            }
        )
    return gts, preds


def _assert_same_statistics(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> None:
    assert set(a) == set(b)
    for name in a:
        assert a[name].dtype == b[name].dtype, name
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)


@pytest.mark.parametrize("track", ["centerline", "lanesegment"])
@pytest.mark.parametrize("compat", ["reference", "default"])
def test_numpy_and_torch_paths_give_identical_statistics_on_the_fixture(
    fixtures_dir: Path, track: str, compat: str
) -> None:
    frames, expected = _fixture_frames(fixtures_dir, track)
    preds, target = [f["pred"] for f in frames], [f["gt"] for f in frames]
    on_numpy = frame_statistics(preds, target, track, compat, device=None)  # type: ignore[arg-type]
    on_torch = frame_statistics(preds, target, track, compat, device="cpu")  # type: ignore[arg-type]
    _assert_same_statistics(on_numpy, on_torch)
    if compat == "reference":  # and the numpy path still equals the devkit
        from drivemetrics.lanetopology.scoring import scores_from_statistics

        scores = scores_from_statistics(**on_numpy, track=track, compat="reference")  # type: ignore[arg-type]
        named = {devkit_name(k): v for k, v in scores.items()}
        for key, value in expected.items():
            assert abs(named[key] - value) <= TOL, (key, named[key], value)


@pytest.mark.parametrize("compat", ["reference", "default"])
def test_numpy_and_torch_paths_give_identical_statistics_on_varied_lanes(compat: str) -> None:
    target, preds = _synthetic_frames(40, seed=4)
    on_numpy = frame_statistics(preds, target, "centerline", compat, device=None)  # type: ignore[arg-type]
    on_torch = frame_statistics(preds, target, "centerline", compat, device="cpu")  # type: ignore[arg-type]
    _assert_same_statistics(on_numpy, on_torch)
    assert on_numpy["ap_rows"][:, 2].any()  # some lanes match: the comparison is not vacuous


def test_lane_distances_are_the_same_bits_with_numpy_and_torch() -> None:
    target, preds = _synthetic_frames(60, seed=5)
    gt_lanes = [[np.asarray(x["points"], dtype=float) for x in f["lane_centerline"]] for f in target]
    pred_lanes = [[np.asarray(x["points"], dtype=float) for x in f["lane_centerline"]] for f in preds]
    on_numpy = lane_distance_matrices(gt_lanes, pred_lanes, max_distance=3.0)
    on_torch = lane_distance_matrices(gt_lanes, pred_lanes, max_distance=3.0, device="cpu")
    kept = 0
    for a, b in zip(on_numpy, on_torch, strict=True):
        np.testing.assert_array_equal(a, b)
        kept += int((a < 3.0).sum())
    assert kept > 20  # many pairs are within the bound, so their exact distances were compared


def test_kernels_return_numpy_for_numpy_and_tensors_for_tensors() -> None:
    import torch

    rng = np.random.default_rng(6)
    a, b = rng.normal(size=(50, 30, 3)), rng.normal(size=(50, 20, 3))
    a_len, b_len = rng.integers(1, 31, 50), rng.integers(1, 21, 50)
    frechet_np = bounded_frechet_distance_pairs(a, b, a_len, b_len)
    frechet_t = bounded_frechet_distance_pairs(*(torch.from_numpy(x) for x in (a, b, a_len, b_len)))
    assert isinstance(frechet_np, np.ndarray)
    assert isinstance(frechet_t, torch.Tensor)
    np.testing.assert_array_equal(frechet_np, frechet_t.numpy())
    chamfer_np = paired_chamfer_means(a, a_len, b, b_len)
    chamfer_t = paired_chamfer_means(*(torch.from_numpy(x) for x in (a, a_len, b, b_len)))
    for x, y in zip(chamfer_np, chamfer_t, strict=True):
        np.testing.assert_array_equal(x, y.numpy())
    distances, scores = rng.random((4, 6, 5)), rng.choice([0.2, 0.5, 0.8], size=(4, 6))
    for fallback in (False, True):
        match_np = greedy_match_index(distances, scores, thresholds=[0.3, 0.6], fallback=fallback, inclusive=False)
        match_t = greedy_match_index(
            torch.from_numpy(distances),
            torch.from_numpy(scores),
            thresholds=[0.3, 0.6],
            fallback=fallback,
            inclusive=False,
        )
        np.testing.assert_array_equal(match_np, match_t.numpy())
