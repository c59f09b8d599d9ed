package jetstream

import "github.com/pipebench/pipebench"

var _ pipebench.ExitReporter = (*Server)(nil)

// Exited describes the nats-server nodes that ended during the run
// without the chaos schedule asking them to.
func (s *Server) Exited() []string {
	if s.cluster == nil {
		return nil
	}
	return s.cluster.Exited()
}
