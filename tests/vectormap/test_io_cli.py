"""Readers of both native formats and the ``map-eval`` command."""

from __future__ import annotations

import json

import pytest

from drivemetrics.cli import main
from drivemetrics.vectormap.io import read_map_gt, read_map_preds


def test_cli_reads_both_fixture_formats_and_writes_the_json(fixtures_dir, tmp_path, capsys):
    root = fixtures_dir / "map_ap"
    if not root.is_dir():
        pytest.skip("map_ap fixtures absent")
    expected = json.loads((root / "expected.json").read_text())
    out = tmp_path / "av2.json"
    case = root / "cases" / "av2_cvpr23"
    code = main(
        [
            "map-eval",
            "--protocol",
            "av2-cvpr23",
            "--gt",
            str(case / "gt.json"),
            "--pred",
            str(case / "pred.json"),
            "--json",
            str(out),
        ]
    )
    assert code == 0
    report = json.loads(out.read_text())
    assert report["mAP"] == pytest.approx(expected["av2_cvpr23"]["mAP"], abs=1e-6)
    assert set(report["classes"]) == {"divider", "ped_crossing", "boundary"}
    assert report["classes"]["divider"]["AP@1.0"] == pytest.approx(
        expected["av2_cvpr23"]["per_class"]["divider"]["AP@1.0"], abs=1e-6
    )
    assert report["unknown_samples"] == ["00000007999999"]
    assert "00000007999999" in capsys.readouterr().err
    case = root / "cases" / "nuscenes_maptr"
    out = tmp_path / "maptr.json"
    assert (
        main(
            [
                "map-eval",
                "--protocol",
                "nuscenes-maptr",
                "--gt",
                str(case / "gt.json"),
                "--pred",
                str(case / "pred.json"),
                "--json",
                str(out),
            ]
        )
        == 0
    )
    report = json.loads(out.read_text())
    assert report["mAP"] == pytest.approx(expected["nuscenes_maptr"]["detail"]["NuscMap_chamfer/mAP"], abs=1e-6)
    assert report["classes"]["boundary"]["AP@0.5"] == pytest.approx(
        expected["nuscenes_maptr"]["detail"]["NuscMap_chamfer/boundary_AP_thr_0.5"], abs=1e-6
    )


def write(path, data):
    path.write_text(json.dumps(data))
    return path


def test_malformed_vectors_name_sample_and_field(tmp_path, capsys):
    gt = write(
        tmp_path / "gt.json", {"GTs": [{"sample_token": "s1", "vectors": [{"pts": [[0, 0], [1, 0]], "type": 0}]}]}
    )
    bad = write(
        tmp_path / "pred.json",
        {
            "results": [
                {"sample_token": "s1", "vectors": [{"pts": [[0, 0], [1, "x"]], "type": 0, "confidence_level": 0.5}]}
            ]
        },
    )
    with pytest.raises(ValueError, match=r"sample s1: vectors\[0\]\.pts"):
        read_map_preds(bad)
    bad_type = write(
        tmp_path / "p2.json",
        {
            "results": [
                {"sample_token": "s1", "vectors": [{"pts": [[0, 0], [1, 0]], "type": 7, "confidence_level": 0.5}]}
            ]
        },
    )
    with pytest.raises(ValueError, match=r"sample s1: vectors\[0\]\.type"):
        read_map_preds(bad_type)
    bad_score = write(
        tmp_path / "p3.json",
        {
            "results": [
                {"sample_token": "s1", "vectors": [{"pts": [[0, 0], [1, 0]], "type": 0, "confidence_level": None}]}
            ]
        },
    )
    assert main(["map-eval", "--gt", str(gt), "--pred", str(bad_score)]) == 2
    assert "confidence_level" in capsys.readouterr().err
    av2 = write(
        tmp_path / "av2.json", {"results": {"t1": {"vectors": [[[0, 0], [1, 0]]], "scores": [0.5, 0.2], "labels": [0]}}}
    )
    with pytest.raises(ValueError, match="sample t1: `vectors`, `scores` and `labels` differ"):
        read_map_preds(av2)
    nan_gt = write(
        tmp_path / "g2.json",
        {"seg": [{"timestamp": "t1", "annotation": {"divider": [[[0, 0, 0, 1], [float("nan"), 1, 0, 1]]]}}]},
    )
    with pytest.raises(ValueError, match=r"sample t1: annotation\.divider\[0\]"):
        read_map_gt(nan_gt)


def test_json_output_never_overwrites_an_input(tmp_path):
    gt = write(tmp_path / "gt.json", {"GTs": [{"sample_token": "s1", "vectors": []}]})
    pred = write(tmp_path / "pred.json", {"results": [{"sample_token": "s1", "vectors": []}]})
    assert main(["map-eval", "--gt", str(gt), "--pred", str(pred), "--json", str(pred)]) == 2
    assert json.loads(pred.read_text()) == {"results": [{"sample_token": "s1", "vectors": []}]}


