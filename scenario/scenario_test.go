package scenario

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
)

var update = flag.Bool("update", false, "rewrite testdata/*.want from the decoder's output")

// The configurations below stand in for real plug-ins: the decoder only
// needs their shape (yaml tags, defaults, Validate), not their behaviour.
type httpConfig struct {
	URL         string `yaml:"url"`
	Connections int    `yaml:"connections"`
	TLS         struct {
		CAFile string `yaml:"ca_file"`
	} `yaml:"tls"`
}

func (c *httpConfig) Validate() error {
	if c.Connections < 1 {
		return fmt.Errorf("connections: must be at least 1")
	}
	return nil
}

type eventConfig struct {
	Size int `yaml:"size"`
}

type promConfig struct {
	URL string `yaml:"url"`
}

func testRegistry() *pipebench.Registry {
	reg := pipebench.NewRegistry()
	reg.Drivers.Register(pipebench.Factory[pipebench.Driver]{Name: "http", NewConfig: func() any { return &httpConfig{Connections: 64} },
		New: func(any, pipebench.Env) (pipebench.Driver, error) { return nil, nil }})
	reg.Drivers.Register(pipebench.Factory[pipebench.Driver]{Name: "otlp", New: func(any, pipebench.Env) (pipebench.Driver, error) { return nil, nil },
		Accepts: []pipebench.Payload{pipebench.PayloadOTLPTraces}})
	reg.Generators.Register(pipebench.Factory[pipebench.Generator]{Name: "otlp-traces", New: func(any, pipebench.Env) (pipebench.Generator, error) { return nil, nil },
		Produces: []pipebench.Payload{pipebench.PayloadOTLPTraces}})
	reg.Generators.Register(pipebench.Factory[pipebench.Generator]{Name: "event", NewConfig: func() any { return &eventConfig{Size: 256} },
		New: func(any, pipebench.Env) (pipebench.Generator, error) { return nil, nil }, Produces: []pipebench.Payload{pipebench.PayloadBytes}})
	reg.Sinks.Register(pipebench.Factory[pipebench.Sink]{Name: "http", New: func(any, pipebench.Env) (pipebench.Sink, error) { return nil, nil }})
	reg.SUTs.Register(pipebench.Factory[pipebench.SUT]{Name: "relay", New: func(any, pipebench.Env) (pipebench.SUT, error) { return nil, nil }})
	reg.Observers.Register(pipebench.Factory[pipebench.Observer]{Name: "prometheus", NewConfig: func() any { return &promConfig{} },
		New: func(any, pipebench.Env) (pipebench.Observer, error) { return nil, nil }})
	return reg
}

// checkThreshold is a small stand-in for kpi.ParseThreshold: it wants three
// space-separated parts.
func checkThreshold(expr string) (pipebench.Threshold, error) {
	if len(strings.Fields(expr)) != 3 {
		return pipebench.Threshold{}, fmt.Errorf("threshold %q: write it as KPI OP VALUE, like latency.p99 < 500ms", expr)
	}
	return pipebench.Threshold{Expr: expr}, nil
}

func params() Params {
	return Params{Registry: testRegistry(), ParseThreshold: checkThreshold, Env: func(k string) (string, bool) {
		if k == "PB_TEST_URL" {
			return "http://127.0.0.1:9/", true
		}
		return "", false
	}}
}

