package loglines

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The regular expressions of Fluent Bit's stock parsers (parsers.conf), and
// RFC 5424's header.
var formatRE = map[string]*regexp.Regexp{
	FormatApacheCommon:   regexp.MustCompile(`^(?P<host>[^ ]*) [^ ]* (?P<user>[^ ]*) \[(?P<time>[^\]]*)\] "(?P<method>\S+)(?: +(?P<path>[^ ]*) +\S*)?" (?P<code>[^ ]*) (?P<size>[^ ]*)$`),
	FormatApacheCombined: regexp.MustCompile(`^(?P<host>[^ ]*) [^ ]* (?P<user>[^ ]*) \[(?P<time>[^\]]*)\] "(?P<method>\S+)(?: +(?P<path>[^\"]*?)(?: +\S*)?)?" (?P<code>[^ ]*) (?P<size>[^ ]*)(?: "(?P<referer>[^\"]*)" "(?P<agent>[^\"]*)")$`),
	FormatSyslog:         regexp.MustCompile(`^<(?P<pri>[0-9]{1,3})>1 (?P<time>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z) (?P<host>[!-~]{1,255}) (?P<ident>[!-~]{1,48}) (?P<pid>[0-9]{1,128}) (?P<msgid>[!-~]{1,32}) (?P<extradata>\[[^\]]*\]) (?P<message>.+)$`),
}

func gen(t testing.TB, format string, size int) *Generator {
	t.Helper()
	g, err := New(Config{Format: format, Size: size})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestFormatsParseAndCarrySeq(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 891234567, time.UTC)
	for _, format := range Formats {
		for _, size := range []int{0, 400, 2000} {
			g := gen(t, format, size)
			b := g.Next(1000, 200, at)
			if b.Count != 200 || b.Seq != 1000 || b.ContentType != "text/plain" {
				t.Fatalf("%s: batch %+v", format, b)
			}
			if !bytes.HasSuffix(b.Body, []byte("\n")) {
				t.Fatalf("%s: body does not end with a newline", format)
			}
			lines := strings.Split(strings.TrimSuffix(string(b.Body), "\n"), "\n")
			if len(lines) != 200 {
				t.Fatalf("%s: %d lines", format, len(lines))
			}
			for i, line := range lines {
				seq := uint64(1000 + i)
				if size > 0 && len(line) != size {
					t.Fatalf("%s size %d: line of %d bytes: %s", format, size, len(line), line)
				}
				if re := formatRE[format]; re != nil && !re.MatchString(line) {
					t.Fatalf("%s: line does not parse: %s", format, line)
				}
				if format == FormatJSON {
					var m map[string]any
					if err := json.Unmarshal([]byte(line), &m); err != nil {
						t.Fatalf("json: %v: %s", err, line)
					}
					if m["pb_seq"] != float64(seq) || m["pb_sent"] != strconv.FormatInt(at.UnixNano(), 10) || m["datetime"] != "04/Mar/2026:05:06:07 +0000" {
						t.Fatalf("json fields: %v", m)
					}
				}
				got, sent, ok := Extract([]byte(line))
				if !ok || got != seq || !sent.Equal(at) {
					t.Fatalf("%s: Extract = %d, %v, %v; want %d, %v: %s", format, got, sent, ok, seq, at, line)
				}
				// After a pipeline wrapped the line in JSON.
				wrapped, _ := json.Marshal(map[string]string{"log": line})
				if got, sent, ok := Extract(wrapped); !ok || got != seq || !sent.Equal(at) {
					t.Fatalf("%s: Extract of wrapped = %d, %v, %v: %s", format, got, sent, ok, wrapped)
				}
			}
			if size == 0 {
				t.Logf("%-16s %s", format, lines[0])
			}
			g.Release(&b)
		}
	}
}

func TestSyslogPriorityAndParsedFields(t *testing.T) {
	g := gen(t, FormatSyslog, 0)
	at := time.Unix(1700000000, 5)
	for seq := uint64(1); seq < 500; seq++ {
		line := g.Line(nil, seq, at)
		m := formatRE[FormatSyslog].FindSubmatch(line)
		if m == nil {
			t.Fatalf("%s", line)
		}
		if pri, _ := strconv.Atoi(string(m[1])); pri > 191 {
			t.Fatalf("priority %d", pri)
		}
		// A pipeline that parsed the line into fields forwards the
		// structured data alone.
		if got, _, ok := Extract(m[7]); !ok || got != seq {
			t.Fatalf("structured data %s: %d %v", m[7], got, ok)
		}
	}
}

