#!/usr/bin/env bash
# The whole topology on one machine: HAProxy (Debian's) in front of N instances of the built
# service, a PostgreSQL primary with one streaming replica (Debian's PostgreSQL 15, pg_basebackup -R),
# Redis, and Prometheus (Debian's) scraping every instance with the rules of deploy/prometheus/.
# Everything lives under .cluster/ (pid files, logs, ports in .cluster/env); `down` stops every
# process `up` started and leaves nothing running.
#
#   scripts/cluster/cluster.sh up [N]            build once, start everything (N instances, default 3)
#   scripts/cluster/cluster.sh down              stop everything, remove .cluster/
#   scripts/cluster/cluster.sh stop-instance I   SIGTERM (graceful: /readyz 503 first), wait for exit
#   scripts/cluster/cluster.sh kill-instance I   SIGKILL
#   scripts/cluster/cluster.sh start-instance I  start it again, wait for /readyz 200
#   scripts/cluster/cluster.sh stop-replica | start-replica
#
# Environment: INSTANCES (default 3), REDIS_URL (use that Redis instead of starting one),
# INSTANCE_<i>_DATABASE_URL (instance i's way to the primary instead of PRIMARY_URL),
# PG_BIN (default /usr/lib/postgresql/15/bin), SHUTDOWN_DELAY_SECONDS (default 2: more than the
# balancer's check interval times its fall count, 0.5 s x 2), RATE_LIMIT_PER_MINUTE (default high
# enough for load tests), PROMETHEUS (default on; off: no Prometheus), PROMETHEUS_FOR (default 2s:
# every alert's `for:` in the cluster's copy of the rules, so that an alert fires within seconds).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
DIR=$ROOT/.cluster
PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}

log() { echo "cluster: $*" >&2; }

free_port() { node -e "const s=require('net').createServer();s.listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})"; }

# PostgreSQL refuses to run as root: as root it runs as the OS user postgres.
as_pg() { if ((EUID == 0)); then runuser -u postgres -- "$@"; else "$@"; fi; }

wait_for() { # wait_for SECONDS DESCRIPTION COMMAND...
  local seconds=$1 what=$2
  shift 2
  for ((i = 0; i < seconds * 10; i++)); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.1
  done
  log "$what did not come up within $seconds s"
  return 1
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
    cd "$ROOT"
    export PORT=$port HOST=127.0.0.1 DATABASE_URL=$database_url DATABASE_REPLICA_URLS=$REPLICA_URL REDIS_URL=$REDIS_URL \
      TRUSTED_PROXIES=127.0.0.1 SHUTDOWN_DELAY_SECONDS=${SHUTDOWN_DELAY_SECONDS:-2} API_KEYS=$API_KEY \
      DATA_DIR=$DIR/instance-$i LOG_LEVEL=${LOG_LEVEL:-warn} RATE_LIMIT_PER_MINUTE=${RATE_LIMIT_PER_MINUTE:-1000000}
    exec node --import ./dist/src/instrumentation.js dist/src/main.js >>"$DIR/instance-$i.log" 2>&1
  ) &
  echo $! >"$DIR/instance-$i.pid"
  wait_for 60 "instance $i (port $port, log $DIR/instance-$i.log)" ready "$port"
}

