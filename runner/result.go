package runner

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/kpi"
)

// ItemNamer is the optional ability of a Generator to say what one item is
// ("span", "metric point"), for column headers.
type ItemNamer interface {
	ItemName() string
}

// manifest says what ran; kpi.Assemble adds how it ended.
func (r *run) manifest(started time.Time) pipebench.Manifest {
	host, _ := os.Hostname()
	m := pipebench.Manifest{
		RunID:       r.id,
		Tool:        "pipebench",
		ToolVersion: r.p.ToolVersion,
		Scenario:    r.plan.Scenario,
		File:        r.plan.File,
		Version:     r.plan.Version,
		Case:        r.plan.Case,
		Labels:      r.plan.Labels,
		Target:      r.plan.Target.Type,
		Item:        r.itemName(),
		Started:     started.UTC(),
		Ended:       time.Now().UTC(),
		Host:        host,
		GoVersion:   runtime.Version(),
		Args:        r.p.Args,
	}
	if m.Case == "" {
		m.Case = m.Scenario
	}
	if r.c.drv != nil && r.c.sut != nil {
		m.Target += " -> " + r.c.sut.Endpoint()
	}
	return m
}

func (r *run) itemName() string {
	if n, ok := r.c.gen.(ItemNamer); ok {
		return n.ItemName()
	}
	return "event"
}

// unreached is the error of a driver that reached nothing when it started.
type unreached struct{ err error }

func (u *unreached) Error() string { return u.err.Error() }

// notStarted is the Result of a run whose components did not all start:
// invalid when the driver reached nothing (the target is down or is not
// what the scenario says), status error otherwise, with the error.
func (r *run) notStarted(started time.Time, err error) (*pipebench.Result, error) {
	now := time.Now()
	rec := kpi.RunRecord{Plan: r.plan.Redacted(), LoadEnded: now, ObservedUntil: now, Detectors: r.p.Registry.Detectors(r.plan)}
	var u *unreached
	if errors.As(err, &u) {
		rec.Invalid = []string{"nothing reached the system under test: " + u.err.Error()}
		err = nil
	} else {
		rec.SetupError = err.Error()
		var pe *pipebench.Error
		if errors.As(err, &pe) && pe.Hint != "" {
			rec.SetupError += " (" + pe.Hint + ")"
		}
	}
	return kpi.Assemble(rec, r.manifest(started)), err
}

// result hands everything recorded to kpi.Assemble.
func (r *run) result(started, loadEnded, lastObs time.Time, aborted bool) *pipebench.Result {
	return r.assemble(started, loadEnded, lastObs, aborted, false)
}

// checkpoint is the run so far as a partial Result, status "running".
func (r *run) checkpoint() *pipebench.Result {
	now := time.Now()
	return r.assemble(r.started, now, now, false, true)
}

func (r *run) assemble(started, loadEnded, lastObs time.Time, aborted, partial bool) *pipebench.Result {
	r.phaseMu.Lock()
	phaseT0 := append([]time.Time(nil), r.phaseT0...)
	phaseEnd := append([]time.Time(nil), r.phaseEnd...)
	faultedAt := append([]uint64(nil), r.faultedAt...)
	phaseUse := append([][2]selfUse(nil), r.phaseUse...)
	r.phaseMu.Unlock()
	rec := kpi.RunRecord{
		Plan: r.plan.Redacted(), Messages: r.rec.Messages(), Aborted: aborted, Partial: partial,
		ObserverErrors: r.obsErrors.Load(), LoadEnded: loadEnded, ObservedUntil: lastObs,
		Detectors: r.p.Registry.Detectors(r.plan),
	}
	for _, e := range r.sutExits {
		rec.Failures = append(rec.Failures, "the system under test failed: "+e)
	}
	if r.sendsHung.Load() && !partial {
		rec.Failures = append(rec.Failures, fmt.Sprintf("sends still had no answer %s after the load ended: the target stopped answering (they count as abandoned)", pipebench.FormatDuration(r.p.SendsGrace)))
	}
	r.seriesMu.Lock()
	rec.Series = r.series.list()
	r.seriesMu.Unlock()
	for i, ph := range r.plan.Phases {
		if phaseT0[i].IsZero() {
			break
		}
		end, endUse := phaseEnd[i], phaseUse[i][1]
		if end.IsZero() {
			end, endUse = time.Now(), readSelfUse()
		}
		in := kpi.PhaseInput{
			Name: ph.Name, Started: phaseT0[i].UTC(), Ended: end.UTC(),
			TargetRate: ph.PlannedRate(),
			Sends:      r.rec.Stats(i),
			Generator:  endUse.since(phaseUse[i][0]),
		}
		// Sends still in flight (a run cut short) are sent, with no
		// outcome: handed to the driver, neither recorded nor given back
		// unsent.
		live := r.rec.Live(i)
		recorded := live.Unsent.Load()
		for c := pipebench.ClassOK; c < pipebench.ClassDropped; c++ {
			recorded += in.Sends.Items[c]
		}
		if started := live.Sent.Load(); started > recorded {
			in.Sends.Abandoned = started - recorded
		}
		if r.c.sink != nil {
			hi := r.nextSeq.Load()
			if i+1 < len(r.plan.Phases) && !phaseT0[i+1].IsZero() {
				hi = r.arr.PhaseStart(i + 1)
			}
			a := r.arr.Stats(i, hi)
			in.Arrivals = &a
			in.Faulted = faultedAt[i]
			if i > 0 {
				in.Faulted -= faultedAt[i-1]
			}
		}
		rec.Phases = append(rec.Phases, in)
	}
	if r.c.sink != nil && len(rec.Phases) > 0 {
		a := r.arr.RunStats(len(rec.Phases), r.plan.FirstSeq(), r.nextSeq.Load())
		rec.Arrivals = &a
		rec.Faulted, _ = r.arr.Totals()
		last := rec.Phases[len(rec.Phases)-1].Ended
		// What the sink faulted after the load: the total less what the
		// phases (the last one with its final sends) faulted.
		faulted := rec.Faulted
		if n := len(rec.Phases); n > 0 {
			faulted -= min(faulted, faultedAt[n-1])
		}
		drain := kpi.PhaseInput{Name: "drain", Started: last, Ended: lastObs.UTC(), Faulted: faulted,
			Arrivals: &kpi.ArrivalStats{Delivered: r.arr.DeliveredDuring(len(r.plan.Phases)),
				Pipelines: r.arr.PipelinesDuring(len(r.plan.Phases))}}
		rec.Drain = &drain
	}
	return kpi.Assemble(rec, r.manifest(started))
}
