#!/usr/bin/env bash
# pipebench's open model against wrk's closed loop, HTTP/1.1 to nginx, in one
# interleaved pass (wrk, pipebench, wrk, pipebench, ...).
#
#   bench/wrk.sh                 # REPS=3 rounds of 10 s runs, then a search
#   BASE=main bench/wrk.sh       # also pipebench built from git ref BASE, in the same pass
#   SEARCH=0 bench/wrk.sh        # the rounds only, no search
#   SAME_RATE=0 bench/wrk.sh     # without the same-rate rounds
#   SAME_RATE="2 64/3" bench/wrk.sh   # same-rate rounds at wrk -c2's rate and at wrk -c64 pausing 3 ms a request
#   TICK= bench/wrk.sh           # without the runs at a coarser tick (default TICK=1ms)
#   PIPE_SAME_RATE="40" bench/wrk.sh  # pipelined same-rate rounds at wrk pausing 40 ms after each window (0: none)
#
# Target: nginx, one worker pinned to CPU 1, `return 200 'ok'`, on
# 127.0.0.1:$PORT (default 18091), started here from a config of its own in a
# temporary directory and stopped at the end. Generators pinned to CPU 0.
#   - wrk: 1 thread, 64 connections, closed loop (as fast as it goes), POST of
#     64 bytes (a Lua script sets the method and body once: no per-request Lua);
#     then pipelined, 32 connections, each write PIPELINE_DEPTH (100) of the
#     same request (the Lua script builds them once, as wrk's pipeline.lua);
#   - pipebench: bench/http-open.yaml, open model at a fixed rate over 64
#     connections, POST of 64 bytes, every latency recorded; once without
#     pipelining at FRACTION (default 0.7) x the unpipelined wrk figure of the
#     same round, once with `pipeline: PIPELINE_DEPTH` (32 connections) at
#     PIPE_FRACTION (default 1.0) x the pipelined wrk figure of the same round.
# Each round's run also prints srv-CPU: the CPU-seconds nginx's worker used
# during it. At DURATION of it the server, not the generator, set the
# closed loop's maximum, and an open model at 1.0x that maximum runs the
# server at full utilization, where its queue grows without bound.
# Same-rate rounds (SAME_RATE, default "64/3 64/2 1 64/1 2"; 0 skips
# them): wrk's closed loop at a rate below its maximum, then each pipebench
# build unpipelined at the rate that wrk run reached: the CPU a request of
# the two at one rate, one operating point of the server. An entry C is
# wrk with C connections, too few to keep nginx busy (it idles between
# arrivals; from about 4 connections on this machine nginx's core is full
# again); C/D is wrk with C connections each pausing D ms after an answer
# before its next request (wrk's Lua delay(), a closed loop with think
# time). The defaults span a quarter to about 0.9 of the 64-connection
# maximum (64/3, 64/2 and 1 about 0.25-0.4 of it, 64/1 about 0.7, 2
# about 0.85); the summary gives each point's fraction of the maximum.
# Pipelined same-rate rounds (PIPE_SAME_RATE, default "40 30"; 0 skips
# them): wrk's pipelined closed loop below its maximum, each of its 32
# connections pausing D ms after the answers of a window of
# PIPELINE_DEPTH (wrk's Lua delay(), which wrk calls once a window), then
# pipebench pipelined (32 connections, `pipeline: PIPELINE_DEPTH`) at the
# rate that wrk run reached, at the default tick and at TICK: pipelining's
# CPU a request at one rate, one operating point of the server (40 and 30
# ms give about 0.5 and 0.65 of wrk's pipelined maximum here).
# In each same-rate round pipebench also runs with the phase's tick set to
# TICK (default 1ms, "pipebench@tick=1ms"): its pacer then wakes up once a
# millisecond, as wrk's timers do (they count whole milliseconds), sending
# what fell due in that millisecond together, up to 1 ms late; the
# latencies, from the scheduled time, include that wait. A
# generator pays more a request when its server idles between arrivals
# (each write wakes it), closed loop or open model alike, so the rounds
# above compare an open model below the maximum with a closed loop at it.
# A run "holds" its rate when it sent at least 99% of it, dropped nothing and
# had no errors. After the rounds, a search runs pipebench (unpipelined and
# pipelined, each build) at rising fractions of the median wrk figure (of
# the same mode),
# STEP_DURATION (default 5 s) each, interleaved step by step, and prints the
# highest that held. Also printed: CPU-µs a request (user+sys of the
# generator's process / requests), the figure least moved by a busy machine;
# sleeps a request (the generator's voluntary context switches / requests:
# each is a thread that waited and was woken); the generator's peak RSS.
# wrk and nginx come from PATH or from $WRK and $NGINX; the script skips
# (exit 0) with a message when either is absent. Every run is bounded
# (`timeout`).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
# shellcheck source=lib/nginx.sh
. "$HERE/lib/nginx.sh"
REPS=${REPS:-3}
DURATION=${DURATION:-10s}
STEP_DURATION=${STEP_DURATION:-5s}
FRACTION=${FRACTION:-0.7}
PIPE_FRACTION=${PIPE_FRACTION:-1.0}
for v in FRACTION PIPE_FRACTION; do
	if ! awk -v x="${!v}" 'BEGIN {exit !(x ~ /^[0-9]*\.?[0-9]+$/ && x + 0 > 0)}'; then
		echo "$v=${!v}: give a positive fraction of wrk's figure, like 0.9" >&2
		exit 2
	fi
