#!/bin/bash
# usage: inmem.sh FRAMES POINTS REPEAT ; alternates new/old fresh processes
N=$1; P=$2; REP=$3
for ck in /work/wt/rerun2 /work/wt/pre46 /work/wt/pre46 /work/wt/rerun2; do
  cd /tmp; PYTHONSAFEPATH=1 OMP_NUM_THREADS=1 PYTHONPATH=$ck /work/main/.venv/bin/python -c '
import json, sys, time
import torch
sys.path.insert(0, "/work/wt/rerun2/benchmarks")
import openlanev2 as bench
torch.set_num_threads(1)
gt, submission = bench.make_frames(int(sys.argv[1]), int(sys.argv[2]))
from drivemetrics.lanetopology.evaluate import evaluate_openlanev2
target = {k: v["annotation"] for k, v in gt.items()}
preds = {k: v["predictions"] for k, v in submission["results"].items()}
first = next(iter(target))
evaluate_openlanev2({first: preds[first]}, {first: target[first]})
cpus=[]
for _ in range(int(sys.argv[3])):
    c=time.process_time(); s=evaluate_openlanev2(preds, target, compat="reference"); cpus.append(time.process_time()-c)
import drivemetrics
print(drivemetrics.__file__, "least CPU %.3f" % min(cpus), ["%.3f"%x for x in cpus], sorted(s.items())[:2])
' $N $P $REP
done
