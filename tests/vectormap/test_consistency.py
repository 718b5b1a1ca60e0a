"""MapTracker's C-mAP (vectormap/consistency.py) and StreamMapNet's protocol: the official numbers on the fixtures,
the consistency kernel against the tools' loop, and the default mode's fixes (each failing under the tools' rule)."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from drivemetrics.vectormap.consistency import consistent_true_positive, evaluate_cmap, gt_track_ids, pred_track_ids
from drivemetrics.vectormap.evaluate import evaluate_map_files
from drivemetrics.vectormap.io import MapFrame, MapSample, read_map_preds, read_maptracker_samples, read_streammapnet_gt
from tests.conftest import REPO_ROOT

RANGES = ("60x30", "100x50")


def _cases(fixtures_dir: Path, name: str) -> Path:
    folder = fixtures_dir / name
    if not folder.is_dir():
        pytest.skip(f"fixture folder {name} absent")
    return folder


# --- StreamMapNet --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("roi", RANGES)
def test_streammapnet_equals_official(fixtures_dir, roi):
    folder = _cases(fixtures_dir, "streammapnet")
    expected = json.loads((folder / "expected.json").read_text())[roi]
    root = folder / "cases" / roi
    report = evaluate_map_files(root / "gts.json", root / "submission_vector.json", f"streammapnet-{roi}").report
    assert report["mAP"] == pytest.approx(expected["mAP"], abs=1e-6, rel=0)
    for name, entry in expected["per_class"].items():
        for key, value in entry.items():
            assert report["classes"][name][key] == pytest.approx(value, abs=1e-6, rel=0), (name, key)


def test_streammapnet_gt_cache_pickle_equals_json(fixtures_dir, tmp_path):
    """The pickle StreamMapNet's evaluator writes ({token: {label: [array]}}) reads as its JSON form."""
    root = _cases(fixtures_dir, "streammapnet") / "cases" / "60x30"
    data = json.loads((root / "gts.json").read_text())["gts"]
    cache = {token: {int(k): [np.array(line) for line in v] for k, v in by.items()} for token, by in data.items()}
    path = tmp_path / "tmp_gts_nusc_60x30_newsplit.pkl"
    path.write_bytes(pickle.dumps(cache, protocol=pickle.HIGHEST_PROTOCOL))
    from_pickle, from_json = read_streammapnet_gt(path), read_streammapnet_gt(root / "gts.json")
    assert [s.token for s in from_pickle] == [s.token for s in from_json]
    for a, b in zip(from_pickle, from_json, strict=True):
        assert a.labels == b.labels
        assert all(np.array_equal(p, q) for p, q in zip(a.points, b.points, strict=True))


def test_streammapnet_gt_cache_refuses_code(tmp_path):
    """A pickle that would run code is refused before anything runs (the restricted unpickler)."""

    class Evil:
        def __reduce__(self):
            return (os.system, ("echo owned",))

    path = tmp_path / "gts.pkl"
    path.write_bytes(pickle.dumps({"a": Evil()}, protocol=2))
    from drivemetrics._internal.safe_pickle import UnsafePickleError

    with pytest.raises(UnsafePickleError, match=r"gts\.pkl"):
        read_streammapnet_gt(path)


def test_streammapnet_gt_label_checked(tmp_path):
    path = tmp_path / "gts.json"
    path.write_text(json.dumps({"gts": {"a": {"7": [[[0, 0], [1, 0]]]}}}))
    with pytest.raises(ValueError, match=r"sample a: label '7'"):
        read_streammapnet_gt(path)


# --- C-mAP on the fixture ------------------------------------------------------------------------------------


def _read(folder: Path, roi: str):
    root = folder / "cases" / roi
    frames, gt, file_roi = read_maptracker_samples(root / "samples.json")
    assert file_roi == tuple(int(v) for v in roi.split("x"))
    return frames, gt, read_map_preds(root / "submission_vector.json", "av2")


