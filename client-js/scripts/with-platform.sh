#!/usr/bin/env bash
# Starts a throw-away platform (`./im platform`: embedded PostgreSQL and Kafka, data in a temp dir,
# gateway on IM_GATEWAY_PORT, default 18480, its admin listener on IM_ADMIN_PORT, default 18481),
# waits until its admin API answers, runs the given command with IM_URL, IM_ADMIN_URL and
# IM_ADMIN_TOKEN set, then stops the platform. Used by .ci/run:
#   client-js/scripts/with-platform.sh bash -c 'cd client-js && npm ci && npm test'
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
data="$(mktemp -d)"
port="${IM_GATEWAY_PORT:-18480}"
admin_port="${IM_ADMIN_PORT:-18481}"
export IM_ADMIN_TOKEN="${IM_ADMIN_TOKEN:-js-it-admin-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')}"
# Short sweep so that the hint test is quick; any free ports for PostgreSQL and Kafka.
IM_PG_DATA_DIR="$data/pg" IM_KAFKA_DATA_DIR="$data/kafka" IM_PG_PORT=0 IM_KAFKA_PORT=0 \
  IM_GATEWAY_PORT="$port" IM_ADMIN_PORT="$admin_port" IM_SWEEP_MS=500 IM_HINT_BACKOFF_MS=1000 \
  "$root/im" platform >"$data/platform.log" 2>&1 &
pid=$!
stop() {
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  rm -rf "$data"
}
trap stop EXIT
export IM_URL="http://127.0.0.1:$port"
export IM_ADMIN_URL="http://127.0.0.1:$admin_port"
deadline=$((SECONDS + 600))   # the first run builds im.jar
until curl -fsS -o /dev/null -H "Authorization: Bearer $IM_ADMIN_TOKEN" "$IM_ADMIN_URL/admin/users?limit=1" 2>/dev/null; do
  if ! kill -0 "$pid" 2>/dev/null || [ $SECONDS -gt $deadline ]; then
    echo "platform did not start; its log:" >&2
    tail -50 "$data/platform.log" >&2
    exit 1
  fi
  sleep 1
done
echo "platform up at $IM_URL" >&2
"$@"