func TestValidFull(t *testing.T) {
	sc, err := Load("testdata/valid-full.yaml", params())
	if err != nil {
		t.Fatal(err)
	}
	if sc.Target.Config.(*httpConfig).URL != "http://127.0.0.1:9/" || sc.Target.Config.(*httpConfig).Connections != 8 {
		t.Errorf("target config = %+v", sc.Target.Config)
	}
	if sc.Generator.Config.(*eventConfig).Size != 100 || sc.Batch != 2 {
		t.Errorf("workload = %+v batch %d", sc.Generator.Config, sc.Batch)
	}
	if sc.Observers[0].Interval.D() != 2*time.Second || sc.Observers[0].Name != "prometheus" {
		t.Errorf("observer = %+v", sc.Observers[0])
	}
	bp := sc.Phases[4]
	if bp.Profile.Rate != 100 || bp.MaxInFlight != 50 || bp.Faults.ErrorStatus != 503 || bp.Faults.Latency.Kind != "uniform" {
		t.Errorf("bp = %+v", bp)
	}
	if sc.Phases[0].MaxInFlight != 500 {
		t.Errorf("defaults.max_in_flight not applied: %d", sc.Phases[0].MaxInFlight)
	}
	if sc.Phases[3].Profile.Kind != pipebench.ProfileBurst {
		t.Errorf("spikes kind = %s", sc.Phases[3].Profile.Kind)
	}
	plan, err := Compile(sc)
	if err != nil {
		t.Fatal(err)
	}
	// items: warm 1000; ramp (100+300)/2*10 = 2000; stairs 50+100 = 150;
	// spikes 2*(2s*1000 + 8s*100) = 5600; bp 100/s*10s - stagger 100*2/2
	// = 900; blast 750. Batch 2 rounds each up to whole sends. The stairs
	// are one phase per step, grouped under their scenario phase.
	want := map[string]uint64{"warm": 1000, "ramp": 2000, "stairs": 150, "spikes": 5600, "bp": 900, "blast": 750}
	got := map[string]uint64{}
	durs := map[string]time.Duration{}
	for _, ph := range plan.Phases {
		g := ph.Name
		if ph.Group != "" {
			g = ph.Group
		}
		got[g] += ph.Items
		durs[g] += ph.Duration.D()
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("phase %s items = %d, want %d", name, got[name], w)
		}
	}
	if n := len(plan.Phases); n != 7 {
		t.Errorf("plan has %d phases, want 7 (the stairs' two steps apart)", n)
	}
	if durs["stairs"] != 10*time.Second || durs["blast"] != DefaultBlastLimit.D() {
		t.Errorf("durations: stairs %s blast %s", durs["stairs"], durs["blast"])
	}
}

// Every testdata/invalid-*.yaml has its exact expected messages in a .want
// file beside it (regenerate with -update after checking them by eye).
func TestInvalidFiles(t *testing.T) {
	files, _ := filepath.Glob("testdata/invalid-*.yaml")
	sort.Strings(files)
	if len(files) < 20 {
		t.Fatalf("only %d invalid cases", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			_, err := Load(f, params())
			if err == nil {
				t.Fatal("accepted")
			}
			if pipebench.ExitCode(err) != pipebench.ExitUsage {
				t.Errorf("exit code %d, want %d", pipebench.ExitCode(err), pipebench.ExitUsage)
			}
			var errs *Errors
			if !errors.As(err, &errs) {
				t.Fatalf("not an *Errors: %T %v", err, err)
			}
			var got strings.Builder
			for _, p := range *errs {
				got.WriteString(p.String() + "\n")
			}
			wantFile := strings.TrimSuffix(f, ".yaml") + ".want"
			if *update {
				os.WriteFile(wantFile, []byte(got.String()), 0o644)
				return
			}
			want, err := os.ReadFile(wantFile)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got.String() != string(want) {
				t.Errorf("messages differ\n got:\n%s\nwant:\n%s", got.String(), want)
			}
		})
	}
}

func TestSchemaIsJSONWithPluginAlternatives(t *testing.T) {
	b, err := Schema(testRegistry())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"const": "http"`, `"connections"`, `"max_in_flight"`, `"error_ratio"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("schema lacks %s", want)
		}
	}
}

