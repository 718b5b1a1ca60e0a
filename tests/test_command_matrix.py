"""Issue 35: every dataset command, run as a user runs it (``python -m drivemetrics CMD ...`` in a subprocess), on
every fixture folder that fits it, in both compat modes where there are two, against the expected values the
fixture holds (the official tools' numbers) or against the library's own functions run in this process.

One subprocess per row. :data:`NOT_APPLICABLE` names, with a reason, each command without a row and each fixture
folder no command reads; a command registered in the CLI or a fixture folder that is neither covered nor listed
fails :func:`test_every_command_and_fixture_folder_has_a_row`.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, fixtures_root


@dataclass(frozen=True)
class Row:
    """One run of one command on one fixture folder: ``argv(fx, tmp)`` builds the arguments (after the command
    name), ``check(fx, tmp, stdout)`` compares what it printed or wrote with the expected values."""

    command: str
    fixture: str  # top-level folder of the fixtures
    compat: str  # "default", "reference" or "-" (the command has one mode)
    argv: Callable[[Path, Path], list[str]]
    check: Callable[[Path, Path, str], None]
    slow: bool = False  # more than ~30 s on the project's 2-core machine


def _json(path: Path) -> dict:
    return json.loads(path.read_text())


def _same(got: float | None, want: float | None, tol: float = 1e-9, what: str = "") -> None:
    got = math.nan if got is None else float(got)
    want = math.nan if want is None else float(want)
    assert (math.isnan(got) and math.isnan(want)) or got == pytest.approx(want, abs=tol, rel=0), (what, got, want)


# ---------------------------------------------------------------------------------------------------------------
# CULane


def _culane_argv(folder: str, compat: str) -> Callable[[Path, Path], list[str]]:
    def argv(fx: Path, tmp: Path) -> list[str]:
        root = fx / folder
        paths = ["--pred", str(root / "pred"), "--gt", str(root / "gt"), "--list", str(root / "list.txt")]
        return [*paths, "--compat", compat, "--per-image", "--json", str(tmp / "out.json")]

    return argv


def _culane_counts(result: dict) -> dict[str, tuple[int, int, int]]:
    return {name: (f["tp"], f["fp"], f["fn"]) for name, f in result["per_image"].items()}


def _check_culane_official(fx: Path, tmp: Path, stdout: str) -> None:
    result, expected = _json(tmp / "out.json"), _json(fx / "culane_official" / "expected_official.json")
    assert _culane_counts(result) == {n: (f["tp"], f["fp"], f["fn"]) for n, f in expected["frames"].items()}
    pooled = expected["pooled"]
    assert (result["tp"], result["fp"], result["fn"]) == (pooled["tp"], pooled["fp"], pooled["fn"])
    for key in ("precision", "recall", "f1"):
        _same(result[key], pooled[key], 1e-12, key)


def _check_culane_port(fx: Path, tmp: Path, stdout: str) -> None:
    """The Python port's per-frame counts (``expected_reference.json``), but for its documented difference: the
    pair at the threshold in f028_partial (IoU 0.4949 in the port, 0.5017 here)."""
    result, expected = _json(tmp / "out.json"), _json(fx / "culane" / "expected_reference.json")
    want = {n: (f["tp"], f["fp"], f["fn"]) for n, f in expected["frames"].items()}
    got = _culane_counts(result)
    assert set(got) == set(want)
    assert {n: (got[n], want[n]) for n in want if got[n] != want[n]} == {"f028_partial": ((1, 2, 2), (0, 3, 3))}


def _check_culane_kernel(folder: str, compat: str) -> Callable[[Path, Path, str], None]:
    def check(fx: Path, tmp: Path, stdout: str) -> None:
        import warnings

        from drivemetrics.lane.evaluate import evaluate_culane_dirs

        root = fx / folder
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = evaluate_culane_dirs(
                root / "pred", root / "gt", (root / "list.txt").read_text().split(), compat=compat, per_image=True
            )
        got = _json(tmp / "out.json")
        assert _culane_counts(got) == _culane_counts(want)
        for key in ("tp", "fp", "fn", "precision", "recall", "f1"):
            _same(got[key], want[key], 1e-12, key)

    return check


# ---------------------------------------------------------------------------------------------------------------
# TuSimple


def _tusimple_argv(compat: str) -> Callable[[Path, Path], list[str]]:
    def argv(fx: Path, tmp: Path) -> list[str]:
        root = fx / "tusimple"
        paths = ["--pred", str(root / "pred.json"), "--gt", str(root / "label.json")]
        return [*paths, "--compat", compat, "--per-image", "--json", str(tmp / "out.json")]

    return argv


def _check_tusimple(compat: str) -> Callable[[Path, Path, str], None]:
    def check(fx: Path, tmp: Path, stdout: str) -> None:
        from drivemetrics.lane.evaluate import evaluate_tusimple_files

        got = _json(tmp / "out.json")
        if compat == "reference":  # the official LaneEval's numbers, per image and overall
            expected = _json(fx / "tusimple" / "expected_official.json")
            want = {item["name"]: item["value"] for item in expected["overall"]}
            want_images = expected["per_image"]
        else:
            overall, want_images = evaluate_tusimple_files(
                fx / "tusimple" / "pred.json", fx / "tusimple" / "label.json"
            )
            want = {"Accuracy": overall["accuracy"], "FP": overall["fp"], "FN": overall["fn"], "F1": overall["f1"]}
        for key, value in want.items():
            _same(got[key], value, 1e-12, key)  # --per-image adds per_image beside the scores
        assert [p["raw_file"] for p in got["per_image"]] == [p["raw_file"] for p in want_images]
        for ours, theirs in zip(got["per_image"], want_images, strict=True):
            for key in ("accuracy", "fp", "fn"):
                _same(ours[key], theirs[key], 1e-12, f"{ours['raw_file']} {key}")

    return check


# ---------------------------------------------------------------------------------------------------------------
# KITTI object (one mode: the official C++ evaluate_object)


def _kitti_object_argv(compat: str) -> Callable[[Path, Path], list[str]]:
    """Both modes are the official C++'s numbers; the default row spells --pred / --out the old way (hidden aliases)."""

    def argv(fx: Path, tmp: Path) -> list[str]:
        (tmp / "list.txt").write_text("".join(f"{i:06d}\n" for i in range(100)))
        root = fx / "kitti_object"
        pred, out = ("--pred", "--out") if compat == "reference" else ("--det", "--write-stats")
        paths = ["--gt", str(root / "label_2"), pred, str(root / "det_100"), "--list", str(tmp / "list.txt")]
        return [*paths, out, str(tmp / "stats"), "--json", str(tmp / "out.json"), "--compat", compat]

    return argv


