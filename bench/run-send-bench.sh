#!/usr/bin/env bash
# Builds the bench module (and what it depends on) and runs im.bench.SendBench with the given options, e.g.
#   bench/run-send-bench.sh --conversations 1000
#   bench/run-send-bench.sh --conversations 1
#   bench/run-send-bench.sh --help
# Needs Java 17, Maven and pgbench (Debian/Ubuntu: apt-get install postgresql-client).
# MVN_FLAGS=-o runs Maven offline.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
# One reactor build (nothing is installed into ~/.m2): sibling modules resolve to their target/ jars.
mvn -B -q ${MVN_FLAGS:-} -pl bench -am package dependency:build-classpath -DskipTests -Dmdep.outputFile=target/cp.txt
exec java ${JAVA_OPTS:-} -cp "bench/target/classes:$(cat bench/target/cp.txt)" im.bench.SendBench "$@"
