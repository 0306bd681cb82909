#!/usr/bin/env bash
# Philly replay per baseline, before vs after, in one invocation: each policy runs on both
# binaries back to back (alternating which goes first per repetition), CPU time (user+sys)
# of each run; the JSON results (wall_s dropped) must be identical.
set -euo pipefail
before=$1 after=$2 trace=$3 reps=${4:-2}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for p in fifo fifo-backfill sjf srtf las tiresias priority greedy-share; do
  for r in $(seq 1 "$reps"); do
    if (( r % 2 )); then order="before after"; else order="after before"; fi
    for which in $order; do
      bin=$before; [ "$which" = after ] && bin=$after
      /usr/bin/time -f "%U %S" -o "$out/t" "$bin" simulate -q --threads 1 --trace "philly:$trace" \
        --cluster 64x8xV100 --policy "$p" --json "$out/$which.json" > /dev/null
      echo "$p $which $r $(awk '{print $1 + $2}' "$out/t")"
    done
    if ! diff <(grep -v '"wall_s"' "$out/before.json") <(grep -v '"wall_s"' "$out/after.json") > /dev/null; then
      echo "$p: JSON DIFFERS"
    fi
  done
done