def _check_kitti_object(fx: Path, tmp: Path, stdout: str) -> None:
    expected = fx / "kitti_object" / "expected_official_100"
    names = sorted(p.name for p in expected.iterdir())
    assert sorted(p.name for p in (tmp / "stats").iterdir()) == names
    for name in names:  # byte for byte what the official tool wrote
        assert (tmp / "stats" / name).read_bytes() == (expected / name).read_bytes(), name


# ---------------------------------------------------------------------------------------------------------------
# KITTI-ROAD: the devkit's baseline (the mean road mask of the frames) as result PNGs, scored by road-eval and by
# the library's evaluate_results in this process; road-bev against the BEV counts of kitti_road.md section 7


def _road_results(fx: Path, tmp: Path) -> Path:
    from tests.road.test_cli import write_baseline_results

    write_baseline_results(fx / "kitti_road" / "training" / "gt_image_2", tmp / "results")
    return tmp / "results"


def _road_eval_argv(compat: str) -> Callable[[Path, Path], list[str]]:
    def argv(fx: Path, tmp: Path) -> list[str]:
        results = _road_results(fx, tmp)
        paths = ["--data", str(fx / "kitti_road"), "--results", str(results), "--crop"]
        return [*paths, "--compat", compat, "--json", str(tmp / "out.json")]

    return argv


def _check_road_eval(compat: str) -> Callable[[Path, Path, str], None]:
    def check(fx: Path, tmp: Path, stdout: str) -> None:
        from drivemetrics.road.evaluate import DEVKIT_NAMES, evaluate_results

        want = evaluate_results(fx / "kitti_road", tmp / "results", crop=True, compat=compat, progress=False)
        got = _json(tmp / "out.json")
        assert set(got) == set(want) == {"um_road", "umm_road", "uu_road", "urban_road"}
        for category, entry in want.items():
            for key, value in entry.items():
                _same(got[category][DEVKIT_NAMES[key]], value, 1e-12, f"{category} {key}")
        if compat == "reference":  # the devkit's urban_road numbers (tests/road/test_cli.py, kitti_road.md)
            assert got["urban_road"]["totalPosNum"] == 309518
            assert got["urban_road"]["totalNegNum"] == 1548878

    return check


def _road_bev_argv(fx: Path, tmp: Path) -> list[str]:
    (tmp / "in").mkdir()
    name = "umm_road_000000.png"
    (tmp / "in" / name).write_bytes((fx / "kitti_road" / "training" / "gt_image_2" / name).read_bytes())
    calib = str(fx / "kitti_road" / "training" / "calib")
    return ["--calib", calib, "--input", str(tmp / "in"), "--output", str(tmp / "out")]


def _check_road_bev(fx: Path, tmp: Path, stdout: str) -> None:
    import numpy as np
    from PIL import Image

    bev = np.asarray(Image.open(tmp / "out" / "umm_road_000000.png"))
    # kitti_road.md section 7, umm_road_000000 in the devkit's BEV: black 13025, red 145411, magenta 161564
    assert bev.shape == (800, 400, 3)
    assert int((bev.sum(-1) == 0).sum()) == 13025
    assert int(((bev[..., 0] == 255) & (bev[..., 2] == 0)).sum()) == 145411
    assert int(((bev[..., 0] == 255) & (bev[..., 2] == 255)).sum()) == 161564


# ---------------------------------------------------------------------------------------------------------------
# road graphs


VANCOUVER_WINDOW = ["--window", "-1024", "-1024", "1024", "1024"]


def _vancouver_argv(compat: str, metrics: list[str]) -> Callable[[Path, Path], list[str]]:
    def argv(fx: Path, tmp: Path) -> list[str]:
        root = fx / "graphs" / "roadtracer_vancouver"
        paths = ["--gt", str(root / "gt.graph"), "--pred", str(root / "pred_segmentation.graph"), *VANCOUVER_WINDOW]
        return [*paths, "--metrics", *metrics, "--compat", compat, "--json", str(tmp / "out.json")]

    return argv


def _check_vancouver_reference(fx: Path, tmp: Path, stdout: str) -> None:
    """OPT-J and CCQ (the deterministic ones) as lcit/metrics_delin returned them on the 2048 px window."""
    released = _json(fx / "graphs" / "roadtracer_vancouver" / "expected_metrics_delin_crop2048.json")["results"]
    by_metric = {r["metric"]: r for r in released if r["pred"] == "segmentation" and r["seed"] is None}
    got = _json(tmp / "out.json")["aggregate"]
    for key in ("precision", "recall", "f1"):
        _same(got["opt_j"][key], by_metric["optj"][key], 1e-9, f"opt_j {key}")
    for key in ("correctness", "completeness", "quality"):
        _same(got["ccq"][key], by_metric["ccq"][key], 1e-9, f"ccq {key}")


def _check_graph_kernel(gt: str, pred: str, metrics: list[str], window: bool) -> Callable[[Path, Path, str], None]:
    def check(fx: Path, tmp: Path, stdout: str) -> None:
        from drivemetrics.roadnet.evaluate import evaluate_dataset, find_pairs

        pairs, _ = find_pairs(fx / "graphs" / gt, fx / "graphs" / pred)
        options = {name: {"seed": 0} for name in ("opt_p", "opt_g", "apls", "tlts", "subg")}
        frame = tuple(float(v) for v in VANCOUVER_WINDOW[1:]) if window else None
        tiles, aggregate = evaluate_dataset(pairs, metrics, options, progress=False, window=frame)
        got = _json(tmp / "out.json")
        assert set(got["tiles"]) == set(tiles)
        for metric, values in aggregate.items():
            for key, value in values.items():
                if isinstance(value, float):
                    _same(got["aggregate"][metric][key], value, 1e-12, f"{metric} {key}")

    return check


def _graph_folder_argv(gt: str, pred: str, metrics: list[str]) -> Callable[[Path, Path], list[str]]:
    def argv(fx: Path, tmp: Path) -> list[str]:
        paths = ["--gt", str(fx / "graphs" / gt), "--pred", str(fx / "graphs" / pred)]
        return [*paths, "--metrics", *metrics, "--json", str(tmp / "out.json")]

    return argv


