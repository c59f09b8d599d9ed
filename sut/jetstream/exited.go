package jetstream

import (
	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/childproc"
)

var _ pipebench.ExitReporter = (*Server)(nil)

// Exited describes the nats-server nodes that ended during the run.
func (s *Server) Exited() []string {
	procs := make([]*childproc.Proc, len(s.nodes))
	for i, nd := range s.nodes {
		procs[i] = nd.proc
	}
	return childproc.Exits(procs...)
}
