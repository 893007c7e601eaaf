#!/usr/bin/env bash
# The whole topology on one machine: HAProxy (Debian's) in front of N instances of the built
# service; three PostgreSQL 15 nodes managed by Patroni (Debian's 3.0) with one etcd member (etcd3
# API) on loopback, synchronous replication, and HAProxy's writer and reader ports checking each
# node's Patroni REST API (deploy/haproxy-patroni.cfg); Redis; and Prometheus (Debian's) scraping
# every instance and every Patroni with the rules of deploy/prometheus/. Patroni and etcd are
# installed with apt-get when missing (install-patroni.sh). Everything lives under .cluster/ (pid
# files, logs, ports in .cluster/env); `down` stops every process `up` started, whatever died
# before it, and fails if any is left.
#
#   scripts/cluster/cluster.sh up [N]            build once, start everything (N instances, default 3)
#   scripts/cluster/cluster.sh down              stop everything (says what), check that nothing of the
#                                                cluster runs, remove .cluster/
#   scripts/cluster/cluster.sh stop-instance I   SIGTERM (graceful: /readyz 503 first), wait for exit
#   scripts/cluster/cluster.sh kill-instance I   SIGKILL
#   scripts/cluster/cluster.sh start-instance I  start it again, wait for /readyz 200
#   scripts/cluster/cluster.sh stop-replica | start-replica   stop one replica's Patroni (and so its
#                                                postgres), start it again and wait until it replicates
#   scripts/cluster/cluster.sh leader            print the leader's node name (node1..node3)
#   scripts/cluster/cluster.sh kill-leader       a lost host: SIGKILL the leader's Patroni, postmaster and
#                                                backends at once; prints the node's name
#   scripts/cluster/cluster.sh start-node NODE   start a node's Patroni again; waits until it replicates
#   scripts/cluster/cluster.sh lose-nodes        every node's host lost at once: SIGKILL of each Patroni,
#                                                postmaster and backend, each data directory removed (the
#                                                repository stays: restore rebuilds from it)
#   scripts/cluster/cluster.sh switchover        wait for a synchronous standby, patronictl switchover
#                                                to it; fails with patronictl's words if Patroni refuses
#   scripts/cluster/cluster.sh healthy           exit 0 when there is one leader and two streaming replicas
#   scripts/cluster/cluster.sh backup [full|diff|incr]   a pgBackRest backup of the running cluster, from
#                                                the leader (default full); prints its label, type, end
#   scripts/cluster/cluster.sh check             pgbackrest check (the leader's WAL reaches the repository),
#                                                verify (the repository reads back), info
#   scripts/cluster/cluster.sh restore TIME|latest   the whole cluster back at TIME (ISO 8601 with its
#                                                offset, on the primary's clock) or at the end of the
#                                                archive, under Patroni, ids above every id handed out;
#                                                refuses (exit 3, saying why) a time it cannot reach
#
# Backups (scripts/cluster/backups.sh): every node archives through pgBackRest while it leads, into a
# repository in the clusters' directory (deploy/pgbackrest/ for an object store).
#
# Environment: INSTANCES (default 3), REDIS_URL (use that Redis instead of starting one),
# INSTANCE_<i>_DATABASE_URL (instance i's way to the primary instead of PRIMARY_URL, which is
# HAProxy's writer port; REPLICA_URL is its reader port),
# PG_BIN (default /usr/lib/postgresql/15/bin), SHUTDOWN_DELAY_SECONDS (default 2: more than the
# balancer's check interval times its fall count, 0.5 s x 2), RATE_LIMIT_PER_MINUTE (default high
# enough for load tests), PROMETHEUS (default on; off: no Prometheus), PROMETHEUS_FOR (default 2s:
# every alert's `for:` in the cluster's copy of the rules, so that an alert fires within seconds),
# SERVICE_DIR (another checkout whose dist/ the instances run, built there: the bench's "before"),
# ARCHIVE_MODE (default on; off: no WAL archiving, scripts/cluster/bench-archive.sh's "before"),
# and those of backups.sh (BACKUP_RETENTION_FULL, ARCHIVE_TIMEOUT, RESTORE_ID_MARGIN, RESTORE_IDS_ABOVE).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
DIR=$ROOT/.cluster
PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}

log() { echo "cluster: $*" >&2; }

# shellcheck source=scripts/cluster/backups.sh
source scripts/cluster/backups.sh

free_port() { node -e "const s=require('net').createServer();s.listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})"; }

# PostgreSQL refuses to run as root: as root it runs as the OS user postgres.
# From /: a checkout in a root-only (700) directory is no working directory for the user postgres.
as_pg() { if ((EUID == 0)); then (cd / && runuser -u postgres -- "$@"); else "$@"; fi; }

