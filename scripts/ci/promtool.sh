#!/usr/bin/env bash
# The alerting rules in CI: `promtool check rules` (syntax, PromQL) and `promtool test rules` (each
# alert fires, or not, on the series of deploy/prometheus/alerts.test.yml). Installs Debian's
# prometheus package first when promtool is missing, without leaving its daemon running. Also
# checks the cluster's scrape configuration. Which metrics the rules and the dashboard name is
# checked against what /metrics serves by test/e2e/metrics-names.e2e-spec.ts.
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v promtool >/dev/null || bash scripts/cluster/install-prometheus.sh
promtool --version 2>&1 | head -1
promtool check rules deploy/prometheus/alerts.yml deploy/prometheus/patroni-alerts.yml
promtool check config --syntax-only deploy/prometheus/prometheus.yml
(cd deploy/prometheus && promtool test rules alerts.test.yml patroni-alerts.test.yml)
