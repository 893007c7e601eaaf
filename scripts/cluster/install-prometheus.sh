#!/usr/bin/env bash
# Debian's prometheus package (prometheus and promtool), when missing, with no daemon left running.
exec bash "$(dirname "$0")/install-packages.sh" install-prometheus "promtool prometheus" prometheus prometheus
