#!/usr/bin/env bash
# The same inputs and seed give byte-identical outputs: runs a seeded simulation twice and
# compares the HTML report, per-job CSVs and JSON (less wall_s) byte for byte.
set -euo pipefail
dlsched=$1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# Twice with the default estimates (history run times, noisy speeds) and twice with users'
# estimates (--estimate-error), each into its own folder.
for i in 1 2; do
  for mode in history stated; do
    dir="$out/$i/$mode"
    mkdir -p "$dir"
    extra=()
    [ "$mode" = stated ] && extra=(--estimate-error 0.5)
    "$dlsched" simulate -q --trace synthetic:jobs=1500,seed=11 --cluster 6x8xV100 --seed 5 \
      "${extra[@]}" --policy dlsched,fifo,fifo-backfill,sjf,srtf,las,tiresias,priority \
      --json "$dir/r.json" --report "$dir/r.html" --jobs-csv "$dir/jobs-" > "$dir/table.txt"
    grep -v '"wall_s"' "$dir/r.json" > "$dir/r.nowall.json"
    rm "$dir/r.json" "$dir/table.txt"
  done
done
diff -r "$out/1" "$out/2"
echo "identical: $(find "$out/1" -type f | wc -l) files"
