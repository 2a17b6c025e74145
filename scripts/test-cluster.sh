#!/usr/bin/env bash
# The outage tests on a three-broker KRaft cluster (scripts/kafka.sh cluster): brokers are killed
# and revived, so they run apart from `npm test`. Starts the cluster when it does not answer, runs
# the tests, and stops the cluster again if it started it.
set -euo pipefail
cd "$(dirname "$0")/.."
started=0
if ! bootstrap="$(bash scripts/kafka.sh cluster status 2>/dev/null)"; then
  bootstrap="$(bash scripts/kafka.sh cluster start | tail -n 1)"
  started=1
fi
cleanup() {
  # Revive what a failed test left down; stop the cluster only if this script started it.
  for n in 1 2 3; do bash scripts/kafka.sh cluster revive "$n" >/dev/null 2>&1 || true; done
  if [ "$started" = 1 ]; then bash scripts/kafka.sh cluster stop; fi
}
trap cleanup EXIT
# A broker revived on a loaded machine took over 90 s (kafka.sh's default wait) to start.
export KAFKA_START_TIMEOUT="${KAFKA_START_TIMEOUT:-300}"
# Every cluster file, or those named (test/...), then vitest's own options.
files=(test/kafka/cluster-outage.test.ts test/relay/cluster-outage.test.ts test/kafka/cluster-coordinator.test.ts test/kafka/cluster-flow.test.ts)
if [[ "${1:-}" == test/* ]]; then
  files=()
  while [[ "${1:-}" == test/* ]]; do files+=("$1"); shift; done
fi
RENTBRIDGE_CLUSTER_BROKERS="$bootstrap" npx vitest run --no-file-parallelism "${files[@]}" "$@"
