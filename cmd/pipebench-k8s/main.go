// Command pipebench-k8s is pipebench with its Kubernetes launcher: pipebench
// k8s run, manifests and collect, and the commands the pods run. pipebench's
// own k8s command hands its arguments to it; it takes every other command
// of pipebench too.
package main

import (
	"os"

	"github.com/pipebench/pipebench/command"
	"github.com/pipebench/pipebench/command/k8scmd"
	"github.com/pipebench/pipebench/internal/proc/tlsroots"
	"github.com/pipebench/pipebench/sut/all"
)

func main() {
	tlsroots.FallbackWhereNone()
	all.MaybeRunChild()
	command.NewRegistry = all.Registry
	command.Extensions = append(command.Extensions, k8scmd.New)
	os.Exit(command.Main(os.Args[1:], os.Stdout, os.Stderr))
}
