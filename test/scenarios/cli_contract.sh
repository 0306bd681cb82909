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
expect_exit 2 simulate --cluster 8x
grep -q "'8x'" "$tmp/err" || fail "bad cluster message: $(cat "$tmp/err")"

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
grep -q '"runtime_estimator": "history"' "$tmp/r.json" || fail "default JSON does not name its estimator"
grep -q '"oracle": false' "$tmp/r.json" || fail "default JSON does not say it is no oracle"

# The oracle is explicit and labelled; it takes no estimate error or predictor.
expect_exit 2 simulate --oracle --estimate-error 0.5
grep -q -- "--oracle gives the policies true run times" "$tmp/err" ||
  fail "--oracle with --estimate-error: $(cat "$tmp/err")"
expect_exit 0 simulate -q --trace "csv:$tmp/bad.csv" --skip-bad-rows --policy sjf --oracle \
  --json "$tmp/o.json"
grep -q '^sjf (oracle) ' "$tmp/out" || fail "oracle table row not labelled: $(cat "$tmp/out")"
grep -q '^Estimates the policies saw: run times from the oracle' "$tmp/out" ||
  fail "oracle table does not name its estimates: $(cat "$tmp/out")"
grep -q '"oracle": true' "$tmp/o.json" || fail "oracle JSON lacks \"oracle\": true"

# Cluster specs: unknown or miscased GPU types are refused, naming the type and the known ones;
# GPUSxTYPE is one node.
expect_exit 2 simulate --cluster 2x8xV1000
grep -q "GPU type 'V1000' has no throughput data (known: .*V100).*did you mean V100?" "$tmp/err" ||
  fail "unknown GPU type message: $(cat "$tmp/err")"
expect_exit 2 simulate --cluster 16x8xv100
grep -q "GPU type 'v100' is spelt 'V100'" "$tmp/err" || fail "miscased type message: $(cat "$tmp/err")"
printf '{"racks": [{"nodes": [{"gpus": 8, "gpu_type": "A10"}]}]}' > "$tmp/a10.json"
expect_exit 0 simulate -q --trace synthetic:jobs=20 --cluster "$tmp/a10.json" --policy fifo
grep -q "warning: GPU type 'A10' has no throughput data.*V100 reference speed" "$tmp/err" ||
  fail "a user-defined type is not reported: $(cat "$tmp/err")"
expect_exit 0 simulate -q --trace "csv:$tmp/bad.csv" --skip-bad-rows --cluster 8xV100 --policy fifo \
  --json "$tmp/one.json"
grep -q '"cluster": "1x8xV100 (8 GPUs, 1 nodes' "$tmp/one.json" || fail "8xV100 is not one node"

# Usage errors exit 2 before anything runs.
expect_exit 2 simulate --trace cvs:x.csv
grep -q "did you mean csv:" "$tmp/err" || fail "bad trace form message: $(cat "$tmp/err")"
expect_exit 2 simulate --trace synthetic:jbos=3
expect_exit 2 simulate --seed -1
grep -q "want an integer >= 0, got '-1'" "$tmp/err" || fail "--seed -1 message: $(cat "$tmp/err")"
expect_exit 2 simulate --max-jobs -5
expect_exit 2 simulate --max-jobs 0
expect_exit 2 simulate --stop-at-s 2w
grep -q "want a duration" "$tmp/err" || fail "bad duration message: $(cat "$tmp/err")"
expect_exit 2 submit --max-run-time 2w -- true
expect_exit 2 simulate --json /nonexistent-dir/r.json
grep -q -- "--json: cannot write /nonexistent-dir/r.json" "$tmp/err" || fail "unwritable --json: $(cat "$tmp/err")"
expect_exit 2 simulate --report "$tmp"
expect_exit 2 simulate --json - --report -
# A mistyped option is named, with the closest real one, for every command.
expect_exit 2 submit --nmae x -- true
grep -q "unknown option --nmae; did you mean --name?" "$tmp/err" || fail "submit typo: $(cat "$tmp/err")"
expect_exit 2 simulate --sed 3
grep -q "unknown option --sed; did you mean --seed?" "$tmp/err" || fail "simulate typo: $(cat "$tmp/err")"
expect_exit 2 logs --stdrr 1
grep -q "did you mean --stderr?" "$tmp/err" || fail "logs typo: $(cat "$tmp/err")"
expect_exit 2 simulat --trace synthetic
grep -q "unknown command 'simulat'; did you mean simulate?" "$tmp/err" || fail "command typo: $(cat "$tmp/err")"
expect_exit 2 serve --gpu 8xV100
grep -q "did you mean --gpus?" "$tmp/err" || fail "serve typo: $(cat "$tmp/err")"
# The daemon's limits are bounded: no zero body limit, no headroom that overflows.
expect_exit 2 serve --max-body-bytes 0
expect_exit 2 serve --min-free-mib 99999999999999
# A client command that parsed reaches for the server (exit 1 when none), whatever the durations.
expect_exit 1 submit --server http://127.0.0.1:1 --max-run-time 2h --estimate 1h30m \
  --deadline 1d -- true
