#!/usr/bin/env bash
# The whole test suite: formatting, lints, docs, unit, property and integration tests
# (the integration tests start their own ZooKeeper servers on free loopback ports).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/ensure-zookeeper.sh

echo "== rust-version true for the locked dependencies"
python3 scripts/check-rust-version.py
echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy --all-targets -- -D warnings"
cargo clippy --all-targets --locked -- -D warnings
echo "== cargo doc --no-deps"
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --locked --quiet
echo "== cargo test"
cargo test --locked "$@"