func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.yaml")
	for _, file := range files {
		data, _ := os.ReadFile(file)
		f.Add(data)
	}
	for _, in := range hostileSeeds() {
		f.Add(in)
	}
	p := params()
	f.Fuzz(func(t *testing.T, data []byte) {
		// Whatever the bytes: a scenario or located problems, no panic,
		// within the time and memory bounds (limits_test.go).
		parseBounded(t, "fuzz.yaml", string(data))
		sc, err := Parse("fuzz.yaml", data, p)
		var errs *Errors
		if err != nil && !errors.As(err, &errs) {
			t.Fatalf("%T %v: not a list of located problems", err, err)
		}
		if err == nil {
			if _, err := Compile(sc); err != nil && pipebench.ExitCode(err) != pipebench.ExitUsage {
				t.Fatalf("compile error without usage code: %v", err)
			}
		}
	})
}

// pipelinesConfig stands in for a system under test that names its
// pipelines (the embedded collector).
type pipelinesConfig struct {
	Pipelines int `yaml:"pipelines"`
}

func (c *pipelinesConfig) PipelineNames() ([]string, bool) {
	var n []string
	for i := 1; i <= c.Pipelines && c.Pipelines > 1; i++ {
		n = append(n, fmt.Sprintf("p%d", i))
	}
	return n, true
}

// faults.pipeline is decoded, and refused with a located reason when the
// sink cannot tell pipelines apart or the system under test has no such
// pipeline.
func TestFaultsPipelineKey(t *testing.T) {
	reg := testRegistry()
	reg.Sinks.Register(pipebench.Factory[pipebench.Sink]{Name: "otlp", New: func(any, pipebench.Env) (pipebench.Sink, error) { return nil, nil }})
	reg.SUTs.Register(pipebench.Factory[pipebench.SUT]{Name: "multi", NewConfig: func() any { return &pipelinesConfig{Pipelines: 1} },
		New: func(any, pipebench.Env) (pipebench.SUT, error) { return nil, nil }})
	p := params()
	p.Registry = reg
	doc := func(sink, pipelines, fault string) string {
		return fmt.Sprintf("name: x\nsut: {type: multi, pipelines: %s}\ntarget: {driver: otlp}\nworkload: {generator: otlp-traces}\nsink: {type: %s}\nphases:\n  - name: load\n    duration: 1s\n    rate: 10/s\n    faults: %s\n", pipelines, sink, fault)
	}
	sc, err := Parse("ok.yaml", []byte(doc("otlp", "3", "{pipeline: p2, error_ratio: 0.7}")), p)
	if err != nil {
		t.Fatal(err)
	}
	if f := sc.Phases[0].Faults; f.Pipeline != "p2" || f.ErrorRatio != 0.7 {
		t.Errorf("faults %+v", f)
	}
	for _, c := range []struct{ sink, pipelines, fault, want string }{
		{"http", "3", "{pipeline: p2, error_ratio: 0.7}", `ok.yaml:10:24: phases[0].faults.pipeline: "p2": only the otlp sink tells pipelines apart`},
		{"otlp", "3", "{pipeline: p4, error_ratio: 0.7}", `phases[0].faults.pipeline: "p4" is not a pipeline of the multi system under test: use one of p1, p2, p3`},
		{"otlp", "1", "{pipeline: p1, error_ratio: 0.7}", `"p1": the multi system under test has one pipeline`},
		{"otlp", "3", "{pipeline: p2}", `phases[0].faults.pipeline: says which pipeline the faults hit, and no fault is given`},
		{"otlp", "3", "{pipeline: 'a b', error_ratio: 0.1}", `is not a pipeline name`},
	} {
		_, err := Parse("ok.yaml", []byte(doc(c.sink, c.pipelines, c.fault)), p)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s %s: %v\nwant %q", c.sink, c.pipelines, c.fault, err, c.want)
		}
	}
}

