#!/usr/bin/env bash
# Every Debian package a CI step uses, installed in one go before the steps run side by side: two
# apt-gets at once would fight over apt's locks. Each step's own script still installs what it
# misses when run alone (it then finds everything here). Packages with daemons (Patroni, etcd,
# Prometheus, pgBackRest's repository server) go through install-packages.sh, which keeps their
# daemons from starting.
set -euo pipefail
cd "$(dirname "$0")/../.."
export DEBIAN_FRONTEND=noninteractive
started=$SECONDS

# command:package for the plain ones: the container (podman ...), the cluster's balancer, the
# bench's load generator, the browser tests, the regex engines, and the tools the scripts call.
wanted=(podman:podman buildah:buildah runc:runc debootstrap:debootstrap curl:curl ss:iproute2
  psql:postgresql-client haproxy:haproxy wrk:wrk chromium:chromium go:golang-go cargo:cargo
  java:default-jdk-headless python3:python3)
missing=()
for pair in "${wanted[@]}"; do command -v "${pair%%:*}" >/dev/null || missing+=("${pair#*:}"); done
# The Rust regex crate has no command of its own.
[[ -d /usr/share/cargo/registry ]] && compgen -G '/usr/share/cargo/registry/regex-[0-9]*' >/dev/null ||
  missing+=(librust-regex-dev)
if ((${#missing[@]} > 0)); then
  echo "installing Debian's ${missing[*]}"
  apt-get -o DPkg::Lock::Timeout=600 update -qq
  apt-get -o DPkg::Lock::Timeout=600 install -y -qq "${missing[@]}" >/dev/null
fi
bash scripts/cluster/install-patroni.sh
bash scripts/cluster/install-pgbackrest.sh
bash scripts/cluster/install-prometheus.sh
echo "Debian packages: all present ($((SECONDS - started)) s)"
