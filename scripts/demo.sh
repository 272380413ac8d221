#!/usr/bin/env bash
# The project's main job, from a fresh machine: nine processes (3 writers, 6 readers)
# share one ZooKeeper lock for 10 s on a throwaway local server; the terminal shows
# their timeline live, then the totals and the safety verdict (exit 1 on a violation).
# The timeline is also written to target/demo.svg. Extra arguments go to `zk-rwlock-demo`,
# e.g. `./scripts/demo.sh --ensemble 3 --kill-leader` (see `./scripts/demo.sh --help`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-zookeeper.sh
cargo build --quiet -p zk-rwlock-demo
exec target/debug/zk-rwlock-demo --duration 10s --svg target/demo.svg "$@"
