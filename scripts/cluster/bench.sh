#!/usr/bin/env bash
# Benches through HAProxy with 1, 2 and 3 instances (scripts/cluster/cluster.sh), rate limits off.
#
#   npm run bench:cluster             reads of one pet by id (on the replica): throughput, and the CPU
#                                     each request cost: the instances' own CPU time, and the whole
#                                     machine's (balancer, PostgreSQL, Redis and wrk included)
#   npm run bench:cluster -- marks    what lists cost the primary: short pages (every one asks for a
#                                     fresh high-water mark), the marks' readings per second and the
#                                     primary's transactions per list; then lists beside creates
#
# DURATION (default 15 s), CONNECTIONS (default 32); SERVICE_DIR runs another checkout's build (the
# "before" of a change: `git worktree add`, `npm ci && npm run build` there).
set -euo pipefail
cd "$(dirname "$0")/../.."
MODE=${1:-get}
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

cluster_up() { # cluster_up N
  bash scripts/cluster/cluster.sh down >/dev/null 2>&1
  # No Prometheus: the machine's CPU per request stays comparable with the figures measured before it.
  RATE_LIMIT=off LOG_LEVEL=warn PROMETHEUS=off bash scripts/cluster/cluster.sh up "$1" 2>/dev/null
  source .cluster/env
}

create() { # create STATUS
  curl -fsS -X POST "$BALANCER_URL/v1/pets" -H "Authorization: Bearer $API_KEY" -H 'Content-Type: application/json' \
    -d "{\"name\":\"Rex\",\"categoryId\":1,\"status\":\"$1\"}" >/dev/null
}

# wrk_run SECONDS CONNECTIONS URL [SCRIPT]: wrk's report, with its latency distribution.
wrk_run() {
  wrk -t2 -c"$2" -d"${1}s" --latency -H "Authorization: Bearer $API_KEY" ${4:+-s "$4"} "$3"
}
rate() { awk '/Requests\/sec/{print $2}' <<<"$1"; }
requests() { awk '/requests in/{print $1}' <<<"$1"; }
percentile() { awk -v p="$2" '$1==p{print $2}' <<<"$1"; }
failures() { awk '/Non-2xx|Socket errors/' <<<"$1"; }

get_bench() {
  echo "$(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $(node --version), wrk -t2 -c$CONNECTIONS -d${DURATION}s GET /v1/pets/1"
  printf '%-10s %10s %12s %14s %16s\n' instances 'req/s' 'p99 ms' 'instance CPU' 'machine CPU'
  for n in 1 2 3; do
    cluster_up "$n"
    create available
    sleep 1
    # Warm-up, not measured.
    wrk -t2 -c"$CONNECTIONS" -d3s -H "Authorization: Bearer $API_KEY" "$BALANCER_URL/v1/pets/1" >/dev/null
    i0=$(instance_ticks)
    m0=$(machine_ticks)
    out=$(wrk_run "$DURATION" "$CONNECTIONS" "$BALANCER_URL/v1/pets/1")
    i1=$(instance_ticks)
    m1=$(machine_ticks)
    printf '%-10s %10s %12s %11.0f µs %13.0f µs\n' "$n" "$(rate "$out")" "$(percentile "$out" 99%)" \
      "$(echo "($i1 - $i0) / $ticks / $(requests "$out") * 1000000" | bc -l)" \
      "$(echo "($m1 - $m0) / $ticks / $(requests "$out") * 1000000" | bc -l)"
    [[ -z $(failures "$out") ]] || echo "  $(failures "$out")"
  done
}

# One value from node I's PostgreSQL (the petstore database).
on_node() { psql -XAtq -h 127.0.0.1 -p "$(eval echo "\$NODE_${1}_PG_PORT")" -U postgres -d petstore -c "$2"; }
leader_node() { local name; name=$(bash scripts/cluster/cluster.sh leader) && echo "${name#node}"; }
# The high-water mark's readings (the statement reading pg_sequence_last_value), as pg_stat_statements counts them.
readings() { on_node "$1" "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements WHERE query LIKE '%pg_sequence_last_value%'"; }
# Transactions in the petstore database, committed or rolled back, as the node's statistics have them.
transactions() { on_node "$1" "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = 'petstore'"; }
# A backend reports its transactions to the statistics when it goes idle, at most once a second,
# else within PGSTAT_IDLE_INTERVAL (10 s): counters are read once the pools have been idle that long.
STATS_SETTLE=11

# One round of short pages: a store of 10 pets listed with limit=100, so that every list is a short
# page and asks for a fresh mark. Prints: instances, lists/s, p50, p99, readings/s, readings and primary
# transactions per list.
short_pages() { # short_pages N
  local n=$1 leader out l0 l1 t0 t1 lists
  leader=$(leader_node)
  wrk -t2 -c"$CONNECTIONS" -d3s -H "Authorization: Bearer $API_KEY" "$BALANCER_URL/v1/pets?limit=100" >/dev/null
  sleep "$STATS_SETTLE"
  l0=$(readings "$leader")
  t0=$(transactions "$leader")
  out=$(wrk_run "$DURATION" "$CONNECTIONS" "$BALANCER_URL/v1/pets?limit=100")
  l1=$(readings "$leader")
  sleep "$STATS_SETTLE"
  t1=$(transactions "$leader")
  lists=$(requests "$out")
  printf '%-10s %9s %9s %9s %10.0f %13.3f %15.3f\n' "$n" "$(rate "$out")" "$(percentile "$out" 50%)" \
    "$(percentile "$out" 99%)" "$(echo "($l1 - $l0) / $DURATION" | bc -l)" \
    "$(echo "($l1 - $l0) / $lists" | bc -l)" "$(echo "($t1 - $t0 - 2) / $lists" | bc -l)"
  [[ -z $(failures "$out") ]] || echo "  $(failures "$out")"
}

