// Package limit finds a pipeline's limits by itself: the highest rate at
// which the system under test is stable (an exponential climb to the first
// unstable rate, then bisection), and the longest burst at a given rate
// that it absorbs with nothing lost. Each probe is a whole run of a probe
// plan (pipebench.Plan.Probe), judged from its Result; the search never
// reports pipebench's own ceiling as the system's.
package limit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/kpi"
)

// RunFunc runs one probe plan to its Result (the runner, in production).
type RunFunc func(ctx context.Context, p pipebench.Plan) (*pipebench.Result, error)

// Params configures a search.
type Params struct {
	// Plan is the scenario's plan; each probe is Plan.Probe(rate, Probe).
	Plan pipebench.Plan
	Run  RunFunc
	// Start is the first rate tried (the climb doubles it); Max caps the
	// climb (0: no cap).
	Start, Max pipebench.Rate
	// Probe is how long each probe sends.
	Probe time.Duration
	// Precision stops the bisection once (unstable-stable)/stable is at
	// most this (0.05 = ±5%).
	Precision float64
	// Budget stops the search when the next probe would not finish within
	// it (0: no budget).
	Budget time.Duration
	// Tolerance is the share of the sent items that may be refused,
	// failed, lost or still in the backlog at a stable rate (default
	// 0.001).
	Tolerance float64
	// Burst, when above 0, searches the longest burst at this rate
	// instead of the highest rate: Start and Max are then ignored and
	// Probe is the shortest burst tried.
	Burst pipebench.Rate
	// Progress, if set, is told about each probe as it ends.
	Progress func(Probe, Bracket)
}

// probeInterval is how often a probe of d is observed: the plan's interval
// iv (a second when unset), shortened so that the probe holds six
// readings, but not below the shortest interval, 100 ms. At the default a
// probe of three seconds would hold two or three readings of the backlog,
// and a slope needs three.
func probeInterval(iv, d time.Duration) time.Duration {
	if iv <= 0 {
		iv = time.Second
	}
	return min(iv, max(d/6, minInterval))
}

// minInterval is the shortest observation interval a scenario can ask for.
const minInterval = 100 * time.Millisecond

// Validate refuses settings a search cannot work with, naming the flag:
// a rate probe shorter than three of its observation intervals (its
// backlog and queue slopes would rest on too few points), a budget that
// cannot hold one probe and its drain, a precision outside (0, 1), a
// tolerance outside [0, 1), rates below 0, and any of them not a number.
func (p Params) Validate() error {
	iv := probeInterval(p.Plan.Interval.D(), p.Probe)
	bad := func(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }
	switch {
	case len(p.Plan.Phases) == 0:
		return pipebench.UsageError("the scenario has no phase to take the probes' batch size and faults from", "add a phase", nil)
	case p.Burst == 0 && p.Probe < 3*iv:
		return pipebench.UsageError(fmt.Sprintf("--probe %s is shorter than three observation intervals (%s each)", p.Probe, iv),
			fmt.Sprintf("give --probe %s or more", 3*iv), nil)
	case bad(p.Precision) || p.Precision <= 0 || p.Precision >= 1:
		return pipebench.UsageError(fmt.Sprintf("--precision %v is outside (0, 1)", p.Precision), "0.05 stops at ±5%", nil)
	case bad(p.Tolerance) || p.Tolerance < 0 || p.Tolerance >= 1:
		return pipebench.UsageError(fmt.Sprintf("--tolerance %v is outside [0, 1)", p.Tolerance), "0.001 lets one item in a thousand fail or be lost", nil)
	case p.Budget < 0:
		return pipebench.UsageError("--budget must not be negative", "give 0 for no budget", nil)
	case p.Budget > 0 && p.Budget < p.probeLength(p.Probe):
		return pipebench.UsageError(fmt.Sprintf("--budget %s cannot hold one probe: %s of load and up to %s of drain", p.Budget, p.Probe, p.Plan.Drain),
			fmt.Sprintf("give --budget %s or more, or 0 for no budget", p.probeLength(p.Probe).Round(time.Second)), nil)
	case bad(float64(p.Start)) || bad(float64(p.Max)) || bad(float64(p.Burst)) || p.Start < 0 || p.Max < 0 || p.Burst < 0:
		return pipebench.UsageError("--start, --max and --burst must be rates above 0", "write them like 2000/s", nil)
	}
	return nil
}

