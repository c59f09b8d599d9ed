#!/usr/bin/env bash
# pipebench's nats driver against `nats bench` (the NATS CLI), same server,
# same message size, same cores, interleaved (A B A B) in one pass.
#
#   bench/nats.sh                 # REPS=3 of each pair
#   CORE_MSGS=25000000 JS_MSGS=1200000 bench/nats.sh   # ~10 s runs, as the peers' baselines
#
# Server: nats-server -js (file store in a scratch dir) on 127.0.0.1, pinned
# to CPU 1; every generator pinned to CPU 0. Binaries from PATH, or
# NATS_SERVER / NATS_CLI; the script skips with a message when one is absent.
#   core:  `nats bench pub --size 128` against bench/nats-core-blast.yaml (one
#          connection, one worker, 128-byte JSON events in batches of 1,000,
#          sequence number and send time in each body).
#   js:    `nats bench js pub async --storage file --size 128` (batch 500)
#          against bench/nats-js-blast.yaml (async, batches of 500, a window
#          of 1,000 outstanding acks, 1 worker) on a file stream.
# Each line gives the rate the tool reports and the rate the server saw
# (messages it counted / the generator's wall time, start-up included), the
# generator's CPU-seconds and peak RSS, and how busy the server's core was
# over the run (its CPU-seconds / the run's wall time; 95% or more marked
# *: the server, not the generator, set the rate); the ratio lines are pipebench/nats
# bench on the medians of the tools' own rates. BASELINE=PATH adds another
# pipebench binary (an earlier build) to the same pass, for before/after.
# Then a SYSCALLS line a kind: the system calls a message costs pipebench
# beside the floor (lib/syscalls.sh; needs perf).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
REPS=${REPS:-3}
CORE_MSGS=${CORE_MSGS:-10000000}
JS_MSGS=${JS_MSGS:-600000}
PORT=${NATS_PORT:-14222}
MPORT=${NATS_MONITOR_PORT:-18222}
NS=${NATS_SERVER:-$(command -v nats-server || true)}
NC=${NATS_CLI:-$(command -v nats || true)}
if [ -z "$NS" ] || [ -z "$NC" ]; then
	echo "skipped: nats-server and the nats CLI are needed (on PATH, or NATS_SERVER and NATS_CLI)" >&2
	exit 0
fi
for t in jq curl taskset /usr/bin/time; do
	command -v "$t" >/dev/null || { echo "skipped: $t is needed" >&2; exit 0; }
done
WORK=$(mktemp -d "${TMPDIR:-/tmp}/pipebench-nats-bench.XXXXXX")
PB=$WORK/pipebench
(cd "$ROOT" && go build -o "$PB" ./cmd/pipebench-load) # the lean load generator
# shellcheck source=lib/binaries.sh
. "$HERE/lib/binaries.sh"
copy_binary "$PB" "$PB"
if [ -n "${BASELINE:-}" ]; then
	copy_binary "$BASELINE" "$WORK/baseline"
	BASELINE=$WORK/baseline
fi
URL=nats://127.0.0.1:$PORT
export PIPEBENCH_NATS_URL=$URL

taskset -c 1 "$NS" -a 127.0.0.1 -p "$PORT" -m "$MPORT" -js -sd "$WORK/js" >"$WORK/server.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; wait $SERVER 2>/dev/null || true; rm -rf "$WORK/js"' EXIT
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$MPORT/healthz" >/dev/null && break; sleep 0.1; done
nats() { "$NC" --no-context -s "$URL" "$@"; }
nats stream add PBJS --subjects 'pbjs.>' --storage file --max-bytes 4GB --defaults >/dev/null

inmsgs() { curl -sf "http://127.0.0.1:$MPORT/varz" | jq '.in_msgs'; }
streammsgs() { curl -sf "http://127.0.0.1:$MPORT/jsz?streams=true" | jq --arg s "$1" '[.account_details[]?.stream_detail[]? | select(.name == $s) | .state.messages] | add // 0'; }

