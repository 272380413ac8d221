#!/usr/bin/env bash
# The implementation "floor" of peers/run.sh, added by scripts/bench-compare.sh:
#   IMPLS="... floor" IMPL_CMD_floor="bash bench/floor-impl.sh /path/to/zk-rwlock-bench"
# It runs zk-rwlock-bench's floor of a lock workload with the same arguments, so that the floor
# is measured in the same run, on the same server, in the rotation with the locks:
#   entity_locks              -> entity_floor: the same session, workers, entity choice and
#                                paths; per grant a create, a listing of the entity's directory
#                                and a delete, no lock logic; row {"impl":"rust","workload":"entity_floor",...}
#   contended_write, 2 clients -> contended_floor: 2 sessions handing a grant back and forth with
#                                ephemeral-sequential nodes (per grant a create, a data watch and
#                                a delete; the delete's notification is the grant), no lock logic;
#                                row {"impl":"rust","workload":"contended_floor","clients":2,...}
# Any other workload (and contended_write with other client counts) has no floor here: one row
# {"impl":"floor",...,"grants":null,"skipped":...}, which the reports ignore.
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
floor=""
case $workload in
  entity_locks) floor=entity_floor ;;
  contended_write) [[ $clients != 2 ]] || floor=contended_floor ;;
esac
if [[ -n $floor ]]; then
  for ((i = 0; i < ${#args[@]} - 1; i++)); do
    [[ ${args[i]} != --workload ]] || args[i + 1]=$floor
  done
  exec "$bin" "${args[@]}"
fi
echo "{\"impl\":\"floor\",\"workload\":\"$workload\",\"clients\":$clients,\"grants\":null,\"skipped\":\"no floor for this workload\"}"