def _sensitivity_argv(compat: str) -> Callable[[Path, Path], list[str]]:
    def argv(fx: Path, tmp: Path) -> list[str]:
        gt = fx / "graphs" / "roadtracer_vancouver" / "gt.graph"
        options = ["--k-max", "2", "--k-step", "2", "--crop", "1024", "--samples", "20"]
        choices = ["--metrics", "opt_j", "ccq", "--kinds", "interruptions", "overconnections"]
        return ["--gt", str(gt), "--out", str(tmp / "sens"), *options, *choices, "--compat", compat]

    return argv


def _check_sensitivity(compat: str) -> Callable[[Path, Path, str], None]:
    def check(fx: Path, tmp: Path, stdout: str) -> None:
        import csv

        from drivemetrics.graph.geometry import crop, graph_arrays
        from drivemetrics.roadnet.io import read_graph
        from drivemetrics.roadnet.sensitivity import fast_options, run_sensitivity

        gt = read_graph(fx / "graphs" / "roadtracer_vancouver" / "gt.graph")
        pos = graph_arrays(gt).pos
        cx, cy = (pos.min(axis=0) + pos.max(axis=0)) / 2
        gt = crop(gt, cx - 512, cy - 512, cx + 512, cy + 512, compat=compat)
        options = fast_options(20)
        for name in ("opt_p", "opt_g", "apls", "tlts", "subg"):
            options.setdefault(name, {})["seed"] = 0
        rows = run_sensitivity(
            gt, [0, 2], ["interruptions", "overconnections"], ["opt_j", "ccq"], options, progress=False, compat=compat
        )
        with open(tmp / "sens" / "sensitivity.csv", newline="") as handle:
            written = list(csv.DictReader(handle))
        assert len(written) == len(rows)
        for line, row in zip(written, rows, strict=True):
            assert (line["kind"], int(line["k"]), line["metric"], line["score"]) == (
                row.kind,
                row.k,
                row.metric,
                row.score,
            )
            _same(float(line["value"]), row.value, 5e-6 * max(1.0, abs(row.value)), f"{row}")
        assert (tmp / "sens" / "sensitivity.png").stat().st_size > 0

    return check


# ---------------------------------------------------------------------------------------------------------------
# UrbanLaneGraph


LANE_KEYS = {
    "TOPO Precision": "topo_precision",
    "TOPO Recall": "topo_recall",
    "GEO Precision": "geo_precision",
    "GEO Recall": "geo_recall",
    "APLS": "apls",
    "SDA20": "sda20",
    "SDA50": "sda50",
    "Graph IoU": "iou",
}
#: the default mode's tie rule between equidistant GEO candidates (tests/lanegraph/test_evaluate.py)
DEFAULT_TIE_SAMPLES = {"miami_194_46863_3400_001_030"}


def _lanegraph_argv(task: str, compat: str, gt: str, pred: str) -> Callable[[Path, Path], list[str]]:
    def argv(fx: Path, tmp: Path) -> list[str]:
        root = fx / "lanegraph"
        paths = ["--gt", str(root / gt), "--pred", str(root / pred), "--task", task, "--compat", compat]
        return [*paths, "--workers", "2" if task == "successor" else "1", "--json", str(tmp / "out.json")]

    return argv


SUCCESSOR = ("annotations_successor_lgp_eval.pickle", "submission_succ_lgp_eval.pickle")
FULL = ("submission_full_lgp_eval.pickle", "submission_full_lgp_eval.pickle")


def _check_successor(compat: str) -> Callable[[Path, Path, str], None]:
    """Per sample, the evaluator's numbers for the 200 austin and miami samples (reference mode: as reported;
    default mode: its true GEO precision and recall, one tie apart on one sample)."""

    def check(fx: Path, tmp: Path, stdout: str) -> None:
        got = _json(tmp / "out.json")["samples"]
        assert len(got) == 561  # the whole eval split
        for city in ("austin", "miami"):
            for sample in _json(fx / "lanegraph" / f"expected_reference_{city}.json")["samples"]:
                sid, values = sample["sample_id"], got[sample["sample_id"]]
                if compat == "reference":
                    for name, key in LANE_KEYS.items():
                        _same(values[key], sample[name], 1e-6 if key == "apls" else 1e-9, f"{sid} {key}")
                else:
                    tol = 1.0 / 200 if sid in DEFAULT_TIE_SAMPLES else 1e-9
                    _same(values["geo_precision"], sample["geo_precision_true"], tol, f"{sid} geo_precision")
                    _same(values["geo_recall"], sample["GEO Recall"], tol, f"{sid} geo_recall")

    return check


def _check_full_self(fx: Path, tmp: Path, stdout: str) -> None:
    """Issue 35's check: the full-LGP example tile (5,214 nodes, city coordinates) against itself scores >= 0.99."""
    result = _json(tmp / "out.json")
    assert list(result["samples"]) == ["austin_83_34021_46605"]
    for key, value in result["samples"]["austin_83_34021_46605"].items():
        assert value >= 0.99, (key, value)


def _check_lanegraph_kernel(task: str, compat: str, gt: str, pred: str) -> Callable[[Path, Path, str], None]:
    def check(fx: Path, tmp: Path, stdout: str) -> None:
        from drivemetrics.lanegraph.evaluate import evaluate_submission
        from drivemetrics.lanegraph.io import load_lanegraph_pickle

        root = fx / "lanegraph"
        want = evaluate_submission(
            load_lanegraph_pickle(root / pred), load_lanegraph_pickle(root / gt), task, compat=compat, progress=False
        )
        got = _json(tmp / "out.json")
        for sid, values in want["samples"].items():
            for key, value in values.items():
                _same(got["samples"][sid][key], value, 1e-12, f"{sid} {key}")

    return check


def _check_planning_self(fx: Path, tmp: Path, stdout: str) -> None:
    values = _json(tmp / "out.json")["samples"]["austin_83_34021_46605"]
    assert values == {"mmd": 0.0, "med": 0.0, "sr": 1.0}


# ---------------------------------------------------------------------------------------------------------------
# vectorised maps


def _map_argv(case: str, protocol: str, workers: int = 1) -> Callable[[Path, Path], list[str]]:
    def argv(fx: Path, tmp: Path) -> list[str]:
        root = fx / "map_ap" / "cases" / case
        paths = ["--gt", str(root / "gt.json"), "--pred", str(root / "pred.json"), "--protocol", protocol]
        return [*paths, "--workers", str(workers), "--json", str(tmp / "out.json")]

    return argv


