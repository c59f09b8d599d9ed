package builtins_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/kpi"
	"github.com/pipebench/pipebench/sut/all"
)

// detectionFixture is what the detection did to a recorded Result
// (testdata/detect/NAME.want.json): the detections, and the KPIs it set
// or changed on each row.
type detectionFixture struct {
	Detections []pipebench.Detection `json:"detections"`
	Set        []struct {
		Row  string          `json:"row"`
		KPIs []pipebench.KPI `json:"kpis"`
	} `json:"set"`
}

// readFixture decodes testdata/detect/NAME.json.gz as pipebench reads a
// Result.
func readFixture(t *testing.T, path string) *pipebench.Result {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	res, err := pipebench.DecodeResult(zr, pipebench.ResultCheck{})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// rows are a Result's total and phase rows.
func rows(res *pipebench.Result) []*pipebench.PhaseResult {
	out := []*pipebench.PhaseResult{}
	if res.Total != nil {
		out = append(out, res.Total)
	}
	for i := range res.Phases {
		out = append(out, &res.Phases[i])
	}
	return out
}

// canonical is the JSON of ds in an order that does not depend on the
// order the detectors ran in.
func canonical(t *testing.T, ds []pipebench.Detection) []string {
	t.Helper()
	var out []string
	for _, d := range ds {
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
	}
	sort.Strings(out)
	return out
}

// The detections of the recorded Results in testdata/detect (real runs of
// the eventing and chef scenarios through the event proxy and a
// JetStream cluster, and made-up ones that reach every event-bus
// detector), and the KPIs the detection sets, are exactly what the
// detection gave on the same Results before the NATS detectors moved
// into the nats observer (the .want.json files were written by that
// code), now that kpi finds them through the registry. (The order of
// the list is not compared: the general detectors now all run before the
// observer's.)
func TestDetectionsAsRecorded(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "detect", "*.json.gz"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	reg, err := all.Registry()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json.gz")
		t.Run(name, func(t *testing.T) {
			res := readFixture(t, f)
			var want detectionFixture
			b, err := os.ReadFile(strings.TrimSuffix(f, ".json.gz") + ".want.json")
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &want); err != nil {
				t.Fatal(err)
			}
			before := map[string]map[string]float64{}
			for _, p := range rows(res) {
				before[p.Name] = map[string]float64{}
				for _, k := range p.KPIs {
					before[p.Name][k.Key()] = k.Value
				}
			}
			got := kpi.DetectAll(res, reg.Detectors(res.Plan))
			if g, w := canonical(t, got), canonical(t, want.Detections); !slices.Equal(g, w) {
				t.Errorf("detections\n%s\nwant\n%s", strings.Join(g, "\n"), strings.Join(w, "\n"))
			}
			wantSet := map[string]string{}
			for _, s := range want.Set {
				for _, k := range s.KPIs {
					wantSet[s.Row+" "+k.Key()] = jsonOf(t, k)
				}
			}
			gotSet := map[string]string{}
			for _, p := range rows(res) {
				for _, k := range p.KPIs {
					if v, ok := before[p.Name][k.Key()]; !ok || v != k.Value {
						gotSet[p.Name+" "+k.Key()] = jsonOf(t, k)
					}
				}
			}
			for k, w := range wantSet {
				if gotSet[k] != w {
					t.Errorf("%s: set %s, want %s", k, gotSet[k], w)
				}
			}
			for k, g := range gotSet {
				// kpi set stream_cap_reached while it built the total,
				// before the detection; the observer's Detector sets it
				// now (TestStreamCapAsRecorded).
				if _, ok := wantSet[k]; !ok && !strings.HasPrefix(k, "total stream_cap_reached{") {
					t.Errorf("%s: set %s, which the detection did not set before", k, g)
				}
			}
		})
	}
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// stream_cap_reached, which kpi set while it built a run's total before
// the NATS detectors moved, is set by the nats observer's Detector to
// the value the real chef-drain run recorded.
func TestStreamCapAsRecorded(t *testing.T) {
	reg, err := all.Registry()
	if err != nil {
		t.Fatal(err)
	}
	res := readFixture(t, filepath.Join("testdata", "detect", "chef-drain.json.gz"))
	want := res.Total.All("stream_cap_reached")
	if len(want) == 0 {
		t.Fatal("the fixture has no stream_cap_reached")
	}
	kept := res.Total.KPIs[:0]
	for _, k := range res.Total.KPIs {
		if k.Name != "stream_cap_reached" {
			kept = append(kept, k)
		}
	}
	res.Total.KPIs = kept
	kpi.DetectAll(res, reg.Detectors(res.Plan))
	if got := res.Total.All("stream_cap_reached"); jsonOf(t, got) != jsonOf(t, want) {
		t.Errorf("stream_cap_reached %s, recorded %s", jsonOf(t, got), jsonOf(t, want))
	}
}