// probeLength is the longest a probe of d can take: its load and its
// drain.
func (p Params) probeLength(d time.Duration) time.Duration {
	return d + p.Plan.Drain.D()
}

// Probe is one tried rate (or burst length) and its verdict.
type Probe struct {
	Rate     pipebench.Rate
	Duration time.Duration
	Stable   bool
	// Why names what failed: refusals, loss, a growing backlog or queue,
	// latency thresholds, or the generator's own ceiling.
	Why string
	// Ceiling is true when pipebench itself could not produce the rate.
	Ceiling bool
	Result  *pipebench.Result
}

// Bracket is the search's state: the highest stable and lowest unstable
// values so far (0: none yet).
type Bracket struct {
	Stable, Unstable float64
	Left             time.Duration // budget left, -1 without a budget
}

// Answer is what a search found.
type Answer struct {
	// Sustainable is the highest stable rate (or longest absorbed burst,
	// in seconds), ± Uncertainty (half the final bracket).
	Sustainable, Uncertainty float64
	// FirstUnstable is the lowest unstable value, and FailedBecause what
	// failed there; 0 when none was found.
	FirstUnstable float64
	FailedBecause string
	// Stopped says why the search ended: "precision", "budget",
	// "ceiling" (pipebench's own limit: the answer is a lower bound),
	// "max" (the climb reached Max while stable), "unstable at the start",
	// "interrupted" (a signal), "failed" (a probe was invalid or could not
	// run).
	Stopped string
	Probes  []Probe
	// DrainTime is, for a burst search, how long the longest absorbed
	// burst took to drain.
	DrainTime float64
	// Ceiling is, when the search stopped at pipebench's own limit, the
	// rate it did send in the probe it could not make (items/s), and
	// CeilingAt that probe's rate and CeilingWhy its reason.
	Ceiling, CeilingAt float64
	CeilingWhy         string
}

// Search runs probes until the answer is as precise as asked, the budget
// is spent, or the generator's ceiling is reached. The budget is a hard
// limit: no probe starts that could not end within it, and a probe still
// running when it is spent is stopped and not judged.
func Search(ctx context.Context, p Params) (*Answer, error) {
	if p.Run == nil {
		return nil, errors.New("limit: a run function is needed")
	}
	if p.Precision <= 0 {
		p.Precision = 0.05
	}
	if p.Tolerance <= 0 {
		p.Tolerance = 0.001
	}
	if p.Probe <= 0 {
		p.Probe = 10 * time.Second
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	s := &search{p: p, started: time.Now(), ans: &Answer{}, parent: ctx}
	if p.Budget > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, s.started.Add(p.Budget))
		defer cancel()
	}
	if p.Burst > 0 {
		return s.bursts(ctx)
	}
	return s.rates(ctx)
}

type search struct {
	p       Params
	started time.Time
	ans     *Answer
	// parent is the caller's context: done on a signal, where the
	// search's own context is also done when the budget is spent.
	parent context.Context
	// probeCost is the longest a probe took so far, for the budget.
	probeCost time.Duration
}

func (s *search) left() time.Duration {
	if s.p.Budget <= 0 {
		return -1
	}
	return max(0, s.p.Budget-time.Since(s.started))
}

// affordable says whether a probe of d fits in what is left of the
// budget: its load and drain, or, once a probe ran, the longest a probe
// took.
func (s *search) affordable(d time.Duration) bool {
	if s.p.Budget <= 0 {
		return true
	}
	return s.left() >= max(s.p.probeLength(d), s.probeCost)
}

