#!/usr/bin/env bash
# Every peer comparison in bench/ in one pass, and one table of them:
# for each, the peer's figure and pipebench's, their ratio, the CPU each
# spent per item and each one's peak RSS, with the machine's load when the
# comparison began and when it ended.
#
#   bench/all.sh                    # each comparison with its own defaults (an hour or more)
#   SHORT=1 bench/all.sh            # one round each, short runs (about 10 minutes)
#   PARTS="wrk vegeta" bench/all.sh # some of: wrk vegeta nats telemetrygen ghz kafka
#
# The parts are the scripts beside this one, run one after the other, each
# interleaving its generators itself (A B A B): wrk.sh (wrk, closed loop),
# vegeta.sh (vegeta and k6 at a fixed rate), nats.sh (nats bench),
# telemetrygen.sh, ghz.sh (gRPC unary calls), kafka.sh (Kafka's producer
# perf test). Each runs alone as
# well, with more options; a part whose peer is not installed skips itself
# and has no row. Each part's whole output is kept in a folder printed at
# the end. Compare figures within one pass only: on a shared machine the
# next pass may differ by 2x.
#
# Figures, per part (CPU per item is user+sys CPU of the generator's
# process over the items it sent; the ratio is pipebench's figure over the
# peer's):
#   wrk:          requests/s; wrk's is its closed-loop maximum (unpipelined,
#                 and pipelined 100 deep), pipebench's the fixed rate it sent
#                 at (0.7x unpipelined wrk's; 1.0x pipelined wrk's with
#                 pipeline 100): the ratio that matters is CPU's; then
#                 wrk with 1 and 2 connections (below nginx's capacity)
#                 and pipebench at the rate each reached: CPU at one rate;
#   vegeta, k6:   requests/s sent at the same fixed rate;
#   nats:         messages/s as each tool reports them (core, JetStream);
#   telemetrygen: items/s the sink received, same fixed rate;
#   ghz:          calls/s sent at the same fixed rate, over a Unix socket
#                 and over TCP; CPU per call from the calls answered per
#                 CPU-second (no RSS: pipebench runs inside the benchmark's
#                 process there);
#   kafka:        records/s acknowledged.
# Then a second table: the system calls an item costs pipebench (writes,
# reads, all), beside the floor (one write and one read a request
# unpipelined, one of each a window pipelined, a batch, or a wake-up of the
# pacer whose calls leave together), from one counted run a kind in the
# parts that count them (perf's tracepoints, lib/syscalls.sh).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
PARTS=${PARTS:-wrk vegeta nats telemetrygen ghz kafka}
OUT=$(mktemp -d "${TMPDIR:-/tmp}/pipebench-all.XXXXXX")
if [ -n "${SHORT:-}" ]; then
	export REPS=${REPS:-1}
	short_wrk=(SEARCH=0 DURATION=5s)
	short_vegeta=(RATES=40000 DURATION=5s)
	short_nats=(CORE_MSGS=2000000 JS_MSGS=200000)
	short_telemetrygen=(SEARCH= DURATION=5s)
	short_ghz=(DURATION=5s)
	short_kafka=(MSGS=200000)
else
	short_wrk=() short_vegeta=() short_nats=() short_telemetrygen=() short_ghz=() short_kafka=()
fi
load() { cut -d' ' -f1 /proc/loadavg; }

echo "machine: $(nproc) CPUs, $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo); $(date -u '+%Y-%m-%d %H:%M UTC'); parts: $PARTS${SHORT:+ (short)}"
for part in $PARTS; do
	[ -x "$HERE/$part.sh" ] || { echo "no part $part (bench/$part.sh)" >&2; continue; }
	declare -n extra="short_$part"
	echo
	echo "=== $part ${extra[*]} (load $(cut -d' ' -f1-3 /proc/loadavg))"
	load >"$OUT/$part.load"
	env "${extra[@]}" timeout 7200 "$HERE/$part.sh" 2>&1 | tee "$OUT/$part.log"
	echo "$(cat "$OUT/$part.load")-$(load)" >"$OUT/$part.load"
done

