package kpi

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/pipebench/pipebench"
)

// What a shard's Result may hold: no more than a run of its plan records.
// DecodeShard refuses a shard past any of them while it reads it, so that
// merging takes memory bounded by the plan (its phases, its length at its
// interval) and these constants, never by what a file was made to hold.
const (
	// MaxShardSeries is the most series a shard may hold (a run holds
	// one per observed metric and instance, plus its own dozen).
	MaxShardSeries = 20_000
	// MaxPhaseKPIs is the most KPIs a phase's row may hold.
	MaxPhaseKPIs = 20_000
	// MaxLabels is the most labels of a KPI or a series.
	MaxLabels = 64
	// MaxShardText is the longest name, label or message.
	MaxShardText = 16 << 10
	// maxPoints is the most points of a series a run keeps: runner's
	// bound (4,096, then the older half is merged), and some slack.
	maxPoints = 4096 + 64
	// maxHistogram is the most bytes of a phase's encoded histogram (one
	// of the recorder's compresses to a few KiB).
	maxHistogram = 1 << 20
)

// shardLimits are the limits of one shard, from its plan once known.
type shardLimits struct {
	phases int // rows of Phases; 0: not known yet
	points int
}

// limitsOf derives a shard's limits from its plan and its manifest: as
// many phase rows as the plan has phases (and one more: a row of a phase
// cut short), and at most a point per interval (the shortest of the run's
// and its observers') over the longer of the plan's load, drain and 15
// minutes of waiting around them, and the run's own start to end (a
// shard waits for its shared start with its observers on), never more
// than a run keeps of a series.
func limitsOf(p pipebench.Plan, m pipebench.Manifest) shardLimits {
	l := shardLimits{phases: len(p.Phases) + 1, points: maxPoints}
	iv := p.Interval.D()
	for _, o := range p.Observers {
		if o.Interval > 0 && (iv <= 0 || o.Interval.D() < iv) {
			iv = o.Interval.D()
		}
	}
	if iv <= 0 {
		return l
	}
	span := p.Duration() + p.Drain.D() + 15*time.Minute
	if ran := m.Ended.Sub(m.Started) + time.Minute; ran > span {
		span = ran
	}
	if n := float64(span/iv) + 64; n < float64(l.points) {
		l.points = int(n)
	}
	return l
}

// DecodeShard decodes a shard's Result from r as it reads it, one phase
// row and one series at a time (pipebench.DecodeResult), refusing it (the
// file was changed, or is not a shard of this plan) as soon as it holds
// more than a run of its plan records: more phase rows than its plan has
// phases, more points in a series than its length at its interval, more
// series, KPIs, labels, messages or longer texts than the bounds above,
// an encoded histogram of another shape than the recorder's. The error
// says what and where.
func DecodeShard(r io.Reader) (*pipebench.Result, error) {
	lim := shardLimits{points: maxPoints}
	var m pipebench.Manifest
	res, err := pipebench.DecodeResult(r, pipebench.ResultCheck{
		Manifest: func(got *pipebench.Manifest) error { m = *got; return nil },
		Plan:     func(p *pipebench.Plan) error { lim = limitsOf(*p, m); return nil },
		Points:   func() int { return lim.points },
		Phase: func(i int, p *pipebench.PhaseResult) error {
			if lim.phases > 0 && i >= lim.phases {
				return fmt.Errorf("more rows than the %d phases of its plan", lim.phases-1)
			}
			return checkRow(p, fmt.Sprintf("phases[%d]", i))
		},
		Series: func(i int, s *pipebench.Series) error {
			if i >= MaxShardSeries {
				return fmt.Errorf("more than %d series", MaxShardSeries)
			}
			return checkSeries(s, fmt.Sprintf("series[%d]", i), lim.points)
		},
		Errors: checkErrors,
	})
	if err != nil {
		return nil, err
	}
	// The plan may have come after what it bounds (a file written by
	// hand): every bound again, now that it is known.
	if err := CheckShardShape(res); err != nil {
		return nil, err
	}
	return res, nil
}

