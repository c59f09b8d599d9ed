#!/usr/bin/env bash
# pipebench's gRPC unary calls against ghz's, in one interleaved pass.
#
#   bench/ghz.sh                       # REPS=3 rounds at RATES=20000 calls/s, DURATION=5s runs
#   RATES="10000 20000" bench/ghz.sh   # several rates, each in every round
#
# It runs driver/grpc's BenchmarkUnaryRate: a trivial server of the example
# HealthEventService in a child process on CPU 1, the generator pinned to
# CPU 0, CONNS (default 4) connections, over a Unix socket and over TCP;
# within a round, at each rate and on each transport, pipebench (the whole
# runner, open model at a fixed rate) and then ghz at the same rate and
# connections. Each run prints a RESULT line:
#   RESULT <transport> <rate> <generator> <sent/s> <achieved %> <calls per CPU-second> <p99 ms>
# and, after the rounds, a median line per transport, rate and generator:
#   median <transport> <rate> <generator> <sent/s> <calls per CPU-second> held <n>/<rounds>
# A run "holds" its rate when it sent at least 99% of it. Calls per
# CPU-second are those answered OK over the user+sys CPU of the generator's
# process, the figure least moved by a busy machine. ghz comes from PATH or
# from $GHZ; without it the script skips (exit 0) with a message.
# After the rounds, one more pipebench run per transport at the first rate
# counts the system calls a call costs it (perf's tracepoints; the server
# runs in a process started here, not counted), printed beside the floor
# as a SYSCALLS line (lib/syscalls.sh): one write and one read a wake-up
# of the pacer, whose calls leave together (it wakes 10,000 times a second
# at most), so at 20,000 calls/s half of each a call.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
REPS=${REPS:-3}
RATES=${RATES:-20000}
DURATION=${DURATION:-5s}
CONNS=${CONNS:-4}
case $REPS in '' | *[!0-9]* | 0)
	echo "REPS=$REPS: give a whole number of rounds, 1 or more" >&2
	exit 2
	;;
esac
for r in $RATES; do
	case $r in '' | *[!0-9]* | 0)
		echo "RATES=$RATES: give calls a second as whole numbers, like \"10000 20000\"" >&2
		exit 2
		;;
	esac
done
GHZ=${GHZ:-$(command -v ghz || true)}
if [ -z "$GHZ" ]; then
	echo "skip: ghz is needed (PATH, or GHZ=...); go install github.com/bojand/ghz/cmd/ghz@v0.120.0" >&2
	exit 0
fi
cpu0=(taskset -c 0)
cpu1=(taskset -c 1)
if ! taskset -c 1 true 2>/dev/null; then
	echo "note: no CPU 1 here: nothing is pinned, figures mix generator and server" >&2
	cpu0=() cpu1=()
fi
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
(cd "$ROOT" && go test -c -o "$W/grpc.test" ./driver/grpc)

echo "machine: $(nproc) CPUs, $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo); load $(cut -d' ' -f1-3 /proc/loadavg)"
: >"$W/all"
for rep in $(seq "$REPS"); do
	for rate in $RATES; do
		# The benchmark runs from its package's folder (it reads the example's .proto
		# from there) and finds ghz on PATH.
		(cd "$ROOT/driver/grpc" && PATH="$(dirname "$GHZ"):$PATH" PIPEBENCH_BENCH_RATES=$rate PIPEBENCH_BENCH_DURATION=$DURATION \
			PIPEBENCH_BENCH_CONNS=$CONNS "${cpu0[@]}" timeout 600 "$W/grpc.test" -test.run '^$' \
			-test.bench "UnaryRate/(uds|tcp)/$rate/" -test.benchtime 1x) >"$W/out" 2>&1 || {
			echo "round $rep at $rate calls/s failed:" >&2
			tail -n 20 "$W/out" >&2
			exit 1
		}
		awk '/^BenchmarkUnaryRate\// {
			split($1, n, "/"); sub(/-[0-9]+$/, "", n[4])
			for (i = 2; i < NF; i++) {u[$(i + 1)] = $i}
			printf "RESULT %s %s %s %.0f %s %s %s\n", n[2], n[3], n[4], u["sent/s"], u["achieved%"], u["calls/cpu-s"], u["p99-ms"]}' "$W/out" | tee -a "$W/all"
	done
done
echo
awk -v reps="$REPS" '
	function med(k,   c, i, j, t, a) {c = split(v[k], a, " "); for (i = 1; i <= c; i++) for (j = i + 1; j <= c; j++) if (a[j] + 0 < a[i] + 0) {t = a[i]; a[i] = a[j]; a[j] = t}
		return (c % 2) ? a[(c + 1) / 2] : (a[c / 2] + a[c / 2 + 1]) / 2}
	{k = $2 " " $3 " " $4; keys[k] = 1; v[k "s"] = v[k "s"] " " $5; v[k "c"] = v[k "c"] " " $7; if ($6 >= 99) held[k]++}
	END {for (k in keys) printf "median %s %.0f %.0f held %d/%d\n", k, med(k "s"), med(k "c"), held[k], reps}' "$W/all" | sort

# The system calls a call costs pipebench, beside the floor.
. "$HERE/lib/syscalls.sh"
if syscalls_ok; then
	rate=${RATES%% *}
	secs=$(awk -v d="$DURATION" 'BEGIN {sub(/s$/, "", d); print d + 0}')
	mkfifo "$W/srv.in"
	(cd "$ROOT/driver/grpc" && PIPEBENCH_HELPER_GRPC=127.0.0.1:0,$W/srv.sock "${cpu1[@]}" timeout 900 "$W/grpc.test" \
		-test.run '^TestHelperGRPCServer$' <"$W/srv.in" >"$W/srv.out" 2>&1) &
	exec 9>"$W/srv.in" # the server's stdin: it ends when this closes
	for _ in $(seq 200); do grep -q '^LISTEN ' "$W/srv.out" && break; sleep 0.1; done
	addr=$(awk '/^LISTEN / {print $2; exit}' "$W/srv.out")
	for t in uds tcp; do
		(cd "$ROOT/driver/grpc" && syscalls_run "$W/sc-$t" env PIPEBENCH_BENCH_SERVER="$addr,$W/srv.sock" PIPEBENCH_BENCH_RATES="$rate" \
			PIPEBENCH_BENCH_DURATION="$DURATION" PIPEBENCH_BENCH_CONNS="$CONNS" "${cpu0[@]}" timeout 600 "$W/grpc.test" -test.run '^$' \
			-test.bench "UnaryRate/$t/$rate/pipebench\$" -test.benchtime 1x) >"$W/sc-$t.out" 2>&1 || {
			echo "the counted run over $t failed:" >&2
			tail -n 20 "$W/sc-$t.out" >&2
			continue
		}
		calls=$(awk -v s="$secs" '/^BenchmarkUnaryRate\// {for (i = 2; i < NF; i++) if ($(i + 1) == "sent/s") printf "%.0f", $i * s}' "$W/sc-$t.out")
		wakeups=$(awk -v r="$rate" 'BEGIN {w = (r < 10000) ? r : 10000; printf "%.3f", w / r}')
		syscalls_line "gRPC unary at $rate calls/s, $([ $t = uds ] && echo "Unix socket" || echo TCP)" "$calls" "$W/sc-$t" \
			"1 write + 1 read a pacer wake-up" "$wakeups" "$wakeups"
	done
	exec 9>&-
	wait
fi
