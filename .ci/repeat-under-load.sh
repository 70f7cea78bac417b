#!/usr/bin/env bash
# Runs `npm test` RUNS times (default 10) with BUSY CPU-bound loops (default 2) beside it, as a
# busy CI machine would (SCRIPT=test:all: the slow project too), and then, with
# DYNAMODB_LOCAL_RUNS > 0, the DynamoDB Local pass that many times. Each run's output goes to LOG_DIR (default a new temporary folder); a line per run says
# its exit code, duration and load average. Exits non-zero if any run failed. Not part of CI: it
# is how a flaky test is hunted (README, Tests).
set -uo pipefail
cd "$(dirname "$0")/.."

runs="${RUNS:-10}"
script="${SCRIPT:-test}"
busy="${BUSY:-2}"
dynamodb_local_runs="${DYNAMODB_LOCAL_RUNS:-0}"
log_dir="${LOG_DIR:-$(mktemp -d)}"
mkdir -p "$log_dir"

loops=()
for _ in $(seq 1 "$busy"); do
  (while :; do :; done) &
  loops+=("$!")
done
stop_loops() { [ ${#loops[@]} -eq 0 ] || kill "${loops[@]}" 2>/dev/null; }
trap stop_loops EXIT

failed=0
record() { # name, command...
  local name="$1" start rc
  shift
  start=$(date +%s)
  "$@" >"$log_dir/$name.log" 2>&1
  rc=$?
  [ "$rc" -eq 0 ] || failed=$((failed + 1))
  echo "$name: exit $rc in $(($(date +%s) - start)) s, load average $(cut -d' ' -f1 /proc/loadavg)" |
    tee -a "$log_dir/summary.txt"
}

echo "logs in $log_dir, $busy busy loop(s)"
for i in $(seq 1 "$runs"); do record "npm-$script-$i" npm run "$script"; done
for i in $(seq 1 "$dynamodb_local_runs"); do record "dynamodb-local-$i" bash .ci/dynamodb-local.sh; done
echo "$failed failed of $((runs + dynamodb_local_runs)) runs"
[ "$failed" -eq 0 ]
