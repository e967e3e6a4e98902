#!/bin/sh
# KAFKA_* environment -> server.properties, as the official image does (single underscores become
# dots; the names used here have no others), format the log directory once, run the broker.
set -eu
props=/opt/kafka/config/server.properties
: > "$props"
env | sort | while IFS='=' read -r name value; do
  case "$name" in
    KAFKA_HEAP_OPTS|KAFKA_OPTS|KAFKA_JVM_OPTS) ;;
    KAFKA_*) key=$(printf '%s' "${name#KAFKA_}" | tr 'A-Z_' 'a-z.'); printf '%s=%s\n' "$key" "$value" >> "$props" ;;
  esac
done
logdirs=$(sed -n 's/^log\.dirs=//p' "$props")
: "${logdirs:=/tmp/kraft-combined-logs}"
cp="/opt/kafka/libs/*"
if [ ! -f "${logdirs%%,*}/meta.properties" ]; then
  : "${CLUSTER_ID:?CLUSTER_ID is required to format the log directory}"
  java -cp "$cp" kafka.tools.StorageTool format --ignore-formatted -t "$CLUSTER_ID" -c "$props"
fi
exec java ${KAFKA_HEAP_OPTS:--Xmx512m} ${KAFKA_OPTS:-} -Dlogback.configurationFile=/opt/kafka/config/logback.xml \
  -cp "$cp" kafka.Kafka "$props"
