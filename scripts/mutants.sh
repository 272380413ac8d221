#!/usr/bin/env bash
# Mutation testing with cargo-mutants (settings in .cargo/mutants.toml, results
# and the reasoning behind every exclusion in docs/mutants.md).
#
#   scripts/mutants.sh [cargo-mutants options]
#       The pure modules (PURE_MODULES) against their own tests: the unit tests
#       in the library (less the launcher's, which start ZooKeeper) and the
#       property tests (PURE_TESTS). No ZooKeeper needed. Fails if any mutant
#       is missed or times out.
#   scripts/mutants.sh --all [cargo-mutants options]
#       The whole library against the whole test suite, which starts real
#       ZooKeeper servers: hours on two cores. Scope it with options such as
#       `--file src/lock.rs`, `--re 'impl Drop'`, `--shard 1/8`, `--timeout 300`.
#
# Results go to mutants.out/ (`-o DIR` for elsewhere); CARGO_MUTANTS_JOBS=N
# builds and tests N mutants at once.
set -euo pipefail
cd "$(dirname "$0")/.."

# The modules with no I/O, mutated on every run. Add a module here; if its
# property tests live in their own test target, add that to PURE_TESTS.
PURE_MODULES="src/node_name.rs src/ordering.rs"
PURE_TESTS="ordering_props"

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

args=(--no-default-features --cargo-arg=--lib)
for module in $PURE_MODULES; do
  args+=(--file "$module")
done
for test in $PURE_TESTS; do
  args+=(--cargo-arg="--test=$test")
done
# cargo-mutants exits non-zero when a mutant is missed (2) or times out (3).
exec cargo mutants "${args[@]}" "$@" -- -- --skip launcher::
