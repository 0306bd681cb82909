#!/usr/bin/env bash
# Demonstrates the scheduler daemon (`make run` calls this after the simulation): starts
# `dlsched serve` on fake GPUs, submits a few short real jobs through the CLI, shows the queue
# and the GPUs, waits for the jobs, shows their output and stops the daemon cleanly.
#   scripts/demo-daemon.sh [path/to/dlsched]
set -euo pipefail
bin=$(realpath "${1:-build/dlsched}")
dir=$(mktemp -d "${TMPDIR:-/tmp}/dlsched-demo.XXXXXX")
pid=""
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill -TERM "$pid"; wait "$pid" || true; fi
  rm -rf "$dir"
}
trap cleanup EXIT

echo "== dlsched serve: 4 fake V100 GPUs, policy dlsched (the default), state in $dir"
"$bin" serve --listen 127.0.0.1:0 --gpus 1x4xV100 \
  --workdir "$dir/work" --kill-jobs-on-exit >"$dir/serve.out" 2>"$dir/serve.err" &
pid=$!
for _ in $(seq 100); do
  grep -q '^listening on ' "$dir/serve.out" 2>/dev/null && break
  kill -0 "$pid" 2>/dev/null || { cat "$dir/serve.err" >&2; exit 1; }
  sleep 0.1
done
DLSCHED_SERVER=$(sed -n 's/^listening on //p' "$dir/serve.out")
export DLSCHED_SERVER
echo "   $(head -1 "$dir/serve.out")"
echo "   dashboard: $DLSCHED_SERVER/ (this demo stops in seconds; README, \"The dashboard\", keeps one open)"

echo "== submitting four jobs"
cd "$dir"
"$bin" submit --name train-a --gpus 2 -- \
  sh -c 'echo "train-a on GPUs $CUDA_VISIBLE_DEVICES"; sleep 2'
"$bin" submit --name train-b --gpus 2 --framework pytorch -- \
  sh -c 'echo "train-b on GPUs $CUDA_VISIBLE_DEVICES, rank $RANK of $WORLD_SIZE, master $MASTER_ADDR:$MASTER_PORT"; sleep 2'
"$bin" submit --name all-four --gpus 4 -- sh -c 'echo "all-four on GPUs $CUDA_VISIBLE_DEVICES"'
"$bin" submit --name eval --gpus 1 -- sh -c 'echo "eval on GPU $CUDA_VISIBLE_DEVICES"; sleep 1'

echo "== dlsched queue"
"$bin" queue
echo "== dlsched nodes"
"$bin" nodes

for _ in $(seq 300); do
  [ "$("$bin" queue --json)" = '{"jobs":[]}' ] && break
  sleep 0.1
done
echo "== all done: dlsched queue --all"
"$bin" queue --all
echo "== their output (dlsched logs ID)"
for id in 0 1 2 3; do "$bin" logs "$id"; done

echo "== stopping the daemon"
kill -TERM "$pid"
wait "$pid"
pid=""
tail -1 "$dir/serve.err"
