#!/usr/bin/env bash
# The whole test suite over the workspace (the library at the root; cli, testkit, demo
# and bench beside it): formatting, lints, docs, unit, property and integration tests
# (the integration tests start their own ZooKeeper servers on free loopback ports).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/ensure-zookeeper.sh

echo "== rust-version true for the locked dependencies"
python3 scripts/check-rust-version.py
echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy --workspace --all-targets -- -D warnings"
cargo clippy --workspace --all-targets --locked -- -D warnings
echo "== cargo doc --workspace --no-deps"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked --quiet
echo "== cargo test --workspace"
cargo test --workspace --locked "$@"
