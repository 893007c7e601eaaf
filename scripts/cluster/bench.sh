#!/usr/bin/env bash
# Throughput through HAProxy with 1, 2 and 3 instances (scripts/cluster/cluster.sh), and the CPU
# each request cost: the instances' own CPU time, and the whole machine's (balancer, PostgreSQL,
# Redis and wrk included). Rate limits off; reads of one pet by id, on the replica.
#   npm run bench:cluster            DURATION (default 15 s), CONNECTIONS (default 32)
set -euo pipefail
cd "$(dirname "$0")/../.."
DURATION=${DURATION:-15}
CONNECTIONS=${CONNECTIONS:-32}
command -v wrk >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null; }
trap 'bash scripts/cluster/cluster.sh down >/dev/null 2>&1 || true' EXIT
ticks=$(getconf CLK_TCK)

instance_ticks() { # utime + stime of every instance, in clock ticks
  local total=0 pid
  for file in .cluster/instance-*.pid; do
    pid=$(cat "$file")
    total=$((total + $(awk '{print $14 + $15}' "/proc/$pid/stat")))
  done
  echo "$total"
}
machine_ticks() { awk '/^cpu /{print $2 + $3 + $4 + $7 + $8}' /proc/stat; } # user nice system irq softirq

echo "$(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $(node --version), wrk -t2 -c$CONNECTIONS -d${DURATION}s GET /v1/pets/1"
printf '%-10s %10s %12s %14s %16s\n' instances 'req/s' 'p99 ms' 'instance CPU' 'machine CPU'
for n in 1 2 3; do
  bash scripts/cluster/cluster.sh down >/dev/null 2>&1
  # No Prometheus: the machine's CPU per request stays comparable with the figures measured before it.
  RATE_LIMIT=off LOG_LEVEL=warn PROMETHEUS=off bash scripts/cluster/cluster.sh up "$n" 2>/dev/null
  source .cluster/env
  curl -fsS -X POST "$BALANCER_URL/v1/pets" -H "Authorization: Bearer $API_KEY" -H 'Content-Type: application/json' -d '{"name":"Rex","categoryId":1}' >/dev/null
  sleep 1
  # Warm-up, not measured.
  wrk -t2 -c"$CONNECTIONS" -d3s -H "Authorization: Bearer $API_KEY" "$BALANCER_URL/v1/pets/1" >/dev/null
  i0=$(instance_ticks)
  m0=$(machine_ticks)
  out=$(wrk -t2 -c"$CONNECTIONS" -d"${DURATION}s" --latency -H "Authorization: Bearer $API_KEY" "$BALANCER_URL/v1/pets/1")
  i1=$(instance_ticks)
  m1=$(machine_ticks)
  requests=$(awk '/requests in/{print $1}' <<<"$out")
  errors=$(awk '/Non-2xx|Socket errors/' <<<"$out")
  rps=$(awk '/Requests\/sec/{print $2}' <<<"$out")
  p99=$(awk '$1=="99%"{print $2}' <<<"$out")
  printf '%-10s %10s %12s %11.0f µs %13.0f µs\n' "$n" "$rps" "$p99" \
    "$(echo "($i1 - $i0) / $ticks / $requests * 1000000" | bc -l)" "$(echo "($m1 - $m0) / $ticks / $requests * 1000000" | bc -l)"
  [[ -z $errors ]] || echo "  $errors"
done
