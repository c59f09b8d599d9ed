package payload

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
)

func gen(t testing.TB, f pipebench.Factory[pipebench.Generator], mutate func(any)) pipebench.Generator {
	t.Helper()
	cfg := f.NewConfig()
	if mutate != nil {
		mutate(cfg)
	}
	g, err := f.New(cfg, pipebench.Env{})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// roundTrip builds a batch and reads it back as a sink would.
func roundTrip(t *testing.T, g pipebench.Generator, seq uint64, count int) (map[uint64]time.Time, pipebench.Batch) {
	t.Helper()
	at := time.Unix(1700000000, 123456789)
	b := g.Next(seq, count, at)
	h := http.Header{}
	for _, x := range b.Headers {
		h.Set(x.Name, x.Value)
	}
	got := map[uint64]time.Time{}
	m, u, err := Extract(h.Get, b.ContentType, b.Body, func(s uint64, sent time.Time) { got[s] = sent })
	if err != nil || u != 0 || m != count {
		t.Fatalf("extract: matched %d unmatched %d err %v; body %s", m, u, err, b.Body)
	}
	for i := 0; i < count; i++ {
		if s, ok := got[seq+uint64(i)]; !ok || !s.Equal(at) {
			t.Fatalf("seq %d: %v %v", seq+uint64(i), s, ok)
		}
	}
	return got, b
}

func TestEveryModeRoundTrips(t *testing.T) {
	for _, c := range []struct {
		name  string
		f     pipebench.Factory[pipebench.Generator]
		mut   func(any)
		count int
		ctype string
	}{
		{"event header 1", EventFactory(), nil, 1, "application/json"},
		{"event header 10", EventFactory(), nil, 10, "application/json"},
		{"event field 1", EventFactory(), func(c any) { c.(*EventConfig).SeqIn = "field" }, 1, "application/json"},
		{"event field 25", EventFactory(), func(c any) { c.(*EventConfig).SeqIn = "field" }, 25, "application/json"},
		{"ce structured", CloudEventsFactory(), nil, 1, "application/cloudevents+json"},
		{"ce structured batch", CloudEventsFactory(), nil, 5, "application/cloudevents-batch+json"},
		{"ce binary", CloudEventsFactory(), func(c any) { c.(*CloudEventsConfig).Mode = "binary" }, 1, "application/json"},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := gen(t, c.f, c.mut)
			_, b := roundTrip(t, g, 41, c.count)
			if b.ContentType != c.ctype {
				t.Errorf("content type %q, want %q", b.ContentType, c.ctype)
			}
			if !json.Valid(b.Body) {
				t.Errorf("body is not JSON: %s", b.Body)
			}
			g.(pipebench.Releaser).Release(&b)
		})
	}
}

func TestSizeAndTemplates(t *testing.T) {
	g := gen(t, EventFactory(), func(c any) {
		c.(*EventConfig).Size = 512
		c.(*EventConfig).Fields = map[string]string{"customer": "cust-{{seq % 100}}", "region": "{{choice eu us}}", "id": "{{uuid}}", "q": `say "hi"`}
	})
	b := g.Next(1234, 1, time.Now())
	if len(b.Body) != 512 {
		t.Errorf("body is %d bytes, want 512", len(b.Body))
	}
	var obj map[string]any
	if err := json.Unmarshal(b.Body, &obj); err != nil {
		t.Fatal(err)
	}
	if obj["customer"] != "cust-34" || (obj["region"] != "eu" && obj["region"] != "us") || len(obj["id"].(string)) != 36 || obj["q"] != `say "hi"` {
		t.Errorf("fields: %v", obj)
	}
}

func TestBadConfigsNameTheKey(t *testing.T) {
	for _, c := range []struct {
		cfg  interface{ Validate() error }
		want string
	}{
		{&EventConfig{Size: 10, SeqIn: "body"}, "seq_in:"},
		{&EventConfig{Size: 10, SeqIn: "header", Fields: map[string]string{"a": "{{nope}}"}}, "fields: a: unknown template"},
		{&CloudEventsConfig{Mode: "batch", Type: "t", Source: "s"}, "mode:"},
		{&CloudEventsConfig{Mode: "binary", Source: "s"}, "type:"},
	} {
		err := c.cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.want)
		}
	}
}

