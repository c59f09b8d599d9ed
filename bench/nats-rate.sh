#!/usr/bin/env bash
# Fixed rates held, with every event's end-to-end latency: pipebench runs
# bench/nats-rate.yaml (its embedded nats-server with JetStream, a file
# stream, 10 publishing connections with async acks, a durable pull
# consumer) at each rate and prints achieved/target, the events delivered
# against those sent, and the end-to-end latency quantiles over every
# delivered event. No peer is needed (nats bench has no fixed rate).
#
#   bench/nats-rate.sh                          # 10k, 50k, 100k events/s, 20 s each
#   RATES="10000 50000" DURATION=60s bench/nats-rate.sh
#   MODE=core bench/nats-rate.sh                # core NATS and a core subscriber
#                                               # (bench/nats-rate-core.yaml): nothing stored
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
RATES=${RATES:-10000 50000 100000}
DURATION=${DURATION:-20s}
SCENARIO=$HERE/nats-rate.yaml
[ "${MODE:-jetstream}" = core ] && SCENARIO=$HERE/nats-rate-core.yaml
command -v jq >/dev/null || { echo "skipped: jq is needed" >&2; exit 0; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/pipebench-nats-rate.XXXXXX")
PB=$WORK/pipebench
(cd "$ROOT" && go build -o "$PB" ./cmd/pipebench)
kpi() { jq -r --arg n "$2" '[.total.kpis[] | select(.name == $n) | .value] | first // "-"' "$1"; }
printf '%10s %12s %9s %12s %12s %6s %10s %10s %10s\n' target/s achieved/s ratio sent delivered lost e2e-p50-ms e2e-p99-ms e2e-max-ms
for rate in $RATES; do
	out=$WORK/rate-$rate.json
	# The batch grows with the rate so that a batch leaves every ~1 ms.
	batch=$((rate / 1000 > 1 ? rate / 1000 : 1))
	PIPEBENCH_RATE=$rate PIPEBENCH_BATCH=$batch PIPEBENCH_DURATION=$DURATION timeout 600 \
		"$PB" run "$SCENARIO" --no-store --quiet --out "$out" >"$WORK/rate-$rate.log" 2>&1 || true
	[ -s "$out" ] || { echo "$rate: no result, see $WORK/rate-$rate.log" >&2; continue; }
	achieved=$(jq -r '[.phases[] | select(.name == "hold") | .kpis[] | select(.name == "sent_rate") | .value] | first' "$out")
	awk -v t="$rate" -v a="$achieved" -v s="$(kpi "$out" sent)" -v d="$(kpi "$out" delivered)" -v l="$(kpi "$out" lost)" \
		-v p50="$(kpi "$out" e2e_latency.p50)" -v p99="$(kpi "$out" e2e_latency.p99)" -v mx="$(kpi "$out" e2e_latency.max)" \
		'BEGIN {printf "%10d %12.1f %9.4f %12d %12d %6d %10s %10s %10s\n", t, a, a / t, s, d, l, p50, p99, mx}'
done
echo "(results in $WORK; ratio is the hold phase's sent rate over the target; e2e over every delivered event)"
