#!/usr/bin/env bash
# The README's two commands on fresh clones, as a newcomer runs them, for three kinds of user:
#
#   petdev       a non-root user with a private home (mode 700), clone in ~/petstore:
#                `npm ci && npm test` (no DATABASE_URL: the embedded PostgreSQL in ./data/test),
#                then `npm start` on that install (the embedded PostgreSQL in ~/petstore/data;
#                `npm ci` on a fresh clone is the test's and root's two starts')
#   root-private root, clone in a fresh `mktemp -d` (mode 700): `npm ci && npm start`
#   root-public  root, clone in a directory anyone can enter (mode 755): `npm ci && npm start`
#
# Every start: wait for the printed first-run key (`  API key: psk_...` on stdout) and /readyz,
# create a pet with that key, list it, SIGTERM npm (npm start execs npm run start:prod, which
# forwards the signal to the service), expect exit code 0, no process of that start left, and no
# postgres left on that clone's cluster. Each user runs with a clean environment: HOME, PATH with
# Node 26 first, the npm cache in its home; no DATABASE_URL, REDIS_URL or CI.
#
#   sudo bash scripts/ci/fresh-clone-users.sh     # as root; the clone is of this checkout's HEAD
#   NODE_BIN=<dir holding node 26, readable by all> to skip installing Node 26 (.ci/run passes one)
#   PETSTORE_USER=<name> for another user than petdev (created with useradd -m when missing)
#   SCENARIOS="root-public" to run only some of: petdev root-private root-public
#
# Ends with a report (first lines of each start, its key, the create and list answers, the test
# counts) and `checks: N passed, N failed`; exit code 1 when any check failed. Temp dirs, the
# clone in the user's home and every process started here are removed even on failure; the user
# and its npm cache stay.
set -euo pipefail

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
USER_NAME=${PETSTORE_USER:-petdev}
KEY_TIMEOUT=${KEY_TIMEOUT:-600}   # npm ci + build + first start, on a cold npm cache
READY_TIMEOUT=60
EXIT_TIMEOUT=60

if [[ $(id -u) != 0 ]]; then
  echo "fresh-clone-users.sh: run as root (it creates a user and runs commands as it)" >&2
  exit 2
fi

WORK=$(mktemp -d)        # state and logs of this run; root only
chmod 700 "$WORK"
: >"$WORK/checks" >"$WORK/pgids" >"$WORK/dirs" >"$WORK/clusters"

cleanup() {
  local rc=$? pgid dir cluster pid
  set +e
  # Whatever a failed scenario left running: each start ran in its own process group.
  while read -r pgid; do
    [[ -n $pgid ]] && kill -KILL -- "-$pgid" 2>/dev/null
  done <"$WORK/pgids"
  # Its postgres (as root it runs as the OS user postgres, in the same group, but may have been
  # reparented): any postgres whose data directory is one of this run's clusters.
  while read -r cluster; do
    [[ -z $cluster ]] && continue
    for pid in $(postgres_pids_on "$cluster"); do kill -QUIT "$pid" 2>/dev/null; done
  done <"$WORK/clusters"
  sleep 1
  while read -r cluster; do
    [[ -z $cluster ]] && continue
    for pid in $(postgres_pids_on "$cluster"); do kill -KILL "$pid" 2>/dev/null; done
    # A root cluster kept outside the clone (data/postgres a symlink to it) goes with the clone.
    case $cluster in */data/postgres) ;; *) [[ -f $cluster/PG_VERSION ]] && rm -rf "$cluster" ;; esac
  done <"$WORK/clusters"
  while read -r dir; do
    [[ -n $dir ]] && rm -rf "$dir"
  done <"$WORK/dirs"
  rm -rf "$WORK"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say() { printf '%s\n' "$*"; }
# Each scenario reports into a file of its own (SCENARIO is set when it starts): they run side by side.
report() { printf '%s\n' "$@" >>"$WORK/report.${SCENARIO:-main}"; }
pass() { say "  ok   $*"; echo pass >>"$WORK/checks"; }
# Counts a failed check; the scenario goes on.
fail_soft() { say "  FAIL $*" >&2; echo fail >>"$WORK/checks"; report "  FAILED: $*"; }
# Counts a failed check and ends the scenario (each runs in a subshell); the next one still runs.
fail() { fail_soft "$@"; touch "$WORK/ended-by-fail.${SCENARIO:-main}"; exit 1; }

