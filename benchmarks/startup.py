"""Start-up time of the ``drivemetrics`` command: wall time of ``drivemetrics --help`` and of each ``X --help``.

Each command runs in a fresh interpreter (``python -m drivemetrics ...``), several times; the best and the median
wall times are printed next to the targets of issue 12 (top level under 0.5 s, a subcommand under 2 s) and, as the
baseline measured in the same run, the bare interpreter (``python -c pass``) and ``python -c "import torch"``.
The row ``from drivemetrics.road import RoadPixelMaxFScore`` is the first import of a Metric class (issue 50: at most
``import torch`` + 0.2 s, measured against the ``import torch`` baseline of the same run; ``import torchmetrics``,
which the library avoids, is printed beside it).

    python benchmarks/startup.py            # 5 runs per command
    python benchmarks/startup.py --runs 2
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from drivemetrics.cli import COMMANDS  # noqa: E402  (light: the static command table)

TOP_LEVEL_TARGET_S = 0.5
SUBCOMMAND_TARGET_S = 2.0
#: a Metric class's first import may cost this much more than ``import torch`` (issue 50)
METRIC_IMPORT_OVER_TORCH_S = 0.2


def wall_times(argv: list[str], runs: int) -> list[float]:
    """Wall times (s) of ``runs`` fresh runs of ``argv`` after one untimed warm-up run; fails if the command fails."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, env=env, cwd=REPO_ROOT)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, env=env, cwd=REPO_ROOT)
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs per command (default 5)")
    args = parser.parse_args()
    python = sys.executable
    rows = [
        ("python -c pass (baseline)", [python, "-c", "pass"], None),
        ("python -c 'import torch' (baseline)", [python, "-c", "import torch"], None),
        ("drivemetrics --help", [python, "-m", "drivemetrics", "--help"], TOP_LEVEL_TARGET_S),
    ]
    rows += [
        (f"drivemetrics {name} --help", [python, "-m", "drivemetrics", name, "--help"], SUBCOMMAND_TARGET_S)
        for name in COMMANDS
    ]
    rows += [
        (
            "python -c 'import torch, torchmetrics' (what is avoided)",
            [python, "-c", "import torch, torchmetrics"],
            None,
        ),
        (
            "from drivemetrics.road import RoadPixelMaxFScore",
            [python, "-c", "from drivemetrics.road import RoadPixelMaxFScore"],
            "torch",
        ),
    ]
    print(f"{'command':<58} {'best s':>7} {'median s':>9} {'target s':>9}")
    missed = []
    medians: dict[str, float] = {}
    for label, argv, target in rows:
        times = wall_times(argv, args.runs)
        best, median = min(times), statistics.median(times)
        medians[label] = median
        if target == "torch":  # relative to the import torch baseline of this run
            target = medians["python -c 'import torch' (baseline)"] + METRIC_IMPORT_OVER_TORCH_S
        print(f"{label:<58} {best:>7.3f} {median:>9.3f} {'' if target is None else f'{target:.2f}':>9}")
        if target is not None and median > target:
            missed.append(label)
    print("all targets met" if not missed else f"targets missed: {', '.join(missed)}")


if __name__ == "__main__":
    main()
