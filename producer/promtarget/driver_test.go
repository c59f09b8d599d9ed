package promtarget

import (
	"context"
	"encoding/json"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/pipebench/pipebench"
)

func startDriver(t *testing.T, mut func(*DriverConfig)) *Driver {
	t.Helper()
	c := DefaultDriverConfig()
	c.Producers, c.Metrics, c.Series, c.MaxPending = 6, 20, 5, 100
	if mut != nil {
		mut(c)
	}
	d, err := DriverFactory().New(c, pipebench.Env{Target: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	drv := d.(*Driver)
	if err := drv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	shutdownAtEnd(t, drv.t, false)
	return drv
}

// Service discovery splits the producers as the agent's two scrape
// configurations and its replicas ask: pods the even ones, services the
// odd ones, each share split again by shard; every producer is found
// exactly once over the shares.
func TestSDRolesAndShards(t *testing.T) {
	d := startDriver(t, nil)
	found := func(q string) []int {
		resp, body := get(t, d.Target().SDURL()+"?"+q, "")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: HTTP %d %s", q, resp.StatusCode, body)
		}
		var groups []sdGroup
		if err := json.Unmarshal(body, &groups); err != nil {
			t.Fatal(err)
		}
		var ids []int
		for _, g := range groups {
			id, _ := strconv.Atoi(g.Labels["pb_producer"])
			ids = append(ids, id)
			if _, svc := g.Labels["service"]; svc != strings.Contains(q, "role=service") {
				t.Errorf("%s: producer %d labels %v", q, id, g.Labels)
			}
		}
		return ids
	}
	if got := found("role=pod"); len(got) != 3 || got[0] != 0 || got[1] != 2 || got[2] != 4 {
		t.Errorf("pods: %v", got)
	}
	if got := found("role=service"); len(got) != 3 || got[0] != 1 {
		t.Errorf("services: %v", got)
	}
	var all []int
	for _, role := range []string{"pod", "service"} {
		for shard := 0; shard < 2; shard++ {
			all = append(all, found("role="+role+"&shard="+strconv.Itoa(shard)+"&shards=2")...)
		}
	}
	sort.Ints(all)
	if len(all) != 6 || all[0] != 0 || all[5] != 5 {
		t.Errorf("over every share: %v, want each of 0..5 once", all)
	}
	for _, bad := range []string{"role=node", "shard=2&shards=2", "shard=x&shards=1"} {
		resp, err := http.Get(d.Target().SDURL() + "?" + bad)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: HTTP %d, want 400", bad, resp.StatusCode)
		}
	}
}

// A batch rides on one producer's next scrape (the next producer for the
// next batch), in every format the producer serves, as pb_item samples
// whose value is the sequence number and whose timestamp is the send
// time; the producer counts them apart from its load; a scrape takes them
// once; past max_pending, Send refuses.
func TestTracerItemsRideOnScrapes(t *testing.T) {
	d := startDriver(t, nil)
	before := time.Now().UnixMilli()
	for i := 0; i < 3; i++ {
		if o := d.Send(context.Background(), &pipebench.Batch{Seq: uint64(1 + 10*i), Count: 10}); o.Class != pipebench.ClassOK {
			t.Fatalf("send %d: %+v", i, o)
		}
	}
	urls := d.Target().Targets()
	for i, accept := range []string{"text/plain;version=0.0.4", "application/openmetrics-text;version=1.0.0", "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited"} {
		resp, body := get(t, urls[i], accept)
		var seqs []float64
		var stamps []int64
		fams := map[string]bool{}
		if strings.HasPrefix(accept, "application/openmetrics-text") {
			// expfmt does not decode OpenMetrics: read its lines.
			if !strings.HasSuffix(string(body), "# EOF\n") {
				t.Errorf("OpenMetrics body does not end with # EOF")
			}
			for _, l := range strings.Split(string(body), "\n") {
				if strings.HasPrefix(l, "# TYPE ") {
					fams[strings.Fields(l)[2]] = true
				}
				if !strings.HasPrefix(l, ItemMetric+"{") {
					continue
				}
				f := strings.Fields(l)
				v, _ := strconv.ParseFloat(f[1], 64)
				ts, _ := strconv.ParseFloat(f[2], 64)
				seqs, stamps = append(seqs, v), append(stamps, int64(ts*1000+0.5))
			}
		} else {
			dec := expfmt.NewDecoder(strings.NewReader(string(body)), expfmt.ResponseFormat(resp.Header))
			for {
				mf := new(dto.MetricFamily)
				if err := dec.Decode(mf); err != nil {
					break
				}
				fams[mf.GetName()] = true
				if mf.GetName() != ItemMetric {
					continue
				}
				for _, m := range mf.Metric {
					seqs, stamps = append(seqs, m.GetGauge().GetValue()), append(stamps, m.GetTimestampMs())
				}
			}
		}
		delete(fams, ItemMetric)
		for _, ts := range stamps {
			if ts < before || ts > time.Now().UnixMilli() {
				t.Errorf("%s: timestamp %d is not the send time", accept, ts)
			}
		}
		if len(seqs) != 10 || seqs[0] != float64(1+10*i) || seqs[9] != float64(10+10*i) {
			t.Errorf("%s: producer %d served items %v, want %d..%d", accept, i, seqs, 1+10*i, 10+10*i)
		}
		if len(fams) != 20 {
			t.Errorf("%s: %d load families beside the items, want 20", accept, len(fams))
		}
		_, again := get(t, urls[i], accept)
		if strings.Contains(string(again), ItemMetric) {
			t.Errorf("%s: the items were served twice", accept)
		}
	}
	var items, samples uint64
	for _, s := range d.Target().Stats() {
		items += s.Items
		samples += s.Samples
	}
	if items != 30 || samples != 6*uint64(d.Target().SamplesPerScrape()) {
		t.Errorf("stats: %d items, %d samples; want 30 and %d", items, samples, 6*d.Target().SamplesPerScrape())
	}
	if o := d.Send(context.Background(), &pipebench.Batch{Seq: 100, Count: 101}); o.Class != pipebench.ClassRefused {
		t.Errorf("101 items past max_pending 100: %+v, want refused", o)
	}
}

func TestDriverConfigValidate(t *testing.T) {
	c := DefaultDriverConfig()
	c.MaxPending, c.Producers = 0, 0
	err := c.Validate()
	for _, want := range []string{"max_pending:", "producers:"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v lacks %s", err, want)
		}
	}
	if _, err := DriverFactory().New(DefaultDriverConfig(), pipebench.Env{Target: "/a/folder"}); pipebench.ExitCode(err) != pipebench.ExitUsage {
		t.Errorf("a folder as the target: %v, want a usage error", err)
	}
}