def test_hostile_json_is_one_line_naming_the_file(tmp_path):
    from drivemetrics.cli import main

    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    huge = tmp_path / "huge.json"
    huge.write_text('{"results": [], "x": ' + "9" * 400 + "}")
    for bad in (deep, huge):
        assert main(["map-eval", "--protocol", "nuscenes-maptr", "--gt", str(bad), "--pred", str(bad)]) == 2


def test_json_output_into_a_folder_is_refused_before_work(tmp_path, capsys):
    from drivemetrics.cli import main

    gt = tmp_path / "gt.json"
    gt.write_text("{}")
    folder = tmp_path / "out"
    folder.mkdir()
    argv = ["map-eval", "--protocol", "nuscenes-maptr", "--gt", str(gt), "--pred", str(gt), "--json", str(folder)]
    assert main(argv) == 2
    assert str(folder) in capsys.readouterr().err


def test_fast_maptr_reader_equals_the_checked_reader(tmp_path):
    # the one-numpy-call reader of well-formed MapTR files must give what the element-by-element reader gives
    from drivemetrics.vectormap.io import _read_gt_checked, _read_preds_checked

    gt = {
        "GTs": [
            {"sample_token": "a", "vectors": [{"pts": [[0, 0.5], [1, 2]], "type": 2}, {"pts": [[3, 4]], "type": 0}]},
            {"sample_token": "b", "vectors": []},
            {"vectors": [{"pts": [[1.25, -7], [8, 9], [10, 11]], "type": 1}]},
        ]
    }
    pred = {
        "results": [
            {"sample_token": "a", "vectors": [{"pts": [[0, 0], [1, 1]], "type": 1, "confidence_level": 0.25}]},
            {"sample_token": "c", "vectors": [{"pts": [[2, 2], [3, 3.5]], "type": 0, "confidence_level": 1}]},
        ]
    }
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "pred.json").write_text(json.dumps(pred))
    for fast, slow in [
        (read_map_gt(tmp_path / "gt.json"), _read_gt_checked(tmp_path / "gt.json", gt, "maptr")),
        (read_map_preds(tmp_path / "pred.json"), _read_preds_checked(tmp_path / "pred.json", pred["results"], "maptr")),
    ]:
        assert [s.token for s in fast] == [s.token for s in slow] == [s.token for s in slow]
        for f, s in zip(fast, slow, strict=True):
            assert (f.labels, f.scores) == (s.labels, s.scores)
            assert len(f.points) == len(s.points)
            assert all(a.tolist() == b.tolist() and a.dtype == b.dtype for a, b in zip(f.points, s.points, strict=True))
    assert [s.token for s in read_map_gt(tmp_path / "gt.json")] == ["a", "b", "2"]
    # a 3-D line among 2-D ones: refused naming both lines (it used to be cut to 2-D when packed)
    gt["GTs"][0]["vectors"][0]["pts"] = [[0, 0, 1], [1, 2, 3]]
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    with pytest.raises(
        ValueError, match=r"gt\.json: sample a: vectors\[1\] has 2 coordinates, but sample a vectors\[0\]"
    ):
        read_map_gt(tmp_path / "gt.json")


@pytest.mark.slow  # starts two spawned worker processes
@pytest.mark.parametrize("case", ["nuscenes_maptr", "av2_cvpr23"])
def test_worker_processes_give_the_one_process_report(fixtures_dir, monkeypatch, case):
    from drivemetrics.vectormap import evaluate

    root = fixtures_dir / "map_ap" / "cases" / case
    one = evaluate.evaluate_map_files(root / "gt.json", root / "pred.json", "default", workers=1).report
    monkeypatch.setattr(evaluate, "MIN_SAMPLES_PER_PROCESS", 1)  # the 50 fixture samples in 4 batches, 2 processes
    two = evaluate.evaluate_map_files(root / "gt.json", root / "pred.json", "default", workers=2).report
    assert two == one


def test_fast_av2_reader_equals_the_checked_reader(fixtures_dir, tmp_path):
    # the one-numpy-call reader of well-formed Argoverse 2 files must give what the element-by-element reader gives,
    # and hand anything irregular to it (here: lines of 3 and 4 coordinates, which it cuts to 3)
    from drivemetrics.vectormap.io import _av2_gt_fast, _av2_preds_fast, _read_gt_checked, _read_preds_checked

    root = fixtures_dir / "map_ap" / "cases" / "av2_cvpr23"
    if not (root / "gt.json").is_file():
        pytest.skip("map_ap fixtures absent")
    gt, pred = json.loads((root / "gt.json").read_text()), json.loads((root / "pred.json").read_text())
    mixed = {
        "s": [{"timestamp": "7", "annotation": {"divider": [[[0, 0, 0, 1], [1, 1, 0, 0]], [[2, 2, 1], [3, 3, 1]]]}}]
    }
    assert _av2_gt_fast(gt) is not None
    assert _av2_preds_fast(pred["results"]) is not None
    assert _av2_gt_fast(mixed) is None
    cases = [(gt, pred, root / "gt.json", root / "pred.json")]
    (tmp_path / "mixed.json").write_text(json.dumps(mixed))
    cases.append((mixed, {"results": {}}, tmp_path / "mixed.json", None))
    for gt_data, pred_data, gt_path, pred_path in cases:
        pairs = [(read_map_gt(gt_path, "av2"), _read_gt_checked(gt_path, gt_data, "av2"))]
        if pred_path is not None:
            pairs.append(
                (read_map_preds(pred_path, "av2"), _read_preds_checked(pred_path, pred_data["results"], "av2"))
            )
        for fast, slow in pairs:
            assert [s.token for s in fast] == [s.token for s in slow]
            for f, s in zip(fast, slow, strict=True):
                assert (f.labels, f.scores) == (s.labels, s.scores)
                assert len(f.points) == len(s.points)
                for a, b in zip(f.points, s.points, strict=True):
                    assert a.tolist() == b.tolist()
                    assert a.dtype == b.dtype
    assert read_map_gt(tmp_path / "mixed.json", "av2")[0].points[0].shape == (2, 3)


