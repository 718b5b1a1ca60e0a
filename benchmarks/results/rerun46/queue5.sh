#!/bin/bash
# The rows the first rerun left out (issue 46): OpenLane-V2 1,000 x 201, CULane 5,000 frames, workers.py (all
# cases), each in a slot of /work/wt/bench_slot.sh, this checkout against OLD, interleaved with the official tool.
set -u
R=$(cd "$(dirname "$0")" && pwd)
NEW=$(cd "$R/../../.." && pwd)
OLD=${OLD:-/work/wt/pre46}
PY=/work/main/.venv/bin/python
SLOT=/work/wt/bench_slot.sh
export DRIVEMETRICS_FIXTURES=/work/shared/fixtures
cd "$NEW"
step() { echo "$(date -u +%T) start $1 (load $(cut -d' ' -f1-3 /proc/loadavg))" >> "$R/queue.log"; }
done_() { echo "$(date -u +%T) end $1 rc=$2 (load $(cut -d' ' -f1-3 /proc/loadavg))" >> "$R/queue.log"; }
with_slot() {  # name log command...
  local name=$1 log=$2; shift 2
  step "$name"
  { uptime; PYTHONPATH=$NEW $SLOT "$@"; rc=$?; uptime; } > "$log" 2>&1
  done_ "$name" "$rc"
}
for item in ${ITEMS:-openlanev2_201 culane_5000 workers_all}; do
  case $item in
    openlanev2_201) with_slot $item "$R/openlanev2_1000x201_fixed.txt" $PY benchmarks/openlanev2.py --devkit-python /tmp/br/olv2venv/bin/python --devkit-src /tmp/br/OpenDriveLab+OpenLane-V2 --sizes 1000x201 --e2e-repeat 3 --repeat 3 --skip-devkit --before "$OLD" ;;
    culane_5000) with_slot $item "$R/culane_5000_fixed.txt" $PY benchmarks/culane.py --official /tmp/br/XingangPan+SCNN/tools/lane_evaluation --sizes 5000 --repeat 2 --before "$OLD" --json "$R/culane_5000_fixed.json" ;;
    workers_all) with_slot $item "$R/workers_all.txt" $PY benchmarks/workers.py --repeat 3 --before "$OLD" ;;
  esac
done
