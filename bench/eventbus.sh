#!/usr/bin/env bash
# The event-bus references, number for number: the eventing reference's
# table (builtin:kyma-eventing) and the chef reference's (builtin:chef) run
# in full and printed beside the reports' own rows; the chef steady-state
# capacity found by the limit search; pipebench's own CPU at 500 rps on the
# 3-node cluster (full pipeline, and the generator alone), interleaved.
#
#   bench/eventbus.sh                    # everything, about 35 minutes
#   PARTS="cpu limit" bench/eventbus.sh  # some of: eventing chef limit cpu soak
#   SOAK=2h PARTS=soak bench/eventbus.sh # the 250 rps row for 2 hours: memory per process
#   CPU_REPS=2 CPU_DURATION=60s          # the CPU pairs (A B A B) and their length
#
# Every run uses a history of its own in the work directory, so the tables
# hold this pass only. Needs jq.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
PARTS=${PARTS:-eventing chef limit cpu}
CPU_REPS=${CPU_REPS:-2}
CPU_DURATION=${CPU_DURATION:-60s}
SOAK=${SOAK:-10m}
command -v jq >/dev/null || { echo "skipped: jq is needed" >&2; exit 0; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/pipebench-eventbus.XXXXXX")
PB=$WORK/pipebench
(cd "$ROOT" && go build -o "$PB" ./cmd/pipebench)
STORE=$WORK/history.db
has() { [[ " $PARTS " == *" $1 "* ]]; }
kpi() { # FILE PHASE|total NAME [LABEL VALUE]: one KPI's value, or -
	local sel='.total'
	[ "$2" != total ] && sel="(.phases[] | select(.name == \"$2\"))"
	jq -r --arg n "$3" --arg k "${4:-}" --arg v "${5:-}" \
		"[$sel | .kpis[] | select(.name == \$n and (\$k == \"\" or .labels[\$k] == \$v)) | .value] | first // \"-\"" "$1"
}

if has eventing; then
	echo "== eventing: pipebench suite run builtin:kyma-eventing (the 3-node cluster behind the proxy)"
	"$PB" suite run builtin:kyma-eventing --store "$STORE" --out "$WORK/eventing" --quiet 2>"$WORK/eventing.log" || true
	cat <<'EOF'

The reference's rows of the same kind (GCP, CPU 4, SSD, NATS 2.8.4/2.9.x, 2-day soaks):
| cluster | K6 rps | EPP rps | JS crashed | version | test duration | Failure type | NATS version |
| ssd | 250 | 232 | no | 2.7.0-rc2 |  |  | 2.8.4 |
| ssd | 350 | 315 | yes | 2.7.0-rc2 | 5.5 hours | full storage (F2) | 2.8.4 |
| ssd | 500 | 320 | yes | 2.7.0-rc2 | 5 hours | full storage (F1) | 2.8.4 |
| ssd | 300 | 293 | yes | 2.8.0 | 19.5 hours | F4 | 2.9.3 |
| hdd | 4800 | 104 | yes | main | 6 hours | F3 | 2.9.0 |
| hdd | 1200 | 116 | yes | 2.7.0-rc2 | 4h 20 min | JS pod restart | 2.8.4 |
| hdd | 300 | 70 (290 for 3h) | no | main |  |  | 2.9.0 |
EOF
	echo
fi

if has chef; then
	echo "== chef: pipebench suite run builtin:chef"
	"$PB" suite run builtin:chef --store "$STORE" --out "$WORK/chef" --quiet 2>"$WORK/chef.log" || true
	cat <<'EOF'

The reference: about 650 messages/s at a steady state; 600 messages/s = 18,000 services at a 30 s
health check; 800/s "accepted and buffered"; at most 100,000 outstanding; the full cap cleared in
less than 5 minutes at 500/s with the load removed, in less than 25 minutes with 100/s of headroom.
EOF
	echo
fi

if has limit; then
	echo "== chef steady-state capacity: pipebench limit builtin:chef-capacity (consumer limited to 650/s)"
	"$PB" limit builtin:chef-capacity --start 400/s --max 1200/s --probe 20s --precision 0.03 --budget 15m \
		--store "$STORE" --out "$WORK/limit.json" --quiet >"$WORK/limit.txt" 2>"$WORK/limit.log" || true
	printf 'sustainable %s/s ± %s, first unstable %s/s (the reference: about 650/s)\n' \
		"$(kpi "$WORK/limit.json" total sustainable_rate)" "$(kpi "$WORK/limit.json" total sustainable_rate.uncertainty)" \
		"$(kpi "$WORK/limit.json" total first_unstable_rate)"
	echo
fi

if has cpu; then
	echo "== pipebench's CPU at 500 rps on the 3-node cluster behind the proxy (cores, mean over the load; $CPU_REPS interleaved pairs of $CPU_DURATION)"
	printf '%-28s %10s %10s %14s %10s %10s\n' run target/s sent/s pipebench-cpu proxy-cpu nodes-cpu
	for i in $(seq "$CPU_REPS"); do
		for s in gen cpu; do
			out=$WORK/cpu-$s-$i.json
			PIPEBENCH_DURATION=$CPU_DURATION "$PB" run "$HERE/eventing-500-$s.yaml" --no-store --quiet --out "$out" >/dev/null 2>"$WORK/cpu-$s-$i.log" || true
			[ -s "$out" ] || { echo "$s $i: no result, see $WORK/cpu-$s-$i.log" >&2; continue; }
			name="generator alone"
			[ $s = cpu ] && name="generator + sink + observers"
			nodes=$(jq -r '[.phases[0].kpis[] | select(.name == "cpu_cores" and (.labels.instance // "" | startswith("nats-"))) | .value] | add // 0' "$out")
			printf '%-28s %10s %10.1f %14.3f %10.3f %10.3f\n' "$name" 500 "$(kpi "$out" soak sent_rate)" \
				"$(kpi "$out" soak cpu_cores instance pipebench)" "$(kpi "$out" soak cpu_cores instance eventproxy-0)" "$nodes"
		done
	done
	echo "(pipebench's CPU is its own process's, from /proc; the proxy and each node are processes of their own)"
	echo
fi

if has soak; then
	echo "== soak: pipebench run builtin:kyma-eventing-250 --duration $SOAK (memory per process)"
	"$PB" run builtin:kyma-eventing-250 --duration "$SOAK" --store "$STORE" --out "$WORK/soak.json" --quiet >/dev/null 2>"$WORK/soak.log" || true
	printf '%-14s %12s %14s\n' process memory-max-MB slope-MB/h
	for in in pipebench eventproxy-0 nats-0 nats-1 nats-2; do
		printf '%-14s %12s %14s\n' "$in" "$(kpi "$WORK/soak.json" total memory_mb instance "$in")" "$(kpi "$WORK/soak.json" total memory_slope instance "$in")"
	done
	printf 'sent %s, delivered %s, lost %s, handled %s/s\n' "$(kpi "$WORK/soak.json" total sent)" "$(kpi "$WORK/soak.json" total delivered)" \
		"$(kpi "$WORK/soak.json" total lost)" "$(kpi "$WORK/soak.json" total handled_rate instance eventproxy-0)"
	echo
fi
echo "(results in $WORK)"
