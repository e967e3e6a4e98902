#!/usr/bin/env bash
# Idle CPU of `./im platform`: starts the platform (fresh data dir), waits until its ops
# endpoint answers and a settle period has passed, then samples the CPU time (user+system,
# from /proc) of the platform JVM and every process it started (embedded PostgreSQL, Kafka
# children) over a window with nothing happening, and prints it as a share of one core,
# per process and in total. Run it alone on a quiet machine (docs/benchmarks.md).
# --threads N also prints the N busiest threads of the platform JVM over the same window (CPU time
# of /proc/<pid>/task/*, names from `jcmd Thread.print`, else the kernel's 15-character name).
#   bench/run-idle-cpu.sh [--window 60] [--settle 20] [--threads 15] [-- extra platform args]
set -euo pipefail
cd "$(dirname "$0")/.."
WINDOW=60
SETTLE=20
THREADS=0
while [ $# -gt 0 ]; do
  case "$1" in
    --window) WINDOW="$2"; shift 2 ;;
    --settle) SETTLE="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    --) shift; break ;;
    *) echo "unknown option $1 (use --window S, --settle S, --threads N, -- platform args)" >&2; exit 2 ;;
  esac
done
DATA=$(mktemp -d /tmp/im-idle.XXXXXX)
LOG="$DATA/platform.log"
OPS_PORT=${IM_OPS_PORT:-19090}
IM_PG_DATA_DIR="$DATA/pg" IM_KAFKA_DATA_DIR="$DATA/kafka" IM_OPS_PORT="$OPS_PORT" ./im platform "$@" > "$LOG" 2>&1 &
PID=$!
cleanup() { kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; rm -rf "$DATA"; }
trap cleanup EXIT
for _ in $(seq 1 180); do
  if curl -fsS "http://127.0.0.1:$OPS_PORT/healthz" >/dev/null 2>&1; then break; fi
  if ! kill -0 "$PID" 2>/dev/null; then echo "platform exited; log:" >&2; tail -40 "$LOG" >&2; exit 1; fi
  sleep 1
done
curl -fsS "http://127.0.0.1:$OPS_PORT/healthz" >/dev/null || { echo "platform not healthy after 180 s; see $LOG" >&2; exit 1; }
case "$WINDOW$SETTLE$THREADS" in *[!0-9]*) echo "--window, --settle and --threads take whole numbers" >&2; exit 2 ;; esac
sleep "$SETTLE"
TCK=$(getconf CLK_TCK)
descendants() { local p=$1; echo "$p"; for c in $(pgrep -P "$p" || true); do descendants "$c"; done; }
ticks() { awk '{print $14+$15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
declare -A start name
# the embedded PostgreSQL daemonizes (pg_ctl), so its processes are found by data directory
procs="$(descendants "$PID")"
for pm in $(pgrep -f -- "$DATA/pg" || true); do procs+=" $(descendants "$pm")"; done
for p in $(echo "$procs" | tr ' ' '\n' | sort -un); do start[$p]=$(ticks "$p"); name[$p]=$(tr '\0' ' ' < "/proc/$p/cmdline" | cut -c1-70); done
# the JVM's threads: tid -> CPU ticks at the start of the window (threads started during it count from 0)
JVM=$PID   # ./im execs java
declare -A tstart
if [ "$THREADS" -gt 0 ]; then
  for t in /proc/"$JVM"/task/*; do tstart[${t##*/}]=$(ticks "$JVM/task/${t##*/}"); done
fi
sleep "$WINDOW"
# every reading first, then jcmd (its Attach Listener would count otherwise)
declare -A pend tend tname
for p in "${!start[@]}"; do pend[$p]=$(ticks "$p"); done
if [ "$THREADS" -gt 0 ]; then
  for t in /proc/"$JVM"/task/*; do tend[${t##*/}]=$(ticks "$JVM/task/${t##*/}"); done
  # jcmd names every Java thread in full and gives its native id (nid=0x...)
  if command -v jcmd >/dev/null && dump=$(jcmd "$JVM" Thread.print 2>/dev/null); then
    while IFS=$'\t' read -r nid tn; do tname[$nid]=$tn; done < <(printf '%s\n' "$dump" \
      | sed -n 's/^"\(.*\)" .* nid=\(0x[0-9a-f]*\) .*/\2\t\1/p' | while IFS=$'\t' read -r h n; do printf '%d\t%s\n' "$h" "$n"; done)
  fi
  trows=""
  for tid in "${!tend[@]}"; do
    d=$(( ${tend[$tid]} - ${tstart[$tid]:-0} )); [ "$d" -le 0 ] && continue
    n=${tname[$tid]:-$(cat "/proc/$JVM/task/$tid/comm" 2>/dev/null || echo '?')}
    trows+="$(printf '%-8s %8s  %s' "$tid" "$(awk -v d="$d" -v t="$TCK" -v w="$WINDOW" 'BEGIN{printf "%.2f", 100*d/t/w}')" "$n")"$'\n'
  done
  printf 'busiest threads of the platform JVM (pid %s) over %s s:\n' "$JVM" "$WINDOW"
  printf '%-8s %8s  %s\n' tid "% core" thread
  printf '%s' "$trows" | sort -k2 -rn | head -n "$THREADS"
  echo
fi
total=0
rows=""
for p in "${!start[@]}"; do
  d=$(( ${pend[$p]} - ${start[$p]} )); [ "$d" -lt 0 ] && d=0
  total=$(( total + d ))
  rows+="$(printf '%-8s %8s  %s' "$p" "$(awk -v d="$d" -v t="$TCK" -v w="$WINDOW" 'BEGIN{printf "%.1f", 100*d/t/w}')" "${name[$p]}")"$'\n'
done
printf '%-8s %8s  %s\n' pid "% core" command
printf '%s' "$rows" | sort -k2 -rn
printf 'idle CPU over %s s: %s %% of one core (platform JVM and its children)\n' "$WINDOW" \
  "$(awk -v d="$total" -v t="$TCK" -v w="$WINDOW" 'BEGIN{printf "%.1f", 100*d/t/w}')"
