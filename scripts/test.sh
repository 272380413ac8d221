#!/usr/bin/env bash
# The whole test suite over the workspace (the library at the root; cli, testkit, demo
# and bench beside it): rust-version, formatting, lints, docs, the library's dependency
# tree, unit, property and integration tests (they start their own ZooKeeper servers on
# free loopback ports; the library's once with its default features and once with all of
# them), and the packaging of the four published crates (their builds from the packages, and the
# soak and the nemesis, are CI's: scripts/package-check.sh and scripts/long-runs.sh). Each stage's
# time is printed as it ends. Mutation testing of the pure modules is a script of its
# own, scripts/mutants.sh, which CI (.ci/run) runs after this one.
# Arguments go to `cargo test`.
set -euo pipefail
cd "$(dirname "$0")/.."

started=$SECONDS
stage_started=$SECONDS
stage_name=""
# Prints the time of the stage that ends, then the name of the next one.
stage() {
  if [[ -n $stage_name ]]; then
    echo "   ($stage_name: $((SECONDS - stage_started)) s)"
  fi
  stage_name=$1
  stage_started=$SECONDS
  echo "== $1"
}
trap 'status=$?; if [[ $status -ne 0 ]]; then echo "== failed during: ${stage_name:-setup} (after $((SECONDS - started)) s)" >&2; fi' EXIT

stage "ZooKeeper, Java, Curator and kazoo (installed when missing)"
bash scripts/ensure-zookeeper.sh
# Apache Curator and kazoo, for tests/interop.rs.
bash scripts/ensure-peers.sh >/dev/null

stage "rust-version of the published crates true for the locked dependencies"
python3 scripts/check-rust-version.py
stage "cargo fmt --check"
cargo fmt --all -- --check
# The vendored ZooKeeper client (package zk-rwlock-zookeeper-client) is a member so that it
# is packaged with the rest, but its lints, docs and tests are upstream's (its tests need
# docker): it is built, not checked, here.
vendored=(--exclude zk-rwlock-zookeeper-client)
stage "cargo clippy --workspace --all-targets -- -D warnings"
cargo clippy --workspace "${vendored[@]}" --all-targets --locked -- -D warnings
stage "cargo doc --workspace --no-deps"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace "${vendored[@]}" --no-deps --locked --quiet
stage "the library depends on none of the command line's crates"
# libc is checked as a direct dependency only: it reaches the library through getrandom
# (randomness for uuid and the ZooKeeper client), which nothing here can avoid.
tree=$(cargo tree -p zk-rwlock -e normal --prefix none --locked)
direct=$(cargo tree -p zk-rwlock -e normal --prefix none --depth 1 --locked)
unwanted=$( (grep -E '^(clap|serde|serde_json|tracing-subscriber) v' <<<"$tree" || true;
  grep -E '^libc v' <<<"$direct" || true) | sort -u)
if [[ -n $unwanted ]]; then
  echo "the library zk-rwlock depends on:" >&2
  echo "$unwanted" >&2
  echo "(see \`cargo tree -p zk-rwlock -e normal -i <crate>\`)" >&2
  exit 1
fi
echo "   none of clap, serde, serde_json, tracing-subscriber; libc not directly"
stage "the pure core depends on no client, runtime or clock"
# zk-rwlock-core holds every rule; that it compiles without these is what keeps it pure.
core_tree=$(cargo tree -p zk-rwlock-core -e normal --prefix none --locked)
impure=$(grep -E '^(zk-rwlock-zookeeper-client|tokio|rustix|libc|tracing|futures[a-z-]*) v' <<<"$core_tree" | sort -u || true)
if [[ -n $impure ]]; then
  echo "the pure core zk-rwlock-core depends on:" >&2
  echo "$impure" >&2
  exit 1
fi
echo "   $(grep -c . <<<"$core_tree") crates in its tree, none of them a client, a runtime or a clock"
stage "cargo test -p zk-rwlock (the library with its default features only)"
# The test kit depends on the library without features, so this builds the library as a
# user's default build does (tests/security's credentials module and tests/metrics need
# features and are left out here; the stage after runs them).
# Its doctests run once, in the stage after, with the features some of them need.
cargo test -p zk-rwlock --lib --tests --locked "$@"
stage "cargo test --workspace, the rest (the library with tls, sasl and metrics)"
# The command line, the test kit, the demo and the bench; their builds turn on the library's
# tls, sasl and metrics features (features unify across the workspace). The soak and the
# nemesis are long runs: scripts/long-runs.sh runs them (CI does, after this script).
cargo_args=() test_args=()
for arg in "$@"; do
  if [[ ${#test_args[@]} -gt 0 || $arg == -- ]]; then test_args+=("$arg"); else cargo_args+=("$arg"); fi
done
[[ ${#test_args[@]} -gt 0 ]] || test_args=(--)
cargo test --workspace "${vendored[@]}" --exclude zk-rwlock --locked "${cargo_args[@]}" "${test_args[@]}" \
  --skip soak_readers_and_writers_under_faults --skip soak_semaphore_holders_under_faults \
  --skip nemesis_partitions_inside_the_ensemble
stage "cargo test -p zk-rwlock --features tls,sasl,metrics (what needs them)"
cargo test -p zk-rwlock --features tls,sasl,metrics --locked --test security --test metrics "$@"
cargo test -p zk-rwlock --features tls,sasl,metrics --locked --doc "$@"
stage "cargo package: the four published crates (their builds: scripts/package-check.sh, in CI)"
# Manifests, file lists and the dependencies between the four, as crates.io would take them;
# building the packaged crates is scripts/package-check.sh, which CI runs after this script.
# --allow-dirty: this runs before a commit as often as after one.
cargo publish --dry-run --no-verify --allow-dirty --locked \
  -p zk-rwlock-zookeeper-client -p zk-rwlock-core -p zk-rwlock -p zk-rwlock-cli
stage "done"
echo "   all stages passed in $((SECONDS - started)) s; mutation testing: scripts/mutants.sh"
