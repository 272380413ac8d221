#!/usr/bin/env bash
# Installs the peer libraries the interoperability tests (tests/interop.rs) lock against,
# when they are missing:
# - Apache Curator 5.4 from Debian's packages (libcurator-recipes-java and
#   libcurator-framework-java: jars in /usr/share/java, beside ZooKeeper's);
# - kazoo 2.11.0 in a virtual environment, bench/peers/kazoo/.venv (shared with the
#   benchmark, bench/peers/run.sh), made with Debian's python3-venv.
# Idempotent: does nothing when both are there. Prints the kazoo venv's python on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."

jar_dir=${ZK_RWLOCK_JAR_DIR:-/usr/share/java}
venv=bench/peers/kazoo/.venv
kazoo_version=2.11.0

packages=()
for jar in curator-recipes curator-framework curator-client guava slf4j-api slf4j-simple; do
  if [[ ! -f $jar_dir/$jar.jar ]]; then
    packages+=(libcurator-recipes-java libcurator-framework-java libslf4j-java)
    break
  fi
done
if ! /usr/bin/python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
  packages+=(python3-venv)
fi
if [[ ${#packages[@]} -gt 0 ]]; then
  echo "ensure-peers: installing ${packages[*]}" >&2
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "ensure-peers: apt-get not found. Put Curator 5.4's jars (curator-recipes.jar," >&2
    echo "  curator-framework.jar, curator-client.jar, guava.jar, slf4j-api.jar, slf4j-simple.jar)" >&2
    echo "  in ZK_RWLOCK_JAR_DIR and make $venv with kazoo==$kazoo_version yourself." >&2
    exit 1
  fi
  sudo=""
  if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq "${packages[@]}" >/dev/null
fi

have_kazoo() {
  [[ -x $venv/bin/python ]] &&
    [[ $("$venv/bin/python" -c 'import kazoo.version as v; print(v.__version__)' 2>/dev/null) == "$kazoo_version" ]]
}
if ! have_kazoo; then
  echo "ensure-peers: creating $venv with kazoo==$kazoo_version" >&2
  /usr/bin/python3 -m venv "$venv"
  "$venv/bin/pip" install -q "kazoo==$kazoo_version" >&2
  have_kazoo || { echo "ensure-peers: kazoo $kazoo_version still missing in $venv" >&2; exit 1; }
fi
echo "$PWD/$venv/bin/python"
