#!/usr/bin/env bash
# pipebench's kafka driver against Apache Kafka's own producer benchmark
# (org.apache.kafka.tools.ProducerPerformance, what kafka-producer-perf-test
# runs, from the same jars), on the same broker, same record size, same
# acks (all, idempotent), same linger (5 ms) and batch size (1 MiB),
# interleaved (A B A B) in one pass; then two checks of pipebench alone.
#
#   bench/kafka.sh                     # REPS=2 pairs of 1,000,000 records of 1 KiB
#   REPS=3 MSGS=2000000 SIZE=512 bench/kafka.sh
#   REPS=0 RATE=20000 bench/kafka.sh   # the checks alone
#   REPS=0 BASELINE=/path/to/old/pipebench bench/kafka.sh   # each check with the old binary, then this tree's
#   REPS=0 CHECKS="conns-p conns-1" bench/kafka.sh          # only the checks named
#
# Broker: one Apache Kafka (KRaft) from the jars in $PIPEBENCH_KAFKA_LIBS
# (or .cache/kafka-libs; .ci/run fetches them), 512 MiB heap, its data in a
# scratch folder, on 127.0.0.1, pinned to CPU 1; every generator pinned to
# CPU 0. The topic has 16 partitions.
#   peer:      ProducerPerformance --num-records MSGS --record-size SIZE
#              --throughput -1 (as fast as it can).
#   pipebench: bench/kafka-rate.yaml, the same number of records, open
#              model at OFFER (2) times the rate the peer just reached: above
#              what the generator can send the run stretches (sends start
#              late, none dropped; the run is then "invalid", exit 98, which
#              here is expected) and its rate is the records acknowledged
#              over the phase's actual length; latency recorded per send of
#              PIPEBENCH_BATCH (10) records, from its scheduled time.
# Each line gives the rate the tool reports, the rate the broker saw (its
# log-end offsets' growth over the generator's wall time, start-up
# included), MB/s of record values by the tool's rate, the generator's
# CPU-seconds and peak RSS.
# Checks (pipebench alone; each line with the load average at its end):
#   rate:    RATE (50,000/s) of SIZE_E2E (1 KiB) for 20 s, bench/kafka-e2e.yaml
#            (a consumer group reads every record back): achieved/target,
#            produced = consumed, end-to-end latency over every record,
#            CPU-s, cores and CPU per record produced and consumed.
#   rate-p:  the same rate without the consumer (bench/kafka-rate.yaml):
#            the generator's own CPU (cores, and us per record, the figure
#            least affected by other load on the machine).
#   conns:   CONNS (1,000) producers (each its own client and connections)
#            at 1,000/s for 20 s, with the consumer; conns-p the same
#            without it, the producers' own footprint; conns-1 one
#            producer, the same run's footprint without the producers.
#            broker-conns is the most connections to the broker's port the
#            kernel held at once during the run (ss, sampled every 0.5 s).
# Memory: peak RSS (/usr/bin/time), and its two parts at their peaks
# (sampled from /proc every 0.2 s): anonymous (what the run allocated)
# and file (the executable's pages mapped in: the same whatever the run
# does, as conns-1 shows); live, the most heap the Go collector found in
# use after a cycle (GODEBUG=gctrace=1). Both binaries (this tree's and
# BASELINE) run from copies made with cp, their page cache in the same
# state (bench/lib/binaries.sh says why that matters to the file part).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
REPS=${REPS:-2}
MSGS=${MSGS:-1000000}
SIZE=${SIZE:-1024}
RATE=${RATE:-50000}
SIZE_E2E=${SIZE_E2E:-1024}
CONNS=${CONNS:-1000}
CHECKS=${CHECKS:-rate rate-p conns conns-p conns-1}
for c in $CHECKS; do
	case $c in
	rate | rate-p | conns | conns-p | conns-1) ;;
	*)
		echo "CHECKS: no check called \"$c\"; the checks are rate, rate-p, conns, conns-p, conns-1" >&2
		exit 2
		;;
	esac
