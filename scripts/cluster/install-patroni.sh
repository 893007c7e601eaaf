#!/usr/bin/env bash
# Debian's patroni and etcd-server packages, when missing, with no daemon left running.
exec bash "$(dirname "$0")/install-packages.sh" install-patroni "patroni patronictl etcd" "patroni etcd-server" "etcd patroni"