// CheckShardShape checks a decoded shard against the bounds DecodeShard
// applies while reading (see there).
func CheckShardShape(res *pipebench.Result) error {
	lim := limitsOf(res.Plan, res.Manifest)
	if len(res.Phases) > lim.phases {
		return fmt.Errorf("phases: %d rows, more than the %d phases of its plan", len(res.Phases), lim.phases-1)
	}
	for i := range res.Phases {
		if err := checkRow(&res.Phases[i], fmt.Sprintf("phases[%d]", i)); err != nil {
			return err
		}
	}
	for name, p := range map[string]*pipebench.PhaseResult{"drain": res.Drain, "total": res.Total} {
		if p != nil {
			if err := checkRow(p, name); err != nil {
				return err
			}
		}
	}
	if len(res.Series) > MaxShardSeries {
		return fmt.Errorf("series: %d, more than %d", len(res.Series), MaxShardSeries)
	}
	for i := range res.Series {
		if err := checkSeries(&res.Series[i], fmt.Sprintf("series[%d]", i), lim.points); err != nil {
			return err
		}
	}
	return checkErrors(res.Errors)
}

func checkRow(p *pipebench.PhaseResult, where string) error {
	if len(p.KPIs) > MaxPhaseKPIs {
		return fmt.Errorf("%s: %d KPIs, more than %d", where, len(p.KPIs), MaxPhaseKPIs)
	}
	if err := checkText(where+".name", p.Name); err != nil {
		return err
	}
	for j, k := range p.KPIs {
		if err := checkLabels(fmt.Sprintf("%s.kpis[%d]", where, j), k.Name, k.Labels); err != nil {
			return err
		}
	}
	if len(p.Histograms) > len(shardHistograms) {
		return fmt.Errorf("%s.histograms: %d, more than the %d a shard records", where, len(p.Histograms), len(shardHistograms))
	}
	for name, enc := range p.Histograms {
		if !containsStr(shardHistograms, name) {
			return fmt.Errorf("%s.histograms: %q is not one a shard records", where, name)
		}
		if err := checkHistogram(enc); err != nil {
			return fmt.Errorf("%s.histograms.%s: %w", where, name, err)
		}
	}
	return nil
}

func checkSeries(s *pipebench.Series, where string, points int) error {
	if err := checkLabels(where, s.Name, s.Labels); err != nil {
		return err
	}
	if len(s.Points) > points {
		return fmt.Errorf("%s (%s): %d points, more than the %d its plan's length at its interval can record", where, s.Name, len(s.Points), points)
	}
	return nil
}

func checkLabels(where, name string, labels map[string]string) error {
	if err := checkText(where+".name", name); err != nil {
		return err
	}
	if len(labels) > MaxLabels {
		return fmt.Errorf("%s (%s): %d labels, more than %d", where, name, len(labels), MaxLabels)
	}
	for k, v := range labels {
		if err := checkText(where+".labels", k+v); err != nil {
			return err
		}
	}
	return nil
}

func checkText(where, s string) error {
	if len(s) > MaxShardText {
		return fmt.Errorf("%s: a text of %s, longer than %s", where, pipebench.FormatBytes(int64(len(s))), pipebench.FormatBytes(MaxShardText))
	}
	return nil
}

// shardClasses are the outcome classes a Result's errors are kept by.
var shardClasses = []string{string(pipebench.ClassRefused), string(pipebench.ClassTimeout), string(pipebench.ClassError), string(pipebench.ClassDropped), "abandoned"}

