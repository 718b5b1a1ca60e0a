"""benchmarks/workers.py: every case builds a command line that the ``drivemetrics`` parser accepts with each
``--workers`` setting (a broken case would otherwise only show after minutes of timing)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from drivemetrics.cli import build_parser

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "workers.py"


@pytest.fixture(scope="module")
def workers() -> ModuleType:
    spec = importlib.util.spec_from_file_location("workers_benchmark", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["workers_benchmark"] = module
    spec.loader.exec_module(module)
    return module


def _dest_of(parser, command: str, flag: str) -> str:
    """The ``dest`` of ``flag`` in subcommand ``command`` of ``parser``."""
    import argparse

    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[command]
    return next(a.dest for a in sub._actions if flag in a.option_strings)


def test_every_case_parses_with_every_worker_setting(workers, fixtures_dir, tmp_path, monkeypatch):
    monkeypatch.setattr(workers, "_road_folder", lambda tmp, scale: tmp / "road")  # no PNGs written: parse only
    assert [label for label, _ in workers.SETTINGS] == ["default", "1", "2"]
    for name, (_, build) in workers.CASES.items():
        argv = build(fixtures_dir, tmp_path)
        command = argv[0]
        for label, flags in workers.SETTINGS:
            parser = build_parser(command)
            args = parser.parse_args([*argv, *flags, "--no-progress"])
            # where --workers lands: processes (``workers``), or on a thread-pool command ``threads``, whose hidden
            # old spelling it is (issue 46); a command with both (map-eval) keeps them apart
            dest = _dest_of(parser, command, "--workers")
            assert getattr(args, dest) == (None if label == "default" else int(label)), name
