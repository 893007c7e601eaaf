# Backups of the cluster (sourced by scripts/cluster/cluster.sh, whose helpers it uses): pgBackRest
# (Debian's 2.45) archives the WAL of whichever node leads and takes backups from the leader, into a
# repository on local disk in the clusters' directory; `restore` brings the whole cluster back
# under Patroni at a point in time, with pets_id_seq set above every id ever handed out before any
# instance can write. docs/operations.md ("Backups and restores") is the runbook; deploy/pgbackrest/
# has the object-store settings of a real deployment.
#
# Layout, in $PG_DIR/backup (the user postgres owns it):
#   repo/         the repository (stanza petstore): backups and the WAL archive
#   node<i>.conf  pgBackRest's configuration as node i: the repository, and pg1 = node i's data
#                 directory and port (archive-push resolves %p against pg1-path)
#   log/ lock/    pgBackRest's logs and locks, apart from any other cluster on the machine
#   id-floor      during and after a restore: the ids the restored cluster must stay above
STANZA=petstore
# Full backups kept (and the WAL that the oldest of them needs): what a restore can reach back to.
BACKUP_RETENTION_FULL=${BACKUP_RETENTION_FULL:-2}
# A WAL segment is archived at least this often while anything is written: what a lost cluster
# can lose, and how far the id bound read from the archive can be behind (docs/operations.md).
ARCHIVE_TIMEOUT=${ARCHIVE_TIMEOUT:-10}
# Ids the restore of a lost cluster adds above the sequence read from the archive: the ids that
# WAL not yet archived when the cluster was lost may have handed out (docs/operations.md).
RESTORE_ID_MARGIN=${RESTORE_ID_MARGIN:-1000000}

backup_dir() { echo "$PG_DIR/backup"; }

# pgb I ARGS...: pgBackRest as node I, as the user postgres.
pgb() {
  local i=$1
  shift
  as_pg pgbackrest --config="$PG_DIR/backup/node$i.conf" --stanza=$STANZA "$@"
}

# The pieces of each node's Patroni configuration that archive and restore through pgBackRest.
archive_command() { echo "pgbackrest --config=$PG_DIR/backup/node$1.conf --stanza=$STANZA archive-push %p"; }
restore_command() { echo "pgbackrest --config=$PG_DIR/backup/node$1.conf --stanza=$STANZA archive-get %f \"%p\""; }

# The bootstrap command of a restore: backup RESTORE_SET into node I's data directory, to recover to
# RESTORE_TARGET (or to the end of the archive). Patroni then writes the recovery settings itself
# (recovery_conf in write_node_config) in place of the ones pgBackRest wrote.
restore_from_backup_command() {
  local type="--type=default"
  [[ -n ${RESTORE_TARGET:-} ]] && type="--type=time \"--target=$RESTORE_TARGET\" --target-action=promote"
  echo "'pgbackrest --config=$PG_DIR/backup/node$1.conf --stanza=$STANZA --set=$RESTORE_SET $type restore'"
}

write_backup_configs() {
  local i port_var dir=$PG_DIR/backup
  as_pg mkdir -p "$dir/repo" "$dir/log" "$dir/lock" "$PG_DIR/bin"
  for ((i = 1; i <= 3; i++)); do
    port_var="NODE_${i}_PG_PORT"
    # lz4: the cheapest compression in CPU, on a machine whose two cores the whole cluster shares.
    # start-fast: a backup starts with an immediate checkpoint, not a spread one.
    as_pg tee "$dir/node$i.conf" >/dev/null <<CONF
[global]
repo1-path=$dir/repo
repo1-retention-full=$BACKUP_RETENTION_FULL
compress-type=lz4
start-fast=y
archive-timeout=60
log-path=$dir/log
lock-path=$dir/lock
log-level-console=warn
log-level-file=info

[$STANZA]
pg1-path=$PG_DIR/node$i
pg1-port=${!port_var}
pg1-socket-path=$PG_DIR
pg1-user=postgres
CONF
  done
  # Run by Patroni, as the user postgres, who may not read a checkout in a root-only directory.
  as_pg tee "$PG_DIR/bin/archive-after-promotion.sh" >/dev/null <scripts/cluster/patroni/archive-after-promotion.sh
  as_pg tee "$PG_DIR/bin/set-id-floor.sh" >/dev/null <scripts/cluster/patroni/set-id-floor.sh
  as_pg chmod 755 "$PG_DIR/bin/archive-after-promotion.sh" "$PG_DIR/bin/set-id-floor.sh"
}