wait_for() { # wait_for SECONDS DESCRIPTION COMMAND...
  local seconds=$1 what=$2 deadline=$((SECONDS + $1))
  shift 2
  # A deadline, not a count of tries: on a busy machine each try (a curl, a node) takes longer.
  until "$@" >/dev/null 2>&1; do
    if ((SECONDS >= deadline)); then
      log "$what did not come up within $seconds s"
      return 1
    fi
    sleep 0.1
  done
}

ready() { curl -fsS "http://127.0.0.1:$1/readyz" >/dev/null; }

load_env() { [[ -f $DIR/env ]] || { log "not running (no $DIR/env)"; exit 1; }; source "$DIR/env"; }

start_instance() {
  local i=$1 port_var="INSTANCE_${1}_PORT" database_var="INSTANCE_${1}_DATABASE_URL"
  local port=${!port_var}
  # INSTANCE_<i>_DATABASE_URL (optional): this instance reaches the primary another way (the soak's proxy).
  local database_url=${!database_var:-$PRIMARY_URL}
  mkdir -p "$DIR/instance-$i"
  # exec: the pid file holds the service's own pid, so signals reach it.
  (
    cd "${SERVICE_DIR:-$ROOT}"
    export PORT=$port HOST=127.0.0.1 DATABASE_URL=$database_url DATABASE_REPLICA_URLS=$REPLICA_URL REDIS_URL=$REDIS_URL \
      TRUSTED_PROXIES=127.0.0.1 SHUTDOWN_DELAY_SECONDS=${SHUTDOWN_DELAY_SECONDS:-2} API_KEYS=$API_KEY \
      DATA_DIR=$DIR/instance-$i LOG_LEVEL=${LOG_LEVEL:-warn} RATE_LIMIT_PER_MINUTE=${RATE_LIMIT_PER_MINUTE:-1000000}
    exec node --import ./dist/src/instrumentation.js dist/src/main.js >>"$DIR/instance-$i.log" 2>&1
  ) &
  echo $! >"$DIR/instance-$i.pid"
  # On a loaded machine a start has taken a minute (docs/scaling.md).
  wait_for 120 "instance $i (port $port, log $DIR/instance-$i.log)" ready "$port"
}

