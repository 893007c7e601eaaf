#!/usr/bin/env bash
# Creates per second with 16 clients: the obvious app's plain INSERT on a table without the trigger;
# the service's create before issue 44 (the statement takes the pets lock shared) on that table; the
# service's create now (a plain INSERT, the table's trigger takes the lock) on the service's table,
# alone and with settled marks read alongside (issue 41's look, and the barrier before it); and the
# create before issue 29 (the lock taken exclusive). The first three alternate their order round by
# round, so that drift on the machine hits them alike; compare them within a round. Figures in
# docs/performance.md.
#   bash bench/pgbench/run.sh [postgres URL, default $DATABASE_URL]   SECONDS_EACH=10 ROUNDS=2 MARKS_PER_SECOND=200
set -euo pipefail
url="${1:-${DATABASE_URL:?a PostgreSQL URL}}"
here="$(cd "$(dirname "$0")" && pwd)"
pgbench="$(command -v pgbench || echo /usr/lib/postgresql/15/bin/pgbench)"
seconds="${SECONDS_EACH:-10}"
rounds="${ROUNDS:-2}"
marks="${MARKS_PER_SECOND:-200}"
psql -q "$url" -f "$here/schema.sql" 2>/dev/null

# on SCHEMA ARGS...: pgbench on the service's table (pgbench_pets) or the one without the trigger (pgbench_plain_pets).
on() { PGOPTIONS="-c search_path=$1" "$pgbench" -n "${@:2}" "$url"; }
tps() { on "$@" -c 16 -j 2 -T "$seconds" 2>&1 | sed -n 's/^tps = \([0-9.]*\) .*/\1/p'; }
served() { sed -n 's/^tps = \([0-9.]*\) .*/\1/p' /tmp/pgbench-marks.log; }

for round in $(seq "$rounds"); do
  declare -A rate=()
  order=(plain statement trigger)
  if ((round % 2 == 0)); then order=(trigger statement plain); fi
  for create in "${order[@]}"; do
    case "$create" in
      plain) rate[plain]="$(tps pgbench_plain_pets -f "$here/plain-insert.sql")" ;;
      statement) rate[statement]="$(tps pgbench_plain_pets -f "$here/statement-lock-create.sql")" ;;
      trigger) rate[trigger]="$(tps pgbench_pets -f "$here/create.sql")" ;;
    esac
  done
  echo "round $round: plain INSERT, no trigger (the obvious app) ${rate[plain]} creates/s"
  echo "round $round: the lock in the statement, no trigger (the service before issue 44) ${rate[statement]} creates/s"
  echo "round $round: plain INSERT, the trigger takes the lock (the service) ${rate[trigger]} creates/s"
  awk -v p="${rate[plain]}" -v s="${rate[statement]}" -v t="${rate[trigger]}" -v r="$round" \
    'BEGIN { printf "round %s: / plain INSERT: statement %.2f, trigger %.2f; trigger / statement %.2f\n", r, s / p, t / p, t / s }'
  # A second pgbench reads marks at a fixed rate, as pages that reach the end of the table do.
  on pgbench_pets -c 1 -R "$marks" -T "$seconds" -f "$here/settle.sql" >/tmp/pgbench-marks.log 2>&1 &
  with_marks="$(tps pgbench_pets -f "$here/create.sql")"
  wait
  echo "round $round: the service, $marks marks/s alongside $with_marks creates/s ($(served) marks/s)"
  on pgbench_pets -c 1 -R "$marks" -T "$seconds" -f "$here/barrier-settle.sql" >/tmp/pgbench-marks.log 2>&1 &
  with_barrier="$(tps pgbench_pets -f "$here/create.sql")"
  wait
  echo "round $round: the service, $marks barrier marks/s (before issue 41) alongside $with_barrier creates/s ($(served) marks/s)"
  echo "round $round: exclusive lock, no trigger (before issue 29) $(tps pgbench_plain_pets -f "$here/exclusive-create.sql") creates/s"
done
