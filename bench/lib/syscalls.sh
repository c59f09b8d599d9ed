# Sourced by the comparison scripts (wrk.sh, nats.sh, ghz.sh, ...): the
# system calls a request or item costs a generator, beside the floor.
# Not a script of its own.
#
# syscalls_run OUT CMD...: runs CMD under `perf stat`, counting the system
# calls its process enters (and its children's, which the scripts avoid by
# running servers apart): writes (write, writev, sendto, sendmsg,
# sendmmsg), reads (read, readv, recvfrom, recvmsg, recvmmsg), and all of
# them. Kernel tracepoints count them without stopping the process at
# each one (strace does), so the run keeps its pace. OUT gets one line,
# "writes reads all", or "- - -" when perf or its tracepoints are missing
# (CMD then runs alone). CMD's own exit status is returned.
#
# syscalls_line LABEL ITEMS OUT FLOOR FLOOR_WRITES FLOOR_READS: prints
#   SYSCALLS|LABEL|writes an item|reads an item|all an item|FLOOR|floor writes an item|floor reads an item
# for bench/all.sh's table of system calls: the counts of OUT over ITEMS
# (the requests, calls or messages the run sent), and the floor, as text
# ("1 write + 1 read a request") and as its writes and reads an item.

syscalls_events='raw_syscalls:sys_enter'
for _s in write writev sendto sendmsg sendmmsg read readv recvfrom recvmsg recvmmsg; do
	syscalls_events="$syscalls_events,syscalls:sys_enter_$_s"
done
unset _s

syscalls_ok() {
	command -v perf >/dev/null 2>&1 && perf stat -x, -e "$syscalls_events" -- true >/dev/null 2>&1
}

syscalls_run() {
	local out=$1 rc=0
	shift
	if ! syscalls_ok; then
		"$@" || rc=$?
		echo "- - -" >"$out"
		return $rc
	fi
	perf stat -x, -o "$out.perf" -e "$syscalls_events" -- "$@" || rc=$?
	awk -F, '
		$3 == "raw_syscalls:sys_enter" {all = $1}
		$3 ~ /^syscalls:sys_enter_(write|writev|sendto|sendmsg|sendmmsg)$/ {w += $1}
		$3 ~ /^syscalls:sys_enter_(read|readv|recvfrom|recvmsg|recvmmsg)$/ {r += $1}
		END {if (all == "") print "- - -"; else printf "%d %d %d\n", w, r, all}' "$out.perf" >"$out"
	return $rc
}

syscalls_line() {
	local label=$1 items=$2 out=$3 floor=$4 fw=$5 fr=$6 w r a
	read -r w r a <"$out"
	if [ "$w" = "-" ] || [ -z "$items" ] || [ "$items" = 0 ]; then
		echo "SYSCALLS|$label|-|-|-|$floor|$fw|$fr"
		return
	fi
	awk -v l="$label" -v n="$items" -v w="$w" -v r="$r" -v a="$a" -v f="$floor" -v fw="$fw" -v fr="$fr" \
		'BEGIN {printf "SYSCALLS|%s|%.3f|%.3f|%.3f|%s|%s|%s\n", l, w / n, r / n, a / n, f, fw, fr}'
}