# Rows: comparison|peer|peer figure|pipebench figure|unit|peer CPU-µs an item|pipebench CPU-µs an item|peer RSS MB|pipebench RSS MB|load
rows() {
	local part=$1 log=$OUT/$1.log l
	[ -s "$log" ] || return 0
	l=$(cat "$OUT/$part.load")
	case $part in
	wrk)
		awk -v l="$l" '
			/^wrk (pipeline [0-9]+ )?median:/ {
				p = ($2 == "pipeline") ? $3 : 0
				w[p] = (p > 0) ? $5 : $3
				for (i = 1; i <= NF; i++) {if ($i == "CPU-µs") wc[p] = $(i - 1); if ($i == "RSS") wm[p] = $(i + 1)}}
			/^pipebench +pipeline/ {
				for (i = 1; i <= NF; i++) {if ($i == "sent") s = $(i + 1); if ($i == "CPU-µs") c = $(i - 1); if ($i == "RSS") m = $(i + 1)}
				sub(/\/s$/, "", s); sub(/;$/, "", c)
				peer = ($3 > 0) ? "wrk -t1 -c32 pipeline " $3 " (max)" : "wrk -t1 -c64 (max)"
				printf "HTTP/1.1, pipeline %s|%s|%s|%s|req/s|%s|%s|%s|%s|%s\n", $3, peer, w[$3], s, wc[$3], c, wm[$3], m, l}
			/^same rate as wrk -c[0-9]+[^ ]* .* pipebench(@tick=[^ ]+)? / {
				c = $5; sub(/^-c/, "", c); r = $7; sub(/\/s$/, "", r); f = ""; tk = ""
				for (i = 1; i <= NF; i++) {if ($i == "wrk" && $(i + 1) + 0 > 0) wu = $(i + 1); if ($i ~ /^pipebench(@tick=.*)?$/) {pu = $(i + 1); if ($i ~ /@tick=/) {tk = $i; sub(/^.*@tick=/, "", tk)}}; if ($i == "sent") s = $(i + 1); if ($i == "=" && f == "") f = $(i + 1)}
				sub(/\/s;$/, "", s)
				# "64+3ms": 64 connections, each pausing 3 ms between an answer and its next request.
				peer = "wrk -t1 -c" c " (closed)"
				if (c ~ /\+/) {split(c, cp, "+"); sub(/ms$/, "", cp[2]); peer = "wrk -t1 -c" cp[1] ", " cp[2] " ms pauses (closed)"}
				printf "HTTP/1.1 at wrk -c%s'"'"'s rate (%s its max)%s|%s|%s|%s|req/s|%s|%s|-|-|%s\n", c, f, (tk != "" ? ", tick " tk : ""), peer, r, s, wu, pu, l}' "$log"
		;;
	vegeta)
		awk -v l="$l" '
			/^RESULT/ {
				g = $2; r = $3; s = $5; c = $6; m = $12
				sub(/\/s,?$/, "", s); sub(/\/s:$/, "", r); sub(/,$/, "", c)
				fig[g, r] = s; cpu[g, r] = c; rss[g, r] = m; rates[r] = 1; gens[g] = 1}
			END {
				for (r in rates) for (g in gens) if (g != "pipebench" && g !~ /^pipebench-/ && ((g, r) in fig))
					printf "HTTP/1.1 at %s req/s|%s|%s|%s|req/s|%s|%s|%s|%s|%s\n", r, g, fig[g, r], fig["pipebench", r], cpu[g, r], cpu["pipebench", r], rss[g, r], rss["pipebench", r], l}' "$log"
		;;
	nats)
		awk -v l="$l" -v cm="${CORE_MSGS:-$(printf '%s\n' "${short_nats[@]}" | sed -n 's/^CORE_MSGS=//p')}" \
			-v jm="${JS_MSGS:-$(printf '%s\n' "${short_nats[@]}" | sed -n 's/^JS_MSGS=//p')}" '
			function med(k,   n, i, j, t, a) {n = split(v[k], a, " "); for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) {t = a[i]; a[i] = a[j]; a[j] = t}
				return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2}
			$1 ~ /^(nats|pipebench)-(core|js)-r[0-9]+$/ {
				split($1, p, "-"); k = p[1] "-" p[2]
				v[k "rate"] = v[k "rate"] " " $2; v[k "cpu"] = v[k "cpu"] " " $4; v[k "rss"] = v[k "rss"] " " $5}
			END {
				if (cm == "") cm = 10000000; if (jm == "") jm = 600000
				for (x = 1; x <= 2; x++) {
					t = (x == 1) ? "core" : "js"; n = (x == 1) ? cm : jm
					if (v["nats-" t "rate"] == "" || v["pipebench-" t "rate"] == "") continue
					printf "NATS %s publish, 128 B|nats bench|%.0f|%.0f|msgs/s|%.2f|%.2f|%s|%s|%s\n", t, med("nats-" t "rate"), med("pipebench-" t "rate"),
						med("nats-" t "cpu") / n * 1e6, med("pipebench-" t "cpu") / n * 1e6, med("nats-" t "rss"), med("pipebench-" t "rss"), l}}' "$log"
		;;
	telemetrygen)
		awk -v l="$l" '
			function med(k,   n, i, j, t, a) {n = split(v[k], a, " "); for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) {t = a[i]; a[i] = a[j]; a[j] = t}
				return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2}
			$1 ~ /^(telemetrygen|pipebench)-(traces|metrics|logs)-r[0-9]+$/ {
				split($1, p, "-"); k = p[1] "-" p[2]; sig[p[2]] = $2
				v[k "rate"] = v[k "rate"] " " $4; v[k "per"] = v[k "per"] " " $7; v[k "rss"] = v[k "rss"] " " $8}
			END {
				for (s in sig) {
					if (v["telemetrygen-" s "rate"] == "" || v["pipebench-" s "rate"] == "") continue
					a = med("telemetrygen-" s "per"); b = med("pipebench-" s "per")
					printf "OTLP %s at %s items/s|telemetrygen|%.0f|%.0f|items/s|%.2f|%.2f|%s|%s|%s\n", s, sig[s], med("telemetrygen-" s "rate"), med("pipebench-" s "rate"),
						(a > 0 ? 1e6 / a : 0), (b > 0 ? 1e6 / b : 0), med("telemetrygen-" s "rss"), med("pipebench-" s "rss"), l}}' "$log"
		;;
	ghz)
		# ghz.sh: median <transport> <rate> <generator> <sent/s> <calls per CPU-second> held <n>/<rounds>
		awk -v l="$l" '
			$1 == "median" {k = $2 " " $3; keys[k] = 1; s[k, $4] = $5; c[k, $4] = $6}
			END {
				for (k in keys) {
					if (!((k, "ghz") in s) || !((k, "pipebench") in s)) continue
					split(k, t, " ")
					printf "gRPC unary at %s calls/s, %s|ghz|%s|%s|calls/s|%.2f|%.2f|-|-|%s\n", t[2], (t[1] == "uds" ? "Unix socket" : "TCP"),
						s[k, "ghz"], s[k, "pipebench"], (c[k, "ghz"] > 0 ? 1e6 / c[k, "ghz"] : 0), (c[k, "pipebench"] > 0 ? 1e6 / c[k, "pipebench"] : 0), l}}' "$log"
		;;
	kafka)
		awk -v l="$l" -v n="${MSGS:-$(printf '%s\n' "${short_kafka[@]}" | sed -n 's/^MSGS=//p')}" '
			function med(k,   c, i, j, t, a) {c = split(v[k], a, " "); for (i = 1; i <= c; i++) for (j = i + 1; j <= c; j++) if (a[j] + 0 < a[i] + 0) {t = a[i]; a[i] = a[j]; a[j] = t}
				return (c % 2) ? a[(c + 1) / 2] : (a[c / 2] + a[c / 2 + 1]) / 2}
			# kafka.sh: run tool-msgs/s broker-msgs/s MB/s gen-CPU-s us/rec peak-RSS load
			$1 ~ /^(perf-test|pipebench)-r[0-9]+$/ {
				k = ($1 ~ /^perf/) ? "p" : "b"
				v[k "rate"] = v[k "rate"] " " $2; v[k "cpu"] = v[k "cpu"] " " $5; v[k "rss"] = v[k "rss"] " " $7}
			END {
				if (n == "") n = 1000000
				if (v["prate"] == "" || v["brate"] == "") exit
				printf "Kafka produce, acks=all|producer perf test|%.0f|%.0f|records/s|%.2f|%.2f|%s|%s|%s\n", med("prate"), med("brate"),
					med("pcpu") / n * 1e6, med("bcpu") / n * 1e6, med("prss"), med("brss"), l}' "$log"
		;;
	esac
}

