#!/usr/bin/env bash
# Traces generator against telemetrygen, same shape, same backend, same cores.
#
#   bench/telemetrygen.sh            # REPS=3 interleaved runs of each
#
# Backend: `pipebench sink --otlp-grpc` pinned to CPU 1, counting every span it
# receives (pipebench_sink_items_total on its /metrics, matched or not).
# Generators pinned to CPU 0, their CPU-seconds and peak RSS from /usr/bin/time:
#   - telemetrygen v0.161.0 at its best setting measured here (160 workers x
#     1,000 spans/s, batches of 1,000), with its default span shape and with
#     40 attributes of 16 bytes per span like pipebench's;
#   - pipebench: bench/otlp-traces-blast.yaml, traces of 2 spans x 40
#     attributes, batches of 1,000, 4 workers, closed model.
# The figure that matters is delivered spans per generator CPU-second.
# Every run is bounded: 10 s of load (pipebench: a fixed count), `timeout 60`.
# telemetrygen comes from the Go module proxy (go install) into $PEERS/bin.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
PEERS=${PEERS:-${TMPDIR:-/tmp}/pipebench-peers}
REPS=${REPS:-3}
SPANS=${SPANS:-10000000}
GRPC=127.0.0.1:${GRPC_PORT:-14317}
HTTP=127.0.0.1:${HTTP_PORT:-14318}
mkdir -p "$PEERS/bin"
TG=$PEERS/bin/telemetrygen
if [ ! -x "$TG" ]; then
	echo "installing telemetrygen v0.161.0 into $PEERS/bin (about a minute)"
	(cd "$PEERS" && GOBIN="$PEERS/bin" go install github.com/open-telemetry/opentelemetry-collector-contrib/cmd/telemetrygen@v0.161.0)
fi
PB=$PEERS/bin/pipebench
(cd "$ROOT" && go build -o "$PB" ./cmd/pipebench)

taskset -c 1 "$PB" sink --otlp-grpc "$GRPC" --otlp-http "$HTTP" --every 1h >"$PEERS/sink.log" 2>&1 &
SINK=$!
trap 'kill $SINK 2>/dev/null; wait $SINK 2>/dev/null || true' EXIT
for _ in $(seq 50); do curl -sf "http://$HTTP/metrics" >/dev/null && break; sleep 0.1; done

received() { curl -sf "http://$HTTP/metrics" | awk '/^pipebench_sink_items_total/ {s += $NF} END {printf "%d\n", s}'; }

ATTRS=()
for i in $(seq 0 39); do
	v="value-$i-xxxxxxxxxxxxxxxx"
	ATTRS+=(--telemetry-attributes "attr.$i=\"${v:0:16}\"")
done

printf '%-34s %12s %10s %10s %16s %9s\n' run spans spans/s gen-CPU-s spans/CPU-s peak-RSS
measure() { # name cmd...
	local name=$1 before after
	shift
	before=$(received)
	/usr/bin/time -f '%U %S %M %e' -o "$PEERS/$name.time" taskset -c 0 timeout 60 "$@" >"$PEERS/$name.out" 2>&1 || {
		echo "$name failed: see $PEERS/$name.out" >&2
		return 1
	}
	sleep 2 # the last batches reach the sink
	after=$(received)
	read -r user sys rss wall <"$PEERS/$name.time"
	awk -v n="$name" -v s=$((after - before)) -v u="$user" -v y="$sys" -v r="$rss" -v w="$wall" \
		'BEGIN {c = u + y; printf "%-34s %12d %10.0f %10.2f %16.0f %7d MB\n", n, s, s / w, c, s / c, r / 1024}'
}

for rep in $(seq "$REPS"); do
	measure "telemetrygen-default-r$rep" "$TG" traces --otlp-insecure --otlp-endpoint "$GRPC" --duration 10s \
		--rate 1000 --workers 160 --batch-size 1000
	measure "telemetrygen-40attrs-r$rep" "$TG" traces --otlp-insecure --otlp-endpoint "$GRPC" --duration 10s \
		--rate 1000 --workers 160 --batch-size 1000 "${ATTRS[@]}"
	PIPEBENCH_OTLP_ENDPOINT=$GRPC PIPEBENCH_SPANS=$SPANS measure "pipebench-40attrs-r$rep" \
		"$PB" run "$HERE/otlp-traces-blast.yaml" --no-store --quiet
done
echo "(spans/s over the generator's whole wall time, start-up included; logs in $PEERS)"
