// Command pipebench-sut carries the heavy embedded systems under test of
// pipebench (the OpenTelemetry Collector, the health-event service and its
// document store): pipebench starts it as their
// child process, told by a variable which to be. It is not run by hand:
// install it beside pipebench (go install ./cmd/...), or let pipebench
// build it from the checkout it was built in.
package main

import (
	"fmt"
	"os"

	"github.com/pipebench/pipebench/internal/cli/buildinfo"
	"github.com/pipebench/pipebench/sut/heavy"
)

func main() {
	heavy.MaybeRunChild()
	if len(os.Args) == 2 && os.Args[1] == "version" {
		fmt.Println(buildinfo.Read(buildinfo.Version))
		os.Exit(0)
	}
	fmt.Fprintln(os.Stderr, "pipebench-sut runs pipebench's embedded systems under test (the OpenTelemetry Collector, the health-event service) as child processes of pipebench; it is not run by hand: run pipebench")
	os.Exit(2)
}
