#!/usr/bin/env bash
# Creates per second with 16 clients: the obvious app's plain INSERT, the service's create (the id
# drawn under the pets lock taken shared) alone, with settled marks read alongside (issue 41's look,
# and the barrier before it), and the create before issue 29 (the lock taken exclusive). Rounds alternate the statements, so that drift
# on the machine hits them alike. Figures in docs/performance.md.
#   bash bench/pgbench/run.sh [postgres URL, default $DATABASE_URL]   SECONDS_EACH=10 ROUNDS=2 MARKS_PER_SECOND=200
set -euo pipefail
url="${1:-${DATABASE_URL:?a PostgreSQL URL}}"
here="$(cd "$(dirname "$0")" && pwd)"
pgbench="$(command -v pgbench || echo /usr/lib/postgresql/15/bin/pgbench)"
seconds="${SECONDS_EACH:-10}"
rounds="${ROUNDS:-2}"
marks="${MARKS_PER_SECOND:-200}"
export PGOPTIONS='-c search_path=pgbench_pets'
psql -q "$url" -f "$here/schema.sql" 2>/dev/null

tps() { "$pgbench" -n -c 16 -j 2 -T "$seconds" "$@" "$url" 2>&1 | sed -n 's/^tps = \([0-9.]*\) .*/\1/p'; }

for round in $(seq "$rounds"); do
  echo "round $round: plain INSERT $(tps -f "$here/plain-insert.sql") creates/s"
  echo "round $round: shared lock (the service) $(tps -f "$here/create.sql") creates/s"
  # A second pgbench reads marks at a fixed rate, as pages that reach the end of the table do.
  "$pgbench" -n -c 1 -R "$marks" -T "$seconds" -f "$here/settle.sql" "$url" >/tmp/pgbench-marks.log 2>&1 &
  with_marks="$(tps -f "$here/create.sql")"
  wait
  echo "round $round: shared lock, $marks marks/s alongside $with_marks creates/s ($(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' /tmp/pgbench-marks.log) marks/s)"
  "$pgbench" -n -c 1 -R "$marks" -T "$seconds" -f "$here/barrier-settle.sql" "$url" >/tmp/pgbench-marks.log 2>&1 &
  with_barrier="$(tps -f "$here/create.sql")"
  wait
  echo "round $round: shared lock, $marks barrier marks/s (before issue 41) alongside $with_barrier creates/s ($(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' /tmp/pgbench-marks.log) marks/s)"
  echo "round $round: exclusive lock (before issue 29) $(tps -f "$here/exclusive-create.sql") creates/s"
done
