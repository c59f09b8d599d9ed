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
#
# Broker: one Apache Kafka (KRaft) from the jars in $PIPEBENCH_KAFKA_LIBS
# (or .cache/kafka-libs; .ci/run fetches them), 1 GiB heap, its data in a
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
# Checks (pipebench alone, bench/kafka-e2e.yaml, a consumer group reading
# every record back):
#   rate:  RATE (50,000/s) of SIZE_E2E (1 KiB) for 20 s: achieved/target,
#          produced = consumed, end-to-end latency over every record, CPU.
#   conns: 1,000 producers (each its own client and connections) at
#          1,000/s for 20 s: peak RSS; conns-p the same without the
#          consumer (bench/kafka-rate.yaml), the producers' own footprint.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
REPS=${REPS:-2}
MSGS=${MSGS:-1000000}
SIZE=${SIZE:-1024}
RATE=${RATE:-50000}
SIZE_E2E=${SIZE_E2E:-1024}
CONNS=${CONNS:-1000}
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
taskset -c 1 "$JAVA" -Xmx1g -Xms1g -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -Dlog4j2.configurationFile="$WORK/log4j2.properties" \
	-cp "$CP" kafka.Kafka "$WORK/server.properties" >"$WORK/broker.log" 2>&1 &
BROKER=$!
trap 'kill $BROKER 2>/dev/null; wait $BROKER 2>/dev/null || true; rm -rf "$WORK/data"' EXIT
for _ in $(seq 600); do (exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break; sleep 0.1; done
topic() { tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$BOOT" --create --topic "$1" --partitions 16 --replication-factor 1 >/dev/null; }
offsets() { tool org.apache.kafka.tools.GetOffsetShell --bootstrap-server "$BOOT" --topic "$1" | awk -F: '{s += $3} END {print s + 0}'; }
topic bench

echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at the start"
printf '%-16s %12s %12s %8s %10s %9s\n' run tool-msgs/s broker-msgs/s MB/s gen-CPU-s peak-RSS
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
	awk -v n="$name" -v r="$rate" -v s="$((after - before))" -v u="$user" -v y="$sys" -v m="$rss" -v w="$wall" -v z="$SIZE" \
		'BEGIN {printf "%-16s %12.0f %12.0f %8.1f %10.2f %6d MB\n", n, r, s / w, r * z / 1048576, u + y, m / 1024}'
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
check() {
	local name=$1 out=$WORK/$1.json scenario=${2:-kafka-e2e}
	/usr/bin/time -f '%U %S %M %e' -o "$WORK/$name.time" taskset -c 0 timeout 600 \
		"$PB" run "$HERE/$scenario.yaml" --no-store --quiet --out "$out" >"$WORK/$name.log" 2>&1 || true
	[ -s "$out" ] || { echo "$name: no result, see $WORK/$name.log" >&2; return; }
	read -r user sys rss wall < <(tail -1 "$WORK/$name.time")
	awk -v n="$name" -v t="$(phase "$out" target_rate)" -v a="$(phase "$out" sent_rate)" -v s="$(kpi "$out" accepted)" -v d="$(kpi "$out" delivered)" \
		-v l="$(kpi "$out" lost)" -v p50="$(kpi "$out" e2e_latency.p50)" -v p99="$(kpi "$out" e2e_latency.p99)" -v c="$(kpi "$out" connections_open.max)" \
		-v u="$user" -v y="$sys" -v w="$wall" -v m="$rss" \
		'BEGIN {printf "%-6s %9.0f %11.1f %9.4f %10d %10d %5d %8.1f %8.1f %6d %8.2f %6.2f %6d MB\n", n, t, a, a / t, s, d, l, p50, p99, c, u + y, (u + y) / w, m / 1024}'
}
echo
printf '%-6s %9s %11s %9s %10s %10s %5s %8s %8s %6s %8s %6s %9s\n' check target/s achieved/s ratio accepted delivered lost e2e-p50 e2e-p99 conns CPU-s cores peak-RSS
topic e2e
PIPEBENCH_TOPIC=e2e PIPEBENCH_GROUP=e2e PIPEBENCH_RATE=$RATE PIPEBENCH_SIZE=$SIZE_E2E PIPEBENCH_BATCH=$((RATE / 1000 > 1 ? RATE / 1000 : 1)) check rate
topic conns
PIPEBENCH_TOPIC=conns PIPEBENCH_GROUP=conns PIPEBENCH_RATE=1000 PIPEBENCH_SIZE=256 PIPEBENCH_BATCH=1 PIPEBENCH_CONNECTIONS=$CONNS check conns
# The same producers without the consumer: the driver's own footprint.
PIPEBENCH_TOPIC=conns PIPEBENCH_RATE=1000 PIPEBENCH_DURATION=20s PIPEBENCH_SIZE=256 PIPEBENCH_BATCH=1 PIPEBENCH_CONNECTIONS=$CONNS check conns-p kafka-rate
echo "machine load average $(cut -d' ' -f1-3 /proc/loadavg) at the end (logs and results in $WORK)"
