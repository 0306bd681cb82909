#!/usr/bin/env bash
# The same inputs and seed give byte-identical outputs: runs a seeded simulation twice and
# compares the HTML report, per-job CSVs and JSON (less wall_s) byte for byte.
set -euo pipefail
dlsched=$1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for i in 1 2; do
  mkdir "$out/$i"
  "$dlsched" simulate -q --trace synthetic:jobs=1500,seed=11 --cluster 6x8xV100 --seed 5 \
    --estimate-error 0.5 --policy fifo,fifo-backfill,sjf,srtf,las,tiresias,priority \
    --json "$out/$i/r.json" --report "$out/$i/r.html" --jobs-csv "$out/$i/jobs-" > "$out/$i/table.txt"
  grep -v '"wall_s"' "$out/$i/r.json" > "$out/$i/r.nowall.json"
  rm "$out/$i/r.json" "$out/$i/table.txt"
done
diff -r "$out/1" "$out/2"
echo "identical: $(ls "$out/1" | wc -l) files"
