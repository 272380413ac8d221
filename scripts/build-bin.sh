#!/usr/bin/env bash
# Builds one binary of the workspace and prints its path (for demo.sh and dev-server.sh).
# Usage: scripts/build-bin.sh PACKAGE BINARY
# Wherever cargo puts its builds (CARGO_TARGET_DIR, a relative one included, or a
# `build.target-dir` setting), the path printed is the one cargo wrote. Cargo's own
# progress goes to stderr: the first build compiles the workspace's dependencies and
# takes a few minutes on a small machine.
set -euo pipefail
cd "$(dirname "$0")/.."
package=$1
binary=$2
if [[ ! -t 2 ]] || [[ -n ${CI:-} ]]; then quiet=(--quiet); else quiet=(); fi
echo "building $binary (the first build takes a few minutes)..." >&2
# The JSON messages name each artifact's executable; human-readable diagnostics go to stderr.
path=$(cargo build "${quiet[@]}" -p "$package" --bin "$binary" --message-format=json-render-diagnostics |
  python3 -c '
import json, sys
name = sys.argv[1]
found = ""
for line in sys.stdin:
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    if msg.get("reason") == "compiler-artifact" and msg.get("executable") and msg["target"]["name"] == name:
        found = msg["executable"]
print(found)
' "$binary")
if [[ -z $path || ! -x $path ]]; then
  echo "build-bin: cargo built no executable named $binary in package $package" >&2
  exit 1
fi
echo "$path"
