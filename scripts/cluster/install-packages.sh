#!/usr/bin/env bash
# Installs Debian packages when a command they bring is missing, without leaving their daemons
# running: a package's init script would start a daemon of its own (Prometheus on :9090, etcd on
# :2379, a Patroni), which the cluster must not meet. A policy-rc.d that refuses every start is put
# in place for the install (and the one found there restored); a daemon started anyway is stopped.
#
#   install-packages.sh NAME "COMMANDS" "PACKAGES" "DAEMONS"
#     NAME      who asks, for the log lines
#     COMMANDS  installed when every one is on PATH (nothing is done then)
#     PACKAGES  what apt-get installs otherwise; DAEMONS what is stopped afterwards
set -euo pipefail
name=$1 commands=$2 packages=$3 daemons=$4
log() { echo "$name: $*" >&2; }

missing=0
for command in $commands; do command -v "$command" >/dev/null || missing=1; done
((missing)) || exit 0
if ((EUID != 0)); then
  log "one of $commands is missing and only root can install it (apt-get install -y $packages)"
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
printf '#!/bin/sh\n# No service starts while %s installs packages.\nexit 101\n' "$name" >"$policy"
chmod 755 "$policy"

log "installing Debian's $packages"
export DEBIAN_FRONTEND=noninteractive
apt-get -o DPkg::Lock::Timeout=600 update -qq
# shellcheck disable=SC2086 # a list of package names
apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends $packages >/dev/null

# In case a service manager started one regardless of the policy.
for daemon in $daemons; do
  if command -v systemctl >/dev/null && systemctl is-active --quiet "$daemon" 2>/dev/null; then
    systemctl stop "$daemon" || true
    systemctl disable "$daemon" >/dev/null 2>&1 || true
  fi
  if [[ -x /etc/init.d/$daemon ]]; then "/etc/init.d/$daemon" stop >/dev/null 2>&1 || true; fi
done
log "installed: $packages"
