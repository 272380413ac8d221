#!/usr/bin/env bash
# The project's main job, from a fresh machine.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-zookeeper.sh
cargo run --quiet --release --example decisions