expect_exit 2 submit --server http://127.0.0.1:1
grep -q "either a command" "$tmp/err" || fail "submit without a command: $(cat "$tmp/err")"

# Durations: one syntax for every duration flag.
expect_exit 0 simulate -q --trace "csv:$tmp/bad.csv" --skip-bad-rows --policy fifo --stop-at-s 1h \
  --checkpoint-s 1m --restore-s 30 --explain-every-s 0.5h

# --json - writes the JSON to stdout and the table to stderr.
expect_exit 0 simulate -q --trace "csv:$tmp/bad.csv" --skip-bad-rows --policy fifo --json -
head -c 1 "$tmp/out" | grep -q '{' || fail "--json - did not write JSON to stdout: $(head -3 "$tmp/out")"
grep -q '"completed": 1' "$tmp/out" || fail "--json - lacks the run"
grep -q "^Best avg JCT" "$tmp/err" || fail "--json - did not put the table on stderr"
[ ! -e ./- ] || fail "--json - wrote a file named -"

# Ctrl-C: the finished policies are written, marked partial, and the exit code is 130. Job
# control on, so that the background job does not start with SIGINT ignored.
set -m
"$dlsched" simulate --trace synthetic:jobs=40000,seed=3 --cluster 8x8xV100 --threads 1 \
  --policy fifo,las,tiresias --explain-every-s 0 --json "$tmp/partial.json" \
  > "$tmp/out" 2> "$tmp/err" &
pid=$!
for _ in $(seq 1 600); do grep -q "fifo .*done in" "$tmp/err" && break; sleep 0.1; done
kill -INT "$pid"
wait "$pid"
got=$?
set +m
[ "$got" = 130 ] || fail "SIGINT exit code $got, want 130: $(tail -3 "$tmp/err")"
grep -q '"partial": true' "$tmp/partial.json" || fail "interrupted JSON is not marked partial"
grep -q '"policy": "fifo"' "$tmp/partial.json" || fail "interrupted JSON lacks the finished policy"
grep -q "^Partial: interrupted before las, tiresias finished" "$tmp/out" ||
  fail "interrupted table: $(cat "$tmp/out")"
# --timings: the cycle count and cycle wall times in the table and the JSON; never without it.
expect_exit 0 simulate -q --trace synthetic:jobs=50 --policy fifo --json "$tmp/plain.json"
grep -q "cycle" "$tmp/out" "$tmp/plain.json" && fail "cycle timings without --timings"
expect_exit 0 simulate -q --trace synthetic:jobs=50 --policy fifo --timings --json "$tmp/timed.json"
grep -q "cycle p99 ms" "$tmp/out" || fail "--timings table lacks cycle p99: $(cat "$tmp/out")"
for key in cycles cycle_p50_s cycle_p99_s cycle_max_s; do
  grep -q "\"$key\": " "$tmp/timed.json" || fail "--timings JSON lacks $key"
done
echo "cli contract ok"