def _check_map_official(case: str) -> Callable[[Path, Path, str], None]:
    def check(fx: Path, tmp: Path, stdout: str) -> None:
        expected = _json(fx / "map_ap" / "expected.json")[case]
        got = _json(tmp / "out.json")
        if case == "nuscenes_maptr":
            detail = expected["detail"]
            _same(got["mAP"], detail["NuscMap_chamfer/mAP"], 1e-6, "mAP")
            for name, entry in got["classes"].items():
                _same(entry["AP"], detail[f"NuscMap_chamfer/{name}_AP"], 1e-6, name)
                for threshold in ("0.5", "1.0", "1.5"):
                    want = detail[f"NuscMap_chamfer/{name}_AP_thr_{threshold}"]
                    _same(entry[f"AP@{threshold}"], want, 1e-6, f"{name}@{threshold}")
        else:
            _same(got["mAP"], expected["mAP"], 1e-6, "mAP")
            for name, entry in expected["per_class"].items():
                for key, value in entry.items():
                    _same(got["classes"][name][key], value, 1e-6, f"{name} {key}")

    return check


def _stream_argv(folder: str, protocol: str, roi: str, *extra: str) -> Callable[[Path, Path], list[str]]:
    def argv(fx: Path, tmp: Path) -> list[str]:
        root = fx / folder / "cases" / roi
        gt = root / ("gts.json" if protocol == "streammapnet" else "samples.json")
        paths = ["--gt", str(gt), "--pred", str(root / "submission_vector.json")]
        return [*paths, "--protocol", protocol, "--roi", roi, *extra, "--workers", "1", "--json", str(tmp / "out.json")]

    return argv


