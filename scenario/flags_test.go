package scenario

import (
	"reflect"
	"strings"
	"testing"

	"github.com/pipebench/pipebench"
)

// Every key of a fault policy is a flag of its own, and a flag's text
// makes the same policy as the same text under faults: in a scenario.
func TestFaultFlagsMatchTheDecoder(t *testing.T) {
	// A text of each field's type, and of the keys whose rules want
	// another one; a new rule needs no line here.
	byType := map[reflect.Type]string{
		reflect.TypeFor[float64]():                "0.7",
		reflect.TypeFor[int]():                    "3",
		reflect.TypeFor[pipebench.Rate]():         "3000/s",
		reflect.TypeFor[pipebench.Duration]():     "100ms",
		reflect.TypeFor[*pipebench.LatencyDist](): "uniform:1ms:20ms",
		reflect.TypeFor[[]pipebench.Window]():     "10s:5s",
		reflect.TypeFor[string]():                 "p2",
	}
	byKey := map[string]string{"error_status": "429"}
	var fromFlags pipebench.FaultPolicy
	flags := FaultFlags(&fromFlags)
	if n := reflect.TypeFor[pipebench.FaultPolicy]().NumField(); len(flags) != n {
		t.Fatalf("%d flags for %d keys", len(flags), n)
	}
	var yaml strings.Builder
	for _, f := range flags {
		v, ok := byKey[f.Key]
		if !ok {
			v, ok = byType[f.Value.v.Type()]
		}
		if !ok {
			t.Fatalf("no test text for key %s (flag --%s) of type %s: add one", f.Key, f.Name, f.Value.v.Type())
		}
		if f.Usage == "" || strings.Contains(f.Usage, f.Key) && !strings.HasPrefix(f.Usage, "--"+f.Name) {
			t.Errorf("--%s: usage %q", f.Name, f.Usage)
		}
		if err := f.Value.Set(v); err != nil {
			t.Fatalf("--%s %s: %v", f.Name, v, err)
		}
		if f.Key == "outages" {
			v = "[" + v + "]"
		}
		yaml.WriteString("      " + f.Key + ": " + v + "\n")
	}
	reg := testRegistry()
	reg.Sinks.Register(pipebench.Factory[pipebench.Sink]{Name: "otlp", New: func(any, pipebench.Env) (pipebench.Sink, error) { return nil, nil }})
	src := "name: f\ntarget: {driver: http}\nsink: {type: otlp}\nphases:\n  - name: a\n    duration: 1m\n    rate: 1/s\n    faults:\n" + yaml.String()
	sc, err := Parse("f.yaml", []byte(src), Params{Registry: reg, ParseThreshold: checkThreshold})
	if err != nil {
		t.Fatalf("%v\n%s", err, src)
	}
	if got, want := fromFlags.Defaulted(), sc.Phases[0].Faults; !reflect.DeepEqual(got, want) {
		t.Errorf("from flags %+v\nfrom YAML  %+v", got, want)
	}
	if s := flags[0].Value.String(); s != "0.7" {
		t.Errorf("String() = %q", s)
	}
}

// A policy's problems name the flags they are about.
func TestFlagProblemsNameFlags(t *testing.T) {
	p := pipebench.FaultPolicy{ErrorRatio: 2, Outages: []pipebench.Window{{Start: 1}}, RateLimitBurst: 5}
	got := FlagProblems(p.Validate(0), FaultFlags(&pipebench.FaultPolicy{}))
	for _, want := range []string{"--error-ratio: 2 is outside 0..1", "--outage: must be more than 0", "--rate-limit-burst: goes with"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
}

// SetKey sets a plug-in configuration's key from its text as the decoder
// reads it, and names the key in what it refuses.
func TestSetKey(t *testing.T) {
	type cfg struct {
		Listen  string             `yaml:"listen"`
		Max     int64              `yaml:"max_body_bytes"`
		Timeout pipebench.Duration `yaml:"timeout"`
	}
	var c cfg
	for k, v := range map[string]string{"listen": "127.0.0.1:9", "max_body_bytes": "42", "timeout": "3s"} {
		if err := SetKey(&c, k, v); err != nil {
			t.Fatal(err)
		}
	}
	if c.Listen != "127.0.0.1:9" || c.Max != 42 || c.Timeout.D().Seconds() != 3 {
		t.Errorf("set %+v", c)
	}
	for _, bad := range []struct{ key, text, want string }{
		{"max_body_bytes", "many", `max_body_bytes: "many" is not a whole number`},
		{"port", "9", "port: no such key (keys: listen, max_body_bytes, timeout)"},
	} {
		if err := SetKey(&c, bad.key, bad.text); err == nil || err.Error() != bad.want {
			t.Errorf("%s=%s: %v, want %s", bad.key, bad.text, err, bad.want)
		}
	}
	if err := SetKey(c, "listen", "x"); err == nil {
		t.Error("a configuration that is no pointer was set")
	}
}