# After the first leader is up: the stanza, so that its WAL is archived from the start.
create_stanza() {
  pgb 1 stanza-create >/dev/null
}

leader_index() {
  local name
  name=$(leader) || { log "no leader: the cluster does not run"; return 1; }
  echo "${name#node}"
}

backup() { # backup [full|diff|incr]
  local type=${1:-full} i
  [[ $type =~ ^(full|diff|incr)$ ]] || { log "backup type must be full, diff or incr, not '$type'"; return 2; }
  i=$(leader_index)
  pgb "$i" --type="$type" backup
  newest_backup "$i"
}

# "LABEL TYPE STOP-TIME" of the newest backup.
newest_backup() {
  pgb "$1" info --output=json | node -e '
    let s = ""; process.stdin.on("data", (c) => (s += c)).on("end", () => {
      const b = JSON.parse(s)[0]?.backup.at(-1);
      if (!b) process.exit(1);
      console.log(b.label, b.type, new Date(b.timestamp.stop * 1000).toISOString());
    });'
}

# pgbackrest check (the leader archives: a WAL switch reaches the repository) and verify (every
# file of the repository reads back with its checksum).
check_backups() {
  local i
  i=$(leader_index)
  pgb "$i" check
  pgb "$i" verify
  pgb "$i" info
}

# ---------------------------------------------------------------------------------------------
# restore TARGET: TARGET is `latest` (everything the archive holds) or an ISO 8601 time with its
# offset, read as the primary's clock reads it (recovery_target_time compares it with the commit
# time stamps the primary wrote).

