#!/usr/bin/env bash
# The telemetry reference's tables, in full: every kyma-telemetry suite run
# against the embedded OpenTelemetry Collector, each table printed beside
# the version label it was run under.
#
#   bench/kyma-telemetry.sh                          # every suite, each case as its scenario says (2 min)
#   DURATION=20m bench/kyma-telemetry.sh             # the reference's 20 minutes a case
#   SUITES="kyma-logs kyma-metric-agent" DURATION=1m bench/kyma-telemetry.sh
#   SUT_VERSION=otelcol-0.162.0-gomemlimit bench/kyma-telemetry.sh   # a row label of your own
#
# Suites: kyma-traces (the trace gateway), kyma-metrics (the metric
# gateway: single, multi, backpressure, multi backpressure), kyma-metric-agent
# (a collector with the prometheus receiver scraping 20 producers x 1,000
# metrics x 10 series every 10 s, by pod and by service, through a metric
# gateway: single, backpressure) and kyma-logs (a collector with the
# filelog receiver tailing 20 producers' rotating files, its queue on disk:
# single, multi, backpressure, multi backpressure, in KByte/s and the
# filesystem buffer's KBytes).
#
# The runs go to a history of their own (HISTORY, default a fresh SQLite file
# in the work folder), so each table has this pass's row only; OUT keeps the
# Results (one JSON per case). The script exits with the highest exit code
# of the suites (0: every case completed).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
SUITES=${SUITES:-"kyma-traces kyma-metrics kyma-metric-agent kyma-logs"}
DURATION=${DURATION:-}
SUT_VERSION=${SUT_VERSION:-}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/pipebench-kyma.XXXXXX")
HISTORY=${HISTORY:-$WORK/history.db}
OUT=${OUT:-$WORK/results}
PB=$WORK/pipebench
(cd "$ROOT" && go build -o "$PB" ./cmd/pipebench)
echo "pipebench built in $WORK; history $HISTORY; results $OUT"
args=(--store "$HISTORY" -q)
[ -n "$DURATION" ] && args+=(--duration "$DURATION")
[ -n "$SUT_VERSION" ] && args+=(--sut-version "$SUT_VERSION")
worst=0
for s in $SUITES; do
	echo
	echo "== $s ($(date -u +%H:%M:%S) UTC, load average $(cut -d' ' -f1-3 /proc/loadavg))"
	set +e
	"$PB" suite run "builtin:$s" "${args[@]}" --out "$OUT/$s"
	code=$?
	set -e
	echo "exit $code"
	[ "$code" -gt "$worst" ] && worst=$code
done
exit "$worst"
