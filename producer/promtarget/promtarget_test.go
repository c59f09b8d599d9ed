package promtarget

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pipebench/pipebench/internal/testkit/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

func start(t testing.TB, mut func(*Config)) *Target {
	t.Helper()
	c := DefaultConfig()
	c.Producers, c.Metrics, c.Series = 3, 50, 10
	if mut != nil {
		mut(c)
	}
	tg, err := New(*c)
	if err != nil {
		t.Fatal(err)
	}
	if err := tg.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	shutdownAtEnd(t, tg, true)
	return tg
}

// shutdownAtEnd shuts tg down when the test ends, within 5 s; a Shutdown
// error fails the test when check is set.
func shutdownAtEnd(t testing.TB, tg *Target, check bool) {
	t.Cleanup(func() {
		// The client's transport may have dialled a connection it then did
		// not use; the server counts it as active until it is closed.
		http.DefaultClient.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := tg.Shutdown(ctx); err != nil && check {
			t.Error(err)
		}
	})
}

func get(t testing.TB, url, accept string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s: %s", url, resp.Status, body)
	}
	return resp, body
}

func parse(t testing.TB, body []byte) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parse: %v\n%.500s", err, body)
	}
	return fams
}

func scrape(t testing.TB, url string) map[string]*dto.MetricFamily {
	t.Helper()
	_, body := get(t, url, "")
	return parse(t, body)
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.Label {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// seriesSet returns "name{series}" for every series of every family.
func seriesSet(fams map[string]*dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	for name, mf := range fams {
		for _, m := range mf.Metric {
			v := m.GetGauge().GetValue() + m.GetCounter().GetValue() + float64(m.GetHistogram().GetSampleCount())
			out[name+"/"+label(m, "series")] = v
		}
	}
	return out
}

func TestScrapeExactCounts(t *testing.T) {
	tg := start(t, nil)
	if n := len(tg.Targets()); n != 3 {
		t.Fatalf("%d targets", n)
	}
	for p, url := range tg.Targets() {
		fams := scrape(t, url)
		if len(fams) != 50 {
			t.Fatalf("producer %d: %d families, want 50", p, len(fams))
		}
		for i := 0; i < 50; i++ {
			name := fmt.Sprintf("pb_load_metric_%04d", i)
			mf := fams[name]
			if mf == nil {
				t.Fatalf("no %s", name)
			}
			if mf.GetType() != dto.MetricType_GAUGE || len(mf.Metric) != 10 {
				t.Fatalf("%s: %v with %d series", name, mf.GetType(), len(mf.Metric))
			}
			seen := map[string]bool{}
			for _, m := range mf.Metric {
				if got := label(m, "producer"); got != fmt.Sprint(p) {
					t.Fatalf("%s: producer=%q, want %d", name, got, p)
				}
				seen[label(m, "series")] = true
			}
			for j := 0; j < 10; j++ {
				if !seen[fmt.Sprintf("%04d", j)] {
					t.Fatalf("%s: no series %04d in %v", name, j, seen)
				}
			}
		}
	}
}

func TestCountersAdvance(t *testing.T) {
	tg := start(t, func(c *Config) { c.Type = TypeCounter })
	url := tg.Targets()[1]
	first := scrape(t, url)
	second := scrape(t, url)
	third := scrape(t, url)
	if len(first) != 50 {
		t.Fatalf("%d families", len(first))
	}
	for name, mf := range first {
		if !strings.HasSuffix(name, "_total") || mf.GetType() != dto.MetricType_COUNTER {
			t.Fatalf("%s is %v", name, mf.GetType())
		}
		for i, m := range mf.Metric {
			v1 := m.GetCounter().GetValue()
			v2 := second[name].Metric[i].GetCounter().GetValue()
			v3 := third[name].Metric[i].GetCounter().GetValue()
			if v1 < 1 || v1 > 5 || v2 != 2*v1 || v3 != 3*v1 {
				t.Fatalf("%s %s: %v, %v, %v; want step, 2 step, 3 step", name, label(m, "series"), v1, v2, v3)
			}
		}
	}
}

func TestHistograms(t *testing.T) {
	tg := start(t, func(c *Config) { c.Type = TypeHistogram; c.Buckets = []float64{0.1, 1, 10} })
	if got, want := tg.SamplesPerScrape(), 50*10*(3+3); got != want {
		t.Fatalf("samples per scrape %d, want %d", got, want)
	}
	fams := scrape(t, tg.Targets()[0])
	fams2 := scrape(t, tg.Targets()[0])
	for name, mf := range fams {
		if mf.GetType() != dto.MetricType_HISTOGRAM || len(mf.Metric) != 10 {
			t.Fatalf("%s: %v x %d", name, mf.GetType(), len(mf.Metric))
		}
		for i, m := range mf.Metric {
			h := m.GetHistogram()
			if len(h.Bucket) != 4 { // the parser keeps +Inf
				t.Fatalf("%s: %d buckets", name, len(h.Bucket))
			}
			step := h.Bucket[0].GetCumulativeCount()
			for bi, b := range h.Bucket {
				if b.GetCumulativeCount() != step*uint64(bi+1) {
					t.Fatalf("%s bucket %d: %d", name, bi, b.GetCumulativeCount())
				}
			}
			if h.GetSampleCount() != 4*step || h.GetSampleSum() != float64(step)*(0.1+1+10+20) {
				t.Fatalf("%s: count %d sum %v step %d", name, h.GetSampleCount(), h.GetSampleSum(), step)
			}
			if fams2[name].Metric[i].GetHistogram().GetSampleCount() != 8*step {
				t.Fatalf("%s: histogram did not advance", name)
			}
		}
	}
}

func TestMixedTypes(t *testing.T) {
	tg := start(t, func(c *Config) { c.Type = TypeMixed; c.Metrics = 6 })
	fams := scrape(t, tg.Targets()[2])
	want := map[string]dto.MetricType{
		"pb_load_metric_0000": dto.MetricType_GAUGE, "pb_load_metric_0001_total": dto.MetricType_COUNTER, "pb_load_metric_0002": dto.MetricType_HISTOGRAM,
		"pb_load_metric_0003": dto.MetricType_GAUGE, "pb_load_metric_0004_total": dto.MetricType_COUNTER, "pb_load_metric_0005": dto.MetricType_HISTOGRAM,
	}
	if len(fams) != len(want) {
		t.Fatalf("%d families", len(fams))
	}
	for n, typ := range want {
		if fams[n] == nil || fams[n].GetType() != typ {
			t.Fatalf("%s: %v", n, fams[n])
		}
	}
}

// The fast encoder writes exactly what expfmt writes for the same families,
// in both formats, for small values and for values past a million (where
// expfmt switches to exponent notation).
func TestTemplatesMatchExpfmt(t *testing.T) {
	for _, typ := range []string{TypeGauge, TypeCounter, TypeHistogram, TypeMixed} {
		for _, om := range []bool{false, true} {
			c := DefaultConfig()
			c.Metrics, c.Series, c.Type = 7, 4, typ
			c.ChurnFraction, c.ChurnEvery = 0.25, 3
			m := newLayout(c)
			format := expfmt.FmtText
			if om {
				format = expfmt.FmtOpenMetrics_1_0_0
			}
			for _, k := range []uint64{0, 1, 2, 3, 7, 333334, 1 << 40} {
				tpl := m.build(2, m.gen(k), om)
				got := tpl.render(nil, k, m.perScrapeSum)
				var want bytes.Buffer
				enc := expfmt.NewEncoder(&want, format)
				for _, mf := range m.families(2, k) {
					if err := enc.Encode(mf); err != nil {
						t.Fatal(err)
					}
				}
				enc.(expfmt.Closer).Close()
				if !bytes.Equal(got, want.Bytes()) {
					gl, wl := strings.Split(string(got), "\n"), strings.Split(want.String(), "\n")
					for i := range min(len(gl), len(wl)) {
						if gl[i] != wl[i] {
							t.Fatalf("%s om=%v k=%d line %d:\n got %s\nwant %s", typ, om, k, i, gl[i], wl[i])
						}
					}
					t.Fatalf("%s om=%v k=%d: %d lines, want %d", typ, om, k, len(gl), len(wl))
				}
			}
		}
	}
}

func TestChurn(t *testing.T) {
	tg := start(t, func(c *Config) {
		c.Producers, c.Metrics, c.Series = 1, 20, 10
		c.ChurnFraction, c.ChurnEvery = 0.1, 2
		c.Type = TypeCounter
	})
	url := tg.Targets()[0]
	var sets []map[string]float64
	for i := 0; i < 5; i++ {
		s := seriesSet(scrape(t, url))
		if len(s) != 200 {
			t.Fatalf("scrape %d: %d series, want 200", i, len(s))
		}
		sets = append(sets, s)
	}
	diff := func(a, b map[string]float64) (gone, fresh int) {
		for k := range a {
			if _, ok := b[k]; !ok {
				gone++
			}
		}
		for k := range b {
			if _, ok := a[k]; !ok {
				fresh++
			}
		}
		return
	}
	for i, want := range []int{0, 20, 0, 20} {
		gone, fresh := diff(sets[i], sets[i+1])
		if gone != want || fresh != want {
			t.Fatalf("scrape %d->%d: %d gone, %d new; want %d", i, i+1, gone, fresh, want)
		}
	}
	// A churned series is new: its counter restarts at one step.
	for k, v := range sets[2] {
		if _, old := sets[1][k]; !old && (v < 1 || v > 5) {
			t.Fatalf("new series %s starts at %v", k, v)
		}
	}
	if s := waitScrapes(t, tg, 0, 5); s.Churned != 40 || s.Scrapes != 5 {
		t.Fatalf("stats %+v", s)
	}
}

func TestOwnMetrics(t *testing.T) {
	tg := start(t, nil)
	for i := 0; i < 4; i++ {
		get(t, tg.Targets()[0], "")
	}
	get(t, tg.Targets()[2], "")
	waitScrapes(t, tg, 0, 4)
	waitScrapes(t, tg, 2, 1)
	fams := scrape(t, tg.MetricsURL())
	want := map[string]map[string]float64{
		"pipebench_producer_scrapes_total":        {"0": 4, "1": 0, "2": 1},
		"pipebench_producer_samples_served_total": {"0": 4 * 500, "1": 0, "2": 500},
		"pipebench_producer_series":               {"0": 500, "1": 500, "2": 500},
		"pipebench_producer_series_churned_total": {"0": 0},
		"pipebench_producer_scrape_errors_total":  {"0": 0},
		"pipebench_producer_bytes_served_total":   {"1": 0},
	}
	for name, byProd := range want {
		mf := fams[name]
		if mf == nil {
			t.Fatalf("no %s", name)
		}
		for _, m := range mf.Metric {
			w, ok := byProd[label(m, "producer")]
			v := m.GetCounter().GetValue() + m.GetGauge().GetValue()
			if ok && v != w {
				t.Fatalf("%s{producer=%s} = %v, want %v", name, label(m, "producer"), v, w)
			}
		}
	}
	if b := tg.Stats()[0].Bytes; b < 4*500*40 {
		t.Fatalf("bytes served %d", b)
	}
}

func TestOpenMetricsNegotiation(t *testing.T) {
	tg := start(t, func(c *Config) { c.Type = TypeMixed; c.Metrics = 3 })
	// What Prometheus 3 sends.
	const accept = "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,application/openmetrics-text;version=0.0.1;q=0.5,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2"
	resp, body := get(t, tg.Targets()[0], accept)
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/openmetrics-text; version=1.0.0") {
		t.Fatalf("content type %q", ct)
	}
	s := string(body)
	for _, want := range []string{"# TYPE pb_load_metric_0001 counter\n", `pb_load_metric_0001_total{producer="0",series="0000"} `,
		`pb_load_metric_0002_bucket{producer="0",series="0000",le="1.0"} `, "\n# EOF\n"} {
		if !strings.Contains(s, want) {
			t.Fatalf("no %q in\n%.800s", want, s)
		}
	}
	if !strings.HasSuffix(s, "# EOF\n") {
		t.Fatal("no # EOF at the end")
	}
	// No OpenMetrics when it is off.
	tg2 := start(t, func(c *Config) { c.OpenMetrics = false })
	resp, _ = get(t, tg2.Targets()[0], accept)
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Fatalf("content type %q", ct)
	}
}

