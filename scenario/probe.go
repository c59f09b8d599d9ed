package scenario

import (
	"errors"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/pipebench/pipebench"
)

// The schema's bounds on numbers and durations are not written twice: they
// are found by asking the Validate that the decoder calls, value by value
// (probing). A configuration's defaults are the base; each number is set to
// candidate values in turn and the base validated, and the values whose
// key Validate does not complain about give the bounds: a minimum and
// maximum when they form a range, an enum when they are a few values, and
// "more than 0" for a duration or a rate that refuses 0. Rules that tie two
// keys together (a burst's rate above the base rate) are left to Validate:
// rates and durations are only probed for being above 0 or a floor.

// bounds are the rules found for one key.
type bounds struct {
	min, max *float64 // inclusive, for numbers
	exclMin  bool     // min is exclusive
	enum     []float64
	// positive: a duration or rate must be more than 0; atLeast, when
	// not 0, is a duration's floor (a power of ten of nanoseconds).
	positive bool
	atLeast  pipebench.Duration
	// nonEmpty: a list must hold at least one item.
	nonEmpty bool
}

// probeSet maps a key path (slice elements as [], like steps[].rate) to
// its bounds.
type probeSet map[string]bounds

var indexRE = regexp.MustCompile(`\[[0-9]+\]`)

// normKey writes a key's list indexes as [].
func normKey(key string) string { return indexRE.ReplaceAllString(key, "[]") }

// probe probes every number and duration that base (a pointer to a
// struct) sets, with validate checking base as it is; the results are
// added to ps. Keys validate already complains about in base are skipped.
func (ps probeSet) probe(base reflect.Value, validate func() error) {
	refused := func(key string) bool {
		err := validate()
		if err == nil {
			return false
		}
		for _, line := range strings.Split(err.Error(), "\n") {
			if k, _ := pipebench.SplitKey(line); k != "" && normKey(k) == key {
				return true
			}
		}
		return false
	}
	ps.walk(base.Elem(), "", refused)
}

var (
	durationType = reflect.TypeFor[pipebench.Duration]()
	rateType     = reflect.TypeFor[pipebench.Rate]()
)

func (ps probeSet) walk(v reflect.Value, path string, refused func(string) bool) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			ps.walk(v.Elem(), path, refused)
		}
		return
	case reflect.Slice:
		if v.Len() == 0 {
			return
		}
		if _, done := ps[path]; !done && !refused(path) {
			old := reflect.ValueOf(v.Interface())
			v.Set(reflect.MakeSlice(v.Type(), 0, 0))
			if refused(path) {
				ps[path] = bounds{nonEmpty: true}
			}
			v.Set(old)
		}
		ps.walk(v.Index(0), path+"[]", refused)
		return
	case reflect.Struct:
		if isText(v.Type()) && v.Type() != reflect.TypeFor[pipebench.LatencyDist]() && v.Type() != reflect.TypeFor[pipebench.Window]() {
			return
		}
		for _, k := range keysOf(v.Type()) {
			ps.walk(v.FieldByIndex(k.index), join(path, k.key), refused)
		}
		return
	}
	if _, done := ps[path]; done || refused(path) {
		return
	}
	switch {
	case v.Type() == durationType || v.Type() == rateType:
		ps.probeSign(v, path, refused)
	case v.CanInt() || v.CanUint():
		ps.probeInt(v, path, refused)
	case v.CanFloat():
		ps.probeFloat(v, path, refused)
	}
}

// accepts sets v to x, asks, and puts the old value back.
func accepts(v reflect.Value, x float64, path string, refused func(string) bool) bool {
	old := reflect.ValueOf(v.Interface())
	defer v.Set(old)
	switch {
	case v.CanInt():
		if x < math.MinInt64 || x >= math.MaxInt64 || v.OverflowInt(int64(x)) {
			return false
		}
		v.SetInt(int64(x))
	case v.CanUint():
		if x < 0 || x >= math.MaxUint64 || v.OverflowUint(uint64(x)) {
			return false
		}
		v.SetUint(uint64(x))
	default:
		v.SetFloat(x)
	}
	return !refused(path)
}

