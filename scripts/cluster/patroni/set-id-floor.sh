#!/usr/bin/env bash
# Patroni's post_bootstrap of a restored cluster (scripts/cluster/backups.sh): pets' id sequence set
# above every id the cluster handed out before the restore (the floor restore wrote). Patroni runs
# it once the restored node is promoted, before it takes the leader key: until then the node's
# /primary answers 503 and HAProxy's writer port sends it no connection, so no create draws an id
# below the floor. A failure here fails the bootstrap, and so the restore.
#
#   set-id-floor.sh PG_BIN SOCKET_DIR PORT FLOOR_FILE   then Patroni's connection string
set -euo pipefail
pg_bin=$1 socket=$2 port=$3 floor_file=$4
floor=$(cat "$floor_file")
[[ $floor =~ ^[0-9]+$ ]] || { echo "set-id-floor: $floor_file holds no id: '$floor'" >&2; exit 1; }
sql() { "$pg_bin/psql" -X -Atq -v ON_ERROR_STOP=1 -h "$socket" -p "$port" -U postgres -d petstore -c "$1"; }
if [[ $(sql "SELECT to_regclass('public.pets') IS NOT NULL") != t ]]; then
  ((floor == 0)) && exit 0
  echo "set-id-floor: the restored database has no pets table, but ids up to $floor were handed out: restore to a later time" >&2
  exit 1
fi
sql "SELECT setval(s, GREATEST($floor, COALESCE(pg_sequence_last_value(s), 0)), true)
  FROM (SELECT pg_get_serial_sequence('public.pets', 'id')::regclass AS s) AS pets_ids" >/dev/null
echo "$(date +%s%3N) $floor" >"${floor_file}-set-at"
echo "set-id-floor: pets' ids continue above $floor"
