#!/usr/bin/env bash
# Installs what the tests and the demo need when it is missing:
# Debian's `zookeeper` package (ZooKeeper 3.8 jars in /usr/share/java), a Java runtime, a
# Java compiler (the tests compile a small helper that seeds ZooKeeper data directories), and
# openssl (the secured servers' test keys are made with the JDK's keytool; openssl exports
# the client's private key as PEM).
set -euo pipefail

jar_dir=${ZK_RWLOCK_JAR_DIR:-/usr/share/java}
packages=()
if [[ ! -f $jar_dir/zookeeper.jar ]] || ! command -v "${JAVA:-java}" >/dev/null 2>&1; then
  packages+=(zookeeper)
fi
if ! command -v "${JAVAC:-javac}" >/dev/null 2>&1; then
  packages+=(openjdk-17-jdk-headless)
fi
if ! command -v "${KEYTOOL:-keytool}" >/dev/null 2>&1 && [[ ! " ${packages[*]} " == *" openjdk-17-jdk-headless "* ]]; then
  packages+=(openjdk-17-jdk-headless)
fi
if ! command -v "${OPENSSL:-openssl}" >/dev/null 2>&1; then
  packages+=(openssl)
fi
if [[ ${#packages[@]} -eq 0 ]]; then
  exit 0
fi

echo "ensure-zookeeper: ZooKeeper jars, Java, javac, keytool or openssl missing; installing ${packages[*]}" >&2
if ! command -v apt-get >/dev/null 2>&1; then
  echo "ensure-zookeeper: apt-get not found. Install ZooKeeper 3.8 and a JDK yourself and set" >&2
  echo "  ZK_RWLOCK_JAR_DIR to the directory holding zookeeper.jar (and JAVA and JAVAC to the" >&2
  echo "  java and javac binaries)." >&2
  exit 1
fi
sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq "${packages[@]}" >/dev/null
test -f "$jar_dir/zookeeper.jar" || { echo "ensure-zookeeper: zookeeper.jar still missing in $jar_dir" >&2; exit 1; }
command -v "${JAVAC:-javac}" >/dev/null 2>&1 || { echo "ensure-zookeeper: javac still missing" >&2; exit 1; }
command -v "${OPENSSL:-openssl}" >/dev/null 2>&1 || { echo "ensure-zookeeper: openssl still missing" >&2; exit 1; }
echo "ensure-zookeeper: installed ${packages[*]}" >&2
