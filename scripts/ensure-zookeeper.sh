#!/usr/bin/env bash
# Installs what the tests and the demo need when it is missing:
# Debian's `zookeeper` package (ZooKeeper 3.8 jars in /usr/share/java) and a Java runtime.
set -euo pipefail

jar_dir=${ZK_RWLOCK_JAR_DIR:-/usr/share/java}
if [[ -f $jar_dir/zookeeper.jar ]] && command -v "${JAVA:-java}" >/dev/null 2>&1; then
  exit 0
fi

echo "ensure-zookeeper: ZooKeeper jars or Java missing; installing Debian's zookeeper package" >&2
if ! command -v apt-get >/dev/null 2>&1; then
  echo "ensure-zookeeper: apt-get not found. Install ZooKeeper 3.8 and Java yourself and set" >&2
  echo "  ZK_RWLOCK_JAR_DIR to the directory holding zookeeper.jar (and JAVA to the java binary)." >&2
  exit 1
fi
sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq zookeeper >/dev/null
test -f "$jar_dir/zookeeper.jar" || { echo "ensure-zookeeper: zookeeper.jar still missing in $jar_dir" >&2; exit 1; }
echo "ensure-zookeeper: installed $(ls "$jar_dir"/zookeeper.jar)" >&2