# PIDs of postgres processes whose command line names DIR as the data directory (-D DIR).
# Matches on the path, so the machine's own PostgreSQL (another -D) is never taken.
postgres_pids_on() {
  local dir=$1 pid
  for pid in $(pgrep -x postgres 2>/dev/null); do
    # 2>/dev/null first: a process that ended meanwhile makes the redirection itself fail.
    tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | grep -qF -- "-D $dir " && echo "$pid"
  done
  return 0
}

free_port() {
  "$NODE_BIN/node" -e "const s=require('node:net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})"
}

# as_cmd USER DIR COMMAND: sets AS_CMD to the command line that runs COMMAND (bash) in DIR as USER
# with the clean environment of a newcomer; each program in it execs the next, down to bash.
as_cmd() {
  local user=$1 dir=$2 cmd=$3 home
  home=$(getent passwd "$user" | cut -d: -f6)
  AS_CMD=()
  if [[ $user != root ]]; then AS_CMD=(setpriv --reuid="$user" --regid="$(id -g "$user")" --init-groups); fi
  AS_CMD+=(env -i HOME="$home" USER="$user" LOGNAME="$user" SHELL=/bin/bash LANG=C.UTF-8 TERM=dumb
    PATH="$NODE_BIN:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    npm_config_cache="$home/.npm" npm_config_update_notifier=false "${NETWORK_ENV[@]}"
    bash -c "cd \"\$0\" && $cmd" "$dir")
}

# The machine's way to the registry goes with every user: its CA bundle and proxies, when set.
# npm reads the machine's cafile from <node prefix>/etc/npmrc, which another Node's prefix lacks.
NETWORK_ENV=()
if [[ -z ${NODE_EXTRA_CA_CERTS:-} ]]; then
  cafile=$(npm config get cafile 2>/dev/null || true)
  [[ -f $cafile ]] && export NODE_EXTRA_CA_CERTS=$cafile
fi
for var in NODE_EXTRA_CA_CERTS SSL_CERT_FILE SSL_CERT_DIR http_proxy https_proxy no_proxy HTTP_PROXY HTTPS_PROXY NO_PROXY; do
  [[ -n ${!var:-} ]] && NETWORK_ENV+=("$var=${!var}")
done

# Running and not a zombie (a background child that exited stays one until waited for).
alive() { [[ $(ps -o stat= -p "$1" 2>/dev/null) == [^Z]* ]]; }

# clone DEST: a fresh clone of this checkout's HEAD (copied objects: no hardlinks into the checkout,
# whose files a chown of the clone would otherwise change too).
HEAD_SHA=$(git -C "$SRC" rev-parse HEAD)
clone() {
  git -c safe.directory='*' clone -q --no-hardlinks "$SRC" "$1"
  git -C "$1" -c advice.detachedHead=false checkout -q "$HEAD_SHA"
}

