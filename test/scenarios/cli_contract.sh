#!/usr/bin/env bash
# The CLI's contract: help everywhere, exit codes 0 / 1 / 2, errors that name the file and line,
# the policy list, and the JSON keys other tools read.
set -uo pipefail
dlsched=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
expect_exit() {  # expect_exit CODE args...
  local want=$1; shift
  "$dlsched" "$@" > "$tmp/out" 2> "$tmp/err"
  local got=$?
  [ "$got" = "$want" ] || fail "dlsched $* exited $got, want $want: $(cat "$tmp/err")"
}

expect_exit 0 --help
grep -q simulate "$tmp/out" || fail "--help does not list simulate"
expect_exit 0 simulate --help
grep -q -- "--trace" "$tmp/out" || fail "simulate --help does not show --trace"
expect_exit 0 policies --help
expect_exit 2 simulate --no-such-flag
expect_exit 2 simulate --policy nope
grep -q "no policy named 'nope'" "$tmp/err" || fail "unknown policy message: $(cat "$tmp/err")"
expect_exit 2 simulate --cluster 8xV100
grep -q "8xV100" "$tmp/err" || fail "bad cluster message: $(cat "$tmp/err")"

expect_exit 0 policies
for p in fifo fifo-backfill sjf srtf las tiresias priority edf; do
  grep -qx "$p" "$tmp/out" || fail "'dlsched policies' does not list $p"
done

printf 'submit_time,num_gpus,duration\n0,1,10\n5,two,10\n' > "$tmp/bad.csv"
expect_exit 1 simulate --trace "csv:$tmp/bad.csv"
grep -q "bad.csv:3" "$tmp/err" || fail "malformed row error does not name file:line: $(cat "$tmp/err")"
expect_exit 0 simulate -q --trace "csv:$tmp/bad.csv" --skip-bad-rows --policy fifo --json "$tmp/r.json"
for key in policy jobs completed avg_jct_s p50_jct_s p99_jct_s avg_queue_s makespan_s \
           gpu_utilization preemptions wall_s; do
  grep -q "\"$key\"" "$tmp/r.json" || fail "JSON lacks $key"
done
grep -q '"completed": 1' "$tmp/r.json" || fail "skip-bad-rows did not keep the good row"
echo "cli contract ok"
