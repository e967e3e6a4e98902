#!/usr/bin/env bash
# Maven with IM_STACK=containers on a machine without Docker or registry access: podman's
# Docker-compatible API socket for Testcontainers, and the local stand-ins that ops/compose-smoke.sh
# builds substituted for postgres:17 and apache/kafka:4.3.1 (im.testkit.LocalImageSubstitutor).
# Ryuk (Testcontainers' reaper, a registry image) is off: the test stack stops its containers itself.
#
#   ops/test-containers.sh -pl gateway -am verify -Dit.test=DeliveryIT -Dtest=NONE \
#       -Dsurefire.failIfNoSpecifiedTests=false -Dfailsafe.failIfNoSpecifiedTests=false
set -euo pipefail
cd "$(dirname "$0")/.."
for image in localhost/im-standin/postgres:17 localhost/im-standin/kafka:4.3.1; do
  podman image exists "$image" || { echo "no image $image: run ops/compose-smoke.sh once" >&2; exit 1; }
done
sock=/run/im-test-podman-$$.sock
podman system service --time=0 "unix://$sock" & service=$!
trap 'kill "$service"; rm -f "$sock"' EXIT
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
[ -S "$sock" ] || { echo "podman system service did not open $sock" >&2; exit 1; }
DOCKER_HOST=unix://$sock TESTCONTAINERS_RYUK_DISABLED=true TESTCONTAINERS_CHECKS_DISABLE=true \
TESTCONTAINERS_IMAGE_SUBSTITUTOR=im.testkit.LocalImageSubstitutor \
TESTCONTAINERS_LOCAL_IMAGES=postgres:17=localhost/im-standin/postgres:17,apache/kafka:4.3.1=localhost/im-standin/kafka:4.3.1 \
IM_STACK=containers mvn -B "$@"
