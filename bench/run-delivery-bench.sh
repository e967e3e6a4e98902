#!/usr/bin/env bash
# Builds the bench module (and what it depends on) and runs im.bench.DeliveryBench with the given options, e.g.
#   bench/run-delivery-bench.sh                       # 50 groups x 8 members, 200 sends/s, modes sdk,raw,raw-each (~2.5 min)
#   bench/run-delivery-bench.sh --rate 500
#   bench/run-delivery-bench.sh --help
# Needs Java 17 and Maven only (PostgreSQL and Kafka are embedded). MVN_FLAGS=-o runs Maven offline.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
# One reactor build (nothing is installed into ~/.m2): sibling modules resolve to their target/ jars.
mvn -B -q ${MVN_FLAGS:-} -pl bench -am package dependency:build-classpath -DskipTests -Dmdep.outputFile=target/cp.txt
# This one JVM hosts the broker, every role and hundreds of SDK clients that keep every event they
# received in memory. G1 copied that growing set between its survivor spaces up to 15 times: young
# pauses of 80-140 ms at 600 sends/s. Promoting what survived two collections keeps them under
# 40 ms (docs/benchmarks.md, "End-to-end delivery"). JAVA_OPTS comes after it and wins.
exec java -XX:MaxTenuringThreshold=2 ${JAVA_OPTS:-} -cp "bench/target/classes:$(cat bench/target/cp.txt)" im.bench.DeliveryBench "$@"
