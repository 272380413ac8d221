#!/usr/bin/env bash
# The implementation "floor" of peers/run.sh, added by scripts/bench-compare.sh:
#   IMPLS="... floor" IMPL_CMD_floor="bash bench/floor-impl.sh /path/to/zk-rwlock-bench"
# For entity_locks it runs zk-rwlock-bench's entity_floor with the same arguments (the same
# session, workers, entity choice and paths' create and delete, no lock logic), so that the
# floor is measured in the same run, on the same server, in the rotation with the locks; its
# row is {"impl":"rust","workload":"entity_floor",...}. Any other workload has no floor here:
# one row {"impl":"floor",...,"grants":null,"skipped":...}, which the reports ignore.
set -euo pipefail
bin=${1:?usage: floor-impl.sh ZK_RWLOCK_BENCH ARGS...}
shift
args=("$@")
workload="" clients=null
for ((i = 0; i < ${#args[@]} - 1; i++)); do
  case ${args[i]} in
    --workload) workload=${args[i + 1]} ;;
    --clients) clients=${args[i + 1]} ;;
  esac
done
if [[ $workload == entity_locks ]]; then
  for ((i = 0; i < ${#args[@]} - 1; i++)); do
    [[ ${args[i]} != --workload ]] || args[i + 1]=entity_floor
  done
  exec "$bin" "${args[@]}"
fi
echo "{\"impl\":\"floor\",\"workload\":\"$workload\",\"clients\":$clients,\"grants\":null,\"skipped\":\"no floor for this workload\"}"
