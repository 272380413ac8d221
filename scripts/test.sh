#!/usr/bin/env bash
# The whole test suite over the workspace (the library at the root; cli, testkit, demo
# and bench beside it): rust-version, formatting, lints, docs, the library's dependency
# tree, unit, property and integration tests (they start their own ZooKeeper servers on
# free loopback ports), the packaging of the three published crates, and mutation testing
# of the pure modules.
# Arguments go to `cargo test`.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/ensure-zookeeper.sh
# Apache Curator and kazoo, for tests/interop.rs.
bash scripts/ensure-peers.sh >/dev/null

echo "== rust-version of the published crates true for the locked dependencies"
python3 scripts/check-rust-version.py
echo "== cargo fmt --check"
cargo fmt --all -- --check
# The vendored ZooKeeper client (package zk-rwlock-zookeeper-client) is a member so that it
# is packaged with the rest, but its lints, docs and tests are upstream's (its tests need
# docker): it is built, not checked, here.
vendored=(--exclude zk-rwlock-zookeeper-client)
echo "== cargo clippy --workspace --all-targets -- -D warnings"
cargo clippy --workspace "${vendored[@]}" --all-targets --locked -- -D warnings
echo "== cargo doc --workspace --no-deps"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace "${vendored[@]}" --no-deps --locked --quiet
echo "== the library depends on none of the command line's crates"
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
echo "== cargo test --workspace"
# Features unify across the workspace: the bench enables the library's `metrics` feature,
# so tests/metrics.rs (required-features = ["metrics"]) runs here too.
cargo test --workspace "${vendored[@]}" --locked "$@"
echo "== cargo publish --dry-run -p zk-rwlock-zookeeper-client -p zk-rwlock -p zk-rwlock-cli"
# All at once: the library's dependency on the patched client and the CLI's on the
# library (none of them on crates.io yet) are then verified against the packages made
# here. --allow-dirty: this checks packaging, and runs before a commit as often as after one.
# Fresh builds and sources: cargo takes a registry crate's build and its unpacked sources
# for good once made, so those left by an earlier run (the same versions with older code)
# would be reused. The packages verified here are unpacked from a local registry of
# cargo's (in a registry directory whose name starts with `-`).
rm -rf target/publish-check
cargo_home=${CARGO_HOME:-$HOME/.cargo}
rm -rf "$cargo_home"/registry/src/-*/zk-rwlock-* "$cargo_home"/registry/cache/-*/zk-rwlock-*
cargo publish --dry-run --allow-dirty --target-dir target/publish-check \
  -p zk-rwlock-zookeeper-client -p zk-rwlock -p zk-rwlock-cli
rm -rf target/publish-check
echo "== mutation testing of the pure modules (scripts/mutants.sh)"
# Installs cargo-mutants (pinned) when missing; fails if any mutant of node_name,
# ordering, acquire or stats survives. `ZK_RWLOCK_SKIP_MUTANTS=1` skips it while iterating.
if [[ ${ZK_RWLOCK_SKIP_MUTANTS:-0} == 1 ]]; then
  echo "   skipped (ZK_RWLOCK_SKIP_MUTANTS=1)"
else
  bash scripts/mutants.sh
fi
