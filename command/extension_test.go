package command_test

import (
	"github.com/pipebench/pipebench/command"
	"github.com/pipebench/pipebench/command/k8scmd"
	"github.com/pipebench/pipebench/sut/all"
)

// The command line the tests run is pipebench-k8s's: every embedded
// system under test, and the Kubernetes launcher, run in this process.
func init() {
	command.NewRegistry = all.Registry
	command.Extensions = append(command.Extensions, k8scmd.New)
}
