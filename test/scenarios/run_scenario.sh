#!/usr/bin/env bash
# Runs one golden scenario through the real binary and compares its JSON results (wall_s
# removed: it is the only figure that varies between runs) and per-job CSVs with the golden file.
# Usage: run_scenario.sh DLSCHED GOLDEN_DIR NAME -- simulate args (paths relative to GOLDEN_DIR)
# UPDATE_GOLDENS=1 rewrites the golden file instead of comparing.
set -euo pipefail
dlsched=$1 golden_dir=$2 name=$3
shift 4
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# Paths in the arguments are relative to the scenario folder, so goldens hold no absolute paths.
cd "$golden_dir"
"$dlsched" simulate -q --sharing-data builtin "$@" --json "$out/results.json" --jobs-csv "$out/jobs-" > "$out/table.txt"
{
  grep -v '"wall_s"' "$out/results.json"
  for f in "$out"/jobs-*.csv; do echo "== $(basename "$f")"; cat "$f"; done
} > "$out/actual"
golden="$golden_dir/$name.golden"
if [ "${UPDATE_GOLDENS:-0}" = 1 ]; then
  cp "$out/actual" "$golden"
  echo "updated $golden"
  exit 0
fi
if ! diff -u "$golden" "$out/actual"; then
  echo "scenario $name differs from $golden (rerun with UPDATE_GOLDENS=1 if the change is intended)" >&2
  exit 1
fi
