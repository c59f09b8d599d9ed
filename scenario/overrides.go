package scenario

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/pipebench/pipebench"
)

// Overrides change a compiled Plan as the command line asks; each field
// is named in errors by its flag, and its zero value leaves the plan as
// it is.
type Overrides struct {
	// Version labels the run (--sut-version), over the scenario's.
	Version string
	// Duration, when DurationSet, scales every phase so that the load
	// lasts this long in total, keeping its shape (--duration: how the
	// reference's 20-minute tests run in 2 minutes).
	Duration    time.Duration
	DurationSet bool
	// Rate is the plan's new peak rate, like 2000/s, every other rate
	// scaled by the same factor (--rate).
	Rate string
	// Shard is slice I/N of the plan, like 2/4 (--shard).
	Shard string
	// StartAt is the moment the load starts, shared by every shard: RFC
	// 3339 or +DURATION from now (--start-at).
	StartAt string
}

// CompileWith compiles a scenario into its Plan and applies o, at now.
func CompileWith(sc *Scenario, o Overrides, now time.Time) (pipebench.Plan, error) {
	plan, err := Compile(sc)
	if err != nil {
		return plan, err
	}
	return o.Apply(plan, now)
}

// Apply applies o to plan, at now.
func (o Overrides) Apply(plan pipebench.Plan, now time.Time) (pipebench.Plan, error) {
	if o.Version != "" {
		plan.Version = o.Version
	}
	if o.DurationSet {
		scaled, err := plan.Scale(o.Duration)
		if err != nil {
			return plan, pipebench.UsageError(fmt.Sprintf("--duration %s cannot be used", o.Duration), "give a positive duration long enough for every phase to send", err)
		}
		plan = scaled
	}
	if o.Rate != "" {
		r, err := RateFlag("rate", o.Rate)
		if err != nil {
			return plan, err
		}
		if plan, err = plan.ScaleRate(r); err != nil {
			return plan, pipebench.UsageError(fmt.Sprintf("--rate %s cannot be used", o.Rate), "", err)
		}
	}
	if o.Shard != "" {
		is, ns, ok := strings.Cut(o.Shard, "/")
		i, err1 := strconv.Atoi(strings.TrimSpace(is))
		n, err2 := strconv.Atoi(strings.TrimSpace(ns))
		if !ok || err1 != nil || err2 != nil || n < 1 || i < 1 || i > n {
			return plan, pipebench.UsageError(fmt.Sprintf("--shard %q is not I/N with 1 <= I <= N", o.Shard), "write it like 2/4: the second of four shards", nil)
		}
		sliced, err := plan.Slice(i-1, n)
		if err != nil {
			return plan, pipebench.UsageError("--shard "+o.Shard, "", err)
		}
		plan = sliced
	}
	if o.StartAt != "" {
		at, err := startAt(o.StartAt, now)
		if err != nil {
			return plan, err
		}
		plan.StartAt = at.UTC()
	}
	return plan, nil
}

// startAt reads --start-at: a moment still to come, RFC 3339 or
// +DURATION from now.
func startAt(s string, now time.Time) (time.Time, error) {
	var at time.Time
	if rel, ok := strings.CutPrefix(s, "+"); ok {
		d, err := pipebench.ParseDuration(rel)
		if err != nil {
			return at, pipebench.UsageError(fmt.Sprintf("--start-at %q", s), "write +30s, or a moment like 2026-11-24T10:00:00Z", err)
		}
		at = now.Add(d.D())
	} else {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return at, pipebench.UsageError(fmt.Sprintf("--start-at %q is not a moment", s), "write it like 2026-11-24T10:00:00Z, or +30s", nil)
		}
		at = t
	}
	if at.Before(now.Add(-time.Second)) {
		return at, pipebench.UsageError(fmt.Sprintf("--start-at %s is in the past", at.Format(time.RFC3339)), "give a moment still to come", nil)
	}
	return at, nil
}

// RateFlag reads the rate flag --name (like 2000/s); "" is 0, no rate.
func RateFlag(name, v string) (pipebench.Rate, error) {
	if v == "" {
		return 0, nil
	}
	r, err := pipebench.ParseRate(v)
	if err != nil || r <= 0 {
		return 0, pipebench.UsageError(fmt.Sprintf("--%s %q is not a rate above 0", name, v), "write it like 2000/s", err)
	}
	return r, nil
}
