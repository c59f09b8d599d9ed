// Package buildinfo says what a pipebench binary was built from: its
// version, the module's version, the commit and the Go toolchain, as
// `pipebench version` prints them and the image's tags name them.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// LinkedCommit and LinkedCommitTime are set at link time by builds that
// do not stamp version control information (-buildvcs=false, or a build
// outside the repository): -ldflags "-X
// github.com/pipebench/pipebench/internal/cli/buildinfo.LinkedCommit=SHA".
var LinkedCommit, LinkedCommitTime string

// Version is the version set at link time, shared by every program of
// pipebench: -ldflags "-X
// github.com/pipebench/pipebench/internal/cli/buildinfo.Version=V".
var Version = "dev"

// Info is what a binary knows of its build.
type Info struct {
	// Version is the version set at link time (the package's Version),
	// else the module's.
	Version string
	// Module is the main module's path and version as the Go toolchain
	// stamped them ("(devel)" for a build outside version control).
	Module, ModuleVersion string
	// Commit, CommitTime and Modified come from the version control
	// stamp (go build -buildvcs, the default in a checkout); "" when the
	// binary was built without one.
	Commit, CommitTime string
	Modified           bool
	// Go is the toolchain's version; Platform is GOOS/GOARCH.
	Go, Platform string
}

// Read returns the build's info; linked is the version set at link time
// ("dev" or "" when none was).
func Read(linked string) Info {
	i := Info{Version: linked, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		i.Module, i.ModuleVersion = bi.Main.Path, bi.Main.Version
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				i.Commit = s.Value
			case "vcs.time":
				i.CommitTime = s.Value
			case "vcs.modified":
				i.Modified = s.Value == "true"
			}
		}
	}
	if i.Commit == "" {
		i.Commit, i.CommitTime = LinkedCommit, LinkedCommitTime
	}
	if (i.Version == "" || i.Version == "dev") && i.ModuleVersion != "" && i.ModuleVersion != "(devel)" {
		i.Version = i.ModuleVersion
	}
	if i.Version == "" {
		i.Version = "dev"
	}
	return i
}

// String is the text `pipebench version` prints: one line per fact.
func (i Info) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "pipebench %s\n", i.Version)
	mod := i.Module
	if i.ModuleVersion != "" {
		mod += " " + i.ModuleVersion
	}
	fmt.Fprintf(&b, "module:  %s\n", strings.TrimSpace(mod))
	commit := i.Commit
	if commit == "" {
		commit = "unknown (built without version control information)"
	}
	if i.CommitTime != "" {
		commit += " (" + i.CommitTime + ")"
	}
	if i.Modified {
		commit += ", with uncommitted changes"
	}
	fmt.Fprintf(&b, "commit:  %s\n", commit)
	fmt.Fprintf(&b, "go:      %s %s\n", i.Go, i.Platform)
	return b.String()
}
