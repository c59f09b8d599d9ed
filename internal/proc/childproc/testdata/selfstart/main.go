// Command selfstart is a program that starts itself as an embedded
// system's child without calling any MaybeRunChild, for childproc's
// TestStartRefusesAnUnrecognisedSelfProgram: it prints what Start returned.
package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/pipebench/pipebench/internal/proc/childproc"
)

func main() {
	if os.Getenv("PIPEBENCH_SELFSTART_CHILD") != "" {
		fmt.Println("started again as the child")
		return
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), "PIPEBENCH_SELFSTART_CHILD=1")
	p, err := childproc.Start("the system", cmd, filepath.Join(os.Args[1], "child.log"))
	if err != nil {
		fmt.Println(err)
		return
	}
	childproc.Stop(context.Background(), p)
	fmt.Println("started")
}