# A zombie (killed, not yet reaped) counts as gone. Builtins only (/proc/PID/stat's state, after the
# parenthesised command name): waits on dozens of pids poll this.
alive() {
  local stat
  { read -r stat <"/proc/$1/stat"; } 2>/dev/null || return 1
  stat=${stat##*) }
  [[ ${stat:0:1} != Z ]]
}

# of_cluster PID: the process is one of this cluster's. Its command line names a path under
# .cluster/ or the clusters' directory (Patroni's configuration, postgres -D, etcd's data, HAProxy's
# pid file, Prometheus's configuration), or it works in one of them (postgres's children, Redis), or
# it is an instance (DATA_DIR under .cluster/). Builtins only: no process is started per pid.
of_cluster() {
  local proc=/proc/$1 args environment joined dir dirs=("$DIR")
  { mapfile -d '' -t args <"$proc/cmdline"; } 2>/dev/null || return 1
  ((${#args[@]} > 0)) || return 1 # a zombie or a kernel thread
  [[ " ${args[*]}" == *"$DIR/"* ]] && return 0
  if [[ -n ${PG_DIR:-} ]]; then
    [[ " ${args[*]}" == *"$PG_DIR/"* ]] && return 0
    dirs+=("$PG_DIR" "$PG_DIR"/node*/)
  fi
  for dir in "${dirs[@]}"; do [[ $proc/cwd -ef $dir ]] && return 0; done
  { mapfile -d '' -t environment <"$proc/environ"; } 2>/dev/null || return 1
  printf -v joined '\n%s' "${environment[@]}"
  [[ $joined == *$'\n'"DATA_DIR=$DIR/"* ]]
}

# Every live process of this cluster, as "PID COMMAND LINE" lines.
cluster_processes() {
  local proc pid args
  for proc in /proc/[0-9]*; do
    pid=${proc#/proc/}
    [[ $pid == "$$" || $pid == "$BASHPID" ]] && continue
    of_cluster "$pid" || continue
    { mapfile -d '' -t args <"$proc/cmdline"; } 2>/dev/null || continue
    echo "$pid ${args[*]}"
  done
}

# stop_all SIGNAL PID...: signal them all at once, wait for every one to go (30 s at most, then
# SIGKILL), and say what was stopped.
stop_all() {
  local signal=$1 pid i left description=()
  shift
  for pid in "$@"; do description+=("$(describe "$pid")"); done
  for pid in "$@"; do kill "-$signal" "$pid" 2>/dev/null || true; done
  for ((i = 0; i < 300; i++)); do
    left=0
    for pid in "$@"; do alive "$pid" && left=1; done
    ((left)) || break
    sleep 0.1
  done
  i=0
  for pid in "$@"; do
    if alive "$pid"; then
      kill -KILL "$pid" 2>/dev/null || true
      log "killed (still running 30 s after SIG$signal): ${description[i]}"
    else
      log "stopped: ${description[i]}"
    fi
    ((i++)) || true
  done
}

describe() { # "PID COMMAND" of one pid, its first five words
  local args=()
  { mapfile -d '' -t args <"/proc/$1/cmdline"; } 2>/dev/null || true
  echo "$1 ${args[*]:0:5}"
}

# pids_of_files NAME...: the live pids of .cluster/NAME.pid (globs allowed), each file removed; a
# pid whose process is gone, or is now no process of the cluster, is only reported.
pids_of_files() {
  local name file pid
  for name in "$@"; do
    for file in "$DIR"/$name.pid; do
      [[ -f $file ]] || continue
      pid=$(cat "$file")
      rm -f "$file"
      if alive "$pid" && of_cluster "$pid"; then echo "$pid"; else log "${file##*/}: pid $pid was gone already"; fi
    done
  done
}

# pids_matching TEXT: the cluster's processes whose command line contains TEXT.
pids_matching() {
  local pid args
  while read -r pid args; do [[ $args == *"$1"* ]] && echo "$pid"; done < <(cluster_processes)
  return 0
}

# The processes working in a node's data directory: after its postmaster, its children.
orphans() {
  local pid args node
  while read -r pid args; do
    for node in "$PG_DIR"/node*/; do [[ /proc/$pid/cwd -ef $node ]] && echo "$pid"; done
  done < <(cluster_processes)
  return 0
}

stop_pid() { # stop_pid FILE SIGNAL: the process of a pid file (unless it is gone already), then the file
  [[ -f $1 ]] || return 0
  # shellcheck disable=SC2046 # one pid per word
  stop_all "$2" $(pids_of_files "$(basename "$1" .pid)")
}

# Prometheus on the instances and the Patroni nodes, with the deployed rules (every `for:` shortened) and a 2 s scrape.
start_prometheus() {
  local instances=$1 port targets=""
  command -v prometheus >/dev/null || bash scripts/cluster/install-prometheus.sh ||
    { log "no prometheus: install Debian's prometheus package, or run with PROMETHEUS=off"; return 1; }
  port=$(free_port)
  mkdir -p "$DIR/prometheus"
  cp deploy/prometheus/prometheus.yml "$DIR/prometheus/prometheus.yml"
  for rules in alerts.yml patroni-alerts.yml; do
    sed -E "s/^( +for:) .*/\1 ${PROMETHEUS_FOR:-2s}/" "deploy/prometheus/$rules" >"$DIR/prometheus/$rules"
  done
  for ((i = 1; i <= instances; i++)); do targets+="${targets:+, }\"127.0.0.1:$(eval echo "\$INSTANCE_${i}_PORT")\""; done
  echo "[{\"targets\": [$targets]}]" >"$DIR/prometheus/targets.json"
  # Each node's Patroni REST API serves its /metrics (the job `patroni` of prometheus.yml).
  targets=""
  for ((i = 1; i <= 3; i++)); do targets+="${targets:+, }\"127.0.0.1:$(eval echo "\$NODE_${i}_REST_PORT")\""; done
  echo "[{\"targets\": [$targets]}]" >"$DIR/prometheus/patroni-targets.json"
  echo "PROMETHEUS_URL=http://127.0.0.1:$port" >>"$DIR/env"
  prometheus --config.file="$DIR/prometheus/prometheus.yml" --storage.tsdb.path="$DIR/prometheus/data" \
    --web.listen-address="127.0.0.1:$port" >>"$DIR/prometheus.log" 2>&1 &
  echo $! >"$DIR/prometheus.pid"
  wait_for 30 "Prometheus (log $DIR/prometheus.log)" curl -fsS "http://127.0.0.1:$port/-/ready"
}

# Patroni's timing (bootstrap.dcs, so the same on every node). Patroni requires
# loop_wait + 2 * retry_timeout <= ttl, and its maintainers advise a ttl of at least 20 s: the
# leader key lives 20 s after the leader's last renewal, which bounds how long a lost leader goes
# unnoticed. A short loop_wait makes every node act (promote, demote, rejoin) soon after a change.
PATRONI_TTL=20
PATRONI_LOOP_WAIT=2
PATRONI_RETRY_TIMEOUT=9

# One node's Patroni configuration. synchronous_mode: a create is acknowledged only once the
# synchronous standby has its WAL, and Patroni promotes only that standby, so a failover loses no
# acknowledged create. synchronous_mode_strict is off: when no standby is left (both replicas
# lost), the leader goes on taking writes alone rather than stopping them; those writes are on
# one node until a replica is back, which the alert PatroniNoSynchronousStandby tells.
# use_pg_rewind with data checksums and wal_log_hints: a lost leader rejoins as a replica by
# rewinding its divergent WAL instead of a new base backup. No watchdog on one machine (see
# docs/scaling.md for what production needs).
# Archiving (backups.sh): archive_mode on, each node's archive_command naming its own pgBackRest
# configuration; a promoted node archives what the old leader had not (on_role_change). Replicas
# are built from the repository's newest backup when there is one, else by pg_basebackup; they
# stream from the leader (its slots keep their WAL), and read the archive only while a restore
# rebuilds them (a restore_command everyday would have each replica poll the repository whenever
# its stream breaks, in every failover). With RESTORE_SET set (restore), the first node
# bootstraps from that backup, recovered to RESTORE_TARGET (or to the end of the archive), and
# Patroni's post_bootstrap sets the ids' floor before the node takes the leader key.
write_node_config() { # write_node_config I
  local i=$1 pg_var="NODE_${1}_PG_PORT" rest_var="NODE_${1}_REST_PORT" bootstrap_method="" replica_set="" replica_recovery=""
  if [[ -n ${RESTORE_SET:-} ]]; then
    replica_set=" --set=$RESTORE_SET"
    # A replica restored from the backup replays the archive up to where the leader's WAL begins.
    replica_recovery="  recovery_conf:
    restore_command: '$(restore_command "$i")'
"
    bootstrap_method="
  method: pgbackrest
  pgbackrest:
    command: $(restore_from_backup_command "$i")
    no_params: true
    keep_existing_recovery_conf: false
    recovery_conf:
      restore_command: '$(restore_command "$i")'
      recovery_target_timeline: latest${RESTORE_TARGET:+
      recovery_target_time: '$RESTORE_TARGET'
      recovery_target_action: promote}
  post_bootstrap: $PG_DIR/bin/set-id-floor.sh $PG_BIN $PG_DIR ${!pg_var} $PG_DIR/backup/id-floor"
  fi
  as_pg tee "$PG_DIR/node$i.yml" >/dev/null <<YAML
scope: petstore
name: node$i
log:
  level: INFO
restapi:
  listen: 127.0.0.1:${!rest_var}
  connect_address: 127.0.0.1:${!rest_var}
etcd3:
  hosts: [127.0.0.1:$ETCD_PORT]
watchdog:
  mode: off
bootstrap:$bootstrap_method
  dcs:
    ttl: $PATRONI_TTL
    loop_wait: $PATRONI_LOOP_WAIT
    retry_timeout: $PATRONI_RETRY_TIMEOUT
    maximum_lag_on_failover: 1048576
    synchronous_mode: true
    synchronous_mode_strict: false
    postgresql:
      use_pg_rewind: true
      use_slots: true
      parameters:
        max_connections: 200
        wal_log_hints: 'on'
        # What each statement costs the node (scripts/cluster/bench.sh reads the high-water marks' readings).
        shared_preload_libraries: pg_stat_statements
        wal_keep_size: 256MB
        archive_mode: '${ARCHIVE_MODE:-on}'
        archive_timeout: ${ARCHIVE_TIMEOUT}s
  initdb:
    - encoding: UTF8
    - locale: C.UTF-8
    - data-checksums
postgresql:
  listen: 127.0.0.1:${!pg_var}
  connect_address: 127.0.0.1:${!pg_var}
  data_dir: $PG_DIR/node$i
  bin_dir: $PG_BIN
  pgpass: $PG_DIR/pgpass-node$i
  create_replica_methods: [pgbackrest, basebackup]
  pgbackrest:
    command: pgbackrest --config=$PG_DIR/backup/node$i.conf --stanza=$STANZA --delta --type=standby$replica_set restore
    keep_data: true
    no_params: true
  # A new replica's base backup starts at once instead of after a spread checkpoint.
  basebackup:
    - checkpoint: fast
$replica_recovery  callbacks:
    on_role_change: $PG_DIR/bin/archive-after-promotion.sh $PG_BIN $PG_DIR/backup/node$i.conf $PG_DIR/node$i $PG_DIR ${!pg_var}
  authentication:
    superuser: {username: postgres}
    replication: {username: postgres}
    rewind: {username: postgres}
  parameters:
    unix_socket_directories: '$PG_DIR'
    archive_command: '$(archive_command "$i")'
  pg_hba:
    - local all all trust
    - host all all 127.0.0.1/32 trust
    - host replication all 127.0.0.1/32 trust
YAML
}

# Patroni runs as the OS user postgres (it starts postgres itself). exec, and setpriv rather than
# runuser (which stays as a parent): the pid file holds Patroni's own pid, so a SIGKILL reaches it.
start_patroni() { # start_patroni I
  local i=$1
  (
    # From the clusters' directory: a checkout in a root-only (700) directory is no working
    # directory for the user postgres, and initdb and postgres refuse to start without one.
    cd "$PG_DIR"
    if ((EUID == 0)); then
      exec setpriv --reuid=postgres --regid=postgres --init-groups -- patroni "$PG_DIR/node$i.yml" >>"$DIR/patroni-$i.log" 2>&1
    fi
    exec patroni "$PG_DIR/node$i.yml" >>"$DIR/patroni-$i.log" 2>&1
  ) &
  echo $! >"$DIR/patroni-$i.pid"
}

rest() { # rest I PATH: 0 when node I's Patroni answers PATH with 200
  local var="NODE_${1}_REST_PORT"
  curl -fsS -m 2 "http://127.0.0.1:${!var}$2" >/dev/null
}

# The cluster as any live Patroni sees it (GET /cluster), as "name role state lag" lines.
members() {
  local i var answer
  for ((i = 1; i <= 3; i++)); do
    var="NODE_${i}_REST_PORT"
    # A lost node answers nothing: ask the next one.
    answer=$(curl -fsS -m 2 "http://127.0.0.1:${!var}/cluster" 2>/dev/null) || continue
    node -e '
      let s = ""; process.stdin.on("data", (c) => (s += c)).on("end", () => {
        for (const m of JSON.parse(s).members) console.log(m.name, m.role, m.state, m.lag ?? 0);
      });' <<<"$answer" && return 0
  done
  return 1
}

sync_standby() { members | awk '$2 == "sync_standby"' | grep -q .; }

leader() { members | awk '$2 == "leader" && $3 == "running" { print $1 }' | grep .; }

# One leader, two replicas streaming, no lag: the cluster is whole again.
healthy() {
  local lines
  lines=$(members) || return 1
  [[ $(awk '$2 == "leader" && $3 == "running"' <<<"$lines" | wc -l) == 1 ]] &&
    [[ $(awk '($2 == "sync_standby" || $2 == "replica") && ($3 == "streaming" || $3 == "running") && $4 ~ /^[0-9]+$/ && $4 < 1048576' <<<"$lines" | wc -l) == 2 ]]
}

start_node() { # start_node I: start node I's Patroni, wait until it serves as a replica
  if [[ -f $DIR/patroni-$1.pid ]] && kill -0 "$(cat "$DIR/patroni-$1.pid")" 2>/dev/null; then
    log "node$1's Patroni is running already"
    return 1
  fi
  start_patroni "$1"
  wait_for 180 "node$1 as a replica (log $DIR/patroni-$1.log)" rest "$1" /replica
}

stop_node() { # stop_node I: SIGTERM to Patroni, which stops its postgres first
  stop_pid "$DIR/patroni-$1.pid" TERM
}

# A lost host: Patroni, the postmaster and every backend die at once, nothing shuts down cleanly.
# Also what works in the node's data directory: the archiver's archive-push, a grandchild of the
# postmaster, would otherwise go on pushing WAL after its host is "lost".
kill_leader() {
  local name i postmaster
  name=$(leader) || { log "no leader to kill"; return 1; }
  i=${name#node}
  postmaster=$(head -1 "$PG_DIR/node$i/postmaster.pid")
  # shellcheck disable=SC2046 # one pid per word
  kill -KILL "$(cat "$DIR/patroni-$i.pid")" "$postmaster" $(ps -o pid= --ppid "$postmaster") $(working_in "$PG_DIR/node$i") 2>/dev/null || true
  rm -f "$DIR/patroni-$i.pid"
  echo "$name"
}

working_in() { # working_in DIR: the pids whose working directory is DIR
  local proc
  for proc in /proc/[0-9]*; do [[ $proc/cwd -ef $1 ]] && echo "${proc#/proc/}"; done
  return 0
}

# Every node's host lost at once: each Patroni, postmaster, backend and whatever works in a data
# directory SIGKILLed together (so that no node is promoted as another stops), waited for until gone. etcd, HAProxy, the instances and the
# repository stay. Prints how many processes it killed.
kill_nodes() {
  local i postmaster pid pids=()
  for ((i = 1; i <= 3; i++)); do
    if [[ -f $DIR/patroni-$i.pid ]]; then
      pids+=("$(cat "$DIR/patroni-$i.pid")")
      rm -f "$DIR/patroni-$i.pid"
    else # (a Patroni started by hand)
      # shellcheck disable=SC2207 # one pid per word
      pids+=($(pids_matching "patroni $PG_DIR/node$i.yml"))
    fi
    # shellcheck disable=SC2207 # one pid per word
    [[ -d $PG_DIR/node$i ]] && pids+=($(working_in "$PG_DIR/node$i"))
    postmaster=$(head -1 "$PG_DIR/node$i/postmaster.pid" 2>/dev/null) || continue
    alive "$postmaster" || continue
    # shellcheck disable=SC2207 # one pid per word
    pids+=("$postmaster" $(ps -o pid= --ppid "$postmaster"))
  done
  ((${#pids[@]} > 0)) || { echo 0; return 0; }
  kill -KILL "${pids[@]}" 2>/dev/null || true
  for pid in "${pids[@]}"; do while alive "$pid"; do sleep 0.05; done; done
  echo "${#pids[@]}"
}

# The whole database tier lost (restore's second drill): every node killed, every data directory removed.
lose_nodes() {
  local killed i at
  killed=$(kill_nodes)
  at=$(date +%s%3N)
  for ((i = 1; i <= 3; i++)); do as_pg rm -rf "$PG_DIR/node$i"; done
  echo "lost: node1 node2 node3 ($killed processes killed at $at ms since the epoch, data directories removed)"
}

# The member a switchover can go to. In synchronous mode Patroni switches over only to the
# synchronous standby, and only when it answers with no more lag than maximum_lag_on_failover;
# without one it refuses ("switchover is not possible: can not find sync_standby"). Right after a
# failover or a rejoin there may be none yet: the new leader names one only once a replica streams
# from it, which `healthy` does not wait for.
switchover_candidate() {
  members | awk '$2 == "sync_standby" && ($3 == "streaming" || $3 == "running") && $4 ~ /^[0-9]+$/ && $4 < 1048576 { print $1 }' | grep .
}

# Patroni's view in one line: "node1 leader running lag 0 | node2 ...".
view() { members | awk '{ printf "%s%s %s %s lag %s", (NR > 1 ? " | " : ""), $1, $2, $3, $4 } END { print "" }'; }

# Prints what it waited for and how long, then "OLD -> NEW"; fails with patronictl's output on
# stderr when Patroni does not switch over.
switchover() {
  local name candidate output started
  name=$(leader) || { log "no leader to switch over from"; return 1; }
  started=$(date +%s%N)
  if ! switchover_candidate >/dev/null; then
    echo "no synchronous standby to switch over to yet; Patroni: $(view)"
    wait_for 60 "a synchronous standby" switchover_candidate || { log "Patroni: $(view)"; return 1; }
  fi
  candidate=$(switchover_candidate) || { log "the synchronous standby went again; Patroni: $(view)"; return 1; }
  echo "$candidate is the synchronous standby after $((($(date +%s%N) - started) / 1000000)) ms; Patroni: $(view)"
  # patronictl exits 0 when Patroni refuses ("Switchover failed, details: 412, ..."): its output says
  # whether the switchover happened.
  output=$(patronictl -c "$PG_DIR/node1.yml" switchover --leader "$name" --force 2>&1) || true
  echo "$output" >>"$DIR/patronictl.log"
  if [[ $output != *"Successfully switched over to"* ]]; then
    log "Patroni did not switch over from $name; patronictl said:"
    echo "$output" >&2
    return 1
  fi
  echo "$name -> $(sed -n 's/.*Successfully switched over to "\(.*\)".*/\1/p' <<<"$output")"
}

# The node stop-replica stopped, so that start-replica starts the same one.
stop_replica() {
  local name
  name=$(members | awk '$2 != "leader" && $3 != "stopped" { print $1; exit }')
  [[ -n $name ]] || { log "no replica to stop"; return 1; }
  echo "${name#node}" >"$DIR/stopped-replica"
  stop_node "${name#node}"
}

start_etcd() {
  mkdir -p "$DIR/etcd"
  etcd --name petstore --data-dir "$DIR/etcd/data" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "petstore=http://127.0.0.1:$ETCD_PEER_PORT" --initial-cluster-state new \
    >>"$DIR/etcd.log" 2>&1 &
  echo $! >"$DIR/etcd.pid"
  wait_for 30 "etcd (log $DIR/etcd.log)" curl -fsS "http://127.0.0.1:$ETCD_PORT/health"
}

up() {
  local instances=${1:-${INSTANCES:-3}}
  if [[ -f $DIR/env ]]; then log "already up ($DIR/env exists): run down first"; exit 1; fi
  command -v haproxy >/dev/null || { log "installing Debian's haproxy"; apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq haproxy >/dev/null; }
  bash scripts/cluster/install-patroni.sh
  bash scripts/cluster/install-pgbackrest.sh
  [[ -x $PG_BIN/initdb ]] || { log "no PostgreSQL binaries in $PG_BIN (apt-get install postgresql-15, or set PG_BIN)"; exit 1; }
  mkdir -p "$DIR"
  # If anything below fails, stop what was started.
  trap 'log "up failed; stopping what was started"; down' ERR

  # CI builds dist/ once, before steps that run beside this one start the service from it.
  if [[ -n ${SERVICE_DIR:-} ]]; then
    [[ -f $SERVICE_DIR/dist/src/main.js ]] || { log "no $SERVICE_DIR/dist/src/main.js: build it there first"; exit 1; }
    log "running the service built in $SERVICE_DIR"
  elif [[ ${PETSTORE_PREBUILT:-} == 1 && -f dist/src/main.js ]]; then
    log "using the dist/ already built (PETSTORE_PREBUILT=1)"
  else
    log "building the service (npm run build)"
    npm run build --silent >"$DIR/build.log" 2>&1 || { cat "$DIR/build.log" >&2; false; }
  fi

  # The clusters go where the user postgres can reach them even if the checkout is in a 700 directory.
  local pgdir
  pgdir=$(mktemp -d "${TMPDIR:-/tmp}/petstore-cluster.XXXXXX")
  echo "$pgdir" >"$DIR/pgdir"
  if ((EUID == 0)); then
    id postgres >/dev/null 2>&1 || useradd --system --home-dir /var/lib/postgresql --shell /usr/sbin/nologin postgres
    chown postgres: "$pgdir"
  fi
  chmod 700 "$pgdir"

  local balancer_port redis_port writer_port reader_port i
  balancer_port=$(free_port)
  {
    echo "PG_DIR=$pgdir"
    echo "ETCD_PORT=$(free_port)"
    echo "ETCD_PEER_PORT=$(free_port)"
    for ((i = 1; i <= 3; i++)); do
      echo "NODE_${i}_PG_PORT=$(free_port)"
      echo "NODE_${i}_REST_PORT=$(free_port)"
    done
    # HAProxy's PostgreSQL ports (deploy/haproxy-patroni.cfg): PRIMARY_* is the writer, REPLICA_* the reader.
    writer_port=$(free_port)
    reader_port=$(free_port)
    echo "PRIMARY_PORT=$writer_port"
    echo "REPLICA_PORT=$reader_port"
    echo "PRIMARY_URL=postgres://postgres@127.0.0.1:$writer_port/petstore"
    echo "REPLICA_URL=postgres://postgres@127.0.0.1:$reader_port/petstore"
    echo "BALANCER_PORT=$balancer_port"
    echo "BALANCER_URL=http://127.0.0.1:$balancer_port"
    echo "INSTANCES=$instances"
    echo "API_KEY=psk_cluster_$(head -c 24 /dev/urandom | base64 | tr -d '/+=')"
  } >"$DIR/env.partial"
  source "$DIR/env.partial"
  # HAProxy's configuration reads the ports from its environment.
  export PRIMARY_PORT REPLICA_PORT NODE_1_PG_PORT NODE_1_REST_PORT NODE_2_PG_PORT NODE_2_REST_PORT NODE_3_PG_PORT NODE_3_REST_PORT

  log "etcd on 127.0.0.1:$ETCD_PORT"
  start_etcd
  # The first node bootstraps the cluster (initdb) and becomes the leader; the others then
  # clone it (pg_basebackup) and follow.
  write_backup_configs
  for ((i = 1; i <= 3; i++)); do write_node_config "$i"; done
  log "Patroni node1 (PostgreSQL on 127.0.0.1:$NODE_1_PG_PORT, REST on $NODE_1_REST_PORT) bootstraps"
  start_patroni 1
  wait_for 120 "node1 as the leader (log $DIR/patroni-1.log)" rest 1 /primary
  as_pg "$PG_BIN/createdb" -h 127.0.0.1 -p "$NODE_1_PG_PORT" -U postgres petstore
  log "pgBackRest stanza $STANZA, repository $PG_DIR/backup/repo"
  create_stanza
  log "Patroni node2 and node3 (replicas)"
  start_patroni 2
  start_patroni 3
  wait_for 180 "node2 as a replica (log $DIR/patroni-2.log)" rest 2 /replica
  wait_for 180 "node3 as a replica (log $DIR/patroni-3.log)" rest 3 /replica
  # A synchronous standby is chosen on the leader's next loop; until then creates would be acknowledged with one copy.
  wait_for 60 "a synchronous standby" sync_standby

  log "HAProxy: PostgreSQL writer on 127.0.0.1:$PRIMARY_PORT (/primary), reader on $REPLICA_PORT (/replica)"
  WRITER_PORT=$PRIMARY_PORT READER_PORT=$REPLICA_PORT STATS_SOCKET=$DIR/haproxy-postgres.sock \
    haproxy -D -f deploy/haproxy-patroni.cfg -p "$DIR/haproxy-postgres.pid"
  wait_for 10 "HAProxy's writer port" as_pg "$PG_BIN/pg_isready" -q -h 127.0.0.1 -p "$PRIMARY_PORT" -d petstore
  wait_for 10 "HAProxy's reader port" as_pg "$PG_BIN/pg_isready" -q -h 127.0.0.1 -p "$REPLICA_PORT" -d petstore

  if [[ -n ${REDIS_URL:-} ]]; then
    echo "REDIS_URL=$REDIS_URL" >>"$DIR/env.partial"
  else
    redis_port=$(free_port)
    log "Redis on 127.0.0.1:$redis_port"
    redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes \
      --pidfile "$DIR/redis.pid" --logfile "$DIR/redis.log" --dir "$DIR"
    echo "REDIS_URL=redis://127.0.0.1:$redis_port" >>"$DIR/env.partial"
  fi
  for ((i = 1; i <= instances; i++)); do echo "INSTANCE_${i}_PORT=$(free_port)" >>"$DIR/env.partial"; done
  mv "$DIR/env.partial" "$DIR/env"
  source "$DIR/env"
  wait_for 10 "Redis" redis-cli -u "$REDIS_URL" ping

  # The first instance runs the migrations alone; the others then find nothing to do.
  for ((i = 1; i <= instances; i++)); do
    log "instance $i on 127.0.0.1:$(eval echo "\$INSTANCE_${i}_PORT")"
    start_instance "$i"
  done

  log "HAProxy on 127.0.0.1:$balancer_port (deploy/haproxy.cfg)"
  {
    cat deploy/haproxy.cfg
    for ((i = 1; i <= instances; i++)); do echo "    server app$i 127.0.0.1:$(eval echo "\$INSTANCE_${i}_PORT")"; done
  } >"$DIR/haproxy.cfg"
  BALANCER_PORT=$balancer_port STATS_SOCKET=$DIR/haproxy.sock haproxy -D -f "$DIR/haproxy.cfg" -p "$DIR/haproxy.pid"
  wait_for 10 "HAProxy" curl -fsS "$BALANCER_URL/readyz"
  if [[ ${PROMETHEUS:-on} != off ]]; then
    log "Prometheus (deploy/prometheus)"
    start_prometheus "$instances"
  fi
  trap - ERR
  log "up: $BALANCER_URL (API key in $DIR/env), stop with: npm run cluster:down"
}

# Stops whatever of the cluster is running, whatever died before (a stale pid file, a Patroni or a
# postmaster killed from outside), says what it stopped, and fails if any process of the cluster
# is left (then .cluster/ stays, for another `down`).
down() {
  trap - ERR
  [[ -d $DIR ]] || { log "nothing to stop"; return 0; }
  PG_DIR=$(cat "$DIR/pgdir" 2>/dev/null) || PG_DIR=""
  local node pid left i
  # From the front, so that nothing new reaches the database.
  # shellcheck disable=SC2046 # one pid per word
  stop_all TERM $(pids_of_files prometheus haproxy 'instance-*' redis haproxy-postgres)
  # Every Patroni at once (each stops its postgres), also one whose pid file is gone.
  # shellcheck disable=SC2046
  stop_all TERM $( (pids_of_files 'patroni-*'; [[ -n $PG_DIR ]] && pids_matching "patroni $PG_DIR/node") | sort -u)
  if [[ -n $PG_DIR ]]; then
    # A postgres whose Patroni died before it: an immediate shutdown (the data goes below).
    # (and the throwaway recovery of a restore that was interrupted)
    for node in "$PG_DIR"/node*/ "$PG_DIR"/archive-end/; do
      pid=$(head -1 "$node/postmaster.pid" 2>/dev/null) || continue
      if alive "$pid" && of_cluster "$pid"; then stop_all QUIT "$pid"; else log "${node}postmaster.pid: pid $pid was gone already"; fi
    done
    # The children of a postmaster killed from outside: they work in its data directory.
    # shellcheck disable=SC2046
    stop_all KILL $(orphans)
  fi
  # etcd last: Patroni needs it to stop cleanly.
  # shellcheck disable=SC2046
  stop_all TERM $( (pids_of_files etcd; pids_matching "--data-dir $DIR/etcd/data") | sort -u)
  # A process killed above may take a moment to go.
  for ((i = 0; i < 50; i++)); do
    left=$(cluster_processes)
    [[ -n $left ]] || break
    sleep 0.1
  done
  if [[ -n $left ]]; then
    log "down: still running, .cluster/ kept:"
    echo "$left" >&2
    return 1
  fi
  [[ -n $PG_DIR ]] && rm -rf "$PG_DIR"
  rm -rf "$DIR"
  log "down: nothing left running"
}

command=${1:-}
shift || true
case $command in
  up) up "$@" ;;
  down) down ;;
  stop-instance) load_env; stop_pid "$DIR/instance-$1.pid" TERM ;;
  kill-instance) load_env; kill -KILL "$(cat "$DIR/instance-$1.pid")"; rm -f "$DIR/instance-$1.pid" ;;
  start-instance) load_env; start_instance "$1" ;;
  stop-replica) load_env; stop_replica ;;
  start-replica) load_env; start_node "$(cat "$DIR/stopped-replica")" && rm -f "$DIR/stopped-replica" ;;
  leader) load_env; leader ;;
  kill-leader) load_env; kill_leader ;;
  start-node) load_env; start_node "${1#node}" ;;
  lose-nodes) load_env; lose_nodes ;;
  switchover) load_env; switchover ;;
  healthy) load_env; healthy ;;
  backup) load_env; backup "$@" ;;
  check) load_env; check_backups ;;
  restore) load_env; restore "$@" ;;
  *) echo "usage: $0 up [N] | down | stop-instance I | kill-instance I | start-instance I | stop-replica | start-replica | leader | kill-leader | start-node NODE | lose-nodes | switchover | healthy | backup [full|diff|incr] | check | restore TIME|latest" >&2; exit 2 ;;
esac