@pytest.mark.parametrize("case", ["nuscenes_maptr", "av2_cvpr23"])
def test_threads_and_the_auto_workers_give_the_one_thread_rows(fixtures_dir, case, monkeypatch):
    # issue 46: `workers` is processes (None: the pool's measured auto policy), `threads` the threads of a process;
    # either way the same rows in the same order
    import multiprocessing.process

    import torch

    from drivemetrics.vectormap import evaluate
    from drivemetrics.vectormap.io import MapSample, read_map_files
    from drivemetrics.vectormap.protocol import get_protocol

    root = fixtures_dir / "map_ap" / "cases" / case
    if not (root / "gt.json").is_file():
        pytest.skip("map_ap fixtures absent")
    protocol = case.replace("_", "-")
    gt, preds = read_map_files(root / "gt.json", root / "pred.json", protocol)
    by_token = {s.token: s for s in preds}
    paired = [by_token.get(s.token, MapSample(s.token)) for s in gt]
    proto = get_protocol(protocol)
    calls = []
    monkeypatch.setattr(evaluate, "map_in_processes", lambda fn, jobs, workers: calls.append(workers) or map(fn, jobs))
    one = evaluate._match_samples(gt, paired, proto, 2, 2, "cpu", batch_size=7, workers=1, threads=1)
    threads = evaluate._match_samples(gt, paired, proto, 2, 2, "cpu", batch_size=7, workers=1, threads=2)
    auto = evaluate._match_samples(gt, paired, proto, 2, 2, "cpu", batch_size=7, workers=None)
    assert calls == [1, 1, None]  # None goes to the pool's auto policy, not to threads
    for other in (threads, auto):
        assert torch.equal(one[0], other[0])
        assert torch.equal(one[1], other[1])
    assert one[0].shape[0] == sum(len(s.points) for s in paired)
    monkeypatch.undo()
    started = []
    start = multiprocessing.process.BaseProcess.start
    monkeypatch.setattr(multiprocessing.process.BaseProcess, "start", lambda self: started.append(1) or start(self))
    auto = evaluate._match_samples(gt, paired, proto, 2, 2, "cpu", batch_size=7, workers=None)
    assert started == []  # a small input: the auto policy starts no process
    assert torch.equal(one[0], auto[0])


def test_the_map_eval_threads_option_reaches_the_tensor_path(fixtures_dir, tmp_path, monkeypatch):
    from drivemetrics.cli import main
    from drivemetrics.vectormap import evaluate

    root = fixtures_dir / "map_ap" / "cases" / "nuscenes_maptr"
    if not (root / "gt.json").is_file():
        pytest.skip("map_ap fixtures absent")
    seen = []
    real = evaluate._match_samples

    def spy(*args, **kwargs):
        seen.append((args[7], args[9]))  # workers, threads
        return real(*args, **kwargs)

    monkeypatch.setattr(evaluate, "_match_samples", spy)
    argv = [
        "map-eval",
        "--protocol",
        "nuscenes-maptr",
        "--gt",
        str(root / "gt.json"),
        "--pred",
        str(root / "pred.json"),
    ]
    assert main([*argv, "--no-progress", "--threads", "2"]) == 0
    assert main([*argv, "--no-progress"]) == 0
    assert seen == [(None, 2), (None, None)]


def test_the_map_readers_import_no_torch():
    # map-eval reads its files in a forked child while torch imports: the readers must not import it
    import subprocess
    import sys

    code = "import sys, drivemetrics.vectormap.io, drivemetrics.vectormap.protocol; print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


@pytest.mark.parametrize("threads", [1, 2])
def test_batches_are_matched_with_one_torch_thread(monkeypatch, threads):
    # with one thread the batches once ran under torch's default intra-op threads, which spin on the kernel's small
    # ops on a busy machine (map-eval --workers 1 --threads 1: 80 s of CPU instead of 12 s, 6,019 samples)
    import torch

    from drivemetrics.vectormap import evaluate

    seen = []
    monkeypatch.setattr(evaluate, "_match_batch", lambda batch: seen.append(torch.get_num_threads()) or batch)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        assert evaluate._match_group(([1, 2, 3], threads)) == [1, 2, 3]
        assert torch.get_num_threads() == 2  # restored
    finally:
        torch.set_num_threads(before)
    assert seen == [1, 1, 1]
