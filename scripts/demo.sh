#!/usr/bin/env bash
# The project's main job, from a fresh machine: nine processes (3 writers, 6 readers)
# share one ZooKeeper lock for 10 s on a throwaway local server; the terminal shows
# their timeline live, then the totals and the safety verdict (exit 1 on a violation).
# The timeline is also written as demo.svg beside the build (target/demo.svg, or in
# CARGO_TARGET_DIR). The first run builds the demo first, which takes a few minutes. Extra arguments go to `zk-rwlock-demo`,
# e.g. `./scripts/demo.sh --ensemble 3 --kill-leader` (see `./scripts/demo.sh --help`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-zookeeper.sh
demo=$(bash scripts/build-bin.sh zk-rwlock-demo zk-rwlock-demo)
svg=$(dirname "$(dirname "$demo")")/demo.svg
exec "$demo" --duration 10s --svg "$svg" "$@"
