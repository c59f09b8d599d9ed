package otelcol

import (
	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/proc/childproc"
)

var _ pipebench.ExitReporter = (*Collector)(nil)

// Exited describes the collector replicas that ended during the run.
func (c *Collector) Exited() []string {
	procs := make([]*childproc.Proc, len(c.replicas))
	for i, r := range c.replicas {
		procs[i] = r.proc
	}
	return childproc.Exits(procs...)
}