func TestProtobufViaExpfmt(t *testing.T) {
	tg := start(t, func(c *Config) { c.Type = TypeHistogram; c.Metrics = 4 })
	resp, body := get(t, tg.Targets()[1], string(expfmt.FmtProtoDelim))
	format := expfmt.ResponseFormat(resp.Header)
	if format.FormatType() != expfmt.TypeProtoDelim {
		t.Fatalf("format %q", format)
	}
	dec := expfmt.NewDecoder(bytes.NewReader(body), format)
	n := 0
	for {
		var mf dto.MetricFamily
		if err := dec.Decode(&mf); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		n += len(mf.Metric)
	}
	if n != 40 {
		t.Fatalf("%d series", n)
	}
}

func TestExpfmtEncoderAndGzip(t *testing.T) {
	tg := start(t, func(c *Config) { c.Encoder = EncoderExpfmt; c.Gzip = true; c.Type = TypeCounter })
	resp, body := get(t, tg.Targets()[0], "")
	if !resp.Uncompressed {
		t.Fatal("the answer was not gzipped")
	}
	if n := len(seriesSet(parse(t, body))); n != 500 {
		t.Fatalf("%d series", n)
	}
	if s := waitScrapes(t, tg, 0, 1); s.Samples != 500 || s.Bytes != uint64(len(body)) {
		t.Fatalf("stats %+v, body %d", s, len(body))
	}
}