// probeSign finds whether a duration or a rate must be more than 0, and a
// duration's floor when it is a power of ten of nanoseconds.
func (ps probeSet) probeSign(v reflect.Value, path string, refused func(string) bool) {
	ok := func(x float64) bool { return accepts(v, x, path, refused) }
	if ok(0) {
		return
	}
	if v.Type() == rateType {
		if ok(1e-6) && ok(1) {
			ps[path] = bounds{positive: true}
		}
		return
	}
	for x := 1.0; x <= 1e11; x *= 10 {
		if ok(x) {
			if x == 1 {
				ps[path] = bounds{positive: true}
			} else if !ok(x-1) && ok(x*10) {
				ps[path] = bounds{positive: true, atLeast: pipebench.Duration(x)}
			}
			return
		}
	}
}

// probeInt finds a whole number's range, or the few values it may take.
func (ps probeSet) probeInt(v reflect.Value, path string, refused func(string) bool) {
	ok := func(x float64) bool { return accepts(v, x, path, refused) }
	const scanTo = 1100
	var seen []float64
	for x := -2.0; x <= scanTo; x++ {
		if ok(x) {
			seen = append(seen, x)
		}
	}
	var b bounds
	contiguous := len(seen) > 0 && seen[len(seen)-1]-seen[0] == float64(len(seen)-1)
	switch {
	case len(seen) == 0:
		// The smallest accepted power of two, if any, then the edge
		// below it.
		lo := float64(scanTo)
		for x := 2048.0; x <= 1<<40; x *= 2 {
			if ok(x) {
				b.min = ptr(edge(lo, x, func(m float64) bool { return !ok(m) }) + 1)
				break
			}
			lo = x
		}
		if b.min == nil {
			return
		}
	case contiguous && seen[len(seen)-1] == scanTo:
		if seen[0] > -2 {
			b.min = ptr(seen[0])
		} else if !ok(-1 << 40) {
			return // bounded below somewhere far: leave it to Validate
		}
	case contiguous:
		b.min, b.max = ptr(seen[0]), ptr(seen[len(seen)-1])
		if seen[0] == -2 {
			b.min = nil
		}
		ps[path] = b
		return
	case len(seen) <= 16:
		for x := float64(scanTo + 1); x <= 1<<40; x *= 2 {
			if ok(x) {
				return
			}
		}
		b.enum = seen
		ps[path] = b
		return
	default:
		return
	}
	// A maximum: the first refused power of two above, then the edge.
	lo := float64(scanTo)
	if b.min != nil {
		lo = math.Max(lo, *b.min)
	}
	for x := 2 * lo; x <= 1<<53; x *= 2 {
		if !ok(x) {
			b.max = ptr(edge(lo, x, ok))
			break
		}
		lo = x
	}
	ps[path] = b
}