# Page statements (keyset pages, the statement aggregating `page`) node I has run.
pages() { on_node "$1" "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements WHERE query LIKE '%json_agg(page%'"; }
# Per node, "leader-count total-count" of the pages read so far.
page_counts() {
  local leader=$1 i count on_leader=0 total=0
  for i in 1 2 3; do
    count=$(pages "$i")
    total=$((total + count))
    ((i == leader)) && on_leader=$count
  done
  echo "$on_leader $total"
}
primary_share() { # primary_share "BEFORE" "AFTER": the share of the pages read between them that the primary read
  read -r p0 a0 <<<"$1"
  read -r p1 a1 <<<"$2"
  echo "$(((p1 - p0) * 100 / (a1 - a0 > 0 ? a1 - a0 : 1)))%"
}

# Lists through the replicas, alone and then beside creates on the primary: lists/s, p99 and the
# share of the pages the primary read, then creates/s.
beside_writes() { # beside_writes PATH
  local path=$1 leader alone with creates_out script c0 c1 c2
  leader=$(leader_node)
  script=$(mktemp --suffix=.lua)
  printf 'wrk.method = "POST"\nwrk.body = %s\nwrk.headers["Content-Type"] = "application/json"\n' \
    "'{\"name\":\"Rex\",\"categoryId\":1}'" >"$script"
  wrk -t2 -c"$CONNECTIONS" -d3s -H "Authorization: Bearer $API_KEY" "$BALANCER_URL$path" >/dev/null
  c0=$(page_counts "$leader")
  alone=$(wrk_run "$DURATION" "$CONNECTIONS" "$BALANCER_URL$path")
  c1=$(page_counts "$leader")
  wrk_run "$DURATION" 8 "$BALANCER_URL/v1/pets" "$script" >"$script.out" &
  with=$(wrk_run "$DURATION" "$CONNECTIONS" "$BALANCER_URL$path")
  wait
  c2=$(page_counts "$leader")
  creates_out=$(cat "$script.out")
  rm -f "$script" "$script.out"
  printf '%-34s %9s %8s %9s %9s %8s %9s %10s\n' "$path" "$(rate "$alone")" "$(percentile "$alone" 99%)" \
    "$(primary_share "$c0" "$c1")" "$(rate "$with")" "$(percentile "$with" 99%)" "$(primary_share "$c1" "$c2")" \
    "$(rate "$creates_out")"
  for out in "$alone" "$with" "$creates_out"; do [[ -z $(failures "$out") ]] || echo "  $(failures "$out")"; done
}

marks_bench() {
  local alone
  echo "$(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $(node --version), $(git -C "${SERVICE_DIR:-.}" rev-parse --short HEAD)," \
    "load average $(cut -d' ' -f1-3 /proc/loadavg); wrk -t2 -c$CONNECTIONS -d${DURATION}s"
  echo "Short pages: GET /v1/pets?limit=100 on a store of 10 pets (every list asks for a fresh mark)"
  printf '%-10s %9s %9s %9s %10s %13s %15s\n' instances 'lists/s' 'p50' 'p99' 'readings/s' 'readings/list' 'primary tx/list'
  for n in 1 2 3; do
    cluster_up "$n"
    on_node "$(leader_node)" 'CREATE EXTENSION IF NOT EXISTS pg_stat_statements'
    for ((i = 0; i < 10; i++)); do create available; done
    short_pages "$n"
    ((n > 1)) || alone=$(wrk -t1 -c1 -d"${DURATION}s" --latency -H "Authorization: Bearer $API_KEY" "$BALANCER_URL/v1/pets?limit=100")
  done
  echo "One short page at a time, 1 instance (wrk -t1 -c1): $(rate "$alone") lists/s, p50 $(percentile "$alone" 50%)," \
    "p99 $(percentile "$alone" 99%)"
  echo "Lists beside creates (wrk -c8 POST /v1/pets), 3 instances: alone, then beside the creates (on primary: its share of the pages)"
  printf '%-34s %9s %8s %9s %9s %8s %9s %10s\n' list 'alone/s' 'p99' 'primary' 'beside/s' 'p99' 'primary' 'creates/s'
  for ((i = 0; i < 200; i++)); do create available; done
  for ((i = 0; i < 10; i++)); do create sold; done
  beside_writes '/v1/pets?limit=20'
  beside_writes '/v1/pets?status=sold&limit=100'
}

case $MODE in
  get) get_bench ;;
  marks) marks_bench ;;
  *) echo "usage: $0 [get | marks]" >&2; exit 2 ;;
esac
