#!/bin/bash
# What the official image's entrypoint does for this stack: as root, own PGDATA and re-run as postgres;
# on an empty PGDATA, initdb with POSTGRES_USER as the superuser and POSTGRES_PASSWORD, allow
# password logins over TCP, create POSTGRES_DB; then exec the command (postgres -c ...).
set -euo pipefail
: "${PGDATA:=/var/lib/postgresql/data}"
if [ "${1:-}" = postgres ] && [ "$(id -u)" = 0 ]; then
  mkdir -p "$PGDATA" /var/run/postgresql
  chown -R postgres:postgres "$PGDATA" /var/run/postgresql
  chmod 700 "$PGDATA"
  exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi
if [ "${1:-}" = postgres ] && [ ! -s "$PGDATA/PG_VERSION" ]; then
  : "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD is required}"
  user=${POSTGRES_USER:-postgres}
  db=${POSTGRES_DB:-$user}
  pwfile=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" > "$pwfile"
  initdb -D "$PGDATA" -U "$user" --pwfile="$pwfile" -E UTF8 --locale=C.UTF-8 \
         --auth-local=trust --auth-host=scram-sha-256
  rm -f "$pwfile"
  echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
  printf "listen_addresses = '*'\nunix_socket_directories = '/var/run/postgresql'\n" >> "$PGDATA/postgresql.conf"
  # As the official image: a temporary server on the socket only creates the database, then stops
  # (so "ready to accept connections" is logged twice, which Testcontainers waits for).
  pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start
  if [ "$db" != postgres ]; then
    psql -v ON_ERROR_STOP=1 -h /var/run/postgresql -U "$user" -d postgres -c "CREATE DATABASE \"$db\" OWNER \"$user\""
  fi
  pg_ctl -D "$PGDATA" -m fast -w stop
fi
exec "$@"
