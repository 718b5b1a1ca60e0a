import sys, time, resource
import torch
sys.path.insert(0, "/work/wt/rerun2/benchmarks")
import openlanev2 as bench
torch.set_num_threads(1)
gt, submission = bench.make_frames(int(sys.argv[1]), int(sys.argv[2]))
from drivemetrics.lanetopology.evaluate import evaluate_openlanev2
import drivemetrics
target = {k: v["annotation"] for k, v in gt.items()}
preds = {k: v["predictions"] for k, v in submission["results"].items()}
first = next(iter(target))
evaluate_openlanev2({first: preds[first]}, {first: target[first]})
out = []
for i in range(3):
    r0 = resource.getrusage(resource.RUSAGE_SELF); c = time.process_time()
    evaluate_openlanev2(preds, target, compat="reference")
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    out.append("cpu %.3f (sys %.3f) minflt %d" % (time.process_time() - c, r1.ru_stime - r0.ru_stime, r1.ru_minflt - r0.ru_minflt))
print(drivemetrics.__file__.split("/")[3], " | ".join(out), "maxrss MB", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)
