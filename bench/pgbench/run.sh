#!/usr/bin/env bash
# Creates per second with 16 clients: the obvious app's plain INSERT on a table without triggers;
# the service's create on the table as issue 44 left it (a trigger takes the pets advisory lock);
# the service's create now (issue 52: a trigger notes the floor, the table lock marks the writer);
# then each of the two beside its high-water mark's reading at a fixed rate, as pages that reach the
# end of the table read it. The three creates alternate their order round by round, so that drift on
# the machine hits them alike; compare them within a round. Figures in docs/performance.md.
#   bash bench/pgbench/run.sh [postgres URL, default $DATABASE_URL]   SECONDS_EACH=10 ROUNDS=2 MARKS_PER_SECOND=200
set -euo pipefail
url="${1:-${DATABASE_URL:?a PostgreSQL URL}}"
here="$(cd "$(dirname "$0")" && pwd)"
pgbench="$(command -v pgbench || echo /usr/lib/postgresql/15/bin/pgbench)"
seconds="${SECONDS_EACH:-10}"
rounds="${ROUNDS:-2}"
marks="${MARKS_PER_SECOND:-200}"
psql -q "$url" -f "$here/schema.sql" 2>/dev/null

# on SCHEMA ARGS...: pgbench on one of schema.sql's tables.
on() { PGOPTIONS="-c search_path=$1" "$pgbench" -n -M prepared "${@:2}" "$url"; }
tps() { on "$@" -c 16 -j 2 -T "$seconds" 2>&1 | sed -n 's/^tps = \([0-9.]*\) .*/\1/p'; }
served() { sed -n 's/^tps = \([0-9.]*\) .*/\1/p' /tmp/pgbench-marks.log; }

for round in $(seq "$rounds"); do
  declare -A rate=()
  order=(plain before now)
  if ((round % 2 == 0)); then order=(now before plain); fi
  for create in "${order[@]}"; do
    case "$create" in
      plain) rate[plain]="$(tps pgbench_plain_pets -f "$here/create.sql")" ;;
      before) rate[before]="$(tps pgbench_pets_before -f "$here/create.sql")" ;;
      now) rate[now]="$(tps pgbench_pets -f "$here/create.sql")" ;;
    esac
  done
  echo "round $round: plain INSERT, no trigger (the obvious app) ${rate[plain]} creates/s"
  echo "round $round: the service's create before issue 52 (the advisory lock's trigger) ${rate[before]} creates/s"
  echo "round $round: the service's create now (the floor's trigger) ${rate[now]} creates/s"
  awk -v p="${rate[plain]}" -v b="${rate[before]}" -v n="${rate[now]}" -v r="$round" \
    'BEGIN { printf "round %s: / plain INSERT: before %.2f, now %.2f; now / before %.2f\n", r, b / p, n / p, n / b }'
  for table in pgbench_pets_before pgbench_pets; do
    reading="$here/reading.sql"
    [[ $table == pgbench_pets_before ]] && reading="$here/reading-before.sql"
    on "$table" -c 1 -R "$marks" -T "$seconds" -f "$reading" >/tmp/pgbench-marks.log 2>&1 &
    beside="$(tps "$table" -f "$here/create.sql")"
    wait
    echo "round $round: $table, $marks readings/s asked alongside $beside creates/s ($(served) readings/s, latency $(sed -n 's/^latency average = //p' /tmp/pgbench-marks.log))"
  done
done
