#!/usr/bin/env bash
# Directory lifecycle at scale: what entity_locks leaves on the server, and for how long.
#
#   bash bench/lifecycle.sh /path/to/zk-rwlock-bench     # run by scripts/bench-compare.sh
#
# On a fresh ZooKeeper (bench/peers/zk.sh, default container check interval of 60 s), runs
# entity_locks once for zk-rwlock, Curator and kazoo (64 workers on one session, 4,000 grants
# over 1,024 entities, as peers/run.sh), each on its own PATH, then polls every 5 s: how many
# of each PATH's entity directories are left, and ZooKeeper's node count (mntr
# zk_znode_count), until zk-rwlock's and Curator's are gone or LIFECYCLE_WAIT_SECS (150) pass.
# Needs what peers/run.sh prepared: the Curator peer's classes and the kazoo venv.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bin=${1:?usage: lifecycle.sh ZK_RWLOCK_BENCH}
wait_secs=${LIFECYCLE_WAIT_SECS:-150}
entities=${ENTITIES:-1024} grants=${ENTITY_GRANTS:-4000} workers=${ENTITY_CLIENTS:-64}
J=/usr/share/java
CURATOR_CP="$J/curator-recipes.jar:$J/curator-framework.jar:$J/curator-client.jar:$J/guava.jar:$J/zookeeper.jar:$J/zookeeper-jute.jar:$J/slf4j-api.jar:$J/slf4j-simple.jar"
PY=$HERE/peers/kazoo/.venv/bin/python
[[ -f $HERE/peers/curator/build/LockBench.class && -x $PY ]] || {
  echo "lifecycle.sh: run bench/peers/run.sh first (it builds the Curator peer and the kazoo venv)" >&2; exit 1; }
declare -A CMD=(
  [zk-rwlock]="$bin"
  [Curator]="java -Xms256m -Xmx1g -Dorg.slf4j.simpleLogger.defaultLogLevel=error -cp $HERE/peers/curator/build:$CURATOR_CP LockBench"
  [kazoo]="$PY $HERE/peers/kazoo/lockbench.py"
)
IMPLS=(zk-rwlock Curator kazoo)

port=$(bash "$HERE/peers/zk.sh" freeport)
bash "$HERE/peers/zk.sh" start "$port" > /dev/null
trap 'bash "$HERE/peers/zk.sh" stop "$port" 2>/dev/null || true' EXIT
znodes() { bash "$HERE/peers/zk.sh" cmd "$port" mntr | awk '$1 == "zk_znode_count" { print $2 }'; }
# the number of children of each PATH ("gone" if PATH itself is gone)
children() {
  "$PY" - "$port" "${IMPLS[@]/#//lifecycle/}" <<'PY' 2>/dev/null
import sys
from kazoo.client import KazooClient
zk = KazooClient(hosts="127.0.0.1:" + sys.argv[1], timeout=4.0)
zk.start(timeout=30)
out = []
for p in sys.argv[2:]:
    out.append(str(len(zk.get_children(p))) if zk.exists(p) else "gone")
print(" ".join(out))
zk.stop(); zk.close()
PY
}

z0=$(znodes)
declare -A ENDED
for impl in "${IMPLS[@]}"; do
  # shellcheck disable=SC2086
  ${CMD[$impl]} --zk "127.0.0.1:$port" --workload entity_locks --clients "$workers" --grants "$grants" \
    --entities "$entities" --max-secs 60 --path "/lifecycle/$impl" --warmup 200 --seed 42 \
    > "/tmp/lifecycle-$$.out" 2>/dev/null || true
  echo "  $impl: $(tail -n 1 "/tmp/lifecycle-$$.out" | grep -o '"grants_per_s":[0-9.]*' || echo 'no result')" >&2
  ENDED[$impl]=$(date +%s)
done
rm -f "/tmp/lifecycle-$$.out"
z1=$(znodes)
t1=$(date +%s)
read -r -a left1 <<< "$(children)"
declare -A GONE
samples=""
while :; do
  now=$(date +%s)
  read -r -a left <<< "$(children)"
  samples+="  +$(( now - t1 )) s: $(for i in 0 1 2; do printf '%s %s  ' "${IMPLS[$i]}" "${left[$i]}"; done)znodes $(znodes)"$'\n'
  for i in 0 1 2; do
    impl=${IMPLS[$i]}
    if [[ -z ${GONE[$impl]:-} && ( ${left[$i]} == 0 || ${left[$i]} == gone ) ]]; then
      GONE[$impl]=$(( now - ENDED[$impl] ))
    fi
  done
  [[ -n ${GONE[zk-rwlock]:-} && -n ${GONE[Curator]:-} ]] && break
  (( now - t1 < wait_secs )) || break
  sleep 5
done
z2=$(znodes)
echo "Directory lifecycle (entity_locks, $entities entities, $grants grants, one run each, in this order;"
echo "the server removes empty containers at its checks, every 60 s):"
echo "| implementation | directories left after its run | gone (within 5 s) after its run |"
echo "|---|---:|---|"
for i in 0 1 2; do
  impl=${IMPLS[$i]}
  if [[ -n ${GONE[$impl]:-} ]]; then gone="${GONE[$impl]} s"; else gone="still ${left[$i]} after $(( $(date +%s) - ENDED[$impl] )) s"; fi
  echo "| $impl | ${left1[$i]} | $gone |"
done
echo "ZooKeeper zk_znode_count: $z0 before the runs, $z1 after them, $z2 at the end."
echo "Samples:"
printf '%s' "$samples"