func (s *search) try(ctx context.Context, rate pipebench.Rate, d time.Duration, br *Bracket) (Probe, error) {
	plan, err := s.p.Plan.Probe(rate, d)
	if err != nil {
		return Probe{}, err
	}
	plan.Interval = pipebench.Duration(probeInterval(s.p.Plan.Interval.D(), d))
	t0 := time.Now()
	res, err := s.p.Run(ctx, plan)
	s.probeCost = max(s.probeCost, time.Since(t0))
	stop := func(why string, err error) (Probe, error) {
		// Cut short: kept with what it measured, not judged.
		pr := Probe{Rate: rate, Duration: d, Result: res, Why: why}
		if res != nil {
			s.ans.Probes = append(s.ans.Probes, pr)
		}
		return pr, err
	}
	switch {
	case s.parent.Err() != nil:
		return stop("stopped by a signal before its end: not judged", errInterrupted)
	case ctx.Err() != nil:
		return stop("stopped when the budget was spent: not judged", errBudget)
	case res == nil:
		return Probe{}, err
	}
	pr := Judge(res, s.p.Tolerance)
	pr.Rate, pr.Duration = rate, d
	s.ans.Probes = append(s.ans.Probes, pr)
	if err != nil {
		// A probe that could not run (a component failed to start).
		return pr, err
	}
	if res.Manifest.Status == pipebench.StatusInvalid && !pr.Ceiling {
		return pr, &pipebench.Error{Code: pipebench.ExitInvalid, Msg: "the probe at " + pipebench.FormatCount(float64(rate)) + "/s was invalid: " + strings.Join(res.Manifest.Reasons, "; ")}
	}
	if pr.Stable {
		br.Stable = max(br.Stable, valueOf(rate, d, s.p.Burst > 0))
	} else if !pr.Ceiling && (br.Unstable == 0 || valueOf(rate, d, s.p.Burst > 0) < br.Unstable) {
		br.Unstable = valueOf(rate, d, s.p.Burst > 0)
		s.ans.FailedBecause = pr.Why
	}
	br.Left = s.left()
	if s.p.Progress != nil {
		s.p.Progress(pr, *br)
	}
	return pr, nil
}

var (
	errInterrupted = errors.New("interrupted")
	errBudget      = errors.New("budget spent")
)

func valueOf(rate pipebench.Rate, d time.Duration, burst bool) float64 {
	if burst {
		return d.Seconds()
	}
	return float64(rate)
}

// rates climbs from Start, doubling, to the first unstable rate, then
// bisects.
func (s *search) rates(ctx context.Context) (*Answer, error) {
	rate := s.p.Start
	if rate <= 0 {
		rate = pipebench.Rate(max(1, s.p.Plan.Phases[0].PlannedRate()))
	}
	var br Bracket
	for {
		pr, end, err := s.probe(ctx, rate, s.p.Probe, &br)
		if end != nil {
			return end, err
		}
		if pr.Ceiling {
			br.Unstable = 0
			return s.atCeiling(br, pr), nil
		}
		if !pr.Stable {
			if br.Stable == 0 {
				return s.finish(br, "unstable at the start"), nil
			}
			break
		}
		if s.p.Max > 0 && rate >= s.p.Max {
			return s.finish(br, "max"), nil
		}
		rate *= 2
		if s.p.Max > 0 && rate > s.p.Max {
			rate = s.p.Max
		}
	}
	for (br.Unstable-br.Stable)/br.Stable > s.p.Precision {
		mid := pipebench.Rate(math.Round((br.Stable + br.Unstable) / 2))
		pr, end, err := s.probe(ctx, mid, s.p.Probe, &br)
		if end != nil {
			return end, err
		}
		if pr.Ceiling {
			return s.atCeiling(br, pr), nil
		}
	}
	return s.finish(br, "precision"), nil
}

// bursts climbs the burst length from Probe, doubling, to the first burst
// not absorbed, then bisects.
func (s *search) bursts(ctx context.Context) (*Answer, error) {
	d := s.p.Probe
	var br Bracket
	for {
		pr, end, err := s.probe(ctx, s.p.Burst, d, &br)
		if end != nil {
			return end, err
		}
		if pr.Ceiling {
			return s.atCeiling(br, pr), nil
		}
		if !pr.Stable {
			if br.Stable == 0 {
				return s.finish(br, "unstable at the start"), nil
			}
			break
		}
		if dt, ok := pr.Result.Total.Get("drain_time"); ok {
			s.ans.DrainTime = dt
		}
		d *= 2
	}
	for (br.Unstable-br.Stable)/br.Stable > s.p.Precision {
		d = time.Duration((br.Stable + br.Unstable) / 2 * float64(time.Second)).Round(10 * time.Millisecond)
		pr, end, err := s.probe(ctx, s.p.Burst, d, &br)
		if end != nil {
			return end, err
		}
		if pr.Stable {
			if dt, ok := pr.Result.Total.Get("drain_time"); ok && d.Seconds() >= br.Stable {
				s.ans.DrainTime = dt
			}
		}
	}
	return s.finish(br, "precision"), nil
}

