"""graph-eval's process pool: the same numbers for any number of workers; Ctrl-C stops every worker and writes
nothing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from drivemetrics.cli import main
from drivemetrics.roadnet.io import write_roadtracer_graph
from drivemetrics.roadnet.perturb import perturb
from drivemetrics.synthetic.road_network import make_road_network


def _tiles(folder: Path, count: int, size: float = 1024.0) -> tuple[Path, Path]:
    gt_dir, pred_dir = folder / "gt", folder / "pred"
    for i in range(count):
        pred, gt = perturb(make_road_network(size=size, seed=i), "interruptions", 4, seed=i)
        write_roadtracer_graph(gt, gt_dir / f"tile{i}.graph")
        write_roadtracer_graph(pred, pred_dir / f"tile{i}.graph")
    return gt_dir, pred_dir


@pytest.mark.slow
def test_seeded_metrics_do_not_depend_on_the_number_of_workers(tmp_path, capsys):
    gt_dir, pred_dir = _tiles(tmp_path, 4)
    outputs = []
    for workers in (1, 4):
        out = tmp_path / f"w{workers}.json"
        args = ["graph-eval", "--gt", str(gt_dir), "--pred", str(pred_dir), "--metrics", "opt_p", "tlts", "apls"]
        assert main([*args, "--workers", str(workers), "--seed", "3", "--no-progress", "--json", str(out)]) == 0
        outputs.append(json.loads(out.read_text()))
    assert outputs[0] == outputs[1]
    capsys.readouterr()


def _processes_with(token: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if token.encode() in (entry / "environ").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="finds the workers through /proc")
def test_ctrl_c_stops_the_workers_and_writes_no_output(tmp_path):
    gt_dir, pred_dir = _tiles(tmp_path, 12, size=2048.0)
    out = tmp_path / "scores.json"
    token = f"DRIVEMETRICS_TEST_{uuid.uuid4().hex}"
    env = {**os.environ, token: "1"}
    cmd = [sys.executable, "-m", "drivemetrics", "graph-eval", "--gt", str(gt_dir), "--pred", str(pred_dir)]
    cmd += ["--metrics", "tlts", "opt_p", "--workers", "2", "--no-progress", "--json", str(out)]
    # a shell that starts the test run in the background ignores SIGINT for it; restore the default in the command
    proc = subprocess.Popen(
        cmd,
        env=env,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 60
    while len(_processes_with(token)) < 3 and time.monotonic() < deadline:  # the command and its two workers
        time.sleep(0.2)
    assert proc.poll() is None, "the evaluation finished before it could be interrupted"
    time.sleep(1.0)
    os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the whole process group
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert "interrupted" in err
    assert "Traceback" not in err
    time.sleep(0.5)
    assert _processes_with(token) == []
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gt", "pred"]


def _sigint_state(_job: int) -> tuple[bool, bool]:
    """In a worker: (SIGINT ignored, SIGINT blocked)."""
    return signal.getsignal(signal.SIGINT) == signal.SIG_IGN, signal.SIGINT in signal.pthread_sigmask(
        signal.SIG_BLOCK, []
    )


@pytest.mark.skipif(not hasattr(signal, "pthread_sigmask"), reason="POSIX signal masks")
def test_workers_never_see_ctrl_c_and_the_parent_still_does(request):
    from drivemetrics._internal.pool import _sigint_blocked, map_in_processes

    # the parent listens to Ctrl-C as an interactive run does (a shell's background job inherits SIGINT ignored)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    request.addfinalizer(lambda: signal.signal(signal.SIGINT, previous))
    before = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    # started with SIGINT blocked (so even their interpreter start-up never sees it), then ignoring it
    assert list(map_in_processes(_sigint_state, [0, 1, 2, 3], 2)) == [(True, True)] * 4
    assert signal.pthread_sigmask(signal.SIG_BLOCK, []) == before  # the parent's mask is restored
    assert signal.getsignal(signal.SIGINT) is not signal.SIG_IGN
    reached = []

    def interrupted_while_starting() -> None:
        with _sigint_blocked():
            signal.pthread_kill(threading.get_ident(), signal.SIGINT)  # to this thread: pending while blocked
            time.sleep(0.05)
            reached.append(True)  # not raised while blocked

    with pytest.raises(KeyboardInterrupt):  # a Ctrl-C while the workers start is delivered right after
        interrupted_while_starting()
    assert reached == [True]


def _evaluate_tiles(folder: Path, workers: int | None):
    from drivemetrics.roadnet.evaluate import evaluate_dataset, find_pairs

    pairs, _ = find_pairs(*_tiles(folder, 3, size=512.0))
    return evaluate_dataset(pairs, ["ccq", "junct"], workers=workers, progress=False)


def test_default_workers_score_a_few_small_tiles_in_one_process(tmp_path, pools, monkeypatch):
    from drivemetrics._internal import pool

    monkeypatch.setattr(pool.os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    per_tile, _ = _evaluate_tiles(tmp_path, None)
    assert len(per_tile) == 3
    assert pools == []


def test_default_workers_start_no_pool_on_a_busy_machine(tmp_path, pools, monkeypatch):
    from drivemetrics._internal import pool

    monkeypatch.setattr(pool, "WORKER_START_SECONDS", 0.0)  # any pool would pay on free cores
    monkeypatch.setattr(pool.os, "getloadavg", lambda: (5.0, 5.0, 5.0))
    _evaluate_tiles(tmp_path, None)
    assert pools == []


def test_default_workers_pool_the_other_tiles_when_it_pays_on_free_cores(tmp_path, pools, monkeypatch):
    from drivemetrics._internal import pool

    monkeypatch.setattr(pool, "WORKER_START_SECONDS", 0.0)
    monkeypatch.setattr(pool.os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    pooled = _evaluate_tiles(tmp_path / "auto", None)
    assert pools == [(2, 2)]  # the first tile timed here, the other two in two workers
    assert pooled == _evaluate_tiles(tmp_path / "one", 1)