@pytest.mark.parametrize("roi", RANGES)
def test_cmap_reference_equals_official(fixtures_dir, roi):
    folder = _cases(fixtures_dir, "maptracker_cmap")
    expected = json.loads((folder / "expected.json").read_text())[roi]
    result = evaluate_cmap(*_read(folder, roi), roi, compat="reference")
    for mode in ("cmap", "plain"):
        assert result[mode]["mAP"] == pytest.approx(expected[mode]["mAP"], abs=1e-6, rel=0)
        for name, entry in expected[mode]["per_class"].items():
            for key, value in entry.items():
                assert result[mode]["per_class"][name][key] == pytest.approx(value, abs=1e-6, rel=0), (mode, name)
        assert {name: e["num_preds"] for name, e in result[mode]["per_class"].items()} == expected[mode]["num_scored"]
        got_frames = result[mode]["frames"]
        for key, by_label in expected[mode]["frames"].items():
            for label, by_thr in by_label.items():
                for thr, rows in by_thr.items():
                    assert [[round(s, 6), t] for s, t in got_frames[key][label][thr]] == rows, (mode, key, label)
    assert result["gt_tracks"] == expected["gt_tracks"]
    for scene, frames in expected["pred_tracks"].items():
        for want, got in zip(frames, result["pred_tracks"][scene], strict=True):
            assert sorted(map(tuple, want["tracks"])) == sorted((lab, round(s, 6), g) for lab, s, g in got["tracks"])