func TestSeparatePortsAndDiscovery(t *testing.T) {
	for _, sep := range []bool{false, true} {
		tg := start(t, func(c *Config) { c.SeparatePorts = sep; c.Metrics = 2; c.Series = 2 })
		targets := tg.Targets()
		hosts := map[string]bool{}
		for _, u := range targets {
			hosts[strings.Split(strings.TrimPrefix(u, "http://"), "/")[0]] = true
			if n := len(seriesSet(scrape(t, u))); n != 4 {
				t.Fatalf("%s: %d series", u, n)
			}
		}
		if want := map[bool]int{false: 1, true: 3}[sep]; len(hosts) != want {
			t.Fatalf("separate_ports=%v: %d hosts %v", sep, len(hosts), targets)
		}
		_, body := get(t, tg.SDURL(), "")
		var groups []sdGroup
		if err := json.Unmarshal(body, &groups); err != nil {
			t.Fatal(err)
		}
		var fromSD []string
		for _, g := range groups {
			fromSD = append(fromSD, "http://"+g.Targets[0]+g.Labels["__metrics_path__"])
		}
		if fmt.Sprint(fromSD) != fmt.Sprint(targets) {
			t.Fatalf("service discovery %v, targets %v", fromSD, targets)
		}
		_, idx := get(t, tg.Endpoint()+"/", "")
		for _, u := range targets {
			if !bytes.Contains(idx, []byte(u)) {
				t.Fatalf("index lacks %s:\n%s", u, idx)
			}
		}
	}
}

