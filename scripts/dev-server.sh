#!/usr/bin/env bash
# A local ZooKeeper for trying zk-rwlock by hand: a standalone server on
# 127.0.0.1:2181 (tickTime 2000 ms) with throwaway data, until Ctrl-C.
# Prints the connect string; the arguments go to `zk-dev-server`, e.g.
#   ./scripts/dev-server.sh --port 2182
#   ./scripts/dev-server.sh --ensemble 3     # 127.0.0.1:2181,127.0.0.1:2182,127.0.0.1:2183
#   ./scripts/dev-server.sh --data-dir ~/.zk-dev  # keeps the tree and the sessions across restarts
# (see `./scripts/dev-server.sh --help`). The first run builds it, which takes a few minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-zookeeper.sh
exec "$(bash scripts/build-bin.sh zk-rwlock-testkit zk-dev-server)" "$@"
