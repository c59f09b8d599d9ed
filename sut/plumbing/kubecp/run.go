package kubecp

// StartIn starts a control plane (etcd, kube-apiserver and, with
// o.Controllers, kube-controller-manager) from the binaries in bin with its
// data in dir, for a program rather than a test: the health-event system
// under test starts one for a run when no kubeconfig is given. The caller
// stops it with Stop; its processes also die with the program.
func StartIn(bin, dir string, o Options) (*Cluster, error) {
	c, err := start(bin, dir, o)
	if err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// APIServerPID is the kube-apiserver's process id (0 before it started).
func (c *Cluster) APIServerPID() int {
	if len(c.procs) < 2 {
		return 0
	}
	return c.procs[1].cmd.Process.Pid
}
