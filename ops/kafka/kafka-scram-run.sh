#!/bin/sh
# The kafka service's command (docker-compose.yml): starts the image's own start script, then sets
# the SCRAM-SHA-256 credential of the roles' Kafka user from the client file the roles are given
# (IM_KAFKA_CONFIG_FILE, mounted here too), over the listener that only this container's loopback
# reaches. Run on every start, so a changed password in that file (a rotation) takes effect with a
# restart of this service, or at once with:
#   docker compose exec kafka /bin/sh /opt/im/kafka-scram-run.sh --set-only
# The password never reaches a log; it is on kafka-configs' command line inside this container only.
set -u
secret=${IM_KAFKA_CLIENT_FILE:-/run/secrets/kafka-client.properties}
user=$(sed -n 's/.*username="\([^"]*\)".*/\1/p' "$secret" 2>/dev/null)
password=$(sed -n 's/.*password="\([^"]*\)".*/\1/p' "$secret" 2>/dev/null)
if [ -z "$user" ] || [ -z "$password" ]; then
  echo "$secret: no username=\"...\" password=\"...\" in sasl.jaas.config (see ops/kafka/kafka-client.properties.example)" >&2
  exit 1
fi

set_credential() {
  /opt/kafka/bin/kafka-configs.sh --bootstrap-server 127.0.0.1:9094 --alter --entity-type users --entity-name "$user" \
    --add-config "SCRAM-SHA-256=[iterations=8192,password=$password]" > /dev/null 2>&1
}

if [ "${1:-}" = "--set-only" ]; then
  set_credential && echo "SCRAM-SHA-256 credential of $user set" && exit 0
  echo "could not set the credential of $user (is the broker up?)" >&2; exit 1
fi

/etc/kafka/docker/run &
broker=$!
trap 'kill -TERM "$broker" 2>/dev/null; wait "$broker"; exit $?' TERM INT
until set_credential; do
  if ! kill -0 "$broker" 2>/dev/null; then wait "$broker"; exit $?; fi
  sleep 1
done
echo "SCRAM-SHA-256 credential of $user set"
wait "$broker"
exit $?