restore() {
  local target=${1:-} started=$SECONDS target_sql="" target_epoch="" backups live=0 now backup_set floor bound last_commit
  if [[ $target == latest ]]; then
    :
  elif [[ $target =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}[T\ ][0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]{1,6})?)?(Z|[+-][0-9]{2}(:?[0-9]{2})?)$ ]] &&
    target_epoch=$(date -u -d "$target" +%s.%6N 2>/dev/null); then
    target_sql=$(date -u -d "$target" '+%Y-%m-%d %H:%M:%S.%6N+00')
  else
    refuse "'$target' is not a time to restore to: give an ISO 8601 time with its offset (2026-11-29T10:00:00Z, 2026-11-29T11:00:00.250+01:00), or latest"
  fi
  # A fence left up (a refusal, a failure) must not hold the old primary's pets.
  trap release_fence EXIT
  backups=$(backups_json) || refuse "the repository has no backup to restore from: take one first (cluster.sh backup full)"

  # The old cluster still answers (a mistake, not a loss): its primary's clock bounds the time, and
  # its sequence is the exact bound on the ids it handed out.
  if now=$(primary_sql "SELECT extract(epoch FROM clock_timestamp())" 2>/dev/null) && [[ -n $now ]]; then live=1; fi
  if [[ -n $target_epoch ]] && ((live)) && ! awk -v t="$target_epoch" -v n="$now" 'BEGIN { exit !(t < n) }'; then
    refuse "$target is not in the past on the primary's clock (it reads $(date -u -d "@$now" +%FT%T.%3NZ))"
  fi
  if [[ -n $target_epoch ]]; then
    # The newest backup that ended before the target (a second before: a backup's stop time is
    # whole seconds, and recovery must pass the backup's end before it may stop).
    backup_set=$(node -e '
      const [backups, target] = [JSON.parse(process.argv[1]), Number(process.argv[2])];
      const usable = backups.filter((b) => b.timestamp.stop + 1 <= target);
      if (usable.length === 0) {
        const first = backups[0];
        console.log(`-${new Date(first.timestamp.stop * 1000).toISOString()}`);
      } else console.log(usable.at(-1).label);' "$backups" "$target_epoch")
    [[ $backup_set == -* ]] && refuse "$target is before the end of the oldest backup the repository keeps (${backup_set#-}): nothing earlier can be restored"
  else
    backup_set=$(node -e 'console.log(JSON.parse(process.argv[1]).at(-1).label)' "$backups")
  fi

  floor=0
  [[ -f $(backup_dir)/id-floor ]] && floor=$(as_pg cat "$(backup_dir)/id-floor")
  if ((live)); then
    log "the old cluster answers: writes stopped on its primary, its sequence read, the WAL up to now archived"
    fence_writes
    bound=$FENCED_BOUND
    # A commit after the target, so that recovery finds where to stop even when nothing else was
    # written since; then a WAL switch that pgbackrest check waits to see archived.
    primary_sql "SELECT pg_current_xact_id()" >/dev/null
    pgb "$(leader_index)" check || { release_fence; refuse "the WAL up to now did not reach the repository (pgbackrest check failed above): the archive cannot give this restore what it needs"; }
    log "ids handed out so far: up to $bound (the old primary's pets_id_seq); $((SECONDS - started)) s"
  else
    log "the old cluster does not answer: the id bound comes from the archive (a throwaway recovery to its end)"
    read -r bound last_commit < <(read_archive_end) || refuse "the throwaway recovery of the archive failed (above): cannot tell which ids were handed out"
    if [[ -n $target_epoch ]] && ! awk -v t="$target_epoch" -v l="$last_commit" 'BEGIN { exit !(t < l) }'; then
      refuse "$target is not before the last commit the archive holds ($(date -u -d "@$last_commit" +%FT%T.%6NZ)): restore to latest for all of it"
    fi
    log "the archive's pets_id_seq is at $bound, its last commit at $(date -u -d "@$last_commit" +%FT%T.%6NZ); $RESTORE_ID_MARGIN ids added for WAL it may lack"
    bound=$((bound + RESTORE_ID_MARGIN))
  fi
  ((bound > floor)) && floor=$bound
  [[ -n ${RESTORE_IDS_ABOVE:-} ]] && ((RESTORE_IDS_ABOVE > floor)) && floor=$RESTORE_IDS_ABOVE
  # Kept across attempts: a restore that fails after the old cluster is gone keeps the exact bound.
  echo "$floor" | as_pg tee "$(backup_dir)/id-floor" >/dev/null

  # Killed, not stopped: their data goes, and all at once no node can be promoted as another stops.
  log "$(kill_nodes) processes of the old nodes killed; $((SECONDS - started)) s"
  release_fence
  forget_cluster
  local i
  for ((i = 1; i <= 3; i++)); do as_pg rm -rf "$PG_DIR/node$i"; done
  as_pg rm -f "$(backup_dir)/id-floor-set-at"

  log "restoring backup $backup_set to ${target_sql:-the end of the archive}${target_sql:+ (recovery_target_time, read on the clock of the primary)}; new ids above $floor ($((SECONDS - started)) s after the restore began)"
  RESTORE_SET=$backup_set RESTORE_TARGET=$target_sql
  for ((i = 1; i <= 3; i++)); do write_node_config "$i"; done
  # All three at once: node1 takes the initialize key first, and the others wait for it to lead
  # before they restore their own copy (Patroni's start is seconds on a busy machine).
  local log_size
  log_size=$(stat -c %s "$DIR/patroni-1.log" 2>/dev/null || echo 0)
  start_patroni 1
  wait_for 120 "node1 bootstrapping (log $DIR/patroni-1.log)" logged_since "$DIR/patroni-1.log" "$log_size" "Running custom bootstrap script"
  start_patroni 2
  start_patroni 3
  wait_for 1800 "node1 restored and leading (log $DIR/patroni-1.log)" rest 1 /primary || { log_tail "$DIR/patroni-1.log"; return 1; }
  log "node1 leads and takes writes, $((SECONDS - started)) s after the restore began"
  wait_for 900 "node2 as a replica (log $DIR/patroni-2.log)" rest 2 /replica
  wait_for 900 "node3 as a replica (log $DIR/patroni-3.log)" rest 3 /replica
  wait_for 120 "a synchronous standby" sync_standby
  wait_for 300 "three healthy nodes" healthy || { log "Patroni: $(view)"; return 1; }
  # Back to the configuration of every day: no bootstrap from a backup, replicas from the newest one.
  RESTORE_SET="" RESTORE_TARGET=""
  for ((i = 1; i <= 3; i++)); do write_node_config "$i"; done
  # shellcheck disable=SC2046 # one pid per word
  kill -HUP $(cat "$DIR"/patroni-[123].pid)
  log "restored: three nodes, $((SECONDS - started)) s after the restore began; take a full backup of the new timeline (cluster.sh backup full)"
}