// A ${VAR} stands for any scalar, as a value written in its place would:
// a number, a rate, a duration; what it holds is checked as that value is.
func TestEnvStandsForAnyScalar(t *testing.T) {
	env := map[string]string{"CONNS": "16", "RATE": "250/s", "DUR": "3s", "BAD": "many"}
	p := params()
	p.Env = func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	src := "name: env\ntarget: {driver: http, connections: \"${CONNS}\"}\nphases:\n  - name: a\n    duration: ${DUR}\n    rate: ${RATE}\n    max_in_flight: ${MIF:-7}\n"
	sc, err := Parse("env.yaml", []byte(src), p)
	if err != nil {
		t.Fatal(err)
	}
	ph := sc.Phases[0]
	if c := sc.Target.Config.(*httpConfig).Connections; c != 16 || ph.Profile.Rate != 250 || ph.Duration.D() != 3*time.Second || ph.MaxInFlight != 7 {
		t.Errorf("connections %d, phase %+v", c, ph)
	}
	_, err = Parse("env.yaml", []byte("name: env\ntarget:\n  driver: http\n  connections: ${BAD}\nphases: [{name: a, duration: 1s, rate: 1/s}]\n"), p)
	if err == nil || !strings.Contains(err.Error(), `env.yaml:4:16: target.connections: expected a whole number, got "many"`) {
		t.Errorf("a ${VAR} holding a word for a number: %v", err)
	}
}

// A producers phase: the services of the chef reference, each sending a
// health check every 30 s; staggered unless align says otherwise.
func TestProducersPhase(t *testing.T) {
	sc, err := Parse("producers.yaml", []byte(`name: x
target: {driver: http}
phases:
  - {name: services, duration: 1m, producers: {count: 18000, every: 30s}}
  - {name: restart, duration: 1m, producers: {count: 600, every: 1s, align: aligned}}
`), params())
	if err != nil {
		t.Fatal(err)
	}
	plan, err := Compile(sc)
	if err != nil {
		t.Fatal(err)
	}
	pr := plan.Phases[0].Profile
	if pr.Kind != pipebench.ProfileProducers || pr.Count != 18000 || pr.Every.D() != 30*time.Second || pr.Align != pipebench.AlignStaggered {
		t.Errorf("profile %+v", pr)
	}
	if r := plan.Phases[0].PlannedRate(); r != 600 {
		t.Errorf("18,000 services every 30 s: %v/s, want 600/s", r)
	}
	if a := plan.Phases[1].Profile.Align; a != pipebench.AlignAligned || plan.Phases[1].Items != 36000 {
		t.Errorf("aligned phase %+v", plan.Phases[1])
	}
}

// A phase's tick, written on the phase or in defaults, reaches the plan;
// one outside 100µs..100ms is an error at its line that says what to give.
func TestPhaseTick(t *testing.T) {
	sc, err := Parse("tick.yaml", []byte(`name: tick
target: {driver: http}
defaults: {tick: 2ms}
phases:
  - {name: a, duration: 1s, rate: 100/s, tick: 1ms}
  - {name: b, duration: 1s, rate: 100/s}
`), params())
	if err != nil {
		t.Fatal(err)
	}
	plan, err := Compile(sc)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := plan.Phases[0].Tick.D(), plan.Phases[1].Tick.D(); a != time.Millisecond || b != 2*time.Millisecond {
		t.Errorf("ticks %v and %v, want 1ms (its own) and 2ms (from defaults)", a, b)
	}
	for tick, want := range map[string]string{
		"50us": "tick.yaml:5:56: phases[0].tick: 50µs is outside 100µs..100ms: give the shortest time between two wake-ups of the pacer, like 1ms",
		"1s":   "phases[0].tick: 1s is outside 100µs..100ms",
	} {
		_, err := Parse("tick.yaml", []byte("name: tick\ntarget: {driver: http}\nphases:\n"+
			"  - {name: a, duration: 1s, rate: 100/s, tick: "+tick+"}\n"), params())
		if err == nil || !strings.Contains(err.Error(), want[strings.Index(want, "phases"):]) {
			t.Errorf("tick %s: %v\nwant %q", tick, err, want)
		}
	}
}
