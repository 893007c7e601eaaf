#!/usr/bin/env bash
# Installs Debian's patroni and etcd-server packages when patroni or etcd is missing, without
# leaving their daemons running: the packages' init scripts would start an etcd on :2379 and a
# Patroni of their own, which the cluster must not meet. As in install-prometheus.sh, a
# policy-rc.d that refuses every start is put in place for the install (the one found restored),
# and a daemon started anyway is stopped.
set -euo pipefail
log() { echo "install-patroni: $*" >&2; }

if command -v patroni >/dev/null && command -v patronictl >/dev/null && command -v etcd >/dev/null; then exit 0; fi
if ((EUID != 0)); then
  log "patroni or etcd is missing and only root can install them (apt-get install -y patroni etcd-server)"
  exit 1
fi

policy=/usr/sbin/policy-rc.d
saved=""
if [[ -e $policy ]]; then
  saved=$(mktemp)
  cp -p "$policy" "$saved"
fi
restore() {
  if [[ -n $saved ]]; then mv "$saved" "$policy"; else rm -f "$policy"; fi
}
trap restore EXIT
printf '#!/bin/sh\n# No service starts while install-patroni.sh installs packages.\nexit 101\n' >"$policy"
chmod 755 "$policy"

log "installing Debian's patroni and etcd-server packages"
export DEBIAN_FRONTEND=noninteractive
apt-get -o DPkg::Lock::Timeout=600 update -qq
apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends patroni etcd-server >/dev/null

for daemon in etcd patroni; do
  if command -v systemctl >/dev/null && systemctl is-active --quiet "$daemon" 2>/dev/null; then
    systemctl stop "$daemon" || true
    systemctl disable "$daemon" >/dev/null 2>&1 || true
  fi
  if [[ -x /etc/init.d/$daemon ]]; then "/etc/init.d/$daemon" stop >/dev/null 2>&1 || true; fi
done
log "installed: patroni $(patroni --version 2>&1 | awk '{print $2}'), $(etcd --version 2>&1 | head -1)"