func TestValidate(t *testing.T) {
	bad := []func(*Config){
		func(c *Config) { c.Listen = "nope" },
		func(c *Config) { c.Producers = 0 },
		func(c *Config) { c.Type = "summary" },
		func(c *Config) { c.Prefix = "9bad" },
		func(c *Config) { c.ChurnFraction = 1.5 },
		func(c *Config) { c.ChurnFraction = 0.1 },
		func(c *Config) { c.Buckets = []float64{1, 1} },
		func(c *Config) { c.Encoder = "slow" },
	}
	for i, mut := range bad {
		c := DefaultConfig()
		mut(c)
		if err := c.Validate(); err == nil {
			t.Errorf("case %d: no error", i)
		}
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkScrape scrapes the reference load (20 producers x 1,000 metrics
// x 10 series) over loopback HTTP, round robin, and reports samples served
// per second.
func BenchmarkScrape(b *testing.B) {
	for _, bc := range []struct {
		name   string
		typ    string
		accept string
		enc    string
	}{
		{"gauge/text", TypeGauge, "", EncoderFast},
		{"gauge/openmetrics", TypeGauge, string(expfmt.FmtOpenMetrics_1_0_0), EncoderFast},
		{"counter/text", TypeCounter, "", EncoderFast},
		{"histogram/text", TypeHistogram, "", EncoderFast},
		{"gauge/text/expfmt", TypeGauge, "", EncoderExpfmt},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c := DefaultConfig()
			c.Type, c.Encoder = bc.typ, bc.enc
			tg, err := New(*c)
			if err != nil {
				b.Fatal(err)
			}
			if err := tg.Start(context.Background()); err != nil {
				b.Fatal(err)
			}
			defer tg.Shutdown(context.Background())
			targets := tg.Targets()
			client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
			buf := make([]byte, 0, 4<<20)
			b.ResetTimer()
			start := time.Now()
			var bytesRead int64
			for i := 0; i < b.N; i++ {
				req, _ := http.NewRequest("GET", targets[i%len(targets)], nil)
				if bc.accept != "" {
					req.Header.Set("Accept", bc.accept)
				}
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				w := bytes.NewBuffer(buf[:0])
				n, _ := io.Copy(w, resp.Body)
				resp.Body.Close()
				bytesRead += n
			}
			el := time.Since(start).Seconds()
			b.ReportMetric(float64(b.N*tg.SamplesPerScrape())/el, "samples/s")
			b.ReportMetric(float64(bytesRead)/el/1e6, "MB/s")
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(el/float64(b.N)*1e3, "ms/scrape")
		})
	}
}

// BenchmarkRender measures the encoders alone, without HTTP.
func BenchmarkRender(b *testing.B) {
	c := DefaultConfig()
	m := newLayout(c)
	per := m.samplesPerScrape()
	b.Run("fast", func(b *testing.B) {
		tpl := m.build(0, 0, false)
		buf := tpl.render(nil, 0, m.perScrapeSum)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			buf = tpl.render(buf[:0], uint64(i), m.perScrapeSum)
		}
		b.ReportMetric(float64(b.N*per)/b.Elapsed().Seconds(), "samples/s")
	})
	b.Run("expfmt", func(b *testing.B) {
		var buf bytes.Buffer
		for i := 0; i < b.N; i++ {
			buf.Reset()
			enc := expfmt.NewEncoder(&buf, expfmt.FmtText)
			for _, mf := range m.families(0, uint64(i)) {
				_ = enc.Encode(mf)
			}
		}
		b.ReportMetric(float64(b.N*per)/b.Elapsed().Seconds(), "samples/s")
	})
	b.Run("build", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			m.build(0, uint64(i), false)
		}
	})
}

