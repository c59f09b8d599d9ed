package otlpgen

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/pipebench/pipebench"
)

// The direct metrics encoder writes the bytes pdata marshals for Build, for
// every type, churn, varint widths of pb.seq and a zero time.
func TestEncodedMetricsAreWhatPdataMarshals(t *testing.T) {
	cases := []encodeCase[MetricsConfig]{
		{MetricsConfig{Producers: 2000, Attributes: 10, Type: "gauge"}, 1, 1000, time.Now()},
		{MetricsConfig{Producers: 3, Attributes: 0, Type: "sum", Churn: 0.5}, 16380, 10, time.Now()},
		{MetricsConfig{Producers: 7, Attributes: 2, Type: "histogram"}, 1<<35 - 2, 9, time.Unix(0, 0)},
		{MetricsConfig{Producers: 1, Attributes: 1, Type: "gauge"}, 120, 300, time.Unix(0, -5)},
	}
	for i, c := range cases {
		g := &Metrics{cfg: c.cfg}
		b := g.Next(c.seq, c.count, c.at)
		want, err := pmetricotlp.NewExportRequestFromMetrics(g.Build(c.seq, c.count, c.at)).MarshalProto()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b.Body, want) {
			t.Errorf("case %d (%s): %d bytes differ from pdata's %d", i, c.cfg.Type, len(b.Body), len(want))
		}
		md, err := b.Data.(*Encoded).Metrics()
		if err != nil || md.DataPointCount() != c.count {
			t.Errorf("case %d: decoded %d points, %v", i, md.DataPointCount(), err)
		}
		var s Scan
		if err := ScanMetrics(b.Body, &s); err != nil || len(s.Marks) != c.count || s.Marks[0].Seq != c.seq {
			t.Errorf("case %d: scan %v, %d marks", i, err, len(s.Marks))
		}
		g.Release(&b)
	}
}

// The direct logs encoder writes the bytes pdata marshals for Build, for
// every format.
func TestEncodedLogsAreWhatPdataMarshals(t *testing.T) {
	for i, f := range []string{"apache_common", "apache_combined", "json", "syslog"} {
		for _, at := range []time.Time{time.Now(), time.Unix(0, 0)} {
			g := &Logs{cfg: LogsConfig{Format: f, Attributes: i * 3}}
			b := g.Next(120, 200, at)
			want, err := plogotlp.NewExportRequestFromLogs(g.Build(120, 200, at)).MarshalProto()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(b.Body, want) {
				t.Errorf("%s at %v: %d bytes differ from pdata's %d", f, at, len(b.Body), len(want))
			}
			ld, err := b.Data.(*Encoded).Logs()
			if err != nil || ld.LogRecordCount() != 200 {
				t.Errorf("%s: decoded %d records, %v", f, ld.LogRecordCount(), err)
			}
			if r := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0); r.SeverityNumber() != plog.SeverityNumberInfo {
				t.Errorf("%s: severity %v", f, r.SeverityNumber())
			}
			g.Release(&b)
		}
	}
}

// Line writes what the fmt-based formats say, for every format.
func TestLineFormats(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 8, time.FixedZone("x", -5*3600))
	for _, f := range []string{"apache_common", "apache_combined", "json", "syslog"} {
		l := &Logs{cfg: LogsConfig{Format: f}}
		for q := uint64(0); q < 50_000; q += 997 {
			if got, want := l.Line(q, at), lineFmt(f, q, at); got != want {
				t.Fatalf("%s %d:\n got %s\nwant %s", f, q, got, want)
			}
		}
	}
}

// lineFmt is the reference the log lines follow.
func lineFmt(format string, q uint64, t time.Time) string {
	ip := fmt.Sprintf("10.%d.%d.%d", q%200, (q/200)%250, q%250)
	path := paths[q%uint64(len(paths))]
	status := []int{200, 200, 200, 201, 404, 500}[q%6]
	switch format {
	case "json":
		return fmt.Sprintf(`{"host":%q,"user-identifier":"-","datetime":%q,"method":"GET","request":%q,"protocol":"HTTP/1.1","status":%d,"bytes":%d}`,
			ip, t.Format("02/Jan/2006:15:04:05 -0700"), path, status, 100+q%4000)
	case "syslog":
		return fmt.Sprintf("<%d>1 %s host-%d app %d ID%d - request %s finished with %d", 160+q%8, t.Format(time.RFC3339), q%10, 1000+q%9000, q%100, path, status)
	case "apache_combined":
		return fmt.Sprintf(`%s - - [%s] "GET %s HTTP/1.1" %d %d "https://example.com/" "pipebench/1.0"`, ip, t.Format("02/Jan/2006:15:04:05 -0700"), path, status, 100+q%4000)
	}
	return fmt.Sprintf(`%s - - [%s] "GET %s HTTP/1.1" %d %d`, ip, t.Format("02/Jan/2006:15:04:05 -0700"), path, status, 100+q%4000)
}

// BenchmarkSignalsNext reports items per second for each signal's Next
// (encoded directly) and for pdata's marshalling of the same batch.
func BenchmarkSignalsNext(b *testing.B) {
	const n = 1000
	mg, _ := MetricsFactory().New(nil, pipebench.Env{})
	lg, _ := LogsFactory().New(nil, pipebench.Env{})
	m, l := mg.(*Metrics), lg.(*Logs)
	run := func(name string, fn func(i int) int) {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				b.SetBytes(int64(fn(i)))
			}
			b.ReportMetric(float64(b.N)*n/b.Elapsed().Seconds(), "items/s")
		})
	}
	// direct encodes batch i with g's Next and hands the buffer back.
	direct := func(g interface {
		pipebench.Generator
		pipebench.Releaser
	}) func(i int) int {
		return func(i int) int {
			bt := g.Next(uint64(i*n+1), n, time.Now())
			sz := len(bt.Body)
			g.Release(&bt)
			return sz
		}
	}
	run("metrics/direct", direct(m))
	run("metrics/pdata", func(i int) int {
		body, _ := pmetricotlp.NewExportRequestFromMetrics(m.Build(uint64(i*n+1), n, time.Now())).MarshalProto()
		return len(body)
	})
	run("logs/direct", direct(l))
	run("logs/pdata", func(i int) int {
		body, _ := plogotlp.NewExportRequestFromLogs(l.Build(uint64(i*n+1), n, time.Now())).MarshalProto()
		return len(body)
	})
}

// A metric whose name is not bytes on the wire: ScanMetrics, which does
// not read names, counts its point; WalkMetricPoints, which does, says
// the name is of the wrong type.
func TestMetricNameOfTheWrongType(t *testing.T) {
	msg := func(num protowire.Number, inner ...[]byte) []byte {
		var b []byte
		for _, in := range inner {
			b = append(b, in...)
		}
		return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), b)
	}
	name := protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 7)
	metric := append(name, msg(5, msg(1))...) // a gauge of one empty point
	body := msg(1, msg(2, msg(2, metric)))
	var s Scan
	if err := ScanMetrics(body, &s); err != nil || s.Items != 1 {
		t.Errorf("ScanMetrics: %v, %d items; want the one point", err, s.Items)
	}
	var w PointWalk
	err := w.WalkMetricPoints(body, func(*MetricPoint) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "Name") {
		t.Errorf("WalkMetricPoints: %v, want an error naming Name", err)
	}
}
