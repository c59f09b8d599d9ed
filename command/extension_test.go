package command_test

import (
	"os"

	"github.com/pipebench/pipebench/command"
	"github.com/pipebench/pipebench/command/k8scmd"
	"github.com/pipebench/pipebench/command/k8spod"
	"github.com/pipebench/pipebench/sut/all"
)

// envHelperProgram, in a helper process (TestHelperCLI) that plays a pod's
// container, names the program the pod runs: pipebench-load, the lean
// load generator, has no system under test and only the pods' k8s
// commands.
const envHelperProgram = "PIPEBENCH_HELPER_PROGRAM"

// The command line the tests run is pipebench-k8s's: every embedded
// system under test, and the Kubernetes launcher, run in this process;
// a helper playing pipebench-load runs that program's.
func init() {
	if os.Getenv(envHelperProgram) == "pipebench-load" {
		command.Extensions = []command.Extension{k8spod.New}
		return
	}
	command.NewRegistry = all.Registry
	command.Extensions = append(command.Extensions, k8scmd.New)
}
