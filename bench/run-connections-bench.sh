#!/usr/bin/env bash
# Idle subscribed connections against `./im platform`, black box: builds the bench module (and what it
# depends on, which refreshes launcher/target/im.jar) and runs im.bench.ConnectionsBench, which for the
# empty platform and then each size N starts a fresh `./im platform` (child process, temporary data dir,
# free ports), creates N users/devices/direct conversations through the admin API, opens N WebSockets
# (auth, sub, ack the head, then silent), settles, and measures the platform's idle CPU (JVM + embedded
# PostgreSQL, from /proc), heap after a full GC (jcmd), RSS and push latency to idle devices. E.g.
#   bench/run-connections-bench.sh                                        # N = 1000, 5000, 15000: ~14 min
#   bench/run-connections-bench.sh --sizes 200,1000 --settle 15 --window 15   # quick check, ~4 min
#   bench/run-connections-bench.sh --sizes 300 --settle 10 --window 10 --reconnect --no-empty   # + reconnect storm, ~1.5 min
#   bench/run-connections-bench.sh --help
# --reconnect adds, per size, after the pushes: all N close normally, --pending messages (3) go to each offline device,
# then all N reconnect spread over --reconnect-window-s (5): auth, sub, sync from the held seq, ack the head; printed:
# time to convergence, connect -> ack p50/p99/max, errors, RATE_LIMITED retries, devices not converged within
# --converge-timeout-s (60) and whether every device synced exactly the messages it missed (a second table).
# Needs Java 17 with jcmd, and Maven. Run it alone on a quiet machine: the load average is printed at
# start and end. A process may hold at most `ulimit -Hn` open files, which bounds N (each side holds N
# sockets). MVN_FLAGS replaces the Maven flags (default -o, offline); JAVA_OPTS the harness's JVM flags.
# Every platform runs from one copy of launcher/target/im.jar taken at start (`--pin-jar`: `java -jar <copy>
# platform`, which is what ./im execs): ./im rebuilds the jar whenever a source is newer, so in a tree being
# edited meanwhile the sizes would otherwise measure different code. PIN_JAR=0 starts each with ./im instead.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
# One reactor build (nothing is installed into ~/.m2): sibling modules resolve to their target/ jars.
mvn -B -q ${MVN_FLAGS:--o} -pl bench -am package dependency:build-classpath -DskipTests -Dmdep.outputFile=target/cp.txt
# ./im rebuilds its jar when any source is newer than it; say so now rather than inside a measured start.
if [ -n "$(find . -path ./var -prune -o -path '*/target' -prune -o \( -name '*.java' -o -name 'pom.xml' -o -name '*.sql' -o -name '*.xml' \) -newer launcher/target/im.jar -print -quit)" ]; then
  echo "# warning: sources are newer than launcher/target/im.jar (edited during the build?); with PIN_JAR=0 ./im rebuilds it before each platform start" >&2
fi
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true   # the soft open-files limit up to the hard one
if git rev-parse --git-dir >/dev/null 2>&1; then
  echo "# git: $(git rev-parse --short HEAD), $(git status --porcelain | wc -l) uncommitted paths: $(git status --porcelain | awk '{print $2}' | tr '\n' ' ')"
fi
pin=(--pin-jar)
[ "${PIN_JAR:-1}" = 0 ] && pin=()
exec java ${JAVA_OPTS:--Xmx3g -Xss256k} -cp "bench/target/classes:$(cat bench/target/cp.txt)" im.bench.ConnectionsBench "${pin[@]}" "$@"