// probe runs one probe when the budget affords it (see try). end is the
// search's answer when it has to stop there: the budget cannot hold the
// probe, or the probe's error stopped it (see stopped; err is then the
// search's error).
func (s *search) probe(ctx context.Context, rate pipebench.Rate, d time.Duration, br *Bracket) (pr Probe, end *Answer, err error) {
	if !s.affordable(d) {
		return pr, s.finish(*br, "budget"), nil
	}
	pr, err = s.try(ctx, rate, d, br)
	if err != nil {
		end, err = s.stopped(*br, err)
	}
	return pr, end, err
}

// stopped ends a search that a probe's error stopped: the budget spent
// while a probe ran (an answer from the probes before it), a signal (the
// probes so far kept), or a probe that was invalid or could not run.
func (s *search) stopped(br Bracket, err error) (*Answer, error) {
	switch {
	case errors.Is(err, errBudget):
		return s.finish(br, "budget"), nil
	case errors.Is(err, errInterrupted):
		return s.finish(br, "interrupted"), &pipebench.Error{Code: pipebench.ExitFailure, Msg: "limit search stopped by a signal; the probes so far were kept"}
	}
	return s.finish(br, "failed"), err
}

// atCeiling ends a search at pipebench's own limit, found by probe pr: the
// answer is a lower bound, and the ceiling is what pipebench did send.
func (s *search) atCeiling(br Bracket, pr Probe) *Answer {
	a := s.finish(br, "ceiling")
	a.CeilingAt, a.CeilingWhy = float64(pr.Rate), pr.Why
	if pr.Result != nil && pr.Result.Total != nil {
		a.Ceiling, _ = pr.Result.Total.Get("sent_rate")
	}
	return a
}

func (s *search) finish(br Bracket, why string) *Answer {
	a := s.ans
	a.Stopped = why
	a.Sustainable = br.Stable
	a.FirstUnstable = br.Unstable
	if br.Unstable > 0 && br.Stable > 0 {
		a.Uncertainty = (br.Unstable - br.Stable) / 2
	}
	return a
}

// Judge decides whether a probe's system under test was stable: the
// generator held the rate (else the probe shows pipebench's ceiling), no
// more than tolerance of the items were refused, failed, dropped or lost,
// what was in flight at the end drained within a quarter of the probe (at
// least a second), the backlog and the exporter queue did not grow through
// the probe by more than 5% of its rate per second (a least-squares slope
// over its window, not one reading), and the scenario's thresholds held.
func Judge(res *pipebench.Result, tolerance float64) Probe {
	pr := Probe{Result: res}
	if res.Manifest.Status == pipebench.StatusInvalid {
		// Sends the system held back (max_in_flight answers outstanding,
		// no free connection) are a result about it; only pipebench's own
		// limit, as the run's validity names it, is its ceiling.
		if why, ok := kpi.GeneratorLimited(res); ok {
			pr.Ceiling, pr.Why = true, why
			return pr
		}
		pr.Why = strings.Join(res.Manifest.Reasons, "; ")
		return pr
	}
	t := res.Total
	if t == nil || len(res.Phases) == 0 {
		pr.Why = "no result"
		return pr
	}
	sent, _ := t.Get("sent")
	if sent <= 0 {
		pr.Why = "nothing was sent"
		return pr
	}
	allow := math.Max(tolerance*sent, 0)
	var why []string
	var failed float64
	for _, k := range t.All("errors") {
		failed += k.Value
	}
	if failed > allow {
		why = append(why, fmt.Sprintf("%s of %s items refused or failed", pipebench.FormatCount(failed), pipebench.FormatCount(sent)))
	}
	if v, _ := t.Get("held_back"); v > allow {
		var reasons []string
		for _, k := range t.All("held_back") {
			if r := k.Labels["reason"]; r != "" {
				reasons = append(reasons, r)
			}
		}
		why = append(why, fmt.Sprintf("%s items held back by the system under test (%s: it did not take them on time)", pipebench.FormatCount(v), strings.Join(reasons, ", ")))
	}
	if v, ok := t.Get("lost"); ok && v > allow {
		why = append(why, fmt.Sprintf("%s items lost", pipebench.FormatCount(v)))
	}
	// What the pipeline still held, or had not yet read, when the probe's
	// drain ended is not lost, but a stable system would have finished it.
	if n, where := pipebench.WorkLeft(res); n > allow {
		why = append(why, fmt.Sprintf("%s items left when the probe's drain ended (%s)", pipebench.FormatCount(n), where))
	}
	ph := &res.Phases[0]
	secs := ph.Ended.Sub(ph.Started).Seconds()
	// A system that keeps up has only what is in flight left when the
	// probe ends, and delivers it at once.
	if dt, ok := t.Get("drain_time"); ok && dt > math.Max(1, secs/4) {
		why = append(why, fmt.Sprintf("delivery fell behind: the backlog took %.1f s to drain after a %.0f s probe", dt, secs))
	}
	rate := sent / math.Max(secs, 1e-9)
	for _, name := range []string{"backlog", "exporter_queue_size"} {
		g, n, seen := growth(res.Series, name, ph.Started, ph.Ended)
		switch {
		case seen && n < 3:
			// Too few readings for a slope: not stable by default.
			why = append(why, fmt.Sprintf("the %s was read %d times during the probe, too few to tell whether it grew (give a longer --probe or a shorter interval)", strings.ReplaceAll(name, "_", " "), n))
		case g > math.Max(0.05*rate, 1):
			why = append(why, fmt.Sprintf("%s growing by %s/s through the probe", strings.ReplaceAll(name, "_", " "), pipebench.FormatCount(g)))
		}
	}
	for _, th := range res.Thresholds {
		if !th.Passed {
			why = append(why, fmt.Sprintf("threshold %s: %s", th.Expr, th.Message))
		}
	}
	pr.Stable = len(why) == 0
	pr.Why = strings.Join(why, "; ")
	return pr
}

