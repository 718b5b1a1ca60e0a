#!/bin/bash
# OpenLane-V2 1,000 x 201 once more with the devkit, new and old (fixed --before) in the same run.
set -u
R=$(cd "$(dirname "$0")" && pwd)
NEW=$(cd "$R/../../.." && pwd)
OLD=${OLD:-/work/wt/pre46}
PY=/work/main/.venv/bin/python
cd "$NEW"
echo "$(date -u +%T) start openlanev2_201_devkit_fixed (load $(cut -d' ' -f1-3 /proc/loadavg))" >> "$R/queue.log"
{ uptime; PYTHONPATH=$NEW /work/wt/bench_slot.sh $PY benchmarks/openlanev2.py --devkit-python /tmp/br/olv2venv/bin/python --devkit-src /tmp/br/OpenDriveLab+OpenLane-V2 --sizes 1000x201 --e2e-repeat 1 --repeat 3 --before "$OLD"; rc=$?; uptime; } > "$R/openlanev2_1000x201_devkit_fixed.txt" 2>&1
echo "$(date -u +%T) end openlanev2_201_devkit_fixed rc=$rc (load $(cut -d' ' -f1-3 /proc/loadavg))" >> "$R/queue.log"