// Concurrent scrapers of every producer, with churn: every answer parses,
// holds exactly metrics x series series, and the counters add up.
func TestConcurrentScrapes(t *testing.T) {
	tg := start(t, func(c *Config) {
		c.Producers, c.Metrics, c.Series, c.Type = 4, 30, 5, TypeMixed
		c.ChurnFraction, c.ChurnEvery = 0.2, 3
	})
	const per = 12
	errs := make(chan error, 4*2*per)
	done := make(chan struct{})
	for _, u := range tg.Targets() {
		for w := 0; w < 2; w++ {
			go func() {
				defer func() { done <- struct{}{} }()
				for i := 0; i < per; i++ {
					resp, err := http.Get(u)
					if err != nil {
						errs <- err
						return
					}
					body, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					p := expfmt.NewTextParser(model.LegacyValidation)
					fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
					if err != nil {
						errs <- err
						return
					}
					if n := len(seriesSet(fams)); n != 150 {
						errs <- fmt.Errorf("%s: %d series", u, n)
					}
				}
			}()
		}
	}
	for i := 0; i < 8; i++ {
		<-done
	}
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i := range tg.Stats() {
		s := waitScrapes(t, tg, i, 2*per)
		// 24 scrapes: churn at scrape 3, 6, ..., 21 = 7 times 30 series.
		if s.Scrapes != 2*per || s.Samples != uint64(2*per*tg.SamplesPerScrape()) || s.Churned != 7*30 {
			t.Fatalf("%+v", s)
		}
	}
}

// waitScrapes returns producer i's stats once it has counted n scrapes. A
// scrape is counted after its body is written, so the client can hold the
// whole answer a moment before the counter moves.
func waitScrapes(t *testing.T, tg *Target, i int, n uint64) Stats {
	t.Helper()
	testutil.Poll(5*time.Second, func() bool { s := tg.Stats()[i]; return s.Scrapes+s.Errors >= n })
	return tg.Stats()[i]
}
