#!/usr/bin/env bash
# The four published crates built from their packages, as crates.io would build them:
# `cargo publish --dry-run` with verification, all at once, so that the library's dependency
# on the patched client and on the core, and the CLI's on the library (none of them on
# crates.io yet), are verified against the packages made here. CI (.ci/run) runs it after
# scripts/test.sh, whose packaging stage checks the packages without building them.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS
# The verification builds in the workspace's target directory (cargo 1.91 and later), so the
# dependencies built by the tests are reused. The packaged crates come from a local registry
# of cargo's (a registry directory whose name starts with `-`), and cargo takes a registry
# crate's unpacked sources and its build for good once made: those left by an earlier run
# (the same versions with older code) would be reused, so they go first, with every build of
# this workspace's crates (the next build makes them again).
cargo_home=${CARGO_HOME:-$HOME/.cargo}
rm -rf "$cargo_home"/registry/src/-*/zk-rwlock-* "$cargo_home"/registry/cache/-*/zk-rwlock-*
rm -rf target/package target/debug/.fingerprint/zk-rwlock-*
# --allow-dirty: this checks packaging, and runs before a commit as often as after one.
cargo publish --dry-run --allow-dirty --locked \
  -p zk-rwlock-zookeeper-client -p zk-rwlock-core -p zk-rwlock -p zk-rwlock-cli
echo "   (the packaged crates built in $((SECONDS - started)) s)"