done
SAME_RATE=${SAME_RATE-64/3 64/2 1 64/1 2}
TICK=${TICK-1ms}
case $TICK in '' | [0-9]*s) ;; *)
	echo "TICK=$TICK: give the pacer's tick of the extra same-rate run as a duration, like 1ms (empty: none)" >&2
	exit 2
	;;
esac
[ "$SAME_RATE" = 0 ] && SAME_RATE=
PIPE_SAME_RATE=${PIPE_SAME_RATE-40 30}
[ "$PIPE_SAME_RATE" = 0 ] && PIPE_SAME_RATE=
for d in $PIPE_SAME_RATE; do
	case $d in
	*[!0-9]* | 0*)
		echo "PIPE_SAME_RATE=$PIPE_SAME_RATE: give wrk's pauses after each pipelined window in whole ms, like \"40 30\" (0 for none)" >&2
		exit 2
		;;
	esac
done
for c in $SAME_RATE; do
	case $c in
	'' | *[!0-9/]* | 0 | /* | */ | */*/* | 0/*)
		echo "SAME_RATE=$SAME_RATE: give wrk connection counts, each alone or with a pause in ms, like \"1 2 64/3\" (0 for none)" >&2
		exit 2
		;;
	esac
done
PIPELINE_DEPTH=${PIPELINE_DEPTH:-100}
case $PIPELINE_DEPTH in
'' | *[!0-9]* | 0 | 1)
	echo "PIPELINE_DEPTH=$PIPELINE_DEPTH: give a whole number of requests a write, 2 or more (default 100)" >&2
	exit 2
	;;
esac
PORT=${PORT:-18091}
WRK=${WRK:-$(command -v wrk || true)}
NGINX=${NGINX:-$(command -v nginx || true)}
if [ -z "$NGINX" ] && [ -x /usr/sbin/nginx ]; then NGINX=/usr/sbin/nginx; fi
if [ -z "$WRK" ] || [ -z "$NGINX" ]; then
	echo "skip: wrk and nginx are needed (PATH, or WRK=... NGINX=...); apt-get install wrk nginx" >&2
	exit 0
fi
pin_cpus
W=$(mktemp -d)
mkdir -p "$W/bin"
trap 'nginx_stop "$W"; rm -rf "$W"' EXIT
nginx_start "$W" "$PORT"
cat >"$W/post.lua" <<'EOF'
wrk.method = "POST"
wrk.body = string.rep("x", 64)
wrk.headers["Content-Type"] = "application/octet-stream"
EOF
cat >"$W/pause.lua" <<'EOF'
wrk.method = "POST"
wrk.body = string.rep("x", 64)
wrk.headers["Content-Type"] = "application/octet-stream"
function delay()
	return @PAUSE@
end
EOF
cat >"$W/pipe.lua" <<'EOF'
init = function(args)
	local depth = tonumber(args[1]) or 1
	local r = {}
	for i = 1, depth do
		r[i] = wrk.format("POST", nil, {["Content-Type"] = "application/octet-stream"}, string.rep("x", 64))
	end
	req = table.concat(r)
end
request = function()
	return req
end
EOF
cat >"$W/pipe-pause.lua" <<'EOF'
init = function(args)
	local depth = tonumber(args[1]) or 1
	pause = tonumber(args[2]) or 0
	local r = {}
	for i = 1, depth do
		r[i] = wrk.format("POST", nil, {["Content-Type"] = "application/octet-stream"}, string.rep("x", 64))
	end
	req = table.concat(r)
end
request = function()
	return req
end
delay = function()
	return pause
end
EOF
URL=http://127.0.0.1:$PORT/

# The lean load generator (cmd/pipebench-load: no embedded system under
# test, no Kubernetes launcher), what a machine that only sends runs.
(cd "$ROOT" && go build -o "$W/bin/pipebench" ./cmd/pipebench-load)
# shellcheck source=lib/binaries.sh
. "$HERE/lib/binaries.sh"
copy_binary "$W/bin/pipebench" "$W/bin/pipebench" # peak RSS as an installed binary shows it
builds=(pipebench)
if [ -n "${BASE:-}" ]; then
	mkdir -p "$W/base"
	(cd "$ROOT" && git archive "$BASE" | tar -x -C "$W/base")
	main=./cmd/pipebench-load
	[ -d "$W/base/cmd/pipebench-load" ] || main=./cmd/pipebench # a build before the lean generator
	(cd "$W/base" && go build -o "$W/bin/pipebench-base" "$main")
	copy_binary "$W/bin/pipebench-base" "$W/bin/pipebench-base"
	builds+=(pipebench-base)
fi
# The rounds also run pipebench with the phase's tick at TICK (unless
# empty): pipelined, a coarser tick puts the sends of a millisecond in one
# write a connection, as wrk fills its window before it writes.
rounds=("${builds[@]}")
[ -n "$TICK" ] && rounds+=("pipebench@tick=$TICK")

# wrk_run PIPELINE [CONNS[/PAUSE]] -> "req/s CPU-s µs-per-request sleeps-per-request peak-RSS-MB"
# (PIPELINE 0: CONNS (64) connections, one request at a time, each
# pausing PAUSE ms after an answer when given; else 32 connections,
# PIPELINE requests a write, each pausing PAUSE ms after a window's
# answers when given)
wrk_run() {
	local conns=${2:-64} pause=
	case $conns in */*) pause=${conns#*/} conns=${conns%/*} ;; esac
	local args=(-c"$conns" -s "$W/post.lua" "$URL")
	if [ -n "$pause" ]; then
		sed "s/@PAUSE@/$pause/" "$W/pause.lua" >"$W/pause-$pause.lua"
		args=(-c"$conns" -s "$W/pause-$pause.lua" "$URL")
	fi
	if [ "$1" -gt 0 ]; then
		args=(-c32 -s "$W/pipe.lua" "$URL" -- "$1")
		[ -n "$pause" ] && args=(-c"$conns" -s "$W/pipe-pause.lua" "$URL" -- "$1" "$pause")
	fi
	/usr/bin/time -f '%U %S %w %M' -o "$W/time" "${cpu0[@]}" timeout 60 "$WRK" -t1 -d"$DURATION" "${args[@]}" >"$W/wrk.out" 2>&1
	read -r user sys vcs rss < <(tail -n 1 "$W/time")
	awk -v c="$(echo "$user + $sys" | bc)" -v w="$vcs" -v m="$rss" '/requests in/ {n = $1} /^Requests\/sec:/ {r = $2}
		END {printf "%.0f %.2f %.1f %.3f %.0f\n", r, c, (n > 0 ? c / n * 1e6 : 0), (n > 0 ? w / n : 0), m / 1024}' "$W/wrk.out"
}
# pb_run BIN RATE PIPELINE DURATION -> "sent/s p50 p99 cpu-s held µs-per-request sleeps-per-request peak-RSS-MB"
pb_run() {
	local bin=$1 rate=$2 pipeline=$3 dur=$4 conns=64 tick=100us
	[ "$pipeline" -gt 0 ] && conns=32
	case $bin in *"@tick="*) tick=${bin#*@tick=} bin=${bin%@tick=*} ;; esac
	rm -f "$W/r.json"
	PIPEBENCH_URL=$URL PIPEBENCH_RATE=$rate PIPEBENCH_PIPELINE=$pipeline PIPEBENCH_CONNS=$conns PIPEBENCH_DURATION=$dur PIPEBENCH_TICK=$tick \
		/usr/bin/time -f '%U %S %w %M' -o "$W/time" "${cpu0[@]}" timeout 120 "$W/bin/$bin" run "$HERE/http-open.yaml" \
		--no-store --quiet -o "$W/r.json" >"$W/pb.out" 2>&1 || true
	if [ ! -s "$W/r.json" ]; then
		echo "0 0 0 0 no 0 0 0"
		return
	fi
	read -r user sys vcs rss < <(tail -n 1 "$W/time")
	jq -r --arg rate "$rate" --arg cpu "$(echo "$user + $sys" | bc)" --arg vcs "$vcs" --arg rss "$rss" '
		.phases[0].kpis as $k
		| def v(n): ([$k[] | select(.name == n) | .value] | add // 0);
		([$k[] | select(.name == "errors") | .value] | add // 0) as $errs
		| [v("sent_rate"), v("latency.p50"), v("latency.p99"), ($cpu | tonumber),
		   (if v("sent_rate") >= 0.99 * ($rate | tonumber) and v("dropped") == 0 and $errs == 0 then "yes" else "no" end),
		   (if v("sent") > 0 then ($cpu | tonumber) / v("sent") * 1e6 else 0 end),
		   (if v("sent") > 0 then ($vcs | tonumber) / v("sent") else 0 end), ($rss | tonumber) / 1024]
		| "\(.[0] | floor) \(.[1]) \(.[2]) \(.[3]) \(.[4]) \(.[5] * 10 | floor / 10) \(.[6] * 1000 | floor / 1000) \(.[7] | floor)"' "$W/r.json"
}

# wname C[/PAUSE]: a same-rate entry as the lines name it: "64/3" is "64+3ms" (64 connections, each pausing 3 ms).
wname() { case $1 in */*) echo "${1%/*}+${1#*/}ms" ;; *) echo "$1" ;; esac; }

# srv_cs: the CPU time nginx's workers used so far, in clock ticks.
srv_cs() {
	local master t=0
	master=$(cat "$W/nginx/nginx.pid")
	for w in $(pgrep -P "$master"); do
		t=$((t + $(awk '{print $14 + $15}' "/proc/$w/stat")))
	done
	echo "$t"
}
HZ=$(getconf CLK_TCK)
# srv_since TICKS: CPU-seconds nginx's workers used since srv_cs said TICKS.
srv_since() { awk -v a="$1" -v b="$(srv_cs)" -v hz="$HZ" 'BEGIN {printf "%.2f", (b - a) / hz}'; }
# secs D: a duration as wrk and pipebench take it (500ms, 10s, 1m) in seconds.
secs() { awk -v d="$1" 'BEGIN {n = d + 0; u = d; sub(/^[0-9.]+/, "", u); printf "%g", (u == "ms") ? n / 1000 : (u == "m") ? n * 60 : (u == "h") ? n * 3600 : n}'; }
# full CPU-S DURATION: "*" when nginx's worker used at least 95% of its core
# over a run of DURATION: the server, not the generator, set the pace.
full() { awk -v c="$1" -v d="$(secs "$2")" 'BEGIN {if (d > 0 && c >= 0.95 * d) printf "*"}'; }

echo "machine: $(nproc) CPUs, $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo); load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-5s %-30s %9s %9s %9s %9s %7s %8s %5s %10s %7s %7s\n' round run target/s sent/s p50-ms p99-ms CPU-s µs/req held sleeps/req RSS-MB srv-CPU
: >"$W/wrk.all"
declare -A wr
for rep in $(seq "$REPS"); do
	for pl in 0 "$PIPELINE_DEPTH"; do
		s0=$(srv_cs)
		read -r w wcpu wus wsl wrss < <(wrk_run "$pl")
		srv=$(srv_since "$s0")
		wr[$pl]=$w
		echo "$pl $w $wus $wsl $wrss" >>"$W/wrk.all"
		name="wrk -t1 -c64 (closed)"
		[ "$pl" -gt 0 ] && name="wrk -t1 -c32 pipeline $pl"
		printf '%-5s %-30s %9s %9s %9s %9s %7s %8s %5s %10s %7s %7s\n' "$rep" "$name" max "$w" - - "$wcpu" "$wus" - "$wsl" "$wrss" "$srv$(full "$srv" "$DURATION")"
	done
	for b in "${rounds[@]}"; do
		for pl in 0 "$PIPELINE_DEPTH"; do
			f=$FRACTION
			[ "$pl" -gt 0 ] && f=$PIPE_FRACTION
			rate=$(awk -v w="${wr[$pl]}" -v f="$f" 'BEGIN {printf "%d", w * f}')
			s0=$(srv_cs)
			read -r sent p50 p99 cpu held us sl rss < <(pb_run "$b" "$rate" "$pl" "$DURATION")
			srv=$(srv_since "$s0")
			sf=$(full "$srv" "$DURATION")
			echo "$b $pl $sent $rate $held $us $sl $rss ${sf:-.}" >>"$W/pb.all"
			printf '%-5s %-30s %9s %9s %9s %9s %7s %8s %5s %10s %7s %7s\n' "$rep" "$b pipeline $pl (${f}x)" "$rate" "$sent" "$p50" "$p99" "$cpu" "$us" "$held" "$sl" "$rss" "$srv$sf"
		done
	done
done
echo "(srv-CPU: CPU-seconds of nginx's worker during the run; * at least 95% of its core: the server set the pace)"
# wcol PIPELINE COLUMN: the median of a column of wrk's runs in that mode.
wcol() { awk -v p="$1" -v c="$2" '$1 == p {print $c}' "$W/wrk.all" | median; }
declare -A wm
echo
for pl in 0 "$PIPELINE_DEPTH"; do
	wm[$pl]=$(wcol "$pl" 2)
	name="wrk median:"
	[ "$pl" -gt 0 ] && name="wrk pipeline $pl median:"
	echo "$name ${wm[$pl]} req/s, $(wcol "$pl" 3) CPU-µs a request (its process only: softirq work may be charged elsewhere), $(wcol "$pl" 4) sleeps a request, peak RSS $(wcol "$pl" 5) MB"
done
for b in "${rounds[@]}"; do
	for pl in 0 "$PIPELINE_DEPTH"; do
		s=$(awk -v b="$b" -v p="$pl" '$1 == b && $2 == p {print $3}' "$W/pb.all" | median)
		u=$(awk -v b="$b" -v p="$pl" '$1 == b && $2 == p {print $6}' "$W/pb.all" | median)
		h=$(awk -v b="$b" -v p="$pl" '$1 == b && $2 == p && $5 == "yes"' "$W/pb.all" | wc -l)
		sl=$(awk -v b="$b" -v p="$pl" '$1 == b && $2 == p {print $7}' "$W/pb.all" | median)
		rss=$(awk -v b="$b" -v p="$pl" '$1 == b && $2 == p {print $8}' "$W/pb.all" | median)
		sat=$(awk -v b="$b" -v p="$pl" '$1 == b && $2 == p && $9 == "*"' "$W/pb.all" | wc -l)
		awk -v b="$b" -v p="$pl" -v s="$s" -v w="${wm[$pl]}" -v h="$h" -v n="$REPS" -v u="$u" -v sl="$sl" -v rss="$rss" -v sat="$sat" \
			'BEGIN {printf "%-16s pipeline %-3s median sent %7.0f/s = %.2fx wrk (same pipelining); %.1f CPU-µs a request; %.3f sleeps a request; peak RSS %d MB; held its rate in %d of %d rounds; the server'"'"'s core full in %d\n", b, p, s, s / w, u, sl, rss, h, n, sat}'
	done
done

# The system calls a request costs pipebench, beside the floor (one run
# a mode, counted by perf's tracepoints; lib/syscalls.sh): unpipelined one
# write and one read a request, pipelined one of each a window.
. "$HERE/lib/syscalls.sh"
if syscalls_ok; then
	for pl in 0 "$PIPELINE_DEPTH"; do
		f=$FRACTION conns=64
		[ "$pl" -gt 0 ] && f=$PIPE_FRACTION conns=32
		rate=$(awk -v w="${wm[$pl]}" -v f="$f" 'BEGIN {printf "%d", w * f}')
		rm -f "$W/sc.json"
		syscalls_run "$W/sc-$pl" env PIPEBENCH_URL="$URL" PIPEBENCH_RATE="$rate" PIPEBENCH_PIPELINE="$pl" PIPEBENCH_CONNS="$conns" \
			PIPEBENCH_DURATION="$DURATION" "${cpu0[@]}" timeout 120 "$W/bin/pipebench" run "$HERE/http-open.yaml" \
			--no-store --quiet -o "$W/sc.json" >"$W/sc.out" 2>&1 || true
		n=$(jq '[.phases[0].kpis[] | select(.name == "sent") | .value] | add // 0' "$W/sc.json" 2>/dev/null || echo 0)
		if [ "$pl" -gt 0 ]; then
			syscalls_line "HTTP/1.1, pipeline $pl (at ${f}x wrk's)" "$n" "$W/sc-$pl" "1 write + 1 read a window of $pl" \
				"$(awk -v p="$pl" 'BEGIN {printf "%.3f", 1 / p}')" "$(awk -v p="$pl" 'BEGIN {printf "%.3f", 1 / p}')"
		else
			syscalls_line "HTTP/1.1, pipeline 0 (at ${f}x wrk's)" "$n" "$W/sc-$pl" "1 write + 1 read a request" 1 1
		fi
	done
fi

# same_rate_rounds PIPELINE ENTRY...: wrk's closed loop below its maximum,
# then each pipebench run at the rate that wrk run reached, REPS rounds;
# then a line an entry and run with the medians. Unpipelined (PIPELINE 0)
# an entry is SAME_RATE's (C or C/PAUSE); pipelined it is a pause in ms
# after each window, on 32 connections.
same_rate_rounds() {
	local pl=$1 all=$W/same-$1.all e w wcpu wus wsl s0 srv sent p50 p99 cpu held us sl
	shift
	: >"$all"
	for rep in $(seq "$REPS"); do
		for e in "$@"; do
			local warg=$e wlabel="wrk -t1 -c$(wname "$e") (closed)" plabel="pipeline 0 (wrk -c$(wname "$e"))"
			if [ "$pl" -gt 0 ]; then
				warg=32/$e wlabel="wrk -c32 pipeline $pl +${e}ms" plabel="pipeline $pl (wrk +${e}ms)"
			fi
			s0=$(srv_cs)
			read -r w wcpu wus wsl _ < <(wrk_run "$pl" "$warg")
			srv=$(srv_since "$s0")
			echo "wrk $e $w $wus yes" >>"$all"
			printf '%-5s %-30s %9s %9s %9s %9s %7s %8s %5s %10s %7s %7s\n' "$rep" "$wlabel" max "$w" - - "$wcpu" "$wus" - "$wsl" - "$srv$(full "$srv" "$DURATION")"
			for b in "${rounds[@]}"; do
				s0=$(srv_cs)
				read -r sent p50 p99 cpu held us sl _ < <(pb_run "$b" "$w" "$pl" "$DURATION")
				srv=$(srv_since "$s0")
				echo "$b $e $sent $us $held" >>"$all"
				printf '%-5s %-30s %9s %9s %9s %9s %7s %8s %5s %10s %7s %7s\n' "$rep" "$b $plabel" "$w" "$sent" "$p50" "$p99" "$cpu" "$us" "$held" "$sl" - "$srv$(full "$srv" "$DURATION")"
			done
		done
	done
	for e in "$@"; do
		local wu wrate u h what of m
		wu=$(awk -v e="$e" '$1 == "wrk" && $2 == e {print $4}' "$all" | median)
		wrate=$(awk -v e="$e" '$1 == "wrk" && $2 == e {print $3}' "$all" | median)
		what="-c$(printf '%-3s' "$(wname "$e")")" of="its -c64 median" m=${wm[0]}
		if [ "$pl" -gt 0 ]; then
			what="pipeline $pl +${e}ms" of="its pipelined median" m=${wm[$pl]}
		fi
		for b in "${rounds[@]}"; do
			u=$(awk -v b="$b" -v e="$e" '$1 == b && $2 == e {print $4}' "$all" | median)
			sent=$(awk -v b="$b" -v e="$e" '$1 == b && $2 == e {print $3}' "$all" | median)
			h=$(awk -v b="$b" -v e="$e" '$1 == b && $2 == e && $5 == "yes"' "$all" | wc -l)
			awk -v b="$b" -v what="$what" -v of="$of" -v wr="$wrate" -v wu="$wu" -v u="$u" -v s="$sent" -v h="$h" -v n="$REPS" -v m="$m" \
				'BEGIN {printf "same rate as wrk %s (median %6.0f/s = %.2fx %s): wrk %.1f CPU-µs a request, %-16s %.1f = %.2fx; sent %.0f/s; held in %d of %d\n", what, wr, wr / m, of, wu, b, u, (wu > 0 ? u / wu : 0), s, h, n}'
		done
	done
}

if [ -n "$SAME_RATE" ]; then
	echo
	echo "same rate: wrk closed loop with fewer connections, then pipebench unpipelined (64 connections) at the rate it reached"
	# shellcheck disable=SC2086 # the entries are words
	same_rate_rounds 0 $SAME_RATE
fi
if [ -n "$PIPE_SAME_RATE" ]; then
	echo
	echo "same rate, pipelined: wrk -c32 pipeline $PIPELINE_DEPTH pausing after each window, then pipebench pipelined (32 connections) at the rate it reached"
	# shellcheck disable=SC2086
	same_rate_rounds "$PIPELINE_DEPTH" $PIPE_SAME_RATE
fi

[ "${SEARCH:-1}" = 0 ] && exit 0
echo
echo "search: highest rate held, ${STEP_DURATION} per step, as a fraction of the wrk median of the same pipelining"
echo "(interleaved: every build and mode at one step before the next; each stops at its first miss)"
declare -A best live
for b in "${builds[@]}"; do for pl in 0 "$PIPELINE_DEPTH"; do best[$b/$pl]=0 live[$b/$pl]=1; done; done
for f in 0.2 0.3 0.4 0.5 0.6 0.7 0.8 0.9 1.0 1.2 1.4; do
	for pl in 0 "$PIPELINE_DEPTH"; do
		rate=$(awk -v w="${wm[$pl]}" -v f="$f" 'BEGIN {printf "%d", w * f}')
		for b in "${builds[@]}"; do
			[ "${live[$b/$pl]}" = 1 ] || continue
			read -r sent p50 p99 cpu held us _ _ < <(pb_run "$b" "$rate" "$pl" "$STEP_DURATION")
			printf '  %-16s pipeline %-3s %4sx %8s/s: sent %8s/s p99 %9s ms %6s CPU-µs/req held %s\n' "$b" "$pl" "$f" "$rate" "$sent" "$p99" "$us" "$held"
			if [ "$held" = yes ]; then best[$b/$pl]=$rate; else live[$b/$pl]=0; fi
		done
	done
done
for b in "${builds[@]}"; do
	for pl in 0 "$PIPELINE_DEPTH"; do
		awk -v b="$b" -v p="$pl" -v r="${best[$b/$pl]}" -v w="${wm[$pl]}" \
			'BEGIN {printf "%-16s pipeline %-3s holds %7d/s = %.2fx wrk\n", b, p, r, r / w}'
	done
done
