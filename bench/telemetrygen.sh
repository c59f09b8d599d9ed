#!/usr/bin/env bash
# pipebench against telemetrygen, like for like, for traces, metrics and logs:
# the same fixed rate of items per second, the same item shape, open model,
# into the same sink, on the same cores, in one interleaved pass.
#
#   bench/telemetrygen.sh                  # REPS=3 rounds at RATE, then a search
#   RATE=50000 REPS=1 SEARCH= bench/telemetrygen.sh
#
# Sink: `pipebench sink --otlp-grpc` pinned to CPU 1, counting every item it
# receives (pipebench_sink_items_total on its /metrics: spans, metric points,
# log records). Generators pinned to CPU 0, their CPU-seconds from
# /usr/bin/time. Shapes (items are spans, points, records):
#   traces:  traces of 2 spans, 40 attributes of 16 bytes on every span
#            (telemetrygen: --child-spans 1 and 40 --telemetry-attributes;
#            pipebench: bench/otlp-open-traces.yaml);
#   metrics: gauge points with 10 attributes (telemetrygen --metric-type Gauge
#            and 10 --telemetry-attributes; bench/otlp-open-metrics.yaml);
#   logs:    one record per line with a body of an Apache common-log line of
#            about 100 bytes (telemetrygen --body with such a line;
#            bench/otlp-open-logs.yaml, format apache_common).
# Both send batches of BATCH items (default 1,000) over OTLP/gRPC:
# telemetrygen exports one batch at a time, so its throughput is about a
# batch per round trip (with its default of 100 it delivered ~4,000 items/s
# here whatever the workers). telemetrygen paces each worker
# on its own (a Go rate limiter, which does not go beyond ~1,800 waits/s per
# worker here): it gets one worker per 1,000 items/s.
# A run holds its rate when the sink counted at least 97% of RATE x DURATION
# from it (counted until 2 s after it ended). Items per CPU-second: items
# the sink counted / the generator's user+sys seconds.
# SEARCH (default "5000 10000 20000 50000 100000 200000 400000"; empty: none) are the
# rates tried, SEARCH_DURATION (default 10s) each, stopping at the first that
# does not hold, for each signal and generator.
# telemetrygen comes from PATH or $TELEMETRYGEN; the script skips (exit 0)
# when it is absent. Every run is bounded (`timeout`).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
REPS=${REPS:-3}
RATE=${RATE:-20000}
DURATION=${DURATION:-10s}
SEARCH=${SEARCH-5000 10000 20000 50000 100000 200000 400000}
SEARCH_DURATION=${SEARCH_DURATION:-10s}
SIGNALS=${SIGNALS:-traces metrics logs}
BATCH=${BATCH:-1000}
WORKER_RATE=${WORKER_RATE:-1000} # items/s per telemetrygen worker
GRPC=127.0.0.1:${GRPC_PORT:-14317}
HTTP=127.0.0.1:${HTTP_PORT:-14318}
TG=${TELEMETRYGEN:-$(command -v telemetrygen || true)}
if [ -z "$TG" ]; then
	echo "skip: telemetrygen is not on PATH (or set TELEMETRYGEN=...); install it with" >&2
	echo "  go install github.com/open-telemetry/opentelemetry-collector-contrib/cmd/telemetrygen@v0.161.0" >&2
	exit 0
fi
cpu1=(taskset -c 1)
cpu0=(taskset -c 0)
if ! taskset -c 1 true 2>/dev/null; then
	echo "note: no CPU 1 here: nothing is pinned" >&2
	cpu1=() cpu0=()
fi
W=$(mktemp -d)
PB=$W/pipebench
(cd "$ROOT" && go build -o "$PB" ./cmd/pipebench)

"${cpu1[@]}" "$PB" sink --otlp-grpc "$GRPC" --otlp-http "$HTTP" --every 1h >"$W/sink.log" 2>&1 &
SINK=$!
trap 'kill $SINK 2>/dev/null; wait $SINK 2>/dev/null || true; rm -rf "$W"' EXIT
for _ in $(seq 50); do curl -sf "http://$HTTP/metrics" >/dev/null && break; sleep 0.1; done

received() { curl -sf "http://$HTTP/metrics" | awk '/^pipebench_sink_items_total/ {s += $NF} END {printf "%d\n", s}'; }

attrs() { # N: N --telemetry-attributes of 16-byte values
	local i v
	for i in $(seq 0 $(($1 - 1))); do
		v="value-$i-xxxxxxxxxxxxxxxx"
		printf '%s\n' --telemetry-attributes "attr.$i=\"${v:0:16}\""
	done
}
mapfile -t ATTRS40 < <(attrs 40)
mapfile -t ATTRS10 < <(attrs 10)
BODY='127.0.0.1 - frank [10/Oct/2026:13:55:36 +0000] "GET /apache_pb.gif HTTP/1.1" 200 2326 "-" "-"'

