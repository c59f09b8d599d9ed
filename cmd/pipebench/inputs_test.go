package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every input file is read through a size limit checked while reading: an
// endless file (/dev/zero) as any input of any command is a usage error
// that names the file, never an exhausted memory. The class: scenarios,
// suites, Results, shards and .proto files, through every command that
// reads them.
func TestEndlessInputsAreRefused(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	dir := t.TempDir()
	proto := filepath.Join(dir, "proto.yaml")
	os.WriteFile(proto, []byte(`
name: endless-proto
target: {driver: grpc, endpoint: "127.0.0.1:1", proto_files: [/dev/zero], method: a.B/C}
workload: {generator: grpc-message, message: {a: 1}}
phases:
  - {name: p, duration: 1s, rate: 1/s}
`), 0o644)
	for _, args := range [][]string{
		{"run", "/dev/zero"},
		{"validate", "/dev/zero"},
		{"plan", "/dev/zero"},
		{"limit", "/dev/zero"},
		{"suite", "run", "/dev/zero"},
		{"suite", "validate", "/dev/zero"},
		{"report", "/dev/zero"},
		{"merge", "/dev/zero"},
		{"k8s", "manifests", "/dev/zero"},
		{"run", proto, "--no-store"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			_, stderr, code := cli(t, args...)
			if code != 2 {
				t.Errorf("exit %d, want 2\n%s", code, stderr)
			}
			if !strings.Contains(stderr, "/dev/zero") || !(strings.Contains(stderr, "larger than") || strings.Contains(stderr, "not a pipebench result")) {
				t.Errorf("the error does not say the file is too large or not a Result:\n%s", stderr)
			}
		})
	}
}
