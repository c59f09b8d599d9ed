#!/usr/bin/env bash
# pipebench against the other open-model HTTP generators, vegeta and k6, at
# the same fixed rate, HTTP/1.1 to nginx, in one interleaved pass (vegeta,
# k6, pipebench, vegeta, ...): what each sent, its latency, its CPU per
# request and its memory.
#
#   bench/vegeta.sh                         # REPS=3 rounds at 20,000 and 40,000 req/s, 10 s each
#   RATES=40000 REPS=1 DURATION=5s bench/vegeta.sh
#   BASE=main bench/vegeta.sh               # also pipebench built from git ref BASE
#
# Target: nginx as in wrk.sh (one worker on CPU 1, `return 200 'ok'`) on
# 127.0.0.1:$PORT (default 18092). Generators pinned to CPU 0, each sending a
# POST of 64 bytes at RATE for DURATION, timeout 5 s:
#   - vegeta attack -max-workers=256 (uncapped, vegeta opens a connection
#     per worker without end once it falls behind: see its notes);
#   - k6, the constant-arrival-rate executor (200 VUs allocated, up to
#     1,000), when k6 is found;
#   - pipebench: bench/http-open.yaml over CONNS (default 256) connections,
#     every latency recorded from its scheduled time.
# Printed for each run: requests sent a second (vegeta: its rate; k6:
# http_reqs a second; pipebench: sent_rate), p50 and p99 as the tool
# measures them (only pipebench corrects for coordinated omission), CPU-µs a
# request (user+sys / requests), sleeps a request (voluntary context
# switches / requests), peak RSS (/usr/bin/time) and peak anonymous RSS
# (RssAnon from /proc: what the process allocated, without the pages of its
# binary mapped from the file; pipebench's binary holds every plug-in and
# weighs about 240 MB on disk, of which the kernel maps most at start).
# A run holds its rate when it sent at least 99% of it and every answer
# was a success. vegeta, k6 and nginx from PATH or $VEGETA, $K6, $NGINX
# ; the script skips (exit 0) when vegeta
# or nginx is absent. Every run is bounded (`timeout`).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
# shellcheck source=lib/nginx.sh
. "$HERE/lib/nginx.sh"
REPS=${REPS:-3}
RATES=${RATES:-20000 40000}
DURATION=${DURATION:-10s}
CONNS=${CONNS:-256}
PORT=${PORT:-18092}
find_tool() { command -v "$1" 2>/dev/null || true; }
VEGETA=${VEGETA:-$(find_tool vegeta)}
K6=${K6:-$(find_tool k6)}
NGINX=${NGINX:-$(command -v nginx || true)}
if [ -z "$NGINX" ] && [ -x /usr/sbin/nginx ]; then NGINX=/usr/sbin/nginx; fi
if [ -z "$VEGETA" ] || [ -z "$NGINX" ]; then
	echo "skip: vegeta and nginx are needed (PATH, or VEGETA=... NGINX=...)" >&2
	exit 0
fi
export K6_NO_USAGE_REPORT=true
pin_cpus
W=$(mktemp -d)
trap 'nginx_stop "$W"; rm -rf "$W"' EXIT
nginx_start "$W" "$PORT"
URL=http://127.0.0.1:$PORT/
head -c 64 /dev/zero | tr '\0' x >"$W/body"
cat >"$W/car.js" <<'EOF'
import http from 'k6/http';
export const options = {
  discardResponseBodies: true,
  summaryTrendStats: ['med', 'p(99)'],
  scenarios: { car: { executor: 'constant-arrival-rate', rate: Number(__ENV.RATE), timeUnit: '1s',
    duration: __ENV.DUR, preAllocatedVUs: 200, maxVUs: 1000, gracefulStop: '2s' } },
};
const body = 'x'.repeat(64);
const params = { headers: { 'Content-Type': 'application/octet-stream' }, timeout: '5s' };
export default function () { http.post(__ENV.URL, body, params); }
EOF

mkdir -p "$W/bin"
# The lean load generator (cmd/pipebench-load: no embedded system under
# test, no Kubernetes launcher), what a machine that only sends runs.
(cd "$ROOT" && go build -o "$W/bin/pipebench" ./cmd/pipebench-load)
# shellcheck source=lib/binaries.sh
. "$HERE/lib/binaries.sh"
copy_binary "$W/bin/pipebench" "$W/bin/pipebench" # peak RSS as an installed binary shows it
gens=(vegeta)
[ -n "$K6" ] && gens+=(k6)
gens+=(pipebench)
if [ -n "${BASE:-}" ]; then
	mkdir -p "$W/base"
	(cd "$ROOT" && git archive "$BASE" | tar -x -C "$W/base")
	main=./cmd/pipebench-load
	[ -d "$W/base/cmd/pipebench-load" ] || main=./cmd/pipebench # a build before the lean generator
	(cd "$W/base" && go build -o "$W/bin/pipebench-base" "$main")
	copy_binary "$W/bin/pipebench-base" "$W/bin/pipebench-base"
	gens+=(pipebench-base)