refuse() {
  log "restore refused: $*"
  exit 3
}

logged_since() { tail -c +$(($2 + 1)) "$1" | grep -q "$3"; } # logged_since FILE OFFSET TEXT

log_tail() { log "last lines of $1:"; tail -n 20 "$1" >&2 || true; }

primary_sql() { # primary_sql SQL: one value, on the leader through HAProxy's writer port
  as_pg "$PG_BIN/psql" -X -Atq -v ON_ERROR_STOP=1 \
    "host=127.0.0.1 port=$PRIMARY_PORT dbname=petstore user=postgres connect_timeout=3" -c "$1"
}

backups_json() { # the repository's backups, oldest first, as a JSON array; fails when there is none
  local i json
  # Any node's configuration names the repository; the stanza's info needs no running database.
  for ((i = 1; i <= 3; i++)); do json=$(pgb "$i" info --output=json 2>/dev/null) && break; done
  node -e '
    const backups = JSON.parse(process.argv[1])[0]?.backup ?? [];
    if (backups.length === 0) process.exit(1);
    console.log(JSON.stringify(backups));' "${json:-[]}"
}

# Holds an EXCLUSIVE lock on pets on the old primary (every insert waits: no id is drawn any more)
# and reads the sequence there: FENCED_BOUND, every id it handed out. The lock's session (the
# coprocess FENCE, its pid in FENCE_PID) lives until the primary is killed, then release_fence
# ends it.
FENCE_PID=""
fence_writes() {
  local line
  FENCED_BOUND=0
  [[ $(primary_sql "SELECT to_regclass('public.pets') IS NOT NULL") == t ]] || return 0
  # setpriv_pg: the coprocess is psql itself, so that release_fence ends it.
  coproc FENCE { cd / && setpriv_pg "$PG_BIN/psql" -X -Atq -v ON_ERROR_STOP=1 \
    "host=127.0.0.1 port=$PRIMARY_PORT dbname=petstore user=postgres connect_timeout=3" 2>&1; }
  echo "SET lock_timeout = '20s'; BEGIN; LOCK TABLE pets IN EXCLUSIVE MODE;
    SELECT 'bound ' || COALESCE(pg_sequence_last_value(pg_get_serial_sequence('pets', 'id')::regclass), 0);" >&"${FENCE[1]}"
  read -r -t 60 line <&"${FENCE[0]}" || true
  [[ $line =~ ^bound\ ([0-9]+)$ ]] || { release_fence; refuse "could not stop writes on the old primary: ${line:-no answer within 60 s}"; }
  FENCED_BOUND=${BASH_REMATCH[1]}
}

