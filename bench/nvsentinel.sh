#!/usr/bin/env bash
# The two nvsentinel reports at full scale, every table printed:
#   API server and database load: nvsentinel-sustained (baseline + 30, 100,
#     500 events/s, 10 minutes each: about 45 minutes) and nvsentinel-burst
#     (baseline + 1,500/3,000/4,200 events/s for 1, 3 and 5 minutes on one
#     kept system: about 25 minutes).
#   FQM latency and queue depth: nvsentinel-blast (150, 375, 750 nodes, with
#     each case's stage breakdown) and nvsentinel-db-bench (1,000
#     insert+update pairs against the document store).
#
#   bench/nvsentinel.sh                      # every suite, full length
#   SUITES="blast db-bench" bench/nvsentinel.sh
#   DURATION=1m bench/nvsentinel.sh          # the sustained and burst cases 1 minute each
#
# The API server: PIPEBENCH_TEST_KUBE_BIN=DIR (tools/kube/build.sh DIR builds
# it), or KUBECONFIG_FILE=PATH for a test cluster; without either the
# tables say which columns could not be filled. Prometheus 2.x on PATH.
# Results go to a history of their own ($OUT/history.db, OUT defaults to
# $TMPDIR/pipebench-nvsentinel) and each case's Result to $OUT/SUITE/.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
OUT=${OUT:-${TMPDIR:-/tmp}/pipebench-nvsentinel}
SUITES=${SUITES:-"sustained burst blast db-bench"}
mkdir -p "$OUT"
command -v prometheus >/dev/null || echo "warning: prometheus is not on PATH: the PromQL columns will be empty" >&2
if [ -z "${PIPEBENCH_TEST_KUBE_BIN:-}" ] && [ -z "${KUBECONFIG_FILE:-}" ]; then
	echo "warning: no API server (set PIPEBENCH_TEST_KUBE_BIN=DIR or KUBECONFIG_FILE=PATH): its columns will say so" >&2
fi
go build -o "$OUT/pipebench" "$ROOT/cmd/pipebench"
args=(--store "$OUT/history.db" -q)
[ -n "${KUBECONFIG_FILE:-}" ] && args+=(--kubeconfig "$KUBECONFIG_FILE")
for s in $SUITES; do
	extra=()
	case $s in sustained | burst) [ -n "${DURATION:-}" ] && extra+=(--duration "$DURATION") ;; esac
	echo "== nvsentinel-$s ($(date -u +%H:%M:%S))" >&2
	"$OUT/pipebench" suite run "builtin:nvsentinel-$s" "${args[@]}" "${extra[@]}" --out "$OUT/$s" || echo "(exit $?)" >&2
done
