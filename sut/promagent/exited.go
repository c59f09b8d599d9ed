package promagent

import (
	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/proc/childproc"
)

var _ pipebench.ExitReporter = (*Agent)(nil)

// Exited describes the Prometheus agent's process if it ended during the
// run.
func (a *Agent) Exited() []string { return childproc.Exits(a.proc) }
