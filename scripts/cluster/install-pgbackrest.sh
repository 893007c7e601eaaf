#!/usr/bin/env bash
# Debian's pgbackrest (2.45 on Debian 12) when missing. Its package ships a systemd unit for a
# repository server, disabled; the cluster never runs it.
exec bash "$(dirname "$0")/install-packages.sh" install-pgbackrest "pgbackrest" "pgbackrest" "pgbackrest"
