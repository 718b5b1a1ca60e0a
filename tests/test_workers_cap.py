"""Issue 51: ``--workers 10000`` is no fork storm. Every pool starts at most one process (or thread) per usable core
and no more than there are chunks of work, whatever is asked; counted by wrapping ``Process.start`` and
``Thread.start`` while each command with a ``--workers`` option runs on a small valid input."""

from __future__ import annotations

import multiprocessing.process
import os
import threading

import pytest

from drivemetrics._internal.pool import map_in_processes, parallel_map, usable_cores
from drivemetrics.cli import main
from tests.test_outputs import _subparser, _valid_runs


@pytest.fixture
def started(monkeypatch):
    """Counts of processes and threads started meanwhile."""
    counts = {"processes": 0, "threads": 0}
    process_start = multiprocessing.process.BaseProcess.start
    thread_start = threading.Thread.start

    def count_process(self):
        counts["processes"] += 1
        return process_start(self)

    def count_thread(self):
        if self.name.startswith("drivemetrics-read"):
            counts["threads"] += 1
        return thread_start(self)

    monkeypatch.setattr(multiprocessing.process.BaseProcess, "start", count_process)
    monkeypatch.setattr(threading.Thread, "start", count_thread)
    return counts


def _pid(_: int) -> int:
    return os.getpid()


def test_map_in_processes_starts_at_most_one_process_per_core(started):
    assert len(list(map_in_processes(_pid, list(range(40)), 10_000))) == 40
    assert 1 <= started["processes"] <= usable_cores() + 1  # + the resource tracker of a spawn pool


def test_map_in_processes_starts_no_more_processes_than_chunks(started):
    list(map_in_processes(_pid, [0, 1], 10_000, chunksize=2))  # one chunk: this process
    list(map_in_processes(_pid, [0, 1, 2], 10_000, chunksize=2))  # two chunks: at most two workers
    assert started["processes"] <= 2 + 1


def test_parallel_map_starts_at_most_one_thread_per_core(started):
    assert list(parallel_map(abs, range(-50, 0), 10_000)) == list(range(50, 0, -1))
    assert started["threads"] <= usable_cores()


@pytest.mark.parametrize("name", list(_valid_runs()))
def test_workers_10000_starts_at_most_one_per_core(name, tmp_path, monkeypatch, capsys, started):
    dests = {a.dest for a in _subparser(name.split()[0])._actions}
    flag = "--workers" if "workers" in dests else "--threads" if "threads" in dests else None
    if flag is None:
        pytest.skip(f"{name} has neither --workers nor --threads")
    monkeypatch.chdir(tmp_path)
    argv = list(_valid_runs()[name](tmp_path))
    for old in ("--workers", "--threads"):
        if old in argv:
            at = argv.index(old)
            argv = argv[:at] + argv[at + 2 :]
    assert main([*argv, flag, "10000"]) == 0, capsys.readouterr().err
    assert started["processes"] <= usable_cores() + 1, started
    assert started["threads"] <= usable_cores(), started


@pytest.mark.slow
def test_culane_workers_10000_on_five_frames_starts_one_process_per_core(tmp_path, capsys, started):
    # issue 51's case: culane-eval on 5 frames with --workers 10000 started 5 processes (18.9 s of CPU on 2 cores)
    from tests.test_cli_errors import _write_culane_frames

    _write_culane_frames(tmp_path, 5)
    argv = ["culane-eval", "--gt", str(tmp_path / "gt"), "--pred", str(tmp_path / "pred")]
    argv += ["--list", str(tmp_path / "list.txt"), "--chunk", "1", "--workers", "10000", "--no-progress"]
    assert main(argv) == 0, capsys.readouterr().err
    assert started["processes"] <= min(usable_cores(), 5) + 1, started


def test_workers_means_processes_in_every_command():
    # issue 46: one meaning of --workers (processes; default: the pool's auto policy); thread pools say --threads
    from drivemetrics.cli import COMMANDS

    for command in COMMANDS:
        for action in _subparser(command)._actions:
            if action.help == "==SUPPRESS==":
                continue
            shown = [o for o in action.option_strings if o not in getattr(action, "hidden_aliases", ())]
            if "--workers" in shown:  # a thread pool's hidden old spelling (add_threads) is --threads
                assert "process" in action.help, (command, action.help)
                assert "thread" not in action.help.split("(")[0], (command, action.help)
            if "--threads" in shown:
                assert "thread" in action.help, (command, action.help)
