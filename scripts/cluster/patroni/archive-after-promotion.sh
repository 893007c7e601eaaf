#!/usr/bin/env bash
# Patroni's on_role_change callback on every node (scripts/cluster/cluster.sh copies it into the
# clusters' directory, where the user postgres can read it). When the node has just been promoted,
# it archives the WAL of the old timeline that it holds and the repository lacks.
#
# Why: archive_mode is `on`, because pgBackRest refuses `always` (two archivers into one
# repository). With `on`, a replica marks each segment it receives as archived already, so a
# segment the old leader completed but had not archived when it was lost (or stopped) would be
# missing from the archive forever: a gap no restore across it could pass. The new leader has those
# segments (it streamed them, and wal_keep_size keeps them); this pushes each one that is older than
# the timeline switch and absent from the repository. A segment already there is skipped
# (archive-push of an identical one is a no-op anyway).
#
#   archive-after-promotion.sh PG_BIN PGBACKREST_CONFIG DATA_DIR SOCKET_DIR PORT   then Patroni's: ACTION ROLE SCOPE
set -uo pipefail
pg_bin=$1 config=$2 data=$3 socket=$4 port=$5 role=${7:-}
[[ $role == master || $role == primary ]] || exit 0
log() { echo "$(date -u +%FT%T.%3NZ) $*"; }
sql() { "$pg_bin/psql" -X -Atq -h "$socket" -p "$port" -U postgres -d postgres -c "$1"; }
pgbackrest() { command pgbackrest --config="$config" --stanza=petstore "$@"; }

# Patroni calls this as the promotion starts; the history file of the new timeline is written at
# its end.
for ((i = 0; i < 600; i++)); do
  [[ $(sql 'SELECT pg_is_in_recovery()' 2>/dev/null) == f ]] && break
  sleep 0.1
done
timeline=$(sql 'SELECT substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8)') || { log "cannot read the timeline"; exit 1; }
history=$data/pg_wal/$timeline.history
[[ -f $history ]] || { log "no $history: nothing to archive"; exit 0; }
# The history file's last line: the parent timeline and where this one branched off it.
read -r parent switch _ < <(grep -v '^#' "$history" | grep . | tail -1)
segment_size=$(sql "SELECT setting FROM pg_settings WHERE name = 'wal_segment_size'")
per_id=$((0x100000000 / segment_size))
switch_segment=$(((0x${switch%/*} * 0x100000000 + 0x${switch#*/}) / segment_size))
parent_hex=$(printf '%08X' "$parent")
archive_id=$(pgbackrest info --output=json | grep -o '"id":"[0-9]*-[0-9]*"' | tail -1 | cut -d'"' -f4)

pushed=0 present=0
declare -A listed=()
for file in "$data"/pg_wal/"$parent_hex"*; do
  name=${file##*/}
  [[ $name =~ ^[0-9A-F]{24}$ ]] || continue
  segment=$((0x${name:8:8} * per_id + 0x${name:16:8}))
  ((segment < switch_segment)) || continue
  directory=${name:0:16}
  [[ -v listed[$directory] ]] || listed[$directory]=$(pgbackrest repo-ls "archive/petstore/$archive_id/$directory" 2>/dev/null)
  if grep -q "^$name-" <<<"${listed[$directory]}"; then
    ((present++))
    continue
  fi
  if pgbackrest archive-push "$file"; then
    ((pushed++))
    log "archived $name, which the repository lacked"
  else
    log "could not archive $name"
  fi
done
log "promoted to timeline $timeline (from $parent_hex at $switch): $pushed segments of the old timeline archived, $present there already"
