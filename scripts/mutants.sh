#!/usr/bin/env bash
# Mutation testing with cargo-mutants (settings in .cargo/mutants.toml, results
# and the reasoning behind every exclusion in docs/mutants.md).
#
#   scripts/mutants.sh [cargo-mutants options]
#       The pure modules (PURE_MODULES) against their own tests: the unit tests
#       in the library, the property tests and the simulation (PURE_TESTS).
#       No ZooKeeper needed. Fails if any mutant is missed or times out.
#   scripts/mutants.sh --all [cargo-mutants options]
#       The whole library against the whole test suite, which starts real
#       ZooKeeper servers: hours on two cores. Scope it with options such as
#       `--file 'src/lock/*.rs'`, `--re 'impl Drop'`, `--shard 1/8`, `--timeout 300`.
#
# Results go to mutants.out/ (`-o DIR` for elsewhere); CARGO_MUTANTS_JOBS=N
# builds and tests N mutants at once.
set -euo pipefail
cd "$(dirname "$0")/.."

# The modules with no I/O, mutated on every run, in groups, each against its
# package's unit tests plus the test targets that exercise it (a group's
# mutants are not run against the other groups' slower targets). The pure
# modules are the crate zk-rwlock-core (core/): a mutant there rebuilds the
# core and its tests only. Add a module to a group, or a group:
# "PACKAGE:FILES...:TEST_TARGETS...".
PURE_GROUPS=(
  "zk-rwlock-core:core/src/node_name.rs core/src/ordering/mod.rs core/src/limits.rs core/src/backoff.rs:ordering_props"
  "zk-rwlock-core:core/src/acquire.rs core/src/contender/mod.rs core/src/contender/step.rs core/src/contender/held.rs core/src/contender/release.rs core/src/contender/downgrade.rs core/src/contender/ops.rs core/src/contender/ending.rs core/src/lease.rs core/src/election.rs core/src/election/look.rs core/src/election/keep.rs core/src/election/observe.rs core/src/transaction.rs core/src/wire.rs core/src/wire/carry.rs core/src/wire/poll.rs core/src/wire/keeping.rs core/src/wire/arrivals.rs core/src/wire/run.rs core/src/wire/watches.rs:simulation"
  "zk-rwlock-core:core/src/semaphore.rs core/src/reentrant.rs:semaphore_props"
  "zk-rwlock:src/stats.rs:"
)
# The simulation runs 1,000 schedules per mutant instead of 5,000: every
# mutant of the rules it catches is caught within the first hundred or so.
# Its `mutation_*` tests are left out: they check the simulation's own power
# (a broken copy of a rule is caught), with fixed seeds, and catch no mutant.
export SIM_CASES="${SIM_CASES:-1000}"

CARGO_MUTANTS_VERSION="27.1.0"

installed=$(cargo mutants --version 2>/dev/null || true)
if [[ $installed != "cargo-mutants $CARGO_MUTANTS_VERSION" ]]; then
  echo "mutants: installing cargo-mutants $CARGO_MUTANTS_VERSION (found: ${installed:-none})" >&2
  cargo install --locked cargo-mutants --version "$CARGO_MUTANTS_VERSION"
fi

if [[ ${1:-} == --all ]]; then
  shift
  bash scripts/ensure-zookeeper.sh
  exec cargo mutants "$@"
fi

# cargo-mutants exits non-zero when a mutant is missed (2) or times out (3).
for group in "${PURE_GROUPS[@]}"; do
  IFS=: read -r package files tests <<<"$group"
  args=(--package "$package" --cargo-arg=--lib)
  for module in $files; do
    args+=(--file "$module")
  done
  for test in $tests; do
    args+=(--cargo-arg="--test=$test")
  done
  skip=()
  if [[ " $tests " == *" simulation "* ]]; then
    skip=(-- -- --skip mutation_)
  fi
  echo "== cargo mutants ${args[*]} $* ${skip[*]}"
  cargo mutants "${args[@]}" "$@" "${skip[@]}"
done
