#!/usr/bin/env bash
# The whole test suite over the workspace (the library at the root; cli, testkit, demo
# and bench beside it): rust-version, formatting, lints, docs, the library's dependency
# tree, unit, property and integration tests (they start their own ZooKeeper servers on
# free loopback ports), the packaging of the two published crates, and mutation testing
# of the pure modules.
# Arguments go to `cargo test`.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/ensure-zookeeper.sh

echo "== rust-version of the published crates true for the locked dependencies"
python3 scripts/check-rust-version.py
echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy --workspace --all-targets -- -D warnings"
cargo clippy --workspace --all-targets --locked -- -D warnings
echo "== cargo doc --workspace --no-deps"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked --quiet
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
cargo test --workspace --locked "$@"
echo "== cargo publish --dry-run -p zk-rwlock -p zk-rwlock-cli"
# Both at once: the CLI's dependency on the library (not yet on crates.io) is then
# verified against the library packaged here. --allow-dirty: this checks packaging,
# and runs before a commit as often as after one.
cargo publish --dry-run --allow-dirty -p zk-rwlock -p zk-rwlock-cli
echo "== mutation testing of the pure modules (scripts/mutants.sh)"
# Installs cargo-mutants (pinned) when missing; fails if any mutant of node_name,
# ordering, acquire or stats survives. `ZK_RWLOCK_SKIP_MUTANTS=1` skips it while iterating.
if [[ ${ZK_RWLOCK_SKIP_MUTANTS:-0} == 1 ]]; then
  echo "   skipped (ZK_RWLOCK_SKIP_MUTANTS=1)"
else
  bash scripts/mutants.sh
fi