done
OFFER=${OFFER:-2}
PORT=${KAFKA_PORT:-19092}
CPORT=${KAFKA_CONTROLLER_PORT:-19093}
LIBS=${PIPEBENCH_KAFKA_LIBS:-$ROOT/.cache/kafka-libs}
JAVA=${JAVA:-$(command -v java || true)}
if [ -z "$JAVA" ] || ! ls "$LIBS"/kafka_2.13-*.jar >/dev/null 2>&1; then
	echo "skipped: Java 17+ and the Kafka jars are needed (PIPEBENCH_KAFKA_LIBS, or mvn -q -f sut/kafka/pom.xml dependency:copy-dependencies -DoutputDirectory=$ROOT/.cache/kafka-libs)" >&2
	exit 0
fi
for t in jq taskset /usr/bin/time; do
	command -v "$t" >/dev/null || { echo "skipped: $t is needed" >&2; exit 0; }
done
WORK=$(mktemp -d "${TMPDIR:-/tmp}/pipebench-kafka-bench.XXXXXX")
PB=$WORK/pipebench
(cd "$ROOT" && go build -o "$PB" ./cmd/pipebench)
# shellcheck source=lib/binaries.sh
. "$HERE/lib/binaries.sh"
copy_binary "$PB" "$PB"
if [ -n "${BASELINE:-}" ]; then
	copy_binary "$BASELINE" "$WORK/baseline"
	BASELINE=$WORK/baseline
fi
BOOT=127.0.0.1:$PORT
export PIPEBENCH_KAFKA_BOOTSTRAP=$BOOT
CP="$LIBS/*"
tool() { "$JAVA" -Xmx256m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -cp "$CP" "$@"; }

cat >"$WORK/server.properties" <<EOF
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$CPORT
listeners=PLAINTEXT://127.0.0.1:$PORT,CONTROLLER://127.0.0.1:$CPORT
advertised.listeners=PLAINTEXT://127.0.0.1:$PORT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
log.dirs=$WORK/data
offsets.topic.replication.factor=1
offsets.topic.num.partitions=8
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
EOF
printf 'status = error\nappender.console.type = Console\nappender.console.name = STDOUT\nappender.console.layout.type = PatternLayout\nappender.console.layout.pattern = [%%d] %%p %%m (%%c)%%n\nrootLogger.level = warn\nrootLogger.appenderRef.stdout.ref = STDOUT\n' >"$WORK/log4j2.properties"
tool kafka.tools.StorageTool format -t "$(tool kafka.tools.StorageTool random-uuid)" -c "$WORK/server.properties" >"$WORK/format.log" 2>&1
taskset -c 1 timeout 3600 "$JAVA" -Xmx512m -Xms512m -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -Dlog4j2.configurationFile="$WORK/log4j2.properties" \
	-cp "$CP" kafka.Kafka "$WORK/server.properties" >"$WORK/broker.log" 2>&1 &
BROKER=$!
trap 'kill $BROKER 2>/dev/null; wait $BROKER 2>/dev/null || true; rm -rf "$WORK/data"' EXIT
for _ in $(seq 600); do (exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break; sleep 0.1; done
topic() { tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$BOOT" --create --topic "$1" --partitions 16 --replication-factor 1 >/dev/null; }
offsets() { tool org.apache.kafka.tools.GetOffsetShell --bootstrap-server "$BOOT" --topic "$1" | awk -F: '{s += $3} END {print s + 0}'; }
topic bench

echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at the start"
printf '%-16s %12s %12s %8s %10s %7s %9s %5s\n' run tool-msgs/s broker-msgs/s MB/s gen-CPU-s us/rec peak-RSS load
RESULTS=$WORK/results
: >"$RESULTS"
# measure NAME -- CMD...: runs CMD pinned to CPU 0, prints its line; the
# tool's rate is read by rate_NAME.
measure() {
	local name=$1 before after rate
	shift
	before=$(offsets bench)
	local code=0
	/usr/bin/time -f '%U %S %M %e' -o "$WORK/$name.time" taskset -c 0 timeout 900 "$@" >"$WORK/$name.out" 2>&1 || code=$?
	# pipebench exits 98 when it sent later than planned: expected above
	# its capacity.
	case $name:$code in
	*:0 | pipebench*:98) ;;
	*)
		echo "$name failed (exit $code): see $WORK/$name.out" >&2
		return 1
		;;
	esac
	after=$(offsets bench)
	case $name in
	pipebench*) rate=$(jq '[.phases[] | select(.name == "load") | .kpis[] | select(.name == "accepted_rate") | .value] | first' "$WORK/$name.json") ;;
	*) rate=$(grep -o '[0-9.]* records/sec' "$WORK/$name.out" | tail -1 | cut -d' ' -f1) ;;
	esac
	read -r user sys rss wall < <(tail -1 "$WORK/$name.time")
	awk -v n="$name" -v r="$rate" -v s="$((after - before))" -v u="$user" -v y="$sys" -v m="$rss" -v w="$wall" -v z="$SIZE" -v k="$MSGS" -v la="$(cut -d' ' -f1 /proc/loadavg)" \
		'BEGIN {printf "%-16s %12.0f %12.0f %8.1f %10.2f %7.2f %6d MB %5.1f\n", n, r, s / w, r * z / 1048576, u + y, (u + y) * 1e6 / k, m / 1024, la}'
	echo "${name%-r*} $rate" >>"$RESULTS"
}

