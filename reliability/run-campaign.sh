#!/usr/bin/env bash
# Builds the reliability module (and what it depends on) and runs the randomized fault campaign, e.g.
#   reliability/run-campaign.sh --seconds 300 --users 20 --rate 30
#   reliability/run-campaign.sh --seed 42 --faults broker_kill,pg_crash,gateway_kill
#   reliability/run-campaign.sh --kafka-nodes 3 --pg-standby --seconds 900   # cluster: every kind, failovers included
#   reliability/run-campaign.sh --help
# Exits non-zero on any violation. Needs Java 17 and Maven. MVN_FLAGS=-o runs Maven offline.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
# One reactor build (nothing is installed into ~/.m2): sibling modules resolve to their target/ jars.
mvn -B -q ${MVN_FLAGS:-} -pl reliability -am package dependency:build-classpath -DskipTests -Dmdep.outputFile=target/cp.txt
exec java ${JAVA_OPTS:-} -Dlogback.configurationFile="$root/reliability/src/main/resources/campaign-logback.xml" \
  -cp "reliability/target/classes:$(cat reliability/target/cp.txt)" im.reliability.CampaignMain "$@"
