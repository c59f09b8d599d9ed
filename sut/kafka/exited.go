package kafka

import (
	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/proc/childproc"
)

var _ pipebench.ExitReporter = (*Server)(nil)

// Exited describes the brokers whose process ended during the run.
func (s *Server) Exited() []string {
	if s.cluster == nil {
		return nil
	}
	var procs []*childproc.Proc
	for _, b := range s.cluster.Brokers() {
		procs = append(procs, b.proc)
	}
	return childproc.Exits(procs...)
}
