#!/usr/bin/env bash
# zk-rwlock against Apache Curator 5.4.0 and kazoo 2.11 on one throwaway local
# ZooKeeper, every workload interleaved (bench/peers/README.md has the contract;
# entity_locks and contended_write with their floors, entity_floor and contended_floor, from a
# fourth implementation in the same rotation, bench/floor-impl.sh; semaphore: 16 clients on one
# counting semaphore of 4 permits against Curator's InterProcessSemaphoreV2 and kazoo's
# Semaphore), then the same with a network's latency: a second pass of run.sh on a fresh server
# with LATENCY_US=500 (every implementation reaches the server through bench/peers/delay-proxy, a
# 1 ms round trip), the contended rows, mixed_90r10w, herd_release and entity_locks only, no safety
# pass; its rows are rows of their own in the table ("contended_write @1ms"). Then the same on an
# ensemble: a third pass of run.sh with ENSEMBLE=3 on a fresh ensemble of 3 members on loopback
# (bench/peers/zk.sh start-ensemble; every client gets the whole connect string), no latency,
# uncontended_write, the contended rows, mixed_90r10w, herd_release and entity_locks, no safety
# pass; its rows are rows of their own too ("contended_write ens3"). Then, on a fresh server,
# ZooKeeper's own floor measured with plain client calls, the herd at 64 and 1,000 waiters
# (scale) and the client's memory per lock handle and per waiter; then the
# directories entity_locks leaves behind (bench/lifecycle.sh, another fresh
# server, about 2.5 minutes; LIFECYCLE=0 skips it). Prints the comparison
# table, then every target checked run by run (bench/targets.py); exits 1 if
# a target was missed in any run.
# Installs Debian's zookeeper and Curator packages and a kazoo venv when missing.
#
#   ./scripts/bench-compare.sh                        # one run; prints the comparison table
#   RUNS=3 ./scripts/bench-compare.sh                 # three runs; medians and per-run ratios
#   LATENCY=0 ENSEMBLE=0 ./scripts/bench-compare.sh   # the loopback pass only
#
# On the 2-core machine each run's loopback pass takes about 5 minutes (a minute of it the
# server warm-up, some 40 s the semaphore rows), its latency pass about 5 more (the warm-up a
# minute, then some 35 s per row: 7 rows with the default client counts) and its ensemble pass
# about 5 more (an estimate, not yet timed: the warm-up, then 8 rows with the default client
# counts); the floor, scale, memory and lifecycle parts after the runs about 4 minutes in all.
# LATENCY=500 is the latency pass's one-way latency in microseconds (0 skips the pass);
# LATENCY_WORKLOADS="contended_write contended_mutex mixed_90r10w herd_release entity_locks"
# its workloads. ENSEMBLE=3 is the ensemble pass's number of members (0 skips the pass; 1 is
# refused: that would be the loopback pass again);
# ENSEMBLE_WORKLOADS="uncontended_write contended_write contended_mutex mixed_90r10w herd_release entity_locks"
# its workloads. The JSON Lines go to bench/peers/results/ (run-<stamp>-<i>.jsonl, the latency
# pass's run-<stamp>-<i>-lat500.jsonl, the ensemble pass's run-<stamp>-<i>-ens3.jsonl, and all
# of them joined, compare-<stamp>-<i>.jsonl, which the report and the targets read). run.sh's
# other knobs pass through to all three passes (e.g. HERD_WAITERS=1000, CONTENDED_CLIENTS="8");
# WORKLOADS to the loopback pass only. IMPLS and the floor implementation are the same in all
# three.
set -euo pipefail
cd "$(dirname "$0")/.."
# ENSEMBLE=1 would give rows without "ensemble", indistinguishable from the loopback pass's.
[[ ${ENSEMBLE:-3} =~ ^(0|[2-9]|[1-9][0-9]+)$ ]] ||
  { echo "bench-compare: ENSEMBLE must be 0 (no ensemble pass) or a number of members >= 2" >&2; exit 2; }