# start_check LABEL USER DIR [INSTALL]: `npm ci && npm start` in DIR as USER (INSTALL=no: `npm start`
# alone, on the node_modules already there), and the checks above.
start_check() {
  local label=$1 user=$2 dir=$3 command="npm ci && npm start" install="npm ci && "
  [[ ${4:-yes} == no ]] && command="npm start" install=""
  local out=$WORK/$label.start.out err=$WORK/$label.start.err port pid key cluster pg_pid code body rc waited
  port=$(free_port)
  say "-- $label: $command in $dir as $user (PORT=$port) --"
  # setsid: its own process group, whose id is its pid (this subshell's child is no group leader,
  # so setsid execs rather than forks), and every exec below keeps that pid: SIGTERM reaches npm.
  as_cmd "$user" "$dir" "${install}PORT=$port exec npm start"
  # Created here, not by the background job's redirection, which may not have run yet when the
  # loop below first reads the file.
  : >"$out" >"$err"
  setsid "${AS_CMD[@]}" >"$out" 2>"$err" </dev/null &
  pid=$!
  echo "$pid" >>"$WORK/pgids"

  for ((waited = 0; ; waited++)); do
    key=$(sed -n 's/^  API key: \(psk_[A-Za-z0-9_-]*\)$/\1/p' "$out" | head -n 1)
    [[ -n $key ]] && break
    if ! alive "$pid" || ((waited >= KEY_TIMEOUT)); then
      tail -n 30 "$out" "$err" >&2
      fail "$label: no '  API key: psk_...' line on stdout after ${waited}s"
    fi
    sleep 1
  done
  pass "$label: printed a first-run key on stdout (${waited}s after \`$command\` began)"
  for ((waited = 0; ; waited++)); do
    code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/readyz" || true)
    [[ $code == 200 ]] && break
    ((waited >= READY_TIMEOUT)) && { tail -n 30 "$out" "$err" >&2; fail "$label: /readyz answered ${code:-nothing}, not 200, for ${READY_TIMEOUT}s"; }
    sleep 1
  done
  pass "$label: GET /readyz 200"

  # Its postgres: the pid in postmaster.pid of the cluster that data/postgres names.
  cluster=$(readlink -f "$dir/data/postgres" || true)
  [[ -n $cluster ]] && echo "$cluster" >>"$WORK/clusters"
  [[ -n $cluster && -f $cluster/postmaster.pid ]] || fail "$label: no running cluster at $dir/data/postgres"
  pg_pid=$(head -n 1 "$cluster/postmaster.pid")
  postgres_pids_on "$cluster" | grep -qx "$pg_pid" || fail "$label: postmaster.pid names $pg_pid, which is no postgres on $cluster"
  pass "$label: embedded postgres pid $pg_pid (user $(ps -o user= -p "$pg_pid")) on $cluster"

  local create=$WORK/$label.create list=$WORK/$label.list
  code=$(curl -sS -D "$create.h" -o "$create" -w '%{http_code}' -X POST "http://127.0.0.1:$port/v1/pets" \
    -H "Authorization: Bearer $key" -H 'Content-Type: application/json' -d '{"name":"Rex","categoryId":1}')
  body=$(cat "$create")
  local created=$code
  [[ $code == 201 ]] || fail "$label: POST /v1/pets answered $code $body"
  "$NODE_BIN/node" -e '
    const p = JSON.parse(process.argv[1]);
    if (!(Number.isInteger(p.id) && p.name === "Rex" && p.categoryId === 1 && p.status === "available")) process.exit(1);' "$body" ||
    fail "$label: POST /v1/pets 201 but the body is not the new pet: $body"
  local location
  location=$(sed -n 's/^[Ll]ocation: *\([^[:space:]]*\).*/\1/p' "$create.h")
  created+=" ${location:+Location: $location }$body"
  pass "$label: POST /v1/pets with the printed key: 201"
  code=$(curl -sS -o "$list" -w '%{http_code}' "http://127.0.0.1:$port/v1/pets" -H "Authorization: Bearer $key")
  [[ $code == 200 ]] || fail "$label: GET /v1/pets answered $code $(cat "$list")"
  "$NODE_BIN/node" -e '
    const created = JSON.parse(process.argv[1]), list = JSON.parse(process.argv[2]);
    const pets = Array.isArray(list) ? list : list.items ?? list.data ?? [];
    if (!pets.some((p) => p.id === created.id && p.name === "Rex")) process.exit(1);' "$body" "$(cat "$list")" ||
    fail "$label: GET /v1/pets 200 but without the new pet: $(cat "$list")"
  pass "$label: GET /v1/pets: 200 with the new pet"

  kill -TERM "$pid"
  # A watchdog, since `wait` has no time limit: a start that ignores SIGTERM is killed and fails.
  (sleep "$EXIT_TIMEOUT"; kill -KILL -- "-$pid" 2>/dev/null) &
  local watchdog=$!
  rc=0
  wait "$pid" || rc=$?
  kill "$watchdog" 2>/dev/null || true
  wait "$watchdog" 2>/dev/null || true
  [[ $rc == 0 ]] || { tail -n 20 "$out" "$err" >&2; fail "$label: after SIGTERM npm start exited with $rc, not 0"; }
  pass "$label: SIGTERM: npm start exited 0"
  if pgrep -g "$pid" >/dev/null; then
    fail "$label: processes of the start left after exit: $(pgrep -a -g "$pid" | tr '\n' ';')"
  fi
  if kill -0 "$pg_pid" 2>/dev/null || [[ -n $(postgres_pids_on "$cluster") ]]; then
    fail "$label: postgres left running on $cluster: $(postgres_pids_on "$cluster" | tr '\n' ' ')"
  fi
  pass "$label: no process of the start and no postgres on $cluster left"
  [[ -f $cluster/PG_VERSION ]] || fail "$label: no cluster (PG_VERSION) at $cluster after the stop"

  report "" "-- $label: $command as $user, clone in $dir (parent $(dirname "$dir") mode $(stat -c '%a' "$(dirname "$dir")")), Node $("$NODE_BIN/node" --version) --"
  report "first lines of \`npm start\` (stdout, its non-empty lines from npm's banner to the key):"
  # Past 14 lines, the first 8 and the last 4; log lines cut at 220 characters.
  awk '/^> petstore@.* start$/ {on = 1} on && NF {print "  | " substr($0, 1, 220)} /^  API key: psk_/ && on {exit}' "$out" |
    awk '{line[NR] = $0} END {for (i = 1; i <= NR; i++) if (NR <= 14 || i <= 8 || i > NR - 4) print line[i]; else if (i == 9) print "  | ... (" NR - 12 " more lines)"}' >>"$WORK/report.${SCENARIO:-main}"
  report "key: $key" \
    "POST /v1/pets {\"name\":\"Rex\",\"categoryId\":1} -> $created" \
    "GET /v1/pets -> 200 $(cat "$list")" \
    "SIGTERM: exit code 0; postgres pid $pg_pid (-D $cluster) gone, no process of the start left" \
    "data in $dir/data: $(cd "$dir/data" && for f in *; do if [[ -L $f ]]; then printf '%s -> %s  ' "$f" "$(readlink "$f")"; else printf '%s  ' "$f"; fi; done)"
  # stderr, less npm's warnings about the machine's root ~/.npmrc (nodedir).
  local errors
  errors=$(grep -v 'Unknown [a-z]* config "nodedir"' "$err" || true)
  [[ -n $errors ]] && report "stderr of the start, last 5 lines (besides npm's nodedir warnings):" "$(tail -n 5 <<<"$errors" | sed 's/^/  ! /')"
  return 0
}