// edge returns the last whole number from lo up, below hi, that holds
// cond, for a cond that holds at lo, fails at hi and changes once between.
func edge(lo, hi float64, cond func(float64) bool) float64 {
	for hi-lo > 1 {
		if mid := math.Floor((lo + hi) / 2); cond(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// probeFloat finds a number's range.
func (ps probeSet) probeFloat(v reflect.Value, path string, refused func(string) bool) {
	ok := func(x float64) bool { return accepts(v, x, path, refused) }
	var b bounds
	switch {
	case ok(-1e9):
	case ok(0) && !ok(-1e-9):
		b.min = ptr(0)
	case !ok(0) && ok(1e-9):
		b.min, b.exclMin = ptr(0), true
	default:
		return
	}
	if !ok(1e12) {
		lo, hi := 0.0, 1e12
		if b.min == nil {
			lo = -1e9
		} else if b.exclMin {
			lo = 1e-9
		}
		for i := 0; i < 200 && math.Nextafter(lo, hi) < hi; i++ {
			if mid := lo + (hi-lo)/2; ok(mid) {
				lo = mid
			} else {
				hi = mid
			}
		}
		if r := math.Round(lo*1e6) / 1e6; ok(r) {
			lo = r
		}
		b.max = ptr(lo)
	}
	if b.min != nil || b.max != nil {
		ps[path] = b
	}
}

func ptr(x float64) *float64 { return &x }

// phaseBases are the phases probed for the bounds of a phase's keys: one
// per load profile, each with every setting given, so that every key is
// set in one of them.
func phaseBases() []pipebench.PhaseSpec {
	d := func(s float64) *pipebench.Duration { x := pipebench.Duration(s * 1e9); return &x }
	r := func(x float64) *pipebench.Rate { v := pipebench.Rate(x); return &v }
	set := settingsBase()
	return []pipebench.PhaseSpec{
		{Name: "p", Rate: r(10), Duration: d(10), PhaseSettings: set},
		{Name: "p", Ramp: &pipebench.Ramp{From: 1, To: 10}, Duration: d(10)},
		{Name: "p", Steps: []pipebench.Step{{Rate: 10, Duration: pipebench.Duration(1e9)}}},
		{Name: "p", Rate: r(10), Burst: &pipebench.Burst{Rate: 20, For: pipebench.Duration(1e9), Every: pipebench.Duration(2e9)}, Duration: d(10)},
		{Name: "p", Blast: &pipebench.Blast{Count: 10, Workers: pipebench.DefaultBlastWorkers}},
	}
}

// settingsBase sets every phase setting, and every fault.
func settingsBase() pipebench.PhaseSettings {
	stagger := pipebench.Duration(0)
	inFlight := pipebench.DefaultMaxInFlight
	bytes := pipebench.ByteSize(pipebench.DefaultMaxInFlightBytes)
	tick := pipebench.Duration(pipebench.MinTick)
	return pipebench.PhaseSettings{Stagger: &stagger, MaxInFlight: &inFlight, MaxInFlightBytes: &bytes, Tick: &tick,
		Faults: &pipebench.FaultPolicy{ErrorRatio: 0.5, ErrorStatus: 503, Latency: &pipebench.LatencyDist{Kind: "fixed", Fixed: pipebench.Duration(1e6)},
			RateLimit: 100, RequestRateLimit: 100, RateLimitBurst: pipebench.Duration(1e9),
			Outages: []pipebench.Window{{Start: 0, Duration: pipebench.Duration(1e9)}}}}
}

// phaseRules is every rule of a phase as the decoder applies them, for a
// batch of 1 and no defaults.
func phaseRules(spec pipebench.PhaseSpec) error {
	if err := spec.Validate(); err != nil {
		return err
	}
	ph := resolve(spec, spec.PhaseSettings)
	pp := pipebench.PlanPhase{Name: ph.Name, Profile: ph.Profile, Duration: ph.Duration, Stagger: ph.Stagger,
		MaxInFlight: ph.MaxInFlight, MaxInFlightBytes: ph.MaxInFlightBytes, Tick: ph.Tick, BatchSize: 1, Faults: ph.Faults}
	return errors.Join(spec.PhaseSettings.Validate(), pp.Validate())
}

// probeScenario probes the scenario's own types: the top level, the
// phases, the defaults and the common keys of plug-in sections.
func probeScenario() probeSet {
	ps := probeSet{}
	iv := pipebench.Duration(1e9)
	top := &file{Name: "x", Interval: &iv, Phases: []pipebench.PhaseSpec{{}}}
	ps.probe(reflect.ValueOf(top), func() error { return top.Validate() })
	sub := func(prefix string, base any, validate func() error) {
		inner := probeSet{}
		inner.probe(reflect.ValueOf(base), validate)
		for k, b := range inner {
			ps[join(prefix, k)] = b
		}
	}
	for _, base := range phaseBases() {
		sub("phases[]", &base, func() error { return phaseRules(base) })
	}
	set := settingsBase()
	sub("defaults", &set, func() error { return set.Validate() })
	one := 1
	wl := &workloadKeys{Batch: &one}
	sub("workload", wl, func() error { return wl.Validate() })
	obs := &observerKeys{Interval: &iv}
	sub("observers[]", obs, func() error { return obs.Validate() })
	return ps
}

// probePlugin probes a plug-in's configuration from its defaults.
func probePlugin(newConfig func() any) probeSet {
	ps := probeSet{}
	if newConfig == nil {
		return ps
	}
	cfg := newConfig()
	v, ok := cfg.(interface{ Validate() error })
	if !ok || reflect.TypeOf(cfg).Kind() != reflect.Pointer {
		return ps
	}
	ps.probe(reflect.ValueOf(cfg), v.Validate)
	return ps
}

// enumOf returns the enum as JSON numbers.
func (b bounds) enumOf() []any {
	out := make([]any, len(b.enum))
	for i, x := range b.enum {
		out[i] = int64(x)
	}
	return slices.Clip(out)
}
