#!/usr/bin/env bash
# What synchronous replication costs creates: the bench's create scenario (POST /v1/pets, wrk with
# 2 threads) through HAProxy on the cluster of cluster.sh, with Patroni's synchronous_mode on and
# off in turn on the same cluster (patronictl edit-config), ROUNDS times each, alternating so that
# a change in the machine's load falls on both. synchronous_mode is left on.
#   bash scripts/cluster/bench-sync.sh     DURATION (default 10 s), CONNECTIONS (default 16), ROUNDS (default 2)
set -euo pipefail
cd "$(dirname "$0")/../.."
DURATION=${DURATION:-10}
CONNECTIONS=${CONNECTIONS:-16}
ROUNDS=${ROUNDS:-2}
command -v wrk >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null; }
# A cluster that is up already is used and left up; otherwise one is started and stopped.
if [[ ! -f .cluster/env ]]; then
  trap 'bash scripts/cluster/cluster.sh down >/dev/null 2>&1 || true' EXIT
  LOG_LEVEL=warn PROMETHEUS=off bash scripts/cluster/cluster.sh up 3 2>/dev/null
fi
source .cluster/env
script=$(mktemp)
cat >"$script" <<LUA
wrk.method = "POST"
wrk.body = '{"name":"Rex","categoryId":1,"status":"available"}'
wrk.headers["Authorization"] = "Bearer $API_KEY"
wrk.headers["Content-Type"] = "application/json"
LUA

synchronous() { # synchronous true|false: set it, wait until the leader applies it
  patronictl -c "$PG_DIR/node1.yml" edit-config --force -s "synchronous_mode=$1" >/dev/null
  local want=on
  [[ $1 == true ]] || want=off
  for ((i = 0; i < 100; i++)); do
    [[ $(psql "$PRIMARY_URL" -Atc "SELECT CASE WHEN current_setting('synchronous_standby_names') = '' THEN 'off' ELSE 'on' END") == "$want" ]] && return 0
    sleep 0.2
  done
  echo "synchronous_mode=$1 not applied" >&2
  return 1
}

echo "$(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $(node --version), wrk -t2 -c$CONNECTIONS -d${DURATION}s POST /v1/pets"
printf '%-14s %10s %10s %10s\n' synchronous 'creates/s' 'p50 ms' 'p99 ms'
wrk -t2 -c"$CONNECTIONS" -d3s -s "$script" "$BALANCER_URL/v1/pets" >/dev/null # warm-up
for ((round = 1; round <= ROUNDS; round++)); do
  for mode in true false; do
    synchronous "$mode"
    out=$(wrk -t2 -c"$CONNECTIONS" -d"${DURATION}s" --latency -s "$script" "$BALANCER_URL/v1/pets")
    errors=$(awk '/Non-2xx|Socket errors/' <<<"$out")
    printf '%-14s %10s %10s %10s\n' "$mode" "$(awk '/Requests\/sec/{print $2}' <<<"$out")" \
      "$(awk '$1=="50%"{print $2}' <<<"$out")" "$(awk '$1=="99%"{print $2}' <<<"$out")"
    [[ -z $errors ]] || echo "  $errors"
  done
done
synchronous true
rm -f "$script"
