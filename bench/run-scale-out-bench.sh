#!/usr/bin/env bash
# The capacity model (docs/capacity.md) against roles in separate processes, black box: builds the bench
# module (and what it depends on, which refreshes launcher/target/im.jar) and runs im.bench.ScaleOutBench,
# which starts one fresh `./im platform --processes --gateways G --delivery-nodes D` (child process,
# temporary data dir, free ports), onboards users, devices and groups through the bulk admin API, connects
# the recipients as raw WebSockets round-robin over the G gateways, sends at a fixed open-loop rate, and
# prints sends/s, send -> push p50/p99/max, missing pushes after a drain and the CPU of every role process
# (from /proc) per 1,000 sends and per 1,000 pushes beside the model's prediction, and how evenly the
# gateways and the delivery nodes shared the work. E.g.
#   bench/run-scale-out-bench.sh --groups 20 --members 8 --rate 50 --seconds 10 --warmup 5     # smoke, ~2 min
#   bench/run-scale-out-bench.sh --groups 200 --members 8 --rate 900 --seconds 60 --warmup 20  # the seed's shape
#   bench/run-scale-out-bench.sh --groups 1 --members 10000 --online-per-group 2000 --rate 10 --seconds 60 --ack-window-ms 400
#   bench/run-scale-out-bench.sh --help
# Needs Java 17 and Maven. Run it alone on a quiet machine: the load average is printed at start and end.
# The harness holds groups x (online + 1) sockets; a process may hold at most `ulimit -Hn` open files.
# MVN_FLAGS replaces the Maven flags (default -o, offline); JAVA_OPTS the harness's JVM flags.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
. bench/build-classpath.sh
exec java ${JAVA_OPTS:--Xmx2g -Xss256k} -cp "bench/target/classes:$(cat bench/target/cp.txt)" im.bench.ScaleOutBench "$@"