def test_cmap_fixture_compare_script(fixtures_dir, tmp_path):
    """The fixture's own compare.py on the command's JSON of both ranges."""
    folder = _cases(fixtures_dir, "maptracker_cmap")
    candidate = {}
    for roi in RANGES:
        root = folder / "cases" / roi
        out = tmp_path / f"{roi}.json"
        argv = ["map-eval", "--protocol", "maptracker", "--roi", roi, "--compat", "reference", "--json", str(out)]
        argv += ["--gt", str(root / "samples.json"), "--pred", str(root / "submission_vector.json")]
        env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
        run = subprocess.run([sys.executable, "-m", "drivemetrics", *argv], capture_output=True, text=True, env=env)
        assert run.returncode == 0, run.stderr
        candidate[roi] = json.loads(out.read_text())
    (tmp_path / "candidate.json").write_text(json.dumps(candidate))
    compare = [
        sys.executable,
        str(folder / "compare.py"),
        str(folder / "expected.json"),
        str(tmp_path / "candidate.json"),
    ]
    run = subprocess.run(compare, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout


# --- the consistency kernel against the tools' loop ----------------------------------------------------------


def _tools_loop(tp, scene, frame, labels, pred_track, gt_track):
    """calculate_cmap.py's rule, written as its loop: per scene, class and threshold, frames in order, the first
    predicted track matched to a GT track claims it; a later match by another track is turned into a FP."""
    out = tp.copy()
    order = np.lexsort((np.arange(len(frame)), frame, scene))
    for t in range(tp.shape[1]):
        owner: dict = {}
        for p in order:
            key = (scene[p], labels[p], gt_track[p] if tp[p, t] else -1)
            if key not in owner:
                owner[key] = pred_track[p]
            elif owner[key] != pred_track[p]:
                out[p, t] = False
    return out


@pytest.mark.parametrize("seed", range(20))
def test_consistency_kernel_equals_the_tools_loop(seed):
    rng = np.random.default_rng(seed)
    rows = []
    for scene in range(3):
        for frame in range(int(rng.integers(1, 12))):
            for label in range(3):
                gts = rng.permutation(6)[: int(rng.integers(0, 6))]  # GT tracks present, each matched once at most
                for k in range(int(rng.integers(0, 5))):
                    track = int(rng.integers(0, 8))
                    gt = int(gts[k]) if k < len(gts) else -1
                    rows.append((scene, frame, label, track, gt))
    scene, frame, labels, pred_track, gt_track = (np.array(c, dtype=np.int64) for c in zip(*rows, strict=True))
    # unique predicted track per (scene, frame, class), as the tracker guarantees
    _, first = np.unique(np.stack([scene, frame, labels, pred_track], 1), axis=0, return_index=True)
    keep = np.sort(first)
    scene, frame, labels, pred_track, gt_track = (a[keep] for a in (scene, frame, labels, pred_track, gt_track))
    # a larger threshold never loses a hit
    tp = np.cumsum(rng.random((len(scene), 3)) < 0.4, 1) > 0
    tp &= (gt_track >= 0)[:, None]
    got = consistent_true_positive(*(torch.from_numpy(a) for a in (tp, scene, frame, labels, pred_track, gt_track)))
    assert np.array_equal(got.numpy(), _tools_loop(tp, scene, frame, labels, pred_track, gt_track))


def test_consistency_kernel_validates():
    with pytest.raises(ValueError, match="`frame` must be"):
        consistent_true_positive(
            torch.ones(3, 1, dtype=torch.bool),
            *([torch.zeros(3)] * 1),
            torch.zeros(2),
            torch.zeros(3),
            torch.zeros(3),
            torch.zeros(3),
        )
    z = torch.zeros(2, dtype=torch.long)
    with pytest.raises(ValueError, match="matched twice in one frame"):
        consistent_true_positive(torch.ones(2, 1, dtype=torch.bool), z, z, z, torch.tensor([0, 1]), z)


# --- small scenes: the rules and the fixes -------------------------------------------------------------------


def _scene(n=3, step=2.0):
    return [MapFrame(f"t{k}", "s", k, np.array([step * k, 0.0, 0.0]), np.eye(3)) for k in range(n)]


LINE = np.array([[-20.0, 1.0], [20.0, 1.0]])


def test_hit_by_a_second_track_is_a_false_positive():
    """The GT line stays one track over 7 frames; the prediction of frame 0 (track 0) is missing for 5 frames, so
    the prediction of frame 6 opens track 1: its hit on the GT track that track 0 claimed is a false positive in
    C-mAP (no hand-over), a true positive in the plain mAP."""
    frames = _scene(7, step=0.5)
    gt = [MapSample(f"t{k}", [LINE - np.array([0.5 * k, 0])], ["divider"]) for k in range(7)]
    preds = [MapSample(f"t{k}") for k in range(7)]
    preds[0] = MapSample("t0", [LINE + np.array([0, 0.1])], ["divider"], [0.9])
    preds[6] = MapSample("t6", [LINE - np.array([3.0, -0.1])], ["divider"], [0.7])
    result = evaluate_cmap(frames, gt, preds, "60x30")
    assert [ids["1"] for ids in result["gt_tracks"]["s"]] == [[0]] * 7
    assert [[t[2] for t in f["tracks"]] for f in result["pred_tracks"]["s"]] == [[0], [], [], [], [], [], [1]]
    assert result["plain"]["frames"]["s/6"]["1"]["0.5"] == [[0.7, 1]]
    assert result["cmap"]["frames"]["s/6"]["1"]["0.5"] == [[0.7, 0]]
    assert result["plain"]["per_class"]["divider"]["AP@0.5"] == pytest.approx(2 / 7)
    assert result["cmap"]["per_class"]["divider"]["AP@0.5"] == pytest.approx(1 / 7)


def test_default_counts_predictions_of_frames_without_gt():
    """The tools drop a frame's predictions of a class without GT there; the default counts them as FP."""
    frames = _scene(2)
    gt = [MapSample("t0", [LINE], ["divider"]), MapSample("t1")]
    preds = [MapSample("t0", [LINE], ["divider"], [0.5]), MapSample("t1", [LINE - [2, 0]], ["divider"], [0.9])]
    reference = evaluate_cmap(frames, gt, preds, "60x30", compat="reference", details=False)
    default = evaluate_cmap(frames, gt, preds, "60x30", details=False)
    assert reference["plain"]["per_class"]["divider"]["AP@0.5"] == 1.0
    assert reference["plain"]["per_class"]["divider"]["num_preds"] == 1
    # pooled: 0.9 FP, 0.5 TP of 1 GT -> precision 1/2 at recall 1
    assert default["plain"]["per_class"]["divider"]["AP@0.5"] == 0.5
    assert default["plain"]["per_class"]["divider"]["num_preds"] == 2


def test_default_scores_gt_at_200_points():
    """The tools resample GT to 20 points before 200, which cuts a GT of short zigzags: a prediction on the GT is a
    hit in the default mode (Chamfer ~0) and a miss at 0.5 m under the tools' rule."""
    x = np.arange(-20.0, 20.5, 1.0)
    zigzag = np.stack([x, np.where(np.arange(len(x)) % 2 == 0, -1.5, 1.5)], 1)
    frames = _scene(1)
    gt = [MapSample("t0", [zigzag], ["boundary"])]
    preds = [MapSample("t0", [zigzag], ["boundary"], [0.9])]
    default = evaluate_cmap(frames, gt, preds, "60x30", details=False)
    reference = evaluate_cmap(frames, gt, preds, "60x30", compat="reference", details=False)
    assert default["plain"]["per_class"]["boundary"]["AP@0.5"] == 1.0
    assert reference["plain"]["per_class"]["boundary"]["AP@0.5"] == 0.0


def test_missing_token_is_a_miss_not_a_crash():
    frames = _scene(2)
    gt = [MapSample("t0", [LINE], ["divider"]), MapSample("t1", [LINE - [2, 0]], ["divider"])]
    preds = [MapSample("t0", [LINE], ["divider"], [0.9])]
    with pytest.raises(ValueError, match="t1 has no entry in the submission"):
        evaluate_cmap(frames, gt, preds, "60x30", compat="reference")
    result = evaluate_cmap(frames, gt, preds, "60x30", details=False)
    assert result["missing_samples"] == ["t1"]
    assert result["plain"]["per_class"]["divider"]["AP@0.5"] == 0.5  # 1 hit of 2 GT
    explicit = evaluate_cmap(frames, gt, [*preds, MapSample("t1")], "60x30", details=False)
    assert explicit["plain"] == result["plain"]
    assert explicit["cmap"] == result["cmap"]


def test_nothing_is_cached_between_runs(tmp_path, monkeypatch):
    """The tools reuse ./tmp_gts_*.pkl of an earlier run (a run with empty GT returned the previous APs): here a
    second run with other GT gives its own numbers, and nothing is written in the working directory."""
    monkeypatch.chdir(tmp_path)
    frames = _scene(1)
    preds = [MapSample("t0", [LINE], ["divider"], [0.9])]
    first = evaluate_cmap(frames, [MapSample("t0", [LINE], ["divider"])], preds, "60x30", details=False)
    second = evaluate_cmap(frames, [MapSample("t0")], preds, "60x30", details=False)
    assert first["plain"]["per_class"]["divider"]["AP@0.5"] == 1.0
    assert second["plain"]["per_class"]["divider"]["AP@0.5"] == 0.0
    assert list(tmp_path.iterdir()) == []


def test_score_threshold_is_strict():
    frames = _scene(1)
    preds = [MapSample("t0", [LINE, LINE + np.array([0, 5])], ["divider"] * 2, [0.4, 0.400001])]
    tracks = pred_track_ids(frames, preds, (60, 30))
    assert tracks[0][1] == [(1, 0)]


def test_gt_tracks_link_consecutive_frames_only():
    """A GT line absent for one frame comes back with a new id (GT tracks link consecutive frames only)."""
    frames = _scene(3)
    gt = [MapSample("t0", [LINE], ["divider"]), MapSample("t1"), MapSample("t2", [LINE - [4, 0]], ["divider"])]
    assert [ids[1] for ids in gt_track_ids(frames, gt, (60, 30))] == [[0], [], [1]]


def test_prediction_comes_back_within_the_window():
    """A prediction missing for up to 4 frames keeps its id; after 5 missing frames it gets a new one."""
    for gap, same in ((4, True), (5, False)):
        frames = _scene(gap + 2, step=0.5)
        preds = [MapSample(f.token) for f in frames]
        preds[0] = MapSample("t0", [LINE], ["divider"], [0.9])
        preds[-1] = MapSample(frames[-1].token, [LINE - [0.5 * (gap + 1), 0]], ["divider"], [0.9])
        tracks = pred_track_ids(frames, preds, (60, 30))
        assert (tracks[-1][1] == [(0, 0)]) is same, gap


# --- the command's input checks -----------------------------------------------------------------------------


def _cli(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    return subprocess.run(
        [sys.executable, "-m", "drivemetrics", "map-eval", *argv], capture_output=True, text=True, env=env, cwd=cwd
    )


def test_command_errors_are_one_line(tmp_path):
    sample = {
        "token": "t0",
        "scene_name": "s",
        "local_idx": 0,
        "ego2global_translation": [0, 0, 0],
        "ego2global_rotation": np.eye(3).tolist(),
        "map_geoms": {"1": [LINE.tolist()]},
    }
    (tmp_path / "samples.json").write_text(json.dumps({"roi_size": [60, 30], "samples": [sample]}))
    (tmp_path / "sub.json").write_text(json.dumps({"results": {}}))
    files = ["--gt", str(tmp_path / "samples.json"), "--pred", str(tmp_path / "sub.json")]
    cases = [
        (["--protocol", "streammapnet", *files], "needs --roi"),
        (["--protocol", "av2-cvpr23", "--roi", "60x30", *files], "--roi applies to"),
        (["--protocol", "default", "--compat", "reference", *files], "--compat reference needs"),
        (["--protocol", "maptracker", "--roi", "100x50", *files], "roi_size is 60x30"),
        (["--protocol", "maptracker", "--roi", "60x30", "--compat", "reference", *files], "t0 has no entry"),
    ]
    for argv, message in cases:
        run = _cli(*argv, cwd=tmp_path)
        assert run.returncode == 2, (argv, run.stderr)
        assert message in run.stderr, run.stderr
        assert len(run.stderr.strip().splitlines()) == 1, run.stderr
    run = _cli("--protocol", "maptracker", "--roi", "60x30", *files, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "C-mAP = 0.0000" in run.stdout


def test_sample_list_checks(tmp_path):
    base = {
        "token": "t0",
        "scene_name": "s",
        "local_idx": 0,
        "ego2global_translation": [0, 0, 0],
        "ego2global_rotation": np.eye(3).tolist(),
        "map_geoms": {},
    }
    path = tmp_path / "samples.json"
    for change, message in (
        ({"local_idx": 1}, "local_idx must be 0"),
        ({"ego2global_rotation": [[1, 0], [0, 1]]}, "ego2global_rotation: must be finite numbers of shape"),
        ({"map_geoms": {"5": []}}, "label '5'"),
        ({"map_geoms": {"1": [[[0, 0]]]}}, "a line needs 2 points"),
    ):
        path.write_text(json.dumps({"samples": [{**base, **change}]}))
        with pytest.raises(ValueError, match=message):
            read_maptracker_samples(path)
    other = {**base, "token": "t1", "scene_name": "q"}
    path.write_text(json.dumps({"samples": [base, other, {**base, "token": "t2", "local_idx": 1}]}))
    with pytest.raises(ValueError, match="must be consecutive"):
        read_maptracker_samples(path)


def test_links_equal_scipys_assignment():
    """The shortcut (no row or column with two positive IoUs) and the extension loaded alone give the links of
    scipy.optimize.linear_sum_assignment, as the tools compute them."""
    from scipy.optimize import linear_sum_assignment

    from drivemetrics.vectormap.consistency import _linear_sum_assignment, _link

    rng = np.random.default_rng(0)
    for _ in range(200):
        src = rng.random((int(rng.integers(0, 6)), 40)) < 0.2
        tgt = rng.random((int(rng.integers(0, 6)), 40)) < 0.2
        if rng.random() < 0.5 and len(src) and len(tgt):  # sparse overlaps: the shortcut
            src[:, 20:] = False
            tgt[:, :20] = False
            tgt[0, :20] = src[0, :20]
        want = [-1] * len(tgt)
        if len(src) and len(tgt):
            inter = (src[:, None] & tgt[None]).sum(-1)
            union = (src[:, None] | tgt[None]).sum(-1)
            iou = np.where(inter > 0, inter / np.maximum(union, 1), 0.0)
            for i, j in zip(*linear_sum_assignment(-iou), strict=True):
                if iou[i, j] > 0.01:
                    want[j] = i
            cost = -rng.random((len(src), len(tgt)))
            assert [a.tolist() for a in _linear_sum_assignment()(cost)] == [
                a.tolist() for a in linear_sum_assignment(cost)
            ]
        assert _link(src, tgt, 0.01) == want
