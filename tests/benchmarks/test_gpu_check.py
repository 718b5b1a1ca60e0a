"""benchmarks/gpu_check.py: its comparison machinery works on the CPU, and without CUDA it runs nothing."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import pytest
import torch

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_check.py"


@pytest.fixture(scope="module")
def gpu_check():
    spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["gpu_check"] = module
    spec.loader.exec_module(module)
    return module


def test_compare_catches_differences(gpu_check):
    same = gpu_check.compare(
        "x", {"a": torch.ones(3), "b": (torch.zeros(2),)}, {"a": torch.ones(3), "b": (torch.zeros(2),)}, 0, 0
    )
    assert same.ok
    assert same.max_abs_diff == 0
    off = gpu_check.compare("x", {"a": torch.ones(3)}, {"a": torch.tensor([1.0, 1.0, 1.1])}, 1e-3, 0.0)
    assert not off.ok
    assert off.max_abs_diff == pytest.approx(0.1, rel=1e-5)
    nan = gpu_check.compare("x", torch.tensor([1.0, math.nan]), torch.tensor([1.0, 2.0]), 1.0, 1.0)
    assert not nan.ok
    assert "NaN" in nan.error
    shape = gpu_check.compare("x", torch.ones(3), torch.ones(4), 1.0, 1.0)
    assert not shape.ok
    dtype = gpu_check.compare("x", torch.ones(3), torch.ones(3, dtype=torch.float64), 1.0, 1.0)
    assert not dtype.ok
    missing = gpu_check.compare("x", {"a": torch.ones(1), "b": torch.ones(1)}, {"a": torch.ones(1)}, 1.0, 1.0)
    assert not missing.ok


def test_a_raising_check_is_a_failure(gpu_check, monkeypatch):
    def broken(device, scale):
        raise RuntimeError("boom")

    monkeypatch.setattr(gpu_check, "CHECKS", [("broken", broken, 0.0, 0.0)])
    (result,) = gpu_check.run_comparisons(torch.device("cpu"), torch.device("cpu"), 0.05)
    assert not result.ok
    assert "boom" in result.error


def test_without_cuda_nothing_runs(gpu_check, monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert gpu_check.main(["--json", str(tmp_path / "out.json")]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert out == ["gpu_check: no CUDA device here; nothing ran"]
    assert not (tmp_path / "out.json").exists()


@pytest.mark.slow
def test_self_test_cpu_against_cpu(gpu_check, capsys):
    assert gpu_check.self_test() == 0
    lines = capsys.readouterr().out.splitlines()
    assert all(line.startswith("ok") for line in lines)
    assert any("pixel counting" in line for line in lines)
    assert any("DRP" in line for line in lines)