HZ=$(getconf CLK_TCK)
# srv_ticks: the CPU time the server used so far, in clock ticks.
srv_ticks() { awk '{print $14 + $15}' "/proc/$SERVER/stat"; }
printf '%-22s %14s %14s %10s %9s %9s\n' run tool-msgs/s server-msgs/s gen-CPU-s peak-RSS srv-busy
RESULTS=$WORK/results
: >"$RESULTS"
# measure NAME KIND TOOLRATE-CMD -- CMD...: runs CMD pinned to CPU 0 and prints its line.
measure() {
	local name=$1 kind=$2 before after n rate
	shift 2
	case $kind in
	core) before=$(inmsgs) ;;
	js-pb) nats stream purge PBJS -f >/dev/null ;;
	esac
	local t0
	t0=$(srv_ticks)
	/usr/bin/time -f '%U %S %M %e' -o "$WORK/$name.time" taskset -c 0 timeout 120 "$@" >"$WORK/$name.out" 2>&1 || {
		echo "$name failed: see $WORK/$name.out" >&2
		return 1
	}
	case $kind in
	core) after=$(inmsgs); n=$((after - before)) ;;
	js-pb) n=$(streammsgs PBJS) ;;
	js-nats) n=$(streammsgs bench_file) ;;
	esac
	case $name in
	pipebench*) rate=$(jq '.total.kpis[] | select(.name == "sent_rate") | .value' "$WORK/$name.json") ;;
	*) rate=$(grep -o 'stats: [0-9,]* msgs/sec' "$WORK/$name.out" | tr -dc '0-9') ;;
	esac
	read -r user sys rss wall <"$WORK/$name.time"
	awk -v n="$name" -v r="$rate" -v s="$n" -v u="$user" -v y="$sys" -v m="$rss" -v w="$wall" -v t="$(($(srv_ticks) - t0))" -v hz="$HZ" \
		'BEGIN {b = (w > 0 ? t / hz / w : 0); printf "%-22s %14.0f %14.0f %10.2f %6d MB %7.0f%%%s\n", n, r, s / w, u + y, m / 1024, b * 100, (b >= 0.95 ? "*" : "")}'
	echo "${name%-r*} $rate" >>"$RESULTS"
}

for rep in $(seq "$REPS"); do
	measure "nats-core-r$rep" core "$NC" --no-context -s "$URL" bench pub pb.core --size 128 --msgs "$CORE_MSGS"
	PIPEBENCH_MSGS=$CORE_MSGS measure "pipebench-core-r$rep" core \
		"$PB" run "$HERE/nats-core-blast.yaml" --no-store --quiet --out "$WORK/pipebench-core-r$rep.json"
	measure "nats-js-r$rep" js-nats "$NC" --no-context -s "$URL" bench js pub async bench.js.file --stream bench_file --create --purge \
		--storage file --maxbytes 4GB --size 128 --msgs "$JS_MSGS"
	PIPEBENCH_MSGS=$JS_MSGS measure "pipebench-js-r$rep" js-pb \
		"$PB" run "$HERE/nats-js-blast.yaml" --no-store --quiet --out "$WORK/pipebench-js-r$rep.json"
	if [ -n "${BASELINE:-}" ]; then
		PIPEBENCH_MSGS=$CORE_MSGS measure "pipebench-baseline-core-r$rep" core \
			"$BASELINE" run "$HERE/nats-core-blast.yaml" --no-store --quiet --out "$WORK/pipebench-baseline-core-r$rep.json"
		PIPEBENCH_MSGS=$JS_MSGS measure "pipebench-baseline-js-r$rep" js-pb \
			"$BASELINE" run "$HERE/nats-js-blast.yaml" --no-store --quiet --out "$WORK/pipebench-baseline-js-r$rep.json"
	fi
done
# The system calls a message costs pipebench, beside the floor (one run of
# each kind, counted by perf's tracepoints; lib/syscalls.sh): core publish
# needs one write a batch handed over (1,000 messages) and no read;
# JetStream async one write a batch (500) and one read of its acks.
. "$HERE/lib/syscalls.sh"
if syscalls_ok; then
	syscalls_run "$WORK/sc-core" env PIPEBENCH_MSGS="$CORE_MSGS" taskset -c 0 timeout 120 \
		"$PB" run "$HERE/nats-core-blast.yaml" --no-store --quiet --out "$WORK/sc-core.json" >"$WORK/sc-core.out" 2>&1 || true
	syscalls_line "NATS core publish, 128 B" "$CORE_MSGS" "$WORK/sc-core" "1 write a batch of 1,000, no read" 0.001 0
	nats stream purge PBJS -f >/dev/null
	syscalls_run "$WORK/sc-js" env PIPEBENCH_MSGS="$JS_MSGS" taskset -c 0 timeout 120 \
		"$PB" run "$HERE/nats-js-blast.yaml" --no-store --quiet --out "$WORK/sc-js.json" >"$WORK/sc-js.out" 2>&1 || true
	syscalls_line "NATS JetStream publish, 128 B" "$JS_MSGS" "$WORK/sc-js" "1 write + 1 read a batch of 500" 0.002 0.002
fi
median() { grep "^$1 " "$RESULTS" | awk '{print $2}' | sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
for k in core js; do
	[ -n "${BASELINE:-}" ] && awk -v k="$k" -v p="$(median "pipebench-baseline-$k")" -v q="$(median "nats-$k")" \
		'BEGIN {printf "%-5s median baseline  %.0f msgs/s, nats bench %.0f msgs/s: ratio %.2fx\n", k, p, q, p / q}'
	awk -v k="$k" -v p="$(median "pipebench-$k")" -v q="$(median "nats-$k")" \
		'BEGIN {printf "%-5s median pipebench %.0f msgs/s, nats bench %.0f msgs/s: ratio %.2fx\n", k, p, q, p / q}'
done
echo "(logs and results in $WORK)"