scenario_petdev() {
  local home dir
  if ! id "$USER_NAME" >/dev/null 2>&1; then
    useradd -m -s /bin/bash "$USER_NAME"
    say "created user $USER_NAME"
  fi
  home=$(getent passwd "$USER_NAME" | cut -d: -f6)
  [[ $home != / && -d $home ]] || fail "$USER_NAME has no home directory ($home)"
  chmod 700 "$home"
  [[ $(stat -c '%a %U' "$home") == "700 $USER_NAME" ]] || fail "$home is $(stat -c '%a %U' "$home"), not 700 $USER_NAME"
  pass "user $USER_NAME (uid $(id -u "$USER_NAME")), home $home mode 700"
  dir=$home/petstore
  echo "$dir" >>"$WORK/dirs"
  rm -rf "$dir"
  clone "$dir"
  chown -R "$USER_NAME:" "$dir"
  pass "clone of $HEAD_SHA in $dir, owned by $USER_NAME"
  local before
  before=$(pgrep -u "$USER_NAME" -x postgres | sort || true)

  say "-- $USER_NAME: npm ci && npm test in $dir (no DATABASE_URL: embedded PostgreSQL in ./data/test) --"
  local log=$WORK/petdev.test.log rc=0 started=$SECONDS
  as_cmd "$USER_NAME" "$dir" 'npm ci && npm test'
  { "${AS_CMD[@]}" </dev/null 2>&1 || echo $? >"$log.rc"; } | tee "$log"
  [[ -e $log.rc ]] && rc=$(cat "$log.rc")
  local took=$((SECONDS - started)) suites tests
  suites=$(sed -n 's/^Test Suites: *//p' "$log" | tail -n 1)
  tests=$(sed -n 's/^Tests: *//p' "$log" | tail -n 1)
  report "" "-- $USER_NAME: npm ci && npm test in $dir, no DATABASE_URL, Node $("$NODE_BIN/node" --version) ($took s, exit code $rc) --" "  Test Suites: $suites" "  Tests:       $tests"
  # A failing test is counted, and the start below still runs: it is the other README command.
  if [[ $rc == 0 ]]; then pass "$USER_NAME: npm ci && npm test exited 0 ($tests)"; else fail_soft "$USER_NAME: npm ci && npm test exited $rc ($tests)"; fi
  local after
  after=$(pgrep -u "$USER_NAME" -x postgres | sort || true)
  [[ $after == "$before" ]] || fail "$USER_NAME: postgres left running after npm test: $(comm -13 <(echo "$before") <(echo "$after") | tr '\n' ' ')"
  [[ -d $dir/data/test ]] || fail "$USER_NAME: npm test made no $dir/data/test (where the README says the tests' embedded PostgreSQL lives)"
  pass "$USER_NAME: the tests ran on the embedded cluster in $dir/data/test; no postgres left"

  start_check "$USER_NAME" "$USER_NAME" "$dir" no
  # The README: the cluster lives in ./data, i.e. ~/petstore/data, owned by the user.
  local cluster
  cluster=$(readlink -f "$dir/data/postgres")
  [[ $cluster == "$dir/data/postgres" ]] || fail "$USER_NAME: the cluster is at $cluster, not in $dir/data"
  [[ $(stat -c '%U' "$cluster") == "$USER_NAME" && -f $dir/data/postgres-password ]] ||
    fail "$USER_NAME: $cluster not owned by $USER_NAME, or no $dir/data/postgres-password"
  pass "$USER_NAME: the data lives in ~/petstore/data ($(ls "$dir/data" | tr '\n' ' '))"
  after=$(pgrep -u "$USER_NAME" -x postgres | sort || true)
  [[ $after == "$before" ]] || fail "$USER_NAME: postgres of $USER_NAME left running"
}

