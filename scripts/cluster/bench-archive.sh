#!/usr/bin/env bash
# What WAL archiving through pgBackRest costs creates: the bench's create scenario (POST /v1/pets,
# wrk with 2 threads) through HAProxy on the cluster of cluster.sh, with archive_mode on (every
# segment pushed to the repository by the leader, a switch every archive_timeout) and off in turn
# on the same cluster (patronictl edit-config, then a restart of every node), ROUNDS times each,
# alternating so that a change in the machine's load falls on both. Archiving is left on.
#   bash scripts/cluster/bench-archive.sh     DURATION (default 10 s), CONNECTIONS (default 16), ROUNDS (default 2)
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

archiving() { # archiving on|off: set it, restart the nodes, wait until the leader runs with it and the cluster is whole
  patronictl -c "$PG_DIR/node1.yml" edit-config --force -p "archive_mode=$1" >/dev/null
  for ((i = 0; i < 100; i++)); do
    patronictl -c "$PG_DIR/node1.yml" list -f json | grep -q '"Pending restart": "\*"' && break
    sleep 0.2
  done
  patronictl -c "$PG_DIR/node1.yml" restart petstore --force >/dev/null
  for ((i = 0; i < 600; i++)); do
    [[ $(psql "$PRIMARY_URL" -Atc "SHOW archive_mode" 2>/dev/null) == "$1" ]] && bash scripts/cluster/cluster.sh healthy &&
      curl -fsS "$BALANCER_URL/readyz" >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  echo "archive_mode=$1 not applied" >&2
  return 1
}

echo "$(date -u +%Y-%m-%dT%H:%MZ), $(git rev-parse --short HEAD), $(nproc) cores, $(node --version), wrk -t2 -c$CONNECTIONS -d${DURATION}s POST /v1/pets, archive_timeout $(psql "$PRIMARY_URL" -Atc 'SHOW archive_timeout')"
printf '%-14s %10s %10s %10s %12s\n' archive_mode 'creates/s' 'p50 ms' 'p99 ms' 'segments'
wrk -t2 -c"$CONNECTIONS" -d3s -s "$script" "$BALANCER_URL/v1/pets" >/dev/null # warm-up
for ((round = 1; round <= ROUNDS; round++)); do
  for mode in on off; do
    archiving "$mode"
    before=$(psql "$PRIMARY_URL" -Atc "SELECT archived_count FROM pg_stat_archiver")
    out=$(wrk -t2 -c"$CONNECTIONS" -d"${DURATION}s" --latency -s "$script" "$BALANCER_URL/v1/pets")
    after=$(psql "$PRIMARY_URL" -Atc "SELECT archived_count FROM pg_stat_archiver")
    errors=$(awk '/Non-2xx|Socket errors/' <<<"$out")
    printf '%-14s %10s %10s %10s %12s\n' "$mode" "$(awk '/Requests\/sec/{print $2}' <<<"$out")" \
      "$(awk '$1=="50%"{print $2}' <<<"$out")" "$(awk '$1=="99%"{print $2}' <<<"$out")" "$((after - before)) archived"
    [[ -z $errors ]] || echo "  $errors"
  done
done
archiving on
rm -f "$script"
