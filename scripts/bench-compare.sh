#!/usr/bin/env bash
# zk-rwlock against Apache Curator 5.4.0 and kazoo 2.11 on one throwaway local
# ZooKeeper, every workload interleaved (bench/peers/README.md has the contract;
# entity_locks with its floor, entity_floor, as a fourth implementation in the
# same rotation, bench/floor-impl.sh; semaphore: 16 clients on one counting semaphore of
# 4 permits against Curator's InterProcessSemaphoreV2 and kazoo's Semaphore), then the same with a network's latency: a second
# pass of run.sh on a fresh server with LATENCY_US=500 (every implementation reaches the
# server through bench/peers/delay-proxy, a 1 ms round trip), the contended rows,
# mixed_90r10w, herd_release and entity_locks only, no safety pass; its rows are rows of
# their own in the table ("contended_write @1ms"). Then, on a fresh server, ZooKeeper's own
# floor measured with plain client calls, the herd at 64 and 1,000 waiters
# (scale) and the client's memory per lock handle and per waiter; then the
# directories entity_locks leaves behind (bench/lifecycle.sh, another fresh
# server, about 2.5 minutes; LIFECYCLE=0 skips it). Prints the comparison
# table, then every target checked run by run (bench/targets.py); exits 1 if
# a target was missed in any run.
# Installs Debian's zookeeper and Curator packages and a kazoo venv when missing.
#
#   ./scripts/bench-compare.sh            # one run; prints the comparison table
#   RUNS=3 ./scripts/bench-compare.sh     # three runs; medians and per-run ratios
#   LATENCY=0 ./scripts/bench-compare.sh  # the loopback pass only
#
# On the 2-core machine each run's loopback pass takes about 5 minutes (a minute of it the
# server warm-up, some 40 s the semaphore rows) and its latency pass about 5 more (the warm-up a minute, then some 35 s
# per row: 7 rows with the default client counts); the floor, scale, memory and lifecycle
# parts after the runs about 4 minutes in all.
# LATENCY=500 is the latency pass's one-way latency in microseconds (0 skips the pass);
# LATENCY_WORKLOADS="contended_write contended_mutex mixed_90r10w herd_release entity_locks"
# its workloads. The JSON Lines go to bench/peers/results/ (run-<stamp>-<i>.jsonl, the latency
# pass's run-<stamp>-<i>-lat500.jsonl, and both joined, compare-<stamp>-<i>.jsonl, which the
# report and the targets read). run.sh's other knobs pass through to both passes (e.g.
# HERD_WAITERS=1000, CONTENDED_CLIENTS="8"); WORKLOADS to the loopback pass only.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-zookeeper.sh
cargo build --release --quiet -p zk-rwlock-bench
target_dir=${CARGO_TARGET_DIR:-target}
[[ $target_dir == /* ]] || target_dir=$PWD/$target_dir
bin=$target_dir/release/zk-rwlock-bench
stamp=$(date +%Y%m%d-%H%M%S)-$$
latency=${LATENCY:-500}
latency_workloads=${LATENCY_WORKLOADS:-"contended_write contended_mutex mixed_90r10w herd_release entity_locks"}
results=bench/peers/results
files=()
for i in $(seq 1 "${RUNS:-1}"); do
  echo "bench-compare: run $i of ${RUNS:-1}" >&2
  # "floor" answers entity_locks with zk-rwlock-bench's entity_floor (bench/floor-impl.sh).
  RUN_ID=$stamp-$i IMPLS=${IMPLS:-"curator kazoo rust floor"} IMPL_CMD_rust="$bin" \
    IMPL_CMD_floor="bash $PWD/bench/floor-impl.sh $bin" LATENCY_US=0 bash bench/peers/run.sh > /dev/null
  if [[ $latency == 0 ]]; then
    files+=("$results/run-$stamp-$i.jsonl")
    continue
  fi
  echo "bench-compare: run $i of ${RUNS:-1}, $latency us each way through the delay proxy" >&2
  # The proxy is built into the bench binary's target directory.
  RUN_ID=$stamp-$i-lat$latency IMPLS=${IMPLS:-"curator kazoo rust floor"} IMPL_CMD_rust="$bin" \
    IMPL_CMD_floor="bash $PWD/bench/floor-impl.sh $bin" LATENCY_US=$latency PROXY_TARGET=$target_dir \
    WORKLOADS=$latency_workloads SAFETY_HOLD_MS=0 bash bench/peers/run.sh > /dev/null
  # One run, one file: its rows differ by latency_us, which the report and the targets key on.
  cat "$results/run-$stamp-$i.jsonl" "$results/run-$stamp-$i-lat$latency.jsonl" > "$results/compare-$stamp-$i.jsonl"
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
