#!/bin/bash
# After queue5.sh: the first round's --before rows whose old side had timed the new code (see README), again with
# the fixed scripts: OpenLane-V2 150 x 11 and 1,000 x 11 (library only, old and new alternating) and KITTI 7,481.
set -u
R=$(cd "$(dirname "$0")" && pwd)
NEW=$(cd "$R/../../.." && pwd)
OLD=${OLD:-/work/wt/pre46}
PY=/work/main/.venv/bin/python
SLOT=/work/wt/bench_slot.sh
export DRIVEMETRICS_FIXTURES=/work/shared/fixtures
cd "$NEW"
while pgrep -f "queue5[.]sh" > /dev/null; do sleep 15; done
step() { echo "$(date -u +%T) start $1 (load $(cut -d' ' -f1-3 /proc/loadavg))" >> "$R/queue.log"; }
done_() { echo "$(date -u +%T) end $1 rc=$2 (load $(cut -d' ' -f1-3 /proc/loadavg))" >> "$R/queue.log"; }
with_slot() {  # name log command...
  local name=$1 log=$2; shift 2
  step "$name"
  { uptime; PYTHONPATH=$NEW $SLOT "$@"; rc=$?; uptime; } > "$log" 2>&1
  done_ "$name" "$rc"
}
for item in ${ITEMS:-openlanev2_small kitti}; do
  case $item in
    openlanev2_small) with_slot $item "$R/openlanev2_fixed.txt" $PY benchmarks/openlanev2.py --sizes 150x11 1000x11 --e2e-repeat 4 --repeat 3 --skip-devkit --before "$OLD" ;;
    kitti) with_slot $item "$R/kitti_object_7481_fixed.txt" $PY benchmarks/kitti_object.py --devkit /tmp/br/sunnyln+kitti-devkit --sizes 7481 --repeat 3 --before "$OLD" --json "$R/kitti_object_7481_fixed.json" ;;
  esac
done