release_fence() {
  [[ -n $FENCE_PID ]] || return 0
  kill "$FENCE_PID" 2>/dev/null || true
  wait "$FENCE_PID" 2>/dev/null || true
  FENCE_PID=""
}

# A throwaway recovery of the newest backup to the end of the archive, in a scratch directory:
# prints the sequence of pets there and the time of the last commit it replayed. archive_mode is
# off there and it listens on no TCP port: it neither writes to the repository nor takes any
# client. Its WAL records of the sequence are logged ahead of the ids drawn, which is on the safe side.
read_archive_end() {
  local scratch=$PG_DIR/archive-end pid i answer
  as_pg rm -rf "$scratch"
  as_pg mkdir -m 700 "$scratch"
  pgb 1 --pg1-path="$scratch" --type=default restore >&2 || return 1
  # The configuration in the backup is the old node's: its hba and ident files, its port, its
  # archiving, all overridden here.
  (
    cd "$scratch"
    setpriv_pg "$PG_BIN/postgres" -D "$scratch" -c listen_addresses='' -c unix_socket_directories="$scratch" \
      -c port=5432 -c archive_mode=off -c hot_standby=off -c hba_file="$scratch/pg_hba.conf" \
      -c ident_file="$scratch/pg_ident.conf" -c primary_conninfo='' -c primary_slot_name='' \
      -c synchronous_standby_names='' -c recovery_target_timeline=latest -c logging_collector=off \
      -c restore_command="pgbackrest --config=$PG_DIR/backup/node1.conf --pg1-path=$scratch --stanza=$STANZA archive-get %f \"%p\"" \
      >"$PG_DIR/archive-end.log" 2>&1
  ) &
  pid=$!
  # hot_standby is off: it takes connections once recovery has reached the end of the archive.
  for ((i = 0; ; i++)); do
    if ! alive "$pid"; then log_tail "$PG_DIR/archive-end.log"; return 1; fi
    as_pg "$PG_BIN/pg_isready" -q -h "$scratch" -p 5432 && break
    ((i < 18000)) || { log "the throwaway recovery did not end within 30 minutes"; kill -QUIT "$pid"; return 1; }
    sleep 0.1
  done
  answer=$(as_pg "$PG_BIN/psql" -X -Atq -h "$scratch" -p 5432 -U postgres -d petstore -c "
    SELECT CASE WHEN to_regclass('public.pets') IS NULL THEN 0
      ELSE COALESCE(pg_sequence_last_value(pg_get_serial_sequence('public.pets', 'id')::regclass), 0) END" \
    -c "SELECT extract(epoch FROM pg_last_xact_replay_timestamp())")
  kill -QUIT "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  as_pg rm -rf "$scratch"
  echo $answer
}

# Runs a program as the user postgres and replaces this process (so its pid is the program's).
setpriv_pg() {
  if ((EUID == 0)); then exec setpriv --reuid=postgres --regid=postgres --init-groups -- "$@"; fi
  exec "$@"
}

# The old cluster's state in etcd (leader, members, its configuration, its initialize key), so
# that the restored node bootstraps a new one. patronictl remove asks for the leader's name while
# a leader key is still there (a lost leader's, until its ttl runs out).
forget_cluster() {
  local lead
  # The leader key's value, read from etcd's own JSON gateway (a Python start less than patronictl list).
  lead=$(curl -fsS -m 5 "http://127.0.0.1:$ETCD_PORT/v3/kv/range" \
    -d "{\"key\": \"$(printf /service/petstore/leader | base64 -w0)\"}" |
    node -e 'let s = ""; process.stdin.on("data", (c) => (s += c)).on("end", () => {
      const value = JSON.parse(s).kvs?.[0]?.value;
      if (value) console.log(Buffer.from(value, "base64").toString());
    });') || lead=""
  printf '%s\n%s\n%s\n' petstore 'Yes I am aware' "$lead" | patronictl -c "$PG_DIR/node1.yml" remove petstore >>"$DIR/patronictl.log" 2>&1
}
