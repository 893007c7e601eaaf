#!/usr/bin/env bash
# Installs Debian's prometheus package (prometheus and promtool) when promtool is missing, without
# leaving its daemon running: the package's init script would start one on :9090, which the cluster
# and anything else on the machine may need. A policy-rc.d that refuses every start is put in place
# for the install (and the one found there restored); a daemon started anyway is stopped.
set -euo pipefail
log() { echo "install-prometheus: $*" >&2; }

if command -v promtool >/dev/null && command -v prometheus >/dev/null; then exit 0; fi
if ((EUID != 0)); then
  log "promtool is missing and only root can install Debian's prometheus package (apt-get install -y prometheus)"
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
printf '#!/bin/sh\n# No service starts while install-prometheus.sh installs packages.\nexit 101\n' >"$policy"
chmod 755 "$policy"

log "installing Debian's prometheus package (for promtool and prometheus)"
export DEBIAN_FRONTEND=noninteractive
apt-get -o DPkg::Lock::Timeout=600 update -qq
apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends prometheus >/dev/null

# In case a service manager started it regardless of the policy.
if command -v systemctl >/dev/null && systemctl is-active --quiet prometheus 2>/dev/null; then
  systemctl stop prometheus || true
  systemctl disable prometheus >/dev/null 2>&1 || true
fi
if [[ -x /etc/init.d/prometheus ]]; then /etc/init.d/prometheus stop >/dev/null 2>&1 || true; fi
log "installed: $(promtool --version 2>&1 | head -1)"