func checkErrors(errs map[string][]string) error {
	if len(errs) > len(shardClasses) {
		return fmt.Errorf("errors: %d classes, more than the %d a run keeps messages of", len(errs), len(shardClasses))
	}
	for class, ms := range errs {
		if err := checkText("errors", class); err != nil {
			return err
		}
		if len(ms) > MaxMessages {
			return fmt.Errorf("errors.%s: %d messages, more than the %d a run keeps", class, len(ms), MaxMessages)
		}
		for _, m := range ms {
			if err := checkText("errors."+class, m); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkHistogram refuses an encoded histogram that is not one the
// recorder makes (its range and precision), before it is decoded: the
// decoder allocates what the header's range asks for.
func checkHistogram(enc string) error {
	if len(enc) > maxHistogram {
		return fmt.Errorf("%s encoded, more than the %s of any the recorder makes", pipebench.FormatBytes(int64(len(enc))), pipebench.FormatBytes(maxHistogram))
	}
	raw, err := base64.StdEncoding.DecodeString(enc)
	if err != nil || len(raw) < 8 {
		return errors.New("not an encoded histogram")
	}
	z, err := zlib.NewReader(bytes.NewReader(raw[8:]))
	if err != nil {
		return errors.New("not an encoded histogram")
	}
	defer z.Close()
	var h struct {
		Cookie, Payload, Offset, Digits int32
		Lowest, Highest                 int64
	}
	if err := binary.Read(z, binary.BigEndian, &h); err != nil {
		return errors.New("not an encoded histogram")
	}
	if h.Lowest != histMin || h.Highest != histMax || h.Digits != histDigits {
		return fmt.Errorf("a histogram of %d..%d at %d digits, not the recorder's %d..%d at %d", h.Lowest, h.Highest, h.Digits, histMin, histMax, histDigits)
	}
	return nil
}

// checkCounts refuses a shard whose counts its plan's slice cannot have
// recorded: a phase's sends or their outcomes beyond the items its slice
// sends, what arrived, was lost or faulted beyond what the whole slice
// sends.
func checkCounts(r *pipebench.Result) error {
	// The slice's items as its profile makes them, not as the file says.
	plan := r.Plan
	plan.Phases = append([]pipebench.PlanPhase(nil), r.Plan.Phases...)
	if err := plan.CountItems(); err != nil {
		return fmt.Errorf("its plan: %w", err)
	}
	var counted uint64
	for i, ph := range plan.Phases {
		if ph.Items != r.Plan.Phases[i].Items {
			return fmt.Errorf("its plan says phase %s sends %d items where its profile sends %d", ph.Name, r.Plan.Phases[i].Items, ph.Items)
		}
		counted += ph.Items
	}
	perSend := []string{"sent", "accepted", "dropped", "abandoned", "errors"}
	// (faulted is not among them: a pipeline that retries sends an item
	// the sink faults again.)
	perItem := []string{"delivered", "lost"}
	check := func(p *pipebench.PhaseResult, items uint64, names []string) error {
		sums := map[string]float64{}
		for _, k := range p.KPIs {
			if containsStr(names, k.Name) && (len(k.Labels) == 0 || k.Name == "errors") {
				sums[k.Name] += k.Value
			}
		}
		for _, n := range names {
			if v := sums[n]; v > float64(items) {
				return fmt.Errorf("phase %s: %s is %s, more than the %s items its slice of the plan sends%s", p.Name, n,
					pipebench.FormatCount(v), pipebench.FormatCount(float64(items)), damaged)
			}
		}
		return nil
	}
	for i := range r.Phases {
		p := &r.Phases[i]
		items := counted
		if i < len(plan.Phases) && p.Name == plan.Phases[i].Name {
			items = plan.Phases[i].Items
		}
		if err := check(p, items, perSend); err != nil {
			return err
		}
		if err := check(p, counted, perItem); err != nil {
			return err
		}
	}
	for _, p := range []*pipebench.PhaseResult{r.Drain, r.Total} {
		if p == nil {
			continue
		}
		if err := check(p, counted, append(perSend, perItem...)); err != nil {
			return err
		}
	}
	return nil
}

const damaged = ": the file was changed or damaged, or is not this plan's shard"