stop_pid() { # stop_pid FILE SIGNAL: signal the process, wait for it to go
  local file=$1 signal=$2 pid
  [[ -f $file ]] || return 0
  pid=$(cat "$file")
  if kill -0 "$pid" 2>/dev/null; then
    kill "-$signal" "$pid" 2>/dev/null || true
    for ((i = 0; i < 300; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid" 2>/dev/null || true; fi
  fi
  rm -f "$file"
}

pg_ctl_() { as_pg "$PG_BIN/pg_ctl" "$@"; }

# Prometheus on the instances, with the deployed rules (every `for:` shortened) and a 2 s scrape.
start_prometheus() {
  local instances=$1 port targets=""
  command -v prometheus >/dev/null || bash scripts/cluster/install-prometheus.sh ||
    { log "no prometheus: install Debian's prometheus package, or run with PROMETHEUS=off"; return 1; }
  port=$(free_port)
  mkdir -p "$DIR/prometheus"
  cp deploy/prometheus/prometheus.yml "$DIR/prometheus/prometheus.yml"
  sed -E "s/^( +for:) .*/\1 ${PROMETHEUS_FOR:-2s}/" deploy/prometheus/alerts.yml >"$DIR/prometheus/alerts.yml"
  for ((i = 1; i <= instances; i++)); do targets+="${targets:+, }\"127.0.0.1:$(eval echo "\$INSTANCE_${i}_PORT")\""; done
  echo "[{\"targets\": [$targets]}]" >"$DIR/prometheus/targets.json"
  echo "PROMETHEUS_URL=http://127.0.0.1:$port" >>"$DIR/env"
  prometheus --config.file="$DIR/prometheus/prometheus.yml" --storage.tsdb.path="$DIR/prometheus/data" \
    --web.listen-address="127.0.0.1:$port" >>"$DIR/prometheus.log" 2>&1 &
  echo $! >"$DIR/prometheus.pid"
  wait_for 30 "Prometheus (log $DIR/prometheus.log)" curl -fsS "http://127.0.0.1:$port/-/ready"
}

up() {
  local instances=${1:-${INSTANCES:-3}}
  if [[ -f $DIR/env ]]; then log "already up ($DIR/env exists): run down first"; exit 1; fi
  command -v haproxy >/dev/null || { log "installing Debian's haproxy"; apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq haproxy >/dev/null; }
  [[ -x $PG_BIN/initdb ]] || { log "no PostgreSQL binaries in $PG_BIN (apt-get install postgresql-15, or set PG_BIN)"; exit 1; }
  mkdir -p "$DIR"
  # If anything below fails, stop what was started.
  trap 'log "up failed; stopping what was started"; down' ERR

  log "building the service (npm run build)"
  npm run build --silent >"$DIR/build.log" 2>&1 || { cat "$DIR/build.log" >&2; false; }

  # The clusters go where the user postgres can reach them even if the checkout is in a 700 directory.
  local pgdir
  pgdir=$(mktemp -d "${TMPDIR:-/tmp}/petstore-cluster.XXXXXX")
  echo "$pgdir" >"$DIR/pgdir"
  if ((EUID == 0)); then
    id postgres >/dev/null 2>&1 || useradd --system --home-dir /var/lib/postgresql --shell /usr/sbin/nologin postgres
    chown postgres: "$pgdir"
  fi
  chmod 700 "$pgdir"

  local primary_port replica_port balancer_port redis_port
  primary_port=$(free_port)
  replica_port=$(free_port)
  balancer_port=$(free_port)
  {
    echo "PG_DIR=$pgdir"
    echo "PRIMARY_PORT=$primary_port"
    echo "REPLICA_PORT=$replica_port"
    echo "PRIMARY_URL=postgres://postgres@127.0.0.1:$primary_port/petstore"
    echo "REPLICA_URL=postgres://postgres@127.0.0.1:$replica_port/petstore"
    echo "BALANCER_PORT=$balancer_port"
    echo "BALANCER_URL=http://127.0.0.1:$balancer_port"
    echo "INSTANCES=$instances"
    echo "API_KEY=psk_cluster_$(head -c 24 /dev/urandom | base64 | tr -d '/+=')"
  } >"$DIR/env.partial"

  log "PostgreSQL primary on 127.0.0.1:$primary_port"
  as_pg "$PG_BIN/initdb" -D "$pgdir/primary" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >"$DIR/initdb.log"
  cat >>"$pgdir/primary/postgresql.conf" <<EOF
port = $primary_port
listen_addresses = '127.0.0.1'
unix_socket_directories = '$pgdir'
wal_level = replica
max_connections = 200
EOF
  pg_ctl_ -D "$pgdir/primary" -l "$pgdir/primary.log" -w start >/dev/null
  as_pg "$PG_BIN/createdb" -h 127.0.0.1 -p "$primary_port" -U postgres petstore

  log "streaming replica on 127.0.0.1:$replica_port (pg_basebackup -R)"
  as_pg "$PG_BIN/pg_basebackup" -h 127.0.0.1 -p "$primary_port" -U postgres -D "$pgdir/replica" -R -X stream -c fast
  echo "port = $replica_port" >>"$pgdir/replica/postgresql.conf"
  pg_ctl_ -D "$pgdir/replica" -l "$pgdir/replica.log" -w start >/dev/null

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

down() {
  trap - ERR
  [[ -d $DIR ]] || { log "nothing to stop"; return 0; }
  stop_pid "$DIR/prometheus.pid" TERM
  stop_pid "$DIR/haproxy.pid" TERM
  for file in "$DIR"/instance-*.pid; do [[ -e $file ]] && stop_pid "$file" TERM; done
  stop_pid "$DIR/redis.pid" TERM
  local pgdir=""
  [[ -f $DIR/pgdir ]] && pgdir=$(cat "$DIR/pgdir")
  if [[ -n $pgdir && -d $pgdir ]]; then
    for node in replica primary; do
      [[ -f $pgdir/$node/postmaster.pid ]] && pg_ctl_ -D "$pgdir/$node" -m immediate -w stop >/dev/null 2>&1 || true
    done
    rm -rf "$pgdir"
  fi
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
  stop-replica) load_env; pg_ctl_ -D "$PG_DIR/replica" -m fast -w stop >/dev/null ;;
  start-replica) load_env; pg_ctl_ -D "$PG_DIR/replica" -l "$PG_DIR/replica.log" -w start >/dev/null ;;
  *) echo "usage: $0 up [N] | down | stop-instance I | kill-instance I | start-instance I | stop-replica | start-replica" >&2; exit 2 ;;
esac
