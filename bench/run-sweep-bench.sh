#!/usr/bin/env bash
# Builds the bench module (and what it depends on) and runs im.bench.SweepBench with the given options, e.g.
#   bench/run-sweep-bench.sh                                   # N = 10k, 100k, 1M; f = 1 %, 0.1 %; both sides, ~2.5 min
#   bench/run-sweep-bench.sh --sizes 10000,100000 --db-max 100000   # quicker
#   bench/run-sweep-bench.sh --db-max 100000                   # 1M for the Streams side only
#   bench/run-sweep-bench.sh --help
# Needs Java 17 and Maven; PostgreSQL is embedded (zonky), no Kafka broker (TopologyTestDriver).
# MVN_FLAGS=-o runs Maven offline.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
# One reactor build (nothing is installed into ~/.m2): sibling modules resolve to their target/ jars.
mvn -B -q ${MVN_FLAGS:-} -pl bench -am package dependency:build-classpath -DskipTests -Dmdep.outputFile=target/cp.txt
exec java ${JAVA_OPTS:--Xmx2g} -cp "bench/target/classes:$(cat bench/target/cp.txt)" im.bench.SweepBench "$@"