# tg_args SIGNAL RATE DURATION: sets TGARGS to the telemetrygen command line
tg_args() {
	local sig=$1 rate=$2 dur=$3 workers per
	workers=$(((rate + WORKER_RATE - 1) / WORKER_RATE))
	per=$(awk -v r="$rate" -v w="$workers" 'BEGIN {printf "%.3f", r / w}')
	case $sig in
	traces)
		per=$(awk -v p="$per" 'BEGIN {printf "%.3f", p / 2}') # 2 spans a trace
		TGARGS=("$TG" traces --child-spans 1 "${ATTRS40[@]}") ;;
	metrics) TGARGS=("$TG" metrics --metric-type Gauge "${ATTRS10[@]}") ;;
	logs) TGARGS=("$TG" logs --body "$BODY") ;;
	esac
	TGARGS+=(--otlp-insecure --otlp-endpoint "$GRPC" --duration "$dur" --rate "$per" --workers "$workers" --batch-size "$BATCH")
}

secs() { awk -v d="$1" 'BEGIN {sub(/s$/, "", d); print d}'; }

# measure NAME SIGNAL GEN RATE DURATION -> prints a row, returns 1 when not held
measure() {
	local name=$1 sig=$2 gen=$3 rate=$4 dur=$5 before after user sys d
	before=$(received)
	if [ "$gen" = telemetrygen ]; then
		tg_args "$sig" "$rate" "$dur"
		/usr/bin/time -f '%U %S %M %e' -o "$W/time" "${cpu0[@]}" timeout 120 "${TGARGS[@]}" >"$W/$name.out" 2>&1 || true
	else
		PIPEBENCH_OTLP_ENDPOINT=$GRPC PIPEBENCH_BATCH=$BATCH PIPEBENCH_RATE=$rate PIPEBENCH_DURATION=$dur \
			/usr/bin/time -f '%U %S %M %e' -o "$W/time" "${cpu0[@]}" timeout 120 \
			"$PB" run "$HERE/otlp-open-$sig.yaml" --no-store --quiet >"$W/$name.out" 2>&1 || true
	fi
	sleep 2 # the last batches reach the sink
	after=$(received)
	read -r user sys rss wall < <(tail -n 1 "$W/time")
	d=$(secs "$dur")
	awk -v n="$name" -v r="$rate" -v s=$((after - before)) -v d="$d" -v u="$user" -v y="$sys" -v m="$rss" \
		'BEGIN {c = u + y; h = (s >= 0.97 * r * d) ? "yes" : "no";
		printf "%-30s %9d %11d %10.0f %5s %8.2f %13.0f %6d MB\n", n, r, s, s / d, h, c, (c > 0 ? s / c : 0), m / 1024;
		exit (h == "yes") ? 0 : 1}'
}

echo "machine: $(nproc) CPUs, $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo); load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "telemetrygen: $(go version -m "$TG" 2>/dev/null | awk '$1 == "mod" {print $3}')"
hdr() { printf '%-30s %9s %11s %10s %5s %8s %13s %9s\n' run target/s items items/s held CPU-s items/CPU-s peak-RSS; }
hdr
for rep in $(seq "$REPS"); do
	for sig in $SIGNALS; do
		measure "telemetrygen-$sig-r$rep" "$sig" telemetrygen "$RATE" "$DURATION" | tee -a "$W/rows" || true
		measure "pipebench-$sig-r$rep" "$sig" pipebench "$RATE" "$DURATION" | tee -a "$W/rows" || true
	done
done
if [ "$REPS" -gt 0 ]; then
	echo
	echo "medians over $REPS rounds at $RATE items/s (items/CPU-s; rounds that held)"
	for sig in $SIGNALS; do
		for gen in telemetrygen pipebench; do
			awk -v p="$gen-$sig-r" 'index($1, p) == 1 {print $7, $5}' "$W/rows" | sort -n |
				awk -v g="$gen" -v s="$sig" '{a[NR] = $1; if ($2 == "yes") h++}
				END {m = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2;
				printf "  %-8s %-13s %13.0f items/CPU-s, held %d of %d\n", s, g, m, h, NR}'
		done
	done
fi
if [ -n "$SEARCH" ]; then
	echo
	echo "search: the highest rate held, $SEARCH_DURATION per step"
	hdr
	for sig in $SIGNALS; do
		for gen in telemetrygen pipebench; do
			best=0
			for rate in $SEARCH; do
				measure "$gen-$sig-at-$rate" "$sig" "$gen" "$rate" "$SEARCH_DURATION" || break
				best=$rate
			done
			printf '  => %-8s %-13s holds %d items/s\n' "$sig" "$gen" "$best"
		done
	done
fi
echo "(logs in $W are removed at exit)"
