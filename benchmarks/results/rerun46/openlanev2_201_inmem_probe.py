"""OpenLane-V2 in memory, FRAMES x POINTS (``benchmarks/openlanev2.py``'s frames), 3 calls in this process: CPU
seconds, their system part and page faults per call. Run with the checkout to time on ``PYTHONPATH``, from a folder
without a ``drivemetrics`` package (or ``PYTHONSAFEPATH=1``): ``python openlanev2_201_inmem_probe.py 1000 201``."""

import resource
import sys
import time
from pathlib import Path

import torch

import drivemetrics
from drivemetrics.lanetopology.evaluate import evaluate_openlanev2

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # benchmarks/
import openlanev2 as bench

torch.set_num_threads(1)
gt, submission = bench.make_frames(int(sys.argv[1]), int(sys.argv[2]))
target = {k: v["annotation"] for k, v in gt.items()}
preds = {k: v["predictions"] for k, v in submission["results"].items()}
first = next(iter(target))
evaluate_openlanev2({first: preds[first]}, {first: target[first]})  # imports, warm-up
out = []
for _ in range(3):
    r0, c = resource.getrusage(resource.RUSAGE_SELF), time.process_time()
    evaluate_openlanev2(preds, target, compat="reference")
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu, system, faults = time.process_time() - c, r1.ru_stime - r0.ru_stime, r1.ru_minflt - r0.ru_minflt
    out.append(f"cpu {cpu:.3f} (sys {system:.3f}) minflt {faults}")
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
print(Path(drivemetrics.__file__).parents[1].name, " | ".join(out), "maxrss MB", rss)