func TestExtractRejectsMalformed(t *testing.T) {
	none := func(string) string { return "" }
	for _, body := range []string{`{`, `[1,2`, `"x"`} {
		if _, _, err := Extract(none, "application/json", []byte(body), func(uint64, time.Time) {}); err == nil {
			t.Errorf("%q accepted", body)
		}
	}
	m, u, err := Extract(none, "application/json", []byte(`[{"a":1},{"pb_seq":3,"pb_sent":"5"}]`), func(uint64, time.Time) {})
	if m != 1 || u != 1 || err != nil {
		t.Errorf("mixed: %d %d %v", m, u, err)
	}
}

func FuzzExtract(f *testing.F) {
	f.Add("", []byte(`{"pb_seq":1,"pb_sent":"2"}`))
	f.Add("3", []byte(`[{"pbseq":"1","pbsent":"2"}]`))
	f.Add("x", []byte(`{`))
	f.Fuzz(func(t *testing.T, count string, body []byte) {
		h := func(n string) string {
			if n == HeaderCount {
				return count
			}
			return ""
		}
		if len(count) > 3 {
			return // a count header of millions is a valid request; keep the fuzzer fast
		}
		Extract(h, "application/json", body, func(uint64, time.Time) {})
	})
}

func BenchmarkNext512(b *testing.B) {
	g := gen(b, EventFactory(), func(c any) { c.(*EventConfig).Size = 512 })
	at := time.Now()
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		bt := g.Next(uint64(n), 1, at)
		g.(pipebench.Releaser).Release(&bt)
		n++
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "events/s")
}

func BenchmarkExtractHeader(b *testing.B) {
	g := gen(b, EventFactory(), func(c any) { c.(*EventConfig).Size = 512 })
	bt := g.Next(1, 1, time.Now())
	h := http.Header{}
	for _, x := range bt.Headers {
		h.Set(x.Name, x.Value)
	}
	n := 0
	for b.Loop() {
		Extract(h.Get, bt.ContentType, bt.Body, func(uint64, time.Time) { n++ })
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "items/s")
}

// A message whose body cannot be read counts all the items its header
// announces as unmatched; a readable one counts what it carries.
func TestTallyAndItemCount(t *testing.T) {
	hdr := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	if n := ItemCount(hdr(nil)); n != 1 {
		t.Errorf("no header: %d items, want 1", n)
	}
	if n := ItemCount(hdr(map[string]string{HeaderCount: "-3"})); n != 1 {
		t.Errorf("a negative count: %d items, want 1", n)
	}
	items, unmatched := Tally(hdr(map[string]string{HeaderCount: "4", "Content-Type": "application/json"}), []byte("{not json"), func(uint64, time.Time) { t.Error("an item of an unreadable body") })
	if items != 4 || unmatched != 4 {
		t.Errorf("unreadable body: %d items, %d unmatched; want 4 and 4", items, unmatched)
	}
	var seqs []uint64
	items, unmatched = Tally(hdr(map[string]string{"Content-Type": "application/json"}), []byte(`[{"pbseq":"7","pbsent":"1"},{"x":1}]`), func(s uint64, _ time.Time) { seqs = append(seqs, s) })
	if items != 2 || unmatched != 1 || len(seqs) != 1 || seqs[0] != 7 {
		t.Errorf("a batch of two, one numbered: %d items, %d unmatched, seqs %v", items, unmatched, seqs)
	}
}

// The digits counted up in place are the numbers' own, across every
// carry.
func TestDecimalCountsUp(t *testing.T) {
	for _, start := range []uint64{0, 1, 8, 98, 999, 1_099_999, 9_999_999_999_999_990} {
		var d decimal
		d.set(start)
		for v := start; v < start+25; v++ {
			if got, want := string(d.digits()), strconv.FormatUint(v, 10); got != want {
				t.Fatalf("from %d: %q, want %q", start, got, want)
			}
			d.inc()
		}
	}
}
