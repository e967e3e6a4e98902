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
. bench/build-classpath.sh
pin=(--pin-jar)
[ "${PIN_JAR:-1}" = 0 ] && pin=()
exec java ${JAVA_OPTS:--Xmx3g -Xss256k} -cp "bench/target/classes:$(cat bench/target/cp.txt)" im.bench.ConnectionsBench "${pin[@]}" "$@"