for rep in $(seq "$REPS"); do
	measure "perf-test-r$rep" "$JAVA" -Xmx512m -cp "$CP" org.apache.kafka.tools.ProducerPerformance --topic bench \
		--num-records "$MSGS" --record-size "$SIZE" --throughput -1 \
		--producer-props bootstrap.servers="$BOOT" acks=all enable.idempotence=true linger.ms=5 batch.size=1048576 compression.type=none
	peer=$(grep "^perf-test " "$RESULTS" | tail -1 | awk '{print $2}')
	secs=$(awk -v m="$MSGS" -v r="$peer" -v f="$OFFER" 'BEGIN {printf "%.2f", m / (f * r)}')
	PIPEBENCH_SIZE=$SIZE PIPEBENCH_RATE=$(awk -v r="$peer" -v f="$OFFER" 'BEGIN {printf "%d", f * r}') PIPEBENCH_DURATION=${secs}s \
		measure "pipebench-r$rep" "$PB" run "$HERE/kafka-rate.yaml" --no-store --quiet --out "$WORK/pipebench-r$rep.json"
done
median() { grep "^$1 " "$RESULTS" | awk '{print $2}' | sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
[ "$REPS" -gt 0 ] && awk -v p="$(median pipebench)" -v q="$(median perf-test)" \
	'BEGIN {printf "median pipebench %.0f msgs/s, kafka-producer-perf-test %.0f msgs/s: ratio %.2fx\n", p, q, p / q}'

kpi() { jq -r --arg n "$2" '[.total.kpis[] | select(.name == $n) | .value] | first // "-"' "$1"; }
phase() { jq -r --arg n "$2" '[.phases[] | select(.name == "hold" or .name == "load") | .kpis[] | select(.name == $n) | .value] | first // "-"' "$1"; }
# leaf PID: the deepest first descendant (the pipebench under time,
# taskset and timeout).
leaf() { local q=$1 c; while c=$(pgrep -P "$q" | head -1) && [ -n "$c" ]; do q=$c; done; echo "$q"; }
check() {
	local name=$1 out=$WORK/$1.json scenario=${2:-kafka-e2e} pb=${CHECK_PB:-$PB}
	GODEBUG=gctrace=1 /usr/bin/time -f '%U %S %M %e' -o "$WORK/$name.time" taskset -c 0 timeout 600 \
		"$pb" run "$HERE/$scenario.yaml" --no-store --quiet --out "$out" >"$WORK/$name.log" 2>&1 &
	local job=$! anon=0 file=0 conns=0 a f c q i=0
	while kill -0 "$job" 2>/dev/null; do
		q=$(leaf "$job")
		read -r a f < <(awk '/^RssAnon:/ {a = $2} /^RssFile:/ {f = $2} END {print a + 0, f + 0}' "/proc/$q/status" 2>/dev/null || echo 0 0)
		[ "${a:-0}" -gt "$anon" ] && anon=$a
		[ "${f:-0}" -gt "$file" ] && file=$f
		if [ $((i++ % 3)) = 0 ]; then
			c=$(ss -tnH state established "( dport = :$PORT )" 2>/dev/null | wc -l)
			[ "$c" -gt "$conns" ] && conns=$c
		fi
		sleep 0.2
	done
	wait "$job" || true
	[ -s "$out" ] || { echo "$name: no result, see $WORK/$name.log" >&2; return; }
	read -r user sys rss wall < <(tail -1 "$WORK/$name.time")
	# The live heap: the most the collector found still in use after a
	# cycle (gctrace's "before->after->live MB").
	local live
	live=$(sed -n 's/^gc .*->\([0-9]*\) MB, .*/\1/p' "$WORK/$name.log" | sort -n | tail -1)
	awk -v n="$name" -v t="$(phase "$out" target_rate)" -v a="$(phase "$out" sent_rate)" -v s="$(kpi "$out" accepted)" -v d="$(kpi "$out" delivered)" \
		-v l="$(kpi "$out" lost)" -v p50="$(kpi "$out" e2e_latency.p50)" -v p99="$(kpi "$out" e2e_latency.p99)" -v c="$(kpi "$out" connections_open.max)" \
		-v b="$conns" -v u="$user" -v y="$sys" -v w="$wall" -v m="$rss" -v an="$anon" -v fi="$file" -v lh="${live:-0}" -v la="$(cut -d' ' -f1 /proc/loadavg)" \
		'BEGIN {printf "%-7s %8.0f %10.1f %7.4f %9d %9s %5s %8s %8s %6d %6d %7.2f %5.2f %7.2f %6d MB %5d MB %5d MB %5d MB %5.1f\n", n, t, a, a / t, s, d, l, p50, p99, c, b, u + y, (u + y) / w, (u + y) * 1e6 / s, m / 1024, an / 1024, fi / 1024, lh, la}'
}
echo
echo "us/rec: the generator's CPU per record produced (rate and conns: the consumer's included); anon, file: the peaks of the RSS's parts; live: the most heap in use after a GC cycle"
printf '%-7s %8s %10s %7s %9s %9s %5s %8s %8s %6s %6s %7s %5s %7s %9s %8s %8s %8s %5s\n' check target/s achieved/s ratio accepted delivered lost e2e-p50 e2e-p99 conns broker CPU-s cores us/rec peak-RSS anon file live load
# both NAME ARGS...: the check with BASELINE's binary first (NAME-base),
# then with this tree's, each on a topic of its own.
both() {
	local name=$1
	shift
	case " $CHECKS " in *" $name "*) ;; *) return 0 ;; esac
	if [ -n "${BASELINE:-}" ]; then
		topic "$PIPEBENCH_TOPIC-base"
		PIPEBENCH_TOPIC=$PIPEBENCH_TOPIC-base PIPEBENCH_GROUP=$PIPEBENCH_GROUP-base CHECK_PB=$BASELINE check "$name-base" "$@"
	fi
	topic "$PIPEBENCH_TOPIC"
	check "$name" "$@"
}
BATCH_E2E=$((RATE / 1000 > 1 ? RATE / 1000 : 1))
export PIPEBENCH_DURATION=20s
PIPEBENCH_TOPIC=e2e PIPEBENCH_GROUP=e2e PIPEBENCH_RATE=$RATE PIPEBENCH_SIZE=$SIZE_E2E PIPEBENCH_BATCH=$BATCH_E2E PIPEBENCH_CONNECTIONS=1 both rate
PIPEBENCH_TOPIC=ratep PIPEBENCH_GROUP=- PIPEBENCH_RATE=$RATE PIPEBENCH_SIZE=$SIZE_E2E PIPEBENCH_BATCH=$BATCH_E2E PIPEBENCH_CONNECTIONS=1 both rate-p kafka-rate
PIPEBENCH_TOPIC=conns PIPEBENCH_GROUP=conns PIPEBENCH_RATE=1000 PIPEBENCH_SIZE=256 PIPEBENCH_BATCH=1 PIPEBENCH_CONNECTIONS=$CONNS both conns
# The same producers without the consumer: the driver's own footprint;
# then one producer: the footprint of the rest.
PIPEBENCH_TOPIC=connsp PIPEBENCH_GROUP=- PIPEBENCH_RATE=1000 PIPEBENCH_SIZE=256 PIPEBENCH_BATCH=1 PIPEBENCH_CONNECTIONS=$CONNS both conns-p kafka-rate
PIPEBENCH_TOPIC=conns1 PIPEBENCH_GROUP=- PIPEBENCH_RATE=1000 PIPEBENCH_SIZE=256 PIPEBENCH_BATCH=1 PIPEBENCH_CONNECTIONS=1 both conns-1 kafka-rate
echo "machine load average $(cut -d' ' -f1-3 /proc/loadavg) at the end (logs and results in $WORK)"
