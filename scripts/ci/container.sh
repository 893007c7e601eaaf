#!/usr/bin/env bash
# The container image (Dockerfile, also reachable as Containerfile), built and run here, as root,
# from a clean clone, with no container registry and no Docker engine (docs/deploy.md):
#
#   1. Debian's podman, buildah, runc and debootstrap (installed when missing); containers.conf
#      with `default_ulimits = []` when the machine has none; podman runs with --runtime runc
#      (crun fails on this kernel's cgroups) and --network host.
#   2. The base image localhost/petstore-base:26 (scripts/container/build-base.sh: Debian bookworm
#      minbase + Node 26 from the npm registry + npm), kept between runs: built only when missing.
#   3. The image, from the Dockerfile, with --build-arg BASE_IMAGE=localhost/petstore-base:26
#      (npm ci and nest build inside; layers cached between runs).
#   4. The image's configuration: a non-root USER, node itself as CMD with start:prod's arguments,
#      HEALTHCHECK, HOST/PORT/DATA_DIR defaults; its contents: dist/src and the production
#      dependencies, no compiler, test, lint or build tooling.
#   5. A container against CI's PostgreSQL (a database of its own, dropped afterwards) with
#      API_KEYS: /readyz, a pet created (201) and listed, the HEALTHCHECK, node as PID 1 with a
#      non-root uid, DATA_DIR writable, `node dist/src/keys.js` inside; then SIGTERM: exit code 0
#      and the service's "draining" and "stopped: drained" lines.
#   6. A container with no DATABASE_URL: the embedded PostgreSQL in DATA_DIR as the non-root
#      user, the printed first-run key, a pet created with it; SIGTERM: exit code 0.
#
#   sudo bash scripts/ci/container.sh
#   CI_PG or CI_DATABASE_URL=postgres://user@host:port/db   the server to make the test database
#                                         on (default postgres://postgres@127.0.0.1:5432/test)
#   FORCE_BASE=1                                   rebuild the base image even when it exists
#   sudo bash scripts/ci/container.sh --build-only    the tools, the base image and the image, no
#                                         checks: CI starts this early, in the background, so that
#                                         the step itself finds both images in podman's cache
#
# Ends with the image size, the build times and `checks: N passed, N failed`; exit code 1 when a
# check failed. Containers, the test database and temporary files are removed even on failure.
set -euo pipefail

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$SRC"
BASE_IMAGE=localhost/petstore-base:26
IMAGE=localhost/petstore:ci
PG_URL=${CI_PG:-${CI_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}}
PG_SERVER=${PG_URL%/*}           # postgres://postgres@127.0.0.1:5432
DB_NAME=petstore_container_$$
RUN_ID=petstore-ci-$$
PODMAN=(podman --runtime runc)
READY_TIMEOUT=90
STOP_TIMEOUT=20

if [[ $(id -u) != 0 ]]; then
  echo "container.sh: run as root (apt-get, debootstrap, podman)" >&2
  exit 2
fi

WORK=$(mktemp -d)
PASSED=0
FAILED=0
DB_CREATED=
STARTED=$SECONDS

cleanup() {
  local rc=$? name
  set +e
  for name in "$RUN_ID-server" "$RUN_ID-embedded"; do
    timeout 60 "${PODMAN[@]}" rm -f -t 5 "$name" >/dev/null 2>&1
  done
  [[ -n $DB_CREATED ]] && timeout 60 psql "$PG_URL" -qAtc "DROP DATABASE IF EXISTS $DB_NAME WITH (FORCE)" >/dev/null
  rm -rf "$WORK"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

pass() { echo "  ok   $*"; PASSED=$((PASSED + 1)); }
fail() { echo "  FAIL $*"; FAILED=$((FAILED + 1)); }
check() { # check DESCRIPTION COMMAND...: pass when the command succeeds
  local what=$1
  shift
  if "$@"; then pass "$what"; else fail "$what"; fi
}
finish() {
  echo
  echo "== container image: report =="
  [[ -n ${SIZE_MIB:-} ]] && echo "image $IMAGE: $SIZE_MIB MiB (podman image inspect .Size); base $BASE_IMAGE: ${BASE_SIZE_MIB:-?} MiB"
  echo "base image: ${BASE_TIME:-not built}; image build: ${BUILD_TIME:-not built}; whole script: $((SECONDS - STARTED)) s"
  echo "checks: $PASSED passed, $FAILED failed"
  ((FAILED == 0))
}
# Ends the run at a failure the later checks depend on (the build, a container that never starts).
give_up() {
  fail "$*"
  finish || true
  exit 1
}

# A free TCP port on this machine (the containers share the host's network).
free_port() {
  local port
  for _ in $(seq 50); do
    port=$((20000 + RANDOM % 30000))
    if ! ss -Htln "sport = :$port" | grep -q .; then
      echo "$port"
      return 0
    fi
  done
  return 1
}

# wait_ready PORT NAME: /readyz answers 200 within READY_TIMEOUT, and the container still runs.
wait_ready() {
  local port=$1 name=$2 deadline=$((SECONDS + READY_TIMEOUT))
  while ((SECONDS < deadline)); do
    if curl -fsS -m 2 -o /dev/null "http://127.0.0.1:$port/readyz" 2>/dev/null; then return 0; fi
    if [[ $("${PODMAN[@]}" inspect --format '{{.State.Running}}' "$name" 2>/dev/null) != true ]]; then
      echo "  the container stopped before it was ready:"
      timeout 30 "${PODMAN[@]}" logs "$name" 2>&1 | tail -20 | sed 's/^/    /'
      return 1
    fi
    sleep 0.5
  done
  echo "  /readyz did not answer 200 within $READY_TIMEOUT s; the container's last lines:"
  timeout 30 "${PODMAN[@]}" logs "$name" 2>&1 | tail -20 | sed 's/^/    /'
  return 1
}

# create_pet PORT KEY: POST /v1/pets, prints the status code and keeps the body in $WORK/created.
create_pet() {
  curl -sS -m 10 -o "$WORK/created" -w '%{http_code}' -X POST "http://127.0.0.1:$1/v1/pets" \
    -H "Authorization: Bearer $2" -H 'Content-Type: application/json' -d '{"name":"Rex","categoryId":1}'
}

# stop_with_sigterm NAME: podman stop (SIGTERM, SIGKILL after STOP_TIMEOUT s); checks exit code 0
# within the grace time and the service's own drain lines.
stop_with_sigterm() {
  local name=$1 started=$SECONDS code logs
  timeout $((STOP_TIMEOUT + 30)) "${PODMAN[@]}" stop -t "$STOP_TIMEOUT" "$name" >/dev/null 2>"$WORK/stop.err" ||
    sed 's/^/    /' "$WORK/stop.err"
  local took=$((SECONDS - started))
  code=$("${PODMAN[@]}" inspect --format '{{.State.ExitCode}}' "$name" 2>/dev/null || echo '?')
  logs=$(timeout 30 "${PODMAN[@]}" logs "$name" 2>&1 | tee "$WORK/$name.log" || true)
  check "$name: SIGTERM -> exit code 0 (got $code) in $took s, before the $STOP_TIMEOUT s SIGKILL" \
    test "$code" = 0 -a "$took" -lt "$STOP_TIMEOUT"
  check "$name: the service logged 'SIGTERM: draining' and 'stopped: drained in'" \
    bash -c 'grep -q "SIGTERM: draining" <<<"$1" && grep -q "stopped: drained in" <<<"$1"' _ "$logs"
  grep -E 'SIGTERM: draining|stopped: drained' <<<"$logs" | sed 's/^/    /' || true
}

echo "== tools: podman, buildah, runc, debootstrap (Debian's) =="
missing=()
for tool in podman:podman buildah:buildah runc:runc debootstrap:debootstrap curl:curl ss:iproute2 psql:postgresql-client; do
  command -v "${tool%%:*}" >/dev/null || missing+=("${tool#*:}")
done
if ((${#missing[@]} > 0)); then
  echo "installing ${missing[*]}"
  started=$SECONDS
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >"$WORK/apt.log" 2>&1 ||
    { tail -20 "$WORK/apt.log"; give_up "apt-get install ${missing[*]}"; }
  echo "  installed in $((SECONDS - started)) s"
fi
# podman, buildah and runc only matter for what follows; a missing one makes it fail at once.
if [[ ! -e /etc/containers/containers.conf ]]; then
  mkdir -p /etc/containers
  # podman's default ulimits (nofile 1048576) cannot be set in this sandbox.
  printf '[containers]\ndefault_ulimits = []\n' >/etc/containers/containers.conf
  echo "wrote /etc/containers/containers.conf"
elif ! grep -q '^default_ulimits *= *\[\]' /etc/containers/containers.conf; then
  echo "note: /etc/containers/containers.conf exists without 'default_ulimits = []'; left as it is"
fi
echo "$(podman --version), $(buildah --version | cut -d' ' -f1-3), $(runc --version | head -1)"

echo
echo "== base image $BASE_IMAGE (Debian bookworm minbase + Node 26 + npm; kept between runs) =="
started=$SECONDS
existed=$("${PODMAN[@]}" image exists "$BASE_IMAGE" && echo yes || echo no)
if FORCE=${FORCE_BASE:-} timeout 600 bash scripts/container/build-base.sh "$BASE_IMAGE"; then
  if [[ $existed == yes && -z ${FORCE_BASE:-} ]]; then BASE_TIME="cached ($((SECONDS - started)) s)"; else BASE_TIME="built in $((SECONDS - started)) s"; fi
  BASE_SIZE_MIB=$(($("${PODMAN[@]}" image inspect --format '{{.Size}}' "$BASE_IMAGE") / 1048576))
  pass "base image: $BASE_TIME"
else
  give_up "base image $BASE_IMAGE could not be built"
fi

echo
echo "== image $IMAGE: podman build --build-arg BASE_IMAGE=$BASE_IMAGE (Dockerfile) =="
started=$SECONDS
previous=$("${PODMAN[@]}" image inspect --format '{{.Id}}' "$IMAGE" 2>/dev/null || true)
# --format docker: the OCI image format has no HEALTHCHECK. --network host: npm ci reaches the registry.
# --ulimit: with default_ulimits = [] a build step gets 1024 open files, and npm ci then fails now
# and then with EMFILE; the machine's own hard limit (at most 65536) is allowed.
nofile=$(ulimit -Hn)
[[ $nofile =~ ^[0-9]+$ && $nofile -le 65536 ]] || nofile=65536
if timeout 900 "${PODMAN[@]}" build --network host --format docker --layers --ulimit "nofile=$nofile:$nofile" \
  --build-arg BASE_IMAGE="$BASE_IMAGE" -f Containerfile -t "$IMAGE" . >"$WORK/build.log" 2>&1; then
  BUILD_TIME="$((SECONDS - started)) s"
  grep -E '^\[[0-9]/[0-9]\] STEP|^added |Using cache|npm (warn|error)' "$WORK/build.log" | sed 's/^/    /' | tail -40
  pass "image built in $BUILD_TIME (npm ci, nest build, npm prune --omit=dev)"
else
  tail -40 "$WORK/build.log" | sed 's/^/    /'
  BUILD_TIME="failed after $((SECONDS - started)) s"
  give_up "podman build"
fi
# The image this build replaced (the stages' layers stay: they are the build cache).
if [[ -n $previous && $previous != $("${PODMAN[@]}" image inspect --format '{{.Id}}' "$IMAGE") ]]; then
  "${PODMAN[@]}" rmi "$previous" >/dev/null 2>&1 || true
fi
SIZE=$("${PODMAN[@]}" image inspect --format '{{.Size}}' "$IMAGE")
SIZE_MIB=$(((SIZE + 524288) / 1048576))
echo "  image size: $SIZE_MIB MiB"
if [[ ${1:-} == --build-only ]]; then
  echo "built (--build-only): base image ${BASE_TIME:-?}, image $BUILD_TIME; no checks run"
  exit 0
fi

echo
echo "== the image's configuration =="
inspect() { "${PODMAN[@]}" image inspect --format "$1" "$IMAGE"; }
user=$(inspect '{{.Config.User}}')
check "USER is a non-root user ($user)" bash -c '[[ -n $1 && $1 != root && $1 != 0 && $1 != 0:* && $1 != root:* ]]' _ "$user"
cmd=$(inspect '{{json .Config.Cmd}}')
entrypoint=$(inspect '{{json .Config.Entrypoint}}')
check "CMD runs node itself as start:prod does, no npm or shell ($cmd, entrypoint $entrypoint)" \
  test "$cmd" = '["node","--import","./dist/src/instrumentation.js","dist/src/main.js"]' -a "$entrypoint" = null
health=$(inspect '{{json .HealthCheck}}')
check "HEALTHCHECK runs node ($health)" grep -q '"CMD","node",' <<<"$health"
env=$(inspect '{{json .Config.Env}}')
check "HOST=0.0.0.0, PORT=3000, DATA_DIR=/data by default" \
  bash -c '[[ $1 == *"\"HOST=0.0.0.0\""* && $1 == *"\"PORT=3000\""* && $1 == *"\"DATA_DIR=/data\""* ]]' _ "$env"
# What the service does not load has no place in the image: the build's other outputs, the dev tools
# (tools/, bench/) and the compiler, test, lint and build packages.
dist=$("${PODMAN[@]}" run --rm --network host --health-cmd none "$IMAGE" sh -c 'ls /app/dist' 2>/dev/null | tr '\n' ' ' || echo '?')
check "/app/dist holds only src ($dist)" test "$dist" = 'src '
tooling=$("${PODMAN[@]}" run --rm --network host --health-cmd none "$IMAGE" sh -c \
  'cd /app/node_modules && for p in typescript @nestjs/cli @nestjs/testing @nestjs/schematics jest ts-jest eslint prettier @stryker-mutator/core @redocly/cli openapi-typescript .bin/tsc; do [ -e "$p" ] && echo "$p"; done; echo checked' 2>/dev/null | tr '\n' ' ' || true)
check "node_modules holds no compiler, test, lint or build tooling (looked: $tooling)" test "$tooling" = 'checked '
versions=$("${PODMAN[@]}" run --rm --network host --health-cmd none "$IMAGE" sh -c 'echo "$(node --version) npm $(npm --version)"' 2>/dev/null || echo '?')
check "Node 26 in the image ($versions)" bash -c '[[ $1 == v26.* ]]' _ "$versions"

echo
echo "== a container against CI's PostgreSQL ($PG_SERVER/$DB_NAME), API_KEYS set =="
if psql "$PG_URL" -qAtc "CREATE DATABASE $DB_NAME" >/dev/null; then
  DB_CREATED=1
  pass "database $DB_NAME created"
else
  give_up "could not create database $DB_NAME on $PG_SERVER"
fi
PORT=$(free_port) || give_up "no free port"
KEY=ci-container-$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
name=$RUN_ID-server
# No systemd here: podman's periodic health timer cannot be set up (it says so on stderr);
# `podman healthcheck run` below runs the same check by hand.
"${PODMAN[@]}" run -d --name "$name" --network host \
  -e DATABASE_URL="$PG_SERVER/$DB_NAME" -e API_KEYS="$KEY" -e PORT="$PORT" -e SHUTDOWN_DELAY_SECONDS=5 \
  "$IMAGE" >/dev/null 2>"$WORK/run.err" ||
  { sed 's/^/    /' "$WORK/run.err"; give_up "podman run"; }
grep -v 'systemd' "$WORK/run.err" | sed 's/^/    /' || true
started=$SECONDS
if wait_ready "$PORT" "$name"; then
  pass "/readyz 200 on port $PORT after $((SECONDS - started)) s"
else
  give_up "the container did not become ready"
fi

status=$(create_pet "$PORT" "$KEY" || true)
check "POST /v1/pets -> 201 (got $status): $(head -c 200 "$WORK/created" 2>/dev/null)" test "$status" = 201
id=$(sed -n 's/.*"id":\([0-9]*\).*/\1/p' "$WORK/created" 2>/dev/null || true)
list=$(curl -sS -m 10 "http://127.0.0.1:$PORT/v1/pets?limit=100" -H "Authorization: Bearer $KEY" || true)
check "GET /v1/pets lists it: $(head -c 200 <<<"$list")" \
  bash -c '[[ -n $2 && $1 == *"\"id\":$2,\"name\":\"Rex\""* ]]' _ "$list" "$id"
status=$(curl -sS -m 10 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/v1/pets" -H 'Authorization: Bearer wrong-key' || true)
check "a wrong key -> 401 (got $status)" test "$status" = 401

# As the HEALTHCHECK's Retries=3 would: one slow run (a node start on a machine busy with the
# rest of CI can pass the 5 s timeout) is not yet unhealthy.
for attempt in 1 2 3; do
  hc_out=$(timeout 30 "${PODMAN[@]}" healthcheck run "$name" 2>&1) && hc=0 || hc=$?
  if ((hc == 0)) || grep -qiE 'not supported|systemd' <<<"$hc_out"; then break; fi
  echo "    podman healthcheck run, attempt $attempt: exit $hc: $hc_out"
done
if ((hc == 0)); then
  health=$("${PODMAN[@]}" inspect --format '{{.State.Health.Status}}' "$name" 2>/dev/null || true)
  check "podman healthcheck run: healthy (status $health)" test "$health" = healthy
  HEALTH_CHECKED=1
elif grep -qiE 'not supported|systemd' <<<"$hc_out" && ! grep -q unhealthy <<<"$hc_out"; then
  echo "  skip podman healthcheck run does not work here (not counted): $hc_out"
else
  fail "podman healthcheck run: exit $hc: $hc_out"
fi

in_container=$(timeout 30 "${PODMAN[@]}" exec "$name" sh -c \
  'echo "uid=$(id -u) gid=$(id -g) pid1=$(tr "\0" " " </proc/1/cmdline) pid1uid=$(awk "/^Uid:/ { print \$2 }" /proc/1/status)"' 2>&1 || true)
echo "    $in_container"
check "the service runs as a non-root uid" bash -c '[[ $1 =~ pid1uid=([0-9]+) && ${BASH_REMATCH[1]} != 0 && $1 =~ uid=([0-9]+) && ${BASH_REMATCH[1]} != 0 ]]' _ "$in_container"
check "PID 1 is node dist/src/main.js, with only the tracing switch loaded first" \
  bash -c '[[ $1 == *"pid1=node --import ./dist/src/instrumentation.js dist/src/main.js "* ]]' _ "$in_container"
check "DATA_DIR (/data) is writable by the service's user" \
  timeout 30 "${PODMAN[@]}" exec "$name" sh -c 'touch "$DATA_DIR/.write-test" && rm "$DATA_DIR/.write-test"'
issued=$(timeout 60 "${PODMAN[@]}" exec "$name" node dist/src/keys.js issue --label container-ci 2>&1 || true)
new_key=$(grep -o 'psk_[A-Za-z0-9_-]*' <<<"$issued" | head -1 || true)
status=$([[ -n $new_key ]] && curl -sS -m 10 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/v1/pets" -H "Authorization: Bearer $new_key" || echo none)
check "node dist/src/keys.js issue inside the container: a key that works (GET /v1/pets -> $status)" test "$status" = 200

# SIGTERM to PID 1 (podman kill): during SHUTDOWN_DELAY_SECONDS (5) the service still serves, with
# /readyz at 503 so that a balancer takes it out; then podman stop waits for the exit. /readyz is
# asked until it says 503, for up to 2 s: on a machine busy with the rest of CI, the signal and
# a request can reach the process in the same turn of its event loop, the request first.
timeout 30 "${PODMAN[@]}" kill --signal TERM "$name" >/dev/null 2>&1 || true
for _ in 1 2 3 4 5 6 7 8 9 10; do
  sleep 0.2
  status=$(curl -sS -m 2 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/readyz" || true)
  [[ $status == 503 ]] && break
done
check "after SIGTERM, during SHUTDOWN_DELAY_SECONDS: /readyz -> 503 (got $status)" test "$status" = 503
status=$(curl -sS -m 2 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/v1/pets" -H "Authorization: Bearer $KEY" || true)
check "after SIGTERM, during SHUTDOWN_DELAY_SECONDS: GET /v1/pets still 200 (got $status)" test "$status" = 200
stop_with_sigterm "$name"
# The service writes its log lines in batches (at most a second late, all of them at exit): read
# them now that it has stopped.
check "it listened on HOST 0.0.0.0 (the image's default)" grep -q "listening on http://0.0.0.0:$PORT" "$WORK/$name.log"
if [[ -n ${HEALTH_CHECKED:-} ]]; then
  check "the health check called GET /healthz" grep -q '"route":"/healthz"' "$WORK/$name.log"
fi

echo
echo "== a container with no DATABASE_URL: the embedded PostgreSQL in DATA_DIR, the first-run key =="
PORT=$(free_port) || give_up "no free port"
name=$RUN_ID-embedded
"${PODMAN[@]}" run -d --name "$name" --network host -e PORT="$PORT" "$IMAGE" >/dev/null 2>"$WORK/run.err" ||
  { sed 's/^/    /' "$WORK/run.err"; give_up "podman run"; }
started=$SECONDS
if wait_ready "$PORT" "$name"; then
  pass "/readyz 200 on port $PORT after $((SECONDS - started)) s (initdb included)"
  key=$(timeout 30 "${PODMAN[@]}" logs "$name" 2>/dev/null | sed -n 's/^  API key: \(psk_[A-Za-z0-9_-]*\)$/\1/p' | head -1)
  check "the first-run key was printed" test -n "$key"
  status=$([[ -n $key ]] && create_pet "$PORT" "$key" || echo none)
  check "POST /v1/pets with it -> 201 (got $status)" test "$status" = 201
  stop_with_sigterm "$name"
else
  fail "the container with the embedded PostgreSQL did not become ready"
fi

finish