def _check_stream_fixture(folder: str, roi: str) -> Callable[[Path, Path, str], None]:
    """The fixture's own compare.py (tolerance 1e-6) on the command's JSON as the range block."""

    def check(fx: Path, tmp: Path, stdout: str) -> None:
        candidate = tmp / "candidate.json"
        candidate.write_text(json.dumps({roi: _json(tmp / "out.json")}))
        expected = _json(fx / folder / "expected.json")
        (tmp / "expected.json").write_text(json.dumps({roi: expected[roi]}))
        compare = [sys.executable, str(fx / folder / "compare.py"), str(tmp / "expected.json"), str(candidate)]
        result = subprocess.run(compare, capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stdout[-3000:]

    return check


def _check_cmap_kernel(roi: str) -> Callable[[Path, Path, str], None]:
    def check(fx: Path, tmp: Path, stdout: str) -> None:
        from drivemetrics.vectormap.consistency import evaluate_cmap
        from drivemetrics.vectormap.io import read_map_preds, read_maptracker_samples

        root = fx / "maptracker_cmap" / "cases" / roi
        frames, gt, _ = read_maptracker_samples(root / "samples.json")
        want = evaluate_cmap(frames, gt, read_map_preds(root / "submission_vector.json", "av2"), roi, details=False)
        got = _json(tmp / "out.json")
        assert got["compat"] == "default"
        for mode in ("cmap", "plain"):
            _same(got[mode]["mAP"], want[mode]["mAP"], 1e-12, mode)
            assert got[mode]["per_class"] == want[mode]["per_class"]

    return check


def _check_map_kernel(case: str) -> Callable[[Path, Path, str], None]:
    def check(fx: Path, tmp: Path, stdout: str) -> None:
        from drivemetrics.vectormap.evaluate import evaluate_map_files

        root = fx / "map_ap" / "cases" / case
        want = evaluate_map_files(root / "gt.json", root / "pred.json", "default").report
        got = _json(tmp / "out.json")
        _same(got["mAP"], want["mAP"], 1e-12, "mAP")
        for name, entry in want["classes"].items():
            for key, value in entry.items():
                _same(got["classes"][name][key], value, 1e-12, f"{name} {key}")

    return check


# ---------------------------------------------------------------------------------------------------------------
# OpenLane-V2


def _openlanev2_argv(track: str, compat: str) -> Callable[[Path, Path], list[str]]:
    def argv(fx: Path, tmp: Path) -> list[str]:
        cases = str(fx / "openlanev2" / f"{track}_cases.json")  # GT and predictions in one file
        return ["--gt", cases, "--pred", cases, "--compat", compat, "--workers", "1", "--json", str(tmp / "out.json")]

    return argv


def _check_openlanev2(track: str, compat: str) -> Callable[[Path, Path, str], None]:
    def check(fx: Path, tmp: Path, stdout: str) -> None:
        got = _json(tmp / "out.json")
        if compat == "reference":  # the devkit 2.1.0's numbers
            for key, value in _json(fx / "openlanev2" / "expected.json")[track]["metrics"].items():
                _same(got[key], value, 1e-6, key)
            return
        from drivemetrics.lanetopology.evaluate import evaluate_openlanev2_files
        from drivemetrics.lanetopology.scoring import devkit_name

        cases = fx / "openlanev2" / f"{track}_cases.json"
        _, scores = evaluate_openlanev2_files(cases, cases, compat="default")
        want = {devkit_name(key): value for key, value in scores.items()}  # the JSON's (devkit's) names
        for key, value in [*got.items(), *got["per_threshold"].items()]:
            if key not in ("track", "per_threshold"):
                _same(value, want[key], 1e-12, key)

    return check


# ---------------------------------------------------------------------------------------------------------------
# OpenLane (v1) 3D lanes


def _openlane3d_argv(compat: str) -> Callable[[Path, Path], list[str]]:
    def argv(fx: Path, tmp: Path) -> list[str]:
        cases = fx / "openlane3d" / "cases"
        paths = ["--gt", str(cases / "gt"), "--pred", str(cases / "pred"), "--list", str(cases / "test_list.txt")]
        return [*paths, "--compat", compat, "--json", str(tmp / "out.json")]

    return argv


def _check_openlane3d(compat: str) -> Callable[[Path, Path, str], None]:
    def check(fx: Path, tmp: Path, stdout: str) -> None:
        got = _json(tmp / "out.json")
        if compat == "reference":  # eval_3D_lane.py's numbers, pooled counts and per-frame counts
            expected = _json(fx / "openlane3d" / "expected.json")
            for key, value in expected["metrics"].items():
                _same(got["metrics"][key], value, 1e-6 if key[:2] != "n_" else 0, key)
            counts = ("r_lane", "p_lane", "c_lane", "cnt_gt", "cnt_pred", "match_num")
            want = {f["file_path"]: [f[c] for c in counts] for f in expected["per_frame"]}
            assert {f["file_path"]: [f[c] for c in counts] for f in got["per_frame"]} == want
            return
        from drivemetrics.lane3d.evaluate import evaluate_openlane3d_files

        cases = fx / "openlane3d" / "cases"
        want = evaluate_openlane3d_files(cases / "gt", cases / "pred", cases / "test_list.txt", compat="default")
        for key, value in want["metrics"].items():
            _same(got["metrics"][key], value, 1e-12, key)

    return check


# ---------------------------------------------------------------------------------------------------------------
# LLAMAS and CurveLanes (issue 47)


def _compare_script(fx: Path, folder: str, tmp: Path) -> None:
    """The fixture's own compare.py on the command's JSON: counts exact, values within 1e-6."""
    done = subprocess.run(
        [sys.executable, str(fx / folder / "compare.py"), str(fx / folder / "expected.json"), str(tmp / "out.json")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout[-3000:]


def _llamas_argv(compat: str, *extra: str) -> Callable[[Path, Path], list[str]]:
    def argv(fx: Path, tmp: Path) -> list[str]:
        root = fx / "llamas" / "cases"
        paths = ["--gt", str(root / "labels" / "valid"), "--pred", str(root / "pred")]
        return [*paths, "--compat", compat, "--per-image", "--workers", "1", "--json", str(tmp / "out.json"), *extra]

    return argv


def _check_llamas(compat: str) -> Callable[[Path, Path, str], None]:
    def check(fx: Path, tmp: Path, stdout: str) -> None:
        if compat == "reference":
            _compare_script(fx, "llamas", tmp)
            return
        import warnings

        from drivemetrics.lane.evaluate import evaluate_llamas_dirs

        root = fx / "llamas" / "cases"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = evaluate_llamas_dirs(root / "pred", root / "labels" / "valid", per_image=True)
        got = _json(tmp / "out.json")
        assert got["per_frame"] == want["per_frame"]
        for key in ("tp", "fp", "fn", "precision", "recall", "f1"):
            _same(got["pooled"][key], want["pooled"][key], 1e-12, key)
        _same(got["multi_threshold"]["mF1"], want["multi_threshold"]["mF1"], 1e-12, "mF1")

    return check


def _curvelanes_argv(compat: str, *extra: str) -> Callable[[Path, Path], list[str]]:
    def argv(fx: Path, tmp: Path) -> list[str]:
        root = fx / "curvelanes" / "cases"
        paths = ["--gt", str(root / "valid"), "--pred", str(root / "pred")]
        return [*paths, "--compat", compat, "--per-image", "--workers", "1", "--json", str(tmp / "out.json"), *extra]

    return argv


def _check_curvelanes(compat: str) -> Callable[[Path, Path, str], None]:
    def check(fx: Path, tmp: Path, stdout: str) -> None:
        if compat == "reference":
            _compare_script(fx, "curvelanes", tmp)
            return
        from drivemetrics.lane.evaluate import evaluate_curvelanes_dirs

        root = fx / "curvelanes" / "cases"
        want = evaluate_curvelanes_dirs(root / "pred", root / "valid", per_image=True)
        got = _json(tmp / "out.json")
        assert got["per_frame"] == want["per_frame"]
        assert got["per_score_threshold"] == want["per_score_threshold"]
        assert got["pooled"] == want["pooled"]

    return check


# ---------------------------------------------------------------------------------------------------------------
# the matrix


# ---------------------------------------------------------------------------------------------------------------
# Apollo 3D Lane Synthetic and ONCE-3DLanes


def _apollo3d_argv(compat: str) -> Callable[[Path, Path], list[str]]:
    def argv(fx: Path, tmp: Path) -> list[str]:
        cases = fx / "apollo3d" / "cases"
        paths = ["--gt", str(cases / "test.json"), "--pred", str(cases / "test_pred_file.json")]
        return [*paths, "--compat", compat, "--json", str(tmp / "out.json")]

    return argv


def _check_apollo3d(compat: str) -> Callable[[Path, Path, str], None]:
    def check(fx: Path, tmp: Path, stdout: str) -> None:
        got = _json(tmp / "out.json")
        expected = _json(fx / "apollo3d" / "expected.json")
        want = {f["raw_file"]: f for f in expected["per_frame"]}
        if compat == "reference":  # eval_3D_lane.py's numbers and per-frame counts at every threshold
            for key, value in expected["metrics"].items():
                _same(got["metrics"][key], value, 1e-6, key)
            for frame in got["per_frame"]:
                assert frame["laneline_per_threshold"] == want[frame["raw_file"]]["laneline_per_threshold"]
                assert frame["centerline_per_threshold"] == want[frame["raw_file"]]["centerline_per_threshold"]
            assert "Laneline:" in stdout
            return
        # default: predictions pruned in step with the GT (never more than the tool counts), every perfect frame
        # a perfect score, and the pruning changes the pooled numbers
        cases = {f["raw_file"]: f["case"] for f in _json(fx / "apollo3d" / "cases" / "manifest.json")["frames"]}
        for frame in got["per_frame"]:
            rows, ref = frame["laneline_per_threshold"], want[frame["raw_file"]]["laneline_per_threshold"]
            assert all(r[3] <= e[3] for r, e in zip(rows, ref, strict=True))
            if cases[frame["raw_file"]] == "perfect":
                assert all(r[0] == r[1] == r[2] == r[3] for r in rows)
        assert got["metrics"]["laneline_AP"] > expected["metrics"]["laneline_AP"] + 0.01

    return check


def _once3d_argv(compat: str) -> Callable[[Path, Path], list[str]]:
    def argv(fx: Path, tmp: Path) -> list[str]:
        cases = fx / "once3d" / "cases"
        paths = ["--gt", str(cases / "gt"), "--pred", str(cases / "pred")]
        return [*paths, "--compat", compat, "--json", str(tmp / "out.json")]

    return argv


def _check_once3d(compat: str) -> Callable[[Path, Path, str], None]:
    def check(fx: Path, tmp: Path, stdout: str) -> None:
        got = _json(tmp / "out.json")
        expected = _json(fx / "once3d" / "expected.json")
        if compat == "reference":  # the table, its counts and every frame's TP (munkres 1.1.4's tie choices)
            for row, e in zip(got["table"], expected["table"], strict=True):
                for key in ("F1", "precision", "recall", "distance_error"):
                    _same(row[key], e[key], 1e-6, key)
                assert (row["gt_all"], row["pred_all"], row["tp_all"]) == (e["gt_all"], e["pred_all"], e["tp_all"])
            want = {f["file"]: f["tp"] for f in expected["per_frame"]}
            assert {f["file"]: f["tp"] for f in got["per_frame"]} == want
            return
        # default: same lanes counted, and the disjoint-depth lane (a TP for the tool) is no TP in 3D
        for row, e in zip(got["table"], expected["table"], strict=True):
            assert (row["gt_all"], row["pred_all"]) == (e["gt_all"], e["pred_all"])
        frames = _json(fx / "once3d" / "cases" / "manifest.json")["frames"]
        special = [
            f"{f['sequence']}/cam01/{f['timestamp']}.json" for f in frames if f["case"] == "disjoint_depth_same_lateral"
        ]
        tp = {f["file"]: f["tp"] for f in got["per_frame"]}
        want = {f["file"]: f["tp"] for f in expected["per_frame"]}
        for name in special:
            assert max(want[name]) >= 1
            assert max(tp[name]) == 0

    return check


def _stream_argv(folder: str, protocol: str, roi: str, *extra: str) -> Callable[[Path, Path], list[str]]:
    def argv(fx: Path, tmp: Path) -> list[str]:
        root = fx / folder / "cases" / roi
        gt = root / ("gts.json" if protocol == "streammapnet" else "samples.json")
        paths = ["--gt", str(gt), "--pred", str(root / "submission_vector.json")]
        return [*paths, "--protocol", protocol, "--roi", roi, *extra, "--workers", "1", "--json", str(tmp / "out.json")]

    return argv


def _check_stream_fixture(folder: str, roi: str) -> Callable[[Path, Path, str], None]:
    """The fixture's own compare.py (tolerance 1e-6) on the command's JSON as the range block."""

    def check(fx: Path, tmp: Path, stdout: str) -> None:
        candidate = tmp / "candidate.json"
        candidate.write_text(json.dumps({roi: _json(tmp / "out.json")}))
        expected = _json(fx / folder / "expected.json")
        (tmp / "expected.json").write_text(json.dumps({roi: expected[roi]}))
        compare = [sys.executable, str(fx / folder / "compare.py"), str(tmp / "expected.json"), str(candidate)]
        result = subprocess.run(compare, capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stdout[-3000:]

    return check


def _check_cmap_kernel(roi: str) -> Callable[[Path, Path, str], None]:
    def check(fx: Path, tmp: Path, stdout: str) -> None:
        from drivemetrics.vectormap.consistency import evaluate_cmap
        from drivemetrics.vectormap.io import read_map_preds, read_maptracker_samples

        root = fx / "maptracker_cmap" / "cases" / roi
        frames, gt, _ = read_maptracker_samples(root / "samples.json")
        want = evaluate_cmap(frames, gt, read_map_preds(root / "submission_vector.json", "av2"), roi, details=False)
        got = _json(tmp / "out.json")
        assert got["compat"] == "default"
        for mode in ("cmap", "plain"):
            _same(got[mode]["mAP"], want[mode]["mAP"], 1e-12, mode)
            assert got[mode]["per_class"] == want[mode]["per_class"]

    return check


ROWS: dict[str, Row] = {
    "llamas-eval/llamas/reference": Row(
        "llamas-eval", "llamas", "reference", _llamas_argv("reference"), _check_llamas("reference")
    ),
    "llamas-eval/llamas/default": Row(
        "llamas-eval", "llamas", "default", _llamas_argv("default"), _check_llamas("default")
    ),
    "curvelanes-eval/curvelanes/reference": Row(
        "curvelanes-eval", "curvelanes", "reference", _curvelanes_argv("reference"), _check_curvelanes("reference")
    ),
    "curvelanes-eval/curvelanes/default": Row(
        "curvelanes-eval", "curvelanes", "default", _curvelanes_argv("default"), _check_curvelanes("default")
    ),
    # --device cpu: the IoUs' intersections as a torch matrix product, the same numbers as numpy (CI has no GPU)
    "llamas-eval/llamas/device_cpu/reference": Row(
        "llamas-eval", "llamas", "reference", _llamas_argv("reference", "--device", "cpu"), _check_llamas("reference")
    ),
    "llamas-eval/llamas/device_cpu/default": Row(
        "llamas-eval", "llamas", "default", _llamas_argv("default", "--device", "cpu"), _check_llamas("default")
    ),
    "curvelanes-eval/curvelanes/device_cpu/reference": Row(
        "curvelanes-eval",
        "curvelanes",
        "reference",
        _curvelanes_argv("reference", "--device", "cpu"),
        _check_curvelanes("reference"),
    ),
    # --protocol ufldv2: also UFLDv2's C++ variant, the fixture's ufldv2_cpp_variant (compare.py's key ufldv2)
    "curvelanes-eval/curvelanes/ufldv2/reference": Row(
        "curvelanes-eval",
        "curvelanes",
        "reference",
        _curvelanes_argv("reference", "--protocol", "ufldv2"),
        _check_curvelanes("reference"),
    ),
    "curvelanes-eval/curvelanes/device_cpu/default": Row(
        "curvelanes-eval",
        "curvelanes",
        "default",
        _curvelanes_argv("default", "--device", "cpu"),
        _check_curvelanes("default"),
    ),
    "culane-eval/culane_official/reference": Row(
        "culane-eval",
        "culane_official",
        "reference",
        _culane_argv("culane_official", "reference"),
        _check_culane_official,
    ),
    "culane-eval/culane_official/default": Row(
        "culane-eval",
        "culane_official",
        "default",
        _culane_argv("culane_official", "default"),
        _check_culane_kernel("culane_official", "default"),
    ),
    "culane-eval/culane/default": Row(
        "culane-eval", "culane", "default", _culane_argv("culane", "default"), _check_culane_port
    ),
    "culane-eval/culane/reference": Row(
        "culane-eval",
        "culane",
        "reference",
        _culane_argv("culane", "reference"),
        _check_culane_kernel("culane", "reference"),
    ),
    "tusimple-eval/tusimple/reference": Row(
        "tusimple-eval", "tusimple", "reference", _tusimple_argv("reference"), _check_tusimple("reference")
    ),
    "tusimple-eval/tusimple/default": Row(
        "tusimple-eval", "tusimple", "default", _tusimple_argv("default"), _check_tusimple("default")
    ),
    "kitti-object-eval/kitti_object/reference": Row(
        "kitti-object-eval", "kitti_object", "reference", _kitti_object_argv("reference"), _check_kitti_object
    ),
    "kitti-object-eval/kitti_object/default": Row(
        "kitti-object-eval", "kitti_object", "default", _kitti_object_argv("default"), _check_kitti_object
    ),
    "road-eval/kitti_road/reference": Row(
        "road-eval", "kitti_road", "reference", _road_eval_argv("reference"), _check_road_eval("reference")
    ),
    "road-eval/kitti_road/default": Row(
        "road-eval", "kitti_road", "default", _road_eval_argv("default"), _check_road_eval("default")
    ),
    "road-bev/kitti_road/-": Row("road-bev", "kitti_road", "-", _road_bev_argv, _check_road_bev),
    "graph-eval/graphs/roadtracer_vancouver/reference": Row(
        "graph-eval", "graphs", "reference", _vancouver_argv("reference", ["opt_j", "ccq"]), _check_vancouver_reference
    ),
    "graph-eval/graphs/roadtracer_vancouver/default": Row(
        "graph-eval",
        "graphs",
        "default",
        _vancouver_argv("default", ["opt_j", "ccq", "junct"]),
        _check_graph_kernel(
            "roadtracer_vancouver/gt.graph",
            "roadtracer_vancouver/pred_segmentation.graph",
            ["opt_j", "ccq", "junct"],
            window=True,
        ),
    ),
    "graph-eval/graphs/spacenet_vegas/default": Row(
        "graph-eval",
        "graphs",
        "default",
        _graph_folder_argv("spacenet_vegas/spacenetroads", "spacenet_vegas/osm", ["opt_j", "ccq", "junct"]),
        _check_graph_kernel("spacenet_vegas/spacenetroads", "spacenet_vegas/osm", ["opt_j", "ccq", "junct"], False),
        slow=True,
    ),
    "graph-eval/graphs/sat2graph_tile/default": Row(
        "graph-eval",
        "graphs",
        "default",
        _graph_folder_argv("sat2graph_tile/gt.p", "sat2graph_tile/prop.p", ["opt_j", "junct"]),
        _check_graph_kernel("sat2graph_tile/gt.p", "sat2graph_tile/prop.p", ["opt_j", "junct"], False),
    ),
    "graph-sensitivity/graphs/default": Row(
        "graph-sensitivity", "graphs", "default", _sensitivity_argv("default"), _check_sensitivity("default")
    ),
    "graph-sensitivity/graphs/reference": Row(
        "graph-sensitivity", "graphs", "reference", _sensitivity_argv("reference"), _check_sensitivity("reference")
    ),
    "lanegraph-eval/lanegraph/successor/reference": Row(
        "lanegraph-eval",
        "lanegraph",
        "reference",
        _lanegraph_argv("successor", "reference", *SUCCESSOR),
        _check_successor("reference"),
        slow=True,
    ),
    "lanegraph-eval/lanegraph/successor/default": Row(
        "lanegraph-eval",
        "lanegraph",
        "default",
        _lanegraph_argv("successor", "default", *SUCCESSOR),
        _check_successor("default"),
        slow=True,
    ),
    "lanegraph-eval/lanegraph/full/default": Row(
        "lanegraph-eval",
        "lanegraph",
        "default",
        _lanegraph_argv("full", "default", *FULL),
        _check_full_self,
        slow=True,
    ),
    "lanegraph-eval/lanegraph/full/reference": Row(
        "lanegraph-eval",
        "lanegraph",
        "reference",
        _lanegraph_argv("full", "reference", *FULL),
        _check_lanegraph_kernel("full", "reference", *FULL),
        slow=True,
    ),
    "lanegraph-eval/lanegraph/planning/default": Row(
        "lanegraph-eval",
        "lanegraph",
        "default",
        _lanegraph_argv("planning", "default", *FULL),
        _check_planning_self,
        slow=True,
    ),
    "lanegraph-eval/lanegraph/planning/reference": Row(
        "lanegraph-eval",
        "lanegraph",
        "reference",
        _lanegraph_argv("planning", "reference", *FULL),
        _check_lanegraph_kernel("planning", "reference", *FULL),
        slow=True,
    ),
    "map-eval/map_ap/nuscenes-maptr": Row(
        "map-eval",
        "map_ap",
        "reference",
        _map_argv("nuscenes_maptr", "nuscenes-maptr"),
        _check_map_official("nuscenes_maptr"),
    ),
    "map-eval/map_ap/av2-cvpr23": Row(
        "map-eval",
        "map_ap",
        "reference",
        _map_argv("av2_cvpr23", "av2-cvpr23", workers=2),
        _check_map_official("av2_cvpr23"),
    ),
    "map-eval/map_ap/nuscenes_maptr/default": Row(
        "map-eval", "map_ap", "default", _map_argv("nuscenes_maptr", "default"), _check_map_kernel("nuscenes_maptr")
    ),
    "map-eval/map_ap/av2_cvpr23/default": Row(
        "map-eval", "map_ap", "default", _map_argv("av2_cvpr23", "default"), _check_map_kernel("av2_cvpr23")
    ),
    **{
        f"map-eval/streammapnet/{roi}": Row(
            "map-eval",
            "streammapnet",
            "reference",
            _stream_argv("streammapnet", "streammapnet", roi),
            _check_stream_fixture("streammapnet", roi),
        )
        for roi in ("60x30", "100x50")
    },
    **{
        f"map-eval/maptracker_cmap/{roi}/reference": Row(
            "map-eval",
            "maptracker_cmap",
            "reference",
            _stream_argv("maptracker_cmap", "maptracker", roi, "--compat", "reference"),
            _check_stream_fixture("maptracker_cmap", roi),
        )
        for roi in ("60x30", "100x50")
    },
    **{
        f"map-eval/maptracker_cmap/{roi}/default": Row(
            "map-eval",
            "maptracker_cmap",
            "default",
            _stream_argv("maptracker_cmap", "maptracker", roi),
            _check_cmap_kernel(roi),
        )
        for roi in ("60x30", "100x50")
    },
    "openlanev2-eval/openlanev2/centerline/reference": Row(
        "openlanev2-eval",
        "openlanev2",
        "reference",
        _openlanev2_argv("centerline", "reference"),
        _check_openlanev2("centerline", "reference"),
    ),
    "openlanev2-eval/openlanev2/centerline/default": Row(
        "openlanev2-eval",
        "openlanev2",
        "default",
        _openlanev2_argv("centerline", "default"),
        _check_openlanev2("centerline", "default"),
    ),
    "openlanev2-eval/openlanev2/lanesegment/reference": Row(
        "openlanev2-eval",
        "openlanev2",
        "reference",
        _openlanev2_argv("lanesegment", "reference"),
        _check_openlanev2("lanesegment", "reference"),
    ),
    "openlanev2-eval/openlanev2/lanesegment/default": Row(
        "openlanev2-eval",
        "openlanev2",
        "default",
        _openlanev2_argv("lanesegment", "default"),
        _check_openlanev2("lanesegment", "default"),
    ),
    "openlane3d-eval/openlane3d/reference": Row(
        "openlane3d-eval", "openlane3d", "reference", _openlane3d_argv("reference"), _check_openlane3d("reference")
    ),
    "openlane3d-eval/openlane3d/default": Row(
        "openlane3d-eval", "openlane3d", "default", _openlane3d_argv("default"), _check_openlane3d("default")
    ),
    "apollo3d-eval/apollo3d/reference": Row(
        "apollo3d-eval", "apollo3d", "reference", _apollo3d_argv("reference"), _check_apollo3d("reference")
    ),
    "apollo3d-eval/apollo3d/default": Row(
        "apollo3d-eval", "apollo3d", "default", _apollo3d_argv("default"), _check_apollo3d("default")
    ),
    "once3d-eval/once3d/reference": Row(
        "once3d-eval", "once3d", "reference", _once3d_argv("reference"), _check_once3d("reference")
    ),
    "once3d-eval/once3d/default": Row(
        "once3d-eval", "once3d", "default", _once3d_argv("default"), _check_once3d("default")
    ),
    **{
        f"map-eval/streammapnet/{roi}": Row(
            "map-eval",
            "streammapnet",
            "reference",
            _stream_argv("streammapnet", "streammapnet", roi),
            _check_stream_fixture("streammapnet", roi),
        )
        for roi in ("60x30", "100x50")
    },
    **{
        f"map-eval/maptracker_cmap/{roi}/reference": Row(
            "map-eval",
            "maptracker_cmap",
            "reference",
            _stream_argv("maptracker_cmap", "maptracker", roi, "--compat", "reference"),
            _check_stream_fixture("maptracker_cmap", roi),
        )
        for roi in ("60x30", "100x50")
    },
    **{
        f"map-eval/maptracker_cmap/{roi}/default": Row(
            "map-eval",
            "maptracker_cmap",
            "default",
            _stream_argv("maptracker_cmap", "maptracker", roi),
            _check_cmap_kernel(roi),
        )
        for roi in ("60x30", "100x50")
    },
}

#: commands and fixture folders without a row, and why (a pending entry may name a command not registered yet)
NOT_APPLICABLE: dict[str, str] = {
    "command demo": "synthetic scenes made by the library, no fixture (tests/demos run it)",
    "command config": "prints shipped config files, reads no dataset",
}

#: compat modes of each command (the matrix must hold every mode of every command it runs)
COMPAT_CHOICES = {"default", "reference"}


def _parser_commands() -> set[str]:
    """The subcommands registered in the CLI parser."""
    import argparse

    from drivemetrics.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return set(sub.choices)


def test_every_command_and_fixture_folder_has_a_row():
    commands = _parser_commands()
    covered = {row.command for row in ROWS.values()}
    listed = {key.split(" ", 1)[1] for key in NOT_APPLICABLE if key.startswith("command ")}
    assert commands - covered - listed == set(), "a command without a row: add one to ROWS or NOT_APPLICABLE"
    assert covered <= commands
    root = fixtures_root()
    if root is None:
        pytest.skip("real fixtures not found: set DRIVEMETRICS_FIXTURES or place them in ../shared/fixtures")
    folders = {p.name for p in root.iterdir() if p.is_dir()}
    used = {row.fixture for row in ROWS.values()}
    listed_fixtures = {key.split(" ", 1)[1] for key in NOT_APPLICABLE if key.startswith("fixture ")}
    assert folders - used - listed_fixtures == set(), "a fixture folder without a row: add one or list it"
    assert used <= folders


#: Commands that accept ``--compat`` for the one grammar but whose numbers are the released tool's in both modes (the
#: KITTI object AP is the devkit's; map-eval's presets are picked by ``--protocol``, rows per protocol above).
SAME_NUMBERS_IN_BOTH_MODES = {"kitti-object-eval", "map-eval"}


def test_every_compat_mode_of_a_command_has_a_row():
    """Both modes where a command has two (``--compat`` for most, ``--protocol`` presets for map-eval)."""
    from drivemetrics.cli import build_parser

    for command in {row.command for row in ROWS.values()}:
        parser = build_parser(command)
        import argparse

        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[command]
        action = sub._option_string_actions.get("--compat")
        modes = {row.compat for row in ROWS.values() if row.command == command}
        if action is not None and command in SAME_NUMBERS_IN_BOTH_MODES:
            assert set(action.choices) == COMPAT_CHOICES
        elif action is not None:
            assert set(action.choices) == COMPAT_CHOICES
            assert modes >= COMPAT_CHOICES, f"{command}: rows for {sorted(modes)}"
        else:
            assert modes <= {"-", "default", "reference"}


def _run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = dict(
        os.environ, OMP_NUM_THREADS="1", PYTHONPATH=os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")])
    )
    return subprocess.run(
        [sys.executable, "-m", "drivemetrics", *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )


@pytest.mark.parametrize(
    "name", [pytest.param(name, marks=pytest.mark.slow) if row.slow else name for name, row in ROWS.items()]
)
def test_command_on_fixture(name, fixtures_dir, tmp_path):
    row = ROWS[name]
    if not (fixtures_dir / row.fixture).is_dir():
        pytest.skip(f"fixture folder {row.fixture} absent")
    argv = [row.command, *row.argv(fixtures_dir, tmp_path), "--no-progress"]
    if row.command == "openlanev2-eval":  # no progress bar (tests/test_progress.py)
        argv.remove("--no-progress")
    result = _run(argv, tmp_path)
    assert result.returncode == 0, f"{' '.join(argv)}\n{result.stderr[-3000:]}"
    assert "\r" not in result.stderr  # no progress bar into a pipe
    row.check(fixtures_dir, tmp_path, result.stdout)