# The system calls an item costs pipebench, beside the floor, from the
# parts' SYSCALLS lines (lib/syscalls.sh): writes, reads and every system
# call an item, and the floor as text and as writes and reads an item.
syscalls_table() {
	local part
	for part in $PARTS; do
		[ -s "$OUT/$part.log" ] && grep '^SYSCALLS|' "$OUT/$part.log"
	done | awk -F'|' -v OFS='|' '{
		fw = ($7 > 0 && $3 != "-") ? sprintf("%.1fx", $3 / $7) : "-"
		fr = ($8 > 0 && $4 != "-") ? sprintf("%.1fx", $4 / $8) : "-"
		print $2, $3, $4, $5, $6, $7, $8, fw, fr}'
}

echo
echo "summary ($(date -u '+%Y-%m-%d %H:%M UTC'); load: 1-minute average at each comparison's start and end, $(nproc) CPUs; logs in $OUT)"
{
	echo "comparison|peer|peer|pipebench|ratio|peer CPU-µs/item|pipebench CPU-µs/item|CPU ratio|peer RSS MB|pipebench RSS MB|load"
	for part in $PARTS; do
		rows "$part" | awk -F'|' -v OFS='|' '{
			printf "%s|%s|%s %s|%s %s|%.2fx|%s|%s|%s|%s|%s|%s\n", $1, $2, $3, $5, $4, $5, ($3 > 0 ? $4 / $3 : 0), $6, $7,
				($6 > 0 ? sprintf("%.2fx", $7 / $6) : "-"), $8, $9, $10}'
	done
} | column -t -s'|'
if [ -n "$(syscalls_table)" ]; then
	echo
	echo "system calls an item, pipebench (perf's tracepoints; one counted run a kind), beside the floor"
	{
		echo "comparison|writes|reads|all|floor|floor writes|floor reads|writes/floor|reads/floor"
		syscalls_table
	} | column -t -s'|'
fi