bash scripts/ensure-zookeeper.sh
cargo build --release --quiet -p zk-rwlock-bench
target_dir=${CARGO_TARGET_DIR:-target}
[[ $target_dir == /* ]] || target_dir=$PWD/$target_dir
bin=$target_dir/release/zk-rwlock-bench
stamp=$(date +%Y%m%d-%H%M%S)-$$
latency=${LATENCY:-500}
latency_workloads=${LATENCY_WORKLOADS:-"contended_write contended_mutex mixed_90r10w herd_release entity_locks"}
ensemble=${ENSEMBLE:-3}
ensemble_workloads=${ENSEMBLE_WORKLOADS:-"uncontended_write contended_write contended_mutex mixed_90r10w herd_release entity_locks"}
impls=${IMPLS:-"curator kazoo rust floor"}
results=bench/peers/results
files=()
for i in $(seq 1 "${RUNS:-1}"); do
  echo "bench-compare: run $i of ${RUNS:-1}" >&2
  # "floor" answers entity_locks and contended_write with zk-rwlock-bench's floors
  # (bench/floor-impl.sh). ENSEMBLE=1 on the loopback and latency passes: run.sh reads ENSEMBLE
  # too, and this script's ENSEMBLE (the ensemble pass's) must not reach them.
  RUN_ID=$stamp-$i IMPLS=$impls IMPL_CMD_rust="$bin" \
    IMPL_CMD_floor="bash $PWD/bench/floor-impl.sh $bin" LATENCY_US=0 ENSEMBLE=1 bash bench/peers/run.sh > /dev/null
  parts=("$results/run-$stamp-$i.jsonl")
  if [[ $latency != 0 ]]; then
    echo "bench-compare: run $i of ${RUNS:-1}, $latency us each way through the delay proxy" >&2
    # The proxy is built into the bench binary's target directory.
    RUN_ID=$stamp-$i-lat$latency IMPLS=$impls IMPL_CMD_rust="$bin" \
      IMPL_CMD_floor="bash $PWD/bench/floor-impl.sh $bin" LATENCY_US=$latency PROXY_TARGET=$target_dir \
      ENSEMBLE=1 WORKLOADS=$latency_workloads SAFETY_HOLD_MS=0 bash bench/peers/run.sh > /dev/null
    parts+=("$results/run-$stamp-$i-lat$latency.jsonl")
  fi
  if [[ $ensemble != 0 ]]; then
    echo "bench-compare: run $i of ${RUNS:-1}, on an ensemble of $ensemble" >&2
    RUN_ID=$stamp-$i-ens$ensemble IMPLS=$impls IMPL_CMD_rust="$bin" \
      IMPL_CMD_floor="bash $PWD/bench/floor-impl.sh $bin" LATENCY_US=0 ENSEMBLE=$ensemble \
      WORKLOADS=$ensemble_workloads SAFETY_HOLD_MS=0 bash bench/peers/run.sh > /dev/null
    parts+=("$results/run-$stamp-$i-ens$ensemble.jsonl")
  fi
  if (( ${#parts[@]} == 1 )); then
    files+=("${parts[0]}")
    continue
  fi
  # One run, one file: its rows differ by latency_us and ensemble, which the report and the
  # targets key on.
  cat "${parts[@]}" > "$results/compare-$stamp-$i.jsonl"
  files+=("$results/compare-$stamp-$i.jsonl")
done
python3 bench/report.py "${files[@]}"
echo
missed=0
python3 bench/targets.py "${files[@]}" || missed=1

echo
echo "Floor (plain client calls, no lock logic; the lock beside it; median of ${RUNS:-1} round(s)):"
port=$(bash bench/peers/zk.sh freeport)
bash bench/peers/zk.sh start "$port" > /dev/null
trap 'bash bench/peers/zk.sh stop "$port" 2>/dev/null || true' EXIT
floors=bench/peers/results/floors-$stamp.jsonl
for i in $(seq 1 "${RUNS:-1}"); do
  for w in floor_cycle floor_create_delete floor_handoff uncontended_write "floor_cycle --clients 2" \
    "contended_write --clients 2"; do
    # shellcheck disable=SC2086 # the workload carries its --clients
    "$bin" --zk "127.0.0.1:$port" --workload $w --grants 2000 --warmup 200 --path "/floor-$i-${w%% *}-${#w}" | tail -1
  done
done > "$floors"
python3 bench/summaries.py floors "$floors"

# Scale: the herd with 64 and with SCALE_WAITERS (1,000) waiters, alternating
# on the same server, SCALE_ROUNDS times; per hand-off = chain time / waiters.
big=${SCALE_WAITERS:-1000}
echo
echo "Scale (herd_release, 64 vs $big waiters, alternating on one server; medians of ${SCALE_ROUNDS:-3} rounds):"
scale=bench/peers/results/scale-$stamp.jsonl
for i in $(seq 1 "${SCALE_ROUNDS:-3}"); do
  for n in 64 "$big"; do
    "$bin" --zk "127.0.0.1:$port" --workload herd_release --clients "$n" --warmup 200 --path "/scale-$i-$n" | tail -1
  done
done > "$scale"
python3 bench/summaries.py scale "$scale"

# Client memory: idle lock handles and queued waiters on one session.
echo
echo "Client memory (VmRSS growth, one session; median of ${SCALE_ROUNDS:-3} rounds):"
memory=bench/peers/results/memory-$stamp.jsonl
for i in $(seq 1 "${SCALE_ROUNDS:-3}"); do
  "$bin" --zk "127.0.0.1:$port" --workload memory_handles --clients 10000 --path "/memory-$i-handles" | tail -1
  "$bin" --zk "127.0.0.1:$port" --workload memory_waiters --clients 1000 --path "/memory-$i-waiters" | tail -1
done > "$memory"
python3 bench/summaries.py memory "$memory"

if [[ ${LIFECYCLE:-1} != 0 ]]; then
  echo
  bash bench/lifecycle.sh "$bin"
fi
exit $missed