scenario_root() { # LABEL MODE
  local label=$1 mode=$2 parent dir
  parent=$(mktemp -d)
  echo "$parent" >>"$WORK/dirs"
  chmod "$mode" "$parent"
  dir=$parent/petstore
  clone "$dir"
  pass "$label: clone of $HEAD_SHA in $dir (parent mode $(stat -c '%a' "$parent"))"
  start_check "$label" root "$dir"
}

# -- main --
say "== fresh clones: the README's commands as $USER_NAME (private home) and as root (mode 700 and 755 directories) =="
if [[ -z ${NODE_BIN:-} ]]; then
  node_dir=$(mktemp -d)
  echo "$node_dir" >>"$WORK/dirs"
  NODE_BIN=$(bash "$SRC/scripts/ci/install-node.sh" 26 "$node_dir")
fi
[[ $("$NODE_BIN/node" --version) == v26.* ]] || { echo "NODE_BIN=$NODE_BIN holds no Node 26" >&2; exit 2; }
setpriv --reuid=nobody --regid=nogroup --clear-groups "$NODE_BIN/node" --version >/dev/null ||
  { echo "$NODE_BIN/node is not runnable by other users" >&2; exit 2; }
say "Node $("$NODE_BIN/node" --version) from $NODE_BIN; npm $(PATH="$NODE_BIN:$PATH" npm --version); clone of $HEAD_SHA"

# run_scenario NAME: one scenario in a subshell; a failure is counted, and noted in $WORK/failed.NAME.
run_scenario() {
  local name=$1 scenario rc
  local SCENARIO=$name
  case $name in
    petdev) scenario=scenario_petdev ;;
    root-private) scenario="scenario_root root-private 700" ;;
    root-public) scenario="scenario_root root-public 755" ;;
    *) echo "unknown scenario $name (petdev, root-private, root-public)" >&2; exit 2 ;;
  esac
  set +e
  (
    set -eE
    trap 'echo "  FAIL $name: \`$BASH_COMMAND\` exited $? (line $LINENO)" >&2' ERR
    $scenario
  )
  rc=$?
  set -e
  # A scenario that broke on a command (set -e) rather than on a check still counts as a failure.
  if ((rc != 0)) && [[ ! -e $WORK/ended-by-fail.$name ]]; then
    echo fail >>"$WORK/checks"
    report "" "  FAILED: $name stopped on a command that exited $rc (see the log above)"
  fi
  ((rc == 0)) || touch "$WORK/failed.$name"
}

# The non-root user's `npm test` is most of the wait, and shares nothing with root's clones (its
# own user, home, npm cache and embedded cluster): root's two starts run beside it, one after the other.
scenarios=(${SCENARIOS:-petdev root-private root-public})
lanes=()
for name in "${scenarios[@]}"; do
  if [[ $name == petdev ]]; then run_scenario petdev & lanes+=($!); fi
done
(for name in "${scenarios[@]}"; do [[ $name == petdev ]] || run_scenario "$name"; done) &
lanes+=($!)
for lane in "${lanes[@]}"; do wait "$lane" || true; done
failed=0
compgen -G "$WORK/failed.*" >/dev/null && failed=1
(($(grep -c '^fail$' "$WORK/checks" || true) > 0)) && failed=1

echo
echo "== report: fresh clones (keys are throwaway, from throwaway clones) =="
cat "$WORK"/report.* 2>/dev/null || true
echo
npass=$(grep -c '^pass$' "$WORK/checks" || true)
nfail=$(grep -c '^fail$' "$WORK/checks" || true)
echo "checks: $npass passed, $nfail failed"
exit "$failed"
