#!/bin/bash
# The issue-46 rerun, one timed benchmark at a time, each in a slot of /work/wt/bench_slot.sh; main (this checkout)
# against OLD (the last commit before the issue-46 merges), interleaved with the official tool or baseline.
set -u
R=$(cd "$(dirname "$0")" && pwd)
NEW=$(cd "$R/../../.." && pwd)
OLD=${OLD:-/work/wt/pre46}
PY=/work/main/.venv/bin/python
SLOT=/work/wt/bench_slot.sh
export DRIVEMETRICS_FIXTURES=/work/shared/fixtures
cd "$NEW"
step() { echo "$(date -u +%T) start $1 (load $(cut -d' ' -f1-3 /proc/loadavg))" >> "$R/queue.log"; }
done_() { echo "$(date -u +%T) end $1 rc=$2" >> "$R/queue.log"; }
with_slot() {  # name log command...
  local name=$1 log=$2; shift 2
  step "$name"
  { uptime; PYTHONPATH=$NEW $SLOT "$@"; rc=$?; uptime; } > "$log" 2>&1
  done_ "$name" "$rc"
}
for item in ${ITEMS:-openlanev2 openlane3d culane lane_metrics graph lanegraph bev_warp road_pixel psld corridor metric_updates startup parse_floor}; do
  case $item in
    openlanev2) with_slot $item "$R/openlanev2.txt" $PY benchmarks/openlanev2.py --devkit-python /tmp/br/olv2venv/bin/python --devkit-src /tmp/br/OpenDriveLab+OpenLane-V2 --sizes 150x11 1000x11 --e2e-repeat 3 --before "$OLD" ;;
    openlanev2_201) with_slot $item "$R/openlanev2_1000x201.txt" $PY benchmarks/openlanev2.py --devkit-python /tmp/br/olv2venv/bin/python --devkit-src /tmp/br/OpenDriveLab+OpenLane-V2 --sizes 1000x201 --e2e-repeat 1 --repeat 3 --before "$OLD" ;;
    openlane3d) with_slot $item "$R/openlane3d_slot.txt" "$R/pair.sh" openlane3d_10k 1 "$OLD" openlane3d.py --official-src /tmp/br/OpenDriveLab+OpenLane --venv /tmp/br/ol3venv --frames 10000 --repeat 2 --workers 2 --json "$R/openlane3d_10k.{run}.json" ;;
    culane) with_slot $item "$R/culane_1000.txt" $PY benchmarks/culane.py --official /tmp/br/XingangPan+SCNN/tools/lane_evaluation --sizes 1000 --repeat 2 --before "$OLD" --json "$R/culane_1000.json" ;;
    kitti5) with_slot $item "$R/kitti_object_7481_run2.txt" $PY benchmarks/kitti_object.py --devkit /tmp/br/sunnyln+kitti-devkit --sizes 7481 --repeat 5 --before "$OLD" --json "$R/kitti_object_7481_run2.json" ;;
    lane_metrics_quick) with_slot $item "$R/lane_metrics_slot.txt" "$R/pair.sh" lane_metrics_quick 2 "$OLD" lane_metrics.py --quick ;;
    psld) with_slot $item "$R/psld_slot.txt" "$R/pair.sh" psld 2 "$OLD" psld.py --loop-frames 1000 ;;
    micro) with_slot $item "$R/micro.txt" $PY "$R/micro.py" --old "$OLD" --rounds 2 --inner 3 --json "$R/micro.json" ;;
    kitti3) with_slot $item "$R/kitti_object_7481_run2.txt" $PY benchmarks/kitti_object.py --devkit /tmp/br/sunnyln+kitti-devkit --sizes 7481 --repeat 3 --before "$OLD" --json "$R/kitti_object_7481_run2.json" ;;
    road_pixel|corridor) with_slot $item "$R/${item}_slot.txt" "$R/pair.sh" $item 1 "$OLD" $item.py ;;
    psld1) with_slot $item "$R/psld_slot.txt" "$R/pair.sh" psld 1 "$OLD" psld.py --loop-frames 1000 ;;
    workers_small) with_slot $item "$R/workers.txt" $PY benchmarks/workers.py --cases lanegraph-successor graph-eval-vegas culane-5000 --repeat 3 --before "$OLD" ;;
    graph) with_slot $item "$R/graph_slot.txt" "$R/pair.sh" graph_quick 1 "$OLD" graph.py --quick ;;
    lanegraph) with_slot $item "$R/lanegraph_slot.txt" "$R/pair.sh" lanegraph_quick 1 "$OLD" lanegraph.py --quick ;;
    metric_updates) with_slot $item "$R/metric_updates_slot.txt" "$R/pair.sh" metric_updates_quick 1 "$OLD" metric_updates.py --quick ;;
    lane_metrics_quick1) with_slot $item "$R/lane_metrics_slot.txt" "$R/pair.sh" lane_metrics_quick 1 "$OLD" lane_metrics.py --quick ;;
    startup|parse_floor) with_slot $item "$R/${item}_slot.txt" "$R/pair.sh" $item 1 "$OLD" $item.py ;;
    workers) with_slot $item "$R/workers.txt" $PY benchmarks/workers.py --cases lanegraph-successor graph-eval-vegas culane-5000 road-bev-289 --repeat 3 --before "$OLD" ;;
    *) with_slot $item "$R/${item}_slot.txt" "$R/pair.sh" $item 2 "$OLD" $item.py ;;
  esac
done