func TestExtractLines(t *testing.T) {
	g := gen(t, FormatApacheCombined, 300)
	b := g.Next(7, 50, time.Now())
	body := append([]byte("garbage without numbers\n\n"), b.Body...)
	seen := map[uint64]bool{}
	m, u := ExtractLines(body, func(seq uint64, _ time.Time) { seen[seq] = true })
	if m != 50 || u != 1 || len(seen) != 50 || !seen[7] || !seen[56] {
		t.Fatalf("matched %d unmatched %d seen %d", m, u, len(seen))
	}
}

func TestExtractRejects(t *testing.T) {
	for _, s := range []string{"", "pb_seq", "pb_seq=", "pb_seq=12", "pb_sent=5", "pb_seq12 pb_sent=3", "pb_seq=99999999999999999999999 pb_sent=1",
		"pb_seq=1 pb_sent=18446744073709551615"} {
		if seq, _, ok := Extract([]byte(s)); ok {
			t.Errorf("%q: ok with %d", s, seq)
		}
	}
	if seq, sent, ok := Extract([]byte(`x pb_seqq pb_seq="5" pb_sent:"9"`)); !ok || seq != 5 || sent.UnixNano() != 9 {
		t.Fatalf("%d %v %v", seq, sent, ok)
	}
}

func TestConfig(t *testing.T) {
	if err := (&Config{Format: "clf"}).Validate(); err == nil {
		t.Fatal("bad format accepted")
	}
	if err := (&Config{Format: FormatJSON, Size: -1}).Validate(); err == nil {
		t.Fatal("negative size accepted")
	}
	f := Factory()
	cfg := f.NewConfig().(*Config)
	cfg.Format = FormatSyslog
	g, err := f.New(cfg, pipebenchEnv())
	if err != nil {
		t.Fatal(err)
	}
	b := g.Next(1, 1, time.Now())
	if !bytes.HasPrefix(b.Body, []byte("<")) {
		t.Fatalf("%s", b.Body)
	}
}

func FuzzExtract(f *testing.F) {
	at := time.Unix(1700000000, 123)
	for _, format := range Formats {
		f.Add(gen(f, format, 0).Line(nil, 42, at))
		f.Add(gen(f, format, 300).Line(nil, 1<<40, at))
	}
	f.Add([]byte(`pb_seq\":\"1\" pb_sent=\\\\2`))
	f.Add([]byte("pb_seqpb_sentpb_seq=pb_sent="))
	f.Fuzz(func(t *testing.T, line []byte) {
		seq, sent, ok := Extract(line)
		if !ok && (seq != 0 || !sent.IsZero()) {
			t.Fatalf("not ok but %d %v", seq, sent)
		}
		ExtractLines(line, func(uint64, time.Time) {})
		if ok {
			// What Extract found is in the line.
			if !bytes.Contains(line, []byte(strconv.FormatUint(seq, 10))) {
				t.Fatalf("seq %d not in %q", seq, line)
			}
		}
	})
}

func BenchmarkNext(b *testing.B) {
	for _, format := range Formats {
		for _, size := range []int{0, 512} {
			b.Run(format+"/"+strconv.Itoa(size), func(b *testing.B) {
				g := gen(b, format, size)
				at := time.Now()
				var bytes int
				for i := 0; i < b.N; i++ {
					batch := g.Next(uint64(i)*100+1, 100, at)
					bytes += len(batch.Body)
					g.Release(&batch)
				}
				b.ReportMetric(float64(b.N*100)/b.Elapsed().Seconds(), "lines/s")
				b.ReportMetric(float64(bytes)/b.Elapsed().Seconds()/1e6, "MB/s")
			})
		}
	}
}

func BenchmarkExtract(b *testing.B) {
	for _, format := range Formats {
		b.Run(format, func(b *testing.B) {
			line := gen(b, format, 0).Line(nil, 123456789, time.Now())
			for i := 0; i < b.N; i++ {
				if _, _, ok := Extract(line); !ok {
					b.Fatal("no match")
				}
			}
		})
	}
}
