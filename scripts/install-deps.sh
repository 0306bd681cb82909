#!/usr/bin/env bash
# Installs the Debian packages dlsched needs, only those missing. Safe to run repeatedly; the
# Makefile calls it first (`make run`: run, `make test`: test, `make bench`: bench).
#   scripts/install-deps.sh [run|test|bench] [--list]
# run:   what building and running `dlsched` needs (the default);
# test:  run, plus what the test suite (`ctest`) needs;
# bench: run, plus Google Benchmark for dlsched_bench.
# --list prints the set's packages, one a line, and installs nothing.
set -euo pipefail

set_name=run
list=0
for arg in "$@"; do
  case "$arg" in
    run | test | bench) set_name=$arg ;;
    --list) list=1 ;;
    *) echo "usage: $0 [run|test|bench] [--list]" >&2; exit 2 ;;
  esac
done

run_packages=(
  cmake g++ make ninja-build pkg-config
  nlohmann-json3-dev libcli11-dev libfmt-dev
  # The daemon: REST API and its SQLite store.
  libcpp-httplib-dev libsqlite3-dev
  # The heterogeneity-aware policies' LP allocators (docs/hetero.md).
  libglpk-dev coinor-libclp-dev
)
test_packages=(
  libgtest-dev libgmock-dev
  # The Slurm executor's tests run a throw-away Slurm cluster (scripts/slurm; procps: its stop
  # script finds leftover processes with ps and pgrep).
  slurm-wlm munge procps
  # Checks of the suite's scripts (test/scenarios/philly_replay.sh) and of docs/api/openapi.yaml.
  python3 python3-yaml
  # The dashboard's browser tests (test/browser): headless Chromium.
  chromium
)
bench_packages=(libbenchmark-dev)

packages=("${run_packages[@]}")
case "$set_name" in
  test) packages+=("${test_packages[@]}") ;;
  bench) packages+=("${bench_packages[@]}") ;;
esac
if [ "$list" -eq 1 ]; then
  printf '%s\n' "${packages[@]}"
  exit 0
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps ($set_name): installing ${missing[*]}" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to apt-get install ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