// growth is the least-squares slope per second of the series called name
// (summed over its instances) over the second half of [from, to], where a
// stable system has settled, or over the whole window when the half holds
// fewer than five observations: a slope, not one reading. It also returns
// how many observations the slope rests on (under three: none, and the
// slope is 0) and whether the result has the series at all.
func growth(series []pipebench.Series, name string, from, to time.Time) (g float64, n int, seen bool) {
	for _, s := range series {
		if s.Name == name {
			seen = true
			break
		}
	}
	if g, n := slope(series, name, from.Add(to.Sub(from)/2), to); n >= 5 {
		return g, n, seen
	}
	g, n = slope(series, name, from, to)
	return g, n, seen
}

// slope fits the series over [mid, to] and says how many points it had.
func slope(series []pipebench.Series, name string, mid, to time.Time) (float64, int) {
	byT := map[int64]float64{}
	for _, s := range series {
		if s.Name != name {
			continue
		}
		for _, p := range s.Points {
			if !p.T.Before(mid) && !p.T.After(to) {
				byT[p.T.UnixMilli()] += p.V
			}
		}
	}
	if len(byT) < 3 {
		return 0, len(byT)
	}
	var n, sx, sy, sxx, sxy float64
	for t, v := range byT {
		x := float64(t-mid.UnixMilli()) / 1000
		n++
		sx += x
		sy += v
		sxx += x * x
		sxy += x * v
	}
	den := n*sxx - sx*sx
	if den == 0 {
		return 0, len(byT)
	}
	return (n*sxy - sx*sy) / den, len(byT)
}

// Line says for a person how a finished probe went: its rate (with burst,
// its burst's length at that rate), its verdict, the bracket so far and
// the budget left.
func (pr Probe) Line(br Bracket, burst bool) string {
	what := pipebench.FormatCount(float64(pr.Rate)) + "/s"
	if burst {
		what = pipebench.FormatDuration(pr.Duration) + " at " + what
	}
	verdict := "stable"
	if !pr.Stable {
		verdict = "unstable: " + pr.Why
	}
	line := fmt.Sprintf("probe %s: %s", what, verdict)
	if br.Stable > 0 || br.Unstable > 0 {
		f := func(v float64) string {
			if v == 0 {
				return "?"
			}
			if burst {
				return pipebench.FormatDuration(time.Duration(v * float64(time.Second)).Round(10 * time.Millisecond))
			}
			return pipebench.FormatCount(v)
		}
		line += fmt.Sprintf("  [bracket %s .. %s]", f(br.Stable), f(br.Unstable))
	}
	if br.Left >= 0 {
		line += "  budget left " + pipebench.FormatDuration(br.Left.Round(time.Second))
	}
	return line
}
