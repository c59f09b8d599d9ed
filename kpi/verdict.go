package kpi

import (
	"fmt"

	"github.com/pipebench/pipebench"
)

// Judgement is everything a Result's verdict is decided from.
type Judgement struct {
	// Thresholds are the evaluated thresholds (none: no pass or fail).
	Thresholds []pipebench.ThresholdResult
	// Invalid says why the numbers describe pipebench or the network
	// rather than the system under test (the generator could not hold the
	// plan, nothing reached the target).
	Invalid []string
	// Failures are failures of the system under test that are not
	// thresholds (it exited during the run).
	Failures []string
	// Error, when not "", is why pipebench could not run the plan at all
	// (a component failed to start): status error.
	Error string
	// Aborted: stopped by a signal. Partial: a checkpoint of a run still
	// going. Ran of Planned phases had started.
	Aborted, Partial bool
	Ran, Planned     int
}

// Verdict decides a Result's status and its reasons, for a run, a merge
// of shards and a limit search alike: error (nothing could run), running (a checkpoint), aborted (a
// signal), invalid (the numbers do not describe the system under test),
// failed (a threshold failed, or the system under test failed), completed
// (no thresholds: no pass or fail), or passed. The reasons say why in
// words; invalid and failure reasons are kept whatever the status.
func Verdict(j Judgement) (pipebench.Status, []string) {
	reasons := append(append([]string(nil), j.Invalid...), j.Failures...)
	for _, t := range j.Thresholds {
		if !t.Passed {
			reasons = append(reasons, fmt.Sprintf("threshold %q failed in phase %s: %s", t.Expr, t.Phase, t.Message))
		}
	}
	switch {
	case j.Error != "":
		return pipebench.StatusError, append([]string{j.Error}, reasons...)
	case j.Partial:
		return pipebench.StatusRunning, append([]string{fmt.Sprintf("checkpoint after %d of %d phases: the run was still going", j.Ran, j.Planned)}, reasons...)
	case j.Aborted:
		return pipebench.StatusAborted, append([]string{fmt.Sprintf("stopped by a signal after %d of %d phases; the result is partial", j.Ran, j.Planned)}, reasons...)
	case len(j.Invalid) > 0:
		return pipebench.StatusInvalid, reasons
	case len(j.Failures) > 0 || Failed(j.Thresholds):
		return pipebench.StatusFailed, reasons
	case len(j.Thresholds) == 0:
		return pipebench.StatusCompleted, append(reasons, "no thresholds were set, so the run has no pass or fail: add thresholds to the scenario for a verdict")
	}
	return pipebench.StatusPassed, reasons
}
