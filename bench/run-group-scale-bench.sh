#!/usr/bin/env bash
# Builds the bench module (and what it depends on) and runs im.bench.GroupScaleBench with the given options, e.g.
#   bench/run-group-scale-bench.sh                                  # members 100, 1000, 10000 (~5 min on 2 cores)
#   bench/run-group-scale-bench.sh --members 100,1000 --events 100   # quicker
#   bench/run-group-scale-bench.sh --help
# Needs Java 17 and Maven; no Kafka broker (TopologyTestDriver, real RocksDB stores under java.io.tmpdir).
# MVN_FLAGS=-o runs Maven offline.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
# One reactor build (nothing is installed into ~/.m2): sibling modules resolve to their target/ jars.
mvn -B -q ${MVN_FLAGS:-} -pl bench -am package dependency:build-classpath -DskipTests -Dmdep.outputFile=target/cp.txt
exec java ${JAVA_OPTS:--Xmx2g} -cp "bench/target/classes:$(cat bench/target/cp.txt)" im.bench.GroupScaleBench "$@"