fi

secs=${DURATION%s}
# run GEN RATE -> "sent/s p50-ms p99-ms requests ok"
run() {
	local g=$1 rate=$2
	case $g in
	vegeta)
		echo "POST $URL" >"$W/targets"
		timed "$W/time" "${cpu0[@]}" timeout $((secs + 30)) "$VEGETA" attack -targets="$W/targets" -rate="$rate/s" -duration="$DURATION" \
			-timeout=5s -max-workers=256 -body="$W/body" -header='Content-Type: application/octet-stream' -output="$W/v.bin"
		"$VEGETA" report -type=json "$W/v.bin" | jq -r '"\(.rate) \(.latencies["50th"] / 1e6) \(.latencies["99th"] / 1e6) \(.requests) \(if .success == 1 then "yes" else "no" end)"'
		;;
	k6)
		timed "$W/time" "${cpu0[@]}" timeout $((secs + 30)) "$K6" run --quiet --no-color --no-usage-report --summary-export="$W/k6.json" \
			-e RATE="$rate" -e DUR="$DURATION" -e URL="$URL" "$W/car.js" >"$W/k6.out" 2>&1
		jq -r '.metrics as $m | "\($m.http_reqs.rate) \($m.http_req_duration.med) \($m.http_req_duration["p(99)"]) \($m.http_reqs.count) \(if ($m.http_req_failed.value // 0) == 0 and ($m.dropped_iterations.count // 0) == 0 then "yes" else "no" end)"' "$W/k6.json"
		;;
	pipebench*)
		rm -f "$W/r.json"
		PIPEBENCH_URL=$URL PIPEBENCH_RATE=$rate PIPEBENCH_PIPELINE=0 PIPEBENCH_CONNS=$CONNS PIPEBENCH_DURATION=$DURATION \
			timed "$W/time" "${cpu0[@]}" timeout $((secs + 60)) "$W/bin/$g" run "$HERE/http-open.yaml" --no-store --quiet -o "$W/r.json" >"$W/pb.out" 2>&1
		[ -s "$W/r.json" ] || { echo "0 0 0 0 no"; return; }
		jq -r '.phases[0].kpis as $k | def v(n): ([$k[] | select(.name == n) | .value] | add // 0);
			([$k[] | select(.name == "errors") | .value] | add // 0) as $errs
			| "\(v("sent_rate")) \(v("latency.p50")) \(v("latency.p99")) \(v("sent")) \(if v("dropped") == 0 and $errs == 0 then "yes" else "no" end)"' "$W/r.json"
		;;
	esac
}

echo "machine: $(nproc) CPUs, $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo); load $(cut -d' ' -f1-3 /proc/loadavg); $(date -u '+%Y-%m-%d %H:%M UTC')"
printf '%-5s %-15s %8s %9s %8s %9s %8s %10s %7s %8s %5s\n' round generator target/s sent/s p50-ms p99-ms µs/req sleeps/req RSS-MB anon-MB held
: >"$W/all"
for rep in $(seq "$REPS"); do
	for rate in $RATES; do
		for g in "${gens[@]}"; do
			read -r sent p50 p99 n ok < <(run "$g" "$rate")
			read -r user sys vcs rss anon <"$W/time"
			held=$(awk -v s="$sent" -v r="$rate" -v ok="$ok" 'BEGIN {print (s >= 0.99 * r && ok == "yes") ? "yes" : "no"}')
			line=$(awk -v s="$sent" -v a="$p50" -v b="$p99" -v n="$n" -v u="$user" -v y="$sys" -v w="$vcs" -v m="$rss" -v an="$anon" \
				'BEGIN {printf "%.0f %.3f %.3f %.1f %.3f %.0f %.0f", s, a, b, (n > 0 ? (u + y) / n * 1e6 : 0), (n > 0 ? w / n : 0), m / 1024, an / 1024}')
			echo "$g $rate $line $held" >>"$W/all"
			read -r s a b us sl m an <<<"$line"
			printf '%-5s %-15s %8s %9s %8s %9s %8s %10s %7s %8s %5s\n' "$rep" "$g" "$rate" "$s" "$a" "$b" "$us" "$sl" "$m" "$an" "$held"
		done
	done
done
echo
echo "medians over $REPS rounds (sent/s, CPU-µs a request, peak RSS, peak anonymous RSS; rounds that held)"
for rate in $RATES; do
	for g in "${gens[@]}"; do
		col() { awk -v g="$g" -v r="$rate" -v c="$1" '$1 == g && $2 == r {print $c}' "$W/all" | median; }
		h=$(awk -v g="$g" -v r="$rate" '$1 == g && $2 == r && $10 == "yes"' "$W/all" | wc -l)
		printf 'RESULT %-15s %6s/s: sent %7.0f/s, %6.1f CPU-µs a request, peak RSS %4.0f MB (anonymous %3.0f MB), held %d of %d\n' \
			"$g" "$rate" "$(col 3)" "$(col 6)" "$(col 8)" "$(col 9)" "$h" "$REPS"
	done
done
