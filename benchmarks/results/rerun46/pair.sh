#!/bin/bash
# Same-run old-vs-new check of one benchmark script (issue 46): run it from this checkout (new = main after the
# array-layer change) and from an old checkout (before it), alternating ABBA, each run a fresh process; stdout of
# each run in NAME.{new,old}.N.log, with the load average before and after. Run it under /work/wt/bench_slot.sh.
# Usage: pair.sh NAME PAIRS OLD_CHECKOUT SCRIPT [ARGS...]   ({run} in an argument becomes LABEL.N, e.g. --json X.{run}.json)
set -u
name=$1 pairs=$2 old=$3 script=$4
shift 4
here=$(cd "$(dirname "$0")" && pwd)
new=$(cd "$here/../../.." && pwd)
py=/work/main/.venv/bin/python
export DRIVEMETRICS_FIXTURES=${DRIVEMETRICS_FIXTURES:-/work/shared/fixtures}
one() {  # tree label index
  local tree=$1 label=$2 i=$3 log="$here/$name.$2.$3.log"
  {
    echo "# $label: $tree ($(git -C "$tree" rev-parse --short HEAD)) $script ${*:4}; $(date -u +%FT%TZ)"
    echo "# load before: $(cut -d' ' -f1-3 /proc/loadavg)"
    local t0=$(date +%s.%N)
    local args=() a
    for a in "${@:4}"; do args+=("${a//\{run\}/$label.$i}"); done
    (cd "$tree" && PYTHONPATH="$tree" "$py" "benchmarks/$script" "${args[@]}")
    echo "# rc=$? wall $(echo "$(date +%s.%N) - $t0" | bc) s; load after: $(cut -d' ' -f1-3 /proc/loadavg)"
  } > "$log" 2>&1
}
for ((i = 1; i <= pairs; i++)); do
  if ((i % 2)); then one "$new" new "$i" "$@"; one "$old" old "$i" "$@"
  else one "$old" old "$i" "$@"; one "$new" new "$i" "$@"; fi
done
