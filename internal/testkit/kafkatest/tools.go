package kafkatest

import (
	"bufio"
	"context"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pipebench/pipebench/sut/kafka"
)

// GroupRow is one partition's line of `kafka-consumer-groups --describe`.
type GroupRow struct {
	Topic                       string
	Partition                   int32
	CurrentOffset, LogEndOffset int64 // CurrentOffset -1 when nothing is committed yet ("-")
	Lag                         int64 // the log end where nothing was committed; -1 when the tool prints "-" otherwise
}

// DescribeGroup runs Apache Kafka's own consumer-group tool
// (org.apache.kafka.tools.consumer.group.ConsumerGroupCommand, what
// kafka-consumer-groups.sh runs) with --describe on group and returns its
// rows: the independent reading of a group's lag.
func (b *Broker) DescribeGroup(tb testing.TB, group string) []GroupRow {
	tb.Helper()
	out := b.Tool(tb, "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand", "--bootstrap-server", b.Bootstrap(), "--describe", "--group", group)
	var rows []GroupRow
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 6 || f[0] != group {
			continue
		}
		p, err1 := strconv.ParseInt(f[2], 10, 32)
		cur, err2 := int64(-1), error(nil) // "-": nothing committed on the partition yet
		if f[3] != "-" {
			cur, err2 = strconv.ParseInt(f[3], 10, 64)
		}
		end, err3 := strconv.ParseInt(f[4], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			tb.Fatalf("kafka-consumer-groups printed a line it should not: %q", sc.Text())
		}
		lag, err := strconv.ParseInt(f[5], 10, 64)
		switch {
		case err != nil && cur < 0:
			// Nothing committed on the partition: the tool prints "-",
			// and a group that starts at the earliest offset has the
			// whole log still to read (the logs here are never trimmed).
			lag = end
		case err != nil:
			lag = -1
		}
		rows = append(rows, GroupRow{Topic: f[1], Partition: int32(p), CurrentOffset: cur, LogEndOffset: end, Lag: lag})
	}
	return rows
}

// Tool runs a main class of the Kafka jars (bounded: a 256 MiB heap, a
// minute) and returns what it printed.
func (b *Broker) Tool(tb testing.TB, class string, args ...string) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a := append([]string{"-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp", kafka.Classpath(b.Cluster.Libs()), class}, args...)
	out, err := exec.CommandContext(ctx, b.Cluster.Java(), a...).CombinedOutput()
	if err != nil {
		tb.Fatalf("%s %s: %v\n%s", class, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// GroupLag is a group's lag on topic by Apache Kafka's own tools: the
// rows of DescribeGroup, and for each partition of the topic the tool does
// not list (a group without members lists only the partitions it has
// committed on) its whole log, whose end GetOffsetShell (what
// kafka-get-offsets.sh runs) reads: the group starts at the earliest
// offset, and the logs here are never trimmed.
func (b *Broker) GroupLag(tb testing.TB, group, topic string) (int64, []GroupRow) {
	tb.Helper()
	rows := b.DescribeGroup(tb, group)
	listed := map[int32]bool{}
	var lag int64
	for _, r := range rows {
		if r.Topic == topic {
			listed[r.Partition] = true
			lag += r.Lag
		}
	}
	out := b.Tool(tb, "org.apache.kafka.tools.GetOffsetShell", "--bootstrap-server", b.Bootstrap(), "--topic", topic)
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		// topic:partition:offset
		f := strings.Split(strings.TrimSpace(sc.Text()), ":")
		if len(f) != 3 || f[0] != topic {
			continue
		}
		p, err1 := strconv.ParseInt(f[1], 10, 32)
		end, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil {
			tb.Fatalf("kafka-get-offsets printed a line it should not: %q", sc.Text())
		}
		if !listed[int32(p)] {
			rows = append(rows, GroupRow{Topic: topic, Partition: int32(p), CurrentOffset: -1, LogEndOffset: end, Lag: end})
			lag += end
		}
	}
	return lag, rows
}
