// Command pipebench-load is pipebench's load generator alone: every
// command of pipebench (run, limit, plan, validate, suite, compare, gate,
// history, report, merge, sink, producers), every driver, sink, generator,
// observer and report format, and no embedded system under test and no
// Kubernetes launcher: of Kubernetes, only the commands the shards' and
// the in-cluster sink's pods run (k8s worker, sink, ready) and the REST
// client of ConfigMaps they use. It is what a machine that only
// generates load runs (a Kubernetes shard, a benchmark against a peer
// tool): it links a third of what pipebench links and builds in a
// fraction of its time. A scenario that asks for an embedded system under
// test (sut:) is refused, saying to run it with pipebench.
package main

import (
	"os"

	"github.com/pipebench/pipebench/command"
	"github.com/pipebench/pipebench/command/k8spod"
	"github.com/pipebench/pipebench/internal/proc/residency"
	"github.com/pipebench/pipebench/internal/proc/tlsroots"
)

func main() {
	tlsroots.FallbackWhereNone()
	residency.Trim()
	residency.Collector()
	// command.NewRegistry stays builtins.Registry: no system under test.
	// Its k8s command carries what the shards' and the in-cluster sink's
	// pods run (k8s worker, sink, ready) and hands the launcher's
	// commands to pipebench-k8s.
	command.Extensions = []command.Extension{k8spod.New}
	os.Exit(command.Main(os.Args[1:], os.Stdout, os.Stderr))
}
