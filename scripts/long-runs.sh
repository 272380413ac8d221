#!/usr/bin/env bash
# The long runs, beyond the lengths the test command (scripts/test.sh) gives them: the soak
# (readers and writers under faults on one server) and the semaphore soak (3N holders of N
# permits under the same faults, for SOAK_SECS too), the nemesis (partitions inside a 5-member
# ensemble), churn (acquires and releases for a measured time, memory and descriptors checked)
# and, with SCALE=1, the sized scale tests. Each prints its own summary; the script prints the
# time of each and fails on the first that fails. CI (.ci/run) runs it with the lengths below.
#
#   scripts/long-runs.sh                          # 5 minutes each of the soaks, nemesis and churn
#   LONG_SECS=3600 scripts/long-runs.sh           # an hour each
#   SOAK_SECS=600 NEMESIS_SECS=600 CHURN_SECS=0 scripts/long-runs.sh   # 0 skips a run
#   SCALE=1 SCALE_CONTENDERS=20000 scripts/long-runs.sh                # the scale tests too
#
# Seeds: ZK_RWLOCK_SOAK_SEED and ZK_RWLOCK_NEMESIS_SEED (docs/testing.md).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-zookeeper.sh

long=${LONG_SECS:-300}
soak=${SOAK_SECS:-$long}
nemesis=${NEMESIS_SECS:-$long}
churn=${CHURN_SECS:-$long}

run() {
  local name=$1
  shift
  local started=$SECONDS
  echo "== $name"
  "$@"
  echo "   ($name: $((SECONDS - started)) s)"
}

if (( soak > 0 )); then
  run "soak, ${soak}s" env ZK_RWLOCK_SOAK_SECS="$soak" \
    cargo test --locked -p zk-rwlock-demo --test demo soak_readers_and_writers_under_faults -- --nocapture
  run "semaphore soak, ${soak}s" env ZK_RWLOCK_SOAK_SECS="$soak" \
    cargo test --locked -p zk-rwlock-demo --test demo soak_semaphore_holders_under_faults -- --nocapture
fi
if (( nemesis > 0 )); then
  run "nemesis, ${nemesis}s" env ZK_RWLOCK_NEMESIS_SECS="$nemesis" \
    cargo test --locked -p zk-rwlock-demo --test demo nemesis_partitions_inside_the_ensemble -- --nocapture
fi
if (( churn > 0 )); then
  run "churn, ${churn}s" env CHURN_SECS="$churn" \
    cargo test --locked -p zk-rwlock --test churn -- --nocapture
fi
if [[ ${SCALE:-0} == 1 ]]; then
  run "scale" cargo test --locked --release -p zk-rwlock --test limits scale:: -- --ignored --nocapture
fi
